//! The supervisor: a re-exec of `rounds` that sits between rounds and every tool process.
//!
//! Killing a process group is not enough to end a tool: descendants can start their own session,
//! ignore SIGTERM, or outlive their parent and be re-parented to init. The supervisor makes itself
//! a child subreaper, so every orphan of the tool's tree is re-parented to it and stays findable;
//! on request (SIGTERM from rounds) or when its lifeline closes (rounds exited, even by SIGKILL,
//! which closes rounds' end of the supervisor's stdin), it terminates the whole tree — SIGTERM,
//! a short grace, then SIGKILL — reaps it, and only then exits.
//!
//! It also stands between the tool and rounds' secrets: it is started with a scrubbed
//! environment (so `/proc/<parent>/environ` holds no key), and before the tool starts it drops
//! every capability that can override non-dumpability (`CAP_SYS_PTRACE`, and on current kernels
//! also `CAP_SYS_ADMIN` and `CAP_PERFMON`), so even a root tool cannot read rounds' memory or
//! environment (rounds makes itself non-dumpable at startup). Descriptors the launcher of
//! rounds left open (a log file, a connected socket) stop at the supervisor: every descriptor
//! above 2 is closed at the program's `exec`, in every mode.
//!
//! It applies the OS sandbox (see `process::sandbox`): the rules are built here and entered by
//! the child just before `exec`, so the program and all it starts share one Landlock domain
//! that the supervisor stays outside of (the tool can neither signal nor ptrace it). In the
//! sandbox it also drops the capabilities that would let a root tool make devices or change
//! the owner, mode or flags of files it may not write; `CAP_SYS_ADMIN` it keeps for the child,
//! which needs it for its mount namespace (`sandbox::git`) and drops it before `exec`. A
//! sandbox that cannot be set up is not skipped: the program does not run (exit 126).
//!
//! Invocation: `rounds __rounds-supervise STDIN_BYTES|-|inherit -- PROGRAM ARGS…`, with the
//! sandbox in the environment variable `sandbox::SUPERVISOR_ENV` (absent: no sandbox). The first
//! STDIN_BYTES bytes of the supervisor's stdin are the tool's stdin (`-`: the tool's stdin is
//! /dev/null); the rest of the supervisor's stdin is the lifeline, read until EOF. With
//! `inherit` (long-lived servers that talk over stdio, such as MCP servers) the program gets the
//! supervisor's own stdin, and there is no lifeline: the parent-death signal, set in every mode,
//! ends the tree when rounds goes away.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions, getpid, kill_process, wait};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::sandbox::{self, Sandbox};

/// How long descendants get between SIGTERM and SIGKILL.
pub(crate) const GRACE: Duration = Duration::from_millis(500);

/// Exit code when the program could not be started (as shells do).
const CANNOT_RUN: i32 = 127;

/// Exit code when the sandbox could not be set up, so the program was not started (as shells
/// say of a program they cannot execute).
const CANNOT_CONFINE: i32 = 126;

/// Runs the supervisor; returns its exit code: the program's code, or 128+signal.
pub fn main(args: &[OsString]) -> i32 {
    let sandbox = std::env::var_os(sandbox::SUPERVISOR_ENV);
    let (input, sandbox, argv) = match parse(args, sandbox.as_deref()) {
        Ok(parsed) => parsed,
        Err(e) => return say(2, format_args!("rounds supervisor: {e}")),
    };
    if !follow_parent() {
        return 128 + SIGTERM;
    }
    let mut dropped = memory_reaching();
    let mut here = dropped;
    if !sandbox.is_off() {
        dropped |= file_attribute_overrides();
        // The child needs it to make its mount namespace (`sandbox::git`), and drops it before
        // exec; the supervisor never runs the tool's code.
        here = dropped - rustix::thread::CapabilitySet::SYS_ADMIN;
    }
    drop_capabilities(here);
    let signals = match Signals::new([SIGCHLD, SIGTERM, SIGINT, SIGHUP]) {
        Ok(s) => s,
        Err(e) => return say(2, format_args!("rounds supervisor: signals: {e}")),
    };
    let mut child = match start(&argv, input, &sandbox, dropped) {
        Ok(child) => child,
        Err(code) => return code,
    };
    let main_pid = child.id() as i32;
    let child_stdin = child.stdin.take();
    // The tool's input, then the lifeline: runs on its own thread so a tool that never reads its
    // stdin cannot stop the lifeline from being watched.
    match input {
        Input::Closed => std::thread::spawn(move || feed_and_watch(0, child_stdin)),
        Input::Bytes(n) => std::thread::spawn(move || feed_and_watch(n, child_stdin)),
        Input::Inherit => std::thread::spawn(|| {}),
    };
    let mut status = wait_for_exit(signals, main_pid);
    terminate_tree(main_pid, &mut status);
    status.unwrap_or(128 + SIGTERM)
}

/// Says on stderr why the supervisor ends (no one else can) and returns its exit code.
fn say(code: i32, line: std::fmt::Arguments<'_>) -> i32 {
    let _ = writeln!(std::io::stderr(), "{line}");
    code
}

/// Ties the supervisor to rounds and the tool's orphans to the supervisor; false when rounds is
/// already gone. If rounds dies without a word (SIGKILL), the kernel tells us; the lifeline says
/// the same in the modes that have one. rounds spawns supervisors from its only runtime thread,
/// so the signal is tied to the life of the process, not of some worker thread.
fn follow_parent() -> bool {
    let parent = rustix::process::getppid();
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::TERM));
    if rustix::process::getppid() != parent {
        return false;
    }
    if rustix::process::set_child_subreaper(Some(getpid())).is_err() {
        let _ = writeln!(
            std::io::stderr(),
            "rounds supervisor: cannot become a subreaper"
        );
    }
    true
}

/// Starts the program in its sandbox; when it cannot, says why and returns the exit code.
fn start(
    argv: &[OsString],
    input: Input,
    sandbox: &Sandbox,
    dropped: rustix::thread::CapabilitySet,
) -> Result<Child, i32> {
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env_remove(sandbox::SUPERVISOR_ENV)
        .process_group(0)
        .stdin(match input {
            Input::Closed => Stdio::null(),
            Input::Bytes(_) => Stdio::piped(),
            Input::Inherit => Stdio::inherit(),
        });
    let program = argv[0].to_string_lossy();
    match sandbox.prepare() {
        Ok(confinement) => before_exec(&mut command, confinement, dropped),
        Err(e) => {
            return Err(say(
                CANNOT_CONFINE,
                format_args!(
                    "rounds supervisor: cannot set up the sandbox, so {program} was not run: {e}"
                ),
            ));
        }
    }
    command
        .spawn()
        .map_err(|e| say(CANNOT_RUN, format_args!("cannot run {program}: {e}")))
}

/// Waits until the program exits (its status) or the supervisor is told to stop (`None`).
fn wait_for_exit(mut signals: Signals, main_pid: i32) -> Option<i32> {
    let mut status = None;
    for signal in signals.forever() {
        if signal != SIGCHLD {
            break;
        }
        reap(main_pid, &mut status);
        if status.is_some() {
            break;
        }
    }
    status
}

/// What the supervised program reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    /// Nothing: /dev/null.
    Closed,
    /// This many bytes from the supervisor's stdin; the rest is the lifeline.
    Bytes(usize),
    /// The supervisor's stdin itself.
    Inherit,
}

/// Has the child, between fork and exec, close the descriptors it inherited, enter the
/// sandbox (if any), and drop `dropped` (again: the supervisor kept `CAP_SYS_ADMIN` for it).
#[allow(unsafe_code)]
fn before_exec(
    command: &mut Command,
    mut confinement: Option<sandbox::Confinement>,
    dropped: rustix::thread::CapabilitySet,
) {
    // SAFETY: the hook runs in the forked child before exec. The supervisor is single-threaded
    // when it spawns (its only other thread starts after `spawn` returns), so no other thread can
    // have held a lock (the allocator's included) at the fork; the hook only makes system calls
    // (close_range or fcntl, prctl, landlock_restrict_self, seccomp) on rules built before the
    // fork, and allocates nothing unless one fails.
    unsafe {
        command.pre_exec(move || {
            close_inherited_descriptors();
            if let Some(confinement) = confinement.as_mut() {
                confinement.enter()?;
            }
            drop_capabilities(dropped);
            Ok(())
        });
    }
}

/// How far the fallback of `close_inherited_descriptors` looks when the descriptor limit is
/// higher (or unlimited): each look is a system call.
const FD_SCAN_LIMIT: u64 = 1 << 16;

/// Marks every descriptor above 2 close-on-exec, so the program gets only stdin, stdout and
/// stderr: not what rounds' launcher left open (an append-mode log, a connected socket, which
/// would carry data past the sandbox), nor anything of rounds or the supervisor. Marked, not
/// closed: std reports a failed `exec` through a pipe that must live until then.
///
/// Runs between fork and exec: system calls only, no allocation.
fn close_inherited_descriptors() {
    if !mark_by_close_range() {
        mark_one_by_one();
    }
}

/// `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`; false where the kernel cannot (before 5.11).
#[allow(unsafe_code)]
fn mark_by_close_range() -> bool {
    // SAFETY: close_range(2) takes integers only; with CLOSE_RANGE_CLOEXEC it closes nothing,
    // it sets a flag.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    marked == 0
}

/// `fcntl(FD_CLOEXEC)` on every descriptor the limit allows, up to `FD_SCAN_LIMIT`.
#[allow(unsafe_code)]
fn mark_one_by_one() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct it is given.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    let end = if known {
        limit.rlim_cur.min(FD_SCAN_LIMIT)
    } else {
        FD_SCAN_LIMIT
    };
    for fd in 3..end {
        // SAFETY: F_SETFD on a number that is not an open descriptor fails with EBADF and does
        // nothing else.
        unsafe {
            libc::fcntl(fd as libc::c_int, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

/// What is wrong with the supervisor's command line (rounds wrote it: a bug, exit 2).
#[derive(Debug, PartialEq, thiserror::Error)]
enum ArgsError {
    #[error("missing STDIN_BYTES")]
    NoStdinBytes,
    #[error("bad STDIN_BYTES {0:?}")]
    BadStdinBytes(OsString),
    #[error(transparent)]
    Sandbox(#[from] sandbox::EnvError),
    #[error("expected -- PROGRAM ARGS…")]
    NoProgram,
}

fn parse(
    args: &[OsString],
    sandbox: Option<&std::ffi::OsStr>,
) -> Result<(Input, Sandbox, Vec<OsString>), ArgsError> {
    let (len, rest) = args.split_first().ok_or(ArgsError::NoStdinBytes)?;
    let input = match len.to_str() {
        Some("-") => Input::Closed,
        Some("inherit") => Input::Inherit,
        n => Input::Bytes(
            n.and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| ArgsError::BadStdinBytes(len.clone()))?,
        ),
    };
    let sandbox = match sandbox {
        Some(value) => Sandbox::from_env(value)?,
        None => Sandbox::off(),
    };
    let argv = match rest.split_first() {
        Some((dashes, argv)) if dashes == "--" && !argv.is_empty() => argv.to_vec(),
        _ => return Err(ArgsError::NoProgram),
    };
    Ok((input, sandbox, argv))
}

fn feed_and_watch(len: usize, child_stdin: Option<std::process::ChildStdin>) {
    let mut stdin = std::io::stdin().lock();
    let mut payload = vec![0; len];
    let fed = stdin.read_exact(&mut payload);
    if let Some(mut to_child) = child_stdin {
        std::thread::spawn(move || {
            // A tool that exits without reading its input is not an error here.
            let _ = to_child.write_all(&payload);
        });
    }
    if fed.is_ok() {
        let mut sink = [0u8; 64];
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    }
    // The lifeline closed: rounds is gone or wants this call gone.
    let _ = kill_process(getpid(), Signal::TERM);
}

/// Reaps every exited child (any pid: `waitpid(0)` would only see our own process group, and
/// the tool runs in its own); records the main program's status when it is among them.
fn reap(main_pid: i32, status: &mut Option<i32>) {
    while let Ok(Some((pid, status_of))) = wait(WaitOptions::NOHANG) {
        if pid.as_raw_nonzero().get() == main_pid {
            *status = Some(
                match (status_of.exit_status(), status_of.terminating_signal()) {
                    (Some(code), _) => code,
                    (None, Some(sig)) => 128 + sig,
                    (None, None) => 128,
                },
            );
        }
    }
}

/// Ends every process descended from the supervisor: SIGTERM, then SIGKILL after `GRACE`, until
/// none is left. Loops because a dying tree can still fork.
fn terminate_tree(main_pid: i32, status: &mut Option<i32>) {
    let deadline = Instant::now() + GRACE;
    let mut termed = HashSet::new();
    loop {
        reap(main_pid, status);
        let living = descendants(getpid().as_raw_nonzero().get());
        if living.is_empty() {
            return;
        }
        let sig = if Instant::now() < deadline {
            Signal::TERM
        } else {
            Signal::KILL
        };
        for pid in living {
            if sig == Signal::TERM && !termed.insert(pid) {
                continue;
            }
            if let Some(pid) = Pid::from_raw(pid) {
                let _ = kill_process(pid, sig);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every live (non-zombie) process below `root`, found through `/proc`.
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    let table = super::proc_table();
    super::descendants_in(&table, root)
        .into_iter()
        .filter(|pid| table.get(pid).is_some_and(|s| !s.zombie))
        .collect()
}

/// Capabilities that let a process read another process's memory or environment (measured on
/// Linux 6.18: as root without `CAP_SYS_PTRACE`, `CAP_SYS_ADMIN` or `CAP_PERFMON` alone still
/// opens a non-dumpable process's `/proc/PID/environ`), or load code that could.
fn memory_reaching() -> rustix::thread::CapabilitySet {
    use rustix::thread::CapabilitySet as C;
    C::SYS_PTRACE
        | C::SYS_ADMIN
        | C::PERFMON
        | C::BPF
        | C::SYS_RAWIO
        | C::SYS_MODULE
        | C::CHECKPOINT_RESTORE
}

/// Capabilities that let root get around the file rules of the sandbox, which Landlock does
/// not cover: make device nodes (`CAP_MKNOD`), change the owner or the mode of files it does not
/// own (`CAP_CHOWN`, `CAP_FOWNER`), keep setuid bits through writes (`CAP_FSETID`), give a
/// program file capabilities, the setuid of today (`CAP_SETFCAP`), make files immutable or
/// append-only (`CAP_LINUX_IMMUTABLE`).
fn file_attribute_overrides() -> rustix::thread::CapabilitySet {
    use rustix::thread::CapabilitySet as C;
    C::MKNOD | C::CHOWN | C::FOWNER | C::FSETID | C::SETFCAP | C::LINUX_IMMUTABLE
}

/// Removes `drop` everywhere a capability could come back from (bounding, inheritable,
/// permitted, effective, ambient): root's program gets its capabilities from the bounding set
/// at `exec`. Unprivileged, these calls fail harmlessly: there was nothing to drop.
fn drop_capabilities(drop: rustix::thread::CapabilitySet) {
    use rustix::thread::{
        capabilities, clear_ambient_capability_set, remove_capability_from_bounding_set,
        set_capabilities,
    };
    let _ = clear_ambient_capability_set();
    for cap in drop.iter() {
        let _ = remove_capability_from_bounding_set(cap);
    }
    if let Ok(mut sets) = capabilities(None) {
        sets.effective.remove(drop);
        sets.permitted.remove(drop);
        sets.inheritable.remove(drop);
        let _ = set_capabilities(None, sets);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_its_arguments_and_refuses_nonsense() {
        let off = Sandbox::off();
        assert_eq!(
            parse(&os(&["12", "--", "bash", "-c", "x"]), None).unwrap(),
            (Input::Bytes(12), off.clone(), os(&["bash", "-c", "x"]))
        );
        assert_eq!(
            parse(&os(&["-", "--", "true"]), None).unwrap(),
            (Input::Closed, off.clone(), os(&["true"]))
        );
        assert_eq!(
            parse(&os(&["inherit", "--", "srv"]), None).unwrap(),
            (Input::Inherit, off, os(&["srv"]))
        );
        let mut confined = Sandbox::new(sandbox::Mode::WorkspaceWrite);
        confined.write.push("/ws".into());
        let env = confined.to_env().unwrap();
        let (_, sandbox, argv) =
            parse(&os(&["-", "--", "--sandbox", "x"]), Some(env.as_os_str())).unwrap();
        assert_eq!(sandbox, confined);
        assert_eq!(
            argv,
            os(&["--sandbox", "x"]),
            "after --, all is the program's"
        );
        assert_eq!(
            parse(&os(&["x", "--", "true"]), None),
            Err(ArgsError::BadStdinBytes("x".into()))
        );
        assert_eq!(parse(&os(&[]), None), Err(ArgsError::NoStdinBytes));
        assert_eq!(parse(&os(&["1", "true"]), None), Err(ArgsError::NoProgram));
        assert_eq!(parse(&os(&["1", "--"]), None), Err(ArgsError::NoProgram));
        assert_eq!(
            parse(&os(&["1", "--", "true"]), Some("bogus".as_ref())),
            Err(ArgsError::Sandbox(sandbox::EnvError::Mode("bogus".into())))
        );
    }

    #[test]
    #[allow(unsafe_code)]
    fn descriptors_above_stderr_are_closed_at_exec() {
        use std::os::fd::AsRawFd;
        // A descriptor without close-on-exec, as a launcher's `exec 5>>log` leaves one.
        let file = tempfile::tempfile().unwrap();
        let fd = rustix::io::dup(&file).unwrap();
        rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty()).unwrap();
        let probe = format!(
            "test -e /proc/self/fd/{} && echo open || echo closed",
            fd.as_raw_fd()
        );
        let run = |hook: Option<fn()>| {
            let mut command = Command::new("sh");
            command.args(["-c", &probe]);
            if let Some(hook) = hook {
                // SAFETY: the hooks only make system calls.
                unsafe {
                    command.pre_exec(move || {
                        hook();
                        Ok(())
                    });
                }
            }
            String::from_utf8(command.output().unwrap().stdout).unwrap()
        };
        assert_eq!(run(Some(close_inherited_descriptors)), "closed\n");
        // The fallback of kernels without close_range, on its own.
        assert_eq!(run(Some(mark_one_by_one)), "closed\n");
        let mut command = Command::new("sh");
        command.args(["-c", &probe]);
        before_exec(&mut command, None, memory_reaching());
        assert_eq!(
            String::from_utf8(command.output().unwrap().stdout).unwrap(),
            "closed\n"
        );
        // Control: without a hook the program gets it.
        assert_eq!(run(None), "open\n");
    }

    #[test]
    fn descendants_are_found_through_proc() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 5 & sleep 5"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let me = getpid().as_raw_nonzero().get();
        let found = descendants(me);
        for &pid in &found {
            let _ = kill_process(Pid::from_raw(pid).unwrap(), Signal::KILL);
        }
        let _ = child.wait();
        assert!(found.contains(&(child.id() as i32)), "{found:?}");
        assert!(found.len() >= 3, "sh and both sleeps: {found:?}");
    }
}
