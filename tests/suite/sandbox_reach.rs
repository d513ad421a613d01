//! What a sandboxed tool could reach beyond files (issue 31): the resource limits, priority,
//! CPU affinity and I/O priority of rounds itself (`prlimit --pid … --fsize=1:1` ended rounds
//! with SIGXFSZ), setuid files made by `open(O_CREAT, 04755)`, and SysV shared memory of other
//! processes. One bash call of a `--full-auto` run tries each against rounds' pid (refused)
//! and on itself (still works); the control runs the same call with `--sandbox off`, where
//! each reaches rounds.

use std::process::Command;

use super::sandbox_git::statuses;
use super::sandbox_run::{bash_result, bash_then_answer};
use crate::common::{Sandbox, run};

/// Each row: its name, the call on rounds' pid `$R`, and the same on the caller itself.
const ROWS: &[(&str, &str, &str)] = &[
    (
        "prlimit",
        "prlimit --pid $R --core=0:0",
        "prlimit --core=0:0 true && ulimit -c 0",
    ),
    ("renice", "renice -n 19 -p $R", "nice -n 5 true"),
    ("taskset", "taskset -p 1 $R", "taskset -c 0 true"),
    ("ionice", "ionice -c3 -p $R", "ionice -c3 true"),
    (
        "setuid-create",
        "perl -e 'use Fcntl; sysopen(F, \"suid\", O_CREAT|O_WRONLY, 04755) or exit 1'",
        "perl -e 'use Fcntl; sysopen(F, \"plain\", O_CREAT|O_WRONLY, 0755) or exit 1'",
    ),
];

/// rounds is the supervisor's parent; the supervisor is bash's.
const FIND_ROUNDS: &str = "R=$(awk '{print $4}' /proc/$PPID/stat)";

fn script(shm_key: i32) -> String {
    let mut lines = vec![FIND_ROUNDS.to_owned()];
    lines.extend(ROWS.iter().map(|(name, other, own)| {
        format!(
            "( {other} ) >/dev/null 2>&1; o=$?; ( {own} ) >/dev/null 2>&1; s=$?; \
             echo \"row {name} $o $s\""
        )
    }));
    lines.push(format!(
        "ipcs -m 2>/dev/null | grep -qi 0x{shm_key:08x} && echo shm-seen || echo shm-unseen"
    ));
    lines.join("\n")
}

/// A SysV shared memory segment of the test's own, removed when dropped.
struct Segment(i32);

impl Segment {
    #[allow(unsafe_code)]
    fn new(key: i32) -> Segment {
        // SAFETY: shmget takes integers.
        let id = unsafe { libc::shmget(key, 4096, libc::IPC_CREAT | 0o600) };
        assert!(id >= 0, "shmget: {}", std::io::Error::last_os_error());
        Segment(id)
    }
}

impl Drop for Segment {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: IPC_RMID of our own segment.
        unsafe { libc::shmctl(self.0, libc::IPC_RMID, std::ptr::null_mut()) };
    }
}

fn tools_available() -> bool {
    let missing: Vec<&str> = ["prlimit", "renice", "taskset", "ionice", "perl", "ipcs"]
        .into_iter()
        .filter(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| !o.status.success())
        })
        .collect();
    if !missing.is_empty() {
        eprintln!("skipped: missing {missing:?}");
    }
    missing.is_empty()
}

fn run_call(sb: &Sandbox, key: i32, flags: &[&str]) -> String {
    let server = bash_then_answer(&script(key));
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = run(sb
        .anthropic(&server)
        .env("TMPDIR", &tmp)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .args(flags)
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    bash_result(sb)
}

fn key(tag: i32) -> i32 {
    0x5200_0000 | ((std::process::id() as i32 & 0xffff) << 4) | tag
}

#[test]
fn a_tool_cannot_set_limits_priorities_or_affinity_of_rounds_nor_make_setuid_files() {
    if !tools_available() || !rounds_process::sandbox::probe().seccomp {
        eprintln!("skipped: needs seccomp and the util-linux tools");
        return;
    }
    let sb = Sandbox::new();
    let key = key(1);
    let _segment = Segment::new(key);
    let result = run_call(&sb, key, &["--full-auto"]);
    let rows = statuses(&result);
    assert_eq!(rows.len(), ROWS.len(), "{result}");
    for (name, (other, own)) in &rows {
        assert_ne!(*other, 0, "{name} reached rounds\n{result}");
        assert_eq!(*own, 0, "{name} on the tool itself failed\n{result}");
    }
    assert!(!sb.ws().join("suid").exists());
    let private_ipc = rounds_process::sandbox::probe().mount_namespace;
    if private_ipc {
        assert!(result.contains("shm-unseen"), "{result}");
    } else {
        eprintln!("note: no IPC namespace here; SysV IPC is refused by seccomp instead");
    }
}

#[test]
fn control_with_the_sandbox_off_the_same_calls_reach_rounds() {
    if !tools_available() {
        return;
    }
    let sb = Sandbox::new();
    let key = key(2);
    let _segment = Segment::new(key);
    let result = run_call(&sb, key, &["-a", "bash", "--sandbox", "off"]);
    let rows = statuses(&result);
    assert_eq!(rows.len(), ROWS.len(), "{result}");
    for (name, (other, own)) in &rows {
        assert_eq!((*other, *own), (0, 0), "{name}\n{result}");
    }
    assert!(result.contains("shm-seen"), "{result}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(sb.ws().join("suid"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o4000, 0, "made setuid unconfined");
}
