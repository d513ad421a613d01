//! `--resume`: the conversation a run continues, and what of the resumed run it keeps.

use std::path::{Path, PathBuf};

use super::{ConfigError, rounds_home};
use crate::cli::{Cli, ToolFlags};
use crate::conversation::Message;
use crate::runs;
use crate::terminal;
use crate::transcript::{self, ReadError};
use crate::trust::{self, Source};

/// The conversation a resumed run continues.
pub(crate) struct Resume {
    pub(crate) path: PathBuf,
    /// The transcript is a run rounds kept for this user (see `own_run`).
    pub(crate) own_run: bool,
    pub(crate) history: Vec<Message>,
    /// The id of the chain's first run: the prompt-cache key stays the same across resumes.
    pub(crate) origin_run_id: String,
    /// Every transcript of the chain, oldest first (`path` last).
    pub(crate) files: Vec<PathBuf>,
    /// The start line of the run resumed (`path`'s).
    pub(crate) start: transcript::Start,
}

/// `--resume FILE`, `--resume RUN_ID` (a run under `$ROUNDS_HOME/runs`, as `rounds show` takes
/// it), or `--resume last`: the newest run in this run's workspace (`-w`, else the current
/// directory).
pub(super) fn resume(
    which: &str,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    flags: &ToolFlags,
) -> Result<Resume, ConfigError> {
    let path = if which == "last" {
        let runs = rounds_home(env).unwrap_or_default().join(runs::DIR);
        let dir = flags
            .workspace
            .as_ref()
            .map_or(cwd.to_owned(), |w| cwd.join(w));
        let workspace = std::fs::canonicalize(&dir).unwrap_or(dir);
        runs::newest(&runs, Some(&workspace))
            .ok_or(ConfigError::NothingToResume { runs, workspace })?
    } else if runs::names_a_run_id(which, &cwd.join(which)) {
        let runs = rounds_home(env).unwrap_or_default().join(runs::DIR);
        runs::find(&runs, which).ok_or_else(|| ConfigError::NoRun {
            id: which.to_owned(),
            runs,
        })?
    } else {
        cwd.join(which)
    };
    let chain = transcript::read_chain(&path).map_err(ConfigError::Resume)?;
    if chain.last().is_some_and(|t| t.torn_tail) {
        tracing::warn!(
            "{}: the last line was cut off (a killed run?); resuming from the rounds before it",
            path.display()
        );
    }
    let runs = rounds_home(env).map(|home| home.join(runs::DIR));
    let files: Vec<PathBuf> = chain
        .iter()
        .filter_map(|t| t.start.resumed_from.as_ref().map(PathBuf::from))
        .chain([path.clone()])
        .collect();
    let media = chain
        .iter()
        .zip(&files)
        .map(|(t, file)| super::attach::kept(file, &t.start.attachments))
        .collect::<Result<Vec<_>, _>>()?;
    let mut history = transcript::conversation(&chain, &media);
    super::attach::refill(&mut history, &files)?;
    Ok(Resume {
        own_run: runs.is_some_and(|runs| own_run(&path, &runs)),
        origin_run_id: chain
            .first()
            .map(|t| t.start.run_id.clone())
            .unwrap_or_default(),
        history,
        files,
        start: chain.last().map(|t| t.start.clone()).ok_or_else(|| {
            ConfigError::Resume(ReadError::Invalid {
                path: path.clone(),
                line: 1,
                message: "no start line".into(),
            })
        })?,
        path,
    })
}

/// Whether `path` is a run rounds kept for this user: a file of theirs under
/// `$ROUNDS_HOME/runs` (private, written only by rounds), not one brought from elsewhere.
fn own_run(path: &Path, runs: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(file), Ok(runs)) = (std::fs::canonicalize(path), std::fs::canonicalize(runs)) else {
        return false;
    };
    file.starts_with(&runs)
        && std::fs::metadata(&file).is_ok_and(|m| m.uid() == rustix::process::geteuid().as_raw())
}

/// A resumed run keeps the model and the workspace its transcript recorded, unless the flags
/// (or `ROUNDS_MODEL`) name others. The workspace is what confines the tools, so it is only
/// taken from a run rounds kept for this user (`own_run`): a transcript from anywhere else (an
/// artifact, a crafted file saying `"workspace": "/"`) cannot widen it, and the run stays in
/// the current directory (or `-w`). A recorded workspace is also only taken while it is still a
/// directory given by an absolute path; a warning names it when it is not the current one.
///
/// A transcript is no more trusted than a project file: when the user pinned an endpoint or a
/// key file (`--base-url`, `--api-key-file`), a recorded model of another provider is refused
/// (an error, not a warning: falling back to a default model would send the conversation
/// somewhere the user did not choose either), so the transcript cannot send that key elsewhere.
pub(super) fn keep_resumed(
    mut cli: Cli,
    resume: Option<&Resume>,
    cwd: &Path,
) -> Result<Cli, ConfigError> {
    let Some(resume) = resume else {
        return Ok(cli);
    };
    let start = &resume.start;
    let source = Source::Transcript {
        path: resume.path.clone(),
    };
    if cli.model.is_none() {
        let pin = trust::Pin::new(cli.base_url.is_some() || cli.api_key_file.is_some(), None);
        match trust::transcript_model(&start.provider, &start.model, &pin, &source) {
            Ok(model) => cli.model = Some(model),
            Err(trust::TranscriptModel::Pinned(refused)) => {
                return Err(ConfigError::ResumePinned(format!(
                    "{}: {}",
                    refused.source, refused.why
                )));
            }
            Err(trust::TranscriptModel::Unusable(refused)) => {
                tracing::warn!("{}", terminal::line(&refused.to_string()))
            }
        }
    }
    let recorded = Path::new(&start.workspace);
    if cli.tools.workspace.is_some() {
        return Ok(cli);
    }
    let here = std::fs::canonicalize(cwd).is_ok_and(|c| c == recorded);
    if !trust::transcript_may_set_workspace(resume.own_run) {
        if !here {
            tracing::warn!(
                "{} is not one of your runs under $ROUNDS_HOME/runs, so its workspace {} is \
                 not trusted; running in the current directory (-w chooses another)",
                resume.path.display(),
                terminal::line(&start.workspace)
            );
        }
    } else if !(recorded.is_absolute() && recorded.is_dir()) {
        tracing::warn!(
            "the resumed run's workspace {} is not a directory any more; using the current one",
            recorded.display()
        );
    } else {
        if !here {
            tracing::warn!(
                "resuming in the run's workspace {} (-w changes it)",
                recorded.display()
            );
        }
        cli.tools.workspace = Some(recorded.to_owned());
    }
    Ok(cli)
}
