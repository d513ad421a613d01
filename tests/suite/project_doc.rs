//! The project's instructions (issue 23, item 1): the `AGENTS.md` files from the repository's
//! root down to the workspace reach the first user turn, root first and nearest last, capped;
//! the system prompt and the tools stay the same bytes in every repository; the transcript
//! records which files were read; and the files are text from the repository: they set nothing,
//! and no link in them reaches outside it.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::mock::MockServer;
use crate::common::{Run, Sandbox, run, run_within, sse};

/// A run of `args` in `sb` (cwd `ws/`) with a transcript: its exit, its first request's body
/// and the transcript's start line.
fn go(sb: &Sandbox, args: &[&str]) -> (Run, Value, Value) {
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .args(args)
        .arg("Fix the build."));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    let start = sb.transcript()[0].clone();
    (out, body, start)
}

/// The text of the first user message.
fn first_turn(body: &Value) -> String {
    let content = &body["messages"][0]["content"];
    match content.as_str() {
        Some(text) => text.to_owned(),
        None => content[0]["text"].as_str().unwrap_or_default().to_owned(),
    }
}

/// Whether a directory above the sandbox holds `.git`: then the sandbox is inside a repository
/// and "no .git" cannot be tested here.
fn inside_a_repository(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

#[test]
fn agents_files_come_root_first_nearest_last_after_the_cached_prefix() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws().join(".git")).unwrap();
    sb.write("AGENTS.md", "ROOT: use cargo nextest.\n");
    sb.write("crates/core/AGENTS.md", "NEAR: never touch build.rs.\n");
    sb.write("crates/AGENTS.md.bak", "NOT A NAME\n");
    // Above the repository's root: not the project's.
    std::fs::write(sb.path("AGENTS.md"), "ABOVE THE ROOT\n").unwrap();
    let (_, body, start) = go(&sb, &["-w", "crates/core"]);
    let turn = first_turn(&body);
    let (root, near, prompt) = (
        turn.find("ROOT: use cargo").unwrap(),
        turn.find("NEAR: never").unwrap(),
        turn.find("Fix the build.").unwrap(),
    );
    assert!(root < near && near < prompt, "{turn}");
    assert!(turn.contains("## `AGENTS.md`") && turn.contains("## `crates/core/AGENTS.md`"));
    assert!(
        !turn.contains("ABOVE THE ROOT") && !turn.contains("NOT A NAME"),
        "{turn}"
    );
    assert_eq!(
        start["project_docs"],
        json!([
            {"path": "AGENTS.md", "bytes": 25},
            {"path": "crates/core/AGENTS.md", "bytes": 28}
        ])
    );
    crate::common::check_schema(&start);
    // `rounds runs` shows the prompt the user gave, not the files before it.
    let out = run(sb
        .rounds()
        .args(["show", &sb.transcript_path().display().to_string()]));
    assert!(out.stdout.contains("Fix the build."), "{}", out.stdout);
    assert!(!out.stdout.contains("ROOT: use cargo"), "{}", out.stdout);

    // The prefix a server caches is the same bytes in a repository without instructions; the
    // control: the first turns differ.
    let bare = Sandbox::new();
    let (_, other, start) = go(&bare, &[]);
    assert_eq!(body["system"], other["system"]);
    assert_eq!(body["tools"], other["tools"]);
    assert_ne!(first_turn(&other), turn);
    assert_eq!(first_turn(&other), bare.turn("Fix the build."));
    assert!(start.get("project_docs").is_none(), "{start}");
}

#[test]
fn without_a_repository_the_workspace_alone_is_read() {
    let sb = Sandbox::new();
    if inside_a_repository(sb.dir.path()) {
        eprintln!("skipped: the temp dir is inside a git repository");
        return;
    }
    std::fs::write(sb.path("AGENTS.md"), "ABOVE THE WORKSPACE\n").unwrap();
    sb.write("AGENTS.md", "HERE\n");
    let (_, body, start) = go(&sb, &[]);
    let turn = first_turn(&body);
    assert!(
        turn.contains("HERE") && !turn.contains("ABOVE THE WORKSPACE"),
        "{turn}"
    );
    assert_eq!(
        start["project_docs"],
        json!([{"path": "AGENTS.md", "bytes": 5}])
    );
    // The control: with a .git above, the file there is the root's and is read.
    std::fs::create_dir(sb.path(".git")).unwrap();
    let (_, body, start) = go(&sb, &[]);
    assert!(first_turn(&body).contains("ABOVE THE WORKSPACE"));
    assert_eq!(start["project_docs"][1]["path"], "ws/AGENTS.md");
}

#[test]
fn the_cap_cuts_at_32_kib_says_so_and_never_fails_the_run() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws().join(".git")).unwrap();
    // 40 KiB, with a Latin-1 byte in it: lossy, cut, and the run goes on.
    let mut big = b"caf\xe9 ".to_vec();
    big.extend(std::iter::repeat_n(b'x', 40 * 1024));
    std::fs::write(sb.ws().join("AGENTS.md"), &big).unwrap();
    sb.write("sub/AGENTS.md", "NEAREST\n");
    let (out, body, start) = go(&sb, &["-w", "sub"]);
    let turn = first_turn(&body);
    assert!(turn.contains("caf\u{fffd} xxx"), "lossy");
    assert!(turn.contains("cut here"), "the marker");
    assert!(!turn.contains("NEAREST"), "past the cap: unread");
    assert!(turn.len() < 33 * 1024 + 1024, "{} bytes", turn.len());
    assert_eq!(
        start["project_docs"],
        json!([{"path": "AGENTS.md", "bytes": big.len(), "truncated": true}])
    );
    assert!(out.stderr.contains("capped at 32 KiB"), "{}", out.stderr);
    assert!(out.stderr.contains("sub/AGENTS.md"), "{}", out.stderr);
    assert!(out.stderr.contains("not UTF-8"), "{}", out.stderr);
}

#[test]
fn the_names_are_the_users_to_choose_and_no_project_doc_reads_none() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws().join(".git")).unwrap();
    sb.write("AGENTS.md", "AGENTS TEXT\n");
    sb.write("CLAUDE.md", "CLAUDE TEXT\n");
    sb.write("sub/CLAUDE.md", "SUB CLAUDE\n");
    let (_, body, _) = go(&sb, &["--no-project-doc"]);
    assert_eq!(first_turn(&body), sb.turn("Fix the build."));
    // In each directory the first name found: AGENTS.md at the root, CLAUDE.md below.
    let names = ["--project-doc", "AGENTS.md", "--project-doc", "CLAUDE.md"];
    let (_, body, _) = go(&sb, &[&names[..], &["-w", "sub"][..]].concat());
    let turn = first_turn(&body);
    assert!(
        turn.contains("AGENTS TEXT") && turn.contains("SUB CLAUDE"),
        "{turn}"
    );
    assert!(!turn.contains("CLAUDE TEXT"), "{turn}");
    // The user's settings file may choose; the project's may not (a repository does not pick
    // which of its files the model reads, nor turn them off).
    super::settings::user_file(&sb, "project-doc = [\"CLAUDE.md\"]\n");
    let (_, body, _) = go(&sb, &[]);
    assert!(first_turn(&body).contains("CLAUDE TEXT"));
    std::fs::remove_file(sb.path("home/.config/rounds/config.toml")).unwrap();
    super::settings::project_file(
        &sb,
        "no-project-doc = true\nproject-doc = [\"CLAUDE.md\"]\n",
    );
    let (out, body, _) = go(&sb, &[]);
    assert!(first_turn(&body).contains("AGENTS TEXT"), "{out:?}");
    assert!(!first_turn(&body).contains("CLAUDE TEXT"));
    assert!(out.stderr.contains("project-doc ignored"), "{}", out.stderr);
    // A name, never a path.
    let server = MockServer::start(vec![]);
    let out = run(sb
        .anthropic(&server)
        .args(["--project-doc", "../../etc/passwd", "go"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("not a path"), "{}", out.stderr);
}

#[test]
fn an_agents_file_informs_the_model_and_sets_nothing() {
    let settings_like = "model = \"openai/gpt-4.1\"\nmax-rounds = 1\nallow = [\"bash\"]\n\
                         [profile.ci]\nmax-rounds = 2\n\n    --allow bash --max-rounds 1\n";
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws().join(".git")).unwrap();
    sb.write("AGENTS.md", settings_like);
    let (_, body, start) = go(&sb, &[]);
    assert!(
        first_turn(&body).contains("max-rounds = 1"),
        "it is sent, as text"
    );
    assert_eq!(start["limits"]["max_rounds"], 25);
    assert_eq!(start["model"], "claude-sonnet-4-5");
    assert!(
        !start["tools"].to_string().contains("bash"),
        "{}",
        start["tools"]
    );
    let out = run(sb.rounds().args(["--profile", "ci", "config"]));
    assert_eq!(out.code, 2, "no profile comes from it: {}", out.stderr);
    // The control: the same text as the user's settings file does set them.
    super::settings::user_file(
        &sb,
        &settings_like.replace("    --allow bash --max-rounds 1\n", ""),
    );
    let (_, _, start) = go(&sb, &["-m", "anthropic/claude-sonnet-4-5"]);
    assert_eq!(start["limits"]["max_rounds"], 1);
    assert!(start["tools"].to_string().contains("bash"));
}

#[test]
fn links_out_of_the_repository_and_odd_files_are_not_read() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws().join(".git")).unwrap();
    std::fs::write(sb.path("secret.txt"), "SECRET-OUTSIDE\n").unwrap();
    std::fs::create_dir(sb.ws().join("in")).unwrap();
    let mkfifo = |p: &Path| {
        std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .is_ok_and(|s| s.success())
    };
    // Each hostile AGENTS.md of the workspace: a link to a file outside, a link to a device, a
    // FIFO (reading it would hang), a directory.
    type Make = Box<dyn Fn(&Path) -> bool>;
    let secret = sb.path("secret.txt");
    let hostile: Vec<(&str, Make)> = vec![
        (
            "link out",
            Box::new(move |p| std::os::unix::fs::symlink(&secret, p).is_ok()),
        ),
        (
            "link to a device",
            Box::new(|p| std::os::unix::fs::symlink("/dev/zero", p).is_ok()),
        ),
        ("fifo", Box::new(mkfifo)),
        ("directory", Box::new(|p| std::fs::create_dir(p).is_ok())),
    ];
    for (what, make) in hostile {
        let path = sb.ws().join("in/AGENTS.md");
        let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir(&path));
        if !make(&path) {
            eprintln!("skipped {what}: cannot make it here");
            continue;
        }
        let server = MockServer::start(vec![sse::answer("ok")]);
        let out = run_within(
            sb.anthropic(&server)
                .args(["--no-transcript", "-w", "in", "go"]),
            std::time::Duration::from_secs(20),
        );
        assert_eq!(out.code, 0, "{what}: {}", out.stderr);
        let turn = first_turn(&server.requests()[0].json());
        assert!(!turn.contains("SECRET-OUTSIDE"), "{what}: {turn}");
        assert!(
            out.stderr.contains("in/AGENTS.md"),
            "{what}: {}",
            out.stderr
        );
    }
    // The control: the same secret, linked from inside the repository, is read; so the link
    // out would have been, without the boundary.
    std::fs::rename(sb.path("secret.txt"), sb.ws().join("secret.txt")).unwrap();
    let path = sb.ws().join("in/AGENTS.md");
    let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir(&path));
    std::os::unix::fs::symlink(sb.ws().join("secret.txt"), &path).unwrap();
    let (_, body, _) = go(&sb, &["-w", "in"]);
    assert!(first_turn(&body).contains("SECRET-OUTSIDE"));
}

#[test]
fn a_resumed_run_does_not_send_the_files_again() {
    let sb = Sandbox::new();
    sb.write("AGENTS.md", "ONCE ONLY\n");
    let (_, _, start) = go(&sb, &[]);
    assert_eq!(start["project_docs"][0]["path"], "AGENTS.md");
    let first = sb.path("first.jsonl");
    std::fs::rename(sb.transcript_path(), &first).unwrap();
    let server = MockServer::start(vec![sse::answer("again")]);
    let out = run(sb
        .anthropic(&server)
        .arg("--no-transcript")
        .arg("--resume")
        .arg(&first)
        .arg("and now?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    let all = body["messages"].to_string();
    assert_eq!(all.matches("ONCE ONLY").count(), 1, "{all}");
    assert!(all.contains("and now?"));
}
