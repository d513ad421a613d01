//! A queued job's earlier runs, brought back from the store as the chain of transcripts its
//! next run resumes: a worker that died mid-job loses no finished round.

use std::path::{Path, PathBuf};

use super::jobs::Job;
use super::out::OutDir;
use super::results::{Prior, ResultLine};
use crate::outcome::Status;
use crate::store::StoreError;
use crate::store::pool::StorePool;
use crate::transcript::{Line, Record, Transcript};

/// The job's earlier runs, exported from the store into `attempts/` as a chain of
/// transcripts: what the job does now.
pub(super) async fn restore(
    pool: &StorePool,
    out: &OutDir,
    job: &Job,
    runs: &[String],
) -> Result<Restored, RestoreError> {
    let mut chain: Vec<Transcript> = Vec::new();
    let mut kept = Vec::new();
    let mut previous: Option<PathBuf> = None;
    for run_id in runs {
        let jsonl = match crate::store::export_pooled(pool, run_id).await {
            Ok(j) => j,
            // The worker died before the run's start line was stored: nothing to keep.
            Err(crate::store::StoreError::UnknownRun { .. }) => continue,
            Err(e) => return Err(RestoreError::Export(e)),
        };
        // The run id comes from the queue: it names a file only as one component.
        let target =
            out.attempt_target(&job.id, run_id)
                .map_err(|source| RestoreError::Attempt {
                    job: job.id.clone(),
                    run: run_id.clone(),
                    source,
                })?;
        let path = target.path();
        let transcript = relink(&jsonl, previous.as_deref(), &target)?;
        chain.push(transcript);
        kept.push(run_id.clone());
        previous = Some(path);
    }
    let Some(path) = previous else {
        return Ok(Restored::Fresh);
    };
    let last = chain.last().and_then(|t| t.end.as_ref()).map(|e| e.status);
    Ok(match last {
        // It ended, but its worker died before saying so: its result stands.
        Some(status) if !matches!(status, Status::Interrupted(_)) => {
            Restored::Finished(Box::new(ResultLine::recorded(job, &path, &chain)))
        }
        _ => {
            let prior = Prior::of(&chain);
            if prior.rounds == 0 {
                Restored::Fresh
            } else {
                Restored::Resume {
                    path,
                    prior,
                    runs: kept,
                }
            }
        }
    })
}

/// Why a job's earlier runs could not be brought back from the store.
#[derive(Debug, thiserror::Error)]
pub(super) enum RestoreError {
    #[error("cannot read the job's earlier run: {0}")]
    Export(StoreError),
    /// The run id (from the queue) cannot name a file in `attempts/`.
    #[error("job {job:?}: run {run:?}: {source}")]
    Attempt {
        job: String,
        run: String,
        source: std::io::Error,
    },
    #[error("an exported run: {0}")]
    Exported(serde_json::Error),
    #[error("{0}")]
    Encode(serde_json::Error),
    #[error("{0}")]
    Write(std::io::Error),
    #[error(transparent)]
    Read(#[from] crate::transcript::ReadError),
}

/// What a claimed job's earlier runs leave it to do.
pub(super) enum Restored {
    Fresh,
    Resume {
        path: PathBuf,
        prior: Prior,
        runs: Vec<String>,
    },
    Finished(Box<ResultLine>),
}

/// Writes an exported run to `path` with `resumed_from` pointing at the local copy of the run
/// before it (the exported one names a file on the machine that ran it), and reads it back.
fn relink(
    jsonl: &str,
    previous: Option<&Path>,
    target: &crate::files::Target,
) -> Result<Transcript, RestoreError> {
    let path = target.path();
    let mut lines = jsonl.lines();
    let first = lines.next().unwrap_or_default();
    let mut record: Record = serde_json::from_str(first).map_err(RestoreError::Exported)?;
    if let Line::Start(start) = &mut record.line {
        start.resumed_from = previous.map(|p| p.display().to_string());
    }
    let mut text = serde_json::to_string(&record).map_err(RestoreError::Encode)?;
    text.push('\n');
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    target.write(text.as_bytes()).map_err(RestoreError::Write)?;
    Ok(crate::transcript::read(&path)?)
}
