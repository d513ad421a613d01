//! Everything a batch prints. On a terminal's stderr: one bar for the batch (done, running,
//! failed, ETA) and a line per running job; elsewhere nothing until the final table. stdout
//! carries only what a command is asked for (a queued batch's id, `batch status`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::jobs::BadLine;
use super::report::Summary;
use crate::terminal;

/// The live view of a running batch; does nothing off a terminal or with `-q`.
pub(crate) struct Display {
    live: Option<Live>,
}

struct Live {
    multi: MultiProgress,
    bar: ProgressBar,
    state: Mutex<LiveState>,
}

#[derive(Default)]
struct LiveState {
    running: HashMap<usize, (ProgressBar, String)>,
    failed: u64,
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// ` (ETA 2m)` once a job has finished: before that there is no rate to tell it from, and
/// indicatif's estimate would say 0s.
fn eta_once(state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
    if state.pos() > 0 {
        let _ = write!(w, " (ETA {:#})", indicatif::HumanDuration(state.eta()));
    }
}

impl Display {
    pub(crate) fn new(total: u64, quiet: bool) -> Display {
        if quiet || !std::io::stderr().is_terminal() {
            return Display { live: None };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let bar = multi.add(ProgressBar::new(total));
        bar.set_style(
            style("{bar:30.cyan/blue} {pos}/{len} done · {msg} · {elapsed}{eta_once}")
                .with_key("eta_once", eta_once),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        let display = Display {
            live: Some(Live {
                multi,
                bar,
                state: Mutex::new(LiveState::default()),
            }),
        };
        display.refresh();
        display
    }

    fn refresh(&self) {
        let Some(live) = &self.live else { return };
        if let Ok(s) = live.state.lock() {
            live.bar
                .set_message(format!("{} running, {} failed", s.running.len(), s.failed));
        }
    }

    pub(crate) fn started(&self, key: usize, id: &str) {
        let Some(live) = &self.live else { return };
        let line = live.multi.add(ProgressBar::new_spinner());
        line.set_style(style("  {spinner:.green} {msg} {elapsed:.dim}"));
        let name: String = id.chars().take(60).collect();
        let name = terminal::line(&name).into_owned();
        line.set_message(format!("{name}: starting"));
        line.enable_steady_tick(Duration::from_millis(150));
        if let Ok(mut s) = live.state.lock() {
            s.running.insert(key, (line, name));
        }
        self.refresh();
    }

    pub(crate) fn round(&self, key: usize, round: u32) {
        let Some(live) = &self.live else { return };
        if let Ok(s) = live.state.lock()
            && let Some((line, name)) = s.running.get(&key)
        {
            line.set_message(format!("{name}: round {round}"));
        }
    }

    pub(crate) fn finished(&self, key: usize, completed: bool) {
        let Some(live) = &self.live else { return };
        if let Ok(mut s) = live.state.lock() {
            if let Some((line, _)) = s.running.remove(&key) {
                line.finish_and_clear();
                live.multi.remove(&line);
            }
            s.failed += u64::from(!completed);
        }
        live.bar.inc(1);
        self.refresh();
    }
}

impl Display {
    /// Takes the live view off the terminal, before the final table.
    pub(crate) fn clear(&self) {
        if let Some(live) = &self.live {
            live.bar.finish_and_clear();
            let _ = live.multi.clear();
        }
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The lines of the jobs file that are no jobs, each with its number.
pub(crate) fn bad_lines(source: &str, bad: &[BadLine]) {
    let mut err = std::io::stderr().lock();
    for b in bad {
        let _ = writeln!(
            err,
            "rounds: {}, line {}: {}",
            terminal::line(source),
            b.line,
            terminal::line(&b.message)
        );
    }
}

/// What went wrong while the batch goes on (a queue that failed, a job this worker cannot
/// run, a report that could not be written), said as any command's failure is.
pub(crate) fn error(e: super::BatchError) {
    crate::render::print_failure(e.status(), &crate::redact::environment(e.to_string()));
}

pub(crate) fn warning(message: &str) {
    eprintln!("rounds: warning: {}", terminal::text(message));
}

/// One line of a command's product on stdout (a queued batch's id, a status table).
pub(crate) fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// The table that closes a batch, on stderr.
pub(crate) fn summary(s: &Summary, results: Option<&std::path::Path>, backoffs: u32, seconds: f64) {
    let mut text = format!("rounds batch: {} in {seconds:.1}s\n", s.headline());
    // A status read back from the store or an earlier results.jsonl is only a string.
    for (status, n) in &s.by_status {
        let status = terminal::line(status);
        text.push_str(&format!("  {status:<14} {n:>6}\n"));
    }
    if s.bad_lines > 0 {
        text.push_str(&format!("  {:<14} {:>6}\n", "bad lines", s.bad_lines));
    }
    let u = &s.usage;
    let cost = s.cost_usd.map_or(String::new(), |c| format!(", ${c:.4}"));
    text.push_str(&format!(
        "  tokens: {} in ({} read from the cache), {} out{cost}\n",
        u.input_total(),
        u.cache_read_tokens,
        u.output_tokens
    ));
    if backoffs > 0 {
        text.push_str(&format!(
            "  rate limited: {backoffs} shared backoff{}\n",
            if backoffs == 1 { "" } else { "s" }
        ));
    }
    if !s.slowest.is_empty() {
        let slow: Vec<String> = s
            .slowest
            .iter()
            .map(|(id, ms)| format!("{} {:.1}s", terminal::line(id), *ms as f64 / 1000.0))
            .collect();
        text.push_str(&format!("  slowest: {}\n", slow.join(", ")));
    }
    if let Some(path) = results {
        let path = path.display().to_string();
        text.push_str(&format!("  results: {}\n", terminal::line(&path)));
    }
    eprint!("{text}");
}
