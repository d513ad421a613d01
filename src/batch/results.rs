//! `results.jsonl`: one line per job, written as each job finishes, so a batch that is killed
//! still has the results of every job that finished. A queued batch stores the same lines.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::jobs::Job;
use crate::conversation::Usage;
use crate::outcome::{FailureRecord, Outcome, Status};
use crate::transcript::Transcript;

/// The status of a job the batch never started (stopped by a signal or the batch's budget, or
/// given up after its workers died).
pub(crate) const NOT_STARTED: &str = "not_started";

/// One job's line in `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultLine {
    pub id: String,
    /// Its line in the jobs file.
    pub line: usize,
    /// A run status (`completed`, `max_rounds`, …), or `not_started`.
    pub status: String,
    /// The job's own exit code, as a single run would have exited; none if it never ran.
    pub exit_code: Option<u8>,
    /// Rounds, usage, cost and duration count every run of the job (a resumed job's earlier
    /// runs too).
    pub rounds: u32,
    pub usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
    pub final_text: String,
    /// With `--output-schema`: the final answer, parsed and valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_json: Option<Value>,
    pub error: Option<String>,
    /// What kind of failure ended the job's run, as its `end` line says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureRecord>,
    pub transcript: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

impl ResultLine {
    pub(crate) fn completed(&self) -> bool {
        self.status == Status::Completed.as_str()
    }

    /// A job's result from its finished run; `prior` is what earlier runs of it did.
    pub(crate) fn finished(
        job: &Job,
        outcome: &Outcome,
        run_id: Option<String>,
        prior: &Prior,
    ) -> Self {
        let mut usage = prior.usage;
        usage.add(&outcome.usage);
        let cost_usd = match (prior.cost_usd, outcome.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        ResultLine {
            id: job.id.clone(),
            line: job.line,
            status: outcome.status.as_str().to_owned(),
            exit_code: Some(outcome.exit_code()),
            rounds: prior.rounds + outcome.rounds,
            usage,
            cost_usd,
            duration_ms: prior.duration_ms + outcome.duration_ms,
            final_text: outcome.final_text.clone(),
            final_json: outcome.final_json.clone(),
            error: outcome.error.clone(),
            failure: outcome.failure,
            transcript: outcome.transcript.clone(),
            run_id,
        }
    }

    /// A job's result as its transcript chain (oldest first) recorded it.
    pub(crate) fn recorded(job: &Job, path: &Path, chain: &[Transcript]) -> Self {
        let prior = Prior::of(chain);
        let last = chain.last();
        let end = last.and_then(|t| t.end.as_ref());
        ResultLine {
            id: job.id.clone(),
            line: job.line,
            status: end.map_or(NOT_STARTED, |e| e.status.as_str()).to_owned(),
            exit_code: end.map(|e| e.exit_code),
            rounds: prior.rounds,
            usage: prior.usage,
            cost_usd: prior.cost_usd,
            duration_ms: prior.duration_ms,
            final_text: end.map(|e| e.final_text.clone()).unwrap_or_default(),
            final_json: None,
            error: end.and_then(|e| e.error.clone()),
            failure: end.and_then(|e| e.failure),
            transcript: Some(path.to_owned()),
            run_id: last.map(|t| t.start.run_id.clone()),
        }
    }

    /// A job that never ran, and why.
    pub(crate) fn not_started(job: &Job, why: &str) -> Self {
        ResultLine {
            id: job.id.clone(),
            line: job.line,
            status: NOT_STARTED.to_owned(),
            exit_code: None,
            rounds: 0,
            usage: Usage::default(),
            cost_usd: None,
            duration_ms: 0,
            final_text: String::new(),
            final_json: None,
            error: Some(why.to_owned()),
            failure: None,
            transcript: None,
            run_id: None,
        }
    }
}

/// What the earlier runs of a job did (the transcripts a resume continues).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Prior {
    pub(crate) rounds: u32,
    pub(crate) usage: Usage,
    pub(crate) cost_usd: Option<f64>,
    pub(crate) duration_ms: u64,
}

impl Prior {
    pub(crate) fn of(chain: &[Transcript]) -> Prior {
        let mut prior = Prior::default();
        for t in chain {
            for r in &t.rounds {
                prior.rounds += 1;
                prior.usage.add(&r.usage);
                if let Some(c) = r.cost_usd {
                    prior.cost_usd = Some(prior.cost_usd.unwrap_or(0.0) + c);
                }
            }
            prior.duration_ms += t.end.as_ref().map_or(0, |e| e.duration_ms);
        }
        prior
    }
}

/// `results.jsonl`, written a whole line at a time: a write that fails is cut back to the last
/// whole line (a reader never meets half of one) and the line kept, to be written with the next
/// one or at the end. Room for the lines still to come is reserved past the end of the file, so
/// that once a full disk stops the batch the jobs still running have their lines written.
pub(crate) struct ResultsFile {
    path: PathBuf,
    file: Mutex<Written>,
}

struct Written {
    file: std::fs::File,
    /// The bytes of whole lines in the file.
    len: u64,
    /// How much room to hold reserved past `len` (none: no reserving).
    reserve: u64,
    /// Lines not written yet: the job's id and the line.
    pending: Vec<(String, Vec<u8>)>,
}

/// Room reserved for each job's line (most are a few hundred bytes), and in all.
const RESERVE_PER_JOB: u64 = 1024;
const RESERVE_BASE: u64 = 64 * 1024;
const RESERVE_MAX: u64 = 16 * 1024 * 1024;

impl Written {
    /// Writes the pending lines in order, stopping at the first that fails.
    fn flush(&mut self) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        while let Some((_, bytes)) = self.pending.first() {
            if let Err(e) = self.file.write_all(bytes).and_then(|()| self.file.flush()) {
                let _ = self.file.set_len(self.len);
                let _ = self.file.seek(SeekFrom::Start(self.len));
                return Err(e);
            }
            self.len += bytes.len() as u64;
            self.pending.remove(0);
        }
        self.reserve();
        Ok(())
    }

    /// Keeps `reserve` bytes allocated past the end without growing the file. Best effort: a
    /// file system that cannot, or one already full, only lacks the reserve.
    fn reserve(&self) {
        if self.reserve > 0 {
            let keep = rustix::fs::FallocateFlags::KEEP_SIZE;
            let _ = rustix::fs::fallocate(&self.file, keep, self.len, self.reserve);
        }
    }
}

impl ResultsFile {
    /// Creates (or empties) the file with `first` in it: the results the batch already has.
    pub(crate) fn create(
        target: &crate::files::Target,
        first: &[ResultLine],
    ) -> std::io::Result<ResultsFile> {
        let file = target.create()?;
        let results = ResultsFile {
            path: target.path(),
            file: Mutex::new(Written {
                file,
                len: 0,
                reserve: 0,
                pending: Vec::new(),
            }),
        };
        for line in first {
            results.append(line)?;
        }
        Ok(results)
    }

    /// Reserves room for the lines of `jobs` more jobs (see [`ResultsFile`]).
    pub(crate) fn reserve_for(&self, jobs: usize) {
        if let Ok(mut w) = self.file.lock() {
            let room = RESERVE_BASE.saturating_add(RESERVE_PER_JOB.saturating_mul(jobs as u64));
            w.reserve = room.min(RESERVE_MAX);
            w.reserve();
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `line` (after any not written before). An error says the line is not in the file
    /// yet: it is kept, and tried again with the next line and by [`ResultsFile::close`].
    pub(crate) fn append(&self, line: &ResultLine) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        let mut w = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("results.jsonl: a writer panicked"))?;
        w.pending.push((line.id.clone(), bytes));
        w.flush()
    }

    /// Writes what is still pending and gives back the reserved room. Returns the ids of the
    /// lines that are still not in the file, and why.
    pub(crate) fn close(&self) -> Option<(Vec<String>, std::io::Error)> {
        let mut w = self.file.lock().ok()?;
        let flushed = w.flush();
        if w.reserve > 0 {
            let punch =
                rustix::fs::FallocateFlags::KEEP_SIZE | rustix::fs::FallocateFlags::PUNCH_HOLE;
            let _ = rustix::fs::fallocate(&w.file, punch, w.len, w.reserve);
        }
        let e = flushed.err()?;
        Some((w.pending.iter().map(|(id, _)| id.clone()).collect(), e))
    }
}

/// The lines of an earlier `results.jsonl` by id (the last line of an id wins); none when
/// there is no such file or it cannot be read.
pub(crate) fn previous(path: &Path) -> HashMap<String, ResultLine> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return HashMap::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<ResultLine>(l).ok())
        .map(|r| (r.id.clone(), r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str) -> ResultLine {
        let job = super::super::jobs::parse(&format!("{{\"id\":\"{id}\",\"prompt\":\"p\"}}"), None)
            .jobs
            .remove(0);
        ResultLine::not_started(&job, "why")
    }

    fn results_in(file: std::fs::File) -> ResultsFile {
        ResultsFile {
            path: PathBuf::from("results.jsonl"),
            file: Mutex::new(Written {
                file,
                len: 0,
                reserve: 0,
                pending: Vec::new(),
            }),
        }
    }

    #[test]
    fn a_line_that_cannot_be_written_is_kept_and_reported_at_the_end() {
        // The control: on a file that takes them, every line is written and nothing is left.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let ok = results_in(std::fs::File::create(&path).unwrap());
        ok.reserve_for(10);
        ok.append(&line("a")).unwrap();
        ok.append(&line("b")).unwrap();
        assert!(ok.close().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), text.len() as u64);

        let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            eprintln!("skipped: no /dev/full");
            return;
        };
        let full = results_in(full);
        assert!(full.append(&line("a")).is_err());
        assert!(full.append(&line("b")).is_err());
        let (ids, e) = full.close().unwrap();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    }
}
