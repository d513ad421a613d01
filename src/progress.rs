//! Live progress on stderr for people watching a terminal: the round counter with what the run
//! is waiting for, a spinner per running tool (name, subject, elapsed), and one line per finished
//! call. Built only when stderr is a terminal and `-q` is off, so logs and CI output never see
//! a control sequence.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::agent::Observer;
use crate::conversation::{ToolResult, ToolUse};
use crate::terminal;

/// The progress display on screen, if any: log lines are printed above it, never through it.
static SHOWN: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// Writes `text` to stderr; while progress is on screen, above it (the bars are redrawn
/// below), so a warning never leaves half a spinner line behind.
pub(crate) fn eprint_above(text: &[u8]) {
    use std::io::Write;
    let shown = SHOWN.lock().ok().and_then(|s| s.clone());
    let write = || {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text).and_then(|()| err.flush());
    };
    match shown {
        Some(multi) => multi.suspend(write),
        None => write(),
    }
}

pub(crate) struct Progress {
    multi: MultiProgress,
    round: ProgressBar,
    max_rounds: u32,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    number: u32,
    writing: bool,
    tools: HashMap<String, (ProgressBar, String)>,
}

impl Progress {
    /// Progress for a terminal, or `None` when stderr is not one.
    pub(crate) fn for_terminal(max_rounds: u32) -> Option<Progress> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let round = multi.add(ProgressBar::new_spinner());
        round.set_style(style("{spinner:.cyan} {msg} {elapsed:.dim}"));
        round.enable_steady_tick(Duration::from_millis(100));
        if let Ok(mut shown) = SHOWN.lock() {
            *shown = Some(multi.clone());
        }
        Some(Progress {
            multi,
            round,
            max_rounds,
            state: Mutex::new(State::default()),
        })
    }

    fn round_message(&self, state: &State) {
        let doing = match (state.writing, state.tools.len()) {
            (_, n) if n > 0 => format!("{n} tool call{} running", if n == 1 { "" } else { "s" }),
            (true, _) => "the model is writing".to_owned(),
            (false, _) => "waiting for the model".to_owned(),
        };
        self.round.set_message(format!(
            "round {}/{} · {doing}",
            state.number, self.max_rounds
        ));
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// One line naming a call: `read_file src/main.rs`, `bash cargo test`. Both come from the
/// model, so control characters are shown escaped, never sent to the terminal.
fn label(name: &str, subject: Option<&str>) -> String {
    let name = terminal::line(name);
    match subject {
        Some(s) => {
            let s: String = s.chars().take(60).collect();
            format!("{name} {}", terminal::line(&s))
        }
        None => name.into_owned(),
    }
}

impl Observer for Progress {
    fn round_started(&self, round: u32) {
        if let Ok(mut s) = self.state.lock() {
            s.number = round;
            s.writing = false;
            self.round_message(&s);
        }
    }

    fn text_delta(&self, _text: &str) {
        if let Ok(mut s) = self.state.lock()
            && !s.writing
        {
            s.writing = true;
            self.round_message(&s);
        }
    }

    fn tool_started(&self, call: &ToolUse, subject: Option<&str>) {
        let bar = self.multi.add(ProgressBar::new_spinner());
        bar.set_style(style("  {spinner:.green} {msg} {elapsed:.dim}"));
        let text = label(&call.name, subject);
        bar.set_message(text.clone());
        bar.enable_steady_tick(Duration::from_millis(100));
        if let Ok(mut s) = self.state.lock() {
            s.tools.insert(call.id.clone(), (bar, text));
            self.round_message(&s);
        }
    }

    fn tool_finished(&self, result: &ToolResult) {
        let Ok(mut s) = self.state.lock() else { return };
        if let Some((bar, text)) = s.tools.remove(&result.tool_use_id) {
            bar.finish_and_clear();
            let mark = match result.error_kind {
                None => "✓".to_owned(),
                Some(kind) => format!(
                    "✗ {}",
                    serde_json::to_value(kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                ),
            };
            let _ = self.multi.println(format!(
                "  {mark} {text} ({:.1}s)",
                result.duration_ms as f64 / 1000.0
            ));
        }
        self.round_message(&s);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Ok(mut shown) = SHOWN.lock() {
            *shown = None;
        }
        self.round.finish_and_clear();
        let _ = self.multi.clear();
    }
}
