//! Settings files, profiles, -c, aliases and --append-system-prompt, with their precedence:
//! flags > environment > -c > the user's profile > project file > user file > defaults (a
//! project's limits only tighten: tests/suite/trust.rs).

use serde_json::Value;

use crate::common::mock::MockServer;
use crate::common::sse;
use crate::common::{Sandbox, run};

pub(super) fn user_file(sb: &Sandbox, text: &str) {
    let dir = sb.path("home/.config/rounds");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

pub(super) fn project_file(sb: &Sandbox, text: &str) {
    std::fs::write(sb.ws().join(".rounds.toml"), text).unwrap();
}

/// The start line of a run with `args`, against a fresh mock.
pub(super) fn start_line(sb: &Sandbox, args: &[&str]) -> Value {
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .args(args)
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    sb.transcript()[0].clone()
}

fn max_rounds(start: &Value) -> u64 {
    start["limits"]["max_rounds"].as_u64().unwrap()
}

#[test]
fn files_layer_under_profiles_overrides_env_and_flags() {
    let sb = Sandbox::new();
    user_file(
        &sb,
        "max-rounds = 7\ntool-timeout = 12\nallow = [\"bash\", \"write_file\"]\n\
         [profile.ci]\nmax-rounds = 9\n",
    );
    assert_eq!(max_rounds(&start_line(&sb, &[])), 7, "the user file");
    assert_eq!(
        max_rounds(&start_line(&sb, &["--profile", "ci"])),
        9,
        "the profile"
    );
    project_file(&sb, "max-rounds = 3\n");
    let start = start_line(&sb, &[]);
    assert_eq!(max_rounds(&start), 3, "the project file over the user file");
    assert_eq!(
        start["limits"]["tool_timeout_secs"], 12.0,
        "the user file still counts"
    );
    let tools = start["tools"].to_string();
    assert!(
        tools.contains("bash") && tools.contains("write_file"),
        "{tools}"
    );
    assert_eq!(
        max_rounds(&start_line(&sb, &["--profile", "ci"])),
        3,
        "the project's tighter limit over the profile's"
    );
    assert_eq!(
        max_rounds(&start_line(&sb, &["-c", "max-rounds=4"])),
        4,
        "-c"
    );
    assert_eq!(
        max_rounds(&start_line(
            &sb,
            &["--max-rounds", "5", "-c", "max-rounds=4"]
        )),
        5,
        "the flag"
    );

    // The environment beats the files.
    project_file(&sb, "model = \"anthropic/from-the-file\"\n");
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .env("ROUNDS_MODEL", "anthropic/from-env")
        .args(["--no-transcript", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests()[0].json()["model"], "from-env");
    // A file's --transcript does not fight the command line's --no-transcript.
    user_file(&sb, "transcript = \"t.jsonl\"\n");
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).args(["--no-transcript", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!sb.ws().join("t.jsonl").exists());
}

#[test]
fn mistakes_in_settings_name_the_file_and_line() {
    let sb = Sandbox::new();
    project_file(&sb, "model = \"x/y\"\n\nmax_rounds = 3\n");
    let out = run(sb.rounds().arg("go"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let file = format!(
        "{}:3: unknown setting \"max_rounds\"",
        sb.ws().join(".rounds.toml").display()
    );
    assert!(out.stderr.contains(&file), "{}", out.stderr);
    assert!(
        out.stderr.contains("did you mean \"max-rounds\""),
        "{}",
        out.stderr
    );

    project_file(&sb, "");
    let out = run(sb.rounds().args(["--profile", "nope", "go"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no [profile.nope]"), "{}", out.stderr);
    let out = run(sb.rounds().args(["-c", "bogus=1", "go"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("-c bogus: unknown setting"),
        "{}",
        out.stderr
    );
    // A bad value is clap's to refuse, as for a flag.
    project_file(&sb, "max-rounds = \"many\"\n");
    let out = run(sb.rounds().arg("go"));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("many"), "{}", out.stderr);
}

#[test]
fn rounds_config_shows_each_value_and_where_it_comes_from() {
    let sb = Sandbox::new();
    user_file(
        &sb,
        "tool-timeout = 12\n[alias]\nfast = \"anthropic/claude-haiku-4-5\"\n",
    );
    project_file(&sb, "\nmax-rounds = 3\n");
    let out = run(sb.rounds().args(["config", "-c", "max-tokens=100"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let project = format!(
        "# {}:2 (tighter than 25, the default)",
        sb.ws().join(".rounds.toml").display()
    );
    let line = |key: &str| -> String {
        out.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in {}", out.stdout))
            .to_owned()
    };
    assert!(
        line("max-rounds").starts_with("max-rounds = 3") && line("max-rounds").ends_with(&project),
        "{}",
        line("max-rounds")
    );
    assert!(
        line("tool-timeout").contains("config.toml:1"),
        "{}",
        line("tool-timeout")
    );
    assert!(
        line("max-tokens").ends_with("# -c"),
        "{}",
        line("max-tokens")
    );
    assert!(
        line("idle-timeout").ends_with("# default"),
        "{}",
        line("idle-timeout")
    );
    assert!(
        out.stdout
            .contains("[alias]\nfast = \"anthropic/claude-haiku-4-5\""),
        "{}",
        out.stdout
    );
}

#[test]
fn aliases_name_models_and_append_system_prompt_keeps_the_built_in_one() {
    let sb = Sandbox::new();
    user_file(&sb, "[alias]\nfast = \"anthropic/claude-haiku-4-5\"\n");
    for (alias, model) in [
        ("sonnet", "claude-sonnet-4-5"),
        ("fast", "claude-haiku-4-5"),
    ] {
        let server = MockServer::start(vec![sse::answer("ok")]);
        let out = run(sb
            .anthropic(&server)
            .args(["-m", alias, "--no-transcript", "go"]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(server.requests()[0].json()["model"], model);
    }
    std::fs::write(sb.path("rules.md"), "Rule two: be brief.\n").unwrap();
    let rules = format!("@{}", sb.path("rules.md").display());
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).args([
        "--no-transcript",
        "--no-cache",
        "--append-system-prompt",
        "Rule one: cite files.",
        "--append-system-prompt",
        &rules,
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = server.requests()[0].json()["system"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.starts_with("You are rounds"), "{system}");
    assert!(
        system.contains("Rule one: cite files.\n\nRule two: be brief."),
        "{system}"
    );
}

#[test]
fn rounds_config_prints_a_settings_file_that_reads_back_as_the_same_settings() {
    // Values TOML would misread if written bare or quoted as JSON: a float word that is no
    // TOML float, text with a quote and a DEL, an alias key with a dot (bare, a table).
    let first = Sandbox::new();
    user_file(
        &first,
        "budget-usd = \"infinity\"\ntemperature = \"0.50\"\nsystem = \"say \\\"hi\\\"\\u007f\"\n\
         allow = [\"bash:git *\", \"read\"]\n[alias]\n\"gpt.5\" = \"openai/gpt-5\"\n",
    );
    let out = run(first.rounds().arg("config"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown: toml::Table = match toml::from_str(&out.stdout) {
        Ok(table) => table,
        Err(e) => panic!("{e}\n{}", out.stdout),
    };
    assert_eq!(shown["budget-usd"].as_str(), Some("infinity"), "{shown:?}");
    assert_eq!(shown["system"].as_str(), Some("say \"hi\"\u{7f}"));
    assert_eq!(shown["alias"]["gpt.5"].as_str(), Some("openai/gpt-5"));
    // Pasted as a settings file, the output is the same settings again.
    let second = Sandbox::new();
    user_file(&second, &out.stdout);
    let again = run(second.rounds().arg("config"));
    assert_eq!(again.code, 0, "{}", again.stderr);
    let reread: toml::Table = toml::from_str(&again.stdout).unwrap();
    assert_eq!(reread, shown, "{}", again.stdout);
}

/// `-c edit=true` is how a switch reads in a file (`edit = true`); `-c edit=false` leaves it off,
/// and a value that is neither is refused rather than dropped.
#[test]
fn a_switch_set_with_c_is_on_for_true_off_for_false_and_refused_otherwise() {
    let sb = Sandbox::new();
    let offered = |start: &Value| start["tools"].to_string().contains("write_file");
    assert!(
        offered(&start_line(&sb, &["-c", "edit=true"])),
        "-c edit=true"
    );
    assert!(
        !offered(&start_line(&sb, &["-c", "edit=false"])),
        "-c edit=false"
    );
    assert!(!offered(&start_line(&sb, &[])), "control: no preset");
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).args(["-c", "edit=yes", "go"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("edit"), "{}", out.stderr);
    assert!(
        server.requests().is_empty(),
        "a refused value sent a request"
    );
}
