//! Everything rounds prints. stdout carries the product only (the final answer, or one JSON
//! object); errors and the summary go to stderr. A closed stdout (`| head -1`) is not an error.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use crate::agent::{Cancel, Fanout, Observer};
use crate::cli::OutputMode;
use crate::conversation::Class;
use crate::inventory::Inventory;
use crate::outcome::{Outcome, Status};
use crate::process::sandbox::Summary;
use crate::progress::Progress;
use crate::terminal;
use crate::tools::presets::Preset;
use crate::transcript::{End, Event, VERSION};

mod stream_json;
use stream_json::{StreamJson, Versioned};

/// Who hears about a run as it happens: events on stdout in stream-json mode, the answer's
/// text as it streams in text mode when stdout is a terminal (a pipe gets the final answer
/// only), and progress on a terminal's stderr unless quiet.
/// A reader of the event stream that goes away ends the run (`cancel`): no more tokens are
/// spent on events nobody reads.
pub(crate) fn observer(
    mode: OutputMode,
    quiet: bool,
    max_rounds: u32,
    cancel: &Cancel,
) -> Arc<dyn Observer> {
    let mut all: Vec<Arc<dyn Observer>> = Vec::new();
    if mode == OutputMode::StreamJson {
        all.push(Arc::new(StreamJson::new(cancel.clone())));
    }
    // Before the progress display: the text takes the display off the screen before it writes.
    if mode == OutputMode::Text && std::io::stdout().is_terminal() {
        all.push(Arc::new(crate::progress::Stream::new()));
    }
    if !quiet && let Some(progress) = Progress::for_terminal(max_rounds) {
        all.push(Arc::new(progress));
    }
    Arc::new(Fanout(all))
}

/// Prints the run's result on stdout in the chosen mode.
pub(crate) fn print_outcome(mode: OutputMode, outcome: &Outcome) {
    let mut bytes = match mode {
        // The events already told everything, ending with `end` — except for a run that never
        // started, which gets an `end` event here so stdout always ends with one.
        OutputMode::StreamJson if outcome.status != Status::Usage => return,
        OutputMode::StreamJson => match serde_json::to_vec(&Versioned {
            v: VERSION,
            event: Event::End(&End::from(outcome)),
        }) {
            Ok(b) => b,
            Err(_) => return,
        },
        OutputMode::Text => {
            if outcome.final_text.is_empty() {
                return;
            }
            // A person reads a terminal, and the answer is the model's: it must not drive the
            // terminal. Into a pipe it goes byte for byte.
            if std::io::stdout().is_terminal() {
                if crate::progress::answer_streamed(&outcome.final_text) {
                    return;
                }
                terminal::text(&outcome.final_text)
                    .into_owned()
                    .into_bytes()
            } else {
                outcome.final_text.clone().into_bytes()
            }
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

/// `rounds export`: the rebuilt transcript, on stdout as it is.
pub(crate) fn print_export(jsonl: &str) {
    let mut out = std::io::stdout().lock();
    // As for the answer: a reader that went away has all it wanted.
    let _ = out.write_all(jsonl.as_bytes()).and_then(|()| out.flush());
}

/// A document for stdout as it is (a completion script, a man page).
pub(crate) fn print_document(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// Text for a person, through a pager when `page` (stdout is a terminal): `$PAGER` run with
/// `sh -c`, else `less`, with `LESS=FRX` unless set (quit at once when it fits one screen, keep
/// colours, leave the screen as it is). A pager that cannot start means printing directly.
pub(crate) fn print_paged(text: &str, page: bool) {
    if page && through_pager(text) {
        return;
    }
    print_document(text.as_bytes());
}

fn through_pager(text: &str) -> bool {
    use std::process::{Command, Stdio};
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "less".into());
    if pager.trim() == "cat" {
        return false;
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&pager).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        cmd.env("LESS", "FRX");
    }
    let Ok(mut child) = cmd.spawn() else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A pager quit early (q) closes the pipe: not an error.
        let _ = stdin.write_all(text.as_bytes());
    }
    let _ = child.wait();
    true
}

/// `rounds runs`: a table (time, status, rounds, tokens, prompt; the transcript below), or one
/// JSON array.
pub(crate) fn print_runs(json: bool, runs: &[crate::runs::Summary], dir: &std::path::Path) {
    let mut out = String::new();
    if json {
        out = serde_json::to_string_pretty(runs).unwrap_or_default();
        out.push('\n');
    } else if runs.is_empty() {
        eprintln!(
            "rounds: no runs under {}",
            terminal::line(&dir.display().to_string())
        );
        return;
    } else {
        out.push_str(&format!(
            "{:23}  {:12}  {:>6}  {:>15}  PROMPT\n",
            "STARTED (UTC)", "STATUS", "ROUNDS", "TOKENS IN/OUT"
        ));
        for r in runs {
            let time = r
                .time
                .parse::<jiff::Timestamp>()
                .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_else(|_| terminal::line(&r.time).into_owned());
            let tokens = r.usage.map_or("-".to_owned(), |u| {
                format!("{}/{}", u.input_total(), u.output_tokens)
            });
            let prompt = match &r.error {
                Some(e) if r.status == "unreadable" => e.clone(),
                _ => r.prompt.clone(),
            };
            out.push_str(&format!(
                "{time:23}  {:12}  {:>6}  {tokens:>15}  {}\n",
                r.status,
                r.rounds,
                terminal::line(&shorten(&prompt, 60))
            ));
            let path = r.path.display().to_string();
            out.push_str(&format!("{:23}  {}\n", "", terminal::line(&path)));
        }
    }
    print_document(out.as_bytes());
}

/// At most `max` characters of `text`, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// `rounds runs --prune`: what went (or would go) and what stayed and why (what could not be
/// removed is the command's failure, said by `commands::report`).
pub(crate) fn print_pruned(pruned: &crate::runs::Pruned, dry_run: bool) {
    let verb = if dry_run { "would remove" } else { "removed" };
    let mut out = String::new();
    for path in &pruned.removed {
        out.push_str(&format!(
            "{verb} {}\n",
            terminal::line(&path.display().to_string())
        ));
    }
    for path in &pruned.kept {
        out.push_str(&format!(
            "kept {} (a newer run was resumed from it)\n",
            terminal::line(&path.display().to_string())
        ));
    }
    let runs = pruned
        .removed
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .count();
    out.push_str(&format!(
        "{verb} {runs} run{} ({:.1} MiB)\n",
        if runs == 1 { "" } else { "s" },
        pruned.bytes as f64 / 1024.0 / 1024.0
    ));
    print_document(out.as_bytes());
}

/// The stderr lines that close a run: the error if any, then a one-line summary.
pub(crate) fn print_summary(outcome: &Outcome, quiet: bool) {
    if let Some(error) = &outcome.error {
        print_failure(outcome.status, error);
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
    let cost = match outcome.cost_usd {
        Some(usd) => format!(", ${usd:.4}"),
        None => String::new(),
    };
    let u = &outcome.usage;
    let cached = match (u.cache_read_tokens, u.cache_write_tokens) {
        (0, 0) => String::new(),
        (read, written) => format!(" ({read} read from the cache, {written} written to it)"),
    };
    line.push_str(&format!(
        ", {} in{cached} / {} out tokens{cost}, {:.1}s",
        u.input_total(),
        u.output_tokens,
        outcome.duration_ms as f64 / 1000.0
    ));
    if let Some(path) = &outcome.transcript {
        let path = path.display().to_string();
        line.push_str(&format!("; transcript {}", terminal::line(&path)));
    }
    eprintln!("{line}");
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// An error on stderr, labelled (`error`, `usage error`).
/// An error on stderr: `rounds: usage error: …` for what the user can fix (exit 2), else
/// `rounds: error: …`.
pub(crate) fn print_failure(status: Status, message: &str) {
    let label = match status {
        Status::Usage => "usage error",
        _ => "error",
    };
    eprintln!("rounds: {label}: {}", terminal::text(message));
}

/// `rounds tools`: a table (name, class, offered, origin, then the description), or one JSON
/// array with the schemas.
pub(crate) fn print_tool_list(json: bool, inventory: &Inventory) {
    let tools = &inventory.tools;
    let mut out = String::new();
    if json {
        out = serde_json::to_string_pretty(tools).unwrap_or_default();
        out.push('\n');
    } else {
        let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
        let offered = |t: &crate::inventory::Listed| match (t.offered, t.preset) {
            (true, Some(flag)) => flag,
            (true, None) => "yes",
            (false, _) => "no",
        };
        // As wide as "OFFERED", or the preset flag that stands in it.
        let column = tools
            .iter()
            .map(|t| offered(t).len())
            .max()
            .unwrap_or(0)
            .max(7);
        out.push_str(&format!(
            "{:width$}  {:8}  {:column$}  ORIGIN\n",
            "TOOL", "CLASS", "OFFERED"
        ));
        for t in tools {
            let class = match t.class {
                Class::Safe => "safe",
                Class::Mutating => "mutating",
            };
            let offered = offered(t);
            // Names, origins and descriptions can come from an MCP server: shown, not obeyed.
            out.push_str(&format!(
                "{:width$}  {class:8}  {offered:column$}  {}\n",
                terminal::line(&t.name),
                terminal::line(&t.origin)
            ));
            let first = terminal::line(first_sentence(&t.description));
            for line in wrap(&first, columns().map(|c| c.saturating_sub(width + 2))) {
                out.push_str(&format!("{:width$}  {line}\n", ""));
            }
        }
        out.push_str(&presets_line(&inventory.presets));
        out.push_str(&agents_line(&inventory.agents));
        out.push_str(&sandbox_line(&inventory.sandbox));
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
}

/// The terminal's width when stdout is one; into a pipe, lines are not wrapped.
fn columns() -> Option<usize> {
    let term = console::Term::stdout();
    term.is_term()
        .then(|| term.size_checked())
        .flatten()
        .map(|(_, cols)| usize::from(cols))
}

/// `text` in lines of at most `width` characters (at least 20), broken at spaces; one line
/// when there is no width.
fn wrap(text: &str, width: Option<usize>) -> Vec<String> {
    let Some(width) = width.map(|w| w.max(20)) else {
        return vec![text.to_owned()];
    };
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// `rounds tools`: the presets there are, what each offers, and which these flags turned on.
fn presets_line(on: &[Preset]) -> String {
    let each: Vec<String> = Preset::ALL
        .iter()
        .map(|p| {
            let state = if on.contains(p) { "on" } else { "off" };
            format!("{} ({}): {state}", p.flag(), p.tools().join(", "))
        })
        .collect();
    format!(
        "\nPresets: {}; bash runs in the sandbox below.\n",
        each.join("; ")
    )
}

/// The agents `task` may start (`-a task` offers it; `--agents FILE` defines more).
fn agents_line(agents: &[crate::tools::delegate::AgentBrief]) -> String {
    let mut names = vec!["general (the run's tools)".to_owned()];
    names.extend(agents.iter().map(|a| {
        format!(
            "{} ({})",
            terminal::line(&a.name),
            terminal::line(first_sentence(&a.description))
        )
    }));
    format!(
        "Agents for task: {}; only -a task (or task(NAME)) offers it.\n",
        names.join(", ")
    )
}

/// `rounds tools`' last line: the sandbox tool processes run in, and what of it is in force.
fn sandbox_line(s: &Summary) -> String {
    let e = &s.enforced;
    let enforced: Vec<&str> = [
        (e.filesystem, "filesystem"),
        (e.network_tcp && e.network_other, "network"),
        (e.processes, "other processes"),
        (e.signals, "signals"),
    ]
    .iter()
    .filter_map(|(on, what)| on.then_some(*what))
    .collect();
    let network = if s.network { "on" } else { "off" };
    let enforced = match enforced.as_slice() {
        [] => "nothing enforced".to_owned(),
        some => format!("enforced: {}", some.join(", ")),
    };
    format!(
        "\nTool processes run in the sandbox {} (network {network}; {enforced}; Landlock ABI {}).\n",
        s.mode.name(),
        s.landlock_abi
    )
}

/// Up to the first ". " followed by a capital letter, so "e.g. `*.rs`" stays in the sentence.
fn first_sentence(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    let end = line
        .match_indices(". ")
        .find(|(i, _)| line[i + 2..].starts_with(|c: char| c.is_uppercase()))
        .map_or(line.len(), |(i, _)| i);
    line[..end].trim_end_matches('.')
}

/// How log lines look on stderr: `rounds: warning: …`, like every other line rounds writes
/// there, with control characters escaped (a warning may quote a tool server or a provider).
pub(crate) struct LogStyle;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for LogStyle
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        use tracing_subscriber::fmt::FormatFields;
        let mut message = String::new();
        ctx.format_fields(
            tracing_subscriber::fmt::format::Writer::new(&mut message),
            event,
        )?;
        writeln!(writer, "rounds: {level}: {}", terminal::text(&message))
    }
}

/// Log lines go to stderr through [`crate::progress::eprint_above`], one whole line at a time.
pub(crate) struct LogWriter;

/// One log line being formatted.
pub(crate) struct LogLine(Vec<u8>);

impl std::io::Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        crate::progress::eprint_above(&self.0);
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine(Vec::new())
    }
}

/// Whether stdout and stderr get colour: `--color always|never`, else (auto) only on a
/// terminal and never when `NO_COLOR` is set (to anything).
pub(crate) fn set_color(choice: crate::cli::Color) {
    use crate::cli::Color;
    let allowed = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let on = |terminal: bool| match choice {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => allowed && terminal,
    };
    console::set_colors_enabled_stderr(on(std::io::stderr().is_terminal()));
    console::set_colors_enabled(on(std::io::stdout().is_terminal()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_wrap_at_spaces_to_the_width_and_not_into_a_pipe() {
        let text = "Search file contents in the workspace with a regular expression, matched line by line.";
        let lines = wrap(text, Some(30));
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(wrap(text, None), vec![text.to_owned()]);
        // A width too small to be useful is raised to 20.
        assert!(
            wrap(text, Some(3))
                .iter()
                .all(|l| l.chars().count() <= 20 || !l.contains(' '))
        );
    }
}
