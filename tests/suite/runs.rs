//! `rounds runs` (listing, pruning) and `rounds show` (terminal text, colour, paging, HTML),
//! through the real binary.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::common::mock::MockServer;
use crate::common::{Sandbox, read_jsonl, run, sse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const FIXTURE: &str = "tests/data/show/run.jsonl";

/// Two finished runs against the mock under the sandbox's ROUNDS_HOME; their transcripts,
/// oldest first.
fn two_runs(sb: &Sandbox) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for prompt in ["first task\nwith details", "second task"] {
        let server = MockServer::start(vec![sse::answer("done")]);
        let out = run(sb.anthropic(&server).args(["-o", "json", prompt]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let outcome: Value = serde_json::from_str(&out.stdout).unwrap();
        paths.push(PathBuf::from(outcome["transcript"].as_str().unwrap()));
    }
    paths
}

#[test]
fn runs_lists_the_newest_runs_first_as_a_table_or_json() {
    let sb = Sandbox::new();
    let paths = two_runs(&sb);
    let out = run(sb.rounds().arg("runs"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("STARTED (UTC)"), "{}", out.stdout);
    assert!(
        lines[1].contains("completed") && lines[1].ends_with("second task"),
        "{}",
        out.stdout
    );
    assert!(lines[1].contains(" 1/1 "), "{}", out.stdout);
    assert_eq!(lines[2].trim(), paths[1].display().to_string());
    // Only the prompt's first line.
    assert!(lines[3].ends_with("first task"), "{}", out.stdout);
    assert_eq!(lines.len(), 5);

    let out = run(sb.rounds().args(["runs", "-n", "1", "-o", "json"]));
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["path"], paths[1].display().to_string());
    assert_eq!(listed[0]["status"], "completed");
    assert_eq!(listed[0]["rounds"], 1);
    assert_eq!(listed[0]["usage"]["output_tokens"], 1);

    // Nothing kept yet: a note on stderr, nothing on stdout.
    let empty = Sandbox::new();
    let out = run(empty.rounds().arg("runs"));
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
    assert!(out.stderr.contains("no runs under"), "{}", out.stderr);
}

fn set_age(path: &Path, days: u64) {
    let when = SystemTime::now() - Duration::from_secs(days * 86_400);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

#[test]
fn prune_deletes_old_runs_and_their_outputs_and_a_dry_run_nothing() {
    let sb = Sandbox::new();
    let paths = two_runs(&sb);
    let outputs = paths[0].with_extension("outputs");
    std::fs::create_dir_all(&outputs).unwrap();
    std::fs::write(outputs.join("call.txt"), "whole output").unwrap();
    set_age(&paths[0], 40);

    let out = run(sb.rounds().args(["runs", "--prune", "30d", "--dry-run"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout.lines().take(2).collect::<Vec<_>>(),
        [
            format!("would remove {}", paths[0].display()),
            format!("would remove {}", outputs.display()),
        ]
    );
    assert!(
        out.stdout.contains("would remove 1 run ("),
        "{}",
        out.stdout
    );
    assert!(paths[0].exists() && outputs.exists());

    let out = run(sb.rounds().args(["runs", "--prune", "30d"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("removed 1 run ("), "{}", out.stdout);
    assert!(!paths[0].exists() && !outputs.exists());
    assert!(paths[1].exists());

    let out = run(sb.rounds().args(["runs", "--prune", "30"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("expected an age such as 30d"),
        "{}",
        out.stderr
    );
    let out = run(sb.rounds().args(["runs", "--dry-run"]));
    assert_eq!(out.code, 2, "--dry-run needs --prune");
}

/// `rounds show` of the fixture, from the crate root so the path it prints is stable.
fn show(sb: &Sandbox, args: &[&str]) -> crate::common::Run {
    run(sb
        .rounds()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("show")
        .args(args))
}

#[test]
fn show_prints_the_fixture_exactly_as_its_snapshot() {
    let sb = Sandbox::new();
    // The fixture is a transcript as rounds writes them.
    read_jsonl(&Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE));
    let out = show(&sb, &[FIXTURE]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let expected = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/show/run.txt"),
    )
    .unwrap();
    assert_eq!(out.stdout, expected);
    // Folded results say how much is folded; hostile text is shown, not obeyed.
    assert!(out.stdout.contains("… (22 more lines)"));
    assert!(out.stdout.contains(r"\x1b]0;pwned\x07"));
    assert!(!out.stdout.contains('\x1b'));
}

#[test]
fn show_colours_only_when_asked_or_on_a_terminal_and_pages_only_there() {
    let sb = Sandbox::new();
    let marker = sb.path("paged");
    let pager = format!("cat > '{}'", marker.display());
    // Piped: no colour, no pager.
    let out = run(sb
        .rounds()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PAGER", &pager)
        .args(["show", FIXTURE]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains('\x1b') && !marker.exists());
    // --color always: SGR sequences of rounds' own, and the transcript's escape still shown.
    let out = show(&sb, &["--color", "always", FIXTURE]);
    assert!(
        out.stdout.contains("\x1b[1;36m── round 1"),
        "{}",
        out.stdout
    );
    let sgr = regex::Regex::new(r"\x1b\[[0-9;]*m").unwrap();
    assert!(!sgr.replace_all(&out.stdout, "").contains('\x1b'));
    assert!(out.stdout.contains(r"\x1b]0;pwned\x07"));
    // NO_COLOR turns auto off, and the global --color never does too; an explicit
    // --color always overrides NO_COLOR (as no-color.org asks of a command-line flag).
    for (no_color, flag, coloured) in [
        (true, "auto", false),
        (false, "never", false),
        (true, "always", true),
    ] {
        let mut cmd = sb.rounds();
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["show", "--color", flag, FIXTURE]);
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        let out = run(&mut cmd);
        assert_eq!(out.stdout.contains('\x1b'), coloured, "{no_color} {flag}");
    }
    // On a terminal (script(1) gives it one): coloured, through $PAGER.
    let status = std::process::Command::new("script")
        .args(["-qec"])
        .arg(format!("{} show {FIXTURE}", env!("CARGO_BIN_EXE_rounds")))
        .arg("/dev/null")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PAGER", &pager)
        .env("ROUNDS_HOME", sb.path("state"))
        .env_remove("NO_COLOR")
        .stdout(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => {
            let paged = std::fs::read_to_string(&marker).unwrap();
            assert!(paged.contains("\x1b[1;36m── round 1"), "{paged}");
            let out = run(sb
                .rounds()
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .args(["show", FIXTURE]));
            assert_eq!(sgr.replace_all(&paged, ""), out.stdout);
        }
        other => eprintln!("script(1) is not usable here ({other:?}); terminal check skipped"),
    }
}

#[test]
fn show_finds_runs_by_id_and_last_and_names_what_it_cannot_find() {
    let sb = Sandbox::new();
    let paths = two_runs(&sb);
    let id = paths[0].file_stem().unwrap().to_str().unwrap().to_owned();
    let out = run(sb.rounds().args(["show", &id]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("first task"), "{}", out.stdout);
    for args in [&["show", "last"][..], &["show"]] {
        let out = run(sb.rounds().args(args));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains("second task"), "{}", out.stdout);
    }
    let out = run(sb.rounds().args(["show", "20990101T000000.000Z-00000000"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no run 20990101T"), "{}", out.stderr);
    let out = run(sb.rounds().args(["show", "missing.jsonl"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("missing.jsonl"), "{}", out.stderr);
}

/// Everything a parsed HTML document holds: its elements with their attributes, and its text.
struct Parsed {
    elements: Vec<(String, Vec<(String, String)>)>,
    text: String,
}

fn parse_html(html: &str) -> Parsed {
    use html5ever::tendril::TendrilSink;
    use markup5ever_rcdom::{Handle, NodeData, RcDom};
    fn walk(node: &Handle, out: &mut Parsed) {
        match &node.data {
            NodeData::Element { name, attrs, .. } => {
                let attrs = attrs
                    .borrow()
                    .iter()
                    .map(|a| (a.name.local.to_string(), a.value.to_string()))
                    .collect();
                out.elements.push((name.local.to_string(), attrs));
            }
            NodeData::Text { contents } => out.text.push_str(&contents.borrow()),
            _ => {}
        }
        for child in node.children.borrow().iter() {
            walk(child, out);
        }
    }
    let dom = html5ever::parse_document(RcDom::default(), Default::default()).one(html);
    let mut parsed = Parsed {
        elements: Vec::new(),
        text: String::new(),
    };
    walk(&dom.document, &mut parsed);
    parsed
}

const HOSTILE: [&str; 5] = [
    "<script>alert(1)</script>",
    "\"><img src=x onerror=alert(2)>",
    "</details>",
    "</pre></details></section><script>alert(3)</script>",
    "' onmouseover='alert(4)",
];

/// A transcript with hostile markup in every field a page shows.
fn hostile_transcript(path: &Path) {
    let all = HOSTILE.join(" ");
    let start = json!({"v": 1, "type": "start", "run_id": HOSTILE[1], "time": "t",
        "provider": HOSTILE[0], "model": HOSTILE[2], "workspace": HOSTILE[3], "prompt": all,
        "system": "s", "tools": [HOSTILE[4]], "limits": {"max_rounds": 1, "max_tokens": null,
        "budget_tokens": null, "timeout_secs": null, "tool_timeout_secs": 30.0,
        "max_parallel": 8}, "resumed_from": HOSTILE[0]});
    let round = json!({"v": 1, "type": "round", "round": 1, "time": "t",
        "blocks": [{"type": "thinking", "text": all}, {"type": "text", "text": all},
            {"type": "tool_use", "id": HOSTILE[1], "name": HOSTILE[0], "input": {"x": all}},
            {"type": "tool_use", "id": "c2", "name": "t", "input": {}, "raw_input": all,
             "defect": {"kind": "invalid_json", "detail": all}}],
        "results": [{"tool_use_id": HOSTILE[1], "name": HOSTILE[0], "is_error": false,
            "content": format!("{all}\n{all}"), "truncated": true, "full_output": all},
            {"tool_use_id": "c2", "name": "t", "is_error": true, "content": all,
             "error_kind": "invalid_json"},
            {"tool_use_id": HOSTILE[3], "name": "t", "is_error": true, "content": all}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1},
        "model_ms": 1, "tools_ms": 1, "error": all,
        "retries": [{"round": 1, "attempt": 1, "error": all, "delay_ms": 1}]});
    let end = json!({"v": 1, "type": "end", "status": "error", "exit_code": 1, "rounds": 1,
        "final_text": all, "usage": {"input_tokens": 1, "output_tokens": 1},
        "duration_ms": 1, "error": all});
    std::fs::write(path, format!("{start}\n{round}\n{end}\n")).unwrap();
}

#[test]
fn the_html_page_keeps_hostile_transcript_text_as_text() {
    let sb = Sandbox::new();
    let transcript = sb.path("hostile.jsonl");
    hostile_transcript(&transcript);
    let page = sb.path("out/run.html");
    let out = run(sb
        .rounds()
        .arg("show")
        .arg(&transcript)
        .arg("--html")
        .arg(&page));
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    let parsed = parse_html(&html);
    let allowed = [
        "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "code", "dl", "dt",
        "dd", "section", "pre", "div", "b", "span", "details", "summary", "p",
    ];
    for (name, attrs) in &parsed.elements {
        assert!(
            allowed.contains(&name.as_str()),
            "element {name} in the page"
        );
        for (attr, value) in attrs {
            assert!(
                [
                    "class",
                    "id",
                    "lang",
                    "charset",
                    "http-equiv",
                    "content",
                    "name",
                    "open"
                ]
                .contains(&attr.as_str()),
                "attribute {attr}={value:?} on {name}"
            );
        }
    }
    // Each hostile string survives as text, verbatim, as many times as it was put in.
    for bad in HOSTILE {
        assert!(parsed.text.matches(bad).count() >= 10, "{bad} lost");
    }
    // Exactly the details elements rounds made: thinking, and three results.
    let details = parsed.elements.iter().filter(|(n, _)| n == "details");
    assert_eq!(details.count(), 4);
    // Self-contained: no URL to load, and a policy that would refuse scripts anyway.
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(html.contains("default-src 'none'"));
}

#[test]
fn the_html_page_of_a_run_has_every_round_call_and_result() {
    let sb = Sandbox::new();
    let page = sb.path("run.html");
    let out = run(sb
        .rounds()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["show", FIXTURE, "--html"])
        .arg(&page));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    let parsed = parse_html(&html);
    let count = |tag: &str, class: &str| {
        parsed
            .elements
            .iter()
            .filter(|(n, a)| n == tag && a.iter().any(|(k, v)| k == "class" && v.contains(class)))
            .count()
    };
    assert_eq!(count("section", "round"), 3);
    assert_eq!(count("div", "call"), 4);
    assert_eq!(count("details", "result"), 4);
    assert_eq!(count("details", "error"), 2);
    // Errors are unfolded; results that went well are folded.
    let open = parsed
        .elements
        .iter()
        .filter(|(n, a)| n == "details" && a.iter().any(|(k, _)| k == "open"))
        .count();
    assert_eq!(open, 2);
    for text in [
        "Make the failing test pass.",
        "test t29 ... ok",
        "bash(rm -rf target) is not allowed",
        "The parser skipped a trailing comma.",
        "\\x1b]0;pwned\\x07",
    ] {
        assert!(parsed.text.contains(text), "{text} missing");
    }
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&page).unwrap().permissions());
    assert_eq!(
        mode & 0o777,
        0o600,
        "the page holds what the transcript holds"
    );
}
