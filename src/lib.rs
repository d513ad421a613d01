//! `rounds`: a headless runner for multi-round LLM tool-calling loops.
//!
//! The `rounds` command is a thin shell over [`main`]: parse flags, resolve them into a run's
//! configuration, drive the loop against a provider with tools, record a transcript, and report
//! the run's [`Outcome`], whose [`Status`] is the exit code.
//!
//! A Rust program runs the same loop in-process with [`Run`]: see the `embed` example, and
//! [`Run::start`]'s events and outcome.
// In --output json and stream-json modes stdout must hold only JSON lines: nothing but the
// render module may print to it.
#![deny(clippy::print_stdout)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod agent;
mod app;
// The integration tests read a batch's job lines, reports and results, and run ids, as the
// batch writes them (tests/suite/batch_*.rs): reachable, not part of the API.
#[doc(hidden)]
pub mod batch;
mod cli;
mod commands;
mod config;
mod embed;
mod inventory;
mod otel;
mod progress;
mod records;
mod render;
#[doc(hidden)]
pub mod runs;
mod settings;
mod show;
mod step_summary;
mod trust;

use cli::Cli;
use commands::{Ended, Failure, RunEnd};
use config::{Config, Inputs};
pub use embed::{
    Error, Event, Events, Outcome, Run, SUPERVISE_ARG, Started, Status, supervise_if_asked,
};
use rounds_base::{
    attachment, conversation, env, files, markdown, net, outcome, pricing, providers, redact,
    suggest, terminal, transcript,
};
use rounds_process as process;
use rounds_providers as provider;
use rounds_store as store;
use rounds_telemetry as telemetry;
use rounds_tools as tools;

/// The program: parses `args` (settings files beneath them), runs, and says how it ended
/// (`commands::report`); returns the exit code.
pub fn main(mut args: Vec<std::ffi::OsString>) -> u8 {
    // `rounds batch` parses its own flags (every run flag and its own), so the top-level
    // parser's `help batch` would show only its stub: ask batch itself.
    if args.get(1).is_some_and(|a| a == "help") && args.get(2).is_some_and(|a| a == "batch") {
        args.splice(1..3, ["batch".into(), "--help".into()]);
    }
    let env = |name: &str| env::var(name);
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let ended = match commands::read(settings::parse(args.clone(), &env, &cwd), &args) {
        Ok((cli, layers)) => run(cli, layers),
        Err(ended) => ended,
    };
    commands::report(ended)
}

/// Runs the program for parsed flags (and the settings layered beneath them): a subcommand, a
/// batch or a run. Prints what the command makes; how it ended is for `commands::report`.
pub fn run(cli: Cli, layers: settings::Layers) -> Ended {
    // The run's duration, as the user sees it, includes waiting for stdin.
    let started = std::time::Instant::now();
    render::set_color(cli.color);
    // Before anything reads a key: tool processes must not be able to read our memory.
    process::protect_self();
    // Before any tool process starts: a tree whose supervisor a tool killed comes back to us
    // (not to init), to be ended when its call ends.
    if let Err(e) = process::become_subreaper() {
        tracing::debug!("cannot become a subreaper: {e}");
    }
    let done = match cli.command {
        Some(cli::Command::Tools(args)) => {
            init_logging(0, false);
            commands::tools(args)
        }
        Some(cli::Command::Export(args)) => {
            init_logging(cli.verbose, cli.quiet);
            commands::export(&args)
        }
        Some(cli::Command::Config) => commands::config(&layers),
        Some(cli::Command::Batch(args)) => return commands::batch(args.args).into(),
        Some(cli::Command::Runs(args)) => commands::runs(&args),
        Some(cli::Command::Show(args)) => commands::show(&args),
        Some(cli::Command::Models(args)) => commands::models(&args, &layers),
        Some(cli::Command::Doctor(args)) => {
            init_logging(cli.verbose, cli.quiet);
            commands::doctor(&args, cli.profile.as_deref(), &cli.config)
        }
        Some(cli::Command::Completions(args)) => commands::completions(&args),
        Some(cli::Command::Man) => commands::man(),
        None => return Ended::Run(Box::new(run_one(cli, layers, started))),
    };
    done.map(|()| Status::Completed).into()
}

/// A run: its flags resolved into a `Config` and run to its end. A run that cannot start ends
/// with its failure as its outcome (what `--output json` prints).
fn run_one(cli: Cli, layers: settings::Layers, started: std::time::Instant) -> RunEnd {
    let (quiet, output) = (cli.quiet, cli.output);
    init_logging(cli.verbose, quiet);
    for refused in &layers.refused {
        tracing::warn!("{}", terminal::line(&refused.to_string()));
    }
    let step_summary = cli
        .step_summary
        .clone()
        .filter(|p| !cli.no_step_summary && !p.as_os_str().is_empty())
        .and_then(|p| step_summary::open(&p));
    let env = |name: &str| env::var(name);
    let model_origin = layers.origin("model");
    // `--timeout` bounds the whole run, from rounds' start: the wait for stdin is part of it.
    let deadline = (cli.timeout.map(std::time::Duration::from_secs_f64)).map(|t| (started + t, t));
    let mut read_stdin = || config::read_real_stdin(quiet, deadline);
    let inputs = Inputs {
        env: &env,
        env_all: std::env::vars_os().collect(),
        stdin_kind: config::stdin_kind(),
        read_stdin: &mut read_stdin,
        cwd: std::env::current_dir().unwrap_or_else(|_| ".".into()),
        aliases: layers.aliases,
        agents: layers.agents,
        transcript: None,
    };
    let asked = otel::config(&cli, &env).map_err(|e| Failure::Config(e.into()));
    let ran = asked.and_then(|asked| {
        let config = Config::resolve(cli, inputs)
            .map_err(|e| Failure::Config(e.with_model_origin(model_origin)))?;
        let rt = runtime().map_err(Failure::Runtime)?;
        let cancel = agent::Cancel::default();
        let observer = render::observer(output, quiet, config.limits.max_rounds, &cancel);
        Ok(rt.block_on(traced_run(config, asked, observer, cancel, started)))
    });
    let mut outcome = ran.unwrap_or_else(Failure::into_outcome);
    if outcome.status == Status::Timeout && outcome.duration_ms == 0 {
        // The deadline passed before the run could start (stdin still open): it took that long.
        outcome.duration_ms = started.elapsed().as_millis() as u64;
    }
    RunEnd {
        outcome,
        output,
        quiet,
        step_summary,
    }
}

/// A run, with its OpenTelemetry trace when `asked` is one: started before the run
/// (its context goes to the tools), flushed after it, within `FLUSH_BOUND`.
async fn traced_run(
    mut config: Config,
    asked: Option<telemetry::Config>,
    observer: std::sync::Arc<dyn agent::Observer>,
    cancel: agent::Cancel,
    started: std::time::Instant,
) -> Outcome {
    let env = |name: &str| env::var(name);
    let Some((telemetry, run)) =
        (asked.as_ref()).and_then(|asked| otel::start(asked, &env, &config.run_id))
    else {
        return app::run(config, observer, cancel, started).await;
    };
    otel::hand_to_tools(&mut config.tool_settings, &run);
    let observer = std::sync::Arc::new(agent::Fanout(vec![
        observer,
        std::sync::Arc::new(otel::Traced(run)),
    ]));
    let ran = app::run(config, observer, cancel, started).await;
    telemetry.flush(telemetry::FLUSH_BOUND).await;
    ran
}

/// One thread drives the run: the work is waiting on the network and on tool processes, and
/// blocking file work goes to the blocking pool. Fewer threads mean fewer stacks and malloc
/// arenas, which keeps peak memory within the target in docs/benchmarks.md.
pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// The crates of the AWS credential chain and signer (`provider::bedrock`).
const AWS_LOG_TARGETS: &[&str] = &[
    "aws_config",
    "aws_credential_types",
    "aws_runtime",
    "aws_sdk_sts",
    "aws_sigv4",
    "aws_smithy_http",
    "aws_smithy_runtime",
    "aws_smithy_runtime_api",
    "aws_smithy_types",
];

/// What is logged: `ROUNDS_LOG`'s directives, else rounds' own at `level`. AWS's crates trace
/// whole requests and responses (a canonical request with its session token, STS's answer with
/// its secret key): whatever was asked for them, they say no more than INFO, and nothing when
/// nothing was asked.
fn log_filter(
    rounds_log: Option<&str>,
    level: tracing_subscriber::filter::LevelFilter,
) -> tracing_subscriber::filter::Targets {
    use tracing::Level;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    let mut filter = rounds_log
        .and_then(|s| s.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_target("rounds", level));
    for target in AWS_LOG_TARGETS {
        let asked = [
            Level::TRACE,
            Level::DEBUG,
            Level::INFO,
            Level::WARN,
            Level::ERROR,
        ]
        .into_iter()
        .find(|l| filter.would_enable(target, l))
        .map_or(LevelFilter::OFF, LevelFilter::from_level);
        filter = filter.with_target(*target, asked.min(LevelFilter::INFO));
    }
    filter
}

/// Logs go to stderr, and only when asked for (-v) or for warnings; never to stdout.
/// `ROUNDS_LOG` takes `tracing` target directives (`rounds=debug,reqwest=info`). A plain
/// `Targets` filter is used because `EnvFilter` compiles regexes at startup.
pub(crate) fn init_logging(verbose: u8, quiet: bool) {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::prelude::*;
    let level = match (quiet, verbose) {
        (true, _) => LevelFilter::ERROR,
        (false, 0) => LevelFilter::WARN,
        (false, 1) => LevelFilter::INFO,
        (false, _) => LevelFilter::DEBUG,
    };
    let filter = log_filter(env::var("ROUNDS_LOG").as_deref(), level);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(render::LogWriter)
        .event_format(render::LogStyle);
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init();
}

#[cfg(test)]
mod log_tests {
    use tracing::Level;
    use tracing_subscriber::filter::LevelFilter;

    #[test]
    fn aws_crates_say_at_most_info_and_nothing_unasked() {
        let plain = super::log_filter(None, LevelFilter::DEBUG);
        assert!(plain.would_enable("rounds::app", &Level::DEBUG));
        assert!(!plain.would_enable("aws_config", &Level::WARN));
        let all = super::log_filter(Some("trace"), LevelFilter::WARN);
        assert!(all.would_enable("rounds::app", &Level::TRACE));
        assert!(all.would_enable("aws_sigv4", &Level::INFO));
        assert!(!all.would_enable("aws_sigv4", &Level::DEBUG));
        let ours = super::log_filter(Some("rounds=debug"), LevelFilter::WARN);
        assert!(!ours.would_enable("aws_smithy_runtime", &Level::INFO));
        let theirs = super::log_filter(Some("aws_config=warn"), LevelFilter::WARN);
        assert!(theirs.would_enable("aws_config", &Level::WARN));
        assert!(!theirs.would_enable("aws_config", &Level::INFO));
    }
}
