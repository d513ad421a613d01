//! `rounds batch`: many jobs, each an ordinary run with an ordinary transcript, driven from one
//! process (one runtime, one connection pool and one rate limiter per provider endpoint).
//!
//! This is face-level wiring: it parses its own command line (`args`: its flags plus every run
//! flag), reads the jobs (`jobs`), and for each job resolves a `Config` and calls
//! `app::run_shared` (`job`). A local batch (`local`) keeps its state in `--out DIR` (`out`,
//! `results`) and is resumable by running it again; with `--store`, a batch can instead be a
//! queue in PostgreSQL that workers on any machine drain (`queue`; `inspect` reads it back).
//! `limits` holds what the jobs share per provider, `report` what a batch reports, and
//! `display` prints.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::agent::Cancel;
use crate::outcome::{Signal, Status};

pub mod args;
mod display;
mod inspect;
mod job;
pub mod jobs;
pub mod limits;
mod local;
mod out;
mod queue;
pub mod report;
pub mod results;

use args::{BatchCommand, BatchFlags};
use jobs::{BadLine, Jobs, Template};
use results::ResultLine;

/// The exit code of a batch in which some job did not complete (each job's own code is in
/// `results.jsonl`).
pub const INCOMPLETE: u8 = 8;

/// Runs `rounds batch` with its words (after "batch") and returns the exit code.
pub fn main(words: Vec<OsString>) -> u8 {
    let parsed = match args::parse(words.clone()) {
        Ok(parsed) => parsed,
        Err(e) => {
            // --help goes to stdout with 0; bad flags to stderr with 2.
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let cli = match parsed.cli() {
        Ok(cli) => cli,
        Err(e) => {
            display::error("usage error", &e);
            return Status::Usage.exit_code();
        }
    };
    // A job's warnings would repeat for every job (a sandbox the kernel cannot enforce fully):
    // a batch logs only errors unless asked with -v; each job's record says what happened.
    crate::init_logging(cli.verbose, cli.quiet || cli.verbose == 0);
    if let Some(why) = args::refused(&parsed.matches) {
        display::error("usage error", &why);
        return Status::Usage.exit_code();
    }
    let rt = match crate::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            display::error("error", &format!("cannot start the async runtime: {e}"));
            return Status::Error.exit_code();
        }
    };
    let started = Instant::now();
    let flags = parsed.flags.clone();
    match flags.command {
        Some(BatchCommand::Status(a)) => rt.block_on(inspect::status(&a)),
        Some(BatchCommand::Results(a)) => rt.block_on(inspect::results(&a)),
        None if flags.worker => rt.block_on(queue::work(words, started)),
        None => {
            let Some((jobs, source)) = load(&flags) else {
                return Status::Usage.exit_code();
            };
            display::bad_lines(&source, &jobs.bad);
            if jobs.jobs.is_empty() {
                display::error("usage error", &format!("{source}: no valid job"));
                return Status::Usage.exit_code();
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
    }
}

/// The jobs file (and template) read and parsed, with the name to report lines under; `None`
/// after saying why it cannot be read.
fn load(flags: &BatchFlags) -> Option<(Jobs, String)> {
    let Some(path) = &flags.jobs_file else {
        display::error(
            "usage error",
            "no JOBS file (a JSONL file, or - for stdin); see rounds batch --help",
        );
        return None;
    };
    let template = match &flags.template {
        Some(t) => match std::fs::read_to_string(t) {
            Ok(text) => Some(Template::parse(&text)),
            Err(e) => {
                display::error("usage error", &format!("--template {}: {e}", t.display()));
                return None;
            }
        },
        None => None,
    };
    let (text, source) = if path.as_os_str() == "-" {
        let mut text = String::new();
        use std::io::Read;
        match std::io::stdin().read_to_string(&mut text) {
            Ok(_) => (text, "stdin".to_owned()),
            Err(e) => {
                display::error(
                    "usage error",
                    &format!("cannot read the jobs from stdin: {e}"),
                );
                return None;
            }
        }
    } else {
        match std::fs::read_to_string(path) {
            Ok(text) => (text, path.display().to_string()),
            Err(e) => {
                display::error("usage error", &format!("{}: {e}", path.display()));
                return None;
            }
        }
    };
    Some((jobs::parse(&text, template.as_ref()), source))
}

/// Which jobs are running (so a signal stops them all), and whether a signal came.
#[derive(Default)]
pub struct Control {
    state: Mutex<ControlState>,
}

#[derive(Default)]
struct ControlState {
    signal: Option<Signal>,
    running: HashMap<usize, Cancel>,
}

impl Control {
    /// A job may start: its cancellation, or `None` once a signal came.
    pub fn start(&self, key: usize) -> Option<Cancel> {
        let mut s = self.state.lock().ok()?;
        if s.signal.is_some() {
            return None;
        }
        let cancel = Cancel::default();
        s.running.insert(key, cancel.clone());
        Some(cancel)
    }

    pub fn done(&self, key: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.running.remove(&key);
        }
    }

    /// Why no job may start any more.
    pub fn stopped(&self) -> Option<String> {
        self.signal().map(|s| {
            format!(
                "the batch was interrupted by {} before this job started",
                s.name()
            )
        })
    }

    pub fn signal(&self) -> Option<Signal> {
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
    ) -> Result<Reports, String> {
        let junit = match junit {
            Some(path) => {
                Some(crate::files::Target::new(path).map_err(|e| format!("--junit: {e}"))?)
            }
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
    /// Prints the table, writes `--junit` and the step summary, and returns the exit code:
    /// the signal's, else 0 when every job completed, else 8.
    fn report(&self, signal: Option<Signal>) -> u8 {
        let summary = report::Summary::of(&self.results, self.bad.len());
        if !self.quiet {
            let results = self.results_path.as_deref();
            display::summary(&summary, results, self.backoffs, self.seconds);
        }
        if let Some(target) = &self.reports.junit {
            let xml = report::junit(&self.results, self.bad, self.seconds);
            if let Err(e) = target.write(xml.as_bytes()) {
                display::error("error", &format!("--junit: {e}"));
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
            Some(signal) => Status::Interrupted(signal).exit_code(),
            None if summary.completed == summary.jobs => 0,
            None => INCOMPLETE,
        }
    }
}
