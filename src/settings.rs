//! Settings files: `$XDG_CONFIG_HOME/rounds/config.toml` (the user's) and `./.rounds.toml`
//! (the project's), holding any long flag of a run under its own name (`model = "…"`,
//! `allow = ["bash(git *)"]`, `tool-timeout = 60`), `[profile.NAME]` tables chosen with
//! `--profile NAME`, and `[alias]` model aliases; `-c key=value` sets one more.
//!
//! This module reads them; `trust` decides what each may set. The user's file, the profile
//! chosen from it and `-c` may set anything; the project's file (it comes with the code rounds
//! runs on) only what `trust::MAY_SET` lists, limits only tighter, deny lists only longer.
//!
//! Precedence, highest first: flags and environment variables (as clap reads them), `-c`, the
//! chosen profile of the user's file, the project's file (its chosen profile over its top
//! level), the user's file, the defaults. Files are turned into flags placed before the command
//! line's, so clap itself checks every value. Unknown keys are errors naming the file and line.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap::parser::ValueSource;
use toml::de::{DeTable, DeValue};

use crate::cli::Cli;
use crate::trust::{Refusal, Source};

pub(crate) mod agents;
mod settle;
pub(crate) use settle::settle;

/// One setting from a file, `-c` or a queue row: the flag's long name, its values (one per
/// repetition; none for a switch turned on) and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub key: String,
    pub values: Vec<String>,
    pub origin: Source,
}

/// What the settings files, `-c` (or a queue row) say, each value read with its source.
#[derive(Debug, Default)]
pub struct Read {
    /// The user's file, the user's chosen profile, `-c`: ascending precedence.
    pub trusted: Vec<Setting>,
    /// The project's file, then its chosen profile.
    pub untrusted: Vec<Setting>,
    /// The user's `[alias]` tables: apply to any model name.
    pub aliases: BTreeMap<String, String>,
    /// The project's: only for the project's own model value, if `trust` lets them.
    pub project_aliases: BTreeMap<String, String>,
    /// The names of every `[profile.NAME]` in the files, each once.
    pub profiles: std::collections::BTreeSet<String>,
    /// The `[agents.NAME]` tables of the user's file, then the project's.
    pub agents: Vec<agents::Written>,
}

/// What applies of the settings, after `trust`: what `rounds config` shows and a run warns of.
#[derive(Debug, Default)]
pub struct Layers {
    /// By key: the values that apply and where they came from.
    pub settings: BTreeMap<String, Applied>,
    /// The user's model aliases (`[alias]`): `name = "provider/model"`.
    pub aliases: BTreeMap<String, String>,
    /// The project's aliases it may use for its own model value.
    pub project_aliases: BTreeMap<String, String>,
    /// What a source set that it may not, and why.
    pub refused: Vec<Refusal>,
    /// The flags whose value came from an environment variable, by long name: the variable.
    pub env: BTreeMap<String, String>,
    /// The `[agents.NAME]` tables of the settings files, each with its source (`trust::agents`
    /// decides what applies once the run's provider is known).
    pub agents: Vec<agents::Written>,
}

impl Layers {
    /// Where the value of setting `key` came from, for a message about it: the variable
    /// (`ROUNDS_MODEL="…"`) or the file and line (`…/config.toml:3: max-rounds = "five"`);
    /// `None` for the command line and defaults.
    pub(crate) fn origin(&self, key: &str) -> Option<String> {
        if let Some(var) = self.env.get(key) {
            let value = crate::env::var(var).unwrap_or_default();
            return Some(format!("{var}={value:?}"));
        }
        let applied = self.settings.get(key)?;
        let sources: Vec<String> = applied.sources.iter().map(Source::to_string).collect();
        let values: Vec<String> = applied.values.iter().map(|v| format!("{v:?}")).collect();
        let value = match values.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        Some(format!("{}: {key} = {value}", sources.join(", ")))
    }
}

/// A setting's values as they apply, with their sources and how they combined.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub values: Vec<String>,
    pub sources: Vec<Source>,
    /// How sources combined, when more than one did (`tightens 25 (default)`, …).
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

/// A settings file and whether it is the user's own (trusted) or the project's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SettingsFile {
    pub(crate) path: PathBuf,
    pub(crate) users: bool,
}

/// The settings files, in ascending precedence: the user's, then the project's.
pub(crate) fn files(env: &dyn Fn(&str) -> Option<String>, cwd: &Path) -> Vec<SettingsFile> {
    let user = env("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|dir| SettingsFile {
            path: dir.join("rounds/config.toml"),
            users: true,
        });
    let project = SettingsFile {
        path: cwd.join(".rounds.toml"),
        users: false,
    };
    user.into_iter()
        .chain([project])
        .filter(|f| f.path.is_file())
        .collect()
}

/// Reads `files` and `overrides` (`-c key=value`), with `profile` chosen, each value with its
/// source. Nothing is decided here (see [`settle`]).
pub(crate) fn load(
    files: &[SettingsFile],
    profile: Option<&str>,
    overrides: &[String],
) -> Result<Read, SettingsError> {
    let known = long_flags();
    let mut read = Read::default();
    for file in files {
        let (top, chosen) = read_file(file, &known, profile, &mut read)?;
        let group = if file.users {
            &mut read.trusted
        } else {
            &mut read.untrusted
        };
        group.extend(top);
        group.extend(chosen);
    }
    // The user's chosen profile goes over their file's top level: put it last of the file's.
    read.trusted.sort_by_key(|s| rank(&s.origin));
    for item in overrides {
        let Some((key, value)) = item.split_once('=') else {
            return Err(SettingsError(format!("-c {item:?}: expected key=value")));
        };
        let key = key.trim();
        if !known.contains_key(key) {
            return Err(SettingsError(format!(
                "-c {key}: unknown setting{}",
                suggest(&known, key)
            )));
        }
        read.trusted.push(Setting {
            key: key.to_owned(),
            values: vec![value.to_owned()],
            origin: Source::Override,
        });
    }
    Ok(read)
}

/// The most bytes of a project's settings file read.
const MAX_PROJECT_FILE: u64 = 1024 * 1024;

/// The project's `.rounds.toml`: it comes with the repository, so it is opened once with no
/// link followed (`files::open_regular`: a link to `/proc/self/environ` would put rounds'
/// environment into a parse error on stderr), and read up to a cap.
fn read_project_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = crate::files::open_regular(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_PROJECT_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_PROJECT_FILE {
        return Err(format!("larger than {} KiB", MAX_PROJECT_FILE / 1024));
    }
    Ok(text)
}

/// Ascending precedence among the trusted sources of one kind.
fn rank(source: &Source) -> u8 {
    match source {
        Source::UserFile { profile: false, .. } => 0,
        Source::UserFile { profile: true, .. } => 1,
        _ => 2,
    }
}

/// One file's top-level settings and those of its chosen profile; its aliases go into `read`.
fn read_file(
    file: &SettingsFile,
    known: &BTreeMap<String, bool>,
    profile: Option<&str>,
    read: &mut Read,
) -> Result<(Vec<Setting>, Vec<Setting>), SettingsError> {
    let path = &file.path;
    let text = if file.users {
        std::fs::read_to_string(path).map_err(|e| e.to_string())
    } else {
        read_project_file(path)
    }
    .map_err(|e| SettingsError(format!("{}: {e}", path.display())))?;
    let doc =
        DeTable::parse(&text).map_err(|e| SettingsError(format!("{}: {e}", path.display())))?;
    let at = |span: std::ops::Range<usize>, profile: bool| {
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        let path = path.clone();
        if file.users {
            Source::UserFile {
                path,
                line,
                profile,
            }
        } else {
            Source::ProjectFile {
                path,
                line,
                profile,
            }
        }
    };
    let (mut top, mut chosen) = (Vec::new(), Vec::new());
    for (key, value) in doc.get_ref() {
        match (key.get_ref().as_ref(), value.get_ref()) {
            ("profile", DeValue::Table(table)) => {
                for (name, body) in table {
                    let name = name.get_ref().to_string();
                    let DeValue::Table(body) = body.get_ref() else {
                        return Err(SettingsError(format!(
                            "{}: profile.{name} is not a table",
                            at(value.span(), false)
                        )));
                    };
                    if profile == Some(name.as_str()) {
                        for (k, v) in body {
                            chosen.push(setting(
                                known,
                                k.get_ref(),
                                v.get_ref(),
                                at(k.span(), true),
                            )?);
                        }
                    }
                    read.profiles.insert(name);
                }
            }
            ("alias", DeValue::Table(table)) => {
                let aliases = if file.users {
                    &mut read.aliases
                } else {
                    &mut read.project_aliases
                };
                read_aliases(table, aliases, &|span| at(span, false))?;
            }
            ("agents", value @ DeValue::Table(_)) => {
                read.agents
                    .extend(agents::read(value, &|span| at(span, false))?);
            }
            (name, value) => top.push(setting(known, name, value, at(key.span(), false))?),
        }
    }
    Ok((top, chosen))
}

/// An `[alias]` table's `name = "provider/model"` entries.
fn read_aliases(
    table: &DeTable<'_>,
    aliases: &mut BTreeMap<String, String>,
    at: &dyn Fn(std::ops::Range<usize>) -> Source,
) -> Result<(), SettingsError> {
    for (name, target) in table {
        let target = target.get_ref().as_str().ok_or_else(|| {
            SettingsError(format!(
                "{}: an alias is a \"provider/model\" string",
                at(name.span())
            ))
        })?;
        aliases.insert(name.get_ref().to_string(), target.to_owned());
    }
    Ok(())
}

/// Every long flag of a run that a file may set, and whether it takes a value.
fn long_flags() -> BTreeMap<String, bool> {
    let command = Cli::command();
    command
        .get_arguments()
        .filter_map(|a| Some((a.get_long()?.to_owned(), a.get_action().takes_values())))
        .filter(|(name, _)| !matches!(name.as_str(), "help" | "version" | "profile" | "config"))
        .collect()
}

fn setting(
    known: &BTreeMap<String, bool>,
    key: &str,
    value: &DeValue<'_>,
    origin: Source,
) -> Result<Setting, SettingsError> {
    let Some(&takes_value) = known.get(key) else {
        return Err(SettingsError(format!(
            "{origin}: unknown setting {key:?}{}",
            suggest(known, key)
        )));
    };
    let scalar = |v: &DeValue<'_>| -> Option<String> {
        match v {
            DeValue::String(s) => Some(s.to_string()),
            DeValue::Integer(n) => Some(n.as_str().to_owned()),
            DeValue::Float(n) => Some(n.as_str().to_owned()),
            _ => None,
        }
    };
    let values = match (takes_value, value) {
        (false, DeValue::Boolean(true)) => vec![],
        (false, DeValue::Boolean(false)) => {
            return Ok(Setting {
                key: key.into(),
                values: vec!["false".into()],
                origin,
            });
        }
        (false, _) => {
            return Err(SettingsError(format!(
                "{origin}: {key} is a switch: true or false"
            )));
        }
        (true, DeValue::Array(items)) => items
            .iter()
            .map(|i| scalar(i.get_ref()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                SettingsError(format!("{origin}: {key}: a list of strings or numbers"))
            })?,
        (true, v) => vec![
            scalar(v)
                .ok_or_else(|| SettingsError(format!("{origin}: {key}: a string or a number")))?,
        ],
    };
    Ok(Setting {
        key: key.into(),
        values,
        origin,
    })
}

fn suggest(known: &BTreeMap<String, bool>, key: &str) -> String {
    match crate::suggest::closest(key, known.keys().map(String::as_str)) {
        Some(k) => format!(" (did you mean {k:?}?)"),
        None => "; settings are the long flags of a run, as in rounds --help".to_owned(),
    }
}

/// `--profile NAME` (or `ROUNDS_PROFILE`, as `label` says) names a profile no file has.
pub(crate) fn check_profile(
    wanted: &str,
    label: &str,
    profiles: &std::collections::BTreeSet<String>,
) -> Result<(), SettingsError> {
    if profiles.contains(wanted) {
        return Ok(());
    }
    let found = if profiles.is_empty() {
        "none".to_owned()
    } else {
        profiles.iter().cloned().collect::<Vec<_>>().join(", ")
    };
    let hint = crate::suggest::closest(wanted, profiles.iter().map(String::as_str))
        .map(|p| format!("; did you mean {p:?}?"))
        .unwrap_or_default();
    Err(SettingsError(format!(
        "{label}: no [profile.{wanted}] in the settings files (found: {found}){hint}"
    )))
}

/// Why the command line could not be read.
#[derive(Debug)]
pub(crate) enum ParseError {
    /// Bad flags, or `--help`/`--version` (clap prints those itself).
    Clap(clap::Error),
    /// A settings file or `-c` is wrong (a usage error).
    Settings(SettingsError),
}

/// Parses `args` with the settings files and `-c` applied beneath them (for a run, and for
/// `rounds config`, which shows the result); other subcommands take their flags as given.
pub(crate) fn parse(
    args: Vec<OsString>,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
) -> Result<(Cli, Layers), ParseError> {
    use clap::FromArgMatches;
    let command = crate::env::unset_empty(Cli::command());
    let given = command
        .clone()
        .try_get_matches_from(&args)
        .map_err(|e| located(e, &command, &args, None))?;
    // `rounds models` lists the user's aliases too. (`rounds doctor` reads the files itself:
    // a file that is wrong is what it reports, not a reason not to run.)
    let applies = matches!(given.subcommand_name(), None | Some("config" | "models"));
    if !applies {
        let cli = Cli::from_arg_matches(&given).map_err(ParseError::Clap)?;
        return Ok((cli, Layers::default()));
    }
    let profile = given.get_one::<String>("profile").cloned();
    let overrides: Vec<String> = given
        .get_many::<String>("config")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let read =
        load(&files(env, cwd), profile.as_deref(), &overrides).map_err(ParseError::Settings)?;
    if let Some(wanted) = &profile {
        let label = match given.value_source("profile") {
            Some(ValueSource::EnvVariable) => format!("ROUNDS_PROFILE={wanted:?}"),
            _ => format!("--profile {wanted}"),
        };
        check_profile(wanted, &label, &read.profiles).map_err(ParseError::Settings)?;
    }
    let (added, mut layers) = settle(&command, &given, read);
    layers.env = from_env(&command, &given);
    if given.subcommand_name().is_some() {
        // `rounds config` shows the layers (and `models` the aliases); they take no run flags
        // to merge them with.
        let cli = Cli::from_arg_matches(&given).map_err(ParseError::Clap)?;
        return Ok((cli, layers));
    }
    let mut full = args.clone();
    let insert_at = 1.min(full.len());
    full.splice(insert_at..insert_at, added);
    // The command again only on an error: a run's start should not pay for a second copy.
    let matches = command.try_get_matches_from(&full).map_err(|e| {
        let command = crate::env::unset_empty(Cli::command());
        located(e, &command, &args, Some(&layers))
    })?;
    let cli = Cli::from_arg_matches(&matches).map_err(ParseError::Clap)?;
    Ok((cli, layers))
}

/// The flags of `matches` whose value came from an environment variable: long name, variable.
fn from_env(command: &clap::Command, matches: &clap::ArgMatches) -> BTreeMap<String, String> {
    command
        .get_arguments()
        .filter(|a| matches.value_source(a.get_id().as_str()) == Some(ValueSource::EnvVariable))
        .filter_map(|a| {
            Some((
                a.get_long()?.to_owned(),
                a.get_env()?.to_string_lossy().into_owned(),
            ))
        })
        .collect()
}

/// A clap error about a value that did not come from the command line, told with where it
/// came from: the variable, or (with `layers`, the settings beneath the command line) the file
/// and line. clap names only the flag, which the user never typed.
fn located(
    e: clap::Error,
    command: &clap::Command,
    args: &[OsString],
    layers: Option<&Layers>,
) -> ParseError {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::ValueValidation | ErrorKind::InvalidValue
    ) {
        return ParseError::Clap(e);
    }
    let (Some(ContextValue::String(flag)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return ParseError::Clap(e);
    };
    let long = flag
        .trim_start_matches('-')
        .split([' ', '='])
        .next()
        .unwrap_or_default();
    let Some(arg) = command.get_arguments().find(|a| a.get_long() == Some(long)) else {
        return ParseError::Clap(e);
    };
    let typed = args.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        a.starts_with(&format!("--{long}"))
            || arg
                .get_short()
                .is_some_and(|s| !a.starts_with("--") && a.starts_with(&format!("-{s}")))
    });
    let origin = match layers {
        // The command line parsed alone: what failed now came from the settings.
        Some(layers) => layers.origin(long),
        None if typed => None,
        None => arg
            .get_env()
            .map(|var| format!("{}={value:?}", var.to_string_lossy())),
    };
    let Some(origin) = origin else {
        return ParseError::Clap(e);
    };
    let why = match (e.kind(), e.get(ContextKind::ValidValue)) {
        (ErrorKind::InvalidValue, Some(ContextValue::Strings(valid))) => {
            format!("expected one of {}", valid.join(", "))
        }
        _ => std::error::Error::source(&e).map_or_else(|| "invalid".to_owned(), |s| s.to_string()),
    };
    ParseError::Settings(SettingsError(format!(
        "{origin}: not a value of --{long}: {why}"
    )))
}
