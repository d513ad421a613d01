//! Every command in the README's `sh` blocks and in `--help`'s examples does what its words say
//! (issue 23 §2): each runs as a person would type it (`bash -c`, the built binary first on
//! PATH, keys and base URLs pointing at the mock) against a scripted model that uses the tools
//! the command allows, and its effect is checked: a file edited, a command run, an exit code.
//! A command the test has no case for fails it, so a new example cannot go untested.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::batch::rounds_before;
use super::readme_cases::{Kind, check, model, setup};
use crate::common::mock::MockServer;
use crate::common::{Run, Sandbox, run};

/// Commands that cannot run in a test, each with why.
const CANNOT_RUN: &[(&str, &str)] = &[
    (
        "pipx install rounds",
        "needs PyPI and a published release; .ci/run installs the same wheel (scripts/dist.sh check)",
    ),
    (
        "cargo binstall --git https://github.com/rounds-cli/rounds rounds",
        "needs the network and a published release; tests/suite/dist.rs checks its metadata",
    ),
    (
        "cargo install --locked --path .",
        "a release build of minutes; the suite tests the same binary in debug",
    ),
    (
        "cargo install --locked --git URL rounds",
        "needs the network and a published repository",
    ),
    (
        "pipx install .",
        "needs PyPI and a dist build of minutes; scripts/dist.sh check installs the wheel",
    ),
    (
        "cargo test",
        "the suite itself: running it here would recurse",
    ),
    (
        "export ANTHROPIC_API_KEY=...",
        "the test sets a key of its own and points every provider at the mock",
    ),
];

/// Commands of features being built on other branches (issue 23): skipped, with a word, until
/// they are merged; then this list is emptied and each gets its case.
const PENDING: &[&str] = &[];

/// Each command, as written, and what it is checked for.
pub(super) const CASES: &[(&str, Kind)] = &[
    (
        "rounds completions bash > ~/.local/share/bash-completion/completions/rounds",
        Kind::Completions,
    ),
    ("rounds man > ~/.local/share/man/man1/rounds.1", Kind::Man),
    (
        "cargo run -- -m replay:fixtures/demo/demo.jsonl -w fixtures/demo/workspace",
        Kind::Replay,
    ),
    (
        "rounds -m replay:fixtures/demo/demo.jsonl -w fixtures/demo/workspace",
        Kind::Replay,
    ),
    (
        "rounds \"Which module parses the SSE stream, and how does it handle CRLF?\"",
        Kind::Ask("claude-sonnet-4-5"),
    ),
    (
        "rounds -m anthropic/claude-sonnet-4-5 'Which files define the CLI?'",
        Kind::Ask("claude-sonnet-4-5"),
    ),
    (
        "git diff | rounds -m openai/gpt-4.1 \"Review this change\"",
        Kind::Review("gpt-4.1"),
    ),
    (
        "git diff | rounds 'Review this change'",
        Kind::Review("claude-sonnet-4-5"),
    ),
    ("rounds --edit \"Fix the typo in README.md\"", Kind::Edit),
    ("rounds --edit 'Fix the typo in README.md'", Kind::Edit),
    (
        "rounds --edit -a 'bash(cargo *)' --timeout 900 \"Make cargo test pass\"",
        Kind::EditAndCargo,
    ),
    (
        "rounds --edit -a 'bash(cargo *)' --timeout 600 'Make cargo test pass'",
        Kind::EditAndCargo,
    ),
    (
        "rounds --full-auto \"Add a test for parse_line and run the tests\"",
        Kind::FullAuto,
    ),
    (
        "rounds --full-auto 'Make the tests pass, then run them'",
        Kind::FullAuto,
    ),
    (
        "rounds -m ollama/qwen3:8b -o json \"List the TODOs in src/\" | jq -r .final_text",
        Kind::LocalJson,
    ),
    (
        "rounds -o stream-json \"Summarize src/\" | jq -c 'select(.type == \"tool_use\")'",
        Kind::StreamJson,
    ),
    (
        "rounds -o stream-json 'Summarize src/' | jq -c 'select(.type == \"tool_use\")'",
        Kind::StreamJson,
    ),
    (
        "rounds --output-schema answer.schema.json -o json \"How many tests are there?\" | jq .final_json",
        Kind::Schema,
    ),
    (
        "rounds --max-rounds 3 \"Find every unused function\"",
        Kind::MaxRounds,
    ),
    (
        "rounds --resume last \"Now explain the second one\"",
        Kind::Resume,
    ),
    (
        "rounds tools --full-auto",
        Kind::Tools(&["write_file", "edit_file", "bash"]),
    ),
    (
        "rounds tools -a all",
        Kind::Tools(&["bash", "web_fetch", "web_search"]),
    ),
    ("rounds runs", Kind::Runs),
    ("rounds show last", Kind::Show),
    ("rounds runs; rounds show last", Kind::RunsAndShow),
    (
        "rounds batch jobs.jsonl --out results/ --jobs 8",
        Kind::Batch,
    ),
    (
        "rounds --edit --check 'cargo test --quiet' \"Make the failing test pass\"",
        Kind::Check,
    ),
    ("rounds doctor", Kind::Doctor),
    ("rounds models", Kind::Models),
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The commands of the README's `sh` blocks, comments cut, continuation lines joined.
fn readme_commands() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            in_sh = !in_sh && info == "sh";
            continue;
        }
        if !in_sh || trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let command = match trimmed.find("  #") {
            Some(at) => trimmed[..at].trim_end(),
            None => trimmed,
        };
        match command.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                commands.push(format!("{pending}{command}"));
                pending.clear();
            }
        }
    }
    commands
}

/// The lines under "Examples:" in `rounds --help`.
fn help_examples() -> Vec<String> {
    let help = run(Sandbox::new().rounds().arg("--help"));
    assert_eq!(help.code, 0);
    let after = help
        .stdout
        .split("\nExamples:\n")
        .nth(1)
        .expect("--help has examples");
    after
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
        .collect()
}

/// Runs `command` with `bash -c` in `cwd`, as a person with rounds installed and a key set
/// would, with every provider pointed at `server`.
pub(super) fn shell(sb: &Sandbox, server: &MockServer, cwd: &Path, command: &str) -> Run {
    let bin = Path::new(env!("CARGO_BIN_EXE_rounds")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::fs::create_dir_all(sb.path("tmp")).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .env_clear()
        .env("PATH", path)
        .env("HOME", sb.path("home"))
        .env("ROUNDS_HOME", sb.path("state"))
        // Tools may write in the temp dir: the test's own, so what is around the workspace is not.
        .env("TMPDIR", sb.path("tmp"))
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env("GEMINI_API_KEY", "k")
        .env("GEMINI_BASE_URL", server.url())
        .current_dir(cwd)
        .stdin(std::process::Stdio::null());
    // cargo, for the commands that let the model run it, is rustup's: it needs its homes.
    let home = std::env::var("HOME").unwrap_or_default();
    for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let dir = std::env::var(var).unwrap_or_else(|_| format!("{home}/{default}"));
        cmd.env(var, dir);
    }
    run(&mut cmd)
}

/// The turn a scripted model is at: how many answers it has given in this conversation.
pub(super) fn turn_of(request: &crate::common::mock::Recorded) -> usize {
    rounds_before(request)
}

fn run_case(command: &str, kind: &Kind) {
    let sb = Sandbox::new();
    let server = model(kind);
    let cwd = setup(kind, &sb, &server, command);
    let command = command.replacen("cargo run --", "rounds", 1);
    let out = shell(&sb, &server, &cwd, &command);
    check(kind, &sb, &server, &out);
}

#[test]
fn every_command_in_the_readme_and_the_help_examples_does_what_it_says() {
    let mut commands = readme_commands();
    commands.extend(help_examples());
    assert!(commands.len() >= 20, "too few commands found: {commands:?}");
    let mut missing = Vec::new();
    for command in &commands {
        if let Some((_, why)) = CANNOT_RUN.iter().find(|(c, _)| c == command) {
            eprintln!("not run: {command}: {why}");
            continue;
        }
        if PENDING.contains(&command.as_str()) {
            eprintln!("skipped until its branch is merged: {command}");
            continue;
        }
        match CASES.iter().find(|(c, _)| c == command) {
            Some((_, kind)) => run_case(command, kind),
            None => missing.push(command.clone()),
        }
    }
    assert!(
        missing.is_empty(),
        "commands with no case in tests/suite/readme.rs: {missing:#?}"
    );
    let stale: Vec<&str> = CASES
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| !commands.iter().any(|m| m == c))
        .collect();
    assert!(
        stale.is_empty(),
        "cases for commands no longer shown: {stale:#?}"
    );
}

/// The extraction itself: a command the README shows is found whole, its comment cut.
#[test]
fn the_readme_commands_are_extracted_whole() {
    let commands = readme_commands();
    let recipe = "git diff | rounds -m openai/gpt-4.1 \"Review this change\"";
    assert!(commands.iter().any(|c| c == recipe), "{commands:#?}");
    assert_eq!(
        commands.first().map(String::as_str),
        Some("pipx install rounds")
    );
    // The quick start stays first among the commands that run something.
    let quick = commands
        .iter()
        .position(|c| c.contains("-m replay:"))
        .unwrap();
    let first_run = commands
        .iter()
        .position(|c| c.starts_with("rounds \""))
        .unwrap();
    assert!(quick < first_run);
}

/// The check can fail: the README's old example, which offered no tool that writes, does not
/// edit the file its words promise to fix.
#[test]
fn the_old_example_that_could_not_edit_fails_its_check() {
    let old = "rounds -a 'bash(cargo *)' --timeout 900 \"Make cargo test pass\"";
    let failed = std::panic::catch_unwind(|| run_case(old, &Kind::EditAndCargo)).is_err();
    assert!(failed, "the check must catch a command that cannot edit");
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    let kept: String = heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .collect();
    kept.replace(' ', "-")
}

fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// The README is a page of links into docs/: every relative link of the README, docs/ and
/// ARCHITECTURE.md leads to a file that exists and, with `#anchor`, to one of its headings;
/// and every docs/ page is linked from the README.
#[test]
fn every_link_of_the_readme_and_docs_leads_somewhere() {
    let root = repo();
    let mut pages = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.extend(docs.iter().cloned());
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for found in link.captures_iter(&text) {
            let target = &found[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file = match path {
                "" => page.clone(),
                _ => page.parent().unwrap().join(path),
            };
            let exists = file.exists();
            let anchored = anchor.is_empty()
                || (exists
                    && anchors(&std::fs::read_to_string(&file).unwrap())
                        .contains(&anchor.to_owned()));
            if !exists || !anchored {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for doc in &docs {
        let name = format!("(docs/{})", doc.file_name().unwrap().to_string_lossy());
        assert!(readme.contains(&name), "the README does not link {name}");
    }
}

/// A page a person reads in five minutes; the rest belongs in docs/.
#[test]
fn the_readme_stays_a_short_page() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move detail into docs/"
    );
}
