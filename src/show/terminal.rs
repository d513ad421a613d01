//! A transcript as text for a terminal (or a pipe): escaped through `crate::terminal`,
//! coloured only when asked (see `commands::show`), results folded.

use std::fmt::Write;

use super::{Options, defect_text, duration, end_head, fold, input_text, result_head, time};
use crate::conversation::{Block, StopReason, ToolResult, ToolUse};
use crate::terminal::{line, text};
use crate::transcript::{AgentLine, Round, Transcript};

/// The longest tool input shown, in bytes, before it is cut.
const INPUT_BYTES: usize = 240;

const BOLD: &str = "1";
const DIM: &str = "2";
const RED: &str = "31";
const BOLD_RED: &str = "1;31";
const GREEN: &str = "32";
const YELLOW: &str = "33";
const CYAN: &str = "1;36";

struct Out {
    buf: String,
    color: bool,
    /// The transcript's subagent lines, shown under the `task` call that started each.
    agents: std::rc::Rc<Vec<AgentLine>>,
    /// The `task` calls that lead to the rounds being shown (empty: the run's own).
    path: String,
}

impl Out {
    /// `text`, already escaped, in SGR `style` when colouring.
    fn paint(&self, style: &str, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[{style}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn line(&mut self, s: &str) {
        self.buf.push_str(s);
        self.buf.push('\n');
    }

    /// Multi-line text from the transcript, escaped, each line indented.
    fn block(&mut self, indent: &str, style: Option<&str>, raw: &str) {
        for l in text(raw).lines() {
            if l.is_empty() {
                self.buf.push('\n');
                continue;
            }
            let shown = match style {
                Some(style) => self.paint(style, l),
                None => l.to_owned(),
            };
            let _ = writeln!(self.buf, "{indent}{shown}");
        }
    }

    /// Like `block`, showing at most `lines` lines and then how many more there are.
    fn folded(&mut self, indent: &str, style: Option<&str>, raw: &str, lines: usize) {
        let escaped = text(raw);
        let (head, more) = fold(&escaped, lines);
        self.block(indent, style, &head.join("\n"));
        if more > 0 {
            let note = self.paint(DIM, &format!("… ({more} more line{})", plural(more)));
            let _ = writeln!(self.buf, "{indent}{note}");
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The whole transcript as text.
pub(crate) fn render(t: &Transcript, path: &str, opts: Options) -> String {
    let mut out = Out {
        buf: String::new(),
        color: opts.color,
        agents: std::rc::Rc::new(t.agents.iter().map(|(_, l)| l.clone()).collect()),
        path: String::new(),
    };
    header(&mut out, t, path);
    for round in &t.rounds {
        out.line("");
        render_round(&mut out, round, opts.result_lines);
    }
    out.line("");
    if t.torn_tail {
        let note = out.paint(
            YELLOW,
            "the last line was cut off (the run was killed while writing it)",
        );
        out.line(&note);
    }
    match &t.end {
        Some(end) => {
            let status = end_head(end);
            let style = if end.exit_code == 0 { GREEN } else { BOLD_RED };
            let head = format!("── end · {}", out.paint(style, &status));
            out.line(&head);
            let usage = super::usage_text(&end.usage, end.cost_usd);
            out.line(&format!("  {usage} · {}", duration(end.duration_ms)));
            if let Some(error) = &end.error {
                let label = out.paint(BOLD_RED, "error:");
                out.line(&format!("  {label} {}", line(error)));
            }
            if !end.final_text.is_empty() {
                let label = out.paint(BOLD, "answer");
                if super::answer_is_last_text(t, &end.final_text) {
                    out.line(&format!("{label}: the last round's text above"));
                } else {
                    out.line(&label);
                    out.block("  ", None, &end.final_text);
                }
            }
        }
        None => {
            let note = out.paint(
                YELLOW,
                "── no end line: the run is still going, or was killed",
            );
            out.line(&note);
        }
    }
    out.buf
}

fn header(out: &mut Out, t: &Transcript, path: &str) {
    let s = &t.start;
    let title = out.paint(BOLD, &format!("rounds run {}", line(&s.run_id)));
    out.line(&title);
    let mut field = |name: &str, value: &str| {
        let label = out.paint(DIM, &format!("{name:<10}"));
        out.line(&format!("  {label} {}", line(value)));
    };
    field("model", &format!("{}/{}", s.provider, s.model));
    field("started", &time(&s.time));
    field("workspace", &s.workspace);
    field("tools", &s.tools.join(", "));
    if let Some(from) = &s.resumed_from {
        field("resumed", from);
    }
    field("transcript", path);
    out.line("");
    let label = out.paint(BOLD, "prompt");
    out.line(&label);
    out.block("  ", None, s.user_prompt());
}

/// A round: its head line, retries, what the model said and called with each call's result,
/// then what went wrong or was elided.
fn render_round(out: &mut Out, round: &Round, result_lines: usize) {
    let mut head = format!(
        "── round {}{} · {} model · {} tools · {}",
        round.round,
        if round.summary {
            " (summary, no tools)"
        } else {
            ""
        },
        duration(round.model_ms),
        duration(round.tools_ms),
        super::usage_text(&round.usage, round.cost_usd),
    );
    let unusual = !matches!(
        round.stop_reason,
        None | Some(StopReason::EndTurn | StopReason::ToolUse)
    );
    if let Some(reason) = round.stop_reason.as_ref().filter(|_| unusual) {
        head.push_str(&format!(" · stopped: {}", super::name(reason)));
    }
    let head = out.paint(CYAN, &head);
    out.line(&head);
    for retry in &round.retries {
        let label = out.paint(YELLOW, &format!("retry after attempt {}:", retry.attempt));
        out.line(&format!(
            "  {label} {} (waited {})",
            line(&retry.error),
            duration(retry.delay_ms)
        ));
    }
    for block in &round.blocks {
        render_block(out, round, block, result_lines);
    }
    if let Some(check) = &round.check {
        let style = if check.passed { GREEN } else { BOLD_RED };
        let head = out.paint(style, &line(&super::check_head(check)));
        out.line(&format!("  {head}"));
        let body_style = (!check.passed).then_some(RED);
        out.folded("    │ ", body_style, &check.output, result_lines);
    }
    for stray in super::stray_results(round) {
        let note = out.paint(
            YELLOW,
            &format!("result for no call ({})", line(&stray.tool_use_id)),
        );
        out.line(&format!("  {note}"));
        result(out, stray, result_lines);
    }
    if let Some(error) = &round.error {
        let label = out.paint(BOLD_RED, "stream error:");
        out.line(&format!("  {label} {}", line(error)));
    }
    if !round.elided.is_empty() {
        let note = format!(
            "elided from this request on to fit the context window: {} earlier result{}",
            round.elided.len(),
            plural(round.elided.len())
        );
        let note = out.paint(DIM, &note);
        out.line(&format!("  {note}"));
    }
}

/// One block of the model's turn: text, thinking (folded), or a tool call with its result.
fn render_block(out: &mut Out, round: &Round, block: &Block, result_lines: usize) {
    match block {
        Block::Text { text, .. } => out.block("  ", None, text),
        Block::Thinking { text, .. } => {
            let label = out.paint(DIM, "thinking");
            out.line(&format!("  {label}"));
            out.folded("    ", Some(DIM), text, result_lines);
        }
        Block::RedactedThinking { .. } => {
            let label = out.paint(DIM, "[redacted thinking]");
            out.line(&format!("  {label}"));
        }
        Block::Reasoning { summary, .. } => {
            let label = out.paint(DIM, "reasoning (encrypted)");
            out.line(&format!("  {label}"));
            for s in summary {
                out.folded("    ", Some(DIM), s, result_lines);
            }
        }
        Block::ToolUse(call) => render_call(out, round, call, result_lines),
    }
}

/// A tool call on one line (its input cut at `INPUT_BYTES`), why it did not run if it did
/// not, and its result.
fn render_call(out: &mut Out, round: &Round, call: &ToolUse, result_lines: usize) {
    let mut input = input_text(call);
    if input.len() > INPUT_BYTES {
        let mut cut = INPUT_BYTES;
        while !input.is_char_boundary(cut) {
            cut -= 1;
        }
        let more = input.len() - cut;
        input.truncate(cut);
        input.push_str(&format!("… ({more} more bytes)"));
    }
    let name = out.paint(BOLD, &line(&call.name));
    out.line(&format!("  → {name} {}", line(&input)));
    if let Some(defect) = defect_text(call) {
        let note = out.paint(RED, &format!("not run: {defect}"));
        out.line(&format!("    {note}"));
    }
    if call.name == crate::tools::delegate::TASK {
        subagent(out, &call.id, result_lines);
    }
    match super::result_of(round, call) {
        Some(r) => result(out, r, result_lines),
        None if call.defect.is_none() => {
            let note = out.paint(YELLOW, "no result recorded");
            out.line(&format!("    {note}"));
        }
        None => {}
    }
}

/// The subagent a `task` call started: its start, its rounds (each as a run's, set in by a
/// bar), its end.
fn subagent(out: &mut Out, id: &str, result_lines: usize) {
    let path = match out.path.as_str() {
        "" => id.to_owned(),
        outer => format!("{outer}/{id}"),
    };
    let agents = out.agents.clone();
    for agent in agents.iter().filter(|l| l.at().call == path) {
        match agent {
            AgentLine::Start(s) => {
                let name = out.paint(CYAN, &line(&s.at.agent));
                out.line(&format!(
                    "    ┌ subagent {name} · {} · {}",
                    line(&s.description),
                    line(&s.model)
                ));
            }
            AgentLine::Round(r) => {
                let mut inner = Out {
                    buf: String::new(),
                    color: out.color,
                    agents: out.agents.clone(),
                    path: path.clone(),
                };
                render_round(&mut inner, &r.round, result_lines);
                for l in inner.buf.lines() {
                    out.line(&format!("    │ {l}"));
                }
            }
            AgentLine::End(e) => {
                let style = if e.status == crate::outcome::Status::Completed {
                    GREEN
                } else {
                    BOLD_RED
                };
                let status = out.paint(style, e.status.as_str());
                let usage = super::usage_text(&e.usage, e.cost_usd);
                out.line(&format!(
                    "    └ {status} · {} round{} · {usage} · {}",
                    e.rounds,
                    plural(e.rounds as usize),
                    duration(e.duration_ms)
                ));
            }
        }
    }
}

fn result(out: &mut Out, r: &ToolResult, lines: usize) {
    let style = if r.is_error { BOLD_RED } else { GREEN };
    let head = out.paint(style, &line(&result_head(r)));
    out.line(&format!("    {head}"));
    let body_style = r.is_error.then_some(RED);
    out.folded("    │ ", body_style, &r.content, lines);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_wraps_escaped_text_only() {
        let out = Out {
            buf: String::new(),
            color: true,
            agents: Default::default(),
            path: String::new(),
        };
        assert_eq!(out.paint(RED, "x"), "\x1b[31mx\x1b[0m");
        let mut out = Out {
            buf: String::new(),
            color: false,
            agents: Default::default(),
            path: String::new(),
        };
        out.block("  ", Some(RED), "a\x1b]0;t\x07\nb");
        assert_eq!(out.buf, "  a\\x1b]0;t\\x07\n  b\n");
    }
}
