//! What each README and `--help` command is checked for (tests/suite/readme.rs runs them): the
//! scripted model a kind of command meets, the files it needs, and the effect its words promise.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::readme::{shell, turn_of};
use crate::common::mock::{MockServer, Recorded, Reply};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, parse_lines, read_jsonl};

/// What a command promises.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A completion script written where the shell finds it.
    Completions,
    /// The man page written where `man` finds it.
    Man,
    /// The recorded demo replayed with its tools run for real: the answer on stdout.
    Replay,
    /// A question: the model reads, answers on stdout, and may not write (the model named).
    Ask(&'static str),
    /// `git diff | rounds …`: the diff reaches the model as context (the model named).
    Review(&'static str),
    /// `--edit`: a file in the workspace is edited.
    Edit,
    /// `--edit -a 'bash(cargo *)'`: a file edited, cargo run, any other command denied.
    EditAndCargo,
    /// `--full-auto`: a file written and a command run, in the sandbox, with no network.
    FullAuto,
    /// A local model (ollama), `-o json` piped to jq: the answer's text.
    LocalJson,
    /// `-o stream-json | jq select(tool_use)`: one line per call, nothing else.
    StreamJson,
    /// `--output-schema … | jq .final_json`: the answer as JSON.
    Schema,
    /// `--max-rounds 3`: a model that wants more ends with exit 3.
    MaxRounds,
    /// `--resume last`: the newest run here goes on.
    Resume,
    /// `rounds tools …`: these tools listed as offered.
    Tools(&'static [&'static str]),
    /// `rounds runs`: the run kept here is listed.
    Runs,
    /// `rounds show last`: the newest run shown.
    Show,
    /// Both.
    RunsAndShow,
    /// `rounds batch jobs.jsonl --out results/`: every job completes.
    Batch,
    /// `rounds doctor`: every check the run needs passes (key found, endpoint reachable) and
    /// the key's value is never shown.
    Doctor,
    /// `rounds models`: the providers and the built-in aliases, with what they name.
    Models,
    /// `--edit --check 'cargo test --quiet'`: the model stops with the test failing, reads the
    /// check's output, fixes the code, and the run ends when the check passes.
    Check,
}

/// A turn of the scripted model: the calls of one response, or its answer.
enum Turn {
    Calls(Vec<(&'static str, Value)>),
    Answer(&'static str),
}

const ANSWER: &str = "The answer, from the files.";
const FIRST: &str = "one, two";

fn turns(kind: &Kind) -> Vec<Turn> {
    let call = |name, input| Turn::Calls(vec![(name, input)]);
    let edit = json!({"path": "README.md", "old_string": "Teh", "new_string": "The"});
    match kind {
        Kind::Ask(_) => vec![
            call("grep", json!({"pattern": "CRLF"})),
            Turn::Answer(ANSWER),
        ],
        Kind::Edit => vec![call("edit_file", edit), Turn::Answer(ANSWER)],
        Kind::EditAndCargo => vec![
            Turn::Calls(vec![
                ("edit_file", edit),
                ("bash", json!({"command": "cargo --version"})),
                ("bash", json!({"command": "ls"})),
            ]),
            Turn::Answer(ANSWER),
        ],
        Kind::Check => vec![
            Turn::Answer(FIRST),
            call(
                "edit_file",
                json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
            ),
            Turn::Answer(ANSWER),
        ],
        Kind::FullAuto => vec![
            call(
                "write_file",
                json!({"path": "tests/parse.sh", "content": "echo parse-ok\n"}),
            ),
            call(
                "bash",
                json!({"command": "sh tests/parse.sh > ran.txt; touch ../outside"}),
            ),
            Turn::Answer(ANSWER),
        ],
        Kind::LocalJson => vec![
            call("grep", json!({"pattern": "TODO"})),
            Turn::Answer(ANSWER),
        ],
        Kind::StreamJson => vec![
            call("list_dir", json!({"path": "src"})),
            Turn::Answer(ANSWER),
        ],
        Kind::Schema => vec![Turn::Answer("{\"tests\": 3}")],
        Kind::MaxRounds => (0..6)
            .map(|i| call("grep", json!({"pattern": format!("fn unused_{i}")})))
            .collect(),
        Kind::Review(_) | Kind::Batch => vec![Turn::Answer(ANSWER)],
        // A run before the command (see `setup`), then the command's own.
        Kind::Resume | Kind::Runs | Kind::Show | Kind::RunsAndShow => {
            vec![Turn::Answer(FIRST), Turn::Answer(ANSWER)]
        }
        Kind::Completions
        | Kind::Man
        | Kind::Replay
        | Kind::Tools(_)
        | Kind::Doctor
        | Kind::Models => vec![],
    }
}

/// The scripted model for `kind`, speaking the wire of whichever API a request comes to.
pub(crate) fn model(kind: &Kind) -> MockServer {
    if matches!(kind, Kind::Doctor | Kind::Models) {
        // Not a model: doctor's GET of each endpoint wants an answer, any answer.
        return MockServer::respond(|_: &Recorded| Reply::error(404, "{}"));
    }
    let turns = turns(kind);
    MockServer::respond(move |request: &Recorded| {
        let at = turn_of(request);
        let Some(turn) = turns.get(at).or(turns.last()) else {
            return Reply::error(500, r#"{"error":{"message":"no model in this case"}}"#);
        };
        let openai = request.path.contains("chat/completions");
        match turn {
            Turn::Answer(text) if openai => Reply::sse(sse::openai(&[B::Text(text)], "stop", 1, 1)),
            Turn::Answer(text) => sse::answer(text),
            Turn::Calls(calls) => {
                let calls: Vec<(String, &str, String)> = calls
                    .iter()
                    .enumerate()
                    .map(|(i, (name, input))| (format!("call_{at}_{i}"), *name, input.to_string()))
                    .collect();
                let blocks: Vec<B> = calls.iter().map(|(id, n, i)| B::Tool(id, n, i)).collect();
                match openai {
                    true => Reply::sse(sse::openai(&blocks, "tool_calls", 10, 5)),
                    false => Reply::sse(sse::anthropic(&blocks, "tool_use", 10, 5)),
                }
            }
        }
    })
}

/// Prepares what `command` expects to find (a project, a change, a previous run) and returns
/// the directory to run it in.
pub(crate) fn setup(kind: &Kind, sb: &Sandbox, server: &MockServer, command: &str) -> PathBuf {
    let ws = sb.ws();
    sb.write("README.md", "# Demo\n\nTeh quick brown fox.\n");
    sb.write("src/sse.rs", "// Splits events on CRLF and LF alike.\n");
    sb.write("src/lib.rs", "// TODO: parse_line\nfn parse_line() {}\n");
    // Where a person's shell keeps completions and man pages: the directories exist.
    for target in command.split("> ").skip(1) {
        let path = target.split_whitespace().next().unwrap_or("");
        if let Some(rel) = path.strip_prefix("~/") {
            std::fs::create_dir_all(sb.path("home").join(rel).parent().unwrap()).unwrap();
        }
    }
    match kind {
        Kind::Replay => return PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        Kind::Review(_) => {
            let git = |args: &[&str]| shell(sb, server, &ws, &format!("git {}", args.join(" ")));
            git(&["init", "-q"]);
            git(&["-c", "user.email=a@b", "-c", "user.name=a", "add", "README.md"]);
            git(&["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "first"]);
            sb.write("README.md", "# Demo\n\nA changed line.\n");
        }
        Kind::LocalJson => {
            // The person's ollama: here, the mock at the URL a settings file names.
            let config = sb.path("home/.config/rounds");
            std::fs::create_dir_all(&config).unwrap();
            let url = format!("base-url = \"{}/v1\"\n", server.url());
            std::fs::write(config.join("config.toml"), url).unwrap();
        }
        Kind::Schema => {
            let schema = json!({"type": "object", "required": ["tests"],
                "properties": {"tests": {"type": "integer"}}});
            sb.write("answer.schema.json", &schema.to_string());
        }
        Kind::Check => {
            sb.write(
                "Cargo.toml",
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            );
            sb.write(
                "src/lib.rs",
                "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n#[test]\nfn adds() {\n    \
                 assert_eq!(add(2, 2), 4);\n}\n",
            );
        }
        Kind::Batch => sb.write(
            "jobs.jsonl",
            "{\"id\": \"one\", \"prompt\": \"Say one\"}\n{\"id\": \"two\", \"prompt\": \"Say two\"}\n",
        ),
        Kind::Resume | Kind::Runs | Kind::Show | Kind::RunsAndShow => {
            let before = shell(sb, server, &ws, "rounds 'Name two things'");
            assert_eq!(before.code, 0, "the run before: {}", before.stderr);
        }
        _ => {}
    }
    ws
}

/// The transcripts kept under `$ROUNDS_HOME/runs`, oldest first.
fn transcripts(sb: &Sandbox) -> Vec<Vec<Value>> {
    let mut files: Vec<PathBuf> = Vec::new();
    let Ok(days) = std::fs::read_dir(sb.path("state/runs")) else {
        return vec![];
    };
    for day in days.flatten() {
        for f in std::fs::read_dir(day.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                files.push(f.path());
            }
        }
    }
    files.sort();
    files.iter().map(|f| read_jsonl(f)).collect()
}

/// Every tool result of the newest run, as (tool, is_error, content).
fn results(sb: &Sandbox) -> Vec<(String, bool, String)> {
    let runs = transcripts(sb);
    let last = runs.last().expect("a transcript");
    last.iter()
        .filter(|l| l["type"] == "round")
        .flat_map(|l| l["results"].as_array().cloned().unwrap_or_default())
        .map(|r| {
            let name = r["name"].as_str().unwrap_or("").to_owned();
            (name, r["is_error"] == true, r["content"].to_string())
        })
        .collect()
}

fn ok(out: &Run) {
    assert_eq!(
        out.code, 0,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_default()
}

fn request_text(server: &MockServer) -> String {
    let requests = server.requests();
    requests
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect()
}

/// Checks the effect `kind` promises.
pub(crate) fn check(kind: &Kind, sb: &Sandbox, server: &MockServer, out: &Run) {
    match kind {
        Kind::Completions | Kind::Man | Kind::Replay => check_installed(kind, sb, out),
        Kind::Ask(model) => check_ask(model, sb, server, out),
        Kind::Review(model) => {
            ok(out);
            assert_eq!(out.stdout.trim(), ANSWER);
            let body = request_text(server);
            assert!(
                body.contains("+A changed line."),
                "the diff is not in the request"
            );
            assert!(body.contains(&format!("\"model\":\"{model}\"")), "{body}");
        }
        Kind::Edit => {
            ok(out);
            assert_eq!(
                read(&sb.ws(), "README.md"),
                "# Demo\n\nThe quick brown fox.\n"
            );
        }
        Kind::EditAndCargo => check_edit_and_cargo(sb, out),
        Kind::FullAuto => check_full_auto(sb, out),
        Kind::Check => {
            ok(out);
            assert!(read(&sb.ws(), "src/lib.rs").contains("a + b"));
            let requests = server.requests();
            assert_eq!(requests.len(), 3, "{}", out.stderr);
            let second = requests[1].json().to_string();
            assert!(
                second.contains("cargo test --quiet") && second.contains("exit code: 101"),
                "the failed check's output is not in the next request: {second}"
            );
        }
        Kind::LocalJson | Kind::StreamJson | Kind::Schema => check_piped(kind, server, out),
        Kind::MaxRounds => {
            assert_eq!(out.code, 3, "{}", out.stderr);
            assert_eq!(server.requests().len(), 3);
        }
        Kind::Resume => {
            ok(out);
            assert_eq!(out.stdout.trim(), ANSWER);
            let last = server.requests().last().unwrap().json().to_string();
            assert!(
                last.contains(FIRST) && last.contains("Now explain the second one"),
                "{last}"
            );
        }
        Kind::Tools(names) => {
            ok(out);
            for name in *names {
                let row = out
                    .stdout
                    .lines()
                    .find(|l| l.starts_with(&format!("{name} ")));
                let row = row.unwrap_or_else(|| panic!("{name} not listed: {}", out.stdout));
                assert!(!row.contains(" no "), "{name} is not offered: {row}");
            }
        }
        Kind::Runs | Kind::Show | Kind::RunsAndShow => check_runs_and_show(kind, out),
        Kind::Doctor => {
            ok(out);
            for word in ["key", "endpoint", "sandbox", "ANTHROPIC_API_KEY"] {
                assert!(
                    out.stdout.contains(word),
                    "doctor says nothing of {word}: {}",
                    out.stdout
                );
            }
            assert!(
                !server.requests().is_empty(),
                "doctor reached no endpoint: {}",
                out.stdout
            );
        }
        Kind::Models => {
            ok(out);
            for word in [
                "anthropic",
                "openai",
                "gemini",
                "sonnet",
                "claude-sonnet-4-5",
            ] {
                assert!(
                    out.stdout.contains(word),
                    "models lists no {word}: {}",
                    out.stdout
                );
            }
        }
        Kind::Batch => {
            ok(out);
            let text = read(&sb.ws(), "results/results.jsonl");
            let results: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(results.len(), 2, "{results:?}");
            assert!(
                results.iter().all(|r| r["status"] == "completed"),
                "{results:?}"
            );
        }
    }
}

/// Completions and the man page where the shell and `man` look; the demo replayed.
fn check_installed(kind: &Kind, sb: &Sandbox, out: &Run) {
    ok(out);
    let home = sb.path("home");
    match kind {
        Kind::Completions => {
            let script = read(&home, ".local/share/bash-completion/completions/rounds");
            assert!(
                script.contains("complete") && script.contains("--full-auto"),
                "{script}"
            );
        }
        Kind::Man => {
            let page = read(&home, ".local/share/man/man1/rounds.1");
            assert!(page.contains(".TH"), "{page}");
            assert!(
                page.contains("full\\-auto"),
                "the man page lists the presets"
            );
        }
        _ => assert!(out.stdout.contains("3 times"), "{}", out.stdout),
    }
}

/// What reaches the other end of a pipe: the answer's text, the tool calls, the answer's JSON.
fn check_piped(kind: &Kind, server: &MockServer, out: &Run) {
    ok(out);
    match kind {
        Kind::LocalJson => {
            assert_eq!(out.stdout, format!("{ANSWER}\n"));
            let requests = server.requests();
            assert!(requests.iter().all(|r| r.path == "/v1/chat/completions"));
            assert_eq!(requests[0].json()["model"], "qwen3:8b");
        }
        Kind::StreamJson => {
            let lines = parse_lines(&out.stdout);
            assert_eq!(lines.len(), 1, "{}", out.stdout);
            assert_eq!(lines[0]["type"], "tool_use");
            assert_eq!(lines[0]["name"], "list_dir");
        }
        _ => {
            let answer: Value = serde_json::from_str(&out.stdout).unwrap();
            assert_eq!(answer, json!({"tests": 3}));
        }
    }
}

fn check_ask(model: &str, sb: &Sandbox, server: &MockServer, out: &Run) {
    ok(out);
    assert_eq!(out.stdout.trim(), ANSWER);
    let found = results(sb);
    assert!(
        found
            .iter()
            .any(|(n, e, c)| n == "grep" && !e && c.contains("CRLF")),
        "{found:?}"
    );
    let body = server.requests()[0].json();
    assert_eq!(body["model"], model);
    assert!(
        !body["tools"].to_string().contains("write_file"),
        "a question may not write"
    );
    assert!(body["tools"].to_string().contains("grep"), "{body}");
}

fn check_edit_and_cargo(sb: &Sandbox, out: &Run) {
    ok(out);
    assert_eq!(
        read(&sb.ws(), "README.md"),
        "# Demo\n\nThe quick brown fox.\n"
    );
    let found = results(sb);
    let cargo = found
        .iter()
        .find(|(n, _, c)| n == "bash" && c.contains("cargo"));
    let (_, failed, content) = cargo.unwrap_or_else(|| panic!("cargo did not run: {found:?}"));
    assert!(
        !failed && content.contains("exit code: 0"),
        "cargo: {content}"
    );
    let ls = found.iter().filter(|(n, _, _)| n == "bash").nth(1).unwrap();
    assert!(ls.1, "a command other than cargo ran: {ls:?}");
}

fn check_full_auto(sb: &Sandbox, out: &Run) {
    ok(out);
    assert_eq!(read(&sb.ws(), "tests/parse.sh"), "echo parse-ok\n");
    assert_eq!(
        read(&sb.ws(), "ran.txt"),
        "parse-ok\n",
        "the command did not run"
    );
    let start = transcripts(sb).last().unwrap()[0].clone();
    assert_eq!(start["sandbox"]["mode"], "workspace-write");
    assert_eq!(start["sandbox"]["network"], false);
    if start["sandbox"]["enforced"]["filesystem"] == true {
        assert!(
            !sb.path("outside").exists(),
            "a command wrote outside the workspace"
        );
    } else {
        eprintln!("not checked: this kernel does not enforce the filesystem sandbox");
    }
}

fn check_runs_and_show(kind: &Kind, out: &Run) {
    ok(out);
    if !matches!(kind, Kind::Show) {
        assert!(
            out.stdout.contains("Name two things"),
            "runs: {}",
            out.stdout
        );
        assert!(out.stdout.contains("completed"), "runs: {}", out.stdout);
    }
    if !matches!(kind, Kind::Runs) {
        assert!(out.stdout.contains(FIRST), "show: {}", out.stdout);
    }
}
