//! `rounds batch`'s command line: its own flags, plus every flag of a single run (taken from
//! `cli::Cli` as it is, so a flag added there applies to batches too) as the default of every
//! job. Parsed here rather than by the top-level parser, which only hands the words over.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Args, CommandFactory, FromArgMatches, Subcommand};

use super::BatchError;
use crate::cli::Cli;

// The flags of `rounds batch` itself (no doc comment: it would become the command's about).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Batch")]
pub(crate) struct BatchFlags {
    /// The jobs: a JSONL file (or - for stdin), one job per line: {"id": …, "prompt": …} plus
    /// any of model, workspace, allow, deny, system, output_schema, max_rounds, max_tokens,
    /// timeout, budget_tokens, budget_usd, temperature, reasoning_effort, check, max_checks,
    /// attach for that job.
    #[arg(value_name = "JOBS", index = 1)]
    pub(crate) jobs_file: Option<PathBuf>,

    /// Make each job's prompt from FILE, its {{field}} placeholders filled from the job's line
    /// (which then may hold any fields).
    #[arg(long, value_name = "FILE")]
    pub(crate) template: Option<PathBuf>,

    /// How many jobs run at once.
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) parallel: u16,

    /// The batch's directory: DIR/<id>.jsonl per job, DIR/results.jsonl (one line per job, as
    /// jobs finish). Running the same batch again skips the jobs that completed and resumes the
    /// interrupted ones.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,

    /// Also run again the jobs that ended without completing (from the start).
    #[arg(long)]
    pub(crate) retry_failed: bool,

    /// Run only the jobs whose id hashes to shard I of N (0-based), e.g. --shard 0/4: shards
    /// split a batch between machines with no coordination.
    #[arg(long, value_name = "I/N", value_parser = super::jobs::Shard::parse)]
    pub(crate) shard: Option<super::jobs::Shard>,

    /// Requests per minute to each provider, shared by all the jobs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) rpm: Option<u32>,

    /// Tokens (input + output) per minute to each provider, shared by all the jobs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) tpm: Option<u64>,

    /// Each job's token budget (--budget-tokens is the whole batch's).
    #[arg(long, value_name = "N")]
    pub(crate) job_budget_tokens: Option<u64>,

    /// Each job's budget in USD (--budget-usd is the whole batch's).
    #[arg(long, value_name = "USD")]
    pub(crate) job_budget_usd: Option<f64>,

    /// Write a JUnit XML report to FILE: a testcase per job, a failure for each job that did
    /// not complete.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,

    /// Append a Markdown summary to FILE (GitHub Actions' job summary by default).
    #[arg(long, value_name = "FILE", env = "GITHUB_STEP_SUMMARY")]
    pub(crate) step_summary: Option<PathBuf>,

    /// Put the jobs in the store (--store) as a queue and print the batch id; workers run them.
    #[arg(long, requires = "store", conflicts_with_all = ["worker", "shard"])]
    pub(crate) enqueue: bool,

    /// Run jobs of the queued batch --batch ID from the store until none is left.
    #[arg(long, requires_all = ["store", "batch"])]
    pub(crate) worker: bool,

    /// Apply every run flag the batch was queued with, and every job's own values. Without it
    /// a worker takes from the queue only what a project file could set (the model, tighter
    /// limits, longer deny lists…): anyone who can write the store could otherwise point the
    /// worker's key at their endpoint, or run hooks on it.
    #[arg(long, requires = "worker")]
    pub(crate) trust_queue: bool,

    /// The queued batch's id (with --worker; with --enqueue, the id to give it).
    #[arg(long = "batch", value_name = "ID")]
    pub(crate) batch: Option<String>,

    /// A worker's hold on a job: renewed while it runs; when its worker dies, the job returns
    /// to the queue this long after the last renewal.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = lease_secs)]
    pub(crate) lease: f64,

    /// How long a worker waits for a store that is down, restarting or out of connections,
    /// before it gives up (exit 10) and leaves its jobs to the queue; its jobs' model and tool
    /// work goes on meanwhile.
    #[arg(long, value_name = "SECS", default_value_t = 300.0, value_parser = lease_secs)]
    pub(crate) store_timeout: f64,

    /// How many workers may take a job whose worker died before it is given up.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_attempts: u32,

    #[command(subcommand)]
    pub(crate) command: Option<BatchCommand>,
}

#[derive(Debug, Clone, Subcommand)]
pub(crate) enum BatchCommand {
    /// Counts of a queued batch's jobs by state, and the jobs running longest.
    Status(StatusArgs),
    /// Write a queued batch's results.jsonl (and --junit) as a local batch does.
    Results(ResultsArgs),
}

#[derive(Debug, Clone, Args)]
pub(crate) struct StatusArgs {
    /// The PostgreSQL database the batch was queued in.
    #[arg(long, value_name = "URL", env = "ROUNDS_STORE", hide_env_values = true)]
    pub(crate) store: String,
    pub(crate) batch: String,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ResultsArgs {
    #[arg(long, value_name = "URL", env = "ROUNDS_STORE", hide_env_values = true)]
    pub(crate) store: String,
    pub(crate) batch: String,
    /// Where results.jsonl goes.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Also write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
}

/// The ids of the run flags about one run's own prompt and records (`cli::ONE_RUN`), which a
/// batch hides and refuses. The ids of the one-run flags (the group fills as clap builds the command).
fn one_run_ids() -> Vec<String> {
    let mut command = Cli::command();
    command.build();
    command
        .get_groups()
        .find(|g| g.get_id() == crate::cli::ONE_RUN)
        .map(|g| g.get_args().map(|a| a.to_string()).collect())
        .unwrap_or_default()
}

/// Why a batch has no use for the one-run flag `id`.
fn why_not_per_job(id: &str) -> &'static str {
    match id {
        "prompt" | "prompt_file" => "a job's prompt comes from its line (or --template)",
        "resume" => "a batch resumes its interrupted jobs by itself",
        "transcript" => "each job's transcript is DIR/<id>.jsonl (--out DIR)",
        "no_transcript" => "a batch keeps every job's transcript",
        "output" => "a batch writes results.jsonl, not a run's output",
        "output_last_message" => "results.jsonl holds every job's final answer",
        _ => "it is about one run, and a batch's jobs each have their own",
    }
}

/// A parsed `rounds batch` command line.
pub(crate) struct Parsed {
    pub(crate) flags: BatchFlags,
    /// The matches, from which each job's `Cli` is made afresh.
    pub(crate) matches: ArgMatches,
}

impl Parsed {
    /// The run flags as a single run would have them.
    pub(crate) fn cli(&self) -> Result<Cli, clap::Error> {
        let mut cli = Cli::from_arg_matches(&self.matches)?;
        // `--step-summary` (and GITHUB_STEP_SUMMARY) is the batch's own report: a job that
        // appended its run's summary too would bury it under one section per job.
        cli.step_summary = None;
        Ok(cli)
    }

    /// The run flags given on the command line, as words that parse back to them: what a
    /// queued batch keeps for its workers (their environment is their own).
    pub(crate) fn run_words(&self) -> Result<Vec<String>, BatchError> {
        let mut words = Vec::new();
        let cli = Cli::command();
        let one_run = one_run_ids();
        for arg in cli.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "store" || one_run.iter().any(|o| o == id) {
                continue;
            }
            if self.matches.value_source(id) != Some(ValueSource::CommandLine) {
                continue;
            }
            let Some(long) = arg.get_long() else { continue };
            match arg.get_action() {
                ArgAction::SetTrue | ArgAction::SetFalse => words.push(format!("--{long}")),
                ArgAction::Count => {
                    let n = self.matches.get_count(id);
                    words.extend((0..n).map(|_| format!("--{long}")));
                }
                _ => {
                    let Some(raw) = self.matches.get_raw_occurrences(id) else {
                        continue;
                    };
                    for occurrence in raw {
                        for value in occurrence {
                            let value = value.to_str().ok_or_else(|| BatchError::NotUtf8 {
                                flag: long.to_owned(),
                            })?;
                            words.push(format!("--{long}={value}"));
                        }
                    }
                }
            }
        }
        Ok(words)
    }
}

/// The run flags a batch was queued with (`queued`, words of [`Parsed::run_words`]), decided
/// by `trust` as a queue row (trusted with `trusted`) beneath the worker's own (`worker`): the
/// words to put before the worker's, and what was refused.
pub(crate) fn queued(
    queued: &[String],
    worker: &ArgMatches,
    trusted: bool,
) -> Result<(Vec<OsString>, Vec<crate::trust::Refusal>), clap::Error> {
    use crate::settings::{Read, Setting};
    use crate::trust::Source;
    let argv = std::iter::once("rounds batch".to_owned()).chain(queued.iter().cloned());
    let matches = command().try_get_matches_from(argv)?;
    let run = Cli::command();
    let one_run = one_run_ids();
    let mut settings = Vec::new();
    for arg in run.get_arguments() {
        let id = arg.get_id().as_str();
        let Some(long) = arg.get_long() else { continue };
        if id == "store"
            || one_run.iter().any(|o| o == id)
            || matches.value_source(id) != Some(ValueSource::CommandLine)
        {
            continue;
        }
        let values = match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count => Vec::new(),
            _ => matches
                .get_raw(id)
                .into_iter()
                .flatten()
                .map(|v| v.to_string_lossy().into_owned())
                .collect(),
        };
        settings.push(Setting {
            key: long.to_owned(),
            values,
            origin: Source::QueueRow { trusted },
        });
    }
    let read = match trusted {
        true => Read {
            trusted: settings,
            ..Read::default()
        },
        false => Read {
            untrusted: settings,
            ..Read::default()
        },
    };
    let (words, layers) = crate::settings::settle(&command(), worker, read);
    Ok((words, layers.refused))
}

/// The run flags of `words` a worker applies only with `--trust-queue`.
pub(crate) fn untrusted_in_queue(words: &[String]) -> Vec<String> {
    let mut keys: Vec<String> = words
        .iter()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| w.split('=').next().unwrap_or(w).to_owned())
        .filter(|k| crate::trust::rule(k) == crate::trust::Rule::UserOnly)
        .map(|k| format!("--{k}"))
        .collect();
    keys.dedup();
    keys
}

/// `rounds batch` with only its own flags (the man page lists the run flags once, above).
pub(crate) fn own_command() -> clap::Command {
    let cmd = clap::Command::new("rounds batch").after_help(AFTER_HELP);
    // --store is a run flag, but the queue's flags require it.
    let store = Cli::command()
        .get_arguments()
        .find(|a| a.get_id() == "store")
        .cloned();
    let cmd = BatchFlags::augment_args(cmd).about(ABOUT);
    match store {
        Some(store) => cmd.arg(store),
        None => cmd,
    }
}

/// `rounds batch` with every run flag. A flag given twice takes the last value, so a worker's
/// flags can follow (and override) the ones its batch was queued with.
pub(crate) fn command() -> clap::Command {
    let cmd = clap::Command::new("rounds batch")
        .after_help(AFTER_HELP)
        .max_term_width(100)
        .args_override_self(true)
        .args_conflicts_with_subcommands(true)
        .group(clap::ArgGroup::new(crate::cli::ONE_RUN).multiple(true));
    // The batch's own flags first: --help shows them before the run flags.
    let mut cmd = BatchFlags::augment_args(cmd).about(ABOUT);
    let one_run = one_run_ids();
    for arg in Cli::command().get_arguments() {
        let id = arg.get_id().as_str();
        if id == "step_summary" {
            continue; // the batch's own flag of that name, a report of the whole batch
        }
        let mut arg = arg.clone();
        if id == "prompt" {
            arg = arg.index(2);
        }
        if one_run.iter().any(|o| o == id) {
            arg = arg.hide(true);
        }
        if arg.get_help_heading().is_none() {
            arg = arg.help_heading("Run flags (every job's defaults)");
        }
        let help = match id {
            "budget_tokens" => Some(
                "Stop the batch once its jobs have used N tokens (input + output): no job \
                 starts, and running jobs stop before their next request (exit 4 for them). \
                 --job-budget-tokens is each job's",
            ),
            "budget_usd" => Some(
                "Stop the batch once its jobs have cost USD, as --budget-tokens; \
                 --job-budget-usd is each job's",
            ),
            "store" => Some(
                "Keep every job's run in PostgreSQL (postgres://…); with --enqueue and \
                 --worker, the batch's queue too",
            ),
            _ => None,
        };
        if let Some(help) = help {
            arg = arg.help(help).long_help(help);
        }
        cmd = cmd.arg(arg);
    }
    crate::env::unset_empty(cmd)
}

/// Parses `rounds batch`'s words (without "rounds batch"). `Err` is clap's, to print as clap
/// does (help and version included).
pub(crate) fn parse<I: IntoIterator<Item = OsString>>(words: I) -> Result<Parsed, clap::Error> {
    let argv = std::iter::once(OsString::from("rounds batch")).chain(words);
    let matches = command().try_get_matches_from(argv)?;
    let mut flags = BatchFlags::from_arg_matches(&matches)?;
    // The run flag --no-step-summary wins over the batch's --step-summary and its variable.
    if matches.get_flag("no_step_summary") {
        flags.step_summary = None;
    }
    Ok(Parsed { flags, matches })
}

/// A run flag given that a batch cannot honour, with why.
pub(crate) fn refused(matches: &ArgMatches) -> Option<BatchError> {
    one_run_ids().into_iter().find_map(|id| {
        let id = id.as_str();
        (matches.value_source(id) == Some(ValueSource::CommandLine)).then(|| {
            let flag = if id == "prompt" {
                "a prompt".to_owned()
            } else {
                format!("--{}", id.replace('_', "-"))
            };
            BatchError::NotPerJob {
                flag,
                why: why_not_per_job(id),
            }
        })
    })
}

/// `--lease` out of its range.
#[derive(Debug, thiserror::Error)]
#[error("expected 1 to 86400 seconds, got {0:?}")]
pub(crate) struct LeaseError(String);

fn lease_secs(s: &str) -> Result<f64, LeaseError> {
    match s.parse::<f64>() {
        Ok(v) if (1.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(LeaseError(s.to_owned())),
    }
}

const ABOUT: &str = "\
Run many jobs, each an ordinary run with its own transcript, in one process: one runtime, one \
connection pool and one rate limiter per provider. Every run flag applies to every job.";

const AFTER_HELP: &str = "\
Exit status: 0 every job completed, 8 some did not (each job's own code is in results.jsonl),
2 usage (also when no line of JOBS is a valid job), 10 a worker's store stayed unavailable past
--store-timeout (its jobs are left to the queue), 130/143 interrupted.

Examples:
  rounds batch jobs.jsonl --out runs/ --jobs 16 -m openai/gpt-4.1
  git diff --name-only | jq -Rc '{id: ., file: .}' | rounds batch - --template review.md --out r/
  rounds batch jobs.jsonl --out r/ --shard $JOB_COMPLETION_INDEX/8 --junit junit.xml
  rounds batch jobs.jsonl --store $URL --enqueue       # prints the batch id
  rounds batch --store $URL --batch ID --worker --jobs 8 --out r/
  rounds batch status --store $URL ID";

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<OsString> {
        s.iter().map(OsString::from).collect()
    }

    #[test]
    fn run_flags_and_batch_flags_parse_together() {
        let parsed = parse(words(&[
            "jobs.jsonl",
            "-j",
            "8",
            "-m",
            "openai/gpt-4.1",
            "-a",
            "bash",
            "--out",
            "d",
            "--max-rounds",
            "5",
            "--shard",
            "1/4",
            "--budget-tokens",
            "1000",
        ]))
        .unwrap();
        assert_eq!(parsed.flags.parallel, 8);
        assert_eq!(parsed.flags.jobs_file, Some(PathBuf::from("jobs.jsonl")));
        assert_eq!(parsed.flags.shard.map(|s| (s.index, s.count)), Some((1, 4)));
        let cli = parsed.cli().unwrap();
        assert_eq!(cli.model.as_deref(), Some("openai/gpt-4.1"));
        assert_eq!(cli.tools.allow, ["bash"]);
        assert_eq!((cli.max_rounds, cli.budget_tokens), (5, Some(1000)));
        assert!(refused(&parsed.matches).is_none());
        let words = parsed.run_words().unwrap();
        assert_eq!(
            words,
            [
                "--model=openai/gpt-4.1",
                "--max-rounds=5",
                "--budget-tokens=1000",
                "--allow=bash"
            ]
        );
    }

    #[test]
    fn per_run_flags_are_refused_and_subcommands_found() {
        for bad in [
            &["j", "--transcript", "t"][..],
            &["j", "-o", "json"],
            &["j", "extra"],
        ] {
            let parsed = parse(words(bad)).unwrap();
            assert!(refused(&parsed.matches).is_some(), "{bad:?}");
        }
        let parsed = parse(words(&["status", "--store", "postgres://h/d", "b1"])).unwrap();
        assert!(
            matches!(parsed.flags.command, Some(BatchCommand::Status(ref s)) if s.batch == "b1")
        );
        assert!(parse(words(&["j", "--enqueue"])).is_err());
        assert!(parse(words(&["--worker", "--store", "x"])).is_err());
    }

    #[test]
    fn later_flags_override_earlier_ones() {
        let parsed = parse(words(&["--max-rounds=3", "j", "--max-rounds", "7"])).unwrap();
        assert_eq!(parsed.cli().unwrap().max_rounds, 7);
    }

    #[test]
    fn help_is_well_formed() {
        command().debug_assert();
    }
}
