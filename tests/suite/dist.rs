//! What a release hands out (`scripts/dist.sh`, `.github/workflows/release.yml`) and what points
//! at it (cargo-binstall's metadata in Cargo.toml). The builds themselves run in `.ci/run`
//! (`dist.sh build`, then `dist.sh check` installs them and runs the quick start): too slow for
//! a test.

use std::path::Path;
use std::process::Command;

use yaml_rust2::Yaml;

use super::workflows::{ROOT, load, scalar};
use crate::common::{Run, Sandbox, run};

fn dist(args: &[&str]) -> Run {
    run(Command::new(Path::new(ROOT).join("scripts/dist.sh")).args(args))
}

fn manifest() -> toml::Table {
    let text = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    text.parse().unwrap()
}

/// cargo-binstall's placeholders, filled as it fills them for a Linux target.
fn render(template: &str, repo: &str, version: &str, target: &str) -> String {
    let mut out = template.to_owned();
    for (name, value) in [
        ("repo", repo),
        ("name", "rounds"),
        ("version", version),
        ("target", target),
        ("bin", "rounds"),
        ("binary-ext", ""),
    ] {
        out = out.replace(&format!("{{ {name} }}"), value);
    }
    assert!(!out.contains('{'), "a placeholder left in {out}");
    out
}

#[test]
fn binstall_finds_the_archive_dist_makes_for_every_target() {
    let cargo = manifest();
    let workspace = cargo["workspace"]["package"].as_table().unwrap();
    let (version, repo) = (
        workspace["version"].as_str().unwrap(),
        workspace["repository"].as_str().unwrap(),
    );
    assert_eq!(dist(&["version"]).stdout.trim(), version);
    let meta = cargo["package"]["metadata"]["binstall"].as_table().unwrap();
    assert_eq!(meta["pkg-fmt"].as_str(), Some("tgz"));
    let targets = dist(&["targets"]).stdout;
    let targets: Vec<&str> = targets.lines().collect();
    assert_eq!(targets.len(), 4, "{targets:?}");
    for target in targets {
        let asset = dist(&["asset-name", target]);
        assert_eq!(asset.code, 0, "{}", asset.stderr);
        let asset = asset.stdout.trim();
        let url = render(meta["pkg-url"].as_str().unwrap(), repo, version, target);
        assert_eq!(
            url,
            format!("{repo}/releases/download/v{version}/{asset}"),
            "{target}"
        );
        // The binary inside: the archive's one top directory, named as the archive.
        let bin = render(meta["bin-dir"].as_str().unwrap(), repo, version, target);
        assert_eq!(
            bin,
            format!("{}/rounds", asset.strip_suffix(".tar.gz").unwrap())
        );
    }
    let unknown = dist(&["asset-name", "x86_64-apple-darwin"]);
    assert_ne!(unknown.code, 0);
    assert!(
        unknown.stderr.contains("unknown target"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn a_release_is_refused_for_a_tag_or_a_repository_that_is_not_cargo_tomls() {
    let cargo = manifest();
    let workspace = cargo["workspace"]["package"].as_table().unwrap();
    let version = workspace["version"].as_str().unwrap();
    let repo = workspace["repository"].as_str().unwrap();
    let tag = format!("v{version}");
    let ok = dist(&["check-version", &tag, repo]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    for (tag, repo, says) in [
        ("v9.9.9", repo, "is not v"),
        (version, repo, "is not v"),
        (
            &tag,
            "https://github.com/someone/fork",
            "not https://github.com/someone/fork",
        ),
    ] {
        let out = dist(&["check-version", tag, repo]);
        assert_ne!(out.code, 0, "{tag} {repo}");
        assert!(out.stderr.contains(says), "{tag} {repo}: {}", out.stderr);
    }
}

#[test]
fn the_checksums_cover_every_archive_and_wheel_in_sha256sums_format() {
    let sb = Sandbox::new();
    let dir = sb.path("dist");
    std::fs::create_dir_all(&dir).unwrap();
    let files = [
        "rounds-0.1.0-x86_64-unknown-linux-musl.tar.gz",
        "rounds-0.1.0-x86_64-unknown-linux-gnu.tar.gz",
        "rounds-0.1.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    ];
    for (i, name) in files.iter().enumerate() {
        std::fs::write(dir.join(name), format!("bytes {i}")).unwrap();
    }
    std::fs::write(dir.join("notes.txt"), "not an asset").unwrap();
    let dir_arg = dir.display().to_string();
    let out = dist(&["sums", &dir_arg]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    let names: Vec<&str> = sums.lines().map(|l| &l[66..]).collect();
    let mut sorted = files.to_vec();
    sorted.sort();
    assert_eq!(names, sorted, "{sums}");
    for line in sums.lines() {
        let (hex, sep) = (&line[..64], &line[64..66]);
        assert!(
            hex.chars().all(|c| c.is_ascii_hexdigit()) && sep == "  ",
            "{line}"
        );
    }
    // sha256sum itself agrees, and notices a changed file.
    let verify = || {
        run(Command::new("sha256sum")
            .args(["--quiet", "-c", "SHA256SUMS"])
            .current_dir(&dir))
    };
    assert_eq!(verify().code, 0);
    std::fs::write(dir.join(files[1]), "changed").unwrap();
    assert_ne!(verify().code, 0);
}

fn steps(job: &Yaml) -> &Vec<Yaml> {
    job["steps"].as_vec().unwrap()
}

#[test]
fn the_release_workflow_runs_only_dist_commands_and_pinned_actions() {
    let text =
        std::fs::read_to_string(Path::new(ROOT).join(".github/workflows/release.yml")).unwrap();
    let workflow = load(".github/workflows/release.yml");
    let tags = workflow["on"]["push"]["tags"].as_vec().unwrap();
    assert_eq!(scalar(&tags[0]), "v[0-9]+.[0-9]+.[0-9]+");
    // Nothing by default: a job that publishes asks for its own rights.
    assert!(workflow["permissions"].as_hash().unwrap().is_empty());
    let jobs = workflow["jobs"].as_hash().unwrap();
    let mut commands = Vec::new();
    for (name, job) in jobs {
        let name = scalar(name);
        for step in steps(job) {
            if let Some(script) = step["run"].as_str() {
                assert!(!script.contains("${{"), "{name}: {script}");
                for command in script.split("&&") {
                    let mut words = command.split_whitespace();
                    assert_eq!(words.next(), Some("scripts/dist.sh"), "{name}: {script}");
                    commands.push(words.next().unwrap().to_owned());
                }
            }
            if let Some(action) = step["uses"].as_str() {
                let (_, sha) = action.split_once('@').unwrap();
                assert!(
                    sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
                    "{name}: {action} is not pinned to a commit"
                );
                assert!(
                    !action.starts_with("actions/cache"),
                    "{name}: a cache in a release"
                );
                let line = text.lines().find(|l| l.contains(action)).unwrap();
                assert!(
                    line.contains(" # v"),
                    "{name}: say which version {action} is"
                );
            }
        }
        let permissions = job["permissions"].as_hash();
        let writes = permissions.is_some_and(|p| p.values().any(|v| v.as_str() == Some("write")));
        assert_eq!(
            writes,
            name == "github" || name == "pypi",
            "{name} asks for write rights"
        );
    }
    for command in [
        "check-version",
        "build",
        "sums",
        "check",
        "publish-github",
        "publish-pypi",
    ] {
        assert!(
            commands.iter().any(|c| c == command),
            "{command} never runs"
        );
    }
    // Each command the workflow runs is one dist.sh knows.
    let usage = dist(&[]);
    assert_eq!(usage.code, 2);
    for command in &commands {
        assert!(
            usage.stderr.contains(&format!("dist.sh {command}")),
            "{command}"
        );
    }
}
