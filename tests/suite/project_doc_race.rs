//! `AGENTS.md` is opened once (issue 31): rounds used to check the path (canonicalize, inside the
//! repository, a file) and then open it again by name, so a tool of another run over the same
//! workspace (`rounds batch --jobs 4`) could swap the file for a link to `/proc/self/environ`
//! in between and send rounds' environment to the provider. Now the file is opened with no link
//! followed in any component and the descriptor is checked; a link is followed one step, only to
//! a link-free path inside the repository.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::mock::MockServer;
use crate::common::{Sandbox, run_within, sse};

/// In rounds' environment only: found in a request, it came from `/proc/self/environ`.
const ENV_MARKER: &str = "environ-marker-7c1f0a93";
const FILE_MARKER: &str = "file-marker-2b8e61d4";

/// Every request body the runs sent, as one text.
fn bodies(server: &MockServer) -> String {
    server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn go(sb: &Sandbox, server: &MockServer) -> crate::common::Run {
    run_within(
        sb.anthropic(server)
            .env("RACE_MARKER", ENV_MARKER)
            .args(["--no-transcript", "go"]),
        std::time::Duration::from_secs(20),
    )
}

#[test]
fn links_to_the_environment_outside_or_through_links_are_not_read() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::create_dir(ws.join(".git")).unwrap();
    std::fs::write(sb.path("outside.md"), FILE_MARKER).unwrap();
    std::fs::write(ws.join("inside.md"), FILE_MARKER).unwrap();
    std::os::unix::fs::symlink(ws.join("inside.md"), ws.join("hop.md")).unwrap();
    std::os::unix::fs::symlink("/proc/self", ws.join("procdir")).unwrap();
    let agents = ws.join("AGENTS.md");
    let cases: [(&str, &Path); 5] = [
        ("a link out of the repository", &sb.path("outside.md")),
        (
            "a link to /proc/self/environ",
            Path::new("/proc/self/environ"),
        ),
        ("a link to /proc/1/environ", Path::new("/proc/1/environ")),
        (
            "a link through a linked directory",
            &ws.join("procdir/environ"),
        ),
        ("a link to a link inside", &ws.join("hop.md")),
    ];
    for (what, target) in cases {
        let _ = std::fs::remove_file(&agents);
        std::os::unix::fs::symlink(target, &agents).unwrap();
        let server = MockServer::start(vec![sse::answer("ok")]);
        let out = go(&sb, &server);
        assert_eq!(out.code, 0, "{what}: {}", out.stderr);
        let sent = bodies(&server);
        assert!(!sent.contains(FILE_MARKER), "{what}: {sent}");
        assert!(!sent.contains(ENV_MARKER), "{what}: {sent}");
        assert!(out.stderr.contains("AGENTS.md"), "{what}: {}", out.stderr);
    }
    // The controls: a regular AGENTS.md is read, and so is one link to a file inside.
    for (what, make) in [
        ("a regular file", true),
        ("one link to a file inside", false),
    ] {
        let _ = std::fs::remove_file(&agents);
        if make {
            std::fs::write(&agents, FILE_MARKER).unwrap();
        } else {
            std::os::unix::fs::symlink(ws.join("inside.md"), &agents).unwrap();
        }
        let server = MockServer::start(vec![sse::answer("ok")]);
        let out = go(&sb, &server);
        assert_eq!(out.code, 0, "{what}: {}", out.stderr);
        assert!(bodies(&server).contains(FILE_MARKER), "{what}");
    }
}

/// The race itself: another process keeps swapping `AGENTS.md` between a regular file and a
/// link to `/proc/self/environ` while the jobs of a batch start. Checked, then opened again by
/// path, some jobs read the link (62 of 300 here, with the exchange as fast as it goes; 14 of
/// 800 in the report); opened once, none does.
#[test]
fn a_file_swapped_for_a_link_while_runs_start_never_sends_the_environment() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::create_dir(ws.join(".git")).unwrap();
    let agents = ws.join("AGENTS.md");
    std::fs::write(&agents, FILE_MARKER).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, ws) = (stop.clone(), ws.clone());
        std::thread::spawn(move || {
            use rustix::fs::{CWD, RenameFlags, renameat_with};
            let agents = ws.join("AGENTS.md");
            let link = ws.join(".swap");
            std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
            // One atomic exchange per flip, as fast as the kernel goes: what a run sees when it
            // checks and what it sees when it opens again are as good as independent.
            while !stop.load(Ordering::Relaxed) {
                let _ = renameat_with(CWD, &agents, CWD, &link, RenameFlags::EXCHANGE);
            }
        })
    };
    let server = MockServer::respond(|_| sse::answer("ok"));
    let runs = 300;
    let jobs = sb.path("jobs.jsonl");
    let lines: String = (0..runs)
        .map(|i| format!("{{\"id\":\"job-{i}\",\"prompt\":\"go {i}\"}}\n"))
        .collect();
    std::fs::write(&jobs, lines).unwrap();
    // As in the report: one batch, several jobs at once over one workspace.
    let out = run_within(
        sb.anthropic(&server)
            .env("RACE_MARKER", ENV_MARKER)
            .arg("batch")
            .arg(&jobs)
            .arg("--out")
            .arg(sb.path("out"))
            .args(["--jobs", "4"]),
        std::time::Duration::from_secs(120),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), runs);
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let sent = bodies(&server);
    let leaked = server
        .requests()
        .iter()
        .filter(|r| String::from_utf8_lossy(&r.body).contains(ENV_MARKER))
        .count();
    assert_eq!(
        leaked, 0,
        "{leaked} of {runs} runs sent rounds' environment"
    );
    // The control: the swapped file was read in some runs, so the runs did race the swapper.
    assert!(sent.contains(FILE_MARKER), "no run read AGENTS.md");
}

/// The project's `.rounds.toml` was checked (`is_file`, which follows links) and then read by
/// path: linked to `/proc/self/environ`, its parse error quoted rounds' environment on stderr.
/// It is opened once now, like `AGENTS.md`, and a link is refused.
#[test]
fn a_project_settings_file_linked_to_the_environment_is_not_read() {
    let sb = Sandbox::new();
    let settings = sb.ws().join(".rounds.toml");
    std::os::unix::fs::symlink("/proc/self/environ", &settings).unwrap();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = go(&sb, &server);
    assert!(!out.stderr.contains(ENV_MARKER), "{}", out.stderr);
    assert!(!bodies(&server).contains(ENV_MARKER));
    assert!(out.stderr.contains(".rounds.toml"), "{}", out.stderr);
    // The control: the same channel carries a regular file's text (its parse error quotes it).
    std::fs::remove_file(&settings).unwrap();
    std::fs::write(&settings, format!("{FILE_MARKER} = = 1\n")).unwrap();
    let out = go(&sb, &MockServer::start(vec![sse::answer("ok")]));
    assert!(out.stderr.contains(FILE_MARKER), "{}", out.stderr);
}
