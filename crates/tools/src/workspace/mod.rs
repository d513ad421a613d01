//! The workspace is the one directory the user lets the file tools touch. Every path the model
//! gives goes through here, so confinement (no `..` escapes, no symlinks out, no special files, no
//! directory swapped for a symlink between check and use) is decided in one place, not per tool.
//!
//! Two views of a path exist on purpose: `relative` is lexical and never touches the disk (the
//! allowlist matches on it, and it must agree with what the model wrote), while `resolve` and the
//! `open_*` functions follow symlinks on the real file system and check where they really land.
//!
//! Writes (`write_atomic`, `replace_atomic`, in `write.rs`) live beside it for the same reason:
//! they must stay inside even when a directory is swapped for a symlink mid-write, so they work
//! relative to a directory handle checked once, never by path.

use std::fs::{File, FileType, OpenOptions, ReadDir};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use super::ToolError;
use super::policy::Subject;

mod invented;
mod similar;
mod write;

/// The directory the file tools are confined to.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// Canonical: every resolved path is compared against this, component by component.
    root: PathBuf,
    /// The directory as the user spelled it (absolute, not resolved), so absolute paths copied
    /// from the user's prompt still match when the root sits behind a symlink (macOS `/tmp`).
    alias: Option<PathBuf>,
}

/// The user's workspace directory cannot be used; reported before the run starts.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("workspace directory {0:?} does not exist")]
    NotFound(PathBuf),
    #[error("workspace {0:?} is not a directory")]
    NotADirectory(PathBuf),
    #[error("cannot use workspace {path:?}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// A path the model gave that the file tools refuse. Messages name the path as the model wrote it
/// and never say anything about an outside target beyond "outside the workspace".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path {0:?} is outside the workspace")]
    Outside(String),
    #[error("path {0:?} resolves outside the workspace (symlink)")]
    SymlinkOutside(String),
    #[error("path {0:?} is a broken symlink")]
    BrokenSymlink(String),
    #[error("path {0:?} changed while it was being opened (a symlink was swapped in); try again")]
    Changed(String),
    #[error("no such file or directory: {0:?}")]
    NotFound(String),
    #[error("{path:?} is not a regular file (it is {kind})")]
    NotRegularFile { path: String, kind: &'static str },
    #[error("{0:?} is not a directory")]
    NotADirectory(String),
    #[error("cannot access {path:?}: {message}")]
    Io { path: String, message: String },
    #[error(
        "path {0:?} is a symlink; files are not written through symlinks (write to the file it \
         points to instead)"
    )]
    Symlink(String),
}

impl From<PathError> for ToolError {
    fn from(e: PathError) -> ToolError {
        ToolError::failed(e.to_string())
    }
}

impl Workspace {
    pub fn new(dir: &Path) -> Result<Workspace, WorkspaceError> {
        let root = std::fs::canonicalize(dir).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => WorkspaceError::NotFound(dir.to_path_buf()),
            _ => WorkspaceError::Io {
                path: dir.to_path_buf(),
                source,
            },
        })?;
        if !root.is_dir() {
            return Err(WorkspaceError::NotADirectory(dir.to_path_buf()));
        }
        let alias = std::path::absolute(dir)
            .ok()
            .and_then(|abs| normalize(&abs))
            .filter(|abs| *abs != root);
        Ok(Workspace { root, alias })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace-relative form of a path the model gave, by lexical normalization only (no
    /// file system access). The empty path means the root.
    pub(crate) fn relative(&self, path: &str) -> Result<PathBuf, PathError> {
        let outside = || PathError::Outside(path.to_owned());
        let given = Path::new(path);
        if !given.is_absolute() {
            return normalize(given).ok_or_else(outside);
        }
        let abs = normalize(given).ok_or_else(outside)?;
        std::iter::once(&self.root)
            .chain(self.alias.as_ref())
            .find_map(|base| abs.strip_prefix(base).ok())
            .map(Path::to_path_buf)
            .ok_or_else(outside)
    }

    /// `relative` as text with `/` separators, "." for the root: the subject allowlist rules match.
    pub(crate) fn subject(&self, path: &str) -> Option<Subject> {
        let rel = self.relative(path).ok()?;
        Some(Subject::Path(display_relative(&rel)))
    }

    /// Where a path a shell redirection names lies, for the allowlist: its workspace-relative
    /// form as written (as `subject`) and where it leads (as `locate`), or `None` when either
    /// lies outside. Rules judge both, so a symlink cannot lead a redirection past a deny rule.
    /// (A symlink created by the same script after this check is the sandbox's to stop.)
    pub(crate) fn shell_target(&self, path: &str) -> Option<(String, String)> {
        let Some(Subject::Path(rel)) = self.subject(path) else {
            return None;
        };
        self.locate(path).map(|real| (rel, real))
    }

    /// Where a path leads once every symlink on the way is followed, as the kernel would open
    /// it (relative to the root, and `..` after a symlink climbs from where the link leads): a
    /// workspace-relative path ("." for the root), or `None` when that is outside the workspace
    /// or cannot be told (a dangling symlink, a loop, no permission). A tail that does not exist
    /// yet is taken as written. The allowlist judges a path by this as well as by its lexical
    /// form, so a symlink cannot lead a call past a rule.
    pub(crate) fn locate(&self, path: &str) -> Option<String> {
        let joined = self.root.join(path);
        for existing in joined.ancestors() {
            match std::fs::canonicalize(existing) {
                Ok(real) => {
                    let rest = joined.strip_prefix(existing).ok()?;
                    let full = normalize(&real.join(rest))?;
                    return full.strip_prefix(&self.root).ok().map(display_relative);
                }
                // It exists but does not resolve: a dangling symlink, a loop, no permission.
                Err(_) if existing.symlink_metadata().is_ok() => return None,
                Err(_) => {}
            }
        }
        None
    }

    /// The absolute canonical path of an existing path the model gave, after checking that
    /// following every symlink on the way still lands inside the root.
    pub(crate) fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        let lexical = self.root.join(self.relative(path)?);
        match std::fs::canonicalize(&lexical) {
            Ok(real) if real.starts_with(&self.root) => Ok(real),
            Ok(_) => Err(PathError::SymlinkOutside(path.to_owned())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(self.not_found(path, &lexical)),
            Err(e) => Err(io_error(path, &e)),
        }
    }

    /// Tells apart "missing", "broken symlink" and "goes out through a symlink". The last must win
    /// over "missing": otherwise the answer for `outlink/x` would reveal whether `x` exists outside.
    fn not_found(&self, path: &str, lexical: &Path) -> PathError {
        let existing = lexical
            .ancestors()
            .skip(1)
            .find_map(|a| std::fs::canonicalize(a).ok());
        if existing.is_some_and(|real| !real.starts_with(&self.root)) {
            return PathError::SymlinkOutside(path.to_owned());
        }
        match lexical.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => PathError::BrokenSymlink(path.to_owned()),
            _ => PathError::NotFound(path.to_owned()),
        }
    }

    /// Opens a file the model named for reading: resolved and checked, and the opened handle
    /// checked again so that nothing swapped in after the check is read.
    pub(crate) fn open_file(&self, path: &str) -> Result<(File, PathBuf), PathError> {
        let real = self.resolve(path)?;
        let file = self.open_checked(&real, path)?;
        Ok((file, real))
    }

    /// Opens `abs` (a path inside the root) for reading, refusing anything but a regular file.
    /// `given` is the path as the model knows it, for messages. Used directly by the search tools
    /// for paths their own walk produced.
    pub(crate) fn open_checked(&self, abs: &Path, given: &str) -> Result<File, PathError> {
        // Refuse special files before opening: opening a socket fails obscurely and opening a
        // device can have side effects. The fstat below is what makes this race-free.
        if let Ok(meta) = abs.symlink_metadata()
            && !meta.file_type().is_file()
            && !meta.file_type().is_symlink()
        {
            return Err(not_regular(given, meta.file_type()));
        }
        let file = open_nofollow(abs, 0).map_err(|e| open_error(given, &e))?;
        let meta = file.metadata().map_err(|e| io_error(given, &e))?;
        if !meta.file_type().is_file() {
            return Err(not_regular(given, meta.file_type()));
        }
        self.check_opened(&file, given)?;
        Ok(file)
    }

    /// Lists a directory inside the root without following a symlink swapped in for it (or for
    /// any directory above it) after it was checked.
    pub(crate) fn open_dir(&self, abs: &Path, given: &str) -> Result<ReadDir, PathError> {
        let dir = open_nofollow(abs, libc::O_DIRECTORY)
            .map_err(|e| open_dir_error(abs, given, given, &e))?;
        self.check_opened(&dir, given)?;
        // Reading through the descriptor's /proc link lists exactly the directory that was
        // opened and checked; without /proc, fall back to the (checked) path.
        std::fs::read_dir(fd_link(&dir))
            .or_else(|_| std::fs::read_dir(abs))
            .map_err(|e| io_error(given, &e))
    }

    /// Defeats a directory above the opened entry being swapped for a symlink between the check
    /// and the open: the kernel knows where the handle really is. Skipped when /proc is missing.
    fn check_opened(&self, file: &File, given: &str) -> Result<(), PathError> {
        match std::fs::read_link(fd_link(file)) {
            Ok(real) if !real.starts_with(&self.root) => {
                Err(PathError::SymlinkOutside(given.to_owned()))
            }
            _ => Ok(()),
        }
    }

    /// The workspace-relative display form of an absolute path inside the workspace.
    pub(crate) fn display(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rel) => display_relative(rel),
            Err(_) => "(outside the workspace)".to_owned(),
        }
    }

    /// The one walk configuration the search tools share: ignore files honoured even outside a
    /// git repository, hidden files included but never `.git`, symlinks not followed (so the walk
    /// cannot leave the root), siblings sorted so results come out in path order.
    pub(crate) fn walker(&self, base: &Path) -> ignore::WalkBuilder {
        let mut builder = ignore::WalkBuilder::new(base);
        builder
            .hidden(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|entry| entry.file_name() != ".git")
            .sort_by_file_name(|a, b| a.cmp(b));
        builder
    }
}

/// Lexical normalization: `.` dropped, `..` pops; `None` when `..` climbs above the start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::RootDir => out.push(Component::RootDir),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// O_NOFOLLOW: a symlink swapped in for the last component after the check is not followed.
/// O_NONBLOCK: a FIFO swapped in after the check does not block the open forever.
fn open_nofollow(abs: &Path, extra_flags: libc::c_int) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | extra_flags)
        .open(abs)
}

fn display_relative(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.to_string_lossy().into_owned()
    }
}

fn fd_link(file: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

fn not_regular(given: &str, file_type: FileType) -> PathError {
    let kind = if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "a special file"
    };
    PathError::NotRegularFile {
        path: given.to_owned(),
        kind,
    }
}

/// `shown` names the directory itself, `given` the path the model gave.
fn open_dir_error(abs: &Path, shown: &str, given: &str, e: &io::Error) -> PathError {
    match e.raw_os_error() {
        // Linux reports a symlink as ENOTDIR when O_DIRECTORY is set.
        Some(libc::ENOTDIR) if abs.symlink_metadata().is_ok_and(|m| m.is_symlink()) => {
            PathError::Changed(given.to_owned())
        }
        Some(libc::ENOTDIR) => PathError::NotADirectory(shown.to_owned()),
        _ => open_error(given, e),
    }
}

fn open_error(given: &str, e: &io::Error) -> PathError {
    match e.raw_os_error() {
        // With O_NOFOLLOW, ELOOP means the last component became a symlink after the check.
        Some(libc::ELOOP) => PathError::Changed(given.to_owned()),
        Some(libc::ENOENT) => PathError::NotFound(given.to_owned()),
        _ => io_error(given, e),
    }
}

fn io_error(given: &str, e: &io::Error) -> PathError {
    PathError::Io {
        path: given.to_owned(),
        message: e.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use tokio_util::sync::CancellationToken;

    use serde_json::Value;

    use super::Workspace;
    use crate::{Tool, ToolContext, ToolError};

    /// A fresh workspace in a temp dir; the root is canonical because /tmp may be a symlink.
    pub(crate) fn workspace() -> (tempfile::TempDir, PathBuf, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = Workspace::new(&root).unwrap();
        (dir, root, ws)
    }

    pub(crate) fn context(ws: &Workspace) -> ToolContext {
        ToolContext::new(Arc::new(ws.clone()), CancellationToken::new())
    }

    /// Runs `tool` on `input` as the pipeline would, after checking that the input is one its
    /// schema accepts: so every example a tool's tests use also proves the schema derived
    /// from its arguments agrees with what the tool reads.
    pub(crate) async fn call(
        tool: &dyn Tool,
        ws: &Workspace,
        input: Value,
    ) -> Result<String, ToolError> {
        let schema = &tool.spec().input_schema;
        let validator = jsonschema::validator_for(schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&input)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{input} does not fit {schema}: {errors:?}"
        );
        tool.run(input, &context(ws)).await
    }

    pub(crate) fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub(crate) fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

#[cfg(test)]
mod tests;
