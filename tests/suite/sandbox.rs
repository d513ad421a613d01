//! The OS sandbox of tool processes (`process::sandbox`) and escaped processes, against the real
//! supervisor (`rounds __rounds-supervise`, the binary under test) through `process::run`.
//!
//! Each boundary has an attack that must fail in the sandbox and a control showing the same
//! action succeeds with the sandbox off, so a passing test cannot come from an attack that
//! never worked. Where the kernel lacks the Landlock feature a test needs, it says so
//! (`skipped: …` on stderr) and checks the degraded path instead.
//!
//! The `--sandbox` flags are not wired into the CLI yet; the end-to-end tests through a run
//! belong with that wiring.

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rounds_process::sandbox::{self, Mode, Sandbox};
use rounds_process::{self as process, Exit, Finished, Limits};
use tokio_util::sync::CancellationToken;

pub(super) const ROUNDS: &str = env!("CARGO_BIN_EXE_rounds");

/// The kernel's support, with the supervisor set to the binary under test.
pub(super) fn support() -> sandbox::Support {
    process::set_supervisor_program(PathBuf::from(ROUNDS));
    sandbox::probe()
}

/// True when the kernel has Landlock ABI `abi`; otherwise prints why the test is skipped.
pub(super) fn kernel_has(abi: u32, what: &str) -> bool {
    let support = support();
    if support.landlock_abi >= abi {
        return true;
    }
    eprintln!(
        "skipped: {what} needs Landlock ABI {abi}, this kernel has {}",
        support.landlock_abi
    );
    false
}

/// A sandbox writing only to `dirs`, without network.
pub(super) fn writing_to(dirs: &[&Path]) -> Sandbox {
    let mut sb = Sandbox::new(Mode::WorkspaceWrite);
    sb.write = dirs.iter().map(|d| d.to_path_buf()).collect();
    sb
}

pub(super) struct Ran {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn code(&self) -> i32 {
        match self.exit {
            Exit::Code(c) => c,
            other => panic!("not an exit code: {other:?}; stderr: {}", self.stderr),
        }
    }
}

fn limits() -> Limits {
    Limits {
        head: 64 * 1024,
        tail: 0,
        spill: None,
    }
}

/// Runs `bash -c command` in `cwd` under the supervisor in `sandbox`.
fn bash_in(command: &str, cwd: &Path, sandbox: &Sandbox, timeout: Duration) -> Ran {
    process::set_supervisor_program(PathBuf::from(ROUNDS));
    let env = vec![(
        "PATH".into(),
        std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
    )];
    let spec = process::Spec {
        argv: vec!["bash".into(), "-c".into(), command.into()],
        cwd,
        env: &env,
        stdin: None,
        timeout,
        cancel: CancellationToken::new(),
        stdout: limits(),
        stderr: limits(),
        sandbox,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let Finished {
        exit,
        stdout,
        stderr,
        ..
    } = runtime.block_on(process::run(spec)).unwrap();
    Ran {
        exit,
        stdout: stdout.render(),
        stderr: stderr.render(),
    }
}

pub(super) fn bash(command: &str, cwd: &Path, sandbox: &Sandbox) -> Ran {
    bash_in(command, cwd, sandbox, Duration::from_secs(20))
}

/// Writes, creations, links, renames and truncations of a directory the tool must not write.
fn vandalize(dir: &Path) -> String {
    format!(
        "cd '{}'; echo pwned > new; echo pwned >> existing; : > victim; truncate -s 0 keep; \
         mkdir made; ln -s /etc link; mv existing moved; rm -f gone; mkfifo fifo; \
         echo done",
        dir.display()
    )
}

fn seed(dir: &Path) {
    for name in ["existing", "victim", "keep", "gone"] {
        std::fs::write(dir.join(name), "original\n").unwrap();
    }
}

fn untouched(dir: &Path) -> bool {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names == ["existing", "gone", "keep", "victim"]
        && names
            .iter()
            .all(|n| std::fs::read_to_string(dir.join(n)).unwrap() == "original\n")
}

#[test]
fn writes_outside_the_writable_dirs_are_refused() {
    if !kernel_has(3, "filesystem confinement with truncation") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    seed(outside.path());
    let sandbox = writing_to(&[ws.path()]);

    let attack = bash(&vandalize(outside.path()), ws.path(), &sandbox);
    assert_eq!(attack.stdout, "done\n");
    assert!(
        attack.stderr.contains("Permission denied"),
        "{}",
        attack.stderr
    );
    assert!(untouched(outside.path()), "the sandbox let a write through");

    // The workspace itself is writable, every way.
    seed(ws.path());
    let inside = bash(&vandalize(ws.path()), ws.path(), &sandbox);
    assert_eq!(inside.stdout, "done\n");
    assert_eq!(inside.stderr, "", "inside the workspace all is allowed");
    assert!(ws.path().join("made").is_dir() && ws.path().join("moved").exists());

    // Control: the same attack with the sandbox off does damage.
    let control = bash(&vandalize(outside.path()), ws.path(), &Sandbox::off());
    assert_eq!(control.stderr, "");
    assert!(!untouched(outside.path()), "the control changed nothing");
}

#[test]
fn read_only_allows_no_writes_but_reads_and_dev_null() {
    if !kernel_has(3, "filesystem confinement with truncation") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    seed(ws.path());
    let mut sandbox = writing_to(&[ws.path()]);
    sandbox.mode = Mode::ReadOnly;
    let ran = bash(
        &format!(
            "{}; cat /etc/hostname >/dev/null && echo read; echo x > /dev/null && echo null",
            vandalize(ws.path())
        ),
        ws.path(),
        &sandbox,
    );
    assert_eq!(ran.stdout, "done\nread\nnull\n", "{}", ran.stderr);
    assert!(untouched(ws.path()), "read-only wrote to the workspace");
}

#[test]
fn extra_writable_dirs_and_everyday_commands_work() {
    if !kernel_has(1, "filesystem confinement") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::for_run(
        (Mode::WorkspaceWrite, false),
        ws.path(),
        &[extra.path().to_owned()],
        false,
    );
    let ran = bash(
        &format!(
            "set -e; t=$(mktemp); echo tmp > \"$t\"; cat \"$t\"; rm \"$t\"; \
             echo extra > '{}/f'; cat '{}/f'; \
             printf 'b\\na\\n' | sort | tr -d '\\n' > sorted; cat sorted; echo; \
             ls / >/dev/null; echo err >&2; echo err2 > /dev/stderr; ls /nonexistent 2>/dev/null || true; \
             sh -c 'echo sub' | cat; env",
            extra.path().display(),
            extra.path().display()
        ),
        ws.path(),
        &sandbox,
    );
    assert_eq!(ran.code(), 0, "{}", ran.stderr);
    let env: Vec<&str> = ran.stdout.lines().skip(4).collect();
    assert_eq!(
        &ran.stdout.lines().take(4).collect::<Vec<_>>(),
        &["tmp", "extra", "ab", "sub"]
    );
    assert_eq!(ran.stderr, "err\nerr2\n");
    // Nothing of the sandbox (nor of rounds) reaches the tool's environment.
    let names: Vec<&str> = env.iter().filter_map(|l| l.split('=').next()).collect();
    for name in names {
        assert!(
            ["PATH", "PWD", "SHLVL", "_", "OLDPWD"].contains(&name),
            "unexpected variable {name} in {env:?}"
        );
    }
}

/// `bash -c` that connects to 127.0.0.1:`port` and says whether it could.
fn connect(port: u16) -> String {
    format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo refused")
}

#[test]
fn tcp_is_refused_without_the_network_and_allowed_with_it() {
    if !kernel_has(4, "TCP confinement") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let closed = writing_to(&[ws.path()]);
    let bind = "command -v python3 >/dev/null || { echo no-python; exit; }; \
                python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 0))' \
                2>/dev/null && echo bound || echo not-bound";
    let attack = bash(&format!("{}; {bind}", connect(port)), ws.path(), &closed);
    let lines: Vec<&str> = attack.stdout.lines().collect();
    assert_eq!(lines[0], "refused", "{}", attack.stderr);
    assert_ne!(lines[1], "bound", "listening is refused too");
    assert_ne!(
        bash(bind, ws.path(), &Sandbox::off()).stdout,
        "not-bound\n",
        "control: binding works without the sandbox"
    );

    let open = closed.with_network(true);
    assert_eq!(bash(&connect(port), ws.path(), &open).stdout, "connected\n");
    // Control: the sandbox off.
    assert_eq!(
        bash(&connect(port), ws.path(), &Sandbox::off()).stdout,
        "connected\n"
    );
}

#[test]
fn udp_and_other_sockets_are_refused_without_the_network() {
    if !support().seccomp {
        eprintln!("skipped: no seccomp filter for this kernel or architecture");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let port = receiver.local_addr().unwrap().port();
    let send =
        format!("echo leak > /dev/udp/127.0.0.1/{port} 2>/dev/null && echo sent || echo refused");
    let closed = writing_to(&[ws.path()]);
    assert_eq!(bash(&send, ws.path(), &closed).stdout, "refused\n");
    let mut buf = [0u8; 16];
    assert!(receiver.recv(&mut buf).is_err(), "a datagram got out");

    // Control: with the network, the datagram arrives.
    assert_eq!(
        bash(&send, ws.path(), &closed.with_network(true)).stdout,
        "sent\n"
    );
    let n = receiver.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"leak\n");
}

#[test]
fn command_tools_get_the_network_only_from_their_own_entry() {
    if !kernel_has(4, "TCP confinement") {
        return;
    }
    use rounds_tools::{ToolContext, Workspace};
    let ws = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let manifest = ws.path().join("tools.toml");
    let line = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    std::fs::write(
        &manifest,
        format!(
            "[[tool]]\nname = \"online\"\ndescription = \"d\"\n\
             command = [\"bash\", \"-c\", '{line}']\nnetwork = true\n\n\
             [[tool]]\nname = \"offline\"\ndescription = \"d\"\n\
             command = [\"bash\", \"-c\", '{line}']\n"
        ),
    )
    .unwrap();
    let tools = rounds_tools::manifest::load(&[manifest]).unwrap();
    process::set_supervisor_program(PathBuf::from(ROUNDS));
    let workspace = Arc::new(Workspace::new(ws.path()).unwrap());
    let mut ctx = ToolContext::new(workspace, CancellationToken::new());
    ctx.env = Arc::from(vec![(
        "PATH".into(),
        std::env::var_os("PATH").unwrap_or_default(),
    )]);
    // As with --tool-network: bash may, but that does not open it to command tools.
    ctx.sandbox = Arc::new(writing_to(&[ws.path()]).with_network(true));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answers: Vec<Result<String, String>> = tools
        .iter()
        .map(|tool| {
            runtime
                .block_on(tool.run(serde_json::json!({}), &ctx))
                .map_err(|e| e.to_string())
        })
        .collect();
    assert_eq!(answers[0], Ok("connected\n".to_owned()));
    let refused = answers[1].as_ref().unwrap_err();
    assert!(refused.contains("Permission denied"), "{refused}");
}

#[test]
fn mcp_servers_run_inside_the_sandbox() {
    if !kernel_has(1, "a Landlock domain") {
        return;
    }
    use rounds_process::ProcessContext;
    let server = Path::new(ROUNDS)
        .parent()
        .unwrap()
        .join("examples/mcp_test_server");
    if !server.exists() {
        eprintln!("skipped: {} is not built", server.display());
        return;
    }
    process::set_supervisor_program(PathBuf::from(ROUNDS));
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().to_owned();
    let sandbox = writing_to(&[ws.path()]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = runtime.block_on(async {
        let env = vec![];
        let processes = ProcessContext {
            cwd: &ws_path,
            env: &env,
            sandbox: &sandbox,
        };
        let flag = format!("t={}", server.display());
        let (servers, tools) =
            rounds_tools::mcp::start_all(&[flag], None, Duration::from_secs(20), &processes)
                .await
                .unwrap();
        let pid_tool = tools.iter().find(|t| t.spec().name == "t__pid").unwrap();
        let ctx = rounds_tools::ToolContext::new(
            Arc::new(rounds_tools::Workspace::new(&ws_path).unwrap()),
            CancellationToken::new(),
        );
        let pid = pid_tool.run(serde_json::json!({}), &ctx).await.unwrap();
        let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap();
        servers.shutdown().await;
        status
    });
    // Only a sandboxed process has these: no_new_privs (Landlock) and a seccomp filter.
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    if support().seccomp {
        assert!(status.contains("Seccomp:\t2"), "{status}");
    }
}

#[test]
fn a_tool_cannot_signal_its_supervisor_or_rounds() {
    if !kernel_has(6, "signal scoping") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let attack = format!(
        "setsid sleep 1007 & echo $! > pid; kill -STOP $PPID; echo stop=$?; kill -9 $PPID; \
         echo kill=$?; kill -0 {me}; echo rounds=$?; kill -0 $!; echo own=$?"
    );
    let ran = bash(&attack, ws.path(), &writing_to(&[ws.path()]));
    assert_eq!(
        ran.code(),
        0,
        "the supervisor survived to report: {}",
        ran.stderr
    );
    assert_eq!(
        ran.stdout, "stop=1\nkill=1\nrounds=1\nown=0\n",
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("Operation not permitted"),
        "{}",
        ran.stderr
    );
    let pid = std::fs::read_to_string(ws.path().join("pid")).unwrap();
    assert!(
        !alive(pid.trim().parse().unwrap()),
        "the escaped sleep outlived the call"
    );
    assert_eq!(running("1007"), Vec::<u32>::new());

    // Control: without the sandbox the tool may signal its supervisor.
    let control = bash("kill -0 $PPID; echo $?", ws.path(), &Sandbox::off());
    assert_eq!(control.stdout, "0\n");
}

/// A command that runs `program` as uid/gid 65534 (nobody) when the tests run as root, as the
/// current user otherwise; `None` when that is not possible here.
fn unprivileged(program: &str) -> Option<Command> {
    if !rustix::process::getuid().is_root() {
        return Some(Command::new(program));
    }
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        program,
    ]);
    Some(cmd)
}

#[test]
fn the_environment_of_the_parent_is_unreadable_to_a_non_root_tool() {
    if !kernel_has(1, "ptrace confinement") {
        return;
    }
    // The user must be able to run the binary (not in a private home directory, say).
    let reachable = unprivileged(ROUNDS)
        .and_then(|mut c| c.arg("--version").current_dir("/").output().ok())
        .is_some_and(|o| o.status.success());
    if !reachable {
        eprintln!("skipped: cannot run {ROUNDS} as an unprivileged user (setpriv, permissions)");
        return;
    }
    const CANARY: &str = "sk-canary-7f3a9d";
    // sh holds the key, as the shell that launched rounds does; the supervisor gets a scrubbed
    // environment, and the tool looks for the key in every process it can read, its
    // supervisor's parent first.
    let scan = "gp=$(awk '{print $4}' /proc/$PPID/stat); \
                cat /proc/$gp/environ >/dev/null 2>&1 && echo parent-readable \
                || echo parent-denied; \
                for d in /proc/[0-9]*; do tr '\\0' '\\n' 2>/dev/null < $d/environ \
                | grep -q '^ROUNDS_CANARY=' && echo \"found in ${d#/proc/}\"; done; \
                echo uid=$(id -u)";
    let probe = |sandbox: &Sandbox| -> String {
        let mut cmd = unprivileged("env").unwrap();
        cmd.args([
            "-i",
            &format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
            &format!("ROUNDS_CANARY={CANARY}"),
            "sh",
            "-c",
            "env -i PATH=\"$PATH\" \"$@\"; true",
            "sh",
        ])
        .args(
            (sandbox.to_env().into_iter())
                .map(|v| format!("{}={}", sandbox::SUPERVISOR_ENV, v.to_string_lossy())),
        )
        .args([ROUNDS, "__rounds-supervise", "inherit"])
        .args(["--", "bash", "-c", scan])
        .current_dir("/")
        .stdin(Stdio::null());
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let confined = probe(&Sandbox::new(Mode::ReadOnly));
    assert!(confined.contains("parent-denied"), "{confined}");
    assert!(!confined.contains("found in"), "the key leaked: {confined}");
    assert!(
        !confined.contains("uid=0\n"),
        "the tool ran as root: {confined}"
    );
    // Control: without the sandbox, the same user reads the key from its parent's environment.
    let control = probe(&Sandbox::off());
    if control.contains("found in") {
        assert!(control.contains("parent-readable"), "{control}");
    } else {
        eprintln!(
            "note: even without the sandbox the key was not readable here (ptrace_scope?): \
             {control}"
        );
    }
}

#[test]
fn require_runs_only_where_everything_is_enforced() {
    let support = support();
    let ws = tempfile::tempdir().unwrap();
    let mut sandbox = writing_to(&[ws.path()]);
    sandbox.require = true;
    let ran = bash("echo ran", ws.path(), &sandbox);
    if sandbox.missing(support).is_empty() {
        assert_eq!(ran.stdout, "ran\n", "{}", ran.stderr);
    } else {
        eprintln!("this kernel lacks: {:?}", sandbox.missing(support));
        assert_eq!(ran.code(), 126, "a sandbox it cannot set up is not skipped");
        assert!(
            ran.stderr.contains("cannot set up the sandbox"),
            "{}",
            ran.stderr
        );
        assert_eq!(ran.stdout, "");
    }
}

#[test]
fn a_kernel_without_landlock_degrades_with_a_warning() {
    let support = support();
    let sandbox = writing_to(&[Path::new("/ws")]);
    match sandbox.check(support) {
        Ok(None) => assert!(support.landlock_abi >= 6 && support.seccomp),
        Ok(Some(warning)) => {
            eprintln!("this kernel degrades the sandbox: {warning}");
            assert!(
                warning.starts_with("warning: the tool sandbox"),
                "{warning}"
            );
            // The commands still run, with what can be enforced.
            let ws = tempfile::tempdir().unwrap();
            let ran = bash("echo ran", ws.path(), &writing_to(&[ws.path()]));
            assert_eq!(ran.stdout, "ran\n", "{}", ran.stderr);
        }
        Err(e) => panic!("not required, so not an error: {e}"),
    }
}

/// True while the process exists (zombies count as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// Live processes whose command line is `sleep SECONDS`, as `ps` would list them.
fn running(seconds: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c == format!("sleep\0{seconds}\0").as_bytes())
                && alive(pid)
        })
        .collect()
}

/// Runs the named test alone in a fresh test process: subreaping changes the whole process,
/// and orphan reaping would kill the children of the other tests.
fn in_own_process(test: &str) -> bool {
    if std::env::var_os("ROUNDS_TEST_OWN_PROCESS").is_some() {
        return true;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("ROUNDS_TEST_OWN_PROCESS", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{test} failed in its own process:\n{text}"
    );
    assert!(text.contains("1 passed"), "{test} did not run:\n{text}");
    false
}

#[test]
fn escapees_of_a_killed_supervisor_are_reaped_when_the_call_ends() {
    if !in_own_process(
        "suite::sandbox::escapees_of_a_killed_supervisor_are_reaped_when_the_call_ends",
    ) {
        return;
    }
    process::become_subreaper().unwrap();
    let ws = tempfile::tempdir().unwrap();
    // Without the sandbox nothing stops the tool from killing its supervisor.
    let ran = bash(
        "setsid sleep 1005 & echo $! > pid; sleep 0.2; kill -9 $PPID; sleep 0.3; echo after",
        ws.path(),
        &Sandbox::off(),
    );
    assert_eq!(ran.exit, Exit::Code(137), "the supervisor was killed");
    let pid: u32 = std::fs::read_to_string(ws.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "the escaped sleep is still there");
    assert_eq!(running("1005"), Vec::<u32>::new());
}

#[test]
fn escapees_of_a_stopped_supervisor_are_reaped_after_the_timeout() {
    if !in_own_process(
        "suite::sandbox::escapees_of_a_stopped_supervisor_are_reaped_after_the_timeout",
    ) {
        return;
    }
    process::become_subreaper().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let ran = bash_in(
        // Stopped, then stopped again when rounds' SIGCONT lets it ask the tree to end.
        "trap 'kill -STOP $PPID' TERM; setsid sleep 1006 & echo $! $$ > pids; \
         kill -STOP $PPID; while :; do sleep 0.05; done",
        ws.path(),
        &Sandbox::off(),
        Duration::from_millis(500),
    );
    assert_eq!(ran.exit, Exit::TimedOut);
    let pids: Vec<u32> = std::fs::read_to_string(ws.path().join("pids"))
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(
            !alive(pid),
            "{pid} (the escaped sleep or the shell) is still there"
        );
    }
    assert_eq!(running("1006"), Vec::<u32>::new());
}

#[test]
fn without_the_subreaper_an_escapee_outlives_its_call() {
    // Control for the two tests above: the same escape, rounds not a subreaper.
    if !in_own_process("suite::sandbox::without_the_subreaper_an_escapee_outlives_its_call") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let ran = bash(
        "setsid sleep 1008 & echo $! > pid; sleep 0.2; kill -9 $PPID",
        ws.path(),
        &Sandbox::off(),
    );
    assert_eq!(ran.exit, Exit::Code(137));
    let pid: u32 = std::fs::read_to_string(ws.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let survived = alive(pid);
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    assert!(
        survived,
        "the escape did not work, so the tests above prove nothing"
    );
}
