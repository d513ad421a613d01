//! Where a run's records go: its transcript and the directory of the whole outputs of cut
//! results, both opened (and made) here, before any tool runs (see `files`).

use std::path::Path;

use super::{ConfigError, Resume, rounds_home};
use crate::cli::Cli;
use crate::files::{Dir, Target};
use crate::provider::ProviderChoice;
use crate::runs;

/// The transcript's file, unless it is one this run reads (`--resume`, a replay): creating it
/// replaces it.
pub(super) fn transcript(
    cli: &Cli,
    given: Option<Target>,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    run_id: &str,
    reads: (Option<&Resume>, &ProviderChoice),
) -> Result<Option<Target>, ConfigError> {
    let transcript = match given {
        Some(target) => Some(target),
        None => transcript_target(cli, env, cwd, run_id)?,
    };
    if let Some(target) = &transcript {
        let path = target.path();
        let (resume, provider) = reads;
        let read_from = resume.iter().flat_map(|r| r.files.iter());
        let replayed = match provider {
            ProviderChoice::Replay { path, .. } => Some(path),
            _ => None,
        };
        if let Some(same) = read_from.chain(replayed).find(|f| same_file(f, &path)) {
            return Err(ConfigError::TranscriptIsInput(same.clone()));
        }
    }
    Ok(transcript)
}

/// Whether two paths name the same existing file (a path that does not exist yet is no file).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Where the transcript goes: `--transcript`, else `$ROUNDS_HOME/runs/YYYY-MM-DD/RUN_ID.jsonl`
/// (`ROUNDS_HOME` defaults to `$XDG_STATE_HOME/rounds`, else `~/.local/state/rounds`), else
/// nowhere; its directory opened (and made) now.
fn transcript_target(
    cli: &Cli,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    run_id: &str,
) -> Result<Option<Target>, ConfigError> {
    if cli.no_transcript {
        return Ok(None);
    }
    let (path, hint) = match &cli.transcript {
        Some(path) => (cwd.join(path), ""),
        None => {
            let Some(home) = rounds_home(env) else {
                // `env -u HOME rounds …` (a container, a service): the run goes on, but the
                // user would find `transcript: null` with no word of why.
                tracing::warn!(
                    "no transcript is kept: ROUNDS_HOME, XDG_STATE_HOME and HOME are all unset \
                     (set one, or pass --transcript FILE; --no-transcript says no transcript is \
                     wanted)"
                );
                return Ok(None);
            };
            // The user's own state directory may sit behind links of theirs (a dotfiles
            // checkout): what exists of it is resolved once, here, before any tool runs; below
            // it no link is followed.
            let home = crate::files::resolve_existing(&home);
            (
                runs::transcript_path(&home, run_id),
                "; pass --no-transcript, or set ROUNDS_HOME to a writable directory",
            )
        }
    };
    Target::new(&path)
        .map(Some)
        .map_err(|source| ConfigError::Output {
            what: "the transcript",
            path,
            source,
            hint,
        })
}

/// The directory of the whole outputs of cut results: `RUN.outputs` beside the transcript, or a
/// new directory of an unpredictable name in the temp dir.
pub(super) fn outputs_dir(transcript: Option<&Target>) -> Result<Dir, ConfigError> {
    let made = match transcript {
        Some(t) => t.dir().subdir(&outputs_name(t)),
        None => Dir::temp("rounds-"),
    };
    made.map_err(|source| ConfigError::Output {
        what: "the outputs directory",
        path: transcript.map_or_else(std::env::temp_dir, |t| t.path().with_extension("outputs")),
        source,
        hint: "",
    })
}

/// `RUN.outputs` for the transcript `RUN.jsonl`.
pub(crate) fn outputs_name(transcript: &Target) -> std::ffi::OsString {
    Path::new(transcript.name())
        .with_extension("outputs")
        .into_os_string()
}

/// `--output-last-message`: its directory opened now.
pub(super) fn last_message(path: &Path) -> Result<Target, ConfigError> {
    Target::new(path).map_err(|source| ConfigError::Output {
        what: "--output-last-message",
        path: path.to_owned(),
        source,
        hint: "",
    })
}
