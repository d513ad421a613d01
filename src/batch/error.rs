//! Why a batch could not do what it was asked, or what went wrong while it went on. The face
//! says it (`commands::report`) with the status each kind has here.

use std::io;
use std::path::{Path, PathBuf};

use super::job::SetupError;
use crate::outcome::Status;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The run flags as clap reads them for a job, or a worker's words.
    #[error("{0}")]
    Flags(#[from] clap::Error),
    /// The user's OpenTelemetry settings cannot be used.
    #[error("OpenTelemetry: {0}")]
    Telemetry(#[from] crate::telemetry::ConfigError),
    /// A run flag that means nothing per job (`--transcript`, `-o`, a prompt…).
    #[error("{flag} does not apply to a batch: {why}")]
    NotPerJob { flag: String, why: &'static str },
    #[error("no JOBS file (a JSONL file, or - for stdin); see rounds batch --help")]
    NoJobsFile,
    #[error("--template {}: {source}", path.display())]
    Template { path: PathBuf, source: io::Error },
    #[error("cannot read the jobs from stdin: {0}")]
    Stdin(io::Error),
    #[error("{}: {source}", path.display())]
    JobsFile { path: PathBuf, source: io::Error },
    /// Not one line of the jobs (named by the string) is a job.
    #[error("{0}: no valid job")]
    NoValidJob(String),
    #[error("a batch needs --out DIR for its transcripts and results")]
    NoOut,
    /// The batch's directory (`--out DIR`, or a worker's own temporary one).
    #[error("{}", out_error(.dir.as_deref(), .source))]
    Out {
        dir: Option<PathBuf>,
        source: io::Error,
    },
    /// `--junit FILE` cannot be written, found before any job runs.
    #[error("--junit: {0}")]
    Junit(io::Error),
    /// `--junit FILE` could not be written after the jobs ran.
    #[error("--junit: {0}")]
    JunitWritten(io::Error),
    /// A job that cannot even be configured: the batch's flags or environment are wrong (a
    /// missing key), so no job would run.
    #[error("job {id:?}: {source}")]
    Job { id: String, source: SetupError },
    /// `results.jsonl` cannot be made before any job runs.
    #[error("{}: {source}", path.display())]
    Results { path: PathBuf, source: io::Error },
    /// `batch results` could not write the queued batch's `results.jsonl`.
    #[error("{0}")]
    ResultsWritten(io::Error),
    #[error("--enqueue needs --store URL (or ROUNDS_STORE)")]
    NoStore,
    /// A run flag's value a queue row cannot keep.
    #[error("--{flag}: a queued batch keeps only UTF-8 values")]
    NotUtf8 { flag: String },
    #[error("cannot encode a job")]
    Encode(#[source] serde_json::Error),
    #[error("--worker needs --store URL and --batch ID")]
    NoQueue,
    #[error("no batch {0:?} in the store")]
    UnknownBatch(String),
    /// The store, before or instead of running jobs (its own classification decides the
    /// status).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The queue failed under a working worker: it stops taking jobs.
    #[error("the queue: {0}")]
    Queue(StoreError),
    /// The run flags the batch was queued with do not parse.
    #[error("the batch's queued flags: {0}")]
    QueuedFlags(clap::Error),
    /// The queued flags with the worker's own after them do not parse.
    #[error("the batch's flags with this worker's: {0}")]
    WorkerFlags(clap::Error),
}

impl BatchError {
    /// What the user can fix before any job runs is a usage error; failures of what was
    /// working are errors. Exhaustive on purpose: a new kind must choose.
    pub(crate) fn status(&self) -> Status {
        match self {
            BatchError::Flags(_)
            | BatchError::NotPerJob { .. }
            | BatchError::NoJobsFile
            | BatchError::Template { .. }
            | BatchError::Stdin(_)
            | BatchError::JobsFile { .. }
            | BatchError::NoValidJob(_)
            | BatchError::NoOut
            | BatchError::Out { .. }
            | BatchError::Junit(_)
            | BatchError::Job { .. }
            | BatchError::Results { .. }
            | BatchError::NoStore
            | BatchError::NotUtf8 { .. }
            | BatchError::NoQueue
            | BatchError::UnknownBatch(_)
            | BatchError::QueuedFlags(_)
            | BatchError::WorkerFlags(_)
            | BatchError::Telemetry(_) => Status::Usage,
            BatchError::JunitWritten(_)
            | BatchError::ResultsWritten(_)
            | BatchError::Encode(_)
            | BatchError::Queue(_) => Status::Error,
            BatchError::Store(e) => e.status(),
        }
    }
}

/// Why `--out` cannot be the batch's directory, and what to do when it names a file.
fn out_error(dir: Option<&Path>, source: &io::Error) -> String {
    match dir {
        Some(d) if d.exists() && !d.is_dir() => format!(
            "--out {} is a file, not a directory: --out names the directory where each job's \
             transcript and results.jsonl go (made if missing, and read again when the batch \
             runs again); name another directory, or move the file away",
            d.display()
        ),
        _ => format!("--out{}: {source}", at(dir)),
    }
}

/// ` DIR` after `--out`, when the user named one.
fn at(dir: Option<&Path>) -> String {
    dir.map(|d| format!(" {}", d.display())).unwrap_or_default()
}
