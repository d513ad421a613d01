//! The one way rounds writes files of its own: transcripts, the outputs of cut results, step
//! summaries, `--output-last-message`, batch results and reports, exports and HTML pages.
//!
//! They hold prompts, stdin, file contents and answers, so only their owner may read them; and
//! they are written while tools run, often in directories those tools can change (the workspace,
//! the temp dir). So:
//! - a path is opened one component at a time from `/` (or the current directory), following no
//!   symbolic link in any component (`O_NOFOLLOW` on the last one alone would let a tool swap a
//!   directory higher up for a link);
//! - the directory is opened once, before any tool runs, and kept: every file is made relative to
//!   that handle ([`Dir`], [`Target`]), so renaming a directory away and planting a link in its
//!   place later redirects nothing;
//! - a file is created as a new file beside its name and renamed over it, so a hard link or a
//!   file planted at the name is replaced, never truncated or written through; a symbolic link
//!   at the name is refused;
//! - a file rounds appends to (a step summary) must be a regular file with one link;
//! - directories rounds makes are private (0700), files 0600; a temporary directory gets a name
//!   nobody can predict.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;

/// A directory rounds writes into, held open: what is made in it lands in this very directory,
/// whatever happens to its path afterwards.
#[derive(Debug, Clone)]
pub struct Dir {
    fd: Arc<OwnedFd>,
    /// The path it was opened by (for messages, and for what a transcript names).
    path: PathBuf,
}

/// A file to write: its directory, already open, and its name there.
#[derive(Debug, Clone)]
pub struct Target {
    dir: Dir,
    name: OsString,
    /// The path to name it by, when not the directory's path and the name.
    shown: Option<PathBuf>,
}

const PRIVATE_DIR: u32 = 0o700;
const PRIVATE_FILE: u32 = 0o600;

impl Dir {
    /// Opens the directory at `path`, making the missing ones (0700). No component may be a
    /// symbolic link: the error names the first that is.
    pub fn create_all(path: &Path) -> io::Result<Dir> {
        walk(path, true)
    }

    /// A new private directory `PREFIX` + a random suffix in the system temp dir, made by this
    /// call (never one that was there).
    pub fn temp(prefix: &str) -> io::Result<Dir> {
        // `$TMPDIR` is the user's, read before any tool runs: it may sit behind links of theirs.
        Dir::create_all(&resolve_existing(&std::env::temp_dir()))?.unique(prefix)
    }

    /// A new private directory `PREFIX` + a random suffix in this one.
    pub(crate) fn unique(&self, prefix: &str) -> io::Result<Dir> {
        for attempt in 0..16u32 {
            let name = format!("{prefix}{}", random(attempt));
            match rustix::fs::mkdirat(self, name.as_str(), Mode::from_raw_mode(PRIVATE_DIR)) {
                Ok(()) => return self.subdir(OsStr::new(&name)),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(self.error(OsStr::new(&name), e.into())),
            }
        }
        Err(io::Error::other(format!(
            "{}: cannot make a directory of a new name",
            self.path.display()
        )))
    }

    /// The directory `name` in this one, made (0700) if missing; a symbolic link there is
    /// refused.
    pub fn subdir(&self, name: &OsStr) -> io::Result<Dir> {
        single(name)?;
        let fd = step(self, name, true).map_err(|e| self.error(name, e))?;
        Ok(Dir {
            fd: Arc::new(fd),
            path: self.path.join(name),
        })
    }

    /// The file `name` in this directory.
    pub fn target(&self, name: impl Into<OsString>) -> io::Result<Target> {
        let name = name.into();
        single(&name)?;
        Ok(Target {
            dir: self.clone(),
            name,
            shown: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `dir`, named by `path` (the same directory by another path: an absolute one, say), as
    /// is everything made in it.
    pub fn renamed(dir: Dir, path: PathBuf) -> Dir {
        Dir { path, ..dir }
    }

    /// Device and inode: what the directory is, whatever its path later names.
    #[cfg(test)]
    pub(crate) fn identity(&self) -> io::Result<(u64, u64)> {
        let st = rustix::fs::fstat(self)?;
        Ok((st.st_dev, st.st_ino))
    }

    /// Moves `from` in this directory to `to` in `dest`, replacing nothing: an existing `to` is
    /// an error.
    pub fn rename_new(&self, from: &OsStr, dest: &Dir, to: &OsStr) -> io::Result<()> {
        single(from)?;
        single(to)?;
        if rustix::fs::statat(dest, to, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
            return Err(dest.error(to, io::ErrorKind::AlreadyExists.into()));
        }
        rustix::fs::renameat(self, from, dest, to).map_err(|e| self.error(from, e.into()))
    }

    /// Removes the files made in this directory, through its handle: wherever a tool may have
    /// moved it, nothing saved in it stays behind. (Only files: rounds makes no directories in
    /// one it clears.)
    pub fn clear(&self) {
        let Ok(fd) = rustix::fs::openat(
            self,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return;
        };
        let Ok(entries) = rustix::fs::Dir::new(fd) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if entry.file_type() != FileType::Directory {
                let _ = rustix::fs::unlinkat(self, name, AtFlags::empty());
            }
        }
    }

    /// Removes the file `name` (not a directory).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        single(name)?;
        rustix::fs::unlinkat(self, name, AtFlags::empty()).map_err(|e| self.error(name, e.into()))
    }

    /// Removes the entry `name` if it is an empty directory; anything else stays.
    pub fn remove_empty(&self, name: &OsStr) {
        let _ = rustix::fs::unlinkat(self, name, AtFlags::REMOVEDIR);
    }

    fn error(&self, name: &OsStr, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.path.join(name).display()))
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Target {
    /// The file at `path`: its directory opened (and made) as [`Dir::create_all`] does.
    pub fn new(path: &Path) -> io::Result<Target> {
        let name = path
            .file_name()
            .ok_or_else(|| invalid(format!("{}: not a file name", path.display())))?;
        let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) => Dir::create_all(parent)?,
            None => Dir::create_all(Path::new("."))?,
        };
        dir.target(name)
    }

    /// The path as given (a transcript's path, a message).
    pub fn path(&self) -> PathBuf {
        match &self.shown {
            Some(path) => path.clone(),
            None => self.dir.path.join(&self.name),
        }
    }

    /// `target`, named by `path` (the same file by another path: an absolute one, say).
    pub fn renamed(target: Target, path: PathBuf) -> Target {
        Target {
            shown: Some(path),
            ..target
        }
    }

    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    pub fn name(&self) -> &OsStr {
        &self.name
    }

    /// A new, empty, private file at the name: made beside it and renamed over whatever file is
    /// there, so nothing that was there is truncated or written through. A symbolic link or a
    /// directory there is refused.
    pub fn create(&self) -> io::Result<File> {
        self.refuse_link()?;
        let (tmp, file) = self.temp()?;
        if let Err(e) = rustix::fs::renameat(&self.dir, &tmp, &self.dir, &self.name) {
            let _ = rustix::fs::unlinkat(&self.dir, &tmp, AtFlags::empty());
            return Err(self.error(e.into()));
        }
        Ok(file)
    }

    /// Writes the whole file at once: `bytes` go to a new file that replaces the name only when
    /// complete, so a reader never sees half of it.
    pub fn write(&self, bytes: &[u8]) -> io::Result<()> {
        self.refuse_link()?;
        let (tmp, mut file) = self.temp()?;
        let done = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| {
                Ok(rustix::fs::renameat(
                    &self.dir, &tmp, &self.dir, &self.name,
                )?)
            });
        if let Err(e) = done {
            let _ = rustix::fs::unlinkat(&self.dir, &tmp, AtFlags::empty());
            return Err(self.error(e));
        }
        Ok(())
    }

    /// Opens the file for appending, creating it (0600) if missing. It must be a regular file
    /// with a single link: a link planted there would make rounds append to its target.
    pub fn append(&self) -> io::Result<File> {
        let flags = OFlags::WRONLY
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC
            | OFlags::NOCTTY;
        let fd = rustix::fs::openat(
            &self.dir,
            &self.name,
            flags,
            Mode::from_raw_mode(PRIVATE_FILE),
        )
        .map_err(|e| match e {
            Errno::LOOP => self.error(symlink_error()),
            e => self.error(e.into()),
        })?;
        let st = rustix::fs::fstat(&fd).map_err(|e| self.error(e.into()))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(self.error(invalid("not a regular file".into())));
        }
        if st.st_nlink > 1 {
            return Err(self.error(invalid(
                "has more than one link (a hard link); rounds does not append through one".into(),
            )));
        }
        Ok(File::from(fd))
    }

    fn refuse_link(&self) -> io::Result<()> {
        match rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                Err(self.error(symlink_error()))
            }
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                Err(self.error(invalid("is a directory".into())))
            }
            _ => Ok(()),
        }
    }

    /// `.NAME.rounds-RANDOM`, new (O_EXCL), private.
    fn temp(&self) -> io::Result<(OsString, File)> {
        // Room for the prefix and suffix within the usual 255-byte name limit.
        let stem = &self.name.as_bytes()[..self.name.len().min(200)];
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for attempt in 0..16u32 {
            let mut tmp = OsString::from(".");
            tmp.push(OsStr::from_bytes(stem));
            tmp.push(format!(".rounds-{}", random(attempt)));
            match rustix::fs::openat(&self.dir, &tmp, flags, Mode::from_raw_mode(PRIVATE_FILE)) {
                Ok(fd) => return Ok((tmp, File::from(fd))),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(self.error(e.into())),
            }
        }
        Err(self.error(io::Error::other("cannot make a file of a new name")))
    }

    fn error(&self, e: io::Error) -> io::Error {
        self.dir.error(&self.name, e)
    }
}

/// Makes `path`'s directory (as [`Dir::create_all`]) and writes `bytes` as the whole new file.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    Target::new(path)?.write(bytes)
}

/// Makes `path`'s directory and a new empty private file at `path` (see [`Target::create`]).
#[cfg(test)]
pub(crate) fn create_private(path: &Path) -> io::Result<File> {
    Target::new(path)?.create()
}

/// `path` with the longest part of it that exists resolved (symbolic links followed), the rest
/// as given. Only for a directory the user named in their own environment (`ROUNDS_HOME`), at
/// setup, before any tool runs: it may sit behind links of theirs.
pub fn resolve_existing(path: &Path) -> PathBuf {
    let mut existing = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let rest = path.strip_prefix(existing).unwrap_or(Path::new(""));
            return real.join(rest);
        }
        match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
            _ => return path.to_owned(),
        }
    }
}

/// Opens (or makes) the directory at `path` one component at a time, following no symbolic link.
fn walk(path: &Path, create: bool) -> io::Result<Dir> {
    let mut components = path.components().peekable();
    let mut shown = PathBuf::new();
    let mut fd = match components.peek() {
        Some(Component::RootDir) => {
            components.next();
            shown.push("/");
            rustix::fs::openat(CWD, "/", dir_flags(), Mode::empty())?
        }
        _ => rustix::fs::openat(CWD, ".", dir_flags(), Mode::empty())?,
    };
    for component in components {
        let name = match component {
            Component::CurDir => continue,
            Component::ParentDir => OsStr::new(".."),
            Component::Normal(name) => name,
            Component::RootDir | Component::Prefix(_) => {
                return Err(invalid(format!("{}: not a path", path.display())));
            }
        };
        shown.push(name);
        fd = step(&fd, name, create)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", shown.display())))?;
    }
    Ok(Dir {
        fd: Arc::new(fd),
        path: path.to_owned(),
    })
}

/// The directory `name` below `parent`, made if missing and `create`.
fn step(parent: &impl AsFd, name: &OsStr, create: bool) -> io::Result<OwnedFd> {
    match rustix::fs::openat(parent, name, dir_flags(), Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT) if create => {
            match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(PRIVATE_DIR)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            rustix::fs::openat(parent, name, dir_flags(), Mode::empty())
                .map_err(|e| explain(parent, name, e))
        }
        Err(e) => Err(explain(parent, name, e)),
    }
}

/// `O_PATH`: a directory needs no read permission to be walked through or written into by
/// handle. With `O_NOFOLLOW` and `O_DIRECTORY`, a symbolic link is not opened but refused.
fn dir_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Says a symbolic link is one (the open itself only says "not a directory").
fn explain(parent: &impl AsFd, name: &OsStr, e: Errno) -> io::Error {
    let st = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW);
    match st.map(|st| FileType::from_raw_mode(st.st_mode)) {
        Ok(FileType::Symlink) => symlink_error(),
        _ => e.into(),
    }
}

fn symlink_error() -> io::Error {
    invalid(
        "is a symbolic link; rounds does not write through one (give the path it points to)".into(),
    )
}

fn single(name: &OsStr) -> io::Result<()> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.contains(&b'/') || name == "." || name == ".." {
        return Err(invalid(format!("{name:?} is not a file name")));
    }
    Ok(())
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// 16 hex digits nobody can predict: std's hasher keys come from the OS's random source.
fn random(attempt: u32) -> String {
    format!(
        "{:016x}",
        RandomState::new().hash_one((std::process::id(), attempt))
    )
}

mod read;
pub use read::{OpenError, open_regular};

#[cfg(test)]
mod tests;
