//! What people look for on day one: `rounds models` (providers, aliases, context windows,
//! prices), `-m` completing in the shells, a did-you-mean for a mistyped model, and
//! `rounds config` saying which model a run uses and whether its key is found.

use crate::common::mock::MockServer;
use crate::common::{Sandbox, run, sse};
use serde_json::Value;

#[test]
fn models_lists_providers_aliases_and_prices_as_text_or_json() {
    let sb = Sandbox::new();
    let config = sb.path("home/.config/rounds");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[alias]\nlocal = \"ollama/qwen3\"\n",
    )
    .unwrap();
    let out = run(sb.rounds().arg("models"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for word in [
        "anthropic",
        "vllm",
        "OPENAI_API_KEY",
        "sonnet",
        "ollama/qwen3",
        "200000",
    ] {
        assert!(out.stdout.contains(word), "{word}: {}", out.stdout);
    }
    let out = run(sb.rounds().args(["models", "-o", "json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listing: Value = serde_json::from_str(&out.stdout).unwrap();
    let alias = |name: &str| {
        listing["aliases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["alias"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {listing}"))
    };
    let sonnet = alias("sonnet");
    assert_eq!(sonnet["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(sonnet["from"], "built-in");
    assert_eq!(sonnet["context_window"], 200_000);
    assert_eq!(sonnet["input_usd"], 3.0);
    assert_eq!(alias("local")["from"], "settings");
    assert_eq!(alias("local")["input_usd"], Value::Null);
    let providers = listing["providers"].as_array().unwrap();
    assert!(providers.iter().any(|p| p["name"] == "gemini"
        && p["key_variable"] == "GEMINI_API_KEY"
        && p["url_variables"] == serde_json::json!(["GEMINI_BASE_URL"])));
    assert!(providers.iter().any(|p| {
        p["name"] == "bedrock"
            && p["url_variables"]
                == serde_json::json!(["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"])
            && p["credentials"]
                .as_str()
                .is_some_and(|c| c.contains("AWS credential chain"))
    }));
    assert!(
        providers
            .iter()
            .any(|p| p["name"] == "anthropic" && p["credentials"].is_null())
    );
    assert!(listing["models"].as_array().unwrap().len() > 10);

    // --prices adds (and comes first), as for a run.
    sb.write(
        "p.toml",
        "[[model]]\nmatch = \"my-model*\"\ninput = 1.5\noutput = 2.5\ncontext_window = 4096\n",
    );
    let out = run(sb
        .rounds()
        .args(["models", "-o", "json", "--prices", "p.toml"]));
    let listing: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(listing["models"][0]["match"], "my-model*");
    assert_eq!(listing["models"][0]["context_window"], 4096);
}

#[test]
fn completion_scripts_offer_aliases_and_providers_for_dash_m_without_enforcing_them() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = run(sb.rounds().args(["completions", shell]));
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        for value in ["sonnet", "flash", "anthropic/claude-sonnet-4-5", "ollama/"] {
            assert!(out.stdout.contains(value), "{shell} lacks {value}");
        }
    }
    // Offered, not enforced: a model no list names still runs.
    let server = MockServer::start(vec![sse::answer("fine")]);
    let out =
        run(sb
            .anthropic(&server)
            .args(["-m", "anthropic/claude-next-9", "--no-transcript", "hi"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "fine\n"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests()[0].json()["model"], "claude-next-9");
}

#[test]
fn a_mistyped_model_or_provider_gets_a_did_you_mean_and_no_request() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("never")]);
    let table = [
        ("sonet", Some("did you mean sonnet?")),
        ("gtp", Some("did you mean gpt?")),
        ("opuss", Some("did you mean opus?")),
        (
            "antropic/claude-sonnet-4-5",
            Some("did you mean anthropic?"),
        ),
        ("llama3", None),
        ("zzzzzz/model", None),
    ];
    for (model, hint) in table {
        let out = run(sb.anthropic(&server).args(["-m", model, "hi"]));
        assert_eq!(out.code, 2, "{model}: {}", out.stderr);
        match hint {
            Some(hint) => assert!(out.stderr.contains(hint), "{model}: {}", out.stderr),
            None => assert!(!out.stderr.contains("did you mean"), "{}", out.stderr),
        }
    }
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn config_shows_the_model_a_run_uses_and_where_its_key_is_without_its_value() {
    let sb = Sandbox::new();
    let out = run(sb.rounds().arg("config"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("model = \"anthropic/claude-sonnet-4-5\"  # default"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("# key (anthropic): not found"),
        "{}",
        out.stdout
    );

    let secret = "sk-ant-doctor-0123456789";
    let out = run(sb
        .rounds()
        .env("ROUNDS_MODEL", "haiku")
        .env("ANTHROPIC_API_KEY", secret)
        .arg("config"));
    assert!(
        out.stdout
            .contains("# model: haiku is the built-in alias of anthropic/claude-haiku-4-5"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("# key (anthropic): found in ANTHROPIC_API_KEY"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains(secret) && !out.stderr.contains(secret));

    let key_file = sb.path("key");
    std::fs::write(&key_file, format!("{secret}\n")).unwrap();
    let out =
        run(sb
            .rounds()
            .env("OPENAI_API_KEY_FILE", &key_file)
            .args(["config", "-c", "model=gpt"]));
    let said = format!("found in OPENAI_API_KEY_FILE ({})", key_file.display());
    assert!(out.stdout.contains(&said), "{}", out.stdout);
    assert!(!out.stdout.contains(secret));
}
