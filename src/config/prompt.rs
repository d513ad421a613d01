//! The prompt: from the words, `-f FILE`, or stdin (read once, bounded, text only).

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use super::ConfigError;
use crate::cli::Cli;

/// Larger input would not fit any model's context; refusing is clearer than truncating.
pub(super) const MAX_STDIN_BYTES: u64 = 16 * 1024 * 1024;

/// What is on the other end of stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StdinKind {
    Terminal,
    /// A pipe or a regular file: something a user deliberately fed us.
    Piped,
    /// Closed, /dev/null, a socket: nothing to read.
    Nothing,
}

/// Looks at the process's real stdin.
pub(crate) fn stdin_kind() -> StdinKind {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return StdinKind::Terminal;
    }
    match std::fs::metadata("/dev/stdin") {
        Ok(m) => {
            use std::os::unix::fs::FileTypeExt;
            let t = m.file_type();
            if t.is_fifo() || t.is_file() {
                StdinKind::Piped
            } else {
                StdinKind::Nothing
            }
        }
        Err(_) => StdinKind::Nothing,
    }
}

/// Reads the real stdin to its end, bounded. If a pipe stays silent for a while, says on stderr
/// what rounds is waiting for, so a CI step that hangs explains itself. `deadline` is the run's
/// (`--timeout`, counted from rounds' start): waiting for stdin is part of the run, so a pipe
/// still open then ends it as a timeout (`sleep 7 | rounds --timeout 2 x` must not complete
/// after 7 s).
pub(crate) fn read_real_stdin(
    quiet: bool,
    deadline: Option<(Instant, Duration)>,
) -> Result<String, ConfigError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = std::io::stdin()
            .take(MAX_STDIN_BYTES + 1)
            .read_to_end(&mut buf)
            .map(|_| buf);
        let _ = tx.send(r);
    });
    let result = match wait(&rx, Some(Instant::now() + STDIN_PATIENCE), deadline)? {
        Some(r) => r,
        None => {
            if !quiet {
                tracing::warn!("still reading stdin (a pipe); pass --no-stdin to skip it");
            }
            wait(&rx, None, deadline)?
                .ok_or_else(|| ConfigError::Stdin(std::io::ErrorKind::BrokenPipe.into()))?
        }
    };
    let bytes = result.map_err(ConfigError::Stdin)?;
    if bytes.len() as u64 > MAX_STDIN_BYTES {
        return Err(ConfigError::StdinTooLarge);
    }
    text_input(bytes, "stdin").map_err(ConfigError::BinaryStdin)
}

/// How long a silent pipe is waited for before rounds says what it is waiting for.
const STDIN_PATIENCE: Duration = Duration::from_secs(3);

/// What the reader sent by `until` (`None` when it had not, or when it went away), or the run's
/// deadline (`deadline`: when, and the `--timeout` it came from) if that comes first.
fn wait<T>(
    rx: &std::sync::mpsc::Receiver<T>,
    until: Option<Instant>,
    deadline: Option<(Instant, Duration)>,
) -> Result<Option<T>, ConfigError> {
    use std::sync::mpsc::RecvTimeoutError;
    let end = match (until, deadline) {
        (Some(u), Some((d, _))) => Some(u.min(d)),
        (u, d) => u.or(d.map(|(d, _)| d)),
    };
    let Some(end) = end else {
        return Ok(rx.recv().ok());
    };
    match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
        Ok(r) => Ok(Some(r)),
        Err(RecvTimeoutError::Disconnected) => Ok(None),
        Err(RecvTimeoutError::Timeout) => match deadline {
            Some((at, timeout)) if Instant::now() >= at => Err(ConfigError::StdinDeadline {
                secs: timeout.as_secs_f64(),
            }),
            _ => Ok(None),
        },
    }
}

/// Input a user gave as text (stdin, `-f FILE`). Only what is really binary (it holds a NUL
/// byte) is refused, rather than sent as a page of U+FFFD: a model cannot read it, and a file
/// in the workspace is how to give it one. Text with bytes that are not UTF-8 (a Latin-1 file
/// in `git diff`) is decoded lossily, said once on stderr. `Err` holds the input's size.
pub(super) fn text_input(bytes: Vec<u8>, what: &str) -> Result<String, usize> {
    if bytes.contains(&0) {
        return Err(bytes.len());
    }
    Ok(String::from_utf8(bytes).unwrap_or_else(|e| {
        tracing::warn!(
            "{what} is not UTF-8: the bytes that are not are sent as U+FFFD (convert it, e.g. \
             with iconv -f latin1 -t utf-8, to keep them)"
        );
        String::from_utf8_lossy(e.as_bytes()).into_owned()
    }))
}

/// `-f FILE`: text by the same rule as stdin.
fn prompt_file(path: &Path) -> Result<String, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::File {
        what: "prompt file",
        path: path.to_owned(),
        source,
    })?;
    text_input(bytes, &format!("prompt file {}", path.display())).map_err(|bytes| {
        ConfigError::BinaryFile {
            path: path.to_owned(),
            bytes,
        }
    })
}

pub(super) fn resolve_prompt(
    cli: &Cli,
    stdin_kind: StdinKind,
    read_stdin: &mut dyn FnMut() -> Result<String, ConfigError>,
    recorded: Option<&str>,
    cwd: &Path,
) -> Result<String, ConfigError> {
    let dash_file = cli.prompt_file.as_deref() == Some(Path::new("-"));
    let from_args = match &cli.prompt_file {
        // `-f -`: the prompt is stdin, as `-` alone says.
        Some(_) if dash_file => None,
        Some(path) => Some(prompt_file(&cwd.join(path))?),
        None if cli.prompt.is_empty() || cli.prompt == ["-"] => None,
        None => Some(cli.prompt.join(" ")),
    };
    let explicit_dash = cli.prompt == ["-"] || dash_file;
    let prompt = match from_args {
        Some(prompt) => {
            // A prompt plus piped input: the input is context for the prompt.
            let context = if !cli.no_stdin && stdin_kind == StdinKind::Piped {
                read_stdin()?
            } else {
                String::new()
            };
            if context.trim().is_empty() {
                prompt
            } else {
                format!(
                    "{}\n\n{}",
                    prompt.trim_end(),
                    crate::markdown::fenced(&context, "")
                )
            }
        }
        None if explicit_dash && stdin_kind == StdinKind::Terminal => {
            return Err(ConfigError::StdinIsTerminal);
        }
        None if cli.no_stdin || stdin_kind != StdinKind::Piped => {
            recorded.map(str::to_owned).unwrap_or_default()
        }
        None => {
            let text = read_stdin()?;
            match recorded {
                Some(r) if text.trim().is_empty() && !explicit_dash => r.to_owned(),
                _ => text,
            }
        }
    };
    if prompt.trim().is_empty() {
        return Err(ConfigError::EmptyPrompt);
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_for_stdin_ends_at_the_deadline_and_not_before_it() {
        let (tx, rx) = std::sync::mpsc::channel::<u8>();
        let now = Instant::now();
        let soon = Some(now + Duration::from_millis(30));
        let deadline = Some((now + Duration::from_millis(60), Duration::from_secs(2)));
        // The patience runs out first: no word yet, and no error.
        assert!(matches!(wait(&rx, soon, deadline), Ok(None)));
        // Then the deadline: the run's --timeout, named.
        match wait(&rx, None, deadline) {
            Err(ConfigError::StdinDeadline { secs }) => assert_eq!(secs, 2.0),
            other => panic!("{other:?}"),
        }
        // What came in time is taken, deadline or not.
        tx.send(7).unwrap();
        let later = Some((
            Instant::now() + Duration::from_secs(5),
            Duration::from_secs(5),
        ));
        assert!(matches!(wait(&rx, None, later), Ok(Some(7))));
        tx.send(8).unwrap();
        assert!(matches!(wait(&rx, None, None), Ok(Some(8))));
        drop(tx);
        assert!(matches!(wait(&rx, None, None), Ok(None)));
    }
}
