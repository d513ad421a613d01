//! The sandbox through a whole run of the real binary: on by default, recorded in the start
//! line, confining bash, giving the network only when asked, keeping the launcher's key out of
//! reach of a non-root tool, and leaving no process behind. Each attack has a control with the
//! sandbox off (or the network on) where the same command does its harm. On a kernel without
//! the Landlock features a test needs, it prints `skipped: …` and checks the warning instead.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rounds_process::sandbox;
use serde_json::Value;

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

fn support() -> sandbox::Support {
    sandbox::probe()
}

fn kernel_has(abi: u32, what: &str) -> bool {
    let have = support().landlock_abi;
    if have < abi {
        eprintln!("skipped: {what} needs Landlock ABI {abi}, this kernel has {have}");
    }
    have >= abi
}

/// One bash call, then an answer.
pub(super) fn bash_then_answer(command: &str) -> MockServer {
    let input = serde_json::json!({ "command": command }).to_string();
    MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "bash", &input)],
            "tool_use",
            1,
            1,
        )),
        sse::answer("done"),
    ])
}

/// The bash result the model got.
pub(super) fn bash_result(sb: &Sandbox) -> String {
    sb.transcript()[1]["results"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A directory outside the workspace and outside the temp dir (the sandbox lets tools write
/// both): under cargo's target directory. That may itself be under /tmp (a clone in /tmp), so
/// `run_bash` gives rounds a temp dir of the test's own.
pub(super) fn outside() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn run_bash(sb: &Sandbox, command: &str, flags: &[&str]) -> Value {
    let server = bash_then_answer(command);
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = run(sb
        .anthropic(&server)
        .env("TMPDIR", &tmp)
        .args(["-a", "bash", "--transcript"])
        .arg(sb.transcript_path())
        .args(flags)
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    sb.transcript()[0]["sandbox"].clone()
}

#[test]
fn bash_is_confined_by_default_and_the_start_line_says_how() {
    let sb = Sandbox::new();
    let away = outside();
    let target = away.path().join("pwned");
    let command = format!("echo in > inside.txt; echo out > {}", target.display());
    let recorded = run_bash(&sb, &command, &[]);
    assert_eq!(recorded["mode"], "workspace-write");
    let enforced = &recorded["enforced"];
    assert!(sb.ws().join("inside.txt").exists(), "{}", bash_result(&sb));
    if enforced["filesystem"] == true {
        assert!(
            !target.exists(),
            "the write outside the workspace went through"
        );
        assert!(
            bash_result(&sb).contains("Permission denied"),
            "{}",
            bash_result(&sb)
        );
    } else {
        eprintln!("skipped: this kernel cannot confine writes ({recorded})");
    }
    let writable: Vec<&str> = recorded["write"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        writable.contains(&sb.ws().to_str().unwrap()),
        "{writable:?}"
    );

    // The control: with the sandbox off the same command writes where it likes.
    let sb = Sandbox::new();
    let recorded = run_bash(&sb, &command, &["--sandbox", "off"]);
    assert_eq!(recorded["mode"], "off");
    assert!(target.exists(), "{}", bash_result(&sb));
}

#[test]
fn sandbox_write_adds_a_directory_and_read_only_takes_the_workspace_away() {
    let sb = Sandbox::new();
    let away = outside();
    let command = format!(
        "echo x > {}/cache && echo x > ws.txt",
        away.path().display()
    );
    let dir = away.path().to_str().unwrap();
    run_bash(&sb, &command, &["--sandbox-write", dir]);
    assert!(away.path().join("cache").exists(), "{}", bash_result(&sb));
    assert!(sb.ws().join("ws.txt").exists());

    let sb = Sandbox::new();
    let recorded = run_bash(&sb, "echo x > ws.txt", &["--sandbox", "read-only"]);
    assert_eq!(recorded["mode"], "read-only");
    if recorded["enforced"]["filesystem"] == true {
        assert!(!sb.ws().join("ws.txt").exists(), "{}", bash_result(&sb));
    }

    // A --sandbox-write directory that does not exist is a usage error before any request.
    let server = bash_then_answer("true");
    let out = run(sb
        .anthropic(&server)
        .args(["--sandbox-write", "/no/such/dir", "go"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("/no/such/dir"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}

#[test]
fn bash_reaches_the_network_only_with_tool_network() {
    if !kernel_has(4, "TCP confinement") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected || echo refused");
    let sb = Sandbox::new();
    let recorded = run_bash(&sb, &command, &[]);
    assert_eq!(recorded["network"], false);
    assert!(bash_result(&sb).contains("refused"), "{}", bash_result(&sb));
    // The control: the same connection with the network allowed.
    let sb = Sandbox::new();
    let recorded = run_bash(&sb, &command, &["--tool-network"]);
    assert_eq!(recorded["network"], true);
    assert!(
        bash_result(&sb).contains("connected"),
        "{}",
        bash_result(&sb)
    );
}

#[test]
fn require_is_exit_2_where_the_kernel_falls_short_and_a_degraded_sandbox_says_so() {
    let full = rounds_process::Sandbox::for_run(
        (sandbox::Mode::WorkspaceWrite, false),
        Path::new("/"),
        &[],
        false,
    )
    .missing(support())
    .is_empty();
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).args(["--sandbox", "require", "go"]));
    let default = run(sb.anthropic(&server).args(["--full-auto", "go"]));
    // A run that starts no process is not told about a sandbox it does not use.
    let reads = run(sb.anthropic(&server).arg("go"));
    assert!(!reads.stderr.contains("degraded"), "{}", reads.stderr);
    if full {
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(!default.stderr.contains("degraded"), "{}", default.stderr);
    } else {
        eprintln!("this kernel degrades the sandbox; checking the error and the warning");
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains("--sandbox require"), "{}", out.stderr);
        assert_eq!(default.code, 0, "{}", default.stderr);
        assert_eq!(
            default.stderr.matches("is degraded").count(),
            1,
            "one warning: {}",
            default.stderr
        );
    }
}

/// Live processes whose command line is exactly `argv`.
fn running(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z');
            !zombie && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want)
        })
        .collect()
}

#[test]
fn a_tool_that_kills_its_supervisor_leaves_nothing_behind_when_rounds_exits() {
    // Without the sandbox nothing stops `kill -9 $PPID`; the escaped sleep is re-parented to
    // rounds (a subreaper), which ends it. With the sandbox the kill itself is refused.
    for (flags, seconds) in [(&["--sandbox", "off"][..], "1011"), (&[][..], "1012")] {
        let sb = Sandbox::new();
        let command = format!("setsid sleep {seconds} & sleep 0.3; kill -9 $PPID; echo after");
        let server = bash_then_answer(&command);
        let out = run(sb
            .anthropic(&server)
            .args(["-a", "bash", "--tool-timeout", "5", "--no-transcript"])
            .args(flags)
            .arg("go"));
        assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
        // Killed processes take a moment to go on a loaded machine; an escaped one would
        // stay for a thousand seconds.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut left = running(&["sleep", seconds]);
        while !left.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            left = running(&["sleep", seconds]);
        }
        assert_eq!(
            left,
            Vec::<u32>::new(),
            "{flags:?}: an escaped process outlived rounds"
        );
    }
}

/// `env` run as uid/gid 65534 when the tests run as root (as the current user otherwise);
/// `None` when that is not possible here.
fn as_nobody() -> Option<Command> {
    let command = || {
        if !rustix::process::getuid().is_root() {
            return Command::new("env");
        }
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "env",
        ]);
        cmd
    };
    let works = command()
        .arg("true")
        .current_dir("/")
        .output()
        .is_ok_and(|o| o.status.success());
    works.then(command)
}

#[test]
fn a_non_root_tool_cannot_read_the_key_from_the_launching_shell() {
    if !kernel_has(1, "ptrace confinement") {
        return;
    }
    const CANARY: &str = "sk-ant-canary-41d7";
    let rounds = env!("CARGO_BIN_EXE_rounds");
    let Some(_) = as_nobody() else {
        eprintln!("skipped: cannot run commands as an unprivileged user here");
        return;
    };
    // Everything the unprivileged rounds touches must be its own to write.
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    for p in [home.path(), ws.as_path()] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    }
    let scan = "for d in /proc/[0-9]*; do tr '\\0' '\\n' 2>/dev/null < $d/environ \
                | grep -q '^ANTHROPIC_API_KEY=' && echo \"key in ${d#/proc/}\"; done; echo scanned";
    // What the scan printed, as the model got it.
    let probe = |flags: &[&str]| -> String {
        let server = bash_then_answer(scan);
        // The launching shell holds the key in its environment, as a CI step's shell does.
        let mut cmd = as_nobody().unwrap();
        cmd.args(["-i"])
            .arg(format!(
                "PATH={}",
                std::env::var("PATH").unwrap_or_default()
            ))
            .arg(format!("HOME={}", home.path().display()))
            .arg(format!("ANTHROPIC_API_KEY={CANARY}"))
            .arg(format!("ANTHROPIC_BASE_URL={}", server.url()))
            .args(["sh", "-c", "\"$@\"; exit $?", "sh", rounds])
            .args(["-a", "bash", "--no-transcript", "-w"])
            .arg(&ws)
            .args(flags)
            .arg("go")
            .current_dir(&ws)
            .stdin(std::process::Stdio::null());
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {stderr}");
        let body = server.requests()[1].json();
        body["messages"][2]["content"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let confined = probe(&[]);
    assert!(confined.contains("scanned"), "{confined}");
    assert!(!confined.contains("key in"), "the key leaked: {confined}");
    // The control: the same scan without the sandbox finds the key in the launching shell.
    let control = probe(&["--sandbox", "off"]);
    if control.contains("key in") {
        assert!(
            !control.contains(CANARY),
            "the value itself is never printed"
        );
    } else {
        eprintln!("note: even without the sandbox the key was not readable (ptrace_scope?)");
    }
}
