//! `.git` read-only to tools (issue 31): a repository's `.git` below a writable directory is
//! code that runs outside the sandbox. A tool that writes `.git/hooks/pre-commit`, or sets
//! `core.fsmonitor`, `core.pager`, a filter driver or `include.path` in `.git/config`, has the
//! next `git status` or `git commit` of a developer (or of the CI step that commits with a
//! write token) run its command. Landlock has no deny rules, so the grant on the workspace
//! covers `.git`; instead the child, before it enters Landlock, gets a mount namespace of its
//! own in which each `.git` is a read-only bind mount of itself.
//!
//! What is protected ([`find`], in the supervisor before each command, but in the temp dir
//! once per run: `sandbox::survey`): every `.git` directory
//! below a writable directory (submodules and nested repositories too, but not inside a `.git`:
//! that is covered by the mount of the `.git` above), every `.git` file (a `gitdir:` pointer of
//! a worktree or submodule), and the directory such a file names if it is below a writable
//! directory. A `.git` that is itself, or holds, a directory the user made writable
//! (`--sandbox-write .git`) is left writable: that is the opt-in.
//!
//! How the child does it ([`Shield::enter`], between fork and exec, system calls only):
//! `unshare(CLONE_NEWNS)` where it may (root: the supervisor keeps `CAP_SYS_ADMIN` until
//! then), else `unshare(CLONE_NEWUSER | CLONE_NEWNS)` with its own uid and gid mapped to
//! themselves; every mount made private (nothing propagates back to the rest of the system);
//! then for each path, opened without following a final link and checked to be the file the
//! supervisor found (device and inode), a recursive read-only clone of it (`open_tree`,
//! `mount_setattr`) moved onto it (`move_mount`). Afterwards the supervisor drops
//! `CAP_SYS_ADMIN`, and Landlock (which forbids every change of the mount topology) and the
//! seccomp filter (`seccomp::namespace_filter`) keep the tool from undoing it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many directories [`find`] reads below all writable directories together: a bound on
/// the work done before each command, far above a source tree's size.
pub(crate) const WALK_LIMIT: usize = 200_000;

/// A `.git` file is a line `gitdir: PATH`: more than this is not one.
const POINTER_MAX: u64 = 4096;

/// One path made read-only, with the identity it had when it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

/// Every `.git` below the writable directories `write` (see the module doc), in the order
/// found; `Err` with what was found so far when the walk passed [`WALK_LIMIT`]. Symbolic links
/// are not followed.
pub(crate) fn find(write: &[PathBuf]) -> Result<Vec<Found>, Vec<Found>> {
    find_within(write, write, WALK_LIMIT)
}

/// [`find`] below `roots` only, some of the writable directories `write` (which the opt-in
/// and a `gitdir:` pointer are judged against).
pub(crate) fn find_below(roots: &[PathBuf], write: &[PathBuf]) -> Result<Vec<Found>, Vec<Found>> {
    find_within(roots, write, WALK_LIMIT)
}

/// [`find_below`] with its limit. Breadth first, from each root in turn: a tree a tool grew in
/// one of them (the temp dir) cannot use up the walk before the top of another (the
/// workspace, where the repository is) has been read.
fn find_within(
    roots: &[PathBuf],
    write: &[PathBuf],
    limit: usize,
) -> Result<Vec<Found>, Vec<Found>> {
    let mut found: Vec<Found> = Vec::new();
    let mut budget = limit;
    let mut queue: std::collections::VecDeque<PathBuf> = roots.iter().cloned().collect();
    while let Some(dir) = queue.pop_front() {
        if budget == 0 {
            return Err(found);
        }
        budget -= 1;
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // Most entries are files that are not `.git`: no path is built for them.
            if entry.file_name() != ".git" {
                if kind.is_dir() {
                    queue.push_back(entry.path());
                }
                continue;
            }
            let path = entry.path();
            if kind.is_dir() {
                add(&mut found, &path, write);
            } else if kind.is_file() {
                add(&mut found, &path, write);
                // A gitdir inside a `.git` (a submodule's, a worktree's) is covered by the
                // mount of that `.git`, found by this walk if it is below a writable directory.
                if let Some(gitdir) = pointed(&path)
                    && write.iter().any(|w| gitdir.starts_with(w))
                    && !gitdir.components().any(|c| c.as_os_str() == ".git")
                {
                    add(&mut found, &gitdir, write);
                }
            }
        }
    }
    Ok(found)
}

impl Found {
    /// The same path as it is now, if it is still there: a `.git` found when the run started
    /// may have been removed since, or replaced.
    pub(crate) fn now(&self) -> Option<Found> {
        let meta = std::fs::symlink_metadata(&self.path).ok()?;
        Some(Found {
            path: self.path.clone(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

/// Adds `path` unless it is already there or the user made it (or something in it) writable.
fn add(found: &mut Vec<Found>, path: &Path, write: &[PathBuf]) {
    if write.iter().any(|w| w.starts_with(path)) || found.iter().any(|f| f.path == path) {
        return;
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        found.push(Found {
            path: path.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
        });
    }
}

/// The directory a `.git` file names (`gitdir: PATH`, relative to the file's directory),
/// resolved; `None` when it is not such a file.
fn pointed(file: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(POINTER_MAX)
        .read_to_string(&mut text)
        .ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let target = file.parent()?.join(target);
    let real = std::fs::canonicalize(target).ok()?;
    real.is_dir().then_some(real)
}

/// What the child needs to make the found paths read-only, built before the fork.
pub(crate) struct Shield {
    paths: Vec<(CString, u64, u64)>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

/// Syscall numbers and flags of the new mount API: the same on every architecture rounds
/// builds its seccomp filters for, and not all in the `libc` crate.
pub(crate) const SYS_OPEN_TREE: i64 = 428;
pub(crate) const SYS_MOVE_MOUNT: i64 = 429;
pub(crate) const SYS_FSOPEN: i64 = 430;
pub(crate) const SYS_FSCONFIG: i64 = 431;
pub(crate) const SYS_FSMOUNT: i64 = 432;
pub(crate) const SYS_FSPICK: i64 = 433;
pub(crate) const SYS_MOUNT_SETATTR: i64 = 442;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOUNT_ATTR_RDONLY: u64 = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

/// `struct mount_attr` (version 0, 32 bytes).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

impl Shield {
    /// The shield of `found` (a path with a NUL byte cannot be on disk and is skipped). With
    /// nothing to protect it only gives the child an IPC namespace, where it may.
    pub(crate) fn new(found: &[Found]) -> Shield {
        let paths: Vec<_> = (found.iter())
            .filter_map(|f| {
                Some((
                    CString::new(f.path.as_os_str().as_bytes()).ok()?,
                    f.dev,
                    f.ino,
                ))
            })
            .collect();
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        Shield {
            paths,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// Puts the calling thread (the child, between fork and exec) in a mount namespace where
    /// every path is read-only, and an IPC namespace of its own (`ipc_private` says whether it
    /// got one: the SysV IPC of other processes is then out of its reach). With nothing to
    /// protect, no user namespace is made just for IPC. System calls only; no allocation.
    #[allow(unsafe_code)]
    pub(crate) fn enter(&self, ipc_private: &mut bool) -> Result<(), Failure> {
        if self.paths.is_empty() {
            *ipc_private = unshare(libc::CLONE_NEWIPC).is_ok();
            return Ok(());
        }
        self.enter_namespaces().map_err(Failure::Unavailable)?;
        *ipc_private = true;
        for (path, dev, ino) in &self.paths {
            match read_only(path, *dev, *ino) {
                Ok(()) => {}
                // Removed since the walk: nothing of the repository is left there to protect.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                // A kernel before the new mount API (5.12; Landlock needs 5.13).
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                    return Err(Failure::Unavailable(e));
                }
                Err(e) => return Err(Failure::Broken(e)),
            }
        }
        Ok(())
    }

    /// A mount and an IPC namespace of the calling thread's own (through a user namespace
    /// where it has no `CAP_SYS_ADMIN`), with every mount made private. System calls only.
    #[allow(unsafe_code)]
    fn enter_namespaces(&self) -> std::io::Result<()> {
        let namespaces = libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
        if unshare(namespaces).is_err() {
            unshare(libc::CLONE_NEWUSER | namespaces)?;
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/gid_map", &self.gid_map)?;
        }
        // Before any mount: with shared propagation the read-only mounts would appear in
        // rounds' own namespace, and the user's.
        check(
            // SAFETY: mount(2) with a C string target and null source, type and data.
            unsafe {
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                )
            },
        )
    }
}

/// Why [`Shield::enter`] failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No mount namespace here (the run warned, or with `require` refused to go on): the
    /// command runs without the read-only mounts unless the sandbox is required.
    Unavailable(std::io::Error),
    /// The namespace is there but a path could not be made read-only (replaced since the
    /// supervisor found it: `ESTALE`): the command does not start, in every mode.
    Broken(std::io::Error),
}

fn check(result: libc::c_int) -> std::io::Result<()> {
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[allow(unsafe_code)]
fn unshare(flags: libc::c_int) -> std::io::Result<()> {
    // SAFETY: unshare(2) takes an integer.
    check(unsafe { libc::unshare(flags) })
}

/// A descriptor closed when dropped; no allocation.
struct Fd(libc::c_int);

impl Drop for Fd {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

fn fd(result: libc::c_long) -> std::io::Result<Fd> {
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(Fd(result as libc::c_int))
    }
}

#[allow(unsafe_code)]
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: open(2) of a C string, write(2) of a slice we hold, both checked.
    let file = fd(unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) }.into())?;
    let written = unsafe { libc::write(file.0, bytes.as_ptr().cast(), bytes.len()) };
    if written < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Makes `path` a read-only bind mount of itself, if it still is the file the supervisor found
/// (else `ESTALE`: something replaced it since, and the command does not start).
#[allow(unsafe_code)]
fn read_only(path: &std::ffi::CStr, dev: u64, ino: u64) -> std::io::Result<()> {
    // SAFETY: each call takes integers, C strings we hold, or a struct on our stack; every
    // result is checked, and the descriptors are closed by `Fd`.
    unsafe {
        let target = fd(libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
        .into())?;
        let mut stat: libc::stat = std::mem::zeroed();
        check(libc::fstat(target.0, &mut stat))?;
        if stat.st_dev != dev || stat.st_ino != ino {
            return Err(std::io::Error::from_raw_os_error(libc::ESTALE));
        }
        let tree = fd(libc::syscall(
            SYS_OPEN_TREE,
            target.0,
            c"".as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | libc::AT_EMPTY_PATH as libc::c_uint
                | AT_RECURSIVE,
        ))?;
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        check(libc::syscall(
            SYS_MOUNT_SETATTR,
            tree.0,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) as libc::c_int)?;
        check(libc::syscall(
            SYS_MOVE_MOUNT,
            tree.0,
            c"".as_ptr(),
            target.0,
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        ) as libc::c_int)?;
    }
    Ok(())
}

/// Whether a child here can make a mount namespace: with `CAP_SYS_ADMIN`, or through a user
/// namespace where the kernel lets an unprivileged user make one (Debian's
/// `kernel.unprivileged_userns_clone`, Ubuntu's `kernel.apparmor_restrict_unprivileged_userns`,
/// `user.max_user_namespaces`). The settings only say no; a yes is tried for real in a child
/// that does what a tool's child does and exits: a container's seccomp profile (Docker's
/// refuses `unshare` without `CAP_SYS_ADMIN`) or an LSM can refuse what they allow, and a
/// probe that guessed yes would have every command run with `.git` writable, unannounced.
pub(crate) fn can_unshare() -> bool {
    let admin = rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::SYS_ADMIN)
    });
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/{name}"))
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let allowed = admin
        || (sysctl("user/max_user_namespaces").is_none_or(|n| n > 0)
            && sysctl("kernel/unprivileged_userns_clone").is_none_or(|n| n != 0)
            && sysctl("kernel/apparmor_restrict_unprivileged_userns").is_none_or(|n| n == 0));
    allowed && tried()
}

/// Makes the namespaces of [`Shield::enter_namespaces`] in a forked child: whether it could.
#[allow(unsafe_code)]
fn tried() -> bool {
    let shield = Shield::new(&[]);
    // SAFETY: the child makes system calls only (unshare, open, write, close, mount, _exit),
    // on memory allocated before the fork, so a lock another thread held at the fork does not
    // matter; the parent reaps it.
    match unsafe { libc::fork() } {
        -1 => false,
        0 => {
            let code = if shield.enter_namespaces().is_ok() {
                0
            } else {
                1
            };
            // SAFETY: ends the child without running the parent's exit handlers.
            unsafe { libc::_exit(code) }
        }
        child => {
            let mut status = 0;
            // SAFETY: waits for the child just forked, into a local integer.
            let waited = unsafe { libc::waitpid(child, &mut status, 0) };
            waited == child && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(found: &[Found]) -> Vec<PathBuf> {
        let mut p: Vec<_> = found.iter().map(|f| f.path.clone()).collect();
        p.sort();
        p
    }

    /// The probe tries for real: where the namespaces cannot be made (here: a seccomp filter
    /// that refuses `unshare`, as a container's profile does), it says no, whatever the
    /// settings and capabilities say. Control: the same probe without the filter, where this
    /// machine can make them (the test says why it skips that half otherwise).
    #[test]
    fn the_namespace_probe_says_no_where_unshare_is_refused() {
        let filter = crate::seccomp::namespace_filter().unwrap();
        let refused = std::thread::spawn(move || {
            seccompiler::apply_filter(&filter).unwrap();
            can_unshare()
        })
        .join()
        .unwrap();
        assert!(!refused, "unshare is refused on that thread");
        if tried() {
            assert!(std::thread::spawn(can_unshare).join().unwrap());
        } else {
            eprintln!("skipped the control: this machine makes no mount namespace");
        }
    }

    /// A tool that grows a wide tree in the temp dir (the last writable directory) must not
    /// use up the walk before the workspace's own `.git` is seen; past the limit the answer is
    /// `Err`, which stops the command in every mode. Control: depth first, as the walk was, the
    /// same limit ends inside the tree with the workspace unread.
    #[test]
    fn a_tree_grown_in_one_writable_directory_cannot_hide_anothers_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, tmp) = (root.join("ws"), root.join("tmp"));
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        for i in 0..40 {
            std::fs::create_dir_all(tmp.join(format!("d{i}/e"))).unwrap();
        }
        let write = [ws.clone(), tmp.clone()];
        let found = match find_within(&write, &write, 20) {
            Err(found) => found,
            Ok(_) => panic!("the limit must be reached"),
        };
        assert_eq!(paths(&found), vec![ws.join(".git")]);
        assert_eq!(
            paths(&find_within(&write, &write, 200).unwrap()),
            vec![ws.join(".git")]
        );
        // The control: the stack the walk used took the last directory first.
        let mut stack = write.to_vec();
        let mut read = 0;
        while let Some(d) = stack.pop() {
            if read == 20 {
                break;
            }
            read += 1;
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() && e.file_name() != ".git" {
                    stack.push(e.path());
                }
            }
        }
        assert!(stack.contains(&ws), "depth first read the workspace too");
    }

    #[test]
    fn finds_every_git_below_the_writable_directories_and_what_a_git_file_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        for d in [
            "ws/.git/modules/sub",
            "ws/sub",
            "ws/nested/deep/.git",
            "ws/wt",
            "ws/other-gitdir",
            "outside/.git",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        // A submodule's pointer into the parent's .git, a worktree's pointer elsewhere below the
        // workspace, and one that points outside every writable directory.
        std::fs::write(ws.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        std::fs::write(ws.join("wt/.git"), "gitdir: ../other-gitdir\n").unwrap();
        std::fs::create_dir_all(ws.join("far")).unwrap();
        std::fs::write(
            ws.join("far/.git"),
            format!("gitdir: {}\n", root.join("outside/.git").display()),
        )
        .unwrap();
        // A link is not followed.
        std::os::unix::fs::symlink(root.join("outside"), ws.join("link")).unwrap();
        let found = find(std::slice::from_ref(&ws)).unwrap();
        assert_eq!(
            paths(&found),
            [
                ws.join(".git"),
                ws.join("far/.git"),
                ws.join("nested/deep/.git"),
                ws.join("other-gitdir"),
                ws.join("sub/.git"),
                ws.join("wt/.git"),
            ]
        );
        // `.git/modules/sub` is not listed on its own: the mount of `.git` covers it.
        // The user's opt-in: a writable directory that is a .git, or inside one, keeps it
        // writable.
        let opted = find(&[ws.clone(), ws.join(".git")]).unwrap();
        assert!(!paths(&opted).contains(&ws.join(".git")));
        let inside = find(&[ws.clone(), ws.join(".git/modules")]).unwrap();
        assert!(!paths(&inside).contains(&ws.join(".git")));
        assert_eq!(Shield::new(&found).paths.len(), found.len());
    }

    /// Runs `true` with `shield` entered between fork and exec, as the supervisor's child does.
    #[allow(unsafe_code)]
    fn run_in(shield: Shield) -> std::io::Result<std::process::ExitStatus> {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new("true");
        // SAFETY: the hook makes system calls only, but for the error of a failed test.
        unsafe {
            command.pre_exec(move || {
                let mut ipc = false;
                match shield.enter(&mut ipc) {
                    Ok(()) => Ok(()),
                    Err(Failure::Broken(e)) => Err(e),
                    Err(Failure::Unavailable(e)) => Err(std::io::Error::other(e)),
                }
            });
        }
        command.status()
    }

    #[test]
    fn a_git_replaced_since_it_was_found_stops_the_command() {
        if !can_unshare() {
            eprintln!("skipped: no mount namespace here");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join(".git")).unwrap();
        let found = find(std::slice::from_ref(&ws)).unwrap();
        assert!(run_in(Shield::new(&found)).unwrap().success());
        // The same name, another directory: not the one found.
        std::fs::rename(ws.join(".git"), ws.join("old")).unwrap();
        std::fs::create_dir(ws.join(".git")).unwrap();
        let err = run_in(Shield::new(&found)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ESTALE), "{err}");
        // Gone altogether: nothing to protect, the command runs.
        std::fs::remove_dir(ws.join(".git")).unwrap();
        assert!(run_in(Shield::new(&found)).unwrap().success());
    }
}
