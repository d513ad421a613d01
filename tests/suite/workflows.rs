//! GitHub Actions as GitHub runs them: `run:` steps read from their YAML, their `env:` and
//! `${{ }}` expressions resolved, run by `bash --noprofile --norc -eo pipefail` with the runner's
//! files (GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY), against the mock. Here the example
//! workflow (`examples/github-actions.yml`); the composite action's steps in `action.rs`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use yaml_rust2::{Yaml, YamlLoader};

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, read_jsonl, run};

pub(super) const ROOT: &str = env!("CARGO_MANIFEST_DIR");

pub(super) fn load(rel: &str) -> Yaml {
    let text = std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

/// A scalar as GitHub reads an `env:` value or an input: as a string.
pub(super) fn scalar(y: &Yaml) -> String {
    match y {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null => String::new(),
        other => panic!("not a scalar: {other:?}"),
    }
}

/// `expr` of a value that is exactly `${{ expr }}`; a value with an expression inside other
/// text is a case these tests do not resolve.
pub(super) fn expression(value: &str) -> Option<&str> {
    let inner = value.trim().strip_prefix("${{")?.strip_suffix("}}")?;
    Some(inner.trim())
}

/// A `run:` step: its script, its `env:` as written and its `working-directory`.
pub(super) struct Step {
    script: String,
    env: Vec<(String, String)>,
    dir: Option<String>,
}

pub(super) fn step(steps: &Yaml, key: &str, value: &str) -> Step {
    let found = steps
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| s[key].as_str() == Some(value))
        .unwrap_or_else(|| panic!("no step with {key}: {value}"));
    assert_eq!(found["shell"].as_str(), Some("bash"), "{value}");
    let env = found["env"]
        .as_hash()
        .map(|h| h.iter().map(|(k, v)| (scalar(k), scalar(v))).collect())
        .unwrap_or_default();
    Step {
        script: found["run"].as_str().unwrap().to_owned(),
        env,
        dir: found["working-directory"].as_str().map(str::to_owned),
    }
}

/// The runner of one job: the sandbox's workspace is GITHUB_WORKSPACE, `runner/` RUNNER_TEMP,
/// `summary.md` the step summary; GITHUB_PATH's lines go before `path` in later steps, and
/// each step's GITHUB_OUTPUT is kept as `steps.ID.outputs`.
pub(super) struct Job<'a> {
    pub(super) sb: &'a Sandbox,
    path: Vec<PathBuf>,
    pub(super) env: Vec<(String, String)>,
    pub(super) outputs: HashMap<String, HashMap<String, String>>,
    /// `github.action_ref` and `github.action_repository`: empty, as for `uses: ./`, unless set.
    pub(super) action_ref: String,
    pub(super) action_repository: String,
}

impl<'a> Job<'a> {
    pub(super) fn new(sb: &'a Sandbox, path: Vec<PathBuf>) -> Job<'a> {
        std::fs::create_dir_all(sb.path("runner")).unwrap();
        Job {
            sb,
            path,
            env: Vec::new(),
            outputs: HashMap::new(),
            action_ref: String::new(),
            action_repository: String::new(),
        }
    }

    /// GITHUB_PATH's directories, the latest first (as the runner prepends them).
    pub(super) fn github_path(&self) -> Vec<PathBuf> {
        let text = std::fs::read_to_string(self.sb.path("runner/path")).unwrap_or_default();
        text.lines().rev().map(PathBuf::from).collect()
    }

    pub(super) fn search_path(&self) -> String {
        let dirs = [self.github_path(), self.path.clone()].concat();
        std::env::join_paths(dirs).unwrap().into_string().unwrap()
    }

    pub(super) fn output(&self, id: &str, name: &str) -> String {
        let outputs = self.outputs.get(id);
        outputs
            .and_then(|o| o.get(name))
            .cloned()
            .unwrap_or_default()
    }

    /// Runs `step` as step `id`; `resolve` gives each `env:` entry its value from its name and
    /// the value as written.
    pub(super) fn run(
        &mut self,
        id: &str,
        step: &Step,
        resolve: &dyn Fn(&str, &str) -> String,
    ) -> Run {
        let script = self.sb.path(&format!("runner/{id}.sh"));
        std::fs::write(&script, &step.script).unwrap();
        let output = self.sb.path(&format!("runner/{id}.output"));
        std::fs::write(&output, "").unwrap();
        let dir = match &step.dir {
            Some(d) => self.sb.ws().join(resolve("working-directory", d)),
            None => self.sb.ws(),
        };
        let mut cmd = Command::new("/bin/bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script)
            .env_clear()
            .env("PATH", self.search_path())
            .env("HOME", self.sb.path("home"))
            .env("RUNNER_TEMP", self.sb.path("runner"))
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("GITHUB_WORKSPACE", self.sb.ws())
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_PATH", self.sb.path("runner/path"))
            .env("GITHUB_STEP_SUMMARY", self.sb.path("summary.md"))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir)
            .stdin(Stdio::null());
        for (k, v) in &step.env {
            cmd.env(k, resolve(k, v));
        }
        let result = run(&mut cmd);
        let mut outputs = HashMap::new();
        for line in std::fs::read_to_string(&output).unwrap().lines() {
            assert!(
                !line.contains("<<"),
                "multi-line outputs are not read here: {line}"
            );
            let (k, v) = line.split_once('=').unwrap();
            outputs.insert(k.to_owned(), v.to_owned());
        }
        self.outputs.insert(id.to_owned(), outputs);
        result
    }

    /// Runs the action's step `id` with `inputs` (the others at their defaults).
    pub(super) fn action(&mut self, id: &str, inputs: &[(&str, &str)]) -> Run {
        self.action_edited(id, inputs, |script| script)
    }

    /// [`Job::action`] with the step's script changed by `edit` first.
    pub(super) fn action_edited(
        &mut self,
        id: &str,
        inputs: &[(&str, &str)],
        edit: impl Fn(String) -> String,
    ) -> Run {
        let action = load("action.yml");
        let mut step = step(&action["runs"]["steps"], "id", id);
        step.script = edit(step.script);
        let written = (step.env.iter().cloned()).chain(
            step.dir
                .clone()
                .map(|d| ("working-directory".to_owned(), d)),
        );
        let mut values = HashMap::new();
        for (k, v) in written {
            let value = match expression(&v) {
                Some(expr) => self.context(&action, inputs, expr),
                None => v,
            };
            values.insert(k, value);
        }
        self.run(id, &step, &|k, _| values[k].clone())
    }

    /// The value of an expression of action.yml: an input (its default when not given), the
    /// action's own directory, ref and repository, or an earlier step's output.
    pub(super) fn context(&self, action: &Yaml, inputs: &[(&str, &str)], expr: &str) -> String {
        if let Some(name) = expr.strip_prefix("inputs.") {
            let declared = &action["inputs"][name];
            assert!(!declared.is_badvalue(), "undeclared input {name}");
            let given = inputs.iter().find(|(k, _)| *k == name);
            return given.map_or_else(|| scalar(&declared["default"]), |(_, v)| (*v).to_owned());
        }
        match expr {
            "github.action_path" => return ROOT.to_owned(),
            "github.action_ref" => return self.action_ref.clone(),
            "github.action_repository" => return self.action_repository.clone(),
            _ => {}
        }
        let (id, name) = expr
            .strip_prefix("steps.")
            .and_then(|rest| rest.split_once(".outputs."))
            .unwrap_or_else(|| panic!("an expression these tests do not know: {expr}"));
        self.output(id, name)
    }
}

/// A model call of `bash` with `command`.
pub(super) fn bash(command: &str) -> Reply {
    let input = format!(r#"{{"command":"{command}"}}"#);
    Reply::sse(sse::anthropic(
        &[B::Tool("t1", "bash", &input)],
        "tool_use",
        1,
        1,
    ))
}

/// A git repository with two commits in the sandbox's workspace; returns the first's id.
fn two_commits(sb: &Sandbox) -> String {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(sb.ws())
            .env("HOME", sb.path("home"))
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    sb.write("lib.rs", "fn one() {}\n");
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);
    let base = git(&["rev-parse", "HEAD"]).trim().to_owned();
    sb.write("lib.rs", "fn one() {}\nfn two() {}\n");
    git(&["commit", "-qam", "two"]);
    base
}

/// Runs the example's review step, with rounds on PATH: its `env:` expressions replaced by
/// `given`, which may also override plain values.
fn run_example(sb: &Sandbox, server: &MockServer, given: &[(&str, String)]) -> Run {
    let workflow = load("examples/github-actions.yml");
    let step = step(
        &workflow["jobs"]["review"]["steps"],
        "name",
        "Review the change",
    );
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_rounds")).parent().unwrap();
    let inherited = std::env::split_paths(&std::env::var_os("PATH").unwrap()).collect();
    let mut job = Job::new(sb, [vec![bin_dir.to_owned()], inherited].concat());
    job.env
        .push(("ANTHROPIC_BASE_URL".to_owned(), server.url()));
    job.run(
        "review",
        &step,
        &|k, v| match given.iter().find(|(name, _)| name == &k) {
            Some((_, value)) => value.clone(),
            None if v.contains("${{") => panic!("the test gives no value for {k}"),
            None => v.to_owned(),
        },
    )
}

#[test]
fn the_example_workflow_reviews_a_change_and_handles_every_exit_code() {
    let sb = Sandbox::new();
    let base = two_commits(&sb);
    let title = "Add two() $(touch pwned) `touch pwned2`";
    let given = |timeout: &str| {
        vec![
            ("ANTHROPIC_API_KEY", "k".to_owned()),
            ("PR_TITLE", title.to_owned()),
            ("BASE_SHA", base.clone()),
            ("ROUNDS_TIMEOUT", timeout.to_owned()),
        ]
    };
    let out_dir = sb.path("runner/rounds-review");

    // A review that looks at the history, then answers.
    let server = MockServer::start(vec![bash("git log --oneline"), sse::answer("Looks fine.")]);
    let out = run_example(&sb, &server, &given("900"));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stdout, "Looks fine.\n");
    let first = server.requests()[0].json();
    let prompt = first["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        prompt.contains(&format!("(pull request: {title})")),
        "{prompt}"
    );
    assert!(prompt.contains("+fn two() {}"), "{prompt}");
    assert!(!sb.ws().join("pwned").exists() && !sb.ws().join("pwned2").exists());
    let lines = read_jsonl(&out_dir.join("transcript.jsonl"));
    assert_eq!(lines[1]["results"][0]["is_error"], false, "{}", lines[1]);
    let log = lines[1]["results"][0]["content"].as_str().unwrap();
    assert!(log.contains(" two\n") && log.contains(" one\n"), "{log}");
    assert_eq!(
        std::fs::read_to_string(out_dir.join("review.md")).unwrap(),
        "Looks fine."
    );
    let html = std::fs::read_to_string(out_dir.join("transcript.html")).unwrap();
    assert!(html.contains("Looks fine.") && html.contains("git log --oneline"));
    let summary = || std::fs::read_to_string(sb.path("summary.md")).unwrap();
    assert!(summary().contains("### ✅ rounds: completed (exit 0)"));

    // The deadline: exit 5 is a warning, and the artifacts are still there.
    std::fs::remove_dir_all(&out_dir).unwrap();
    let server = MockServer::start(vec![Reply::silent(std::time::Duration::from_secs(10))]);
    let out = run_example(&sb, &server, &given("1"));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("::warning title=rounds::stopped at --timeout"),
        "{}",
        out.stdout
    );
    assert!(out_dir.join("transcript.html").exists());
    assert!(summary().contains("### ⚠️ rounds: timeout (exit 5)"));

    // A command outside the allowlist: exit 6 fails the job.
    let server = MockServer::start(vec![bash("rm -rf ."), sse::answer("x")]);
    let out = run_example(&sb, &server, &given("900"));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("::error title=rounds::the model tried a command outside"),
        "{}",
        out.stdout
    );
    assert!(sb.ws().join("lib.rs").exists());
    assert!(summary().contains("### ⚠️ rounds: tool_failure (exit 6)"));

    // A provider error: the job fails with rounds' exit code.
    let server = MockServer::start(vec![Reply::error(401, r#"{"error":"bad key"}"#)]);
    let out = run_example(
        &sb,
        &server,
        &[given("900"), vec![("ROUNDS_MODEL", "anthropic/m".into())]].concat(),
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("rounds failed (exit 1)"),
        "{}",
        out.stdout
    );
    assert!(summary().contains("### ❌ rounds: error (exit 1)"));
}
