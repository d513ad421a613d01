//! What bounds the loop (`LoopLimits`) and how the prompt is cached, from the flags and what the
//! provider and price table say.

use std::time::Duration;

use super::{ConfigError, DEFAULT_CONTEXT_WINDOW, Resume};
use crate::agent::{FailOn, LoopLimits};
use crate::cli::{self, Cli};
use crate::pricing::ModelInfo;
use crate::provider::retry::RetryPolicy;
use crate::provider::{Cache, Options, Parallel, ProviderChoice};

/// A prompt this large is said on stderr: every round sends it again.
const LARGE_PROMPT: usize = 1024 * 1024;

/// The first turn (prompt and project instructions, `bytes` long) against the context window:
/// a turn that cannot fit is an error before any request (a quarter of its bytes is the
/// loop's own estimate of its tokens), a large one a warning. A replay sends nothing.
pub(super) fn prompt_size(bytes: usize, window: u64, replay: bool) -> Result<(), ConfigError> {
    let tokens = bytes as u64 / 4;
    if replay {
        return Ok(());
    }
    if tokens > window {
        return Err(ConfigError::PromptTooLarge {
            bytes,
            tokens,
            window,
        });
    }
    if bytes > LARGE_PROMPT {
        tracing::warn!(
            "the prompt is {:.1} MiB (about {tokens} tokens of a {window}-token context \
             window), sent again in every round",
            bytes as f64 / (1024.0 * 1024.0)
        );
    }
    Ok(())
}

/// `--check`, wherever it came from: clap refuses a blank one on the command line and in the
/// settings, but a job line or a queue row is applied to the flags after clap. A blank command
/// runs `bash -c ''`, which exits 0: the run would "pass" having checked nothing.
pub(super) fn check_command(cli: &Cli) -> Result<(), ConfigError> {
    match &cli.check {
        Some(check) if check.trim().is_empty() => Err(ConfigError::EmptyCheck),
        _ => Ok(()),
    }
}

pub(super) fn loop_limits(
    cli: &Cli,
    model_info: &ModelInfo,
    provider: &ProviderChoice,
    options: &Options,
) -> LoopLimits {
    LoopLimits {
        max_rounds: cli.max_rounds,
        context_window: cli
            .context_window
            .or(model_info.context_window)
            .unwrap_or(DEFAULT_CONTEXT_WINDOW),
        deadline: cli.timeout.map(Duration::from_secs_f64),
        max_tokens: cli.max_tokens.or(provider.default_max_tokens()),
        max_parallel: usize::from(cli.max_parallel),
        // Without a switch in the API (Gemini), one call per response is the loop's to keep.
        max_calls_per_round: if options.parallel_tool_calls == Parallel::Off {
            1
        } else {
            cli.max_calls_per_round
        },
        max_repeats: cli.max_repeats,
        check: cli.check.clone(),
        max_checks: cli.max_checks,
        budget_tokens: cli.budget_tokens,
        budget_usd: cli.budget_usd,
        on_max_rounds: cli.on_max_rounds,
        fail_on: FailOn {
            tool_error: cli.fail_on.contains(&cli::FailOn::ToolError),
            denied: cli.fail_on.contains(&cli::FailOn::Denied),
        },
        retry: RetryPolicy {
            max_retries: cli.max_retries,
            base: Duration::from_secs_f64(cli.retry_delay),
        },
    }
}

/// Prompt caching (`--no-cache`, `--cache-ttl`), keyed by the run, or by the first run of the
/// chain a resumed one continues.
pub(super) fn cache(cli: &Cli, resume: Option<&Resume>, run_id: &str) -> Option<Cache> {
    (!cli.no_cache).then(|| Cache {
        ttl: cli.cache_ttl,
        key: resume.map_or_else(|| run_id.to_owned(), |r| r.origin_run_id.clone()),
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn a_blank_check_set_after_clap_is_still_refused() {
        // What a job line or a queue row does: the flags parsed, then the check set on them.
        let mut cli = super::Cli::try_parse_from(["rounds", "x"]).unwrap();
        for blank in ["", " ", "\t\n"] {
            cli.check = Some(blank.to_owned());
            let refused = super::check_command(&cli);
            assert!(
                matches!(refused, Err(super::ConfigError::EmptyCheck)),
                "{blank:?}"
            );
        }
        cli.check = Some("cargo test".to_owned());
        assert!(super::check_command(&cli).is_ok());
        cli.check = None;
        assert!(super::check_command(&cli).is_ok());
    }
}
