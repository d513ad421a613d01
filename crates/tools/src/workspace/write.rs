//! The write side of the workspace: atomic writes (temp file beside the target, synced, renamed
//! over it) made relative to a directory handle that was checked to be inside the root, so
//! swapping a path component for a symlink mid-write cannot redirect them.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, Permissions};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::*;

/// What an atomic write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WriteReport {
    /// The file written, workspace-relative with `/` separators.
    pub(crate) path: String,
    pub(crate) bytes: u64,
    /// The size of the file that was replaced; `None` when the write created the file.
    pub(crate) replaced: Option<u64>,
}

/// The directory a write goes into, opened and checked, and the name to write there. Every later
/// step works relative to this handle, so swapping a path component for a symlink afterwards
/// cannot redirect the write.
#[derive(Debug)]
struct Parent {
    dir: File,
    name: OsString,
    rel: PathBuf,
    given: String,
}

/// The write side. Writes are atomic (temp file beside the target, synced, renamed over it), so a
/// failure at any point leaves the old file whole; and they are made relative to a directory
/// handle that was checked to be inside the root, never by path.
impl Workspace {
    /// Creates or replaces the file at `path` (as the model gave it). With `create_dirs`, missing
    /// parent directories are created, each one inside the directory opened before it. A target
    /// that is a symlink, a directory or a special file is refused; a replaced file keeps its
    /// permission bits.
    pub(crate) fn write_atomic(
        &self,
        path: &str,
        bytes: &[u8],
        create_dirs: bool,
    ) -> Result<WriteReport, PathError> {
        let parent = self.open_parent(path, create_dirs)?;
        let old = check_target(&parent, None)?;
        commit(&parent, bytes, old.as_ref())
    }

    /// `write_atomic` for a file read before through `original`: refused with `Changed` when the
    /// file at `path` is no longer that file, so an edit never lands on a file it did not read.
    pub(crate) fn replace_atomic(
        &self,
        path: &str,
        bytes: &[u8],
        original: &File,
    ) -> Result<WriteReport, PathError> {
        let meta = original.metadata().map_err(|e| io_error(path, &e))?;
        let parent = self.open_parent(path, false)?;
        let old = check_target(&parent, Some((meta.dev(), meta.ino())))?;
        commit(&parent, bytes, old.as_ref())
    }

    fn open_parent(&self, path: &str, create_dirs: bool) -> Result<Parent, PathError> {
        let rel = self.relative(path)?;
        let (Some(name), Some(parent_rel)) = (rel.file_name(), rel.parent()) else {
            return Err(PathError::NotRegularFile {
                path: path.to_owned(),
                kind: "a directory",
            });
        };
        // Resolving follows symlinks that stay inside; the deepest directory that exists is the
        // starting point, and everything below it is created.
        let mut existing = parent_rel;
        let real = loop {
            match std::fs::canonicalize(self.root.join(existing)) {
                Ok(real) if real.starts_with(&self.root) => break real,
                Ok(_) => return Err(PathError::SymlinkOutside(path.to_owned())),
                Err(e) if e.kind() == io::ErrorKind::NotFound && create_dirs => {
                    existing = existing.parent().ok_or_else(|| io_error(path, &e))?;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(self.not_found(path, &self.root.join(&rel)));
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                    return Err(self.not_a_directory(parent_rel));
                }
                Err(e) => return Err(io_error(path, &e)),
            }
        };
        let shown = display_relative(existing);
        let mut dir = open_nofollow(&real, libc::O_DIRECTORY)
            .map_err(|e| open_dir_error(&real, &shown, path, &e))?;
        self.check_opened(&dir, path)?;
        let mut below = existing.to_path_buf();
        for component in parent_rel.strip_prefix(existing).unwrap_or(Path::new("")) {
            below.push(component);
            match rustix::fs::mkdirat(&dir, component, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(io_error(path, &e.into())),
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let next = rustix::fs::openat(&dir, component, flags, Mode::empty()).map_err(|e| {
                let lstat = rustix::fs::statat(&dir, component, AtFlags::SYMLINK_NOFOLLOW);
                match lstat.map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode)) {
                    // It did not resolve a moment ago, so it is a dangling link (or was just
                    // swapped in); either way nothing is created through it.
                    Ok(rustix::fs::FileType::Symlink) => {
                        PathError::BrokenSymlink(display_relative(&below))
                    }
                    _ if e == Errno::NOTDIR => PathError::NotADirectory(display_relative(&below)),
                    _ => io_error(path, &e.into()),
                }
            })?;
            dir = File::from(next);
            self.check_opened(&dir, path)?;
        }
        Ok(Parent {
            dir,
            name: name.to_os_string(),
            rel,
            given: path.to_owned(),
        })
    }

    /// Names the first component of `parent_rel` that exists but is not a directory.
    fn not_a_directory(&self, parent_rel: &Path) -> PathError {
        let mut ancestors: Vec<&Path> = parent_rel.ancestors().collect();
        ancestors.reverse();
        let culprit = ancestors
            .into_iter()
            .find(|a| std::fs::metadata(self.root.join(a)).is_ok_and(|m| !m.is_dir()))
            .unwrap_or(parent_rel);
        PathError::NotADirectory(display_relative(culprit))
    }
}

/// What is at the target now: nothing, or a regular file (its metadata). With `expected`
/// (device, inode), it must be that very file.
fn check_target(
    parent: &Parent,
    expected: Option<(u64, u64)>,
) -> Result<Option<Metadata>, PathError> {
    let given = parent.given.as_str();
    // O_PATH: looks at whatever is there (symlink, FIFO, device) without opening it for real.
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let old = match rustix::fs::openat(&parent.dir, &parent.name, flags, Mode::empty()) {
        Ok(fd) => Some(File::from(fd).metadata().map_err(|e| io_error(given, &e))?),
        Err(Errno::NOENT) => None,
        Err(e) => return Err(io_error(given, &e.into())),
    };
    match &old {
        Some(meta) if meta.file_type().is_symlink() => {
            return Err(PathError::Symlink(given.to_owned()));
        }
        Some(meta) if !meta.file_type().is_file() => {
            return Err(not_regular(given, meta.file_type()));
        }
        _ => {}
    }
    if let Some(expected) = expected
        && old.as_ref().map(|m| (m.dev(), m.ino())) != Some(expected)
    {
        return Err(PathError::Changed(given.to_owned()));
    }
    Ok(old)
}

/// Writes `bytes` to a temp file beside the target and renames it over `old` (the file there, if
/// any); on failure the temp file is removed and the target left as it was.
fn commit(parent: &Parent, bytes: &[u8], old: Option<&Metadata>) -> Result<WriteReport, PathError> {
    let fail = |e: io::Error| io_error(&parent.given, &e);
    // A new file gets the usual 0666 less umask; a replacement starts private and then takes the
    // old file's bits, so its content is never readable by more people than before.
    let mode = if old.is_some() { 0o600 } else { 0o666 };
    let (tmp, mut file) = create_temp(&parent.dir, &parent.name, mode).map_err(fail)?;
    let written = (|| -> io::Result<()> {
        file.write_all(bytes)?;
        if let Some(meta) = old {
            // Best effort: only root may give a file away. Special bits (setuid and the like)
            // are not carried over to content the model wrote.
            let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
            file.set_permissions(Permissions::from_mode(meta.mode() & 0o777))?;
        }
        file.sync_all()?;
        rustix::fs::renameat(&parent.dir, &tmp, &parent.dir, &parent.name)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = rustix::fs::unlinkat(&parent.dir, &tmp, AtFlags::empty());
        return Err(fail(e));
    }
    // Makes the rename itself durable; the data already is.
    let _ = rustix::fs::fsync(&parent.dir);
    Ok(WriteReport {
        path: display_relative(&parent.rel),
        bytes: bytes.len() as u64,
        replaced: old.map(Metadata::len),
    })
}

/// Creates `.NAME.rounds-tmp-RANDOM` beside the target: hidden, recognisable if a crash leaves it
/// behind, and in the same directory so the rename cannot cross file systems.
fn create_temp(dir: &File, name: &OsStr, mode: u32) -> io::Result<(OsString, File)> {
    // Room for the prefix and suffix within the usual 255-byte name limit.
    let stem = &name.as_bytes()[..name.len().min(200)];
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut attempt = 0u32;
    loop {
        let random = RandomState::new().hash_one((std::process::id(), attempt));
        let mut tmp = OsString::from(".");
        tmp.push(OsStr::from_bytes(stem));
        tmp.push(format!(".rounds-tmp-{random:016x}"));
        match rustix::fs::openat(dir, &tmp, flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => return Ok((tmp, File::from(fd))),
            Err(Errno::EXIST) if attempt < 16 => attempt += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use pretty_assertions::assert_eq;

    use super::super::testing::{workspace, write};
    use super::*;
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn write_atomic_creates_and_replaces() {
        let (_dir, root, ws) = workspace();
        let report = ws
            .write_atomic("./a/b/../c/new.txt", b"hello", true)
            .unwrap();
        assert_eq!(
            report,
            WriteReport {
                path: "a/c/new.txt".to_owned(),
                bytes: 5,
                replaced: None,
            }
        );
        assert_eq!(std::fs::read(root.join("a/c/new.txt")).unwrap(), b"hello");
        let report = ws.write_atomic("a/c/new.txt", b"bye", false).unwrap();
        assert_eq!(report.replaced, Some(5));
        assert_eq!(std::fs::read(root.join("a/c/new.txt")).unwrap(), b"bye");
        assert_eq!(names(&root.join("a/c")), ["new.txt"]);
        assert_eq!(
            ws.write_atomic("nope/f", b"x", false),
            Err(PathError::NotFound("nope/f".to_owned()))
        );
        assert_eq!(names(&root), ["a"]);
    }

    #[test]
    fn write_atomic_follows_parent_symlinks_only_inside() {
        let (_dir, root, ws) = workspace();
        let out = tempfile::tempdir().unwrap();
        let out = out.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        symlink("real", root.join("alias")).unwrap();
        symlink(&out, root.join("out")).unwrap();
        symlink(out.join("nowhere"), root.join("dangling")).unwrap();
        ws.write_atomic("alias/f", b"1", false).unwrap();
        assert_eq!(std::fs::read(root.join("real/f")).unwrap(), b"1");
        for (path, create_dirs) in [("out/f", false), ("out/new/f", true), ("out/f", true)] {
            assert_eq!(
                ws.write_atomic(path, b"x", create_dirs),
                Err(PathError::SymlinkOutside(path.to_owned())),
                "{path}"
            );
        }
        assert_eq!(
            ws.write_atomic("dangling/f", b"x", true),
            Err(PathError::BrokenSymlink("dangling".to_owned()))
        );
        assert_eq!(names(&out), Vec::<String>::new());
    }

    #[test]
    fn write_atomic_refuses_what_is_not_a_plain_file() {
        let (_dir, root, ws) = workspace();
        write(&root, "file", "keep");
        std::fs::create_dir(root.join("d")).unwrap();
        symlink("file", root.join("link")).unwrap();
        let cases = [
            ("link", PathError::Symlink("link".to_owned())),
            ("file/x", PathError::NotADirectory("file".to_owned())),
            ("file/x/y", PathError::NotADirectory("file".to_owned())),
            (
                "d",
                PathError::NotRegularFile {
                    path: "d".to_owned(),
                    kind: "a directory",
                },
            ),
            (
                ".",
                PathError::NotRegularFile {
                    path: ".".to_owned(),
                    kind: "a directory",
                },
            ),
        ];
        for (path, want) in cases {
            assert_eq!(ws.write_atomic(path, b"x", true), Err(want), "{path}");
        }
        assert_eq!(
            PathError::Symlink("link".to_owned()).to_string(),
            r#"path "link" is a symlink; files are not written through symlinks (write to the file it points to instead)"#
        );
        assert_eq!(std::fs::read(root.join("file")).unwrap(), b"keep");
        assert_eq!(names(&root), ["d", "file", "link"]);
    }

    #[test]
    fn write_goes_to_the_checked_directory_even_if_swapped_after() {
        let (_dir, root, ws) = workspace();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let parent = ws.open_parent("sub/f", false).unwrap();
        std::fs::rename(root.join("sub"), root.join("moved")).unwrap();
        symlink(out.path(), root.join("sub")).unwrap();
        let old = check_target(&parent, None).unwrap();
        commit(&parent, b"data", old.as_ref()).unwrap();
        assert_eq!(std::fs::read(root.join("moved/f")).unwrap(), b"data");
        assert_eq!(names(out.path()), Vec::<String>::new());
        // Same for directories created on the way.
        let parent = ws.open_parent("new/deeper/f", true).unwrap();
        std::fs::rename(root.join("new"), root.join("moved2")).unwrap();
        symlink(out.path(), root.join("new")).unwrap();
        let old = check_target(&parent, None).unwrap();
        commit(&parent, b"data", old.as_ref()).unwrap();
        assert_eq!(
            std::fs::read(root.join("moved2/deeper/f")).unwrap(),
            b"data"
        );
        assert_eq!(names(out.path()), Vec::<String>::new());
    }

    #[test]
    fn failed_commit_removes_the_temp_file() {
        // The target turns into a non-empty directory between the check and the rename.
        let (_dir, root, ws) = workspace();
        write(&root, "f", "old");
        let parent = ws.open_parent("f", false).unwrap();
        let old = check_target(&parent, None).unwrap();
        std::fs::remove_file(root.join("f")).unwrap();
        write(&root, "f/inner", "keep");
        let err = commit(&parent, b"new", old.as_ref()).unwrap_err();
        assert!(matches!(err, PathError::Io { .. }), "{err:?}");
        assert_eq!(names(&root), ["f"]);
        assert_eq!(std::fs::read(root.join("f/inner")).unwrap(), b"keep");
    }

    #[test]
    fn replace_atomic_refuses_a_file_replaced_since_it_was_read() {
        let (_dir, root, ws) = workspace();
        write(&root, "f", "one");
        let (original, _) = ws.open_file("f").unwrap();
        write(&root, "other", "two");
        std::fs::rename(root.join("other"), root.join("f")).unwrap();
        assert_eq!(
            ws.replace_atomic("f", b"x", &original),
            Err(PathError::Changed("f".to_owned()))
        );
        assert_eq!(std::fs::read(root.join("f")).unwrap(), b"two");
        let (original, _) = ws.open_file("f").unwrap();
        assert_eq!(
            ws.replace_atomic("f", b"x", &original).unwrap().replaced,
            Some(3)
        );
    }

    #[test]
    fn temp_names_stay_within_name_max() {
        let (_dir, root, ws) = workspace();
        let long = "n".repeat(255);
        ws.write_atomic(&long, b"x", false).unwrap();
        assert_eq!(names(&root), [long]);
    }
}
