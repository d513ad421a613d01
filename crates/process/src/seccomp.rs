//! The seccomp filters of a sandboxed tool: what Landlock has no rights for.
//!
//! Landlock decides *where* a tool may write, but not the attributes of files it may not write:
//! `chmod` and `chown` of a file outside every writable directory go through, and much that is
//! not a file at all. The filters fill the gaps that matter most:
//! - [`file_owner_filter`], whenever the sandbox is on: no setuid or setgid mode, by `chmod` or
//!   by creating a file (a tool run as root would leave a setuid-root program for any local
//!   user), and no `chown` at all. It refuses with `EPERM`, the error a process without the
//!   privilege gets anyway; [`openat2_filter`] makes `openat2` look absent (`ENOSYS`).
//! - [`namespace_filter`], whenever the sandbox is on: no mounting and no namespaces, so the
//!   read-only `.git` mounts stay (`sandbox::git`).
//! - [`process_filter`], whenever the sandbox is on: no resource limits, priorities or CPU
//!   affinity set on another process (rounds among them), no keyrings; and [`ipc_filter`]: no
//!   SysV IPC where the tool has no IPC namespace of its own.
//! - [`socket_filter`], when the network is off: only UNIX and TCP sockets, no `io_uring`. It
//!   refuses with `EACCES`, as Landlock refuses a TCP connection.
//!
//! A filter reads system call arguments, not memory behind pointers, so it cannot tell one path
//! from another: a `chmod 644` of a file outside the writable directories is still allowed (see
//! docs/security.md, "What the sandbox does not cover").

use std::collections::BTreeMap;

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

#[cfg(target_arch = "x86_64")]
pub(crate) const ARCH: Option<TargetArch> = Some(TargetArch::x86_64);
#[cfg(target_arch = "aarch64")]
pub(crate) const ARCH: Option<TargetArch> = Some(TargetArch::aarch64);
#[cfg(target_arch = "riscv64")]
pub(crate) const ARCH: Option<TargetArch> = Some(TargetArch::riscv64);
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
pub(crate) const ARCH: Option<TargetArch> = None;

/// On x86_64, the x32 ABI reaches the same calls under other numbers.
#[cfg(target_arch = "x86_64")]
const ALIASES: &[i64] = &[0x4000_0000];
#[cfg(not(target_arch = "x86_64"))]
const ALIASES: &[i64] = &[];

/// `fchmodat2(2)` (Linux 6.6): 452 on every architecture above, and missing from some libc
/// versions (the `libc` crate has no `SYS_fchmodat2` for aarch64).
const SYS_FCHMODAT2: i64 = 452;

/// Why a filter could not be built: the command does not start without it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FilterError {
    #[error("no seccomp support for this architecture")]
    UnknownArch,
    #[error("{0}")]
    Backend(#[from] BackendError),
}

/// The calls that set a file's mode, with the index of their mode argument.
fn mode_calls() -> Vec<(i64, u8)> {
    #[allow(unused_mut)]
    let mut calls = vec![
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (SYS_FCHMODAT2, 2),
    ];
    // Newer architectures only have the `*at` forms.
    #[cfg(target_arch = "x86_64")]
    calls.push((libc::SYS_chmod, 1));
    calls
}

/// The calls that create a file with a mode: the index of their flags argument (for `open`
/// and `openat`, whose mode counts only with `O_CREAT` or `O_TMPFILE`) and of their mode.
fn create_calls() -> Vec<(i64, Option<u8>, u8)> {
    #[allow(unused_mut)]
    let mut calls = vec![(libc::SYS_openat, Some(2), 3), (libc::SYS_mknodat, None, 2)];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        (libc::SYS_open, Some(1), 2),
        (libc::SYS_creat, None, 1),
        (libc::SYS_mknod, None, 1),
    ]);
    calls
}

/// `O_TMPFILE` without the `O_DIRECTORY` bit it includes: a file made with its mode.
const O_TMPFILE_BIT: u64 = 0o20_000_000;

/// The calls that change a file's owner or group.
fn owner_calls() -> Vec<i64> {
    #[allow(unused_mut)]
    let mut calls = vec![libc::SYS_fchown, libc::SYS_fchownat];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_chown, libc::SYS_lchown]);
    calls
}

fn arg(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
}

/// A condition on a whole 64-bit argument (a pointer).
fn arg64(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(index, SeccompCmpArgLen::Qword, op, value)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, BackendError> {
    SeccompRule::new(conditions)
}

/// `rules` for every number of each call (x32 aliases included), compiled: a call that matches
/// a rule (or has none: every use matches) gets `errno`, anything else runs. Calls of another
/// architecture (32-bit x86 code) kill the process: the filter would not understand them.
fn compile(calls: Vec<(i64, Vec<SeccompRule>)>, errno: i32) -> Result<BpfProgram, FilterError> {
    let arch = ARCH.ok_or(FilterError::UnknownArch)?;
    let mut rules = BTreeMap::new();
    for (call, refuse) in calls {
        for alias in std::iter::once(0).chain(ALIASES.iter().copied()) {
            rules.insert(call + alias, refuse.clone());
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )?;
    Ok(BpfProgram::try_from(filter)?)
}

/// `chmod(2)` and its kin are refused (EPERM) when the mode has `S_ISUID` or `S_ISGID`; every
/// `chown(2)` is refused, whatever the owner.
///
/// Creating a file with a setuid or setgid mode (`open(O_CREAT, 06755)`, `creat`, `mknod` of a
/// regular file) is refused the same way: root's file would keep its bits until the first
/// write (the supervisor drops `CAP_FSETID`), and a file of root's that another user may run
/// while it is setuid is enough. (`openat2` carries its mode in a struct a filter cannot read:
/// [`openat2_filter`] refuses it.)
pub(crate) fn file_owner_filter() -> Result<BpfProgram, FilterError> {
    let build = || -> Result<Vec<(i64, Vec<SeccompRule>)>, BackendError> {
        use SeccompCmpOp::MaskedEq;
        let mut calls = Vec::new();
        for (call, mode) in mode_calls() {
            let refuse = [libc::S_ISUID, libc::S_ISGID]
                .into_iter()
                .map(|bit| rule(vec![arg(mode, MaskedEq(bit.into()), bit.into())?]))
                .collect::<Result<Vec<_>, _>>()?;
            calls.push((call, refuse));
        }
        for (call, flags, mode) in create_calls() {
            let mut refuse = Vec::new();
            for bit in [libc::S_ISUID, libc::S_ISGID] {
                let special = arg(mode, MaskedEq(bit.into()), bit.into())?;
                match flags {
                    None => refuse.push(rule(vec![special])?),
                    Some(flags) => {
                        for creating in [libc::O_CREAT as u64, O_TMPFILE_BIT] {
                            refuse.push(rule(vec![
                                arg(flags, MaskedEq(creating), creating)?,
                                special.clone(),
                            ])?);
                        }
                    }
                }
            }
            calls.push((call, refuse));
        }
        // No rule: refused whatever the arguments.
        calls.extend(owner_calls().into_iter().map(|call| (call, Vec::new())));
        Ok(calls)
    };
    compile(build()?, libc::EPERM)
}

/// Every call that changes the mount table or enters or makes a namespace is refused (EPERM):
/// the read-only mounts of `.git` (`sandbox::git`) must stay, and a new user namespace would
/// give the tool back the capabilities the supervisor dropped (within it).
pub(crate) fn namespace_filter() -> Result<BpfProgram, FilterError> {
    use super::sandbox::git;
    let calls = [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_unshare,
        libc::SYS_setns,
        git::SYS_OPEN_TREE,
        git::SYS_MOVE_MOUNT,
        git::SYS_FSOPEN,
        git::SYS_FSCONFIG,
        git::SYS_FSMOUNT,
        git::SYS_FSPICK,
        git::SYS_MOUNT_SETATTR,
    ];
    // No rule: refused whatever the arguments.
    compile(
        calls.into_iter().map(|call| (call, Vec::new())).collect(),
        libc::EPERM,
    )
}

/// What reaches other processes of the same user (or every process, for root) through their
/// pid, refused (EPERM) unless it names the caller itself (pid or `who` 0): resource limits
/// (`prlimit --pid`, which ends rounds with `--fsize=1`), priority (`renice -p`, and any
/// `PRIO_USER`), CPU affinity and scheduling (`taskset -p`, `chrt -p`), I/O priority (`ionice
/// -p`, and any `IOPRIO_WHO_USER`). `ulimit`, `nice CMD`, `taskset -c 0 CMD` and `ionice -c3
/// CMD` work on the caller and still work. Also the kernel's keyrings (`add_key`, `keyctl`,
/// `request_key`): the session keyring is rounds' own.
pub(crate) fn process_filter() -> Result<BpfProgram, FilterError> {
    const PRIO_USER: u64 = 2;
    const IOPRIO_WHO_USER: u64 = 3;
    let build = || -> Result<Vec<(i64, Vec<SeccompRule>)>, BackendError> {
        use SeccompCmpOp::{Eq, Ne};
        let other = || rule(vec![arg(0, Ne, 0)?]);
        let mut calls = vec![
            // Reading another process's limits (no new limit) is harmless.
            (
                libc::SYS_prlimit64,
                vec![rule(vec![arg(0, Ne, 0)?, arg64(2, Ne, 0)?])?],
            ),
            (libc::SYS_sched_setaffinity, vec![other()?]),
            (libc::SYS_sched_setscheduler, vec![other()?]),
            (libc::SYS_sched_setparam, vec![other()?]),
            (libc::SYS_sched_setattr, vec![other()?]),
            (
                libc::SYS_setpriority,
                vec![
                    rule(vec![arg(0, Eq, PRIO_USER)?])?,
                    rule(vec![arg(1, Ne, 0)?])?,
                ],
            ),
            (
                libc::SYS_ioprio_set,
                vec![
                    rule(vec![arg(0, Eq, IOPRIO_WHO_USER)?])?,
                    rule(vec![arg(1, Ne, 0)?])?,
                ],
            ),
        ];
        calls.extend(
            [libc::SYS_add_key, libc::SYS_keyctl, libc::SYS_request_key]
                .into_iter()
                .map(|call| (call, Vec::new())),
        );
        Ok(calls)
    };
    compile(build()?, libc::EPERM)
}

/// SysV shared memory, message queues and semaphores refused (EPERM): a segment or queue of
/// another process of the same user is reachable by its id. Only where the child could not get
/// an IPC namespace of its own (`sandbox::git::Shield`), in which its SysV objects are private
/// and programs that need them (PostgreSQL) still work.
pub(crate) fn ipc_filter() -> Result<BpfProgram, FilterError> {
    let calls = [
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semtimedop,
        libc::SYS_semctl,
    ];
    compile(
        calls.into_iter().map(|call| (call, Vec::new())).collect(),
        libc::EPERM,
    )
}

/// `openat2(2)` refused with ENOSYS, as a kernel before 5.6 would: its mode is in a struct the
/// filter cannot read, and callers fall back to `openat`, which [`file_owner_filter`] checks.
pub(crate) fn openat2_filter() -> Result<BpfProgram, FilterError> {
    compile(vec![(SYS_OPENAT2, Vec::new())], libc::ENOSYS)
}

/// `openat2(2)`: 437 on every architecture above.
const SYS_OPENAT2: i64 = 437;

/// `socket(2)` is refused (EACCES) unless it makes a UNIX socket or a TCP socket (stream,
/// protocol 0 or TCP: not SCTP or MPTCP, which Landlock's TCP rules may not cover);
/// `io_uring_setup(2)` is refused, since io_uring can create sockets without `socket(2)`.
pub(crate) fn socket_filter() -> Result<BpfProgram, FilterError> {
    let build = || -> Result<Vec<SeccompRule>, BackendError> {
        use SeccompCmpOp::{Eq, MaskedEq, Ne};
        let unix = libc::AF_UNIX as u64;
        let inet = libc::AF_INET as u64;
        let inet6 = libc::AF_INET6 as u64;
        let tcp = libc::IPPROTO_TCP as u64;
        let stream = libc::SOCK_STREAM as u64;
        // Each rule matches calls to refuse; rules are alternatives, conditions in one rule all
        // have to hold.
        let mut refuse = vec![rule(vec![
            arg(0, Ne, unix)?,
            arg(0, Ne, inet)?,
            arg(0, Ne, inet6)?,
        ])?];
        for family in [inet, inet6] {
            // The socket type is the low four bits; the rest are SOCK_NONBLOCK and SOCK_CLOEXEC.
            for kind in (0..16u64).filter(|&k| k != stream) {
                refuse.push(rule(vec![
                    arg(0, Eq, family)?,
                    arg(1, MaskedEq(0xf), kind)?,
                ])?);
            }
            refuse.push(rule(vec![
                arg(0, Eq, family)?,
                arg(2, Ne, 0)?,
                arg(2, Ne, tcp)?,
            ])?);
        }
        Ok(refuse)
    };
    let refuse = build()?;
    compile(
        vec![
            (libc::SYS_socket, refuse),
            (libc::SYS_io_uring_setup, Vec::new()),
        ],
        libc::EACCES,
    )
}

#[cfg(test)]
mod tests;
