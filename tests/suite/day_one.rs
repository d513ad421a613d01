//! What a new user meets in the first ten minutes (issue 23, item 6): the answer streams to a
//! terminal as it is written and is shown once, while a pipe still gets the final text only;
//! a deadline mid-answer keeps the text so far; `show --html -` writes stdout and the page puts
//! the outcome first; messages and help lines say in words what to do. Terminals are
//! pseudo-terminals from util-linux `script`, as in `terminal.rs`.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, parse_lines, run};

const FIRST: &str = "Streaming works: the first half";
const SECOND: &str = " and the second half.";

const LOOKING: &str = "Let me look at a.txt first.";

/// A round that says what it is about to do and reads a file, then the answer, whose stream
/// holds after its first text delta until `flag` exists; thinking before it, never shown.
fn held_answer(flag: &Path) -> MockServer {
    let looking = Reply::sse(sse::anthropic(
        &[
            B::Text(LOOKING),
            B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#),
        ],
        "tool_use",
        1,
        1,
    ));
    let text = format!("{FIRST}{SECOND}");
    let events = sse::anthropic(
        &[B::Thinking("private reasoning", "sig"), B::Text(&text)],
        "end_turn",
        1,
        1,
    );
    let mut reply = Reply::sse(events);
    // 0 message_start, 1-4 thinking, 5 content_block_start, 6 the first half of the text.
    let at = reply
        .body
        .iter()
        .position(
            |s| matches!(s, Step::Bytes(b) if String::from_utf8_lossy(b).contains("text_delta")),
        )
        .expect("a text delta");
    reply.body.insert(
        at + 1,
        Step::WaitFor(flag.to_owned(), Duration::from_secs(20)),
    );
    MockServer::start(vec![looking, reply])
}

fn has_script() -> bool {
    let ok = Command::new("script").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipped: no util-linux script to make a pseudo-terminal");
    }
    ok
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `rounds ARGS` on a pseudo-terminal (stdout and stderr both), its output read as it comes.
fn on_terminal(sb: &Sandbox, server: &MockServer, args: &[&str]) -> (Child, Arc<Mutex<Vec<u8>>>) {
    let mut words = vec![env!("CARGO_BIN_EXE_rounds").to_owned()];
    words.extend(args.iter().map(|a| a.to_string()));
    let command: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
    let mut child = Command::new("script")
        .args(["-qfec", &command.join(" "), "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", sb.path("home"))
        .env("ROUNDS_HOME", sb.path("state"))
        .env("TERM", "xterm")
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.url())
        .current_dir(sb.ws())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut stdout = child.stdout.take().expect("stdout");
    let sink = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    (child, seen)
}

fn text_of(seen: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&seen.lock().unwrap()).into_owned()
}

/// Waits up to `limit` for `what` in the output.
fn wait_for(seen: &Mutex<Vec<u8>>, what: &str, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if text_of(seen).contains(what) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn wait_exit(child: &mut Child, limit: Duration) -> i32 {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_terminal_sees_the_answer_while_it_is_written_and_only_once() {
    if !has_script() {
        return;
    }
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let flag = sb.path("go-on");
    let server = held_answer(&flag);
    let (mut child, seen) = on_terminal(&sb, &server, &["--no-transcript", "go"]);
    // The first delta is on the screen while the model is still holding the rest back.
    let early = wait_for(&seen, "Streaming works", Duration::from_secs(15));
    let still_running = child.try_wait().unwrap().is_none();
    let then = text_of(&seen);
    std::fs::write(&flag, "").unwrap();
    assert!(early, "the text did not stream: {:?}", text_of(&seen));
    assert!(still_running, "the run had ended already");
    assert!(
        !then.contains("second half"),
        "the rest was not held back: {then:?}"
    );
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 0);
    std::thread::sleep(Duration::from_millis(100));
    let shown = text_of(&seen);
    let answer = format!("{FIRST}{SECOND}");
    assert_eq!(shown.matches(&answer).count(), 1, "{shown:?}");
    assert_eq!(shown.matches(FIRST).count(), 1, "printed twice: {shown:?}");
    assert!(
        !shown.contains("private reasoning"),
        "thinking shown: {shown:?}"
    );
    // The first round's words were shown as they came too, once, before the answer.
    assert_eq!(shown.matches(LOOKING).count(), 1, "{shown:?}");
    assert!(shown.find(LOOKING) < shown.find(FIRST));
}

#[test]
fn a_pipe_gets_the_final_answer_only_and_only_at_the_end() {
    // The control for the terminal: the same held stream into a pipe shows nothing until the
    // answer is complete, then exactly the answer.
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let flag = sb.path("go-on");
    let server = held_answer(&flag);
    let mut child = sb
        .anthropic(&server)
        .args(["--no-transcript", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let early = wait_for(&seen, "Streaming works", Duration::from_secs(2));
    std::fs::write(&flag, "").unwrap();
    assert!(!early, "a pipe got text before the end");
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 0);
    reader.join().unwrap();
    assert_eq!(text_of(&seen), format!("{FIRST}{SECOND}\n"));
}

/// A reply that writes `text` and then stalls for longer than any test waits.
fn stalls_after(text: &str) -> MockServer {
    let mut events = sse::anthropic(&[B::Text(text)], "end_turn", 1, 1);
    // Up to the last text delta: the block never ends.
    let last = events
        .iter()
        .rposition(|e| e.contains("text_delta"))
        .unwrap();
    events.truncate(last + 1);
    let mut reply = Reply::sse(events);
    reply.body.push(Step::Sleep(Duration::from_secs(60)));
    MockServer::start(vec![reply])
}

#[test]
fn a_deadline_mid_answer_keeps_the_text_so_far_as_the_partial_answer() {
    let text = "The cause is the off-by-one in parse";
    let sb = Sandbox::new();
    let server = stalls_after(text);
    let out = run(sb
        .anthropic(&server)
        .args(["--timeout", "1", "-o", "json", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 5, "{}", out.stderr);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["status"], "timeout");
    assert_eq!(json["final_text"], text);
    let lines = sb.transcript();
    let end = lines.last().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["final_text"].as_str()),
        (Some("timeout"), Some(text))
    );
    // The round it was cut from is recorded, saying so.
    let round = &lines[1];
    assert_eq!(round["type"], "round");
    assert_eq!(round["blocks"][0]["text"], text);
    assert!(
        round["error"].as_str().unwrap().contains("cut off"),
        "{round}"
    );

    // -o text into a pipe: the partial answer is the product.
    let server = stalls_after(text);
    let out = run(sb
        .anthropic(&server)
        .args(["--timeout", "1", "--no-transcript", "go"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (5, format!("{text}\n").as_str())
    );

    // stream-json tells the same in its end event.
    let server = stalls_after(text);
    let out = run(sb.anthropic(&server).args([
        "--timeout",
        "1",
        "--no-transcript",
        "-o",
        "stream-json",
        "go",
    ]));
    let events = parse_lines(&out.stdout);
    let end = events.last().unwrap();
    assert_eq!(
        (end["type"].as_str(), end["final_text"].as_str()),
        (Some("end"), Some(text))
    );
}

/// The elements of an HTML document, by tag name, and its text.
fn elements(html: &str) -> (Vec<String>, String) {
    use html5ever::tendril::TendrilSink;
    use markup5ever_rcdom::{Handle, NodeData, RcDom};
    fn walk(node: &Handle, names: &mut Vec<String>, text: &mut String) {
        match &node.data {
            NodeData::Element { name, .. } => names.push(name.local.to_string()),
            NodeData::Text { contents } => text.push_str(&contents.borrow()),
            _ => {}
        }
        for child in node.children.borrow().iter() {
            walk(child, names, text);
        }
    }
    let dom = html5ever::parse_document(RcDom::default(), Default::default()).one(html);
    let (mut names, mut text) = (Vec::new(), String::new());
    walk(&dom.document, &mut names, &mut text);
    (names, text)
}

#[test]
fn show_html_dash_writes_stdout_with_the_outcome_first_and_the_answer_once() {
    let answer = "## Fixed\n\nSee <img src=x onerror=alert(1)> and **bold**.";
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            1,
            1,
        )),
        sse::answer(answer),
    ]);
    let out = run(sb
        .anthropic(&server)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(sb
        .rounds()
        .arg("show")
        .arg(sb.transcript_path())
        .args(["--html", "-"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!sb.ws().join("-").exists(), "a file named - was written");
    let html = out.stdout;
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    // The outcome comes before the prompt and the rounds.
    let outcome = html.find("class=\"outcome\"").expect("an outcome section");
    let first_round = html.find("class=\"round\"").expect("a round");
    assert!(outcome < first_round);
    let (names, text) = elements(&html);
    // The answer once, as text: the model's markup is never markup.
    assert_eq!(text.matches("onerror=alert(1)").count(), 1, "{text}");
    assert_eq!(text.matches("**bold**").count(), 1, "{text}");
    assert!(!names.iter().any(|n| n == "img"), "{names:?}");
    // CONTROL: the same answer as raw HTML would have made an element.
    assert!(elements(answer).0.iter().any(|n| n == "img"));
    // A dark mode that follows the reader's setting.
    assert!(html.contains("@media (prefers-color-scheme:dark)"));
    assert!(html.contains("content=\"light dark\""));
}

#[test]
fn batch_out_naming_a_file_says_what_to_do() {
    let sb = Sandbox::new();
    let jobs = sb.path("jobs.jsonl");
    std::fs::write(&jobs, "{\"id\":\"a\",\"prompt\":\"hi\"}\n").unwrap();
    std::fs::write(sb.path("results"), "not a directory\n").unwrap();
    let server = MockServer::start(vec![sse::answer("hi")]);
    let out = run(sb
        .anthropic(&server)
        .arg("batch")
        .arg(&jobs)
        .arg("--out")
        .arg(sb.path("results")));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("results is a file, not a directory"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("name another directory"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("File exists"), "{}", out.stderr);
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn short_help_lines_end_in_words_and_the_pre_hook_help_says_it_vetoes() {
    let sb = Sandbox::new();
    let short = run(sb.rounds().arg("-h")).stdout;
    // Each flag's entry: its first line and the indented lines that continue it.
    let mut entries: Vec<String> = Vec::new();
    for line in short.lines() {
        if line.trim_start().starts_with('-') {
            entries.push(line.trim().to_owned());
        } else if line.starts_with(' ')
            && let Some(last) = entries.last_mut()
        {
            last.push(' ');
            last.push_str(line.trim());
        }
    }
    for flag in ["--allow <", "--mcp <", "--config <", "--pre-tool-hook <"] {
        let entry = entries.iter().find(|e| e.contains(flag)).unwrap();
        // The words before "[default…]" / "[possible values…]" end in a full stop, not ":".
        let words = entry.split(" [").next().unwrap().trim_end();
        assert!(!words.ends_with(':'), "{entry}");
    }
    let long = run(sb.rounds().arg("--help")).stdout;
    let at = long.find("--pre-tool-hook").unwrap();
    let hook = &long[at..at + 700];
    assert!(!hook.contains("warning"), "{hook}");
    assert!(hook.contains("vetoes the call too"), "{hook}");
}

#[test]
fn the_batch_bar_gives_no_eta_before_a_job_has_finished() {
    if !has_script() {
        return;
    }
    let sb = Sandbox::new();
    let jobs = sb.path("jobs.jsonl");
    let lines: String = (0..3)
        .map(|i| format!("{{\"id\":\"job-{i}\",\"prompt\":\"Do job-{i}.\"}}\n"))
        .collect();
    std::fs::write(&jobs, lines).unwrap();
    // Each job takes a second, so the bar is drawn before any has finished and after.
    let slow = || {
        let mut reply = sse::answer("done");
        reply
            .body
            .insert(0, Step::Sleep(Duration::from_millis(1200)));
        reply
    };
    let server = MockServer::start(vec![slow(), slow(), slow()]);
    let jobs = jobs.display().to_string();
    let out = sb.path("out").display().to_string();
    let (mut child, seen) = on_terminal(
        &sb,
        &server,
        &["batch", &jobs, "--out", &out, "--jobs", "1"],
    );
    assert_eq!(
        wait_exit(&mut child, Duration::from_secs(30)),
        0,
        "{}",
        text_of(&seen)
    );
    std::thread::sleep(Duration::from_millis(100));
    let shown = text_of(&seen);
    // Each drawing of the bar, up to the next control sequence or line end.
    let draws: Vec<&str> = shown
        .split(['\r', '\n', '\x1b'])
        .filter(|d| d.contains("/3 done"))
        .collect();
    let before: Vec<&&str> = draws.iter().filter(|d| d.contains("0/3 done")).collect();
    assert!(
        !before.is_empty(),
        "no bar before the first job ended: {shown:?}"
    );
    assert!(before.iter().all(|d| !d.contains("ETA")), "{before:?}");
    // CONTROL: once a job has finished, the estimate is there.
    assert!(
        draws
            .iter()
            .any(|d| (d.contains("1/3 done") || d.contains("2/3 done")) && d.contains("ETA")),
        "{draws:?}"
    );
}
