//! Where a run is recorded: the JSONL transcript and, with `--store`, a database. Every line goes
//! to each of them as it is written; a failure of either ends the run (exit 1), because a record
//! that silently stops is worse than a run that stops.

use std::path::PathBuf;

use async_trait::async_trait;

use crate::transcript::{Line, Writer};

/// A durable record of runs other than the transcript file.
#[async_trait]
pub trait Store: Send {
    /// Records one line (start, round or end) of the current run, before the next begins.
    async fn write(&mut self, line: &Line) -> Result<(), String>;
}

/// The transcript writer and the optional store, written together.
#[derive(Default)]
pub struct Records {
    pub transcript: Option<Writer>,
    pub store: Option<Box<dyn Store>>,
}

impl Records {
    /// Creates the transcript and connects to the store, before any model call: an unwritable
    /// file or an unreachable database is the user's to fix (a usage error).
    pub async fn open(
        transcript: Option<&crate::files::Target>,
        store: Option<&str>,
    ) -> Result<Records, String> {
        Ok(Records {
            transcript: match transcript {
                Some(target) => Some(Writer::create_at(target).map_err(|e| e.to_string())?),
                None => None,
            },
            store: match store {
                Some(url) => Some(Box::new(
                    crate::store::connect(url)
                        .await
                        .map_err(|e| e.to_string())?,
                )),
                None => None,
            },
        })
    }

    pub async fn write(&mut self, line: &Line) -> Result<(), String> {
        if let Some(w) = self.transcript.as_mut() {
            w.write(line).map_err(|e| e.to_string())?;
        }
        if let Some(store) = self.store.as_mut() {
            store.write(line).await.map_err(|e| format!("store: {e}"))?;
        }
        Ok(())
    }

    pub fn transcript_path(&self) -> Option<PathBuf> {
        self.transcript.as_ref().map(|w| w.path().to_owned())
    }
}
