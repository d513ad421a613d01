//! The read side of the no-link walk: a file from a directory tools can change (the
//! repository's `AGENTS.md`, the project's `.rounds.toml`) is opened once, with no symbolic link
//! followed in any component, and the descriptor itself is checked (a regular file, not on
//! procfs or sysfs). Checking a path and then opening it again lets a tool swap the file for a
//! link to `/proc/self/environ` in between; checking what was opened cannot be raced.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Why a file was not opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("no such file")]
    NotFound,
    /// The last component is a symbolic link; where it points (relative to the link's
    /// directory when the link is relative), for a caller that may follow it itself.
    #[error("a symbolic link (to {}); not followed", .0.display())]
    Link(PathBuf),
    #[error("not a regular file (a {0})")]
    NotRegular(&'static str),
    /// A file of the kernel's (procfs, sysfs…): its content is the process's, not a file's.
    #[error("a file of the kernel's (procfs, sysfs), not a regular file")]
    Kernel,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Filesystems whose "regular files" are views of the kernel and of processes.
const KERNEL_FS: &[u64] = &[
    0x9fa0,      // procfs
    0x6265_6572, // sysfs
    0x6462_6720, // debugfs
    0x7472_6163, // tracefs
    0x7363_6673, // securityfs
    0x6265_6570, // configfs
    0xde5e_81e4, // efivarfs
    0x0027_e0eb, // cgroup
    0x6367_7270, // cgroup2
    0xcafe_4a11, // bpf
];

/// Opens `path` for reading: every directory walked with `O_NOFOLLOW`, the file opened with
/// `O_NOFOLLOW` and without blocking (a FIFO would hang a plain open), then checked by its
/// descriptor. Nothing is opened by the path string a second time.
pub fn open_regular(path: &Path) -> Result<File, OpenError> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(OpenError::Io(super::invalid(format!(
            "{}: not a file's path",
            path.display()
        ))));
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let dir = super::walk(parent, false)?;
    // A look first, so that a FIFO or a device is never opened at all; the descriptor is
    // checked again below, since the name may change in between.
    let st = match rustix::fs::statat(dir.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Err(OpenError::NotFound),
        Err(e) => return Err(OpenError::Io(e.into())),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => {
            let target =
                rustix::fs::readlinkat(dir.as_fd(), name, Vec::new()).map_err(io::Error::from)?;
            let target: std::ffi::OsString =
                std::os::unix::ffi::OsStringExt::from_vec(target.into_bytes());
            let target = PathBuf::from(target);
            return Err(OpenError::Link(parent.join(target)));
        }
        other => return Err(OpenError::NotRegular(kind(other))),
    }
    let fd = rustix::fs::openat(
        dir.as_fd(),
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        // Made a link since the look above.
        Errno::LOOP => OpenError::Link(parent.join(name)),
        e => OpenError::Io(e.into()),
    })?;
    let kind_now =
        FileType::from_raw_mode(rustix::fs::fstat(&fd).map_err(io::Error::from)?.st_mode);
    if kind_now != FileType::RegularFile {
        return Err(OpenError::NotRegular(kind(kind_now)));
    }
    let fs = rustix::fs::fstatfs(&fd).map_err(io::Error::from)?;
    // `f_type`'s integer type differs between targets; the magic numbers fit in 32 bits.
    #[allow(clippy::unnecessary_cast)]
    let magic = (fs.f_type as i64 as u64) & 0xffff_ffff;
    if KERNEL_FS.contains(&magic) {
        return Err(OpenError::Kernel);
    }
    Ok(File::from(fd))
}

fn kind(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "file of unknown type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    fn read(path: &Path) -> Result<String, OpenError> {
        let mut text = String::new();
        open_regular(path)?.read_to_string(&mut text)?;
        Ok(text)
    }

    #[test]
    fn a_regular_file_is_read_and_nothing_else_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("marker.txt"), "MARKER").unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::fs::write(root.join("real/AGENTS.md"), "MARKER").unwrap();
        symlink(root.join("real"), root.join("linked")).unwrap();
        symlink(root.join("marker.txt"), root.join("final-link")).unwrap();
        symlink("/proc/self/environ", root.join("environ")).unwrap();
        symlink("/proc/self/root/etc/hostname", root.join("magic")).unwrap();
        std::fs::create_dir(root.join("a-dir")).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(root.join("fifo"))
            .status()
            .is_ok_and(|s| s.success());

        // The control: the same file, by a path with no link in it, is read.
        assert_eq!(read(&root.join("marker.txt")).unwrap(), "MARKER");
        assert_eq!(read(&root.join("real/AGENTS.md")).unwrap(), "MARKER");

        let link = |what: &str, path: PathBuf| match read(&path) {
            Err(OpenError::Link(_)) => {}
            other => panic!("{what}: {other:?}"),
        };
        link("a link as the last component", root.join("final-link"));
        link("a link to /proc/self/environ", root.join("environ"));
        link("a magic link's path", root.join("magic"));
        assert!(
            matches!(read(&root.join("linked/AGENTS.md")), Err(OpenError::Io(_))),
            "a link as a middle component"
        );
        assert!(matches!(
            read(&root.join("a-dir")),
            Err(OpenError::NotRegular("directory"))
        ));
        if fifo {
            // Would hang a plain open.
            assert!(matches!(
                read(&root.join("fifo")),
                Err(OpenError::NotRegular("FIFO"))
            ));
        } else {
            eprintln!("skipped the FIFO: mkfifo is not available here");
        }
        assert!(matches!(
            read(Path::new("/dev/null")),
            Err(OpenError::NotRegular("character device"))
        ));
        assert!(matches!(
            read(&root.join("absent")),
            Err(OpenError::NotFound)
        ));
        // procfs through no link at all: a "regular file" that is the process's environment.
        assert!(matches!(
            read(Path::new("/proc/self/environ")),
            Err(OpenError::Kernel) | Err(OpenError::Io(_))
        ));
        assert!(matches!(
            read(Path::new("/proc/version")),
            Err(OpenError::Kernel)
        ));
        let pid = std::process::id();
        assert!(matches!(
            read(Path::new(&format!("/proc/{pid}/environ"))),
            Err(OpenError::Kernel)
        ));
        // A magic link as a middle component (`root` leads to the process's root directory).
        assert!(matches!(
            read(Path::new(&format!("/proc/{pid}/root/etc/hostname"))),
            Err(OpenError::Io(_))
        ));
    }
}
