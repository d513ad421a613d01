//! Fitting rounds into shells and CI: completions, the man page, `rounds help`, the GitHub
//! step summary, and the build and install settings (the workflows run in `workflows.rs`).

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;

const SUBCOMMANDS: [&str; 10] = [
    "tools",
    "export",
    "config",
    "batch",
    "runs",
    "show",
    "models",
    "doctor",
    "completions",
    "man",
];

#[test]
fn completions_cover_every_subcommand_for_each_shell() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = run(sb.rounds().args(["completions", shell]));
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        for name in SUBCOMMANDS {
            assert!(out.stdout.contains(name), "{shell} lacks {name}");
        }
        assert!(out.stdout.contains("output-schema"), "{shell}");
        // batch's own flags, which only its own parser knows.
        assert!(out.stdout.contains("job-budget-tokens"), "{shell}");
    }
    let out = run(sb.rounds().args(["completions", "tcsh"]));
    assert_eq!(out.code, 2);
}

#[test]
fn the_man_page_is_roff_and_documents_the_flags() {
    let sb = Sandbox::new();
    let out = run(sb.rounds().arg("man"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = out.stdout;
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{}", &page[..80]);
    assert!(page.contains("\n.TH rounds 1 "), "{}", &page[..200]);
    assert!(page.contains(".SH NAME\nrounds"));
    assert!(page.contains("\\-\\-output\\-schema"));
    // One page: each subcommand has its section there, not a page of its own.
    for name in SUBCOMMANDS {
        let section = format!("\n.SH \"ROUNDS {}\"\n", name.to_uppercase());
        assert!(page.contains(&section), "{name}");
    }
    // batch parses its own flags: its section has them, not the top-level parser's stub.
    assert!(page.contains("\\-\\-job\\-budget\\-tokens"));
    assert!(!page.contains("rounds\\-runs(1)"));
    assert_eq!(page.matches(".ds Aq \\(aq").count(), 1);
}

#[test]
fn help_subcommand_prints_what_dash_dash_help_prints() {
    let sb = Sandbox::new();
    let pairs: [(&[&str], &[&str]); 5] = [
        (&["help"], &["--help"]),
        (&["help", "runs"], &["runs", "--help"]),
        (&["help", "show"], &["show", "--help"]),
        (&["help", "completions"], &["completions", "--help"]),
        (&["help", "batch"], &["batch", "--help"]),
    ];
    for (help, flag) in pairs {
        let (a, b) = (run(sb.rounds().args(help)), run(sb.rounds().args(flag)));
        assert_eq!((a.code, b.code), (0, 0), "{help:?}");
        assert_eq!(a.stdout, b.stdout, "{help:?}");
    }
}

/// The step summary file after one run of `rounds` with `answer`.
fn summary_after(sb: &Sandbox, replies: Vec<Reply>, args: &[&str]) -> (i32, String) {
    let file = sb.path("summary.md");
    let server = MockServer::start(replies);
    let out = run(sb
        .anthropic(&server)
        .env("GITHUB_STEP_SUMMARY", &file)
        .args(args));
    (out.code, std::fs::read_to_string(&file).unwrap_or_default())
}

#[test]
fn the_step_summary_is_appended_and_a_hostile_answer_stays_in_its_fence() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("summary.md"), "# An earlier step\n").unwrap();
    let hostile = "Done.\n```\n</details>\n<script>alert(1)</script>\n`````\n# Heading";
    let (code, md) = summary_after(&sb, vec![sse::answer(hostile)], &["fix it"]);
    assert_eq!(code, 0);
    assert!(md.starts_with("# An earlier step\n\n### ✅ rounds: completed (exit 0)\n"));
    for line in [
        "- **Prompt:** `fix it`",
        "- **Model:** `anthropic/claude-sonnet-4-5`",
        "- **Rounds:** 1",
        "- **Tool calls:** 0",
        "- **Tokens:** 1 in / 1 out",
    ] {
        assert!(md.contains(&format!("\n{line}\n")), "{line}\n{md}");
    }
    // The answer sits in a fence of six backticks (longer than its five), inside <details>.
    let fence = "``````";
    let open = format!("<details><summary>Final answer (6 lines)</summary>\n\n{fence}text\n");
    let at = md.find(&open).unwrap_or_else(|| panic!("{md}")) + open.len();
    let end = md[at..].find(&format!("\n{fence}\n")).unwrap() + at;
    assert_eq!(&md[at..end], hostile);
    assert!(md[end..].starts_with(&format!("\n{fence}\n\n</details>\n")));
    assert_eq!(md.matches(fence).count(), 2);

    // A second run appends; one that hits a limit and called a tool it was not offered says so.
    let call = || {
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "bash", r#"{"command":"ls"}"#)],
            "tool_use",
            1,
            1,
        ))
    };
    let (code, md) = summary_after(&sb, vec![call(), call()], &["--max-rounds", "1", "go"]);
    assert_eq!(code, 3);
    assert_eq!(md.matches("### ").count(), 2, "{md}");
    assert!(md.contains("### ⚠️ rounds: max_rounds (exit 3)"), "{md}");
    assert!(
        md.contains("- **Tool calls:** 1, 1 failed (1 not offered)"),
        "{md}"
    );
}

#[test]
fn the_step_summary_flag_names_the_file_and_usage_errors_are_summarized_too() {
    let sb = Sandbox::new();
    let file = sb.path("flag.md");
    let out = run(sb
        .rounds()
        .arg("--step-summary")
        .arg(&file)
        .args(["-m", "nowhere/model", "hi"]));
    assert_eq!(out.code, 2);
    let md = std::fs::read_to_string(&file).unwrap();
    assert!(md.contains("### ❌ rounds: usage (exit 2)"), "{md}");
    assert!(
        md.contains("**Error:**\n\n```text\nunknown provider"),
        "{md}"
    );
}

#[test]
fn the_readme_opens_with_an_install_section_that_matches_the_build_settings() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap();
    let manifest: toml::Table = toml::from_str(&read("Cargo.toml")).unwrap();
    let readme = read("README.md");
    assert!(
        readme.lines().take(12).any(|l| l == "## Install"),
        "the install section must come first"
    );
    let install = &readme[..readme.find("## Quick start").unwrap()];
    for needed in [
        "cargo install --locked --path .",
        "cargo install --locked --git",
        "pipx install .",
        "pipx install rounds",
        "scripts/dist.sh",
        "**Platforms**",
        "rounds completions bash",
        "rounds man",
    ] {
        assert!(install.contains(needed), "{needed}");
    }
    let msrv = manifest["workspace"]["package"]["rust-version"]
        .as_str()
        .unwrap();
    assert!(
        install.contains(&format!("**Rust**: {msrv} or newer")),
        "{msrv}"
    );
    // An ordinary release profile (no whole-program LTO, symbols kept for backtraces); the
    // shipped binaries' profile adds LTO and strips.
    let profiles = manifest["profile"].as_table().unwrap();
    let release = profiles["release"].as_table().unwrap();
    assert!(!release.contains_key("lto") && !release.contains_key("strip"));
    let dist = profiles["dist"].as_table().unwrap();
    assert_eq!(dist["inherits"].as_str(), Some("release"));
    assert_eq!(dist["lto"].as_str(), Some("fat"));
    assert_eq!(dist["strip"].as_str(), Some("symbols"));
    // The wheel holds the binary, built with that profile.
    let pyproject: toml::Table = toml::from_str(&read("pyproject.toml")).unwrap();
    assert_eq!(pyproject["project"]["name"], manifest["package"]["name"]);
    let maturin = pyproject["tool"]["maturin"].as_table().unwrap();
    assert_eq!(maturin["bindings"].as_str(), Some("bin"));
    assert_eq!(maturin["profile"].as_str(), Some("dist"));
    assert_eq!(maturin["locked"].as_bool(), Some(true));
    // ...linked for any glibc from 2.34, not only where it was built (build.rs).
    let config = maturin["config"].as_array().unwrap();
    assert!(
        config
            .iter()
            .any(|c| c.as_str() == Some("env.ROUNDS_NO_RELR = \"1\""))
    );
    let backend = pyproject["build-system"]["build-backend"].as_str();
    assert_eq!(backend, Some("maturin"));
}

/// No link setting makes the binary position-dependent: the kernel can place it anywhere
/// (address space layout randomization), as it does every library it loads.
#[test]
fn the_binary_is_position_independent() {
    let bin = std::fs::read(env!("CARGO_BIN_EXE_rounds")).unwrap();
    assert_eq!(&bin[..4], b"\x7fELF");
    // e_type: 2 is a fixed-address executable, 3 a position-independent one (or a library).
    let e_type = u16::from_le_bytes([bin[16], bin[17]]);
    assert_eq!(e_type, 3);
}

/// build.rs links the binary with packed relative relocations where the toolchain and C
/// library can run it: then the loader reads a few kilobytes of them, not a megabyte.
#[test]
fn the_binary_packs_its_relocations_where_the_loader_can_read_them() {
    use object::{Object, ObjectSection};
    let data = std::fs::read(env!("CARGO_BIN_EXE_rounds")).unwrap();
    let binary = object::File::parse(&*data).unwrap();
    let size = |name: &str| binary.section_by_name(name).map_or(0, |s| s.size());
    let (packed, unpacked) = (size(".relr.dyn"), size(".rela.dyn"));
    if option_env!("ROUNDS_RELR").is_none() {
        eprintln!("skipped: build.rs found no support for packed relocations here");
        // Linked as before: the control that the sizes below tell the two apart.
        assert!(packed == 0 && unpacked > 100_000, "{packed} {unpacked}");
        return;
    }
    assert!(packed > 0, "no .relr.dyn section");
    // Each unpacked record is 24 bytes; a few hundred (symbols the loader must look up)
    // remain, against ~50,000 relative ones before.
    assert!(unpacked < 64 * 1024, ".rela.dyn is {unpacked} bytes");
}
