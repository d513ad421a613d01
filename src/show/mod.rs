//! `rounds show`: a transcript made readable by a person, as terminal text ([`terminal`]) or
//! as one self-contained HTML page ([`html`]). Both walk the transcript the same way: the run's
//! header, then each round with the model's text, each tool call followed by its result
//! (folded), errors and retries, usage and cost; then how the run ended and its answer.
//!
//! Everything in a transcript is someone else's text (the model's, a tool's, a server's):
//! both renderers escape all of it, the terminal one through `crate::terminal`, the HTML one
//! as HTML, so no content can drive a terminal or become markup.

pub(crate) mod html;
pub(crate) mod terminal;

use serde::Serialize;

use crate::conversation::{CallDefect, ToolResult, ToolUse, Usage};
use crate::transcript::Round;

/// How a rendering looks: the lines of a result shown before it is folded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub(crate) result_lines: usize,
    pub(crate) color: bool,
}

/// The first `lines` lines of `text`, and how many more there are.
pub(crate) fn fold(text: &str, lines: usize) -> (Vec<&str>, usize) {
    let all: Vec<&str> = text.lines().collect();
    if all.len() <= lines {
        return (all, 0);
    }
    (all[..lines].to_vec(), all.len() - lines)
}

/// `1020 in (900 read from the cache, 0 written to it) / 30 out tokens · $0.0123`, in the
/// words of the summary line a run ends with.
pub(crate) fn usage_text(u: &Usage, cost: Option<f64>) -> String {
    let cached = match (u.cache_read_tokens, u.cache_write_tokens) {
        (0, 0) => String::new(),
        (read, written) => format!(" ({read} read from the cache, {written} written to it)"),
    };
    let cost = cost.map_or(String::new(), |c| format!(" · ${c:.4}"));
    format!(
        "{} in{cached} / {} out tokens{cost}",
        u.input_total(),
        u.output_tokens
    )
}

/// A duration in milliseconds as a person reads it: `412 ms`, `3.2 s`.
pub(crate) fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// An RFC 3339 time as `2026-01-02 13:04:05 UTC`, or as written when it does not parse.
pub(crate) fn time(text: &str) -> String {
    match text.parse::<jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        Err(_) => text.to_owned(),
    }
}

/// A call's input as the model sent it: compact JSON, or the raw text when it did not parse.
pub(crate) fn input_text(call: &ToolUse) -> String {
    match (&call.defect, &call.raw_input) {
        (Some(_), Some(raw)) => raw.clone(),
        _ => serde_json::to_string(&call.input).unwrap_or_default(),
    }
}

/// Why a call could not run, if it could not.
pub(crate) fn defect_text(call: &ToolUse) -> Option<String> {
    call.defect.as_ref().map(|d| match d {
        CallDefect::InvalidJson(why) => format!("arguments are not valid JSON: {why}"),
        CallDefect::Truncated => "cut off by max_tokens before its arguments were complete".into(),
    })
}

/// A serde enum's name as written in the transcript (`denied`, `end_turn`).
pub(crate) fn name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Whether the answer is just the last round's text (which was shown already).
pub(crate) fn answer_is_last_text(t: &crate::transcript::Transcript, answer: &str) -> bool {
    use crate::conversation::Block;
    let Some(last) = t.rounds.last() else {
        return false;
    };
    let texts: Vec<&str> = last
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    !texts.is_empty() && (texts.concat() == answer || texts.join("\n") == answer)
}

/// The result recorded for `call` in `round`.
pub(crate) fn result_of<'a>(round: &'a Round, call: &ToolUse) -> Option<&'a ToolResult> {
    round.results.iter().find(|r| r.tool_use_id == call.id)
}

/// Results of `round` that answer no call (an edited transcript), which would otherwise be
/// left out of the view.
pub(crate) fn stray_results(round: &Round) -> Vec<&ToolResult> {
    use crate::conversation::Block;
    round
        .results
        .iter()
        .filter(|r| {
            !round
                .blocks
                .iter()
                .any(|b| matches!(b, Block::ToolUse(c) if c.id == r.tool_use_id))
        })
        .collect()
}

/// `✓ 13 bytes · 0 ms` or `✗ denied · 0 ms`, with the cut and where the whole output is.
pub(crate) fn result_head(r: &ToolResult) -> String {
    let mut head = if r.is_error {
        let kind = r.error_kind.map_or("error", |k| k.words());
        format!("✗ {kind}")
    } else {
        format!("✓ {} bytes", r.bytes.max(r.content.len() as u64))
    };
    head.push_str(&format!(" · {}", duration(r.duration_ms)));
    if r.truncated {
        match &r.full_output {
            Some(file) => head.push_str(&format!(" · cut, whole output in {file}")),
            None => head.push_str(" · cut"),
        }
    }
    head
}

/// `check make test · ✗ exit code 1 · attempt 2 · 0.4s · cut, whole output in FILE`.
pub(crate) fn check_head(c: &crate::outcome::CheckRun) -> String {
    let how = match c.exit_code {
        Some(0) => "✓ passed".to_owned(),
        Some(code) => format!("✗ exit code {code}"),
        None => "✗ did not finish".to_owned(),
    };
    let mut head = format!(
        "check {} · {how} · attempt {} · {}",
        c.command,
        c.attempt,
        duration(c.duration_ms)
    );
    if c.truncated {
        match &c.full_output {
            Some(file) => head.push_str(&format!(" · cut, whole output in {file}")),
            None => head.push_str(" · cut"),
        }
    }
    head
}

/// `completed (exit 0) · 2 rounds · 3 tool calls (1 failed: 1 denied)`.
pub(crate) fn end_head(end: &crate::transcript::End) -> String {
    let mut head = format!(
        "{} (exit {}) · {} round{} · {} tool call{}",
        end.status.as_str(),
        end.exit_code,
        end.rounds,
        if end.rounds == 1 { "" } else { "s" },
        end.tool_calls,
        if end.tool_calls == 1 { "" } else { "s" },
    );
    let failed: u32 = end.tool_errors.values().sum();
    if failed > 0 {
        let kinds: Vec<String> = end
            .tool_errors
            .iter()
            .map(|(k, n)| format!("{n} {}", k.words()))
            .collect();
        head.push_str(&format!(" ({failed} failed: {})", kinds.join(", ")));
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_keeps_the_head_and_counts_the_rest() {
        assert_eq!(fold("a\nb\nc\n", 2), (vec!["a", "b"], 1));
        assert_eq!(fold("a\nb", 2), (vec!["a", "b"], 0));
        assert_eq!(fold("", 2), (vec![], 0));
        assert_eq!(duration(412), "412 ms");
        assert_eq!(duration(3240), "3.2 s");
        assert_eq!(time("2026-01-02T13:04:05.123Z"), "2026-01-02 13:04:05 UTC");
        assert_eq!(time("yesterday"), "yesterday");
    }
}
