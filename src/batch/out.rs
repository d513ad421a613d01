//! The batch's directory (`--out DIR`): `DIR/<id>.jsonl` is each job's transcript, and what is
//! already there decides what a job does when the batch runs again.
//!
//! - no transcript: the job runs;
//! - ended `completed`: skipped;
//! - no `end` line (the process was killed) or ended `interrupted` or `unavailable` (the
//!   provider stayed unavailable through the retries): resumed, with `--resume` semantics, from
//!   the rounds it finished;
//! - ended otherwise: skipped, or with `--retry-failed` run again from the start.
//!
//! A transcript is never both read and written: before a job resumes or starts over, its
//! transcript moves to `DIR/attempts/<id>.N.jsonl` (N = 1, 2, …), and the new run's transcript,
//! again `DIR/<id>.jsonl`, names it in `resumed_from` when it continues it. `--resume` of
//! `DIR/<id>.jsonl` therefore follows the whole chain.

use std::path::{Path, PathBuf};

use std::ffi::OsStr;

use super::jobs::{Job, file_stem};
use super::results::{Prior, ResultLine};
use crate::files::{Dir, Target};
use crate::outcome::Status;
use crate::transcript;

const RESULTS: &str = "results.jsonl";
const ATTEMPTS: &str = "attempts";

fn transcript_name(id: &str) -> String {
    format!("{}.jsonl", file_stem(id))
}

/// The batch's directory, absolute (transcripts name each other by absolute path), held open
/// from before the first job ran: every file of the batch is made through it (see `files`).
#[derive(Debug, Clone)]
pub(crate) struct OutDir {
    root: PathBuf,
    dir: Dir,
}

/// What a job does in this batch, decided from what its directory holds.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Nothing to continue: a new run (setting aside a transcript that is there, if any).
    Fresh { set_aside: bool },
    /// Continue the interrupted transcript, once it is set aside; `prior` is what the runs
    /// before this one did.
    Resume { prior: Prior },
    /// Done before: its result as recorded.
    Skip(Box<ResultLine>),
}

impl OutDir {
    /// Creates the directory (private to its owner) if need be; no component of `path` may be
    /// a symbolic link.
    pub(crate) fn create(path: &Path) -> std::io::Result<OutDir> {
        let dir = Dir::create_all(path)?;
        // Its files are named by the absolute path, the saved outputs of a job's cut results
        // too: the model reads that name from its workspace, which need not be this directory.
        let root = path.canonicalize()?;
        Ok(OutDir {
            dir: Dir::renamed(dir, root.clone()),
            root,
        })
    }

    /// A new directory of an unpredictable name in the temp dir (a worker without `--out`).
    pub(crate) fn temp(prefix: &str) -> std::io::Result<OutDir> {
        let dir = Dir::temp(prefix)?;
        Ok(OutDir {
            root: dir.path().to_owned(),
            dir,
        })
    }

    pub(crate) fn transcript(&self, id: &str) -> PathBuf {
        self.root.join(transcript_name(id))
    }

    /// The job's transcript, to create.
    pub(crate) fn transcript_target(&self, id: &str) -> std::io::Result<Target> {
        let target = self.dir.target(transcript_name(id))?;
        // Named by the absolute path, as the transcripts that continue it will name it.
        Ok(Target::renamed(target, self.root.join(transcript_name(id))))
    }

    pub(crate) fn results(&self) -> PathBuf {
        self.root.join(RESULTS)
    }

    pub(crate) fn results_target(&self) -> std::io::Result<Target> {
        Ok(Target::renamed(self.dir.target(RESULTS)?, self.results()))
    }

    /// Moves the job's transcript to `attempts/<id>.N.jsonl` with the first free N and returns
    /// where it went.
    pub(crate) fn set_aside(&self, id: &str) -> std::io::Result<PathBuf> {
        let attempts = self.dir.subdir(OsStr::new(ATTEMPTS))?;
        let stem = file_stem(id);
        let from = transcript_name(id);
        for n in 1..=10_000 {
            let to = format!("{stem}.{n}.jsonl");
            match self
                .dir
                .rename_new(OsStr::new(&from), &attempts, OsStr::new(&to))
            {
                Ok(()) => return Ok(self.root.join(ATTEMPTS).join(to)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("more than 10000 earlier attempts"))
    }

    /// Where an earlier run of the job, exported from the store, goes:
    /// `attempts/<id>.<run id>.jsonl`.
    pub(crate) fn attempt_target(&self, id: &str, run_id: &str) -> std::io::Result<Target> {
        let attempts = self.dir.subdir(OsStr::new(ATTEMPTS))?;
        let name = format!("{}.{run_id}.jsonl", file_stem(id));
        let target = attempts.target(name.as_str())?;
        Ok(Target::renamed(target, self.root.join(ATTEMPTS).join(name)))
    }

    /// Gives back a transcript `set_aside` moved (a job that did not start after all).
    pub(crate) fn put_back(&self, id: &str, aside: &Path) -> std::io::Result<()> {
        let attempts = self.dir.subdir(OsStr::new(ATTEMPTS))?;
        let name = aside.file_name().unwrap_or_default();
        attempts.rename_new(name, &self.dir, OsStr::new(&transcript_name(id)))
    }

    /// Removes the job's transcript (one its run left with nothing in it), and its outputs
    /// directory if nothing was saved in it.
    pub(crate) fn remove_transcript(&self, id: &str) -> std::io::Result<()> {
        let outputs = format!("{}.outputs", file_stem(id));
        self.dir.remove_empty(OsStr::new(&outputs));
        self.dir.remove_file(OsStr::new(&transcript_name(id)))
    }

    /// What `job` does, from its transcript (read only; nothing moves yet).
    pub(crate) fn plan(&self, job: &Job, retry_failed: bool) -> Plan {
        let path = self.transcript(job.id.as_str());
        if std::fs::symlink_metadata(&path).is_err() {
            return Plan::Fresh { set_aside: false };
        }
        let chain = match transcript::read_chain(&path) {
            Ok(chain) => chain,
            Err(e) => {
                tracing::warn!("job {:?}: {e}; starting it over", job.id);
                return Plan::Fresh { set_aside: true };
            }
        };
        let Some(last) = chain.last() else {
            return Plan::Fresh { set_aside: true };
        };
        match last.end.as_ref().map(|e| e.status) {
            Some(Status::Completed) => {
                Plan::Skip(Box::new(ResultLine::recorded(job, &path, &chain)))
            }
            // Stopped from outside, or by a provider that stayed unavailable: what retrying
            // later may fix is taken up again without --retry-failed.
            None | Some(Status::Interrupted(_) | Status::Unavailable) => {
                let prior = Prior::of(&chain);
                if prior.rounds == 0 {
                    // Nothing was done that a resume would keep; the prompt is in no round.
                    Plan::Fresh { set_aside: true }
                } else {
                    Plan::Resume { prior }
                }
            }
            Some(_) if retry_failed => Plan::Fresh { set_aside: true },
            Some(_) => Plan::Skip(Box::new(ResultLine::recorded(job, &path, &chain))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{End, Limits, Line, Round, Start, Writer};

    fn job(id: &str) -> Job {
        super::super::jobs::parse(&format!("{{\"id\":\"{id}\",\"prompt\":\"p\"}}"), None)
            .jobs
            .remove(0)
    }

    fn start(resumed_from: Option<String>) -> Line {
        Line::Start(Start {
            run_id: "r".into(),
            time: "t".into(),
            provider: "anthropic".into(),
            model: "m".into(),
            workspace: "/".into(),
            prompt: "p".into(),
            project_docs: Vec::new(),
            system: "s".into(),
            tools: vec![],
            limits: Limits {
                max_rounds: 5,
                max_tokens: None,
                budget_tokens: None,
                budget_usd: None,
                context_window: None,
                timeout_secs: None,
                tool_timeout_secs: 1.0,
                max_parallel: 1,
                max_calls_per_round: None,
                max_repeats: None,
                check: None,
                max_checks: None,
            },
            resumed_from,
            sandbox: None,
            redaction: Vec::new(),
            attachments: Vec::new(),
        })
    }

    fn round() -> Line {
        Line::Round(Round {
            round: 1,
            time: "t".into(),
            blocks: vec![crate::conversation::Block::text("hi")],
            results: vec![],
            stop_reason: None,
            usage: crate::conversation::Usage {
                input_tokens: 10,
                output_tokens: 2,
                ..Default::default()
            },
            cost_usd: None,
            check: None,
            model_ms: 0,
            tools_ms: 0,
            retries: vec![],
            error: None,
            summary: false,
            elided: vec![],
            guards: vec![],
        })
    }

    fn end(status: Status) -> Line {
        let mut outcome = crate::outcome::Outcome::new(status, None);
        outcome.rounds = 1;
        Line::End(End::from(&outcome))
    }

    fn write(path: &Path, lines: &[Line]) {
        let mut w = Writer::create(path).unwrap();
        for l in lines {
            w.write(l).unwrap();
        }
    }

    #[test]
    fn what_is_there_decides_what_a_job_does() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::create(&dir.path().join("out")).unwrap();
        let j = job("a/b");
        assert!(matches!(
            out.plan(&j, false),
            Plan::Fresh { set_aside: false }
        ));
        let path = out.transcript("a/b");
        assert!(path.ends_with("a%2Fb.jsonl"));

        write(&path, &[start(None), round(), end(Status::Completed)]);
        assert!(matches!(out.plan(&j, true), Plan::Skip(r) if r.status == "completed"));

        write(&path, &[start(None), round(), end(Status::MaxRounds)]);
        assert!(matches!(out.plan(&j, false), Plan::Skip(r) if r.exit_code == Some(3)));
        assert!(matches!(
            out.plan(&j, true),
            Plan::Fresh { set_aside: true }
        ));

        write(&path, &[start(None)]);
        assert!(matches!(
            out.plan(&j, false),
            Plan::Fresh { set_aside: true }
        ));

        write(&path, &[start(None), round()]);
        let Plan::Resume { prior } = out.plan(&j, false) else {
            panic!("not resumed")
        };
        assert_eq!((prior.rounds, prior.usage.input_tokens), (1, 10));
        let aside = out.set_aside("a/b").unwrap();
        assert!(aside.ends_with("attempts/a%2Fb.1.jsonl"), "{aside:?}");
        assert!(!path.exists());
        // The resumed run, killed again: its chain counts both.
        write(
            &path,
            &[
                start(Some(aside.display().to_string())),
                round(),
                end(Status::Interrupted(crate::outcome::Signal::Interrupt)),
            ],
        );
        let Plan::Resume { prior } = out.plan(&j, false) else {
            panic!("not resumed")
        };
        assert_eq!(prior.rounds, 2);
        assert!(
            out.set_aside("a/b")
                .unwrap()
                .ends_with("attempts/a%2Fb.2.jsonl")
        );
    }
}
