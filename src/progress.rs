//! Live progress on stderr for people watching a terminal: the round counter with what the run
//! is waiting for, a spinner per running tool (name, subject, elapsed), and one line per finished
//! call. Built only when stderr is a terminal and `-q` is off, so logs and CI output never see
//! a control sequence. And the answer's text on a terminal's stdout as it streams ([`Stream`]).

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::agent::Observer;
use crate::conversation::{Block, ToolResult, ToolUse};
use crate::outcome::CheckRun;
use crate::terminal;
use crate::transcript::{AgentEnd, AgentRef, End, RetryNote, Round};

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

/// Takes the progress display off the screen while the model's text is being written on the
/// same terminal: bars drawn under a line still being written would be erased with it.
fn hold_progress() {
    if let Some(multi) = SHOWN.lock().ok().and_then(|s| s.clone()) {
        let _ = multi.clear();
        multi.set_draw_target(ProgressDrawTarget::hidden());
    }
}

/// Puts the progress display back once the text's line is ended.
fn release_progress() {
    if let Some(multi) = SHOWN.lock().ok().and_then(|s| s.clone())
        && multi.is_hidden()
    {
        multi.set_draw_target(ProgressDrawTarget::stderr());
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
        let (bar, text) = spin(&self.multi, label(&call.name, subject));
        if let Ok(mut s) = self.state.lock() {
            s.tools.insert(call.id.clone(), (bar, text));
            self.round_message(&s);
        }
    }

    fn tool_finished(&self, result: &ToolResult) {
        let Ok(mut s) = self.state.lock() else { return };
        if let Some((bar, text)) = s.tools.remove(&result.tool_use_id) {
            finished(&self.multi, bar, &text, result);
        }
        self.round_message(&s);
    }

    fn scoped(&self, at: &AgentRef) -> Option<Arc<dyn Observer>> {
        Some(Arc::new(Subagent {
            multi: self.multi.clone(),
            name: format!("{} ›", terminal::line(&at.agent)),
            tools: Mutex::new(HashMap::new()),
        }))
    }

    fn check_finished(&self, _round: u32, check: &CheckRun) {
        let mark = match check.exit_code {
            Some(0) => "✓".to_owned(),
            Some(code) => format!("✗ exit {code}"),
            None => "✗ did not finish".to_owned(),
        };
        let _ = self.multi.println(format!(
            "  {mark} check {} ({:.1}s)",
            terminal::line(&check.command),
            check.duration_ms as f64 / 1000.0
        ));
    }
}

/// A spinner line for a running call.
fn spin(multi: &MultiProgress, text: String) -> (ProgressBar, String) {
    let bar = multi.add(ProgressBar::new_spinner());
    bar.set_style(style("  {spinner:.green} {msg} {elapsed:.dim}"));
    bar.set_message(text.clone());
    bar.enable_steady_tick(Duration::from_millis(100));
    (bar, text)
}

/// A finished call: its spinner gone, one line saying how it went.
fn finished(multi: &MultiProgress, bar: ProgressBar, text: &str, result: &ToolResult) {
    bar.finish_and_clear();
    let mark = match result.error_kind {
        None => "✓".to_owned(),
        Some(kind) => format!("✗ {}", kind.words()),
    };
    let _ = multi.println(format!(
        "  {mark} {text} ({:.1}s)",
        result.duration_ms as f64 / 1000.0
    ));
}

/// A subagent's calls, shown as the run's are, each named after the agent.
struct Subagent {
    multi: MultiProgress,
    name: String,
    tools: Mutex<HashMap<String, (ProgressBar, String)>>,
}

impl Observer for Subagent {
    fn tool_started(&self, call: &ToolUse, subject: Option<&str>) {
        let spun = spin(
            &self.multi,
            format!("{} {}", self.name, label(&call.name, subject)),
        );
        if let Ok(mut tools) = self.tools.lock() {
            tools.insert(call.id.clone(), spun);
        }
    }

    fn tool_finished(&self, result: &ToolResult) {
        let running = self
            .tools
            .lock()
            .ok()
            .and_then(|mut t| t.remove(&result.tool_use_id));
        if let Some((bar, text)) = running {
            finished(&self.multi, bar, &text, result);
        }
    }

    fn scoped(&self, at: &AgentRef) -> Option<Arc<dyn Observer>> {
        Some(Arc::new(Subagent {
            multi: self.multi.clone(),
            name: format!("{} {} ›", self.name, terminal::line(&at.agent)),
            tools: Mutex::new(HashMap::new()),
        }))
    }

    fn agent_finished(&self, end: &AgentEnd) {
        let _ = self.multi.println(format!(
            "  {} {} ({}, {} round{})",
            if end.status == crate::outcome::Status::Completed {
                "✓"
            } else {
                "✗"
            },
            self.name.trim_end_matches(" ›"),
            end.status.as_str(),
            end.rounds,
            if end.rounds == 1 { "" } else { "s" }
        ));
    }
}

/// What the terminal was shown of the answer as it streamed: read by the printer of the final
/// answer, so the answer is not printed a second time.
static STREAMED: Mutex<Option<String>> = Mutex::new(None);

/// Whether a terminal's stdout already shows `answer`, streamed; if so, as whole lines.
pub(crate) fn answer_streamed(answer: &str) -> bool {
    STREAMED
        .lock()
        .ok()
        .is_some_and(|shown| shown.as_deref() == Some(answer))
}

/// `-o text` with stdout a terminal: the model's text written as it arrives, escaped like any
/// text a terminal shows (a sequence split over two deltas is escaped in both halves, since
/// every control character is escaped on its own). Thinking is not shown. The text of every
/// round is shown (which round answers is known only when it ends); a round whose text is the
/// answer makes [`answer_streamed`] true, so the answer is on the screen once.
pub(crate) struct Stream {
    state: Mutex<StreamState>,
}

#[derive(Default)]
struct StreamState {
    /// The last line written has no newline yet.
    open: bool,
    /// The text of this attempt at the round's response, as the deltas brought it.
    attempt: String,
    /// stdout went away: write no more.
    closed: bool,
}

impl Stream {
    pub(crate) fn new() -> Stream {
        if let Ok(mut shown) = STREAMED.lock() {
            *shown = None;
        }
        Stream {
            state: Mutex::new(StreamState::default()),
        }
    }

    fn write(state: &mut StreamState, bytes: &[u8]) {
        use std::io::Write;
        if state.closed {
            return;
        }
        let mut out = std::io::stdout().lock();
        if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
            state.closed = true;
        }
    }

    /// Ends a line left open, and gives the progress display its place back.
    fn end_line(&self) {
        if let Ok(mut s) = self.state.lock()
            && s.open
        {
            s.open = false;
            Stream::write(&mut s, b"\n");
        }
        release_progress();
    }
}

impl Observer for Stream {
    fn round_started(&self, _round: u32) {
        if let Ok(mut s) = self.state.lock() {
            s.attempt.clear();
        }
    }

    fn text_delta(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let Ok(mut s) = self.state.lock() else { return };
        if !s.open {
            hold_progress();
        }
        Stream::write(&mut s, terminal::text(text).as_bytes());
        s.open = !text.ends_with('\n');
        s.attempt.push_str(text);
    }

    fn tool_use(&self, _call: &ToolUse) {
        self.end_line();
    }

    /// The attempt's text is discarded; what it showed stays on the screen above the retry's.
    fn retry(&self, _note: &RetryNote) {
        self.end_line();
        if let Ok(mut s) = self.state.lock() {
            s.attempt.clear();
        }
    }

    fn round_finished(&self, round: &Round) {
        self.end_line();
        let texts: Vec<&str> = round
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { text, .. } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        // Shown only when the deltas were all of it (a provider could send a block whole).
        let whole = self
            .state
            .lock()
            .is_ok_and(|s| !s.closed && s.attempt == texts.concat());
        if let Ok(mut shown) = STREAMED.lock() {
            *shown = whole.then(|| crate::agent::final_text(&round.blocks));
        }
    }

    fn finished(&self, _end: &End) {
        self.end_line();
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
