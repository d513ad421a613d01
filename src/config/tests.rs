use super::*;
use crate::providers::Wire;
use clap::Parser;
use pretty_assertions::assert_eq;
use std::collections::HashMap;

struct World {
    env: HashMap<String, String>,
    stdin: StdinKind,
    stdin_text: String,
    stdin_reads: usize,
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        World {
            env: HashMap::from([("ANTHROPIC_API_KEY".into(), "sk-test".into())]),
            stdin: StdinKind::Nothing,
            stdin_text: String::new(),
            stdin_reads: 0,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn resolve(&mut self, args: &[&str]) -> Result<Config, ConfigError> {
        let cli =
            Cli::try_parse_from(std::iter::once("rounds").chain(args.iter().copied())).unwrap();
        let env = self.env.clone();
        let env = move |k: &str| env.get(k).cloned();
        let text = self.stdin_text.clone();
        let reads = &mut self.stdin_reads;
        let mut read = || {
            *reads += 1;
            Ok(text.clone())
        };
        let env_all = self.env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        let inputs = Inputs {
            env: &env,
            env_all,
            stdin_kind: self.stdin,
            read_stdin: &mut read,
            cwd: self.dir.path().to_owned(),
            aliases: Default::default(),
            agents: Vec::new(),
            transcript: None,
        };
        Config::resolve(cli, inputs)
    }
}

#[test]
fn words_become_the_prompt_and_a_terminal_stdin_is_never_read() {
    let mut w = World::new();
    w.stdin = StdinKind::Terminal;
    let c = w.resolve(&["summarize", "the", "repo"]).unwrap();
    assert_eq!(c.prompt, "summarize the repo");
    assert_eq!(w.stdin_reads, 0);
}

#[test]
fn piped_stdin_is_the_prompt_or_its_fenced_context() {
    let mut w = World::new();
    w.stdin = StdinKind::Piped;
    w.stdin_text = "diff --git a b\n```inner```\n".into();
    let c = w.resolve(&["review", "this"]).unwrap();
    assert_eq!(
        c.prompt,
        "review this\n\n````\ndiff --git a b\n```inner```\n````"
    );
    let c = w.resolve(&[]).unwrap();
    assert_eq!(c.prompt, w.stdin_text);
    let c = w.resolve(&["-"]).unwrap();
    assert_eq!(c.prompt, w.stdin_text);
    let _ = w.resolve(&["--no-stdin", "q"]).unwrap();
    assert_eq!(w.stdin_reads, 3, "--no-stdin must not read");
}

#[test]
fn empty_prompts_are_usage_errors() {
    let mut w = World::new();
    assert!(matches!(w.resolve(&[]), Err(ConfigError::EmptyPrompt)));
    w.stdin = StdinKind::Piped;
    w.stdin_text = "  \n".into();
    assert!(matches!(w.resolve(&[]), Err(ConfigError::EmptyPrompt)));
    assert!(matches!(w.resolve(&["   "]), Err(ConfigError::EmptyPrompt)));
    w.stdin = StdinKind::Terminal;
    assert!(matches!(
        w.resolve(&["-"]),
        Err(ConfigError::StdinIsTerminal)
    ));
}

#[test]
fn prompt_file_is_read_and_a_missing_one_named() {
    let mut w = World::new();
    std::fs::write(w.dir.path().join("p.txt"), "from a file").unwrap();
    assert_eq!(w.resolve(&["-f", "p.txt"]).unwrap().prompt, "from a file");
    let err = w.resolve(&["-f", "missing.txt"]).err().expect("an error");
    assert!(
        err.to_string().starts_with("cannot read prompt file "),
        "{err}"
    );
}

#[test]
fn a_missing_key_names_the_variable_and_never_a_value() {
    let mut w = World::new();
    w.env.clear();
    w.env
        .insert("OPENAI_API_KEY".into(), "sk-secret-value".into());
    let err = w
        .resolve(&["-m", "anthropic/claude-x", "q"])
        .err()
        .expect("an error");
    assert_eq!(
        err.to_string(),
        "ANTHROPIC_API_KEY is not set: the anthropic provider needs an API key \
         (ANTHROPIC_API_KEY, ANTHROPIC_API_KEY_FILE or --api-key-file)"
    );
    w.env.clear();
    let err = w.resolve(&["-m", "gpt-4.1", "q"]).err().expect("an error");
    assert!(
        err.to_string().starts_with("OPENAI_API_KEY is not set"),
        "{err}"
    );
}

#[test]
fn models_resolve_to_providers() {
    let mut w = World::new();
    w.env.insert("OPENAI_API_KEY".into(), "k".into());
    let c = w.resolve(&["-m", "claude-sonnet-4-5", "q"]).unwrap();
    assert_eq!(
        (c.provider.name(), c.model.as_str()),
        ("anthropic", "claude-sonnet-4-5")
    );
    let c = w.resolve(&["-m", "o3-mini", "q"]).unwrap();
    assert_eq!(c.provider.name(), "openai");
    let c = w.resolve(&["-m", "ollama/qwen3:8b", "q"]).unwrap();
    assert_eq!(
        (c.provider.name(), c.model.as_str()),
        ("ollama", "qwen3:8b")
    );
    let ProviderChoice::Api { base_url, key, .. } = &c.provider else {
        panic!()
    };
    assert_eq!(
        (base_url.as_str(), key),
        ("http://127.0.0.1:11434/v1", &None)
    );
    let c = w
        .resolve(&["-m", "vllm/meta-llama/Llama-3-8B", "q"])
        .unwrap();
    assert_eq!(c.model, "meta-llama/Llama-3-8B");
    assert!(matches!(
        w.resolve(&["-m", "nope/x", "q"]),
        Err(ConfigError::UnknownProvider(..))
    ));
    assert!(matches!(
        w.resolve(&["-m", "llama3", "q"]),
        Err(ConfigError::AmbiguousModel(..))
    ));
    assert!(matches!(
        w.resolve(&["-m", "anthropic/x", "--base-url", "ftp://h", "q"]),
        Err(ConfigError::BaseUrl { .. })
    ));
}

#[test]
fn model_options_are_kept_or_refused_before_any_request() {
    let mut w = World::new();
    let c = w
        .resolve(&["-m", "claude-x", "--thinking-budget", "3000", "q"])
        .unwrap();
    let ProviderChoice::Api { options, .. } = &c.provider else {
        panic!()
    };
    assert_eq!(options.thinking_budget, Some(3000));
    let err = w
        .resolve(&[
            "-m",
            "claude-x",
            "--reasoning-effort",
            "high",
            "--max-tokens",
            "20000",
            "q",
        ])
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "--max-tokens 20000 must be larger than the thinking budget of 24576 tokens: Anthropic \
         counts thinking within max_tokens"
    );
}

#[test]
fn the_openai_api_is_picked_by_model_or_flag() {
    let mut w = World::new();
    w.env.insert("OPENAI_API_KEY".into(), "k".into());
    let api = |c: &Config| match &c.provider {
        ProviderChoice::Api {
            entry,
            wire: Wire::Chat,
            ..
        } => format!("{} chat", entry.name),
        ProviderChoice::Api {
            entry,
            wire: Wire::Responses,
            ..
        } => format!("{} responses", entry.name),
        _ => panic!(),
    };
    for (args, want) in [
        (&["-m", "o3-mini"][..], "openai responses"),
        (&["-m", "openai/gpt-5.1"], "openai responses"),
        (&["-m", "openai/gpt-4.1"], "openai chat"),
        (&["-m", "openai/o3", "--api", "chat"], "openai chat"),
        (
            &["-m", "openai-responses/gpt-4.1"],
            "openai-responses responses",
        ),
        (&["-m", "ollama/gpt-oss:20b"], "ollama chat"),
        (
            &["-m", "ollama/gpt-oss:20b", "--api", "responses"],
            "ollama responses",
        ),
    ] {
        let c = w.resolve(&[args, &["q"]].concat()).unwrap();
        assert_eq!(api(&c), want, "{args:?}");
    }
    w.env.remove("OPENAI_API_KEY");
    let err = w
        .resolve(&["-m", "openai-responses/o3", "q"])
        .err()
        .unwrap();
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
}

#[test]
fn base_url_flag_beats_env_which_beats_default() {
    let mut w = World::new();
    let url = |c: &Config| match &c.provider {
        ProviderChoice::Api { base_url, .. } => base_url.clone(),
        _ => panic!(),
    };
    assert_eq!(
        url(&w.resolve(&["q"]).unwrap()),
        "https://api.anthropic.com"
    );
    w.env
        .insert("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9".into());
    assert_eq!(url(&w.resolve(&["q"]).unwrap()), "http://127.0.0.1:9");
    assert_eq!(
        url(&w.resolve(&["--base-url", "http://h:1", "q"]).unwrap()),
        "http://h:1"
    );
}

#[test]
fn transcript_defaults_under_rounds_home() {
    let mut w = World::new();
    let base = w.dir.path().to_owned();
    w.env.insert(
        "ROUNDS_HOME".into(),
        base.join("state/r").display().to_string(),
    );
    let c = w.resolve(&["q"]).unwrap();
    let path = c.transcript.unwrap().path();
    assert!(
        path.starts_with(base.join("state/r/runs")),
        "{}",
        path.display()
    );
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        format!("{}.jsonl", c.run_id)
    );
    // Its directory is made before the run, private; the outputs directory beside it too.
    let day = path.parent().unwrap();
    assert!(day.is_dir());
    assert!(path.with_extension("outputs").is_dir());
    assert!(
        w.resolve(&["--no-transcript", "q"])
            .unwrap()
            .transcript
            .is_none()
    );
    w.env.remove("ROUNDS_HOME");
    w.env
        .insert("HOME".into(), base.join("home/u").display().to_string());
    assert!(
        w.resolve(&["q"])
            .unwrap()
            .transcript
            .unwrap()
            .path()
            .starts_with(base.join("home/u/.local/state/rounds/runs"))
    );
}

#[test]
fn a_link_in_the_transcript_path_is_refused_before_the_run_but_rounds_home_may_be_behind_one() {
    let mut w = World::new();
    let base = w.dir.path().to_owned();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), base.join("link")).unwrap();
    let err = w
        .resolve(&["--transcript", "link/t.jsonl", "q"])
        .err()
        .unwrap();
    assert!(
        matches!(err, ConfigError::Output { .. }) && err.to_string().contains("symbolic link"),
        "{err}"
    );
    let err = w
        .resolve(&["--output-last-message", "link/answer.txt", "q"])
        .err()
        .unwrap();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    // The user's own state directory behind their own link is theirs to set up.
    w.env.insert(
        "ROUNDS_HOME".into(),
        base.join("link/state").display().to_string(),
    );
    let c = w.resolve(&["q"]).unwrap();
    assert!(c.transcript.unwrap().path().starts_with(elsewhere.path()));
}

#[test]
fn bad_workspaces_are_usage_errors_and_rules_wait_for_every_tool_name() {
    let mut w = World::new();
    assert!(matches!(
        w.resolve(&["-w", "does-not-exist", "q"]),
        Err(ConfigError::Workspace(_))
    ));
    // Allow rules may name tools of MCP servers: they are checked once the tools are assembled.
    let c = w.resolve(&["-a", "srv__*,red_file", "q"]).unwrap();
    assert_eq!(c.tools.allow, ["srv__*,red_file"]);
}

#[test]
fn tool_environment_is_scrubbed_and_keys_cannot_be_passed() {
    let mut w = World::new();
    w.env.insert("PATH".into(), "/bin".into());
    w.env.insert("AWS_SECRET_ACCESS_KEY".into(), "aws".into());
    w.env.insert("MY_TOKEN".into(), "t".into());
    w.env.insert("LC_ALL".into(), "C".into());
    let c = w.resolve(&["--tool-env", "MY_TOKEN", "q"]).unwrap();
    let names: Vec<_> = c
        .tool_settings
        .env
        .iter()
        .map(|(k, _)| k.to_str().unwrap())
        .collect();
    assert_eq!(names, ["LC_ALL", "MY_TOKEN", "PATH"]);
    let err = w
        .resolve(&["--tool-env", "ANTHROPIC_API_KEY", "q"])
        .err()
        .expect("an error");
    assert_eq!(
        err.to_string(),
        "--tool-env ANTHROPIC_API_KEY: provider keys and credentials are never passed to tools"
    );
}

#[test]
fn gemini_models_need_gemini_api_key_and_take_its_base_url() {
    let mut w = World::new();
    for spec in ["gemini/gemini-2.5-flash", "gemini-2.5-flash"] {
        let err = w.resolve(&["-m", spec, "q"]).err().unwrap();
        assert!(
            matches!(
                err,
                ConfigError::MissingKey {
                    var: "GEMINI_API_KEY",
                    provider: "gemini"
                }
            ),
            "{err}"
        );
    }
    w.env.insert("GEMINI_API_KEY".into(), "g".into());
    let c = w.resolve(&["-m", "gemini/gemini-2.5-flash", "q"]).unwrap();
    assert_eq!(
        (c.provider.name(), c.model.as_str()),
        ("gemini", "gemini-2.5-flash")
    );
    let ProviderChoice::Api { base_url, key, .. } = &c.provider else {
        panic!()
    };
    assert_eq!(
        (base_url.as_str(), key.as_deref().unwrap()),
        ("https://generativelanguage.googleapis.com", "g")
    );
    w.env
        .insert("GEMINI_BASE_URL".into(), "http://env:1".into());
    let c = w.resolve(&["-m", "gemini-2.5-pro", "q"]).unwrap();
    assert!(c.provider.base_url() == Some("http://env:1"));
    let c = w
        .resolve(&["-m", "gemini-2.5-pro", "--base-url", "http://flag:2", "q"])
        .unwrap();
    assert!(c.provider.base_url() == Some("http://flag:2"));
}

#[test]
fn keys_come_from_a_file_when_asked_and_a_bad_file_is_named() {
    let mut w = World::new();
    w.env.clear();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, "sk-from-file\n").unwrap();
    let key = |c: &Config| match &c.provider {
        ProviderChoice::Api { key: Some(key), .. } => key.clone(),
        _ => panic!(),
    };
    let path = file.to_str().unwrap();
    w.env
        .insert("ANTHROPIC_API_KEY_FILE".into(), path.to_owned());
    assert_eq!(key(&w.resolve(&["q"]).unwrap()), "sk-from-file");
    // The variable itself wins over its _FILE; the flag wins over both.
    w.env.insert("ANTHROPIC_API_KEY".into(), "sk-env".into());
    assert_eq!(key(&w.resolve(&["q"]).unwrap()), "sk-env");
    assert_eq!(
        key(&w.resolve(&["--api-key-file", path, "q"]).unwrap()),
        "sk-from-file"
    );
    std::fs::write(&file, "two\nlines\n").unwrap();
    let err = w.resolve(&["--api-key-file", path, "q"]).err().unwrap();
    assert!(matches!(err, ConfigError::KeyFile(_)), "{err}");
    assert!(!err.to_string().contains("two"), "{err}");
    let err = w
        .resolve(&["--api-key-file", "/nonexistent/key", "q"])
        .err()
        .unwrap();
    assert!(err.to_string().contains("/nonexistent/key"), "{err}");
}
