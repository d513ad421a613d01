//! `.git` read-only to tools (issue 31): one bash call of a `--full-auto` run tries every way
//! to plant code that the next `git status` or `git commit` runs outside the sandbox, in the
//! repository, a nested repository, a worktree and a repository whose gitdir is elsewhere in
//! the workspace. Each write must fail and leave every `.git` byte-identical, while the same
//! write outside `.git` succeeds and read-only git commands still work. The control runs the
//! same call with `--sandbox off`, where each write does its harm (and `git status` then runs
//! the planted command), so the test cannot pass because the attack never worked.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rounds_process::sandbox;

use super::sandbox_run::{bash_result, bash_then_answer};
use crate::common::{Sandbox, run};

/// Each row: its name, the hostile write, and the same write outside `.git` (the control).
const ROWS: &[(&str, &str, &str)] = &[
    (
        "hook",
        "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "printf '#!/bin/sh\\n' > ctl-hook && chmod +x ctl-hook",
    ),
    (
        "fsmonitor",
        "git config core.fsmonitor 'touch PWNED; false #'",
        "git config --file ctl.cfg core.fsmonitor 'touch PWNED; false #'",
    ),
    (
        "pager",
        "git config core.pager 'touch PWNED; cat'",
        "git config --file ctl.cfg core.pager 'touch PWNED; cat'",
    ),
    (
        "ssh-command",
        "git config core.sshCommand 'touch PWNED'",
        "git config --file ctl.cfg core.sshCommand 'touch PWNED'",
    ),
    (
        "filter",
        "git config filter.x.clean 'touch PWNED; cat'",
        "git config --file ctl.cfg filter.x.clean 'touch PWNED; cat'",
    ),
    (
        "include",
        "git config include.path ../evil.cfg",
        "git config --file ctl.cfg include.path ../evil.cfg",
    ),
    (
        "attributes",
        "echo '* filter=x' > .git/info/attributes",
        "echo '* filter=x' > ctl-attributes",
    ),
    (
        "nested-repo",
        "echo 'touch PWNED' > sub/.git/hooks/post-checkout",
        "echo 'touch PWNED' > sub/ctl-hook",
    ),
    (
        "worktree-pointer",
        "echo 'gitdir: /tmp/elsewhere' > wt/.git",
        "echo 'gitdir: /tmp/elsewhere' > wt/ctl-pointer",
    ),
    (
        "worktree-gitdir",
        "echo 'touch PWNED' > \"$(git -C wt rev-parse --git-dir)/hooks-x\"",
        "echo 'touch PWNED' > wt/ctl-gitdir",
    ),
    (
        "separate-gitdir",
        "echo 'touch PWNED' > gd/hooks/pre-commit",
        "echo 'touch PWNED' > sep/ctl-hook",
    ),
    (
        "remove-git",
        "rm -rf .git/hooks",
        "mkdir ctl-dir && rm -rf ctl-dir",
    ),
];

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository with a commit, a nested repository, a worktree inside the workspace and a
/// repository whose gitdir (`gd`) is a plain directory of the workspace.
fn repository(sb: &Sandbox) {
    let ws = sb.ws();
    git(&ws, &["init", "-q", "."]);
    sb.write("a.txt", "a\n");
    git(&ws, &["add", "a.txt"]);
    git(&ws, &["commit", "-qm", "init"]);
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    git(&ws.join("sub"), &["init", "-q", "."]);
    git(&ws, &["worktree", "add", "-q", "wt"]);
    git(&ws, &["init", "-q", "--separate-git-dir=gd", "sep"]);
}

/// Every file and link below the git directories, with its bytes (a link: its target).
fn snapshot(ws: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut queue: Vec<PathBuf> = [".git", "sub/.git", "wt/.git", "sep/.git", "gd"]
        .iter()
        .map(|p| ws.join(p))
        .collect();
    while let Some(path) = queue.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            all.insert(path.clone(), Vec::new());
            queue.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if meta.is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            all.insert(path, target.into_os_string().into_encoded_bytes());
        } else {
            let mut bytes = std::fs::read(&path).unwrap();
            bytes.extend(format!("mode {:o}", meta.permissions().mode()).bytes());
            all.insert(path, bytes);
        }
    }
    all
}

/// The one bash call: every row's write and its control, each reporting its exit status, then
/// the read-only git commands.
fn script() -> String {
    let mut lines: Vec<String> = ROWS
        .iter()
        .map(|(name, hostile, control)| {
            format!(
                "( {hostile} ) 2>/dev/null; h=$?; ( {control} ) 2>/dev/null; c=$?; \
                 echo \"row {name} $h $c\""
            )
        })
        .collect();
    lines.push("git status --short >/dev/null 2>&1 && echo status-ok".into());
    lines.push("git log --oneline 2>/dev/null | grep -q init && echo log-ok".into());
    lines.join("\n")
}

/// Each row's exit statuses (hostile, control), from the bash result (`row NAME H C` lines;
/// `sandbox_reach` prints its rows the same way).
pub(super) fn statuses(result: &str) -> BTreeMap<String, (i32, i32)> {
    result
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("row ")?.split(' ');
            let name = w.next()?.to_owned();
            Some((name, (w.next()?.parse().ok()?, w.next()?.parse().ok()?)))
        })
        .collect()
}

fn git_available() -> bool {
    let ok = Command::new("git").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipped: no git on this machine");
    }
    ok
}

/// `git status` by the developer after the run, outside any sandbox: runs a planted fsmonitor.
fn developer_runs_git_status(ws: &Path) {
    let _ = Command::new("git")
        .args(["status", "--short"])
        .current_dir(ws)
        .env("HOME", ws)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output();
}

fn run_call(sb: &Sandbox, flags: &[&str]) -> (String, String) {
    let server = bash_then_answer(&script());
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = run(sb
        .anthropic(&server)
        .env("TMPDIR", &tmp)
        .args(["--transcript"])
        .arg(sb.transcript_path())
        .args(flags)
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    (bash_result(sb), out.stderr)
}

#[test]
fn no_tool_write_reaches_any_git_directory_while_the_same_write_elsewhere_works() {
    if !git_available() {
        return;
    }
    let support = sandbox::probe();
    let sb = Sandbox::new();
    repository(&sb);
    let ws = sb.ws();
    let before = snapshot(&ws);
    let (result, stderr) = run_call(&sb, &["--full-auto"]);
    if !support.mount_namespace || support.landlock_abi < 3 {
        // The fallback: the run says, once, that .git is not protected.
        eprintln!("skipped: no mount namespace or Landlock here; checking the warning instead");
        assert!(stderr.contains(".git read-only"), "{stderr}");
        let start = &sb.transcript()[0];
        assert_eq!(start["sandbox"]["enforced"]["git_read_only"], false);
        return;
    }
    let start = &sb.transcript()[0];
    assert_eq!(
        start["sandbox"]["enforced"]["git_read_only"], true,
        "{start}"
    );
    let rows = statuses(&result);
    assert_eq!(rows.len(), ROWS.len(), "{result}");
    for (name, (hostile, control)) in &rows {
        assert_ne!(
            *hostile, 0,
            "{name}: the write into a git directory worked\n{result}"
        );
        assert_eq!(
            *control, 0,
            "{name}: the same write outside .git failed\n{result}"
        );
    }
    assert!(result.contains("status-ok"), "git status inside: {result}");
    assert!(result.contains("log-ok"), "git log inside: {result}");
    assert_eq!(snapshot(&ws), before, "a git directory changed");
    developer_runs_git_status(&ws);
    assert!(!ws.join("PWNED").exists());
    // The read-only mounts were the tool's own: rounds' namespace does not have them.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(ws.to_str().unwrap()), "{mounts}");
}

#[test]
fn control_with_the_sandbox_off_every_write_reaches_git_and_git_status_runs_the_payload() {
    if !git_available() {
        return;
    }
    let sb = Sandbox::new();
    repository(&sb);
    let ws = sb.ws();
    let before = snapshot(&ws);
    let (result, _) = run_call(&sb, &["-a", "bash", "--sandbox", "off"]);
    let rows = statuses(&result);
    assert_eq!(rows.len(), ROWS.len(), "{result}");
    for (name, (hostile, control)) in &rows {
        assert_eq!((*hostile, *control), (0, 0), "{name}\n{result}");
    }
    assert_ne!(snapshot(&ws), before);
    // The planted fsmonitor (or the filter) runs for the developer, outside any sandbox.
    developer_runs_git_status(&ws);
    assert!(ws.join("PWNED").exists(), "the planted fsmonitor ran");
}

#[test]
fn the_user_can_opt_in_to_a_writable_git_with_sandbox_write() {
    if !git_available() || !sandbox::probe().mount_namespace {
        eprintln!("skipped: needs git and a mount namespace");
        return;
    }
    let sb = Sandbox::new();
    repository(&sb);
    let ws = sb.ws();
    let server = bash_then_answer("echo x > .git/opted && echo wrote");
    let out = run(sb
        .anthropic(&server)
        .args(["--full-auto", "--sandbox-write"])
        .arg(ws.join(".git"))
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(bash_result(&sb).contains("wrote"), "{}", bash_result(&sb));
    assert!(ws.join(".git/opted").exists());
}

/// The way most users run rounds: not as root, so the supervisor's child makes a user
/// namespace for its mounts. Run here by dropping to `nobody` (the supervisor directly, with
/// the sandbox in its variable), where the machine allows that and user namespaces.
#[test]
fn as_an_ordinary_user_git_is_read_only_through_a_user_namespace() {
    use rounds_process::sandbox::{Mode, SUPERVISOR_ENV, Sandbox as Confined};
    let root = rustix::process::geteuid().is_root();
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !root || !setpriv || !git_available() {
        eprintln!("skipped: needs root (to become nobody) and setpriv");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&ws).unwrap();
    git(&ws, &["init", "-q", "."]);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&ws)
        .status()
        .unwrap();
    assert!(chown.success());
    let mut confined = Confined::new(Mode::WorkspaceWrite);
    confined.write.push(ws.clone());
    let as_nobody = |sandbox: Option<std::ffi::OsString>| {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(super::sandbox::ROUNDS)
            .args(["__rounds-supervise", "inherit", "--", "sh", "-c"])
            .arg(
                "id -u; echo x > .git/hooks/pre-commit && echo hook-written; \
             echo x > ctl && echo ctl-written; git status --short >/dev/null && echo status-ok",
            )
            .current_dir(&ws)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &ws)
            .stdin(std::process::Stdio::null());
        match sandbox {
            Some(value) => cmd.env(SUPERVISOR_ENV, value),
            None => cmd.env_remove(SUPERVISOR_ENV),
        };
        cmd.output().unwrap()
    };
    let out = as_nobody(confined.to_env());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("Operation not permitted") && !stdout.contains("65534") {
        eprintln!("skipped: this machine refuses nobody a user namespace: {stderr}");
        return;
    }
    assert!(stdout.starts_with("65534\n"), "{stdout}{stderr}");
    assert!(!stdout.contains("hook-written"), "{stdout}{stderr}");
    assert!(stdout.contains("ctl-written"), "{stdout}{stderr}");
    assert!(stdout.contains("status-ok"), "{stdout}{stderr}");
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    // The control: unconfined, nobody writes the hook of its own repository.
    let out = as_nobody(None);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hook-written"),
        "{out:?}"
    );
}

/// Two bash calls in two rounds, each trying to plant a hook in a repository of the temp dir
/// (found once, when the run starts: `sandbox::survey`) and making the same write beside it;
/// the results of both.
fn temp_repository_calls(sb: &Sandbox, flags: &[&str]) -> [String; 2] {
    use crate::common::mock::{MockServer, Reply};
    use crate::common::sse::{self, B};
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(tmp.join("repo")).unwrap();
    git(&tmp.join("repo"), &["init", "-q", "."]);
    let call = |n: usize| {
        let command = format!(
            "( echo 'touch PWNED' > \"$TMPDIR/repo/.git/hooks/pre-commit{n}\" ) 2>/dev/null; h=$?; \
             echo x > \"$TMPDIR/repo/ctl{n}\"; echo \"row temp{n} $h $?\""
        );
        let input = serde_json::json!({ "command": command }).to_string();
        Reply::sse(sse::anthropic(
            &[B::Tool(&format!("t{n}"), "bash", &input)],
            "tool_use",
            1,
            1,
        ))
    };
    let server = MockServer::start(vec![call(1), call(2), sse::answer("done")]);
    let out = run(sb
        .anthropic(&server)
        .env("TMPDIR", &tmp)
        .args(["--transcript"])
        .arg(sb.transcript_path())
        .args(flags)
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    [1, 2].map(|n| {
        lines[n]["results"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    })
}

#[test]
fn a_repository_in_the_temp_dir_stays_read_only_in_every_command_of_the_run() {
    let support = sandbox::probe();
    if !git_available() || !support.mount_namespace || support.landlock_abi < 3 {
        eprintln!("skipped: needs git, a mount namespace and Landlock");
        return;
    }
    let sb = Sandbox::new();
    for (n, result) in temp_repository_calls(&sb, &["--full-auto"])
        .iter()
        .enumerate()
    {
        let rows = statuses(result);
        let (hostile, control) = rows[&format!("temp{}", n + 1)];
        assert_ne!(hostile, 0, "call {}: the hook was planted\n{result}", n + 1);
        assert_eq!(
            control,
            0,
            "call {}: the temp dir was not writable\n{result}",
            n + 1
        );
    }
    let hooks = sb.path("tmp/repo/.git/hooks");
    assert!(!hooks.join("pre-commit1").exists() && !hooks.join("pre-commit2").exists());

    // The control: with the sandbox off, the same calls plant both hooks.
    let off = Sandbox::new();
    for (n, result) in temp_repository_calls(&off, &["-a", "bash", "--sandbox", "off"])
        .iter()
        .enumerate()
    {
        assert_eq!(
            statuses(result)[&format!("temp{}", n + 1)],
            (0, 0),
            "{result}"
        );
    }
    assert!(off.path("tmp/repo/.git/hooks/pre-commit2").exists());
}
