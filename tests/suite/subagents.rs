//! Subagents (issue 34): the `task` tool runs a nested loop with a fresh context, its tools a
//! subset of the run's, its budget and deadline the run's. The mock answers the run and each
//! subagent by its own script: a subagent's request is told by its system prompt, which one by
//! the `SUB-…` mark its task's prompt carries.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Recorded, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, check_schema, parse_lines, run, types};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

pub(super) const SUBAGENT: &str = "You are a subagent";

/// Who a request is from: the run (`None`) or the subagent whose task carries `SUB-x`, and how
/// many answers of its own it holds (its round so far).
pub(super) fn who(request: &Recorded) -> (Option<String>, usize) {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let answered = messages.iter().filter(|m| m["role"] == "assistant").count();
    if !body["system"].to_string().contains(SUBAGENT) {
        return (None, answered);
    }
    let first = messages[0]["content"].to_string();
    let mark = first.split("SUB-").nth(1).map(|rest| {
        rest.chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect()
    });
    (mark, answered)
}

pub(super) fn tool(id: &str, name: &str, input: &str, tokens: u64) -> Reply {
    Reply::sse(sse::anthropic(
        &[B::Tool(id, name, input)],
        "tool_use",
        tokens,
        5,
    ))
}

pub(super) fn text(answer: &str, tokens: u64) -> Reply {
    Reply::sse(sse::anthropic(&[B::Text(answer)], "end_turn", tokens, 5))
}

pub(super) fn task(id: &str, mark: &str, agent: Option<&str>) -> (String, String, String) {
    let mut input = json!({"description": "look", "prompt": format!("SUB-{mark}: read notes.txt")});
    if let Some(agent) = agent {
        input["subagent_type"] = json!(agent);
    }
    (id.to_owned(), "task".to_owned(), input.to_string())
}

/// A run that delegates one task (`agent`) whose subagent calls `name(input)` once, then answers
/// with what it read; the run then answers with the subagent's answer.
pub(super) fn one_task(
    agent: Option<&'static str>,
    name: &'static str,
    input: &'static str,
) -> MockServer {
    MockServer::respond(move |request| match who(request) {
        (None, 0) => {
            let (id, n, i) = task("call_t", "a", agent);
            tool(&id, &n, &i, 100)
        }
        (None, _) => {
            let body = request.json().to_string();
            let said = if body.contains("notes say 42") {
                "42"
            } else {
                "no answer"
            };
            text(&format!("the subagent said {said}"), 200)
        }
        (Some(_), 0) => tool("call_1", name, input, 10),
        (Some(_), _) => {
            let body = request.json().to_string();
            if body.contains("forty-two") {
                text("the notes say 42", 20)
            } else {
                text("could not read them", 20)
            }
        }
    })
}

pub(super) fn delegating(sb: &Sandbox, server: &MockServer) -> std::process::Command {
    let mut cmd = sb.anthropic(server);
    cmd.args(["-o", "json", "-a", "task", "--transcript"])
        .arg(sb.transcript_path());
    cmd
}

pub(super) fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

#[test]
fn a_task_runs_a_subagent_whose_answer_is_the_result_and_whose_rounds_are_recorded() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    let server = one_task(None, "read_file", r#"{"path":"notes.txt"}"#);
    let out = run(delegating(&sb, &server).arg("what do the notes say?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    lines.iter().for_each(check_schema);
    assert_eq!(
        types(&lines),
        [
            "start",
            "agent_start",
            "agent_round",
            "agent_round",
            "agent_end",
            "round",
            "round",
            "end"
        ]
    );
    let start = of_type(&lines, "agent_start")[0];
    assert_eq!(
        (&start["call"], &start["agent"], &start["depth"]),
        (&json!("call_t"), &json!("general"), &json!(1))
    );
    assert!(
        start["prompt"]
            .as_str()
            .unwrap()
            .ends_with("SUB-a: read notes.txt")
    );
    assert!(start["system"].as_str().unwrap().contains(SUBAGENT));
    // The answer is the call's result, and the run's model read it.
    let round = of_type(&lines, "round")[0];
    assert_eq!(round["results"][0]["content"], "the notes say 42");
    assert_eq!(round["results"][0]["is_error"], false);
    let end = lines.last().unwrap();
    assert_eq!(end["final_text"], "the subagent said 42");
    // The fresh context: the subagent's first request holds its task alone, not the run's turn.
    let first_sub = server
        .requests()
        .into_iter()
        .find(|r| who(r).0.is_some())
        .unwrap()
        .json();
    assert_eq!(first_sub["messages"].as_array().unwrap().len(), 1);
    assert!(
        !first_sub["messages"]
            .to_string()
            .contains("what do the notes say")
    );
    // Usage rolls up: the run's 100 + 200 input tokens and the subagent's 10 + 20.
    assert_eq!(end["usage"]["input_tokens"], 330, "{end}");
    let agent_end = of_type(&lines, "agent_end")[0];
    assert_eq!(
        (
            &agent_end["status"],
            &agent_end["rounds"],
            &agent_end["usage"]["input_tokens"]
        ),
        (&json!("completed"), &json!(2), &json!(30))
    );
    // The subagent's tools are offered to it, without task (depth 1).
    let offered: Vec<String> = first_sub["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(offered, ["read_file", "list_dir", "glob", "grep"]);
}

#[test]
fn task_is_offered_only_to_a_rule_that_names_it() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![text("hi", 1), text("hi", 1), text("hi", 1)]);
    let names = |args: &[&str]| {
        let out = run(sb.anthropic(&server).args(args).arg("hi"));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let request = server.requests().last().unwrap().json();
        request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "task")
    };
    assert!(!names(&["-a", "all"]), "all does not reach task");
    assert!(names(&["-a", "task"]));
    assert!(names(&["-a", "task(general)"]));
}

#[test]
fn a_subagent_asking_for_a_tool_outside_its_subset_is_denied() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    sb.write(
        "agents.toml",
        "[agents.reader]\ndescription = \"reads one file\"\ntools = [\"read_file\"]\n",
    );
    // Outside the agent's own rules (list_dir is the run's, not the reader's).
    let server = one_task(Some("reader"), "list_dir", r#"{"path":"."}"#);
    let out = run(delegating(&sb, &server).args(["--agents", "agents.toml", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let sub = of_type(&lines, "agent_round")[0];
    let result = &sub["round"]["results"][0];
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(result["error_kind"], "unknown_tool", "{result}");
    // Outside the run's (bash is the reader's only if the run allows it: it does not).
    let sb = Sandbox::new();
    sb.write(
        "agents.toml",
        "[agents.reader]\ndescription = \"reads\"\ntools = [\"read_file\", \"bash\"]\n",
    );
    let server = one_task(Some("reader"), "bash", r#"{"command":"echo planted > p"}"#);
    let out = run(delegating(&sb, &server).args(["--agents", "agents.toml", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let result = &of_type(&lines, "agent_round")[0]["round"]["results"][0];
    assert_eq!(result["is_error"], true, "{result}");
    assert!(!sb.path("ws/p").exists());
    // The control: the run allows bash, so the same call of the same agent runs.
    let sb = Sandbox::new();
    sb.write(
        "agents.toml",
        "[agents.reader]\ndescription = \"reads\"\ntools = [\"read_file\", \"bash\"]\n",
    );
    let server = one_task(Some("reader"), "bash", r#"{"command":"echo planted > p"}"#);
    let out = run(delegating(&sb, &server).args([
        "--agents",
        "agents.toml",
        "-a",
        "bash",
        "--sandbox",
        "off",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(sb.path("ws/p").exists(), "the control must plant the file");
}

#[test]
fn three_read_only_subagents_run_side_by_side_and_results_keep_their_order() {
    let sb = Sandbox::new();
    let arrivals: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let seen = arrivals.clone();
    let server = MockServer::respond(move |request| match who(request) {
        (None, 0) => Reply::sse(sse::anthropic(
            &[
                B::Tool("t1", "task", &task("t1", "x", None).2),
                B::Tool("t2", "task", &task("t2", "y", None).2),
                B::Tool("t3", "task", &task("t3", "z", None).2),
            ],
            "tool_use",
            100,
            5,
        )),
        (None, _) => text("all three answered", 100),
        (Some(mark), _) => {
            seen.lock().unwrap().push((mark.clone(), Instant::now()));
            let mut reply = text(&format!("answer {mark}"), 10);
            reply
                .body
                .insert(0, Step::Sleep(Duration::from_millis(500)));
            reply
        }
    });
    let out = run(delegating(&sb, &server).arg("three at once"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let arrivals = arrivals.lock().unwrap();
    assert_eq!(arrivals.len(), 3);
    let first = arrivals.iter().map(|a| a.1).min().unwrap();
    let last = arrivals.iter().map(|a| a.1).max().unwrap();
    // One after another, the third would arrive a full reply (500 ms) after the first.
    assert!(
        last - first < Duration::from_millis(400),
        "the subagents did not overlap: {:?}",
        last - first
    );
    let lines = sb.transcript();
    let results: Vec<&Value> = of_type(&lines, "round")[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let contents: Vec<&str> = results
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["answer x", "answer y", "answer z"]);
}

#[test]
fn a_subagent_that_exhausts_the_shared_budget_ends_the_run_with_budget() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    // The subagent's first round uses 5,000 tokens of the run's 6,000: its next request would
    // go past what is left.
    let server = MockServer::respond(move |request| match who(request) {
        (None, 0) => {
            let (id, n, i) = task("call_t", "a", None);
            tool(&id, &n, &i, 100)
        }
        (None, _) => text("should not be asked", 10),
        (Some(_), _) => tool("c1", "read_file", r#"{"path":"notes.txt"}"#, 5000),
    });
    let out = run(delegating(&sb, &server).args(["--budget-tokens", "6000", "go"]));
    assert_eq!(out.code, 4, "{}", out.stderr);
    let lines = sb.transcript();
    let end = lines.last().unwrap();
    assert_eq!(end["status"], "budget", "{end}");
    assert!(
        end["usage"]["input_tokens"].as_u64().unwrap() >= 5100,
        "{end}"
    );
    assert_eq!(of_type(&lines, "agent_end")[0]["status"], "budget");
    // The run's model was not asked again after the subagent spent the budget.
    let asked_run = server
        .requests()
        .iter()
        .filter(|r| who(r).0.is_none())
        .count();
    assert_eq!(asked_run, 1);
}

#[test]
fn a_subagent_at_its_round_limit_is_an_error_result_the_run_goes_on_from() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    sb.write(
        "agents.toml",
        "[agents.brief]\ndescription = \"one round only\"\nmax-rounds = 1\n",
    );
    let server = MockServer::respond(move |request| match who(request) {
        (None, 0) => {
            let (id, n, i) = task("call_t", "a", Some("brief"));
            tool(&id, &n, &i, 100)
        }
        (None, _) => text("went on", 10),
        // Its last call (summarize) is made without tools: it answers from what it has.
        (Some(_), 0) => tool("c1", "read_file", r#"{"path":"notes.txt"}"#, 10),
        (Some(_), _) => text("partial: forty", 10),
    });
    let out = run(delegating(&sb, &server).args(["--agents", "agents.toml", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let result = &of_type(&lines, "round")[0]["results"][0];
    assert_eq!(result["is_error"], true);
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("round limit (1)") && content.contains("partial: forty"),
        "{content}"
    );
    assert_eq!(of_type(&lines, "agent_end")[0]["status"], "max_rounds");
    assert_eq!(lines.last().unwrap()["status"], "completed");
}

#[test]
fn stream_json_events_say_which_agent_they_belong_to() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    let server = one_task(None, "read_file", r#"{"path":"notes.txt"}"#);
    let out = run(sb.anthropic(&server).args([
        "-o",
        "stream-json",
        "-a",
        "task",
        "--no-transcript",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = parse_lines(&out.stdout);
    events.iter().for_each(check_schema);
    let sub_calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_use" && e["name"] == "read_file")
        .collect();
    assert_eq!(sub_calls.len(), 1);
    assert_eq!(
        sub_calls[0]["agent"],
        json!({"call": "call_t", "agent": "general", "depth": 1})
    );
    let run_call = events
        .iter()
        .find(|e| e["type"] == "tool_use" && e["name"] == "task")
        .unwrap();
    assert!(run_call.get("agent").is_none());
    for kind in ["agent_start", "agent_round", "agent_end"] {
        assert!(events.iter().any(|e| e["type"] == kind), "{kind}");
    }
}

#[test]
fn resume_after_a_subagent_goes_on_from_the_runs_conversation_only() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    let server = one_task(None, "read_file", r#"{"path":"notes.txt"}"#);
    let out = run(delegating(&sb, &server).arg("first"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let resumed = MockServer::start(vec![text("still 42", 10)]);
    let out = run(sb
        .anthropic(&resumed)
        .args(["-o", "json", "--no-transcript", "--resume"])
        .arg(sb.transcript_path())
        .arg("and now?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request = resumed.requests()[0].json();
    let messages = request["messages"].as_array().unwrap();
    // The run's turn, its task call, the result, its answer, and the new turn: no subagent's.
    assert_eq!(messages.len(), 5, "{request}");
    assert!(!request["messages"].to_string().contains(SUBAGENT));
    assert!(request["messages"].to_string().contains("the notes say 42"));
}

#[test]
fn sigterm_mid_subagent_stops_everything_and_leaves_a_whole_transcript() {
    use std::io::Read;
    let sb = Sandbox::new();
    let server = MockServer::respond(move |request| match who(request) {
        (None, 0) => {
            let (id, n, i) = task("call_t", "a", None);
            tool(&id, &n, &i, 10)
        }
        (None, _) => text("late", 10),
        (Some(_), _) => tool(
            "c1",
            "bash",
            r#"{"command":"echo $$ > pid; exec sleep 60"}"#,
            10,
        ),
    });
    let mut child = delegating(&sb, &server)
        .args(["-a", "bash", "go"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = sb.ws().join("pid");
    let waited = Instant::now();
    let pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the subagent's tool never ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let stopped = Instant::now();
    let code = child.wait().unwrap().code();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopped.elapsed()
    );
    let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    });
    assert!(!alive, "the subagent's tool survived");
    let lines = sb.transcript();
    lines.iter().for_each(check_schema);
    assert_eq!(lines.last().unwrap()["status"], "interrupted");
    assert_eq!(of_type(&lines, "agent_end")[0]["status"], "interrupted");
}

#[test]
fn show_nests_each_subagent_under_its_call_and_tools_lists_the_agents() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    sb.write(
        "agents.toml",
        "[agents.reader]\ndescription = \"Reads one file. Then answers.\"\ntools = [\"read_file\"]\n",
    );
    let server = one_task(Some("reader"), "read_file", r#"{"path":"notes.txt"}"#);
    let out = run(delegating(&sb, &server).args(["--agents", "agents.toml", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = run(sb.rounds().arg("show").arg(sb.transcript_path()));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let text = &shown.stdout;
    let (call, start, inner, end) = (
        text.find("→ task").unwrap(),
        text.find("┌ subagent reader").unwrap(),
        text.find("│   → read_file").unwrap(),
        text.find("└ completed · 2 rounds").unwrap(),
    );
    assert!(call < start && start < inner && inner < end, "{text}");
    let html = run(sb
        .rounds()
        .args(["show", "--html", "-"])
        .arg(sb.transcript_path()));
    assert_eq!(html.code, 0, "{}", html.stderr);
    let page = &html.stdout;
    let nested = page.find("<details class=\"subagent\"").unwrap();
    assert!(page[nested..].contains("read_file"), "{page}");
    // Its rounds are numbered from 1 as the run's are, under ids of their own.
    assert_eq!(page.matches("id=\"round-1\"").count(), 1, "{page}");
    assert!(page.contains("id=\"agent-call_t-round-1\""), "{page}");
    let tools = run(sb
        .rounds()
        .args(["tools", "--agents", "agents.toml", "-a", "task"]));
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert!(
        tools.stdout.contains("reader (Reads one file)"),
        "{}",
        tools.stdout
    );
    let listed = run(sb
        .rounds()
        .args(["tools", "-o", "json", "--agents", "agents.toml"]));
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    let task = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "task")
        .unwrap();
    assert_eq!(
        task["input_schema"]["properties"]["subagent_type"]["enum"],
        json!(["general", "reader"])
    );
}

#[test]
fn the_deadline_mid_subagent_ends_the_run_with_timeout_and_the_subagent_with_it() {
    let sb = Sandbox::new();
    let server = MockServer::respond(move |request| match who(request) {
        (None, 0) => {
            let (id, n, i) = task("call_t", "a", None);
            tool(&id, &n, &i, 10)
        }
        (None, _) => text("late", 10),
        (Some(_), _) => tool("c1", "bash", r#"{"command":"sleep 30"}"#, 10),
    });
    let started = Instant::now();
    let out = run(delegating(&sb, &server).args(["-a", "bash", "--timeout", "2", "go"]));
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let lines = sb.transcript();
    assert_eq!(lines.last().unwrap()["status"], "timeout");
    assert_eq!(of_type(&lines, "agent_end")[0]["status"], "timeout");
    let result = &of_type(&lines, "round")[0]["results"][0];
    assert_eq!(result["error_kind"], "cancelled", "{result}");
}

#[test]
fn a_stores_export_puts_each_subagent_line_back_where_the_transcript_had_it() {
    let Some(base) = crate::common::pg::server() else {
        return;
    };
    let schema = crate::common::pg::Schema::new(base);
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    let server = one_task(None, "read_file", r#"{"path":"notes.txt"}"#);
    let out = run(delegating(&sb, &server).args(["--store", &schema.url, "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let id = lines[0]["run_id"].as_str().unwrap();
    let exported = run(sb.rounds().args(["export", "--store", &schema.url, id]));
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert_eq!(parse_lines(&exported.stdout), lines);
}

#[test]
fn a_run_with_a_subagent_replays_each_agent_its_own_rounds() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "forty-two\n");
    let server = one_task(None, "read_file", r#"{"path":"notes.txt"}"#);
    let out = run(delegating(&sb, &server).arg("what do the notes say?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let recorded = sb.path("recorded.jsonl");
    std::fs::copy(sb.transcript_path(), &recorded).unwrap();
    let replay = format!("replay:{}", recorded.display());
    let out = run(sb
        .rounds()
        .args(["-o", "json", "-a", "task", "-m", &replay, "--transcript"])
        .arg(sb.path("replayed.jsonl")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let replayed = crate::common::read_jsonl(&sb.path("replayed.jsonl"));
    assert_eq!(types(&replayed), types(&sb.transcript()));
    let result = &of_type(&replayed, "round")[0]["results"][0];
    assert_eq!(result["content"], "the notes say 42");
    assert_eq!(
        replayed.last().unwrap()["final_text"],
        "the subagent said 42"
    );
}

#[test]
fn a_subagents_cut_output_is_saved_under_its_call_not_over_the_runs() {
    let sb = Sandbox::new();
    // The run and the subagent both number their calls `call_1`.
    let server = MockServer::respond(move |request| match who(request) {
        (None, 0) => Reply::sse(sse::anthropic(
            &[
                B::Tool("call_1", "bash", r#"{"command":"seq 1 20000"}"#),
                B::Tool("call_t", "task", &task("call_t", "a", None).2),
            ],
            "tool_use",
            10,
            5,
        )),
        (None, _) => text("done", 10),
        (Some(_), 0) => tool("call_1", "bash", r#"{"command":"seq 30001 50000"}"#, 10),
        (Some(_), _) => text("counted", 10),
    });
    let out =
        run(delegating(&sb, &server).args(["-a", "bash", "--max-result-bytes", "2000", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let own = &of_type(&lines, "round")[0]["results"][0];
    let sub = &of_type(&lines, "agent_round")[0]["round"]["results"][0];
    let (own, sub) = (
        own["full_output"].as_str().unwrap(),
        sub["full_output"].as_str().unwrap(),
    );
    assert_ne!(own, sub);
    assert!(sub.contains("call_t_call_1"), "{sub}");
    let (own, sub) = (
        std::fs::read_to_string(own).unwrap(),
        std::fs::read_to_string(sub).unwrap(),
    );
    assert!(
        own.contains("\n19999\n") && !own.contains("30001"),
        "{}",
        &own[..200]
    );
    assert!(
        sub.contains("\n30001\n") && !sub.contains("\n19999\n"),
        "{}",
        &sub[..200]
    );
}
