//! The runs kept under `$ROUNDS_HOME/runs/DATE/RUN_ID.jsonl`: their ids, finding one (by file,
//! by id, the newest, the newest for a workspace), summing each up for `rounds runs`, and
//! pruning old ones. A summary reads only a transcript's first and last lines, so listing stays
//! cheap however long the runs were.
//!
//! Nothing here follows a symlink inside the runs directory or removes anything outside it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::conversation::Usage;
use crate::transcript::{Line, Record, Start, VERSION};

/// The directory under `$ROUNDS_HOME` that holds one folder per day.
pub(crate) const DIR: &str = "runs";

/// How many transcripts, newest first, a search for a workspace's newest run reads the start of
/// before giving up.
pub(crate) const MAX_SCAN: usize = 1000;

/// The longest first or last line read from a transcript for a summary. A start line holds the
/// prompt (stdin included, up to 16 MiB, escaped as JSON); a last line the final answer or a
/// round's capped tool results.
const MAX_LINE: u64 = 64 * 1024 * 1024;

/// A run id: the start time in UTC to the millisecond, then random hex, e.g.
/// `20260102T130405.123Z-1a2b3c4d`. Ids sort by time; the hex tells apart runs started in the
/// same millisecond.
pub fn new_id(now: jiff::Timestamp, salt: u32) -> String {
    format!("{}-{salt:08x}", now.strftime("%Y%m%dT%H%M%S%.3fZ"))
}

/// Where the transcript of `run_id` goes by default: under the day the id starts with (so the
/// folder and the id never disagree about a run that started at midnight).
pub(crate) fn transcript_path(home: &Path, run_id: &str) -> PathBuf {
    let day =
        day_of(run_id).unwrap_or_else(|| jiff::Timestamp::now().strftime("%Y-%m-%d").to_string());
    home.join(DIR).join(day).join(format!("{run_id}.jsonl"))
}

/// `2026-01-02` for an id starting `20260102T`.
fn day_of(run_id: &str) -> Option<String> {
    let digits = run_id.get(..8)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) || run_id.as_bytes().get(8) != Some(&b'T') {
        return None;
    }
    Some(format!(
        "{}-{}-{}",
        &digits[..4],
        &digits[4..6],
        &digits[6..]
    ))
}

/// Whether `which` (as `rounds show` and `--resume` take it, resolved to `path`) names a run by
/// its id rather than a file: it is no file, it can be a run id, and it does not end in
/// `.jsonl` (a missing transcript file is said to be missing, not looked for as a run).
pub(crate) fn names_a_run_id(which: &str, path: &Path) -> bool {
    !path.exists() && is_run_id(which) && !which.ends_with(".jsonl")
}

/// Whether `text` can be a run id (and so a file name): letters, digits, `.`, `_`, `-`, not
/// starting with `.`.
pub(crate) fn is_run_id(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('.')
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The transcripts under `runs`, newest first: day folders by name, then transcripts by name
/// (run ids sort by time). Symlinks are not followed.
pub(crate) fn newest_first(runs: &Path) -> impl Iterator<Item = PathBuf> {
    let mut days = entries(runs, |t| t.is_dir());
    days.sort();
    days.into_iter().rev().flat_map(|day| {
        let mut files = entries(&day, |t| t.is_file());
        files.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
        files.sort();
        files.into_iter().rev()
    })
}

/// The entries of `dir` whose own type (not a symlink's target) passes `keep`.
fn entries(dir: &Path, keep: impl Fn(std::fs::FileType) -> bool) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    read.flatten()
        .filter(|e| e.file_type().is_ok_and(&keep))
        .map(|e| e.path())
        .collect()
}

/// The newest transcript under `runs`; with `workspace`, the newest whose start line names that
/// workspace (a canonical path, as start lines record it), among the newest [`MAX_SCAN`].
pub(crate) fn newest(runs: &Path, workspace: Option<&Path>) -> Option<PathBuf> {
    let mut all = newest_first(runs);
    let Some(workspace) = workspace else {
        return all.next();
    };
    all.take(MAX_SCAN)
        .find(|path| read_start(path).is_ok_and(|start| Path::new(&start.workspace) == workspace))
}

/// The transcript of run `run_id` under `runs`: in the day folder its id names, else in any.
pub(crate) fn find(runs: &Path, run_id: &str) -> Option<PathBuf> {
    if !is_run_id(run_id) {
        return None;
    }
    let name = format!("{run_id}.jsonl");
    let is_file = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
    if let Some(path) = day_of(run_id).map(|d| runs.join(d).join(&name))
        && is_file(&path)
    {
        return Some(path);
    }
    let mut days = entries(runs, |t| t.is_dir());
    days.sort();
    days.into_iter()
        .rev()
        .map(|day| day.join(&name))
        .find(|p| is_file(p))
}

/// Opens a regular file for reading without blocking on a FIFO, checking the opened file.
fn open_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// Why a transcript's first or last line could not be read (what `rounds runs` shows as the
/// run's error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LineError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("unsupported transcript version {0}")]
    Version(u32),
    #[error("the first line is not a start line")]
    NotStart,
}

/// The start line of the transcript at `path`, reading nothing after it.
pub(crate) fn read_start(path: &Path) -> Result<Start, LineError> {
    let file = open_regular(path)?;
    let mut line = Vec::new();
    BufReader::new(file.take(MAX_LINE)).read_until(b'\n', &mut line)?;
    match parse_record(&line)? {
        Line::Start(start) => Ok(start),
        _ => Err(LineError::NotStart),
    }
}

fn parse_record(line: &[u8]) -> Result<Line, LineError> {
    let record: Record = serde_json::from_slice(line)?;
    if record.v != VERSION {
        return Err(LineError::Version(record.v));
    }
    Ok(record.line)
}

/// The last line of `file` (without its newline), read from the end in growing windows.
fn last_line(file: &mut File) -> io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    let mut window: u64 = 64 * 1024;
    loop {
        let from = len.saturating_sub(window);
        file.seek(SeekFrom::Start(from))?;
        let mut buf = Vec::new();
        file.take(len - from).read_to_end(&mut buf)?;
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if let Some(i) = memchr::memrchr(b'\n', body) {
            return Ok(body[i + 1..].to_vec());
        }
        if from == 0 {
            return Ok(body.to_vec());
        }
        if window >= MAX_LINE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the last line is too long",
            ));
        }
        window *= 4;
    }
}

/// One run as `rounds runs` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub path: PathBuf,
    pub run_id: String,
    /// When it started (RFC 3339, UTC).
    pub time: String,
    pub provider: String,
    pub model: String,
    pub workspace: String,
    /// The prompt's first line.
    pub prompt: String,
    /// The end line's status; `unfinished` for a run without one (still running, or killed),
    /// `unreadable` for a file that is not a transcript (`error` says why).
    pub status: String,
    /// Rounds finished: the end line's count, or the last round line's number.
    pub rounds: u32,
    /// The whole run's usage (only finished runs carry it).
    pub usage: Option<Usage>,
    pub cost_usd: Option<f64>,
    pub resumed_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Sums up the transcript at `path` from its first and last lines.
pub(crate) fn summarize(path: &Path) -> Summary {
    let mut summary = Summary {
        path: path.to_owned(),
        run_id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        time: String::new(),
        provider: String::new(),
        model: String::new(),
        workspace: String::new(),
        prompt: String::new(),
        status: "unreadable".into(),
        rounds: 0,
        usage: None,
        cost_usd: None,
        resumed_from: None,
        error: None,
    };
    let start = match read_start(path) {
        Ok(start) => start,
        Err(e) => {
            summary.error = Some(e.to_string());
            return summary;
        }
    };
    summary.prompt = start.user_prompt().lines().next().unwrap_or("").to_owned();
    summary.run_id = start.run_id;
    summary.time = start.time;
    summary.provider = start.provider;
    summary.model = start.model;
    summary.workspace = start.workspace;
    summary.resumed_from = start.resumed_from;
    summary.status = "unfinished".into();
    let last = open_regular(path).and_then(|mut f| last_line(&mut f));
    match last.map_err(LineError::from).and_then(|l| parse_record(&l)) {
        Ok(Line::End(end)) => {
            summary.status = end.status.as_str().into();
            summary.rounds = end.rounds;
            summary.usage = Some(end.usage);
            summary.cost_usd = end.cost_usd;
        }
        Ok(Line::Round(round)) => summary.rounds = round.round,
        // The last line of a run killed while a subagent worked: its rounds are not known here.
        Ok(Line::Start(_) | Line::AgentStart(_) | Line::AgentRound(_) | Line::AgentEnd(_)) => {}
        // A torn last line: the run was killed while writing it.
        Err(e) => summary.error = Some(format!("the last line is unreadable: {e}")),
    }
    summary
}

/// The newest `limit` runs under `runs` (every run when `limit` is 0), newest first.
pub(crate) fn list(runs: &Path, limit: usize) -> Vec<Summary> {
    let limit = if limit == 0 { usize::MAX } else { limit };
    newest_first(runs)
        .take(limit)
        .map(|p| summarize(&p))
        .collect()
}

/// A text that is not an age (`--older-than`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected an age such as 30d, 12h or 2w, got {0:?}")]
pub(crate) struct BadAge(pub String);

/// An age such as `30d`: a whole number and one of `s`, `m`, `h`, `d`, `w`.
pub(crate) fn parse_age(text: &str) -> Result<Duration, BadAge> {
    let bad = || BadAge(text.to_owned());
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    match n.checked_mul(secs) {
        Some(s) if s > 0 => Ok(Duration::from_secs(s)),
        _ => Err(bad()),
    }
}

/// What a prune removed (or, dry, would remove).
#[derive(Debug, Default)]
pub(crate) struct Pruned {
    /// Transcripts and `.outputs` folders, in the order removed.
    pub(crate) removed: Vec<PathBuf>,
    /// Old transcripts kept because a newer run resumed from them (its `--resume` needs them).
    pub(crate) kept: Vec<PathBuf>,
    pub(crate) bytes: u64,
    pub(crate) errors: Vec<(PathBuf, String)>,
}

/// Removes every transcript under `runs` last written before `cutoff`, with its `.outputs`
/// folder, and `.outputs` folders left without their transcript; then empty day folders. A
/// transcript that a kept run was resumed from is kept too: the newer run's `--resume` reads
/// the whole chain. With `dry_run`, only reports.
pub(crate) fn prune(runs: &Path, cutoff: SystemTime, dry_run: bool) -> Pruned {
    let old = |meta: &std::fs::Metadata| meta.modified().is_ok_and(|t| t < cutoff);
    let mut days = entries(runs, |t| t.is_dir());
    days.sort();
    // Transcripts to go, and every transcript a run that stays continues.
    let mut doomed = Vec::new();
    let mut needed = std::collections::HashSet::new();
    for day in &days {
        for path in entries(day, |t| t.is_file()) {
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            if std::fs::symlink_metadata(&path).is_ok_and(|m| old(&m)) {
                doomed.push(path);
            } else {
                needed.extend(chain_of(&path));
            }
        }
    }
    let mut pruned = Pruned::default();
    // A kept run's chain may pass through doomed runs that in turn resumed older ones.
    let mut kept_any = true;
    while kept_any {
        kept_any = false;
        doomed.retain(|path| {
            let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            if needed.contains(&canonical) {
                needed.extend(chain_of(path));
                pruned.kept.push(path.clone());
                kept_any = true;
                false
            } else {
                true
            }
        });
    }
    doomed.sort();
    for path in doomed {
        let outputs = path.with_extension("outputs");
        remove(&path, dry_run, &mut pruned);
        if std::fs::symlink_metadata(&outputs).is_ok() {
            remove(&outputs, dry_run, &mut pruned);
        }
    }
    for day in &days {
        for outputs in entries(day, |t| t.is_dir()) {
            let orphan = outputs.extension().is_some_and(|e| e == "outputs")
                && std::fs::symlink_metadata(outputs.with_extension("jsonl")).is_err();
            if orphan && std::fs::symlink_metadata(&outputs).is_ok_and(|m| old(&m)) {
                remove(&outputs, dry_run, &mut pruned);
            }
        }
        if !dry_run {
            // Only an empty folder goes; a failure means it still holds something.
            let _ = std::fs::remove_dir(day);
        }
    }
    pruned
}

/// The transcripts the run at `path` resumed from, as canonical paths.
fn chain_of(path: &Path) -> Vec<PathBuf> {
    read_start(path)
        .ok()
        .and_then(|s| s.resumed_from)
        .map(|p| vec![std::fs::canonicalize(&p).unwrap_or_else(|_| PathBuf::from(p))])
        .unwrap_or_default()
}

/// Removes a transcript, or a folder with everything in it; a symlink is removed, not
/// followed.
fn remove(path: &Path, dry_run: bool, pruned: &mut Pruned) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let bytes = if meta.is_dir() {
        size_of_tree(path)
    } else {
        meta.len()
    };
    let removed = if dry_run {
        Ok(())
    } else if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Ok(()) => {
            pruned.bytes += bytes;
            pruned.removed.push(path.to_owned());
        }
        Err(e) => pruned.errors.push((path.to_owned(), e.to_string())),
    }
}

fn size_of_tree(dir: &Path) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else {
        return 0;
    };
    read.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => size_of_tree(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests;
