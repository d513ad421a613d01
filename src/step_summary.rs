//! `--step-summary FILE` (or `GITHUB_STEP_SUMMARY`, which GitHub Actions sets): a Markdown
//! summary of the run appended to FILE when it ends, which GitHub shows on the workflow run's
//! page: status, rounds, tool calls and errors, tokens and cost, and the answer, folded.
//!
//! The prompt's first line, the answer and any error are other parties' text (a PR title, the
//! model): each is put where Markdown and HTML cannot reach it, inside a code span or a fenced
//! block whose fence is longer than any run of backticks in it, so nothing in it can close the
//! fence, the `<details>` block around it, or add markup to the page.

use std::io::Write;
use std::path::Path;

use crate::markdown;
use crate::outcome::{FailureRecord, Outcome, Status};

/// The most bytes of the answer put in the summary (GitHub takes at most 1 MiB per step).
const MAX_ANSWER: usize = 64 * 1024;

/// Opens `path` for appending, before the run starts (so no tool of the run can have changed
/// what it names; see `files`). A failure is a warning: the run goes on without a summary.
pub(crate) fn open(path: &Path) -> Option<std::fs::File> {
    match crate::files::Target::new(path).and_then(|t| t.append()) {
        Ok(file) => Some(file),
        Err(e) => {
            tracing::warn!("cannot write the step summary: {e}");
            None
        }
    }
}

/// Appends the run's summary to `file` (from [`open`]). A failure is a warning: the run itself
/// went as its status says.
pub(crate) fn append(mut file: std::fs::File, outcome: &Outcome) {
    let start = outcome
        .transcript
        .as_deref()
        .and_then(|t| crate::runs::read_start(t).ok());
    let model = start
        .as_ref()
        .map(|s| format!("{}/{}", s.provider, s.model));
    let prompt = start
        .as_ref()
        .map(|s| s.user_prompt().lines().next().unwrap_or("").to_owned());
    let text = markdown(outcome, model.as_deref(), prompt.as_deref());
    if let Err(e) = file.write_all(text.as_bytes()) {
        tracing::warn!("cannot write the step summary: {e}");
    }
}

/// The summary as Markdown, starting and ending with a blank line so it stands apart from
/// whatever else the step appends.
pub(crate) fn markdown(outcome: &Outcome, model: Option<&str>, prompt: Option<&str>) -> String {
    let status = outcome.status;
    let mark = match status {
        Status::Completed => "✅",
        Status::Error | Status::Usage => "❌",
        // Worth a retry later, unlike an error.
        Status::Unavailable => "🔁",
        _ => "⚠️",
    };
    let mut md = format!(
        "\n### {mark} rounds: {} (exit {})\n\n",
        status.as_str(),
        status.exit_code()
    );
    let mut item = |name: &str, value: String| md.push_str(&format!("- **{name}:** {value}\n"));
    if let Some(prompt) = prompt {
        item("Prompt", code_span(&shorten(prompt, 120)));
    }
    if let Some(model) = model {
        item("Model", code_span(model));
    }
    item("Rounds", outcome.rounds.to_string());
    let failed: u32 = outcome.tool_errors.values().sum();
    let mut calls = outcome.tool_calls.to_string();
    if failed > 0 {
        let kinds: Vec<String> = outcome
            .tool_errors
            .iter()
            .map(|(kind, n)| format!("{n} {}", kind.words()))
            .collect();
        calls.push_str(&format!(", {failed} failed ({})", kinds.join(", ")));
    }
    item("Tool calls", calls);
    item(
        "Tokens",
        crate::show::usage_text(&outcome.usage, None).replace(" tokens", ""),
    );
    if let Some(usd) = outcome.cost_usd {
        item("Cost", format!("${usd:.4}"));
    }
    item("Duration", crate::show::duration(outcome.duration_ms));
    if let Some(path) = &outcome.transcript {
        item("Transcript", code_span(&path.display().to_string()));
    }
    if let Some(failure) = &outcome.failure {
        item("Failure", failure_text(failure));
    }
    if let Some(check) = &outcome.check {
        item("Check", check_text(check));
    }
    if let Some(error) = &outcome.error {
        md.push_str(&format!("\n**Error:**\n\n{}\n", fenced(error)));
    }
    if let Some(check) = outcome.check.as_ref().filter(|c| !c.passed) {
        md.push_str(&format!(
            "\n<details><summary>The check's last output</summary>\n\n{}\n</details>\n",
            fenced(&shorten(&check.output, MAX_ANSWER))
        ));
    }
    if !outcome.final_text.is_empty() {
        md.push_str(&answer_details(&outcome.final_text));
    }
    md.push('\n');
    md
}

/// The check's last run: its command, how it ended, which attempt.
fn check_text(check: &crate::outcome::CheckRun) -> String {
    let how = match check.exit_code {
        Some(0) => "passed".to_owned(),
        Some(code) => format!("failed (exit code {code})"),
        None => "did not finish".to_owned(),
    };
    let command = code_span(&shorten(&check.command, 120));
    format!("{command} {how}, attempt {}", check.attempt)
}

/// The final answer, folded, cut at `MAX_ANSWER` bytes with a word that it was.
fn answer_details(text: &str) -> String {
    let lines = text.lines().count();
    let mut answer = text;
    let mut cut = String::new();
    if answer.len() > MAX_ANSWER {
        let mut end = MAX_ANSWER;
        while !answer.is_char_boundary(end) {
            end -= 1;
        }
        answer = &answer[..end];
        cut = "\n_The answer is cut here; the transcript has all of it._\n".into();
    }
    format!(
        "\n<details><summary>Final answer ({lines} line{})</summary>\n\n{}\n{cut}\n</details>\n",
        if lines == 1 { "" } else { "s" },
        fenced(answer)
    )
}

/// The failure record in words a person and a `grep` both read: the kind as written in the
/// `end` line, whether retrying may help, and the provider's wait.
fn failure_text(failure: &FailureRecord) -> String {
    let kind = serde_json::to_value(failure.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut text = format!("`{kind}`, ");
    text.push_str(match failure.retryable {
        true => "retryable",
        false => "not retryable",
    });
    if let Some(secs) = failure.retry_after {
        text.push_str(&format!(" (the provider asked to wait {secs}s)"));
    }
    text
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// `text` on one line (control characters shown escaped) as a Markdown code span, whose
/// backtick string is longer than any inside it.
fn code_span(text: &str) -> String {
    markdown::code_span(&crate::terminal::line(text))
}

/// `text` as a fenced code block (control characters shown escaped) no line of it can close.
fn fenced(text: &str) -> String {
    markdown::fenced(&crate::terminal::text(text), "text")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failure_record_is_shown_with_its_wait() {
        let failure = FailureRecord::new(
            crate::outcome::Failure::RateLimited,
            Some(std::time::Duration::from_millis(2500)),
        );
        let outcome = Outcome::new(Status::Completed, None).fail(failure, "HTTP 429");
        let md = markdown(&outcome, None, None);
        assert!(md.contains("### 🔁 rounds: unavailable (exit 10)"), "{md}");
        assert!(
            md.contains(
                "- **Failure:** `rate_limited`, retryable (the provider asked to wait 2.5s)"
            ),
            "{md}"
        );
        let md = markdown(&Outcome::new(Status::MaxRounds, None), None, None);
        assert!(!md.contains("Failure"), "{md}");
    }

    #[test]
    fn hostile_text_stays_inside_its_fence_and_span() {
        let answer = "ok\n```\n</details>\n<script>alert(1)</script>\n`````\nend";
        let block = fenced(answer);
        let fence = "``````";
        assert!(block.starts_with(&format!("{fence}text\n")), "{block}");
        assert!(block.ends_with(&format!("\n{fence}")), "{block}");
        // No line inside is a fence that long.
        let inner: Vec<&str> = block.lines().collect();
        assert!(
            inner[1..inner.len() - 1]
                .iter()
                .all(|l| !l.trim().starts_with(fence))
        );
        assert_eq!(code_span("a`b"), "``a`b``");
        assert_eq!(code_span("`x"), "`` `x ``");
        assert_eq!(code_span("two\nlines"), "`two\\nlines`");
    }
}
