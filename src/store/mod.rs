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

mod nul;
mod postgres;
pub mod queue;
mod tls;

pub use postgres::{PgStore, connect, export};

use crate::outcome::Status;

/// Why the store could not be used. Messages name the database as `postgres://user@host:port/db`
/// and never carry the password, which may be in the URL the user gave.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("invalid store URL: {0}")]
    Url(String),
    #[error("cannot connect to the store {database}: {message}")]
    Connect { database: String, message: String },
    #[error("cannot set up the store's tables in {database}: {message}")]
    Migrate { database: String, message: String },
    #[error("no run {run_id:?} in the store {database}")]
    UnknownRun { run_id: String, database: String },
    #[error("{database}: {message}")]
    Database {
        database: String,
        message: String,
        /// The connection itself is gone (closed, or the server ended the session): worth one
        /// reconnect, unlike an error in the statement.
        lost: bool,
    },
    #[error("run {run_id:?} in the store cannot be read back: {message}")]
    Corrupt { run_id: String, message: String },
    /// A line that cannot be stored as it is (out of order, a number too large).
    #[error("{0}")]
    Internal(String),
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
            StoreError::Database { .. } | StoreError::Corrupt { .. } | StoreError::Internal(_) => {
                Status::Error
            }
        }
    }
}
