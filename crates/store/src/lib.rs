//! Runs kept in PostgreSQL (`--store URL`) beside the JSONL transcript, and `rounds export`,
//! which writes a stored run back out as a transcript.
//!
//! A transcript file lives on the machine that ran it; a team that runs rounds in CI wants to ask
//! across all its runs which ones failed, which tools erred and what they cost, with SQL. So each
//! run is also a row in `runs`, its blocks rows in `turn_blocks` and each round's remaining fields
//! a row in `turn_rounds` (see `migrations/`). Lines are written as they arrive, each round in one
//! transaction, so a killed run keeps every finished round here just as in the file.
//!
//! The store must not be a lossy copy: `export` rebuilds the start, round and end lines so that
//! they read back equal to the transcript, and `--resume` accepts the result. Blocks and results
//! are therefore stored as the very JSON the transcript holds, and the only transformation on the
//! way in, the escaping of NUL characters PostgreSQL cannot store (`nul`), is undone on the way out.
#![forbid(unsafe_code)]
#![deny(clippy::print_stdout)]

use rounds_base::{conversation, outcome, transcript};

mod export;
mod nul;
pub mod pool;
mod postgres;
pub mod queue;
mod tls;

pub use export::export;
pub use export::export_pooled;
pub use postgres::{PgStore, connect, reachable};
pub use tls::{TlsError, UrlError};

use crate::outcome::Status;
use crate::transcript::Line;

/// A durable record of runs other than the transcript file.
#[async_trait::async_trait]
pub trait Store: Send {
    /// Records one line (start, round or end) of the current run, before the next begins.
    async fn write(&mut self, line: &Line) -> Result<(), StoreError>;
}

/// Why the store could not be used. Messages name the database as `postgres://user@host:port/db`
/// and never carry the password, which may be in the URL the user gave.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("invalid store URL: {0}")]
    Url(#[source] UrlError),
    #[error("cannot connect to the store {database}: {cause}")]
    Connect {
        database: String,
        #[source]
        cause: ConnectError,
    },
    #[error("cannot set up the store's tables in {database}: {cause}")]
    Migrate {
        database: String,
        #[source]
        cause: MigrateError,
    },
    #[error("no run {run_id:?} in the store {database}")]
    UnknownRun { run_id: String, database: String },
    #[error("{database}: {}", postgres::describe_error(.source))]
    Database {
        database: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error("run {run_id:?} in the store cannot be read back: {problem}")]
    Corrupt {
        run_id: String,
        #[source]
        problem: RowError,
    },
    #[error("a batch {batch_id:?} is already queued in {database}")]
    BatchTaken { batch_id: String, database: String },
    #[error("batch {batch_id:?}: its run flags: {source}")]
    BatchFlags {
        batch_id: String,
        #[source]
        source: serde_json::Error,
    },
    /// A line or batch that cannot be stored as it is.
    #[error("cannot encode {what}: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what} does not fit {column_type}")]
    TooLarge {
        what: String,
        column_type: &'static str,
    },
    #[error("too many jobs for one batch")]
    TooManyJobs(usize),
    #[error("a round or end line came before the start")]
    NoStart,
    #[error("run {run_id:?} disappeared from the store before its end")]
    Vanished { run_id: String },
    #[error("the connections to {database}: {problem}")]
    Pool { database: String, problem: String },
    /// The store stayed unavailable for as long as this worker waits (`--store-timeout`).
    #[error("the store has been unavailable for {secs}s: {cause}")]
    Unavailable {
        database: String,
        secs: u64,
        #[source]
        cause: Box<StoreError>,
    },
    /// The job's lease is no longer this worker's: another worker took the job over.
    #[error(
        "this worker lost its lease on job {job_id:?}: another worker took it over, so this \
         one writes nothing more for it"
    )]
    Fenced { job_id: String },
}

impl StoreError {
    /// Exit 2 for what the user can fix before anything happened (the URL, the server, the run
    /// id); exit 1 for failures of a store that was working.
    pub fn status(&self) -> Status {
        match self {
            StoreError::Url(_)
            | StoreError::Connect { .. }
            | StoreError::Migrate { .. }
            | StoreError::UnknownRun { .. } => Status::Usage,
            StoreError::Database { .. }
            | StoreError::Corrupt { .. }
            | StoreError::BatchTaken { .. }
            | StoreError::BatchFlags { .. }
            | StoreError::Encode { .. }
            | StoreError::TooLarge { .. }
            | StoreError::TooManyJobs(_)
            | StoreError::NoStart
            | StoreError::Vanished { .. }
            | StoreError::Pool { .. }
            | StoreError::Fenced { .. } => Status::Error,
            StoreError::Unavailable { .. } => Status::Unavailable,
        }
    }

    /// Whether the store is unavailable for now rather than refusing what was asked: the
    /// server is down, restarting, unreachable or out of connections. Worth waiting for.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            StoreError::Connect {
                cause: ConnectError::Postgres(e),
                ..
            } => e.code().is_none() || postgres::unavailable(e),
            StoreError::Migrate {
                cause: MigrateError::Database(e),
                ..
            }
            | StoreError::Database { source: e, .. } => postgres::unavailable(e),
            StoreError::Pool { .. } => true,
            _ => false,
        }
    }

    /// A unique key taken: the row is there already.
    pub(crate) fn is_duplicate(&self) -> bool {
        matches!(self, StoreError::Database { source, .. }
            if source.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION))
    }

    /// Whether the session ended rather than a statement failing: worth one reconnect.
    pub(crate) fn is_connection_lost(&self) -> bool {
        matches!(self, StoreError::Database { source, .. } if postgres::connection_lost(source))
    }
}

/// Why a connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Tls(Box<TlsError>),
    #[error("{}", postgres::describe_error(.0))]
    Postgres(#[source] tokio_postgres::Error),
}

/// Why the schema could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{}", postgres::describe_error(.0))]
    Database(#[from] tokio_postgres::Error),
    #[error(
        "the schema is at version {found}, newer than this rounds knows ({known}): use a newer \
         rounds"
    )]
    Newer { found: i32, known: i32 },
    #[error("migration {version}: {}", postgres::describe_error(.source))]
    Step {
        version: i32,
        #[source]
        source: tokio_postgres::Error,
    },
}

/// What in a stored run's rows does not make a transcript.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    #[error("{column}: {source}")]
    Column {
        column: &'static str,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error("{column}: {source}")]
    Decode {
        column: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{0} is missing")]
    Missing(&'static str),
    #[error("{0} is out of range")]
    OutOfRange(&'static str),
    #[error("duration_ms is missing or negative")]
    Duration,
    #[error("unknown status {0:?}")]
    UnknownStatus(String),
    #[error("round {0}: its meta is not an object")]
    MetaNotObject(i32),
    #[error("round {round}: {source}")]
    Round {
        round: i32,
        #[source]
        source: serde_json::Error,
    },
    #[error("blocks of round {0}, which has no round row")]
    Orphans(i32),
}
