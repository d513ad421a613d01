//! Helpers shared by the end-to-end tests: a sandbox per test (workspace, HOME, state dir), the
//! real binary with a clean environment, transcript reading, and SSE builders per provider.

#![allow(dead_code)]

pub mod bedrock;
pub mod cache_sim;
pub mod measure;
pub mod mock;
pub mod pg;
pub mod sse;
pub mod vertex;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// A fresh directory tree for one test: `ws/` is the workspace and the working directory.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws")).expect("ws");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Sandbox { dir }
    }

    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().expect("ws path")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a workspace file, creating directories.
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.ws().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    /// The binary with an empty environment (plus PATH and a private HOME), run in `ws/`, stdin
    /// closed. Tests add exactly the variables they mean to.
    pub fn rounds(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rounds"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("ROUNDS_HOME", self.path("state"))
            .current_dir(self.ws())
            .stdin(Stdio::null());
        cmd
    }

    /// [`Sandbox::rounds`] talking to `server` as the Anthropic API, with a dummy key.
    pub fn anthropic(&self, server: &mock::MockServer) -> Command {
        let mut cmd = self.rounds();
        cmd.env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", server.url());
        cmd
    }

    /// The user turn a run in this workspace sends for `prompt`: the workspace root first (it is
    /// kept out of the system prompt), then the prompt.
    pub fn turn(&self, prompt: &str) -> String {
        format!("Workspace root: {}\n\n{prompt}", self.ws().display())
    }

    /// The transcript path tests pass with `--transcript`.
    pub fn transcript_path(&self) -> PathBuf {
        self.path("t.jsonl")
    }

    pub fn transcript(&self) -> Vec<Value> {
        read_jsonl(&self.transcript_path())
    }
}

/// What a finished run printed and returned.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().expect("run rounds");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// [`run`], but a run that takes longer than `limit` is killed and fails the test: for inputs
/// that used to hang rounds or make it read forever.
pub fn run_within(cmd: &mut Command, limit: std::time::Duration) -> Run {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rounds");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rounds did not finish within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
    }
}

/// Every line of a JSONL file, each required to parse and to match the published schema.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "last line not terminated"
    );
    parse_lines(&text)
}

/// Parses JSONL (a transcript or `--output stream-json`), checking every line against
/// `schema/rounds.schema.json`.
pub fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSONL line {l:?}: {e}"));
            check_schema(&v);
            v
        })
        .collect()
}

/// Fails the test when `line` does not match the published schema.
pub fn check_schema(line: &Value) {
    let errors = schema_errors(line);
    assert!(
        errors.is_empty(),
        "line does not match schema/rounds.schema.json: {errors:#?}\n{line}"
    );
}

/// Why `line` does not match the published schema (empty when it does).
pub fn schema_errors(line: &Value) -> Vec<String> {
    static SCHEMA: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    let validator = SCHEMA.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/rounds.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap()
    });
    validator
        .iter_errors(line)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// The line types of a transcript, e.g. `["start", "round", "end"]`.
pub fn types(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .map(|l| l["type"].as_str().expect("type"))
        .collect()
}
