//! The sandbox's edges: device nodes, setuid bits and owners, the capabilities of a root tool,
//! descriptors inherited from rounds' launcher, what the supervisor's command line shows, and
//! pinned writable directories. Each attack has a control where the same command does its harm
//! (the sandbox off, the directory not pinned, no rounds in between).

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use rounds_process::sandbox::{Mode, SUPERVISOR_ENV};
use rounds_process::{Exit, Sandbox};

use super::sandbox::{ROUNDS, bash, kernel_has, support, writing_to};
use super::sandbox_run::{bash_result, bash_then_answer, outside};
use crate::common;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn device_nodes_cannot_be_made_even_by_root() {
    if !is_root() {
        eprintln!("skipped: only root may make device nodes, with or without the sandbox");
        return;
    }
    if !kernel_has(1, "filesystem confinement") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    // A block device for a disk reaches every file on it; a character device for /dev/kmsg or
    // /dev/mem reaches the kernel.
    let make = "mknod blk b 7 0 && echo blk; mknod chr c 1 11 && echo chr; mkfifo fifo && echo \
                fifo; ls";
    let confined = bash(make, ws.path(), &writing_to(&[ws.path()]));
    assert_eq!(confined.stdout, "fifo\nfifo\n", "{}", confined.stderr);
    assert!(
        confined.stderr.contains("blk") && confined.stderr.contains("chr"),
        "{}",
        confined.stderr
    );
    std::fs::remove_file(ws.path().join("fifo")).unwrap();

    // Control: without the sandbox root makes both.
    let control = bash(make, ws.path(), &Sandbox::off());
    assert_eq!(
        control.stdout, "blk\nchr\nfifo\nblk\nchr\nfifo\n",
        "{}",
        control.stderr
    );
}

/// The capabilities of `/proc/self/status` line `Cap…:` in `status`.
fn caps(status: &str, line: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(line))
        .map(|hex| u64::from_str_radix(hex.trim(), 16).unwrap())
        .unwrap_or_else(|| panic!("no {line} in {status}"))
}

#[test]
fn a_root_tool_in_the_sandbox_loses_the_capabilities_over_files() {
    // CAP_CHOWN, CAP_FOWNER, CAP_FSETID, CAP_LINUX_IMMUTABLE, CAP_MKNOD, CAP_SETFCAP.
    const FILE_CAPS: u64 = 1 << 0 | 1 << 3 | 1 << 4 | 1 << 9 | 1 << 27 | 1 << 31;
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    let had = caps(&own, "CapEff:") & FILE_CAPS;
    if had == 0 {
        eprintln!("skipped: the tests run without any of these capabilities to lose");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let read = "cat /proc/self/status";
    let confined = bash(read, ws.path(), &writing_to(&[ws.path()])).stdout;
    for line in ["CapEff:", "CapPrm:", "CapBnd:", "CapInh:", "CapAmb:"] {
        assert_eq!(caps(&confined, line) & FILE_CAPS, 0, "{line} {confined}");
    }
    // Control: with the sandbox off the tool keeps what rounds had.
    let control = bash(read, ws.path(), &Sandbox::off()).stdout;
    assert_eq!(caps(&control, "CapEff:") & FILE_CAPS, had, "{control}");
}

#[test]
fn setuid_modes_and_chown_are_refused_and_ordinary_modes_allowed() {
    if !support().seccomp {
        eprintln!("skipped: no seccomp filter for this kernel or architecture");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let away = outside();
    let theirs = away.path().join("theirs");
    std::fs::write(&theirs, "x").unwrap();
    let attack = format!(
        "touch f; chmod 644 f; chmod u+s f; stat -c %a f; chmod g+s f; stat -c %a f; \
         chmod 755 f; stat -c %a f; chown $(id -u):$(id -g) f; echo chown=$?; \
         chmod u+s {0}; stat -c %a {0}; chown $(id -u) {0}; echo chown=$?",
        theirs.display()
    );
    // In every confined mode, whatever the network.
    for sandbox in [
        writing_to(&[ws.path()]),
        writing_to(&[ws.path()]).with_network(true),
    ] {
        let ran = bash(&attack, ws.path(), &sandbox);
        assert_eq!(
            ran.stdout, "644\n644\n755\nchown=1\n644\nchown=1\n",
            "{}",
            ran.stderr
        );
        assert!(
            ran.stderr.contains("Operation not permitted"),
            "{}",
            ran.stderr
        );
    }
    // Control: without the sandbox each one does it.
    std::fs::remove_file(ws.path().join("f")).unwrap();
    let control = bash(&attack, ws.path(), &Sandbox::off());
    assert_eq!(
        control.stdout, "4644\n6644\n755\nchown=0\n4644\nchown=0\n",
        "{}",
        control.stderr
    );
}

/// What a launcher does before it starts a program: opens descriptor 5 appending to
/// `$VICTIM` and descriptor 6 connected to port `$PORT`, and leaves both open.
const LAUNCHER: &str = "exec 5>>\"$VICTIM\"; exec 6<>/dev/tcp/127.0.0.1/$PORT; exec \"$0\" \"$@\"";

/// The tool's attempt to use what the launcher left open.
const USE_DESCRIPTORS: &str = "echo pwned >&5; echo leak >&6; echo done";

/// Runs `program ARGS…` under the launcher, with `victim` and a listener on 127.0.0.1;
/// returns what reached the listener.
fn launch(program: Command, victim: &Path) -> (std::process::Output, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut got = String::new();
        let _ = conn.read_to_string(&mut got);
        got
    });
    let mut launcher = Command::new("bash");
    launcher
        .env_clear()
        .envs(program.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("VICTIM", victim)
        .env("PORT", port.to_string())
        .args(["-c", LAUNCHER])
        .arg(program.get_program())
        .args(program.get_args())
        .stdin(Stdio::null());
    if let Some(dir) = program.get_current_dir() {
        launcher.current_dir(dir);
    }
    let out = launcher.output().unwrap();
    (out, heard.join().unwrap())
}

#[test]
fn descriptors_left_open_by_the_launcher_do_not_reach_tools() {
    let away = outside();
    let victim = away.path().join("log");
    std::fs::write(&victim, "").unwrap();
    // In every mode, the sandbox off included: the descriptors are rounds' launcher's, not the
    // tool's.
    for flags in [&[][..], &["--sandbox", "off"], &["--tool-network"]] {
        let sb = common::Sandbox::new();
        let server = bash_then_answer(USE_DESCRIPTORS);
        let mut rounds = sb.anthropic(&server);
        rounds
            .args(["-a", "bash", "--transcript"])
            .arg(sb.transcript_path())
            .args(flags)
            .arg("go");
        let (out, heard) = launch(rounds, &victim);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {stderr}");
        let result = bash_result(&sb);
        assert!(
            result.contains("done"),
            "{flags:?}: the tool did not run: {result}"
        );
        assert!(
            result.contains("Bad file descriptor"),
            "{flags:?}: {result}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "", "{flags:?}");
        assert_eq!(
            heard, "",
            "{flags:?}: the tool wrote to the launcher's socket"
        );
    }
    // Control: the same launcher and the same commands without rounds in between.
    let mut direct = Command::new("bash");
    direct.args(["-c", USE_DESCRIPTORS]);
    let (out, heard) = launch(direct, &victim);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "pwned\n");
    assert_eq!(heard, "leak\n");
}

/// Waits up to 20 s for `path` to hold a line; returns it.
fn wait_for_line(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text.trim().to_owned();
        }
        assert!(Instant::now() < deadline, "{} never came", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_supervisors_command_line_names_no_writable_directory() {
    let sb = common::Sandbox::new();
    let extra = outside();
    let ws = sb.ws();
    // The tool says who its supervisor is, then waits until the test has looked at it.
    let command = "echo $PPID > ppid; while [ ! -e go ]; do sleep 0.02; done; \
                   env | grep -c ROUNDS_SUPERVISOR; echo done";
    let server = bash_then_answer(command);
    let child = sb
        .anthropic(&server)
        .args(["-a", "bash", "--tool-timeout", "30", "--transcript"])
        .arg(sb.transcript_path())
        .arg("--sandbox-write")
        .arg(extra.path())
        .arg("go")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let supervisor = wait_for_line(&ws.join("ppid"));
    let cmdline = std::fs::read(format!("/proc/{supervisor}/cmdline")).unwrap();
    let environ = std::fs::read(format!("/proc/{supervisor}/environ")).unwrap();
    std::fs::write(ws.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(
        cmdline.contains("__rounds-supervise") && cmdline.contains("echo $PPID"),
        "not the supervisor's command line: {cmdline}"
    );
    for dir in [ws.as_path(), extra.path()] {
        let dir = dir.to_str().unwrap();
        assert!(!cmdline.contains(dir), "{dir} in {cmdline}");
    }
    // The directories did reach the supervisor: in its environment, which only its user (and
    // root) can read, and which the tool does not get.
    let environ = String::from_utf8_lossy(&environ);
    let hex: String = extra
        .path()
        .to_str()
        .unwrap()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let var = environ
        .split('\0')
        .find_map(|v| v.strip_prefix(&format!("{SUPERVISOR_ENV}=")))
        .unwrap_or_else(|| panic!("no {SUPERVISOR_ENV} in {environ}"));
    assert!(
        var.starts_with("workspace-write") && var.contains(&hex),
        "{var}"
    );
    let result = bash_result(&sb);
    assert!(
        result.contains("\n0\ndone"),
        "the tool got the variable: {result}"
    );
}

/// A workspace with a directory `out` pinned to the identity it has now, and a directory
/// elsewhere; the sandbox writes to both.
struct Pinned {
    ws: tempfile::TempDir,
    elsewhere: tempfile::TempDir,
    out: std::path::PathBuf,
    pinned: Sandbox,
    unpinned: Sandbox,
}

fn pinned() -> Pinned {
    let ws = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = ws.path().canonicalize().unwrap().join("out");
    std::fs::create_dir(&out).unwrap();
    let meta = std::fs::metadata(&out).unwrap();
    // Only `out` is writable (not the workspace), so nothing else grants the write below.
    let unpinned = writing_to(&[&out]);
    let mut pinned = Sandbox::new(Mode::WorkspaceWrite);
    pinned.pin(&out, meta.dev(), meta.ino());
    Pinned {
        ws,
        elsewhere,
        out,
        pinned,
        unpinned,
    }
}

#[test]
fn a_pinned_directory_swapped_for_a_symlink_is_refused() {
    if !kernel_has(1, "filesystem confinement") {
        return;
    }
    let p = pinned();
    let write = format!("echo pwned > {}/x && echo wrote", p.out.display());
    // Untouched, it is writable.
    assert_eq!(bash(&write, p.ws.path(), &p.pinned).stdout, "wrote\n");

    // Between two calls, the directory is renamed away and a symlink takes its place.
    std::fs::rename(&p.out, p.ws.path().join("out.old")).unwrap();
    std::os::unix::fs::symlink(p.elsewhere.path(), &p.out).unwrap();
    let refused = bash(&write, p.ws.path(), &p.pinned);
    assert_eq!(refused.exit, Exit::Code(126), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("cannot set up the sandbox")
            && refused.stderr.contains("is a symbolic link"),
        "{}",
        refused.stderr
    );
    assert_eq!(refused.stdout, "", "the program ran");
    assert!(!p.elsewhere.path().join("x").exists());

    // Control: the same directory unpinned: the rule follows the symlink and grants its target.
    let granted = bash(&write, p.ws.path(), &p.unpinned);
    assert_eq!(granted.stdout, "wrote\n", "{}", granted.stderr);
    assert!(p.elsewhere.path().join("x").exists());
}

#[test]
fn a_pinned_directory_replaced_by_another_is_refused() {
    if !kernel_has(1, "filesystem confinement") {
        return;
    }
    let p = pinned();
    // Made while the old one still exists, so it cannot get the old one's inode number back.
    let new = p.ws.path().join("new");
    std::fs::create_dir(&new).unwrap();
    std::fs::rename(&new, &p.out).unwrap();
    assert_ne!(
        std::fs::metadata(&p.out).unwrap().ino(),
        p.pinned.pins[0].ino
    );
    let refused = bash("echo ran", p.ws.path(), &p.pinned);
    assert_eq!(refused.exit, Exit::Code(126), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("no longer the directory rounds created"),
        "{}",
        refused.stderr
    );
    // Control: unpinned, the new directory is simply granted.
    assert_eq!(bash("echo ran", p.ws.path(), &p.unpinned).stdout, "ran\n");

    // Gone: left out, as a writable directory that does not exist is.
    std::fs::remove_dir(&p.out).unwrap();
    let gone = bash("echo ran", p.ws.path(), &p.pinned);
    assert_eq!(gone.stdout, "ran\n", "{}", gone.stderr);
}

#[test]
fn the_supervisor_without_its_variable_runs_unconfined() {
    // What the variable carries is the sandbox: a supervisor started without it (as rounds does
    // with --sandbox off) confines nothing. Checked so a lost variable cannot pass unnoticed in
    // the tests above: they see the confinement, this sees its absence.
    let out = Command::new(ROUNDS)
        .args(["__rounds-supervise", "inherit", "--", "sh", "-c"])
        .arg("grep NoNewPrivs /proc/self/status")
        .env_remove(SUPERVISOR_ENV)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "NoNewPrivs:\t0\n");
    let confined = Sandbox::new(Mode::ReadOnly).to_env().unwrap();
    let out = Command::new(ROUNDS)
        .args(["__rounds-supervise", "inherit", "--", "sh", "-c"])
        .arg("grep NoNewPrivs /proc/self/status; env | grep -c ROUNDS_SUPERVISOR")
        .env(SUPERVISOR_ENV, confined)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "NoNewPrivs:\t1\n0\n");
}

#[test]
fn a_workspace_swapped_for_a_link_between_calls_is_not_granted_to_the_next_call() {
    use crate::common::mock::{MockServer, Reply};
    use crate::common::sse::{self, B};
    if !kernel_has(3, "filesystem confinement") {
        return;
    }
    let go = |sandbox: &str| {
        let sb = common::Sandbox::new();
        // A workspace in the temp dir: its parent is writable by every tool.
        let tmp = sb.path("tmp");
        let ws = tmp.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let away = outside();
        let swap = format!(
            "cd .. && mv ws ws.moved && ln -s {} ws && echo swapped",
            away.path().display()
        );
        let call = |id: &str, command: &str| {
            let input = serde_json::json!({ "command": command }).to_string();
            Reply::sse(sse::anthropic(
                &[B::Tool(id, "bash", &input)],
                "tool_use",
                1,
                1,
            ))
        };
        let server = MockServer::start(vec![
            call("t1", &swap),
            call("t2", "touch planted; echo $?"),
            sse::answer("done"),
        ]);
        let out = common::run(
            sb.anthropic(&server)
                .current_dir(&ws)
                .env("TMPDIR", &tmp)
                .args(["-a", "bash", "--sandbox", sandbox, "--transcript"])
                .arg(sb.transcript_path())
                .arg("go"),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let results = sb.transcript()[2]["results"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        (away.path().join("planted").exists(), results)
    };
    let (planted, second) = go("workspace-write");
    assert!(!planted, "{second}");
    assert!(
        second.contains("exit code: 126") && second.contains("pinned"),
        "{second}"
    );
    // The control: without the sandbox, the second call writes where the link leads.
    let (planted, second) = go("off");
    assert!(planted, "{second}");
}
