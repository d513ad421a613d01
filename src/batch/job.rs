//! One job is one ordinary run: its `Cli` is the batch's run flags with the job's line applied,
//! resolved by `Config::resolve` like any run's, and run by `app::run_shared`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::args::Parsed;
use super::display::Display;
use super::jobs::Job;
use super::limits::Budget;
use crate::agent::{Cancel, Observer};
use crate::app::{self, Shared};
use crate::cli::Cli;
use crate::config::{Config, ConfigError, Inputs, StdinKind};
use crate::outcome::Outcome;
use crate::terminal;
use crate::transcript::Round;
use crate::trust::{self, Overlay, Source};

/// Why a job cannot be configured: the usage error that ends it before it starts.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The batch's run flags as clap reads them.
    #[error("{0}")]
    Flags(#[from] clap::Error),
    /// The job's flags, environment and files, as `Config::resolve` finds them.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The job's transcript cannot be made in the batch's directory.
    #[error("{0}")]
    Transcript(#[from] std::io::Error),
}

/// What every job of a batch resolves against.
pub(crate) struct Setup {
    pub(crate) parsed: Parsed,
    pub(crate) env_all: Vec<(OsString, OsString)>,
    pub(crate) cwd: PathBuf,
    /// `None`: jobs come from a jobs file; `Some(trusted)`: from the queue, trusted with
    /// `--trust-queue`.
    pub(crate) queue: Option<bool>,
}

/// Where a job's run writes, and what it continues.
pub(crate) struct Placement<'a> {
    /// Made through the batch's directory, held open since before any job ran.
    pub(crate) transcript: crate::files::Target,
    /// The transcript a resumed job continues (its prompt is then "Continue from where you
    /// left off.").
    pub(crate) resume: Option<&'a Path>,
    /// `--store` for the job's run (a worker's jobs always have it).
    pub(crate) store: Option<&'a str>,
}

impl Setup {
    pub(crate) fn new(parsed: Parsed) -> Setup {
        Setup {
            parsed,
            env_all: std::env::vars_os().collect(),
            cwd: std::env::current_dir().unwrap_or_else(|_| ".".into()),
            queue: None,
        }
    }

    /// The job's own values over the batch's flags, as `trust` allows its source: a job line is
    /// as trusted as the command line naming the jobs file (its deny list adds to the batch's);
    /// a queue row is not, unless the worker said so. Returns what was refused.
    fn overlay(&self, job: &Job, cli: &mut Cli) -> Vec<trust::Refusal> {
        let source = match self.queue {
            None => Source::JobLine { line: job.line },
            Some(trusted) => Source::QueueRow { trusted },
        };
        let endpoint = cli.base_url.is_some() || cli.api_key_file.is_some();
        let mut ov = Overlay::new(source, trust::Pin::new(endpoint, cli.model.as_deref()));
        let o = job.overrides.clone();
        if let Some(model) = o.model {
            ov.model(&mut cli.model, model);
        }
        if let Some(dir) = o.workspace {
            ov.set("workspace", &mut cli.tools.workspace, Some(dir));
        }
        if let Some(rules) = o.allow {
            ov.set("allow", &mut cli.tools.allow, rules.into_vec());
        }
        if let Some(rules) = o.deny {
            ov.grow("deny", &mut cli.tools.deny, rules.into_vec());
        }
        if let Some(system) = o.system {
            let (mut text, mut file) = (cli.system.clone(), cli.system_file.clone());
            ov.set("system", &mut text, Some(system));
            if text != cli.system {
                file = None;
            }
            (cli.system, cli.system_file) = (text, file);
        }
        if let Some(schema) = o.output_schema {
            ov.set("output-schema", &mut cli.output_schema, Some(schema));
        }
        if let Some(n) = o.max_rounds {
            ov.limit("max-rounds", &mut cli.max_rounds, n.get());
        }
        if let Some(n) = o.max_tokens {
            ov.limit_opt("max-tokens", &mut cli.max_tokens, n.get());
        }
        if let Some(secs) = o.timeout {
            ov.limit_opt("timeout", &mut cli.timeout, secs);
        }
        if let Some(n) = o.budget_tokens {
            ov.limit_opt("budget-tokens", &mut cli.budget_tokens, n);
        }
        if let Some(usd) = o.budget_usd {
            ov.limit_opt("budget-usd", &mut cli.budget_usd, usd);
        }
        if let Some(t) = o.temperature {
            ov.set("temperature", &mut cli.temperature, Some(t));
        }
        if let Some(check) = o.check {
            ov.set("check", &mut cli.check, Some(check));
        }
        if let Some(n) = o.max_checks {
            ov.limit("max-checks", &mut cli.max_checks, n.get());
        }
        if let Some(files) = o.attach {
            ov.set("attach", &mut cli.attach, files);
        }
        if let Some(effort) = o.reasoning_effort {
            ov.set("reasoning-effort", &mut cli.reasoning_effort, Some(effort));
        }
        ov.refused
    }

    /// The job's run, configured; `Err` is the usage error that ends it before it starts.
    pub(crate) fn config(&self, job: &Job, at: &Placement<'_>) -> Result<Config, SetupError> {
        let cli = self.cli(job, at)?;
        let env = |name: &str| crate::env::var(name);
        let mut no_stdin = || Ok(String::new());
        let inputs = Inputs {
            env: &env,
            env_all: self.env_all.clone(),
            stdin_kind: StdinKind::Nothing,
            read_stdin: &mut no_stdin,
            cwd: self.cwd.clone(),
            aliases: Default::default(),
            agents: Vec::new(),
            transcript: Some(at.transcript.clone()),
        };
        Ok(Config::resolve(cli, inputs)?)
    }

    /// The run flags of one job: the batch's, with the job's line and placement applied.
    fn cli(&self, job: &Job, at: &Placement<'_>) -> Result<Cli, clap::Error> {
        let flags = &self.parsed.flags;
        let mut cli = self.parsed.cli()?;
        cli.command = None;
        cli.prompt = match at.resume {
            Some(_) => Vec::new(),
            None => vec![job.prompt.clone()],
        };
        cli.prompt_file = None;
        cli.no_stdin = true;
        cli.resume = at.resume.map(|p| p.display().to_string());
        cli.transcript = Some(at.transcript.path());
        cli.no_transcript = false;
        cli.output_last_message = None;
        cli.store = at.store.map(str::to_owned);
        // --budget-* are the whole batch's; a job has its own.
        cli.budget_tokens = flags.job_budget_tokens;
        cli.budget_usd = flags.job_budget_usd;
        let refused = self.overlay(job, &mut cli);
        for r in refused {
            super::display::warning(&format!(
                "job {:?}: {}",
                job.id,
                terminal::line(&r.to_string())
            ));
        }
        Ok(cli)
    }
}

/// Runs one configured job: `cancel` stops it (the batch watches the signals), and what it
/// spends counts against the batch's budget.
pub(crate) async fn run(
    config: Config,
    key: usize,
    cancel: Cancel,
    pool: &Arc<super::limits::Pool>,
    display: &Arc<Display>,
    trace: Option<Arc<crate::telemetry::Run>>,
) -> Outcome {
    run_with(config, key, cancel, pool, display, None, trace).await
}

/// [`run`] with the job's records written to `store` (a worker's pool, under the job's lease).
pub(crate) async fn run_with(
    config: Config,
    key: usize,
    cancel: Cancel,
    pool: &Arc<super::limits::Pool>,
    display: &Arc<Display>,
    store: Option<Arc<dyn crate::records::StoreSource>>,
    trace: Option<Arc<crate::telemetry::Run>>,
) -> Outcome {
    let job: Arc<dyn crate::agent::Observer> = Arc::new(JobObserver {
        key,
        display: display.clone(),
        budget: pool.budget.clone(),
    });
    let observer: Arc<dyn crate::agent::Observer> = match trace {
        Some(run) => Arc::new(crate::agent::Fanout(vec![
            job,
            Arc::new(crate::otel::Traced(run)),
        ])),
        None => job,
    };
    let shared = Shared {
        cancel: Some(cancel.clone()),
        providers: Some(pool.for_job(cancel)),
        store,
    };
    app::run_shared(config, observer, shared).await
}

/// Hears a job's rounds: for the live view and the batch's budget.
struct JobObserver {
    key: usize,
    display: Arc<Display>,
    budget: Arc<Budget>,
}

impl Observer for JobObserver {
    fn round_finished(&self, round: &Round) {
        self.budget.add(&round.usage, round.cost_usd);
        self.display.round(self.key, round.round);
    }
}
