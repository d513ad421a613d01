//! How the program's end is said, once. Subcommands and `rounds batch` return a [`Failure`]
//! instead of printing and picking an exit code themselves; a run ends with its `Outcome`.
//! [`report`] turns either into what the user sees (the message on stderr, the run's JSON
//! object or end event on stdout in those output modes) and into the exit code, always
//! `Status::exit_code`.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use crate::batch::BatchError;
use crate::cli::OutputMode;
use crate::config::ConfigError;
use crate::outcome::{Outcome, Status};
use crate::settings::SettingsError;
use crate::store::StoreError;
use crate::transcript::ReadError;
use crate::{render, step_summary};

/// Why a command could not do what it was asked. Each kind has its status, hence its exit code
/// and its label on stderr (`usage error` for what the user can fix, `error` for the rest).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The command line as clap read it: bad flags, or `--help`/`--version`, which clap prints
    /// itself and which succeed.
    #[error("{0}")]
    Flags(#[from] clap::Error),
    /// A settings file or `-c`.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// A run's flags and environment (a run reports it as its outcome).
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(io::Error),
    /// `rounds tools`: a flag or a tool source is wrong.
    #[error(transparent)]
    Tools(#[from] crate::inventory::InventoryError),
    /// `rounds export`: the store (its own classification decides the status).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An `--out` or `--html` file, the user's to fix like an unwritable `--transcript`.
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot tell where runs are kept: set ROUNDS_HOME or HOME")]
    NoHome,
    #[error("no runs under {}", .0.display())]
    NoRuns(PathBuf),
    #[error("no run {id} under {} (nor a file of that name)", dir.display())]
    NoRun { id: String, dir: PathBuf },
    /// `rounds show`: the transcript cannot be read.
    #[error(transparent)]
    Transcript(#[from] ReadError),
    #[error("cannot render the man page: {0}")]
    Man(io::Error),
    /// `rounds runs --prune`: what could not be removed (the rest was, and was listed).
    // Each removal's error is a String until `runs::prune` has an error type of its own.
    #[error("{}", removals(.0))]
    NotRemoved(Vec<(PathBuf, String)>),
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// `rounds show me the failing test`: a prompt whose first word names a subcommand.
    #[error(
        "{command:?} is a subcommand (rounds {command} --help), and it cannot take these \
         words; a prompt that starts with it needs -- first: {retry}"
    )]
    PromptIsCommand { command: String, retry: String },
    /// `rounds --profile ci config`: flags before a subcommand's name make it a prompt's first
    /// word (clap's `args_conflicts_with_subcommands`); the prompt is not sent.
    #[error(
        "{command:?} after flags reads as the first word of a prompt, which is not sent: for \
         the subcommand, give its flags after it ({as_command}); for a prompt, put -- before \
         it ({as_prompt})"
    )]
    CommandAfterFlags {
        command: String,
        as_command: String,
        as_prompt: String,
    },
    /// `rounds -p …`, `--yolo`, `rounds exec …`, `--max-rounds 20` as one argument: what
    /// another tool's habit or a launcher meant, said in rounds' words.
    #[error(transparent)]
    Habit(#[from] super::usage::Habit),
    /// `rounds doctor`: the needed checks that failed (it listed them all).
    #[error("doctor: needed checks failed: {}", .0.join(", "))]
    Doctor(Vec<String>),
}

impl Failure {
    /// The status the command ends with. Exhaustive on purpose: a new kind must choose.
    pub(crate) fn status(&self) -> Status {
        match self {
            Failure::Flags(e) if !e.use_stderr() => Status::Completed,
            // The run's --timeout passed before it could start: a timeout like any other.
            Failure::Config(ConfigError::StdinDeadline { .. }) => Status::Timeout,
            Failure::Flags(_)
            | Failure::Settings(_)
            | Failure::Config(_)
            | Failure::Tools(_)
            | Failure::Write { .. }
            | Failure::NoHome
            | Failure::NoRuns(_)
            | Failure::NoRun { .. }
            | Failure::Transcript(_)
            | Failure::PromptIsCommand { .. }
            | Failure::CommandAfterFlags { .. }
            | Failure::Habit(_) => Status::Usage,
            Failure::Runtime(_) | Failure::Man(_) | Failure::NotRemoved(_) | Failure::Doctor(_) => {
                Status::Error
            }
            Failure::Store(e) => e.status(),
            Failure::Batch(e) => e.status(),
        }
    }

    /// A run that could not start, as its outcome: what `--output json` prints as the run's
    /// JSON object, and stream-json as its `end` event.
    pub(crate) fn into_outcome(self) -> Outcome {
        let message = match &self {
            // clap's text is for a terminal: "error: " and the usage after its first paragraph.
            Failure::Flags(e) => {
                let text = e.to_string();
                let first = text.split("\n\n").next().unwrap_or_default();
                first.trim().trim_start_matches("error: ").to_owned()
            }
            _ => self.to_string(),
        };
        Outcome::new(self.status(), Some(crate::redact::environment(message)))
    }
}

fn removals(errors: &[(PathBuf, String)]) -> String {
    let each: Vec<String> = errors.iter().map(|(p, e)| removal(p, e)).collect();
    each.join("; ")
}

fn removal(path: &std::path::Path, error: &str) -> String {
    format!("cannot remove {}: {error}", path.display())
}

/// How the program ended, for [`report`].
pub enum Ended {
    /// A subcommand or a batch that did what it could, ending with this status (a batch's jobs
    /// or a signal decide it). Whatever it had to say, it said.
    Done(Status),
    /// A command that could not do what it was asked.
    Failed(Failure),
    /// A command line that could not be read, under `-o json` or `stream-json`: said as a
    /// failure is, and on stdout as the JSON object (or `end` event) of a run that could not
    /// start.
    FailedAs(Failure, OutputMode),
    /// A run, one that could not start included.
    Run(Box<RunEnd>),
}

impl From<Result<Status, Failure>> for Ended {
    fn from(ended: Result<Status, Failure>) -> Ended {
        match ended {
            Ok(status) => Ended::Done(status),
            Err(failure) => Ended::Failed(failure),
        }
    }
}

/// A run's end and how to tell it.
pub struct RunEnd {
    pub outcome: Outcome,
    pub output: OutputMode,
    pub quiet: bool,
    /// `--step-summary` (or `GITHUB_STEP_SUMMARY`), opened before the run.
    pub step_summary: Option<File>,
}

/// Says how the program ended and returns its exit code: a failure's message on stderr; a
/// run's outcome on stdout in its output mode (the answer, or one JSON object), its error and
/// summary line on stderr, and its step summary.
pub(crate) fn report(ended: Ended) -> u8 {
    let status = match ended {
        Ended::Done(status) => status,
        Ended::Failed(failure) => {
            say(&failure);
            failure.status()
        }
        Ended::FailedAs(failure, output) => {
            say(&failure);
            let outcome = failure.into_outcome();
            render::print_outcome(output, &outcome);
            outcome.status
        }
        Ended::Run(run) => {
            let RunEnd {
                outcome,
                output,
                quiet,
                step_summary,
            } = *run;
            render::print_outcome(output, &outcome);
            render::print_summary(&outcome, quiet);
            if let Some(file) = step_summary {
                step_summary::append(file, &outcome);
            }
            outcome.status
        }
    };
    status.exit_code()
}

/// A failure's message on stderr (`rounds: usage error: …`, `rounds: error: …`). A batch says
/// this way what goes wrong while it goes on (a queue that failed, a job this worker cannot
/// run) too.
pub(crate) fn say(failure: &Failure) {
    match failure {
        // clap writes help and version to stdout, its errors to stderr, in its own words.
        Failure::Flags(e) => {
            let _ = e.print();
        }
        Failure::NotRemoved(errors) => {
            for (path, error) in errors {
                render::print_failure(
                    failure.status(),
                    &crate::redact::environment(removal(path, error)),
                );
            }
        }
        _ => render::print_failure(
            failure.status(),
            &crate::redact::environment(failure.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn clap_error(words: &[&str]) -> clap::Error {
        match crate::cli::Cli::command().try_get_matches_from(words) {
            Err(e) => e,
            Ok(_) => panic!("{words:?} parsed"),
        }
    }

    #[test]
    fn help_and_version_succeed_and_bad_flags_are_usage_errors() {
        for (words, status) in [
            (&["rounds", "--help"][..], Status::Completed),
            (&["rounds", "--version"], Status::Completed),
            (&["rounds", "--no-such-flag"], Status::Usage),
            (&["rounds", "--max-rounds", "many"], Status::Usage),
        ] {
            let failure = Failure::Flags(clap_error(words));
            assert_eq!(failure.status(), status, "{words:?}");
        }
    }

    #[test]
    fn each_failure_has_its_status_and_message() {
        let io = || io::Error::from(io::ErrorKind::PermissionDenied);
        let table = [
            (Failure::NoHome, Status::Usage),
            (Failure::Runtime(io()), Status::Error),
            (Failure::Man(io()), Status::Error),
            (
                Failure::Tools(crate::config::ConfigError::EmptyPrompt.into()),
                Status::Usage,
            ),
            (
                Failure::Store(StoreError::Url(crate::store::UrlError::Empty)),
                Status::Usage,
            ),
            (
                Failure::Store(StoreError::BatchTaken {
                    batch_id: "b".into(),
                    database: "d".into(),
                }),
                Status::Error,
            ),
            (
                Failure::Write {
                    path: "o.html".into(),
                    source: io(),
                },
                Status::Usage,
            ),
            (
                Failure::NotRemoved(vec![("a.jsonl".into(), "busy".into())]),
                Status::Error,
            ),
            (Failure::Batch(BatchError::NoJobsFile), Status::Usage),
        ];
        for (failure, status) in table {
            assert_eq!(failure.status(), status, "{failure}");
        }
        let missing = Failure::NoRun {
            id: "r1".into(),
            dir: "/h/runs".into(),
        };
        assert_eq!(
            missing.to_string(),
            "no run r1 under /h/runs (nor a file of that name)"
        );
    }

    #[test]
    fn a_run_that_cannot_start_ends_with_the_failure_as_its_outcome() {
        let outcome = Failure::Runtime(io::Error::other("no epoll")).into_outcome();
        assert_eq!(outcome.status, Status::Error);
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(json["exit_code"], 1);
        assert_eq!(json["error"], "cannot start the async runtime: no epoll");
        assert_eq!(
            report(Ended::Done(Status::Incomplete)),
            8,
            "a batch's incomplete"
        );
    }
}
