//! Running external commands for tools and hooks: always under the supervisor, with a scrubbed
//! environment, stdin given or closed, output captured with bounded memory, the OS sandbox
//! (`sandbox`), and a timeout or cancellation that ends the whole process tree before `run`
//! returns.
//!
//! Escaped processes: the supervisor is a subreaper for its tool's tree, but a tool may still
//! kill or stop its supervisor (without Landlock signal scoping), orphaning the tree. rounds
//! itself therefore becomes a subreaper too ([`become_subreaper`], once at startup), so such
//! orphans are re-parented to rounds rather than to init, and [`reap_orphans`] (run after every
//! call, and by the wiring at exit) kills and reaps every child of rounds that is not a live
//! supervisor it started, with its descendants.
//!
//! A call whose future is dropped (cancelled, the run's deadline) leaves its supervisor ending
//! its tree on its own, for up to its grace period; at the end of a run, [`settle_and_reap`]
//! waits for those supervisors (bounded) so nothing of a tool outlives rounds.
#![deny(unsafe_code)]
#![deny(clippy::print_stdout)]

use rounds_base::{files, providers, redact, transcript};

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

pub mod argv;
pub mod capture;
pub(crate) mod pin;
pub mod relocations;
pub mod sandbox;
mod seccomp;
mod settle;
pub mod supervisor;

use settle::Abandon;
pub use settle::settle_and_reap;

pub use capture::{Captured, Limits};
pub use sandbox::Sandbox;

/// The first argument that turns the `rounds` binary into a supervisor.
pub const SUPERVISE_ARG: &str = "__rounds-supervise";

/// Environment variables a tool process gets from rounds' own environment by default: enough
/// for shells and toolchains to work, nothing that usually holds a credential.
pub(crate) const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "CI",
];

/// Builds the environment of tool processes from rounds' environment: `BASE_ENV`, every `LC_*`,
/// and the names the user passed through (never a provider key).
pub fn tool_env(
    get: &dyn Fn(&str) -> Option<OsString>,
    all_names: &[String],
    extra: &[String],
) -> Vec<(OsString, OsString)> {
    let wanted = |name: &str| {
        BASE_ENV.contains(&name) || name.starts_with("LC_") || extra.iter().any(|e| e == name)
    };
    let mut env: Vec<(OsString, OsString)> = all_names
        .iter()
        .filter(|n| wanted(n) && !crate::providers::is_key_var(n))
        .filter_map(|n| get(n).map(|v| (OsString::from(n), v)))
        .collect();
    env.sort();
    env.dedup_by(|a, b| a.0 == b.0);
    env
}

/// Everything the tool processes of a run share (MCP servers, command tools, hooks, bash):
/// where they run and their environment.
pub struct ProcessContext<'a> {
    pub cwd: &'a Path,
    pub env: &'a [(OsString, OsString)],
    /// The run's sandbox; a process whose own entry allows the network gets
    /// `sandbox.with_network(true)`.
    pub sandbox: &'a Sandbox,
}

/// One command to run.
pub struct Spec<'a> {
    /// Program and arguments, e.g. `["bash", "-c", command]`.
    pub argv: Vec<OsString>,
    pub cwd: &'a Path,
    /// The complete environment of the command.
    pub env: &'a [(OsString, OsString)],
    /// Bytes for the command's stdin; `None` closes it.
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    pub cancel: CancellationToken,
    pub stdout: Limits,
    pub stderr: Limits,
    /// The OS sandbox the command runs in.
    pub sandbox: &'a Sandbox,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this code (128+N when killed by signal N).
    Code(i32),
    TimedOut,
    Cancelled,
}

#[derive(Debug)]
pub struct Finished {
    pub exit: Exit,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
}

/// Runs `spec` to its end. When this returns, no process of the command is left.
pub async fn run(spec: Spec<'_>) -> std::io::Result<Finished> {
    let started = Instant::now();
    let stdin_len = match &spec.stdin {
        Some(bytes) => bytes.len().to_string(),
        None => "-".to_owned(),
    };
    let mut command = supervisor_command(
        &spec.argv,
        stdin_len.as_ref(),
        spec.env,
        spec.cwd,
        spec.sandbox,
    );
    let mut child = spawn_registered(&mut command)?;
    let pid = child.id().and_then(|id| Pid::from_raw(id as i32));
    // The caller may drop this future (a cancelled call, the run's deadline): the supervisor
    // is then left to end its tree alone, and `settle` has rounds wait for it before it exits.
    let mut watch = Abandon(pid);

    // The supervisor's stdin carries the command's input, then stays open as the lifeline: if
    // this future is dropped or rounds dies, it closes and the supervisor ends the tree.
    let mut lifeline = child.stdin.take();
    if let (Some(input), Some(pipe)) = (&spec.stdin, lifeline.as_mut()) {
        // A command that exits without reading is fine; its exit status tells the story.
        let _ = pipe.write_all(input).await;
    }
    let stop_reading = CancellationToken::new();
    let out = tokio::spawn(read_into(
        child.stdout.take(),
        capture::Capture::new(spec.stdout),
        stop_reading.clone(),
    ));
    let err = tokio::spawn(read_into(
        child.stderr.take(),
        capture::Capture::new(spec.stderr),
        stop_reading.clone(),
    ));

    let ended = tokio::select! {
        status = child.wait() => Some(status?),
        () = tokio::time::sleep(spec.timeout) => None,
        () = spec.cancel.cancelled() => None,
    };
    let exit = match ended {
        Some(status) => exit_of(status),
        None => {
            let reason = if spec.cancel.is_cancelled() {
                Exit::Cancelled
            } else {
                Exit::TimedOut
            };
            stop(&mut child, pid).await;
            reason
        }
    };
    // The supervisor is reaped (`child.wait` returned, in `stop` too): nothing to wait for.
    watch.0 = None;
    drop(lifeline);
    // The tree is gone, so the pipes are at EOF; a writer that escaped the supervisor (it was
    // itself killed) must not hold the call open.
    let drain = tokio::time::sleep(Duration::from_millis(500));
    tokio::pin!(drain);
    let collect = async { (out.await, err.await) };
    tokio::pin!(collect);
    let (out, err) = tokio::select! {
        r = &mut collect => r,
        () = &mut drain => { stop_reading.cancel(); collect.await }
    };
    // A tree whose supervisor was killed was re-parented to rounds.
    reap_orphans_async().await;
    let gone = |e: tokio::task::JoinError| std::io::Error::other(e.to_string());
    Ok(Finished {
        exit,
        stdout: out.map_err(gone)?,
        stderr: err.map_err(gone)?,
        duration: started.elapsed(),
    })
}

/// The supervisor's exit as the command's: its code, or 128 + the signal that ended it, as a
/// shell says it.
fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    Exit::Code(
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
    )
}

/// Starts `argv` under the supervisor as a long-lived server talking over stdio (an MCP
/// server), in `sandbox`, with stdin, stdout and stderr piped. The tree ends when the returned
/// child is sent SIGTERM (see `terminate`) or when rounds exits.
pub fn spawn_server(
    argv: &[OsString],
    env: &[(OsString, OsString)],
    cwd: &Path,
    sandbox: &Sandbox,
) -> std::io::Result<tokio::process::Child> {
    let mut command = supervisor_command(argv, "inherit".as_ref(), env, cwd, sandbox);
    spawn_registered(&mut command)
}

/// `rounds __rounds-supervise INPUT -- ARGV…` in its own process group (a Ctrl-C at the
/// terminal reaches rounds, which decides what to stop), with exactly `env` plus the sandbox
/// (`sandbox::SUPERVISOR_ENV`, never on the command line, which every user can read), and
/// stdin, stdout and stderr piped.
fn supervisor_command(
    argv: &[OsString],
    input: &std::ffi::OsStr,
    env: &[(OsString, OsString)],
    cwd: &Path,
    sandbox: &Sandbox,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(supervisor_program());
    command
        .arg(SUPERVISE_ARG)
        .arg(input)
        .arg("--")
        .args(argv)
        .process_group(0)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Set after the tool's own variables, so none of them can stand in for it.
    match sandbox.to_env() {
        Some(value) => command.env(sandbox::SUPERVISOR_ENV, value),
        None => command.env_remove(sandbox::SUPERVISOR_ENV),
    };
    command
}

/// Ends a supervised process tree and reaps the supervisor; bounded in time.
pub async fn terminate(child: &mut tokio::process::Child) {
    let pid = child.id().and_then(|id| Pid::from_raw(id as i32));
    let mut watch = Abandon(pid);
    stop(child, pid).await;
    watch.0 = None;
    reap_orphans_async().await;
}

/// Asks the supervisor to end the tree; if it does not finish in time, kills it and its group.
async fn stop(child: &mut tokio::process::Child, pid: Option<Pid>) {
    if let Some(pid) = pid {
        let _ = kill_process(pid, Signal::TERM);
        // A tool may have stopped its supervisor (where Landlock cannot scope signals): the
        // TERM would wait for a SIGCONT forever.
        let _ = kill_process(pid, Signal::CONT);
    }
    let patience = supervisor::GRACE + Duration::from_secs(2);
    if tokio::time::timeout(patience, child.wait()).await.is_err() {
        if let Some(pid) = pid {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        let _ = child.kill().await;
    }
}

async fn read_into(
    pipe: Option<impl AsyncRead + Unpin>,
    mut capture: capture::Capture,
    stop: CancellationToken,
) -> Captured {
    let Some(mut pipe) = pipe else {
        return capture.finish();
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            n = pipe.read(&mut buf) => n,
            () = stop.cancelled() => break,
        };
        match n {
            Ok(0) | Err(_) => break,
            Ok(n) => capture.push(&buf[..n]),
        }
    }
    capture.finish()
}

static SUPERVISOR_PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Runs supervisors with `program` (a `rounds` binary) instead of this very binary: for a
/// program that embeds the library, or a test binary, which cannot act as the supervisor. The
/// first call wins.
pub fn set_supervisor_program(program: PathBuf) {
    let _ = SUPERVISOR_PROGRAM.set(program);
}

/// The program to run as supervisor: this very binary. `/proc/self/exe` still works if the file
/// was replaced or deleted while rounds runs.
fn supervisor_program() -> PathBuf {
    if let Some(program) = SUPERVISOR_PROGRAM.get() {
        return program.clone();
    }
    let proc = PathBuf::from("/proc/self/exe");
    if proc.exists() {
        return proc;
    }
    std::env::current_exe().unwrap_or(proc)
}

/// Makes this process's memory and environment unreadable by other processes of the same user
/// (and, with the supervisor dropping `CAP_SYS_PTRACE`, by tool processes running as root).
pub fn protect_self() {
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
}

/// The supervisors rounds started and has not yet seen exit, by pid, with their start time (so
/// a recycled pid is not mistaken for one). Held across spawning, so `reap_orphans` never sees
/// a supervisor that is not yet registered.
static SUPERVISORS: Mutex<Option<HashMap<i32, u64>>> = Mutex::new(None);

/// Set once rounds is a subreaper: only then are its unknown children orphans to reap (in a
/// test binary, they are other tests' processes).
static SUBREAPER: AtomicBool = AtomicBool::new(false);

fn supervisors() -> std::sync::MutexGuard<'static, Option<HashMap<i32, u64>>> {
    SUPERVISORS.lock().unwrap_or_else(|e| e.into_inner())
}

fn spawn_registered(
    command: &mut tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    let mut known = supervisors();
    let child = command.spawn()?;
    if let Some(pid) = child.id().map(|id| id as i32)
        && let Some(stat) = proc_stat(pid)
    {
        known
            .get_or_insert_with(HashMap::new)
            .insert(pid, stat.start);
    }
    Ok(child)
}

/// Makes rounds a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process of a tool whose
/// supervisor died is re-parented to rounds instead of init, where `reap_orphans` finds it.
/// Call once at startup, before any tool process starts.
pub fn become_subreaper() -> std::io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    SUBREAPER.store(true, Ordering::SeqCst);
    Ok(())
}

/// How long `reap_orphans` keeps at it: killed processes cannot fork, so a few rounds suffice.
const REAP_PATIENCE: Duration = Duration::from_secs(2);

/// Kills (SIGKILL) and reaps every child of rounds that is not a live supervisor rounds
/// started, with all its descendants; returns how many processes it killed. Does nothing unless
/// `become_subreaper` succeeded. Called after every `run` and `terminate`; the wiring also calls
/// it at exit, after the MCP servers are shut down.
pub(crate) fn reap_orphans() -> usize {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return 0;
    }
    // The common case, after every run of a batch too: no child but live supervisors. Reading
    // rounds' own children is cheap; the table below reads every process on the machine.
    if let Some(children) = own_children() {
        let known = supervisors();
        let supervised = |pid: &i32| known.as_ref().is_some_and(|k| k.contains_key(pid));
        if children.iter().all(supervised) {
            return 0;
        }
    }
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let deadline = Instant::now() + REAP_PATIENCE;
    let mut killed = std::collections::HashSet::new();
    loop {
        let orphans = {
            let mut known = supervisors();
            let known = known.get_or_insert_with(HashMap::new);
            let table = proc_table();
            // Supervisors that are gone (reaped, or their pid reused) are forgotten.
            known.retain(|pid, start| {
                table
                    .get(pid)
                    .is_some_and(|s| s.start == *start && s.ppid == me)
            });
            let orphans: Vec<&ProcStat> = table
                .values()
                .filter(|s| s.ppid == me && !known.contains_key(&s.pid))
                .collect();
            for orphan in &orphans {
                for pid in std::iter::once(orphan.pid).chain(descendants_in(&table, orphan.pid)) {
                    if let Some(p) = Pid::from_raw(pid)
                        && kill_process(p, Signal::KILL).is_ok()
                    {
                        killed.insert(pid);
                    }
                }
            }
            orphans.iter().map(|s| s.pid).collect::<Vec<_>>()
        };
        if orphans.is_empty() || Instant::now() > deadline {
            return killed.len();
        }
        // Reap by pid only: a wait for any child would steal the exit of a supervisor that
        // tokio is waiting for.
        for pid in orphans {
            if let Some(p) = Pid::from_raw(pid) {
                let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `reap_orphans` off the runtime's threads: it reads `/proc` and may wait a little.
async fn reap_orphans_async() {
    if SUBREAPER.load(Ordering::SeqCst) {
        let _ = tokio::task::spawn_blocking(reap_orphans).await;
    }
}

/// What rounds needs of `/proc/PID/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub(crate) pid: i32,
    pub(crate) ppid: i32,
    pub(crate) zombie: bool,
    /// Start time after boot, in clock ticks: with the pid, identifies a process.
    pub(crate) start: u64,
}

pub(crate) fn proc_stat(pid: i32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &stat)
}

fn parse_stat(pid: i32, stat: &str) -> Option<ProcStat> {
    // The command name is in parentheses and may itself contain spaces or parentheses.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(ProcStat {
        pid,
        zombie: *fields.first()? == "Z",
        ppid: fields.get(1)?.parse().ok()?,
        // Field 22 of the file; the state is field 3.
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Every process, through `/proc`.
/// The children of every thread of rounds (`/proc/self/task/*/children`), or `None` when the
/// kernel does not say (it needs `CONFIG_PROC_CHILDREN`).
fn own_children() -> Option<Vec<i32>> {
    let mut all = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let text = std::fs::read_to_string(task.ok()?.path().join("children")).ok()?;
        all.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    Some(all)
}

pub(crate) fn proc_table() -> HashMap<i32, ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, proc_stat(pid)?)))
        .collect()
}

/// Every process below `root` in `table`, zombies included.
pub(crate) fn descendants_in(table: &HashMap<i32, ProcStat>, root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for s in table.values() {
        children.entry(s.ppid).or_default().push(s.pid);
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(p) = queue.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            queue.push(c);
            found.push(c);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_odd_command_names() {
        let line = "4242 (a) b (c) S 17 4242 4242 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 \
                    123456 1000 100 18446744073709551615";
        assert_eq!(
            parse_stat(4242, line),
            Some(ProcStat {
                pid: 4242,
                ppid: 17,
                zombie: false,
                start: 123456
            })
        );
        assert!(parse_stat(1, "1 (x) Z 0").is_none(), "too short");
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let mine = proc_stat(me).unwrap();
        assert_eq!(
            mine.ppid,
            rustix::process::getppid().unwrap().as_raw_nonzero().get()
        );
        assert!(mine.start > 0 && !mine.zombie);
    }

    #[test]
    fn orphans_are_not_reaped_unless_rounds_is_a_subreaper() {
        // The unit-test binary never becomes a subreaper: its children are other tests'.
        assert_eq!(reap_orphans(), 0);
    }
}
