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
//! environment (rounds makes itself non-dumpable at startup).
//!
//! It applies the OS sandbox (see `process::sandbox`): the rules are built here and entered by
//! the child just before `exec`, so the program and all it starts share one Landlock domain
//! that the supervisor stays outside of (the tool can neither signal nor ptrace it). A sandbox
//! that cannot be set up is not skipped: the program does not run (exit 126).
//!
//! Invocation: `rounds __rounds-supervise STDIN_BYTES|-|inherit [--sandbox MODE [--require]
//! [--network] [--write DIR]…] -- PROGRAM ARGS…`. The first
//! STDIN_BYTES bytes of the supervisor's stdin are the tool's stdin (`-`: the tool's stdin is
//! /dev/null); the rest of the supervisor's stdin is the lifeline, read until EOF. With
//! `inherit` (long-lived servers that talk over stdio, such as MCP servers) the program gets the
//! supervisor's own stdin, and there is no lifeline: the parent-death signal, set in every mode,
//! ends the tree when rounds goes away.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions, getpid, kill_process, wait};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::sandbox::{self, Sandbox};

/// How long descendants get between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_millis(500);

/// Exit code when the program could not be started (as shells do).
const CANNOT_RUN: i32 = 127;

/// Exit code when the sandbox could not be set up, so the program was not started (as shells
/// say of a program they cannot execute).
const CANNOT_CONFINE: i32 = 126;

/// Runs the supervisor; returns its exit code: the program's code, or 128+signal.
pub fn main(args: &[OsString]) -> i32 {
    let (input, sandbox, argv) = match parse(args) {
        Ok(parsed) => parsed,
        Err(msg) => {
            let _ = writeln!(std::io::stderr(), "rounds supervisor: {msg}");
            return 2;
        }
    };
    // If rounds dies without a word (SIGKILL), the kernel tells us; the lifeline says the same
    // in the modes that have one. rounds spawns supervisors from its only runtime thread, so the
    // signal is tied to the life of the process, not of some worker thread.
    let parent = rustix::process::getppid();
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::TERM));
    if rustix::process::getppid() != parent {
        return 128 + SIGTERM;
    }
    if rustix::process::set_child_subreaper(Some(getpid())).is_err() {
        let _ = writeln!(
            std::io::stderr(),
            "rounds supervisor: cannot become a subreaper"
        );
    }
    drop_memory_capabilities();
    let mut signals = match Signals::new([SIGCHLD, SIGTERM, SIGINT, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "rounds supervisor: signals: {e}");
            return 2;
        }
    };

    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .process_group(0)
        .stdin(match input {
            Input::Closed => Stdio::null(),
            Input::Bytes(_) => Stdio::piped(),
            Input::Inherit => Stdio::inherit(),
        });
    match sandbox.prepare() {
        Ok(Some(confinement)) => confine(&mut command, confinement),
        Ok(None) => {}
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "rounds supervisor: cannot set up the sandbox, so {} was not run: {e}",
                argv[0].to_string_lossy()
            );
            return CANNOT_CONFINE;
        }
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "cannot run {}: {e}",
                argv[0].to_string_lossy()
            );
            return CANNOT_RUN;
        }
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

    let mut status = None;
    'wait: for signal in signals.forever() {
        match signal {
            SIGCHLD => {
                reap(main_pid, &mut status);
                if status.is_some() {
                    break 'wait;
                }
            }
            _ => break 'wait,
        }
    }
    terminate_tree(main_pid, &mut status);
    status.unwrap_or(128 + SIGTERM)
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

/// Has the child enter the sandbox between fork and exec.
#[allow(unsafe_code)]
fn confine(command: &mut Command, mut confinement: sandbox::Confinement) {
    // SAFETY: the hook runs in the forked child before exec. The supervisor is single-threaded
    // when it spawns (its only other thread starts after `spawn` returns), so no other thread can
    // have held a lock (the allocator's included) at the fork; the hook only makes the prctl,
    // landlock_restrict_self and seccomp system calls on rules built before the fork.
    unsafe {
        command.pre_exec(move || confinement.enter());
    }
}

fn parse(args: &[OsString]) -> Result<(Input, Sandbox, Vec<OsString>), String> {
    let (len, rest) = args.split_first().ok_or("missing STDIN_BYTES")?;
    let input = match len.to_str() {
        Some("-") => Input::Closed,
        Some("inherit") => Input::Inherit,
        Some(n) => Input::Bytes(
            n.parse::<usize>()
                .map_err(|_| format!("bad STDIN_BYTES {n:?}"))?,
        ),
        None => return Err("bad STDIN_BYTES".into()),
    };
    let (sandbox, rest) = Sandbox::from_args(rest)?;
    let argv = match rest.split_first() {
        Some((dashes, argv)) if dashes == "--" && !argv.is_empty() => argv.to_vec(),
        _ => return Err("expected -- PROGRAM ARGS…".into()),
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
pub fn descendants(root: i32) -> Vec<i32> {
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

/// Removes the memory-reaching capabilities everywhere they could come back from (bounding,
/// inheritable, permitted, effective, ambient), so a tool running as root still cannot read
/// rounds' keys. Unprivileged, these calls fail harmlessly: there was nothing to drop.
fn drop_memory_capabilities() {
    use rustix::thread::{
        capabilities, clear_ambient_capability_set, remove_capability_from_bounding_set,
        set_capabilities,
    };
    let _ = clear_ambient_capability_set();
    let drop = memory_reaching();
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
            parse(&os(&["12", "--", "bash", "-c", "x"])).unwrap(),
            (Input::Bytes(12), off.clone(), os(&["bash", "-c", "x"]))
        );
        assert_eq!(
            parse(&os(&["-", "--", "true"])).unwrap(),
            (Input::Closed, off.clone(), os(&["true"]))
        );
        assert_eq!(
            parse(&os(&["inherit", "--", "srv"])).unwrap(),
            (Input::Inherit, off, os(&["srv"]))
        );
        let (_, sandbox, argv) = parse(&os(&[
            "-",
            "--sandbox",
            "workspace-write",
            "--write",
            "/ws",
            "--",
            "--sandbox",
        ]))
        .unwrap();
        assert_eq!(sandbox.mode, sandbox::Mode::WorkspaceWrite);
        assert_eq!(sandbox.write, [std::path::PathBuf::from("/ws")]);
        assert_eq!(argv, os(&["--sandbox"]), "after --, all is the program's");
        assert!(parse(&os(&["x", "--", "true"])).is_err());
        assert!(parse(&os(&["1", "true"])).is_err());
        assert!(parse(&os(&["1", "--"])).is_err());
        assert!(parse(&os(&["1", "--sandbox", "bogus", "--", "true"])).is_err());
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
