//! Running external commands for tools and hooks: always under the supervisor, with a scrubbed
//! environment, stdin given or closed, output captured with bounded memory, the OS sandbox
//! (`sandbox`), and a timeout or cancellation that ends the whole process tree before `run`
//! returns.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

pub mod capture;
pub mod sandbox;
pub mod supervisor;

pub use capture::{Captured, Limits};
pub use sandbox::Sandbox;

/// The first argument that turns the `rounds` binary into a supervisor.
pub const SUPERVISE_ARG: &str = "__rounds-supervise";

/// Environment variables a tool process gets from rounds' own environment by default: enough
/// for shells and toolchains to work, nothing that usually holds a credential.
pub const BASE_ENV: &[&str] = &[
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

/// Variables that hold provider keys: never passed to a tool, whatever the flags say.
pub const SECRET_ENV: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OLLAMA_API_KEY",
    "LLAMACPP_API_KEY",
    "VLLM_API_KEY",
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
        .filter(|n| wanted(n) && !SECRET_ENV.contains(&n.as_str()))
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
    let mut command = supervisor_command(&spec.argv, stdin_len.as_ref(), spec.sandbox);
    command
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let pid = child.id().and_then(|id| Pid::from_raw(id as i32));

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
        Some(status) => Exit::Code(status.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt;
            128 + status.signal().unwrap_or(0)
        })),
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
    let gone = |e: tokio::task::JoinError| std::io::Error::other(e.to_string());
    Ok(Finished {
        exit,
        stdout: out.map_err(gone)?,
        stderr: err.map_err(gone)?,
        duration: started.elapsed(),
    })
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
    let mut command = supervisor_command(argv, "inherit".as_ref(), sandbox);
    command
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn()
}

/// `rounds __rounds-supervise INPUT [SANDBOX OPTIONS] -- ARGV…` in its own process group: a
/// Ctrl-C at the terminal reaches rounds, which decides what to stop.
fn supervisor_command(
    argv: &[OsString],
    input: &std::ffi::OsStr,
    sandbox: &Sandbox,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(supervisor_program());
    command
        .arg(SUPERVISE_ARG)
        .arg(input)
        .args(sandbox.supervisor_args())
        .arg("--")
        .args(argv)
        .process_group(0);
    command
}

/// Ends a supervised process tree and reaps the supervisor; bounded in time.
pub async fn terminate(child: &mut tokio::process::Child) {
    let pid = child.id().and_then(|id| Pid::from_raw(id as i32));
    stop(child, pid).await;
}

/// Asks the supervisor to end the tree; if it does not finish in time, kills it and its group.
async fn stop(child: &mut tokio::process::Child, pid: Option<Pid>) {
    if let Some(pid) = pid {
        let _ = kill_process(pid, Signal::TERM);
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
