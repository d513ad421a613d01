//! The composite action (`action.yml`): its `run:` steps, as GitHub runs them (see
//! `workflows.rs`), installing rounds, running it with the inputs and reporting the run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::workflows::{Job, ROOT, bash, expression, load, scalar};
use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, read_jsonl, run};

/// Stand-ins for cargo, python3 and pip that record their calls in `stub.log` (each word ends
/// with NUL, each call with \x01) and put the rounds under test where the real ones would install it.
pub(super) fn stubs(sb: &Sandbox) -> PathBuf {
    let dir = sb.path("stubs");
    std::fs::create_dir_all(&dir).unwrap();
    let (log, real) = (sb.path("stub.log"), env!("CARGO_BIN_EXE_rounds"));
    let record = format!(
        "{{ printf '%s\\0' \"$(basename \"$0\")\" \"$@\"; printf '\\1'; }} >> '{}'",
        log.display()
    );
    let scripts = [
        (
            "cargo",
            format!(
                "while [ $# -gt 0 ]; do [ \"$1\" != --root ] || root=$2; shift; done\n\
                 mkdir -p \"$root/bin\" && ln -s '{real}' \"$root/bin/rounds\""
            ),
        ),
        (
            "python3",
            format!(
                "[ \"$1 $2\" = '-m venv' ] && mkdir -p \"$3/bin\" && cp '{}/pip' \"$3/bin/pip\"",
                dir.display()
            ),
        ),
        (
            "pip",
            format!("ln -s '{real}' \"$(dirname \"$0\")/rounds\""),
        ),
    ];
    for (name, body) in scripts {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/bash\nset -e\n{record}\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    dir
}

/// The stubs' calls, each as its name and arguments.
pub(super) fn stub_calls(sb: &Sandbox) -> Vec<Vec<String>> {
    let log = std::fs::read_to_string(sb.path("stub.log")).unwrap_or_default();
    let calls = log.split('\u{1}').filter(|c| !c.is_empty());
    calls
        .map(|c| {
            c.strip_suffix('\0')
                .unwrap()
                .split('\0')
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

pub(super) fn system_path() -> Vec<PathBuf> {
    vec!["/usr/bin".into(), "/bin".into()]
}

fn on_path(job: &Job, name: &str) -> bool {
    std::env::split_paths(&job.search_path()).any(|d| d.join(name).exists())
}

fn read_file(path: &str) -> Reply {
    let input = format!(r#"{{"path":"{path}"}}"#);
    Reply::sse(sse::anthropic(
        &[B::Tool("t1", "read_file", &input)],
        "tool_use",
        1,
        1,
    ))
}

/// The run step's output directory, after it ran.
fn out_dir(job: &Job) -> PathBuf {
    PathBuf::from(job.output("run", "dir"))
}

#[test]
fn the_action_installs_rounds_runs_it_with_its_inputs_and_summarizes_the_run() {
    let sb = Sandbox::new();
    let mut job = Job::new(&sb, [vec![stubs(&sb)], system_path()].concat());
    assert!(
        !on_path(&job, "rounds"),
        "rounds must come from the install step"
    );
    let hostile = "Review this $(touch pwned) `touch pwned2`; echo \"$HOME\"";
    let inputs = [
        ("install", "source"),
        ("prompt", hostile),
        ("stdin-file", "change.diff"),
        ("allow", "bash(git log *)"),
        ("args", "--max-rounds=5\n\n--max-repeats\n7\n"),
    ];

    // From source, on a cache miss: cargo install into the runner's temp dir, which joins PATH.
    assert_eq!(job.action("where", &inputs).code, 0);
    let dir = sb.path("runner/rounds-install");
    assert_eq!(job.output("where", "dir"), dir.display().to_string());
    assert_eq!(job.output("where", "cache-path"), dir.display().to_string());
    let key = job.output("where", "key");
    let sum = key.strip_prefix("rounds-Linux-X64-").unwrap();
    assert!(
        sum.len() == 20 && sum.chars().all(|c| c.is_ascii_hexdigit()),
        "{key}"
    );
    let out = job.action("install", &inputs);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let root = dir.display().to_string();
    let install = [
        "cargo", "install", "--locked", "--path", ROOT, "--root", &root,
    ];
    assert_eq!(stub_calls(&sb), [install.map(str::to_owned).to_vec()]);
    assert_eq!(job.github_path(), [dir.join("bin")]);
    // On a cache hit nothing is built; the cached directory joins PATH all the same.
    let hit = HashMap::from([("cache-hit".to_owned(), "true".to_owned())]);
    job.outputs.insert("cache".to_owned(), hit);
    assert_eq!(job.action("install", &inputs).code, 0);
    assert_eq!(stub_calls(&sb).len(), 1);
    assert_eq!(job.github_path(), [dir.join("bin"), dir.join("bin")]);

    // The run: every input reaches rounds as itself, the prompt's shell text included.
    sb.write("change.diff", "+fn two() {}\n");
    sb.write("notes.txt", "all good\n");
    let server = MockServer::start(vec![read_file("notes.txt"), sse::answer("Looks fine.")]);
    job.env
        .push(("ANTHROPIC_API_KEY".to_owned(), "k".to_owned()));
    job.env
        .push(("ANTHROPIC_BASE_URL".to_owned(), server.url()));
    let out = job.action("run", &inputs);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stdout, "Looks fine.\n");
    let first = server.requests()[0].json();
    let prompt = first["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(prompt.contains(hostile), "{prompt}");
    assert!(prompt.contains("+fn two() {}"), "{prompt}");
    assert!(!sb.ws().join("pwned").exists() && !sb.ws().join("pwned2").exists());
    assert_eq!(job.output("run", "exit-code"), "0");
    let lines = read_jsonl(Path::new(&job.output("run", "transcript")));
    let start = &lines[0];
    let offered: Vec<&str> = (first["tools"].as_array().unwrap().iter())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["read_file", "list_dir", "glob", "grep", "bash"]);
    assert_eq!(start["limits"]["max_rounds"], 5, "{start}");
    assert_eq!(
        start["limits"]["timeout_secs"].as_f64(),
        Some(900.0),
        "{start}"
    );
    assert_eq!(lines[1]["results"][0]["content"], "     1\tall good\n");
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let answer = std::fs::read_to_string(job.output("run", "answer-file")).unwrap();
    assert_eq!(answer, "Looks fine.");
    assert!(out_dir(&job).join("transcript.html").exists());
    // The summary waits for the last step (a composite action shows one step's).
    assert!(out_dir(&job).join("summary.md").exists());
    assert!(!sb.path("summary.md").exists());

    // The report: rounds' summary and the artifact's link on the run's page.
    let url = "https://github.com/o/r/actions/runs/1/artifacts/2";
    let upload = HashMap::from([("artifact-url".to_owned(), url.to_owned())]);
    job.outputs.insert("upload".to_owned(), upload);
    let out = job.action("report", &inputs);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let summary = std::fs::read_to_string(sb.path("summary.md")).unwrap();
    assert!(
        summary
            .trim_start()
            .starts_with("### ✅ rounds: completed (exit 0)\n"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("\n- **Artifact:** <{url}>")),
        "{summary}"
    );

    // The action's outputs are what the run step wrote.
    let action = load("action.yml");
    for (name, output) in action["outputs"].as_hash().unwrap() {
        let expr = expression(output["value"].as_str().unwrap()).unwrap();
        let value = job.context(&action, &inputs, expr);
        assert!(!value.is_empty(), "{}", scalar(name));
    }

    // The control: the same prompt pasted into the script, as `"${{ inputs.prompt }}"` there
    // would paste it, runs its commands.
    let server = MockServer::start(vec![sse::answer("x")]);
    job.env
        .push(("ANTHROPIC_BASE_URL".to_owned(), server.url()));
    let pasted = |script: String| {
        assert!(script.contains("\"$PROMPT\""));
        script.replace("\"$PROMPT\"", &format!("\"{hostile}\""))
    };
    assert_eq!(job.action_edited("run", &inputs, pasted).code, 0);
    assert!(sb.ws().join("pwned").exists() && sb.ws().join("pwned2").exists());
}

/// Runs the action's run step against `replies`, then its report step: rounds' exit code, the
/// report's and what the report printed. The run step itself never fails.
fn run_and_report(
    job: &mut Job,
    replies: Vec<Reply>,
    inputs: &[(&str, &str)],
) -> (String, i32, String) {
    let server = MockServer::start(replies);
    job.env
        .push(("ANTHROPIC_BASE_URL".to_owned(), server.url()));
    let out = job.action("run", inputs);
    assert_eq!(out.code, 0, "{inputs:?}: {}{}", out.stdout, out.stderr);
    let code = job.output("run", "exit-code");
    let report = job.action("report", inputs);
    let summary = std::fs::read_to_string(job.sb.path("summary.md")).unwrap();
    assert!(summary.contains(&format!("(exit {code})\n")), "{summary}");
    (code, report.code, report.stdout)
}

#[test]
fn the_action_fails_the_step_by_exit_code_and_warns_when_a_limit_stopped_the_run() {
    let sb = Sandbox::new();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_rounds")).parent().unwrap();
    let mut job = Job::new(&sb, [vec![bin_dir.to_owned()], system_path()].concat());
    job.env
        .push(("ANTHROPIC_API_KEY".to_owned(), "k".to_owned()));
    // Nothing runs before the run step: the report says so and fails.
    let out = job.action("report", &[]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains("::error title=rounds::rounds did not run")
    );
    // A rounds already on PATH.
    let path = [("install", "path")];
    assert_eq!(job.action("install", &path).code, 0);
    assert!(job.github_path().is_empty());

    let limit = "::warning title=rounds::stopped at --timeout (exit 5); the answer may be partial";
    let silent = Reply::silent(std::time::Duration::from_secs(10));
    let done = run_and_report(
        &mut job,
        vec![silent],
        &[("prompt", "go"), ("timeout", "1")],
    );
    assert_eq!((done.0.as_str(), done.1), ("5", 0), "{}", done.2);
    assert!(done.2.contains(limit), "{}", done.2);

    let strict = [
        ("prompt", "go"),
        ("args", "--max-rounds=1"),
        ("fail-on-limit", "true"),
    ];
    let done = run_and_report(&mut job, vec![read_file("a"), read_file("b")], &strict);
    assert_eq!((done.0.as_str(), done.1), ("3", 3), "{}", done.2);
    assert!(
        done.2
            .contains("::error title=rounds::stopped at --max-rounds (exit 3)")
    );

    let failed = "::error title=rounds::rounds failed";
    let denied = [
        ("prompt", "go"),
        ("allow", "read_file"),
        ("args", "--fail-on\ndenied"),
    ];
    let done = run_and_report(&mut job, vec![bash("rm -rf ."), sse::answer("x")], &denied);
    assert_eq!((done.0.as_str(), done.1), ("6", 6), "{}", done.2);
    assert!(done.2.contains(&format!("{failed} (exit 6)")), "{}", done.2);

    let refused = Reply::error(401, r#"{"error":"bad key"}"#);
    let done = run_and_report(
        &mut job,
        vec![refused],
        &[("prompt", "go"), ("model", "anthropic/m")],
    );
    assert_eq!((done.0.as_str(), done.1), ("1", 1), "{}", done.2);
    assert!(done.2.contains(&format!("{failed} (exit 1)")), "{}", done.2);

    // Worth retrying later, and said so: a workflow can retry on exit 10 alone.
    let overloaded = Reply::error(529, r#"{"error":{"type":"overloaded_error"}}"#);
    let busy = [("prompt", "go"), ("args", "--max-retries=0")];
    let done = run_and_report(&mut job, vec![overloaded], &busy);
    assert_eq!((done.0.as_str(), done.1), ("10", 10), "{}", done.2);
    let unavailable = "::error title=rounds::the provider stayed unavailable (exit 10)";
    assert!(done.2.contains(unavailable), "{}", done.2);

    let done = run_and_report(&mut job, vec![], &[("prompt", "")]);
    assert_eq!((done.0.as_str(), done.1), ("2", 2), "{}", done.2);
    assert!(done.2.contains(&format!("{failed} (exit 2)")), "{}", done.2);
    assert!(sb.ws().exists() && sb.ws().read_dir().unwrap().next().is_none());
}

#[test]
fn the_action_installs_a_pip_requirement_as_one_argument_in_a_virtualenv_of_its_own() {
    let sb = Sandbox::new();
    let mut job = Job::new(&sb, [vec![stubs(&sb)], system_path()].concat());
    // `path` with no rounds on PATH is an error, not a run of something else.
    let out = job.action("install", &[("install", "path")]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("::error title=rounds::install: path"));

    let spec = "rounds==0.1.0 ; touch pwned $(touch pwned2)";
    let inputs = [("install", spec)];
    assert_eq!(job.action("where", &inputs).code, 0);
    assert_eq!(
        job.output("where", "key"),
        "",
        "only a source build is cached"
    );
    let out = job.action("install", &inputs);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let dir = sb.path("runner/rounds-install");
    let venv = dir.join("venv").display().to_string();
    let quiet = ["--quiet", "--disable-pip-version-check"];
    let calls = [
        vec!["python3", "-m", "venv", &venv],
        [vec!["pip", "install"], quiet.to_vec(), vec![spec]].concat(),
    ];
    assert_eq!(
        stub_calls(&sb),
        calls.map(|c| c.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    );
    assert!(!sb.ws().join("pwned").exists() && !sb.ws().join("pwned2").exists());
    // Only rounds joins PATH, not the virtualenv's python and pip.
    assert_eq!(job.github_path(), [dir.join("bin")]);
    let names: Vec<_> = std::fs::read_dir(dir.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["rounds"]);
    let link = std::fs::read_link(dir.join("bin/rounds")).unwrap();
    assert_eq!(link, dir.join("venv/bin/rounds"));
    let version = run(Command::new(dir.join("bin/rounds")).arg("--version"));
    assert!(version.stdout.starts_with("rounds "), "{version:?}");
}

#[test]
fn the_action_expands_no_expression_in_a_script_and_declares_what_it_reads() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("action.yml")).unwrap();
    let action = load("action.yml");
    let steps = action["runs"]["steps"].as_vec().unwrap();
    let ids: Vec<&str> = steps.iter().filter_map(|s| s["id"].as_str()).collect();
    let mut scripts = 0;
    for s in steps {
        if let Some(script) = s["run"].as_str() {
            assert!(!script.contains("${{"), "{script}");
            scripts += 1;
        }
    }
    assert_eq!(scripts, 4);
    // GitHub gives an undeclared input or an unknown step's output as '' without a word.
    let inputs = action["inputs"].as_hash().unwrap();
    let declared: Vec<String> = inputs.keys().map(scalar).collect();
    let mut read = Vec::new();
    for (at, _) in text.match_indices("inputs.") {
        let name: String = text[at + 7..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(declared.contains(&name), "undeclared input {name}");
        read.push(name);
    }
    for name in &declared {
        assert!(read.contains(name), "input {name} is never read");
    }
    for (at, _) in text.match_indices("steps.") {
        let id = text[at + 6..].split('.').next().unwrap();
        assert!(ids.contains(&id), "no step {id}");
    }
}
