//! `--help` and `-h` are part of the product: a change to them must be a visible diff. The
//! snapshots in tests/snapshots/ are compared byte for byte; regenerate them with
//! `ROUNDS_UPDATE_SNAPSHOTS=1 cargo test --test integration help`, and read the diff.

use crate::common::{Sandbox, run};

fn snapshot(name: &str, args: &[&str]) {
    let sb = Sandbox::new();
    let out = run(sb.rounds().args(args));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("ROUNDS_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &out.stdout).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        out.stdout == expected,
        "{name} changed; if that is intended, regenerate it (see this file's doc) and review:\n{}",
        out.stdout
    );
}

#[test]
fn long_help_is_as_recorded() {
    snapshot("help.txt", &["--help"]);
}

#[test]
fn short_help_is_as_recorded_and_short() {
    snapshot("help-short.txt", &["-h"]);
    let sb = Sandbox::new();
    let short = run(sb.rounds().arg("-h")).stdout;
    let long = run(sb.rounds().arg("--help")).stdout;
    assert!(short.lines().count() * 2 < long.lines().count());
    // Grouped under headings, with readable placeholders.
    for heading in [
        "Prompt:",
        "Model:",
        "Tools & allowlist:",
        "Limits:",
        "Output:",
        "Store:",
        "MCP:",
        "Sandbox:",
    ] {
        assert!(long.contains(&format!("\n{heading}\n")), "{heading}");
    }
    assert!(long.contains("--on-max-rounds <stop|summarize>"));
    assert!(!long.contains("<ON_MAX_ROUNDS>"));
}

#[test]
fn help_subcommand_works_like_the_flag() {
    let sb = Sandbox::new();
    let via_help = run(sb.rounds().args(["help", "export"]));
    let via_flag = run(sb.rounds().args(["export", "--help"]));
    assert_eq!(via_help.code, 0);
    assert_eq!(via_help.stdout, via_flag.stdout);
    assert!(
        via_flag.stdout.contains("RUN_ID.jsonl"),
        "{}",
        via_flag.stdout
    );
}
