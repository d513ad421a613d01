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

mod write;

pub use write::WriteReport;

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
    pub fn relative(&self, path: &str) -> Result<PathBuf, PathError> {
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
    pub fn subject(&self, path: &str) -> Option<Subject> {
        let rel = self.relative(path).ok()?;
        Some(Subject::Path(display_relative(&rel)))
    }

    /// Where a path a shell redirection names lies, for the allowlist: its workspace-relative
    /// form (as `subject`), or `None` when it lies outside. Unlike the file tools, bash opens the
    /// path as written, so besides the lexical check the kernel's own reading must stay inside:
    /// every existing symlink on the way is followed, and `..` after one (`link/../x`) climbs
    /// from where the link leads. A dangling symlink or a path that cannot be resolved counts as
    /// outside. (A symlink created by the same script after this check is the sandbox's to stop.)
    pub fn shell_target(&self, path: &str) -> Option<String> {
        let Some(Subject::Path(rel)) = self.subject(path) else {
            return None;
        };
        let joined = self.root.join(path);
        for existing in joined.ancestors() {
            match std::fs::canonicalize(existing) {
                Ok(real) if real.starts_with(&self.root) => return Some(rel),
                Ok(_) => return None,
                // It exists but does not resolve: a dangling symlink, a loop, no permission.
                Err(_) if existing.symlink_metadata().is_ok() => return None,
                Err(_) => {}
            }
        }
        None
    }

    /// The absolute canonical path of an existing path the model gave, after checking that
    /// following every symlink on the way still lands inside the root.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
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
    pub fn open_file(&self, path: &str) -> Result<(File, PathBuf), PathError> {
        let real = self.resolve(path)?;
        let file = self.open_checked(&real, path)?;
        Ok((file, real))
    }

    /// Opens `abs` (a path inside the root) for reading, refusing anything but a regular file.
    /// `given` is the path as the model knows it, for messages. Used directly by the search tools
    /// for paths their own walk produced.
    pub fn open_checked(&self, abs: &Path, given: &str) -> Result<File, PathError> {
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
    pub fn open_dir(&self, abs: &Path, given: &str) -> Result<ReadDir, PathError> {
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
    pub fn display(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rel) => display_relative(rel),
            Err(_) => "(outside the workspace)".to_owned(),
        }
    }

    /// The one walk configuration the search tools share: ignore files honoured even outside a
    /// git repository, hidden files included but never `.git`, symlinks not followed (so the walk
    /// cannot leave the root), siblings sorted so results come out in path order.
    pub fn walker(&self, base: &Path) -> ignore::WalkBuilder {
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
    use crate::tools::{Tool, ToolContext};

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
    ) -> Result<String, String> {
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
        tool.run(input, &context(ws))
            .await
            .map_err(|e| e.to_string())
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
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    use pretty_assertions::assert_eq;

    use super::testing::{mkfifo, workspace, write};
    use super::*;

    fn outside(p: &str) -> PathError {
        PathError::Outside(p.to_owned())
    }

    fn symlink_outside(p: &str) -> PathError {
        PathError::SymlinkOutside(p.to_owned())
    }

    #[test]
    fn new_refuses_missing_dir_and_file() {
        let (_dir, root, _ws) = workspace();
        write(&root, "f", "x");
        let missing = Workspace::new(&root.join("nope")).unwrap_err();
        assert_eq!(
            missing.to_string(),
            format!("workspace directory {:?} does not exist", root.join("nope"))
        );
        assert!(matches!(
            Workspace::new(&root.join("f")),
            Err(WorkspaceError::NotADirectory(_))
        ));
    }

    #[test]
    fn relative_normalizes_lexically() {
        let (_dir, root, ws) = workspace();
        assert_eq!(ws.relative("src/a.rs"), Ok(PathBuf::from("src/a.rs")));
        assert_eq!(ws.relative("./src/./a.rs"), Ok(PathBuf::from("src/a.rs")));
        assert_eq!(ws.relative("src/x/../a.rs"), Ok(PathBuf::from("src/a.rs")));
        assert_eq!(ws.relative(""), Ok(PathBuf::new()));
        assert_eq!(ws.relative("."), Ok(PathBuf::new()));
        let abs = root.join("src/a.rs");
        assert_eq!(
            ws.relative(abs.to_str().unwrap()),
            Ok(PathBuf::from("src/a.rs"))
        );
        assert_eq!(ws.relative(root.to_str().unwrap()), Ok(PathBuf::new()));
        assert_eq!(
            ws.subject("./src//a.rs"),
            Some(Subject::Path("src/a.rs".to_owned()))
        );
        assert_eq!(ws.subject("."), Some(Subject::Path(".".to_owned())));
        assert_eq!(ws.subject("../x"), None);
    }

    #[test]
    fn shell_targets_are_where_the_kernel_would_open_them() {
        let (dir, root, ws) = workspace();
        let outside_dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside_dir.path().join("deep")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        symlink(outside_dir.path().join("deep"), root.join("out")).unwrap();
        symlink(outside_dir.path().join("gone"), root.join("dangling")).unwrap();
        symlink(root.join("sub"), root.join("in")).unwrap();
        let target = |p: &str| ws.shell_target(p);
        assert_eq!(target("new.txt"), Some("new.txt".to_owned()));
        assert_eq!(target("./sub/new.txt"), Some("sub/new.txt".to_owned()));
        assert_eq!(target("in/x"), Some("in/x".to_owned()));
        let abs = root.join("sub/x");
        assert_eq!(target(abs.to_str().unwrap()), Some("sub/x".to_owned()));
        // Lexically these stay inside; the kernel follows the link first.
        for escape in ["out/x", "out/../x", "dangling", "../x", "/etc/passwd"] {
            assert_eq!(target(escape), None, "{escape}");
        }
        drop(dir);
    }

    #[test]
    fn dotdot_escapes_are_refused() {
        let (_dir, _root, ws) = workspace();
        for p in ["../x", "a/../../x", "..", "./.."] {
            assert_eq!(ws.relative(p), Err(outside(p)), "{p}");
            assert_eq!(ws.resolve(p), Err(outside(p)), "{p}");
        }
        assert_eq!(
            ws.resolve("../x").unwrap_err().to_string(),
            r#"path "../x" is outside the workspace"#
        );
    }

    #[test]
    fn absolute_paths_outside_refused_inside_accepted() {
        let (_dir, root, ws) = workspace();
        write(&root, "a.txt", "hi");
        assert_eq!(ws.resolve("/etc/passwd"), Err(outside("/etc/passwd")));
        let sneaky = format!("{}/../x", root.display());
        assert_eq!(ws.resolve(&sneaky), Err(outside(&sneaky)));
        let inside = root.join("a.txt");
        assert_eq!(ws.resolve(inside.to_str().unwrap()), Ok(inside.clone()));
        assert_eq!(ws.display(&inside), "a.txt");
        assert_eq!(ws.display(&root), ".");
    }

    #[test]
    fn prefix_look_alike_sibling_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        let parent = parent.path().canonicalize().unwrap();
        let root = parent.join("ws");
        let evil = parent.join("ws-evil");
        std::fs::create_dir(&root).unwrap();
        write(&evil, "f", "secret");
        let ws = Workspace::new(&root).unwrap();
        let abs = evil.join("f").to_str().unwrap().to_owned();
        assert_eq!(ws.resolve(&abs), Err(outside(&abs)));
        assert_eq!(ws.resolve("../ws-evil/f"), Err(outside("../ws-evil/f")));
        // And through a symlink, where only the component-wise check can tell.
        symlink(&evil, root.join("l")).unwrap();
        assert_eq!(ws.resolve("l/f"), Err(symlink_outside("l/f")));
    }

    #[test]
    fn symlinks_escaping_are_refused() {
        let (_dir, root, ws) = workspace();
        let out = tempfile::tempdir().unwrap();
        let out = out.path().canonicalize().unwrap();
        write(&out, "secret", "s");
        symlink(out.join("secret"), root.join("file-link")).unwrap();
        symlink(&out, root.join("dir-link")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        symlink(&out, root.join("a/b/deep-link")).unwrap();
        for p in [
            "file-link",
            "dir-link/secret",
            "a/b/deep-link/secret",
            "dir-link",
        ] {
            assert_eq!(ws.resolve(p), Err(symlink_outside(p)), "{p}");
        }
        // A missing name behind an escaping link gets the same answer as an existing one.
        assert_eq!(
            ws.resolve("dir-link/nope"),
            Err(symlink_outside("dir-link/nope"))
        );
        assert_eq!(
            ws.open_file("file-link").unwrap_err().to_string(),
            r#"path "file-link" resolves outside the workspace (symlink)"#
        );
    }

    #[test]
    fn dangling_and_missing_are_refused() {
        let (_dir, root, ws) = workspace();
        symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        assert_eq!(
            ws.resolve("dangling"),
            Err(PathError::BrokenSymlink("dangling".to_owned()))
        );
        assert_eq!(
            ws.resolve("a.txt").unwrap_err().to_string(),
            r#"no such file or directory: "a.txt""#
        );
    }

    #[test]
    fn symlink_inside_pointing_inside_is_accepted() {
        let (_dir, root, ws) = workspace();
        write(&root, "real/f.txt", "hello");
        symlink("real", root.join("alias")).unwrap();
        symlink("real/f.txt", root.join("f-link")).unwrap();
        assert_eq!(ws.resolve("alias/f.txt"), Ok(root.join("real/f.txt")));
        let (mut file, real) = ws.open_file("f-link").unwrap();
        assert_eq!(real, root.join("real/f.txt"));
        let mut text = String::new();
        io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert_eq!(text, "hello");
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let (_dir, root, ws) = workspace();
        mkfifo(&root.join("fifo"));
        let started = Instant::now();
        let err = ws.open_file("fifo").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#""fifo" is not a regular file (it is a FIFO)"#
        );
        // Past the lstat pre-check too: the open itself must not block and fstat must refuse.
        let err = ws.open_checked(&root.join("fifo"), "fifo").unwrap_err();
        assert!(matches!(
            err,
            PathError::NotRegularFile { kind: "a FIFO", .. }
        ));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn opening_a_fifo_does_not_block() {
        // The case the lstat pre-check cannot cover: a FIFO swapped in just before the open.
        let (_dir, root, _ws) = workspace();
        let fifo = root.join("fifo");
        mkfifo(&fifo);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(open_nofollow(&fifo, 0).is_ok()));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(true));
    }

    #[test]
    fn directory_is_refused_by_open_file() {
        let (_dir, root, ws) = workspace();
        std::fs::create_dir(root.join("d")).unwrap();
        assert_eq!(
            ws.open_file("d").unwrap_err().to_string(),
            r#""d" is not a regular file (it is a directory)"#
        );
    }

    #[test]
    fn opened_handle_outside_is_refused() {
        // Simulates a directory swapped for a symlink after `resolve`: the path handed to
        // open_checked goes through a symlink that O_NOFOLLOW cannot see (not the last component).
        let (_dir, root, ws) = workspace();
        let out = tempfile::tempdir().unwrap();
        write(out.path(), "secret", "s");
        symlink(out.path(), root.join("swapped")).unwrap();
        assert_eq!(
            ws.open_checked(&root.join("swapped/secret"), "swapped/secret")
                .unwrap_err(),
            symlink_outside("swapped/secret")
        );
        assert_eq!(
            ws.open_dir(&root.join("swapped"), "swapped").unwrap_err(),
            PathError::Changed("swapped".to_owned())
        );
        // The last component swapped for a symlink, even one pointing inside, is not followed.
        write(&root, "inside.txt", "x");
        symlink(root.join("inside.txt"), root.join("leaf")).unwrap();
        assert_eq!(
            ws.open_checked(&root.join("leaf"), "leaf").unwrap_err(),
            PathError::Changed("leaf".to_owned())
        );
    }

    #[test]
    fn open_dir_lists_the_directory() {
        let (_dir, root, ws) = workspace();
        write(&root, "d/x", "1");
        write(&root, "d/y", "2");
        let mut names: Vec<String> = ws
            .open_dir(&root.join("d"), "d")
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(
            ws.open_dir(&root.join("d/x"), "d/x").unwrap_err(),
            PathError::NotADirectory("d/x".to_owned())
        );
    }
}
