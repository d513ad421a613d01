//! `rounds doctor`: what a run needs, checked without making one. The settings files (each on
//! its own, then with `--profile` and `-c`), the model a run would use and its provider, every
//! provider's key (where it would come from, never its value) and endpoint (one short request
//! to its base URL), the sandbox this kernel gives, and the store. A check is needed when a run
//! with these settings would fail without it; the command fails (exit 1) when one of those does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use serde::Serialize;

use super::Failure;
use crate::cli::{Cli, DoctorArgs, ListOutput};
use crate::config::{self, Named};
use crate::process::sandbox::{self, Sandbox};
use crate::providers::{self, Entry, PROVIDERS};
use crate::settings::{self, Layers};
use crate::{render, terminal};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum State {
    Ok,
    /// Works, less well than it could (a sandbox the kernel enforces only in part).
    Warn,
    Fail,
    /// Nothing to check (no store given, no key for a provider this run does not use).
    Skip,
}

#[derive(Debug, Serialize)]
struct Check {
    /// `settings`, `model`, `key`, `endpoint`, `sandbox` or `store`.
    check: &'static str,
    /// What was checked: a file, a provider, a mode, a database.
    subject: String,
    state: State,
    /// Whether a run with these settings needs this check to pass.
    needed: bool,
    detail: String,
}

impl Check {
    fn new(check: &'static str, subject: impl Into<String>, state: State, detail: String) -> Check {
        Check {
            check,
            subject: subject.into(),
            state,
            needed: true,
            detail,
        }
    }

    fn needed(mut self, needed: bool) -> Check {
        self.needed = needed;
        self
    }

    fn failed(&self) -> bool {
        self.needed && self.state == State::Fail
    }
}

/// What `-o json` prints: one object.
#[derive(Debug, Serialize)]
struct Report {
    /// Every needed check passed.
    ok: bool,
    /// The model a run would use: as given (or the default), and un-aliased.
    model: Named,
    /// Its provider, when it names a built-in one.
    provider: Option<&'static str>,
    checks: Vec<Check>,
    /// The needed checks that failed, as `check (subject)`.
    failed: Vec<String>,
}

/// `rounds doctor`.
pub(crate) fn doctor(
    args: &DoctorArgs,
    profile: Option<&str>,
    overrides: &[String],
) -> Result<(), Failure> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let (mut checks, layers) = settings_checks(&env, &cwd, profile, overrides);
    let setting = |key: &str| layers.settings.get(key)?.values.last().cloned();
    // As a run takes them: the flag, the environment, the settings files, the default.
    let given = (args.model.clone())
        .or_else(|| env("ROUNDS_MODEL"))
        .or_else(|| setting("model"));
    let model = config::name_model(given.as_deref(), &layers.aliases);
    let (check, provider) = model_check(&model, &layers.aliases, &cwd);
    checks.push(check);
    let key_file = (args.api_key_file.clone())
        .or_else(|| setting("api-key-file").map(PathBuf::from))
        .map(|f| cwd.join(f));
    checks.extend(key_checks(provider, key_file.as_deref(), &env));
    let base_url = args.base_url.clone().or_else(|| setting("base-url"));
    let store = (args.store.clone().filter(|s| !s.is_empty())).or_else(|| setting("store"));
    let timeout = Duration::from_secs_f64(args.timeout);
    let rt = crate::runtime().map_err(Failure::Runtime)?;
    let (endpoints, store) = rt.block_on(async {
        let endpoints = endpoint_checks(provider, base_url.as_deref(), &env, timeout);
        futures_util::join!(endpoints, store_check(store.as_deref(), timeout))
    });
    checks.extend(endpoints);
    checks.push(sandbox_check(setting("sandbox")));
    checks.push(store);
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c.failed())
        .map(|c| format!("{} ({})", c.check, c.subject))
        .collect();
    let report = Report {
        ok: failed.is_empty(),
        model,
        provider: provider.map(|e| e.name),
        checks,
        failed,
    };
    render::print_export(&match args.output {
        ListOutput::Json => serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
        ListOutput::Text => checklist(&report),
    });
    match report.ok {
        true => Ok(()),
        false => Err(Failure::Doctor(report.failed)),
    }
}

/// Each settings file on its own, then all of them with `--profile` and `-c` (said only when
/// that is what fails); and the settings that apply, as a run would take them.
fn settings_checks(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    profile: Option<&str>,
    overrides: &[String],
) -> (Vec<Check>, Layers) {
    let files = settings::files(env, cwd);
    let mut checks: Vec<Check> = files
        .iter()
        .map(|file| {
            let path = file.path.display().to_string();
            let whose = if file.users { "user's" } else { "project's" };
            match settings::load(std::slice::from_ref(file), None, &[]) {
                Ok(_) => Check::new("settings", path, State::Ok, format!("the {whose}: valid")),
                // The error names the file and line; the subject already says the file.
                Err(e) => {
                    let said = e.to_string();
                    let detail = said.strip_prefix(&format!("{path}:")).unwrap_or(&said);
                    Check::new("settings", path, State::Fail, format!("line {detail}"))
                }
            }
        })
        .collect();
    if files.is_empty() {
        let none = "none (the user's: $XDG_CONFIG_HOME/rounds/config.toml; the project's: \
                    ./.rounds.toml)";
        checks.push(Check::new("settings", "", State::Skip, none.to_owned()).needed(false));
    }
    let loaded = settings::load(&files, profile, overrides).and_then(|read| {
        if let Some(wanted) = profile {
            settings::check_profile(wanted, &format!("--profile {wanted}"), &read.profiles)?;
        }
        Ok(read)
    });
    let read = match loaded {
        Ok(read) => read,
        Err(e) => {
            if !checks.iter().any(Check::failed) {
                checks.push(Check::new(
                    "settings",
                    "--profile, -c",
                    State::Fail,
                    e.to_string(),
                ));
            }
            return (checks, Layers::default());
        }
    };
    let command = Cli::command();
    let given = command
        .clone()
        .try_get_matches_from(["rounds"])
        .unwrap_or_default();
    let (_, layers) = settings::settle(&command, &given, read);
    if !checks.iter().any(Check::failed)
        && let Some(e) = values_as_a_run_reads_them(env, cwd, profile, overrides)
    {
        checks.push(Check::new("settings", "values", State::Fail, e));
    }
    for refused in &layers.refused {
        let detail = format!("refused: {refused}");
        checks.push(Check::new(
            "settings",
            refused.key.clone(),
            State::Warn,
            detail,
        ));
    }
    (checks, layers)
}

/// What a run would say of the values the files and `-c` give (`max-rounds = "five"` reads
/// as a file but is no number): the same parse a run does, with a prompt that is never sent.
/// `None` when a run would take them.
fn values_as_a_run_reads_them(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    profile: Option<&str>,
    overrides: &[String],
) -> Option<String> {
    let mut args: Vec<std::ffi::OsString> = vec!["rounds".into()];
    if let Some(profile) = profile {
        args.extend(["--profile".into(), profile.into()]);
    }
    for o in overrides {
        args.extend(["-c".into(), o.into()]);
    }
    args.extend(["--".into(), "doctor".into()]);
    match settings::parse(args, env, cwd) {
        Ok(_) => None,
        // clap's own lines end in a usage hint for a command line nobody typed here.
        Err(settings::ParseError::Clap(e)) => {
            let said = e.render().to_string();
            let first = said.lines().next().unwrap_or_default();
            Some(first.trim_start_matches("error: ").to_owned())
        }
        Err(settings::ParseError::Settings(e)) => Some(e.to_string()),
    }
}

/// The model a run would use, and the provider it names.
fn model_check(
    model: &Named,
    aliases: &std::collections::BTreeMap<String, String>,
    cwd: &Path,
) -> (Check, Option<&'static Entry>) {
    let subject = model.given.clone();
    let mut said = match (model.alias, model.is_default) {
        (Some(from), _) => format!("the {from} alias of {}; ", model.spec),
        (None, true) => "the default; ".to_owned(),
        (None, false) => String::new(),
    };
    let fail = |detail: String| Check::new("model", subject.clone(), State::Fail, detail);
    let entry = match crate::providers::provider_of(&model.spec) {
        Some("replay") => {
            let file = model.spec.trim_start_matches("replay:");
            return match cwd.join(file).is_file() {
                true => {
                    said.push_str("a replay: no key or endpoint needed");
                    (Check::new("model", subject, State::Ok, said), None)
                }
                false => (fail(format!("replay: no file {file}")), None),
            };
        }
        Some(name) => providers::find(name).ok_or(name),
        None => Err(""),
    };
    match entry {
        Ok(entry) => {
            said.push_str(&format!("provider {} ({})", entry.name, entry.wire.name()));
            (Check::new("model", subject, State::Ok, said), Some(entry))
        }
        Err(name) if !name.is_empty() => {
            let hint = config::did_you_mean(name, providers::names().into_iter().map(Into::into));
            (fail(format!("unknown provider {name:?}{hint}")), None)
        }
        Err(_) => {
            let hint = config::did_you_mean(&model.spec, config::model_names(aliases));
            let detail = format!("cannot tell its provider{hint}: write it as PROVIDER/MODEL");
            (fail(detail), None)
        }
    }
}

/// Every provider's key: where it would come from, never its value. Needed for the run's
/// provider when it takes one; `--api-key-file` is for that provider only.
fn key_checks(
    run: Option<&'static Entry>,
    key_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<Check> {
    ordered(run)
        .map(|entry| {
            let is_run = run == Some(entry);
            let file = key_file.filter(|_| is_run);
            let var = entry.key_var;
            let needed = is_run && entry.key_required;
            if let Some(lines) = crate::provider::describe_credentials(entry, file, env) {
                // A cloud's key variable (Azure's, Bedrock's API key) is read as a run reads
                // it: one no header can carry fails here as it would there.
                if entry.auth != crate::providers::Auth::Google
                    && let Err(e) = config::key_origin(var, file, env)
                {
                    let state = if is_run { State::Fail } else { State::Warn };
                    return Check::new("auth", entry.name, state, e.to_string()).needed(is_run);
                }
                let text = lines.join("; ");
                // "none usable": what is set cannot be sent, which no machine will change.
                // "not probed": nothing is set but a metadata service, which only a cloud
                // machine has: nothing to check, as for a provider with no key.
                let state = if text.starts_with("none usable") {
                    if is_run { State::Fail } else { State::Warn }
                } else if text.starts_with("none") {
                    if is_run { State::Fail } else { State::Skip }
                } else if text.contains("(not probed") {
                    if is_run { State::Warn } else { State::Skip }
                } else {
                    State::Ok
                };
                return Check::new("auth", entry.name, state, text).needed(is_run);
            }
            let (state, detail) = match config::key_origin(var, file, env) {
                Ok(Some(from)) => (State::Ok, format!("found in {from}")),
                Ok(None) if !entry.key_required => (
                    State::Skip,
                    format!("none ({var} is needed only if the server asks)"),
                ),
                Ok(None) if needed => (
                    State::Fail,
                    format!("not found: set {var}, {var}_FILE or --api-key-file"),
                ),
                Ok(None) => (State::Skip, format!("not found ({var}, {var}_FILE)")),
                // A key that cannot be sent is broken wherever it is set: failed for the run's
                // provider, flagged for the others.
                Err(e) if is_run => (State::Fail, e.to_string()),
                Err(e) => (State::Warn, e.to_string()),
            };
            // A run with a key it cannot send fails, whether or not the provider needs one.
            let needed = needed || (is_run && state == State::Fail);
            Check::new("key", entry.name, state, detail).needed(needed)
        })
        .collect()
}

/// The run's provider first, then the others.
fn ordered(run: Option<&'static Entry>) -> impl Iterator<Item = &'static Entry> {
    run.into_iter()
        .chain(PROVIDERS.iter().filter(move |e| Some(*e) != run))
}

/// One request to each provider's base URL (`--base-url` for the run's), all at once: any
/// HTTP answer means the endpoint is reachable (no key is sent, so most answer 401 or 404).
async fn endpoint_checks(
    run: Option<&'static Entry>,
    base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    timeout: Duration,
) -> Vec<Check> {
    let client = crate::net::builder(timeout).timeout(timeout).build();
    let checks = ordered(run).map(|entry| {
        let is_run = run == Some(entry);
        let url = base_url
            .filter(|_| is_run)
            .map(str::to_owned)
            .or_else(|| entry.url_vars.iter().find_map(|v| env(v)))
            .unwrap_or_else(|| entry.default_url.to_owned());
        let client = client.as_ref();
        async move {
            let (state, detail) = match client {
                // A cloud's URL comes from its region or project, which a run resolves.
                _ if url.is_empty() && entry.auth == crate::providers::Auth::Azure => (
                    if is_run { State::Fail } else { State::Skip },
                    "none: set AZURE_OPENAI_ENDPOINT or --base-url".to_owned(),
                ),
                _ if url.is_empty() => (
                    State::Skip,
                    "made from the region or project when a run starts".to_owned(),
                ),
                Ok(client) => reach(client, &url).await,
                Err(e) => (State::Fail, format!("no HTTP client: {e}")),
            };
            Check::new("endpoint", entry.name, state, detail).needed(is_run)
        }
    });
    futures_util::future::join_all(checks).await
}

async fn reach(client: &reqwest::Client, url: &str) -> (State, String) {
    let started = Instant::now();
    let shown = terminal::line(url).into_owned();
    match client.get(url).send().await {
        Ok(response) => (
            State::Ok,
            format!(
                "{shown} answered HTTP {} in {} ms",
                response.status().as_u16(),
                started.elapsed().as_millis()
            ),
        ),
        Err(e) => (
            State::Fail,
            format!("{shown}: {}", crate::net::describe(&e)),
        ),
    }
}

/// The sandbox a run's tool processes would get on this kernel: a failure only for `require`
/// when the kernel cannot enforce it all, as a run would refuse to start.
fn sandbox_check(value: Option<String>) -> Check {
    let value = value.unwrap_or_else(|| "workspace-write".to_owned());
    let support = sandbox::probe();
    let kernel = format!(
        "Landlock ABI {}, seccomp {}",
        support.landlock_abi,
        if support.seccomp { "on" } else { "off" }
    );
    let sandbox = match sandbox::parse_flag(&value) {
        Ok((mode, require)) => Sandbox {
            require,
            ..Sandbox::new(mode)
        },
        Err(e) => return Check::new("sandbox", value, State::Fail, e.to_string()),
    };
    let (state, detail) = match sandbox.check(support) {
        Ok(None) if sandbox.is_off() => (State::Ok, format!("{kernel}; tools are not confined")),
        Ok(None) => (State::Ok, format!("{kernel}; everything enforced")),
        Ok(Some(_)) => (
            State::Warn,
            format!(
                "{kernel}; not enforced: {}",
                sandbox.missing(support).join("; ")
            ),
        ),
        Err(e) => (State::Fail, e.to_string()),
    };
    Check::new("sandbox", value, state, detail)
}

/// `--store`, `ROUNDS_STORE` or the settings' `store`: connected to, and asked one query.
async fn store_check(url: Option<&str>, timeout: Duration) -> Check {
    let Some(url) = url else {
        let detail = "none given (--store or ROUNDS_STORE)".to_owned();
        return Check::new("store", "", State::Skip, detail).needed(false);
    };
    match tokio::time::timeout(timeout, crate::store::reachable(url)).await {
        Ok(Ok(database)) => Check::new("store", database, State::Ok, "connected".to_owned()),
        Ok(Err(e)) => Check::new("store", "", State::Fail, e.to_string()),
        Err(_) => {
            let detail = format!("no answer within {} s", timeout.as_secs_f64());
            Check::new("store", "", State::Fail, detail)
        }
    }
}

/// The checks as a checklist: what the run needs, then the rest.
fn checklist(report: &Report) -> String {
    let line = |c: &Check| {
        let mark = match (c.state, c.needed) {
            (State::Ok, _) => "ok",
            (State::Warn, _) => "warn",
            (State::Fail, true) => "FAIL",
            (State::Fail, false) => "fail",
            (State::Skip, _) => "-",
        };
        let subject = match c.subject.as_str() {
            "" => String::new(),
            s => format!("{s}: "),
        };
        let text = format!("{mark:<5} {:<9} {subject}{}", c.check, c.detail);
        format!("{}\n", terminal::line(&text))
    };
    let needed: String = report
        .checks
        .iter()
        .filter(|c| c.needed)
        .map(line)
        .collect();
    let rest: String = report
        .checks
        .iter()
        .filter(|c| !c.needed)
        .map(line)
        .collect();
    let end = match report.ok {
        true => "every check this run needs passed".to_owned(),
        false => format!("failed: {}", report.failed.join(", ")),
    };
    format!("What a run needs:\n{needed}\nThe rest:\n{rest}\n{end}\n")
}
