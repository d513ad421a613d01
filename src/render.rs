//! Everything rounds prints. stdout carries the product only (the final answer, or one JSON
//! object); errors and the summary go to stderr. A closed stdout (`| head -1`) is not an error.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;

use crate::cli::OutputMode;
use crate::outcome::{Outcome, Status};

/// Prints the run's result on stdout in the chosen mode.
pub fn print_outcome(mode: OutputMode, outcome: &Outcome) {
    let mut bytes = match mode {
        OutputMode::Text => {
            if outcome.final_text.is_empty() {
                return;
            }
            outcome.final_text.clone().into_bytes()
        }
        OutputMode::Json => match serde_json::to_vec(outcome) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("rounds: error: cannot serialize the outcome: {e}");
                return;
            }
        },
    };
    if bytes.last() != Some(&b'\n') {
        bytes.push(b'\n');
    }
    let mut out = std::io::stdout().lock();
    // A reader that went away (broken pipe) has all it wanted; nothing to report.
    let _ = out.write_all(&bytes).and_then(|()| out.flush());
}

/// The stderr lines that close a run: the error if any, then a one-line summary.
pub fn print_summary(outcome: &Outcome, quiet: bool) {
    if let Some(error) = &outcome.error {
        let label = if outcome.status == Status::Usage {
            "usage error"
        } else {
            "error"
        };
        eprintln!("rounds: {label}: {error}");
    }
    if quiet || outcome.status == Status::Usage {
        return;
    }
    let errors: u32 = outcome.tool_errors.values().sum();
    let mut line = format!(
        "rounds: {} after {} round{}, {} tool call{}",
        outcome.status.as_str(),
        outcome.rounds,
        plural(outcome.rounds),
        outcome.tool_calls,
        plural(outcome.tool_calls),
    );
    if errors > 0 {
        line.push_str(&format!(" ({errors} failed)"));
    }
    line.push_str(&format!(
        ", {} in / {} out tokens, {:.1}s",
        outcome.usage.input_tokens
            + outcome.usage.cache_read_tokens
            + outcome.usage.cache_write_tokens,
        outcome.usage.output_tokens,
        outcome.duration_ms as f64 / 1000.0
    ));
    if let Some(path) = &outcome.transcript {
        line.push_str(&format!("; transcript {}", path.display()));
    }
    eprintln!("{line}");
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}
