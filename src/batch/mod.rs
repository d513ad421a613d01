//! `rounds batch`: many jobs, each an ordinary run with an ordinary transcript, driven from one
//! process (one runtime, one connection pool and one rate limiter per provider endpoint).
//!
//! This is face-level wiring: it parses its own command line (`args`: its flags plus every run
//! flag), reads the jobs (`jobs`), and for each job resolves a `Config` and calls
//! `app::run_shared` (`job`). A local batch (`local`) keeps its state in `--out DIR` (`out`,
//! `results`) and is resumable by running it again; with `--store`, a batch can instead be a
//! queue in PostgreSQL that workers on any machine drain (`queue`; `inspect` reads it back).
//! `limits` holds what the jobs share per provider, `report` what a batch reports, `display`
//! prints, and `error` says why a batch could not run (the face reports it).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::agent::Cancel;
use crate::outcome::{Signal, Status};

pub(crate) mod args;
mod display;
mod error;
mod inspect;
mod job;
pub mod jobs;
mod lease;
pub(crate) mod limits;
mod local;
mod out;
mod queue;
pub mod report;
mod restore;
pub mod results;

pub(crate) use error::BatchError;

use args::{BatchCommand, BatchFlags, Parsed};
use jobs::{BadLine, Jobs, Template};
use results::ResultLine;

/// Runs `rounds batch` once its words (after "batch") are `parsed` and the runtime is up
/// (`commands::batch` does both and reports what this returns). `Ok` is the status the batch
/// ends with once it said what it did: completed, incomplete (some job did not complete, or a
/// line of the jobs file was no job; each job's own status is in `results.jsonl`), unavailable
/// (the only jobs that did not complete met a provider that stayed unavailable) or interrupted.
pub(crate) fn main(
    rt: &tokio::runtime::Runtime,
    words: Vec<OsString>,
    parsed: Parsed,
) -> Result<Status, BatchError> {
    let started = Instant::now();
    let flags = parsed.flags.clone();
    match flags.command {
        Some(BatchCommand::Status(a)) => rt.block_on(inspect::status(&a)),
        Some(BatchCommand::Results(a)) => rt.block_on(inspect::results(&a)),
        None if flags.worker => rt.block_on(queue::work(words, started)),
        None => run(rt, parsed, &flags, started),
    }
}

/// Reads the parsed command line's run flags and starts logging; refuses what a batch cannot
/// take. Before the runtime starts.
pub(crate) fn prepare(parsed: &Parsed) -> Result<(), BatchError> {
    let cli = parsed.cli().map_err(BatchError::Flags)?;
    // A job's warnings would repeat for every job (a sandbox the kernel cannot enforce fully):
    // a batch logs only errors unless asked with -v; each job's record says what happened.
    crate::init_logging(cli.verbose, cli.quiet || cli.verbose == 0);
    match args::refused(&parsed.matches) {
        Some(refused) => Err(refused),
        None => Ok(()),
    }
}

/// A batch from a jobs file: queued with `--enqueue`, else run here (this shard's jobs).
fn run(
    rt: &tokio::runtime::Runtime,
    parsed: Parsed,
    flags: &BatchFlags,
    started: Instant,
) -> Result<Status, BatchError> {
    let (jobs, source) = load(flags)?;
    display::bad_lines(&source, &jobs.bad);
    if jobs.jobs.is_empty() {
        return Err(BatchError::NoValidJob(source));
    }
    let Jobs { jobs, bad } = jobs;
    if flags.enqueue {
        return rt.block_on(queue::enqueue(&parsed, &jobs, &bad));
    }
    let mine: Vec<_> = match flags.shard {
        Some(shard) => jobs.into_iter().filter(|j| shard.contains(&j.id)).collect(),
        None => jobs,
    };
    rt.block_on(local::run(job::Setup::new(parsed), mine, &bad, started))
}

/// The jobs file (and template) read and parsed, with the name to report lines under.
fn load(flags: &BatchFlags) -> Result<(Jobs, String), BatchError> {
    let Some(path) = &flags.jobs_file else {
        return Err(BatchError::NoJobsFile);
    };
    let template = match &flags.template {
        Some(t) => {
            let text = std::fs::read_to_string(t).map_err(|source| BatchError::Template {
                path: t.clone(),
                source,
            })?;
            Some(Template::parse(&text))
        }
        None => None,
    };
    let (text, source) = if path.as_os_str() == "-" {
        let mut text = String::new();
        use std::io::Read;
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(BatchError::Stdin)?;
        (text, "stdin".to_owned())
    } else {
        let text = std::fs::read_to_string(path).map_err(|source| BatchError::JobsFile {
            path: path.clone(),
            source,
        })?;
        (text, path.display().to_string())
    };
    Ok((jobs::parse(&text, template.as_ref()), source))
}

/// Which jobs are running (so a signal stops them all), and whether a signal came.
#[derive(Default)]
pub(crate) struct Control {
    state: Mutex<ControlState>,
}

#[derive(Default)]
struct ControlState {
    signal: Option<Signal>,
    running: HashMap<usize, Cancel>,
}

impl Control {
    /// A job may start: its cancellation, or `None` once a signal came.
    pub(crate) fn start(&self, key: usize) -> Option<Cancel> {
        let mut s = self.state.lock().ok()?;
        if s.signal.is_some() {
            return None;
        }
        let cancel = Cancel::default();
        s.running.insert(key, cancel.clone());
        Some(cancel)
    }

    pub(crate) fn done(&self, key: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.running.remove(&key);
        }
    }

    /// Why no job may start any more.
    pub(crate) fn stopped(&self) -> Option<String> {
        self.signal().map(|s| {
            format!(
                "the batch was interrupted by {} before this job started",
                s.name()
            )
        })
    }

    pub(crate) fn signal(&self) -> Option<Signal> {
        self.state.lock().ok().and_then(|s| s.signal)
    }

    /// Stops the batch: no job starts, and the running ones end as interrupted (writing their
    /// `end` line). Returns whether a signal had come before.
    fn interrupt(&self, signal: Signal) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return true;
        };
        let earlier = s.signal.is_some();
        s.signal.get_or_insert(signal);
        for cancel in s.running.values() {
            cancel.cancel(
                Status::Interrupted(signal),
                format!("interrupted by {}", signal.name()),
            );
        }
        earlier
    }
}

/// SIGINT and SIGTERM stop the batch (see `Control::interrupt`); a second one ends the process
/// at once: everything finished is already on disk.
fn watch_signals(control: Arc<Control>) -> tokio::task::JoinHandle<()> {
    crate::app::on_signals(move |signal| control.interrupt(signal))
}

/// A batch's results, to report.
struct Finish<'a> {
    results: Vec<ResultLine>,
    bad: &'a [BadLine],
    /// Where `results.jsonl` is (a worker writes none).
    results_path: Option<PathBuf>,
    backoffs: u32,
    seconds: f64,
    quiet: bool,
    reports: Reports,
}

/// Where the batch's reports go, opened before any job runs (see `files`).
#[derive(Default)]
struct Reports {
    /// `--junit FILE`.
    junit: Option<crate::files::Target>,
    /// `--step-summary FILE` (or `GITHUB_STEP_SUMMARY`), open for appending.
    step_summary: Option<std::fs::File>,
}

impl Reports {
    /// Opens them: an unusable `--junit` is a usage error, a step summary only a warning.
    fn open(
        junit: Option<&std::path::Path>,
        step_summary: Option<&std::path::Path>,
    ) -> Result<Reports, BatchError> {
        let junit = match junit {
            Some(path) => Some(crate::files::Target::new(path).map_err(BatchError::Junit)?),
            None => None,
        };
        let step_summary = step_summary
            .filter(|p| !p.as_os_str().is_empty())
            .and_then(
                |path| match crate::files::Target::new(path).and_then(|t| t.append()) {
                    Ok(file) => Some(file),
                    Err(e) => {
                        display::warning(&format!("step summary: {e}"));
                        None
                    }
                },
            );
        Ok(Reports {
            junit,
            step_summary,
        })
    }
}

impl Finish<'_> {
    /// Prints the table, writes `--junit` and the step summary, and returns the batch's
    /// status: the signal's, else the summary's (`report::Summary::status`).
    fn report(&self, signal: Option<Signal>) -> Status {
        let summary = report::Summary::of(&self.results, self.bad.len());
        if !self.quiet {
            let results = self.results_path.as_deref();
            display::summary(&summary, results, self.backoffs, self.seconds);
        }
        if let Some(target) = &self.reports.junit {
            let xml = report::junit(&self.results, self.bad, self.seconds);
            if let Err(e) = target.write(xml.as_bytes()) {
                display::error(BatchError::JunitWritten(e));
            }
        }
        if let Some(mut file) = self.reports.step_summary.as_ref() {
            use std::io::Write;
            let md = report::markdown(&summary, &self.results, self.bad);
            if let Err(e) = file.write_all(md.as_bytes()) {
                display::warning(&format!("step summary: {e}"));
            }
        }
        match signal {
            Some(signal) => Status::Interrupted(signal),
            None => summary.status(),
        }
    }
}
