//! Where a run is recorded: the JSONL transcript and, with `--store`, a database. Every line goes
//! to each of them as it is written; a failure of either ends the run (exit 1), because a record
//! that silently stops is worse than a run that stops.

use std::path::PathBuf;

use crate::store::{Store, StoreError};
use crate::transcript::{Line, WriteError, Writer};

/// Where a run that shares its process gets its store instead of connecting on its own: a
/// worker's jobs write through the worker's pool, under their lease.
pub(crate) trait StoreSource: Send + Sync {
    fn open(&self) -> Box<dyn Store>;
}

/// Why a record could not be opened or written. Which record failed matters to the face: an
/// unwritable default transcript gets a hint (`--no-transcript`, `ROUNDS_HOME`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordsError {
    /// The transcript file could not be created or written.
    #[error(transparent)]
    Transcript(#[from] WriteError),
    /// The store could not be reached (or its tables set up) before the run.
    #[error(transparent)]
    Connect(#[from] StoreError),
    /// The store refused a line.
    #[error("store: {0}")]
    Store(#[source] StoreError),
}

/// The transcript writer and the optional store, written together. Shared by the run and its
/// subagents, whose lines go between the run's own: one line at a time, each whole.
#[derive(Default)]
pub(crate) struct Records {
    inner: tokio::sync::Mutex<Inner>,
    path: Option<PathBuf>,
}

#[derive(Default)]
struct Inner {
    transcript: Option<Writer>,
    store: Option<Box<dyn Store>>,
}

impl Records {
    /// Creates the transcript and connects to the store, before any model call: an unwritable
    /// file or an unreachable database is the user's to fix (a usage error).
    pub(crate) async fn open(
        transcript: Option<&crate::files::Target>,
        store: Option<&str>,
        source: Option<&dyn StoreSource>,
    ) -> Result<Records, RecordsError> {
        let transcript = match transcript {
            Some(target) => Some(Writer::create_at(target)?),
            None => None,
        };
        let store: Option<Box<dyn Store>> = match (source, store) {
            (Some(source), _) => Some(source.open()),
            (None, Some(url)) => Some(Box::new(crate::store::connect(url).await?)),
            (None, None) => None,
        };
        Ok(Records {
            path: transcript.as_ref().map(|w| w.path().to_owned()),
            inner: tokio::sync::Mutex::new(Inner { transcript, store }),
        })
    }

    pub(crate) async fn write(&self, line: &Line) -> Result<(), RecordsError> {
        let mut inner = self.inner.lock().await;
        if let Some(w) = inner.transcript.as_mut() {
            w.write(line)?;
        }
        if let Some(store) = inner.store.as_mut() {
            store.write(line).await.map_err(RecordsError::Store)?;
        }
        Ok(())
    }

    pub(crate) fn transcript_path(&self) -> Option<PathBuf> {
        self.path.clone()
    }
}
