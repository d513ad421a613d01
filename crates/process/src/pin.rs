//! Pinned writable directories: every writable directory of a run (the workspace, the temp dir,
//! `--sandbox-write`), resolved and recorded before any tool ran, is granted to a tool only if it
//! is still that very directory, reached without a symlink.
//!
//! Landlock rules hold open directories, and a rule made from a path follows symlinks when it is
//! opened. A tool that may write where a writable directory lives (a workspace in `/tmp`) could
//! swap it for a symlink between two calls, and the next call's rule would
//! grant the symlink's target — anything rounds' user may write. For a pinned directory the
//! supervisor instead walks the path one component at a time, refusing symlinks, checks the
//! device and inode against the identity rounds recorded when it created the directory, and
//! builds the rule from the descriptor it opened.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// A writable directory and the identity it must still have (see [`crate::Sandbox::pin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub(crate) dir: PathBuf,
    /// `st_dev` of the directory rounds created.
    pub(crate) dev: u64,
    /// `st_ino` of the directory rounds created.
    pub ino: u64,
}

/// Why a pinned directory cannot be granted: the tool is not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PinError {
    #[error("pinned directory {}: not an absolute path without `..`", .0.display())]
    NotAbsolute(PathBuf),
    #[error("pinned directory {}: {} is a symbolic link", dir.display(), link.display())]
    Symlink { dir: PathBuf, link: PathBuf },
    #[error(
        "pinned directory {} is no longer the directory rounds created (it was replaced)",
        .0.display()
    )]
    Replaced(PathBuf),
    #[error(
        "pinned directory {}: cannot open {}: {}",
        dir.display(),
        at.display(),
        std::io::Error::from(*.source)
    )]
    Open {
        dir: PathBuf,
        at: PathBuf,
        #[source]
        source: Errno,
    },
}

impl Pin {
    /// Opens the directory (`O_PATH`) if it is still the pinned one; `Ok(None)` when it no longer
    /// exists (a tool removed it): leaving it out only takes rights away, as for a writable
    /// directory that does not exist.
    pub(crate) fn open(&self) -> Result<Option<OwnedFd>, PinError> {
        let open_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut components = self.dir.components();
        if components.next() != Some(Component::RootDir) {
            return Err(PinError::NotAbsolute(self.dir.clone()));
        }
        let mut at = PathBuf::from("/");
        let mut fd = rustix::fs::open("/", open_flags, Mode::empty())
            .map_err(|e| self.open_error(&at, e))?;
        for component in components {
            let Component::Normal(name) = component else {
                return Err(PinError::NotAbsolute(self.dir.clone()));
            };
            at.push(name);
            match rustix::fs::openat(&fd, name, open_flags, Mode::empty()) {
                Ok(next) => fd = next,
                Err(Errno::NOENT) => return Ok(None),
                Err(_) if is_symlink(&fd, name) => {
                    return Err(PinError::Symlink {
                        dir: self.dir.clone(),
                        link: at,
                    });
                }
                Err(e) => return Err(self.open_error(&at, e)),
            }
        }
        let stat = rustix::fs::fstat(&fd).map_err(|e| self.open_error(&at, e))?;
        #[allow(clippy::useless_conversion)]
        let (dev, ino) = (u64::from(stat.st_dev), u64::from(stat.st_ino));
        if (dev, ino) != (self.dev, self.ino) {
            return Err(PinError::Replaced(self.dir.clone()));
        }
        Ok(Some(fd))
    }

    fn open_error(&self, at: &Path, source: Errno) -> PinError {
        PinError::Open {
            dir: self.dir.clone(),
            at: at.to_owned(),
            source,
        }
    }
}

/// Whether `name` in the directory `dir` is a symlink (with `O_PATH | O_NOFOLLOW |
/// O_DIRECTORY`, opening one fails with `ENOTDIR`, which a file would give too).
fn is_symlink(dir: &OwnedFd, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn pin_of(dir: &Path) -> Pin {
        let meta = std::fs::metadata(dir).unwrap();
        Pin {
            dir: dir.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    fn ino_of(fd: &OwnedFd) -> u64 {
        #[allow(clippy::useless_conversion)]
        u64::from(rustix::fs::fstat(fd).unwrap().st_ino)
    }

    #[test]
    fn the_directory_it_pinned_opens() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().canonicalize().unwrap().join("a/b");
        std::fs::create_dir_all(&dir).unwrap();
        let pin = pin_of(&dir);
        let fd = pin.open().unwrap().unwrap();
        assert_eq!(ino_of(&fd), pin.ino);
    }

    #[test]
    fn a_swapped_or_replaced_directory_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let dir = root.join("a/b");
        std::fs::create_dir_all(&dir).unwrap();
        let pin = pin_of(&dir);

        // The last component swapped for a symlink.
        std::fs::rename(&dir, root.join("a/b.old")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        let err = pin.open().unwrap_err();
        assert_eq!(
            err,
            PinError::Symlink {
                dir: dir.clone(),
                link: dir.clone()
            }
        );
        assert!(err.to_string().contains("is a symbolic link"), "{err}");

        // A symlink in a parent that leads to the very same directory: the identity matches,
        // the path does not.
        std::fs::remove_file(&dir).unwrap();
        std::fs::rename(root.join("a/b.old"), &dir).unwrap();
        std::fs::rename(root.join("a"), root.join("a2")).unwrap();
        std::os::unix::fs::symlink(root.join("a2"), root.join("a")).unwrap();
        assert_eq!(
            pin.open().unwrap_err(),
            PinError::Symlink {
                dir: dir.clone(),
                link: root.join("a")
            }
        );

        // Another directory under the same name.
        std::fs::remove_file(root.join("a")).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(pin.open().unwrap_err(), PinError::Replaced(dir.clone()));

        // A file where the directory was.
        std::fs::remove_dir(&dir).unwrap();
        std::fs::write(&dir, "x").unwrap();
        assert!(matches!(pin.open(), Err(PinError::Open { .. })));
    }

    #[test]
    fn a_removed_directory_is_left_out_and_odd_paths_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().canonicalize().unwrap().join("gone");
        std::fs::create_dir(&dir).unwrap();
        let pin = pin_of(&dir);
        std::fs::remove_dir(&dir).unwrap();
        assert!(matches!(pin.open(), Ok(None)));
        for odd in ["relative/dir", "/tmp/../tmp"] {
            let pin = Pin {
                dir: PathBuf::from(odd),
                ..pin.clone()
            };
            assert_eq!(
                pin.open().unwrap_err(),
                PinError::NotAbsolute(PathBuf::from(odd))
            );
        }
    }
}
