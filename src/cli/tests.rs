use super::*;

#[test]
fn parses_words_rules_and_limits() {
    let cli = Cli::try_parse_from([
        "rounds",
        "-m",
        "openai/gpt-4.1",
        "-a",
        "bash(git *)",
        "--allow",
        "grep",
        "--max-rounds",
        "3",
        "fix",
        "the",
        "build",
    ])
    .unwrap();
    assert_eq!(cli.prompt, ["fix", "the", "build"]);
    assert_eq!(cli.tools.allow, ["bash(git *)", "grep"]);
    assert_eq!(cli.max_rounds, 3);
    assert_eq!(cli.output, OutputMode::Text);
}

#[test]
fn rejects_nonsense_limits_and_conflicts() {
    assert!(Cli::try_parse_from(["rounds", "--max-rounds", "0", "x"]).is_err());
    assert!(Cli::try_parse_from(["rounds", "--max-tokens", "0", "x"]).is_err());
    assert!(Cli::try_parse_from(["rounds", "--tool-timeout", "-1", "x"]).is_err());
    for huge in ["1e300", "inf", "NaN", "1000000001"] {
        for flag in [
            "--tool-timeout",
            "--timeout",
            "--retry-delay",
            "--idle-timeout",
        ] {
            let parsed = Cli::try_parse_from(["rounds", flag, huge, "x"]);
            assert!(parsed.is_err(), "{flag} {huge} was accepted");
        }
    }
    assert!(Cli::try_parse_from(["rounds", "--timeout", "1000000000", "x"]).is_ok());
    let cli = Cli::try_parse_from(["rounds", "--mcp-startup-timeout", "2.5", "x"]).unwrap();
    assert_eq!(cli.tools.mcp_startup_timeout, 2.5);
    assert!(Cli::try_parse_from(["rounds", "--mcp-startup-timeout", "0", "x"]).is_err());
    assert!(Cli::try_parse_from(["rounds", "-f", "p.txt", "words"]).is_err());
    assert!(Cli::try_parse_from(["rounds", "--transcript", "t", "--no-transcript"]).is_err());
    for bad in ["-0.1", "2.01", "NaN", "warm"] {
        let parsed = Cli::try_parse_from(["rounds", "--temperature", bad, "x"]);
        assert!(parsed.is_err(), "--temperature {bad} was accepted");
    }
    let cli =
        Cli::try_parse_from(["rounds", "--temperature", "0", "--api", "responses", "x"]).unwrap();
    assert_eq!((cli.temperature, cli.api), (Some(0.0), Api::Responses));
    assert!(Cli::try_parse_from(["rounds", "--reasoning-effort", "max", "x"]).is_err());
}

#[test]
fn subcommands_parse_and_share_the_tool_flags() {
    let cli = Cli::try_parse_from([
        "rounds", "tools", "-a", "bash", "--mcp", "x=srv", "-o", "json",
    ])
    .unwrap();
    let Some(Command::Tools(args)) = cli.command else {
        panic!("{cli:?}")
    };
    assert_eq!(
        (args.tools.allow, args.tools.mcp, args.output),
        (
            vec!["bash".to_owned()],
            vec!["x=srv".to_owned()],
            ListOutput::Json
        )
    );
    let cli =
        Cli::try_parse_from(["rounds", "export", "--store", "postgres://h/db", "run-1"]).unwrap();
    assert!(matches!(cli.command, Some(Command::Export(ref a)) if a.run_id == "run-1"));
    // A prompt that merely starts with other words is still a prompt.
    let cli = Cli::try_parse_from(["rounds", "list", "the", "tools"]).unwrap();
    assert!(cli.command.is_none() && cli.prompt == ["list", "the", "tools"]);
    let cli = Cli::try_parse_from(["rounds", "--", "tools", "are", "great"]).unwrap();
    assert!(cli.command.is_none() && cli.prompt == ["tools", "are", "great"]);
    for word in ["runs", "show", "completions", "man", "help"] {
        let cli = Cli::try_parse_from(["rounds", "--", word, "me"]).unwrap();
        assert!(
            cli.command.is_none() && cli.prompt == [word, "me"],
            "{word}"
        );
    }
    let cli = Cli::try_parse_from(["rounds", "runs", "--prune", "2w", "--dry-run"]).unwrap();
    let Some(Command::Runs(args)) = cli.command else {
        panic!("{cli:?}")
    };
    assert_eq!(
        (args.prune, args.dry_run),
        (Some(std::time::Duration::from_secs(14 * 86_400)), true)
    );
    let cli = Cli::try_parse_from(["rounds", "show"]).unwrap();
    assert!(matches!(cli.command, Some(Command::Show(ref a)) if a.run == "last"));
}

#[test]
fn help_is_well_formed() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}

#[test]
fn the_help_names_every_provider_and_its_key() {
    use clap::CommandFactory;
    let command = super::Cli::command();
    let model = command
        .get_arguments()
        .find(|a| a.get_id() == "model")
        .and_then(|a| a.get_long_help().or(a.get_help()).map(ToString::to_string))
        .unwrap_or_default();
    let mut after = String::new();
    if let Some(text) = command.get_after_long_help() {
        after = text.to_string();
    }
    for entry in crate::providers::PROVIDERS {
        assert!(model.contains(entry.name), "-m's help lacks {}", entry.name);
        if entry.key_required {
            assert!(
                after.contains(entry.key_var),
                "--help lacks {}",
                entry.key_var
            );
        }
    }
}
