//! `glob`: find paths by name pattern, the way a developer would with `git ls-files`-aware tools:
//! what .gitignore hides is not worth the model's attention, and results are capped.

use async_trait::async_trait;
use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use super::tally::Tally;
use super::typed::{BuiltinTool, Files, SubjectOf};
use crate::{Class, ToolContext, ToolError, ToolOutput};

/// Paths shown per call.
const MAX_RESULTS: usize = 200;

pub(crate) struct Glob;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// Matched against paths relative to `path`.
    pattern: String,
    /// Directory to search. Default: the workspace root.
    path: Option<String>,
}

#[async_trait]
impl BuiltinTool for Glob {
    type Input = Args;
    const NAME: &'static str = "glob";
    const CLASS: Class = Class::Safe;
    /// The base directory: `glob(src/**)` allows searching under `src`.
    const SUBJECT: SubjectOf = SubjectOf::Path { default: Some(".") };

    fn description(&self) -> String {
        format!(
            "Find files and directories whose path matches a glob pattern: `*` stays within one \
             directory, `**` crosses directories. Skips what .gitignore ignores. Returns at most \
             {MAX_RESULTS} workspace-relative paths, sorted; directories end with `/`."
        )
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Files::run(Self::NAME, ctx, move |files| find(files, &args))
            .await
            .map(ToolOutput::from)
    }
}

/// Lists what matches under `args.path`, leaving out, without a word, what a deny rule keeps
/// from being read (`gate`): a name is part of what a file gives away.
fn find(files: &Files, args: &Args) -> Result<String, ToolError> {
    let Files {
        workspace,
        gate,
        cancel,
    } = files;
    let given = args.path.as_deref().unwrap_or(".");
    let base = files.resolve(given)?;
    if !base.is_dir() {
        return Err(ToolError::failed(format!("{given:?} is not a directory")));
    }
    // Walked paths never start with "./", so a pattern written that way would match nothing.
    let pattern = args.pattern.strip_prefix("./").unwrap_or(&args.pattern);
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::failed(e.to_string()))?
        .compile_matcher();

    let mut shown = Vec::new();
    let mut more = 0usize;
    let mut tally = Tally::default();
    for entry in workspace.walker(&base).build() {
        if cancel.is_cancelled() {
            return Err(ToolError::failed("glob was cancelled"));
        }
        // An unreadable directory or ignore file is skipped rather than failing the search.
        let Ok(entry) = entry else { continue };
        let rel = match entry.path().strip_prefix(&base) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel,
            _ => continue,
        };
        if !matcher.is_match(rel) {
            continue;
        }
        let mut line = workspace.display(entry.path());
        if gate.hides(&line).is_some() {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if is_dir {
            tally.dir();
        } else {
            tally.file(&entry.file_name().to_string_lossy());
        }
        if shown.len() == MAX_RESULTS {
            more += 1;
            continue;
        }
        if is_dir {
            line.push('/');
        }
        shown.push(line);
    }

    if shown.is_empty() {
        return Ok(no_match(&args.pattern, given, workspace.root() == base));
    }
    let mut out = shown.join("\n");
    if more > 0 {
        out.push_str(&format!("\n[... {more} more matches not shown]"));
    }
    if tally.total() > 1 {
        out.push('\n');
        out.push_str(&tally.line("matches"));
    }
    Ok(out)
}

/// What a glob that found nothing says, with what to try next: a model that guessed a file's
/// name (`**/parse_config.py` for where `parse_config` is defined) is pointed at the name
/// anywhere and at grep, rather than left to guess again or to write the file it did not find.
fn no_match(pattern: &str, given: &str, at_root: bool) -> String {
    let mut out = if at_root {
        format!("no files match {pattern:?}")
    } else {
        format!("no files match {pattern:?} under {given:?}")
    };
    let base = pattern.rsplit('/').next().unwrap_or(pattern);
    let mut tries = Vec::new();
    let anywhere = format!("**/{base}");
    if !base.is_empty() && base != "**" && pattern != anywhere {
        tries.push(format!("glob {anywhere:?}"));
    }
    let stem = base.split('.').next().unwrap_or(base);
    let is_name = stem.len() >= 3 && stem.chars().all(|c| c.is_alphanumeric() || c == '_');
    if is_name {
        tries.push(format!("grep {stem:?} (the name inside files)"));
    }
    if !tries.is_empty() {
        out.push_str(&format!("; try {}", tries.join(", or ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::Workspace;
    use crate::builtin::typed::Typed;
    use crate::workspace::testing::{self, workspace, write};
    use serde_json::Value;
    use std::path::Path;

    async fn call(ws: &Workspace, input: Value) -> Result<String, String> {
        testing::call(&Typed::new(Glob), ws, input)
            .await
            .map_err(|e| e.to_string())
    }

    fn tree(root: &Path) {
        for f in [
            "Cargo.toml",
            "src/main.rs",
            "src/tools/mod.rs",
            "src/a.rs",
            "src/config.toml",
            "target/debug/x.rs",
            "notes.log",
            ".hidden/h.rs",
            ".git/x.rs",
            "b.rs",
        ] {
            write(root, f, "");
        }
        write(root, ".gitignore", "target/\n*.log\n");
    }

    #[tokio::test]
    async fn matches_sorted_and_gitignore_respected() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        let got = call(&ws, json!({"pattern": "**/*.rs"})).await;
        let want =
            ".hidden/h.rs\nb.rs\nsrc/a.rs\nsrc/main.rs\nsrc/tools/mod.rs\n[5 matches: 5 .rs files]";
        assert_eq!(got, Ok(want.to_owned()));
    }

    #[tokio::test]
    async fn star_does_not_cross_separators() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        assert_eq!(
            call(&ws, json!({"pattern": "src/*"})).await,
            Ok("src/a.rs\nsrc/config.toml\nsrc/main.rs\nsrc/tools/\n\
                [4 matches: 2 .rs files, 1 .toml file, 1 directory]"
                .to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": "*.toml"})).await,
            Ok("Cargo.toml".to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": "./src/*.toml"})).await,
            Ok("src/config.toml".to_owned())
        );
    }

    #[tokio::test]
    async fn a_glob_that_finds_nothing_says_what_to_try() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        let cases = [
            (
                "**/parse_config.py",
                r#"no files match "**/parse_config.py"; try grep "parse_config" (the name inside files)"#,
            ),
            (
                "lib/parse_config.py",
                r#"no files match "lib/parse_config.py"; try glob "**/parse_config.py", or grep "parse_config" (the name inside files)"#,
            ),
            ("*.py", r#"no files match "*.py"; try glob "**/*.py""#),
            ("**/*.py", r#"no files match "**/*.py""#),
        ];
        for (pattern, want) in cases {
            let got = call(&ws, json!({"pattern": pattern, "path": "src/tools"})).await;
            let want = want.replacen(
                &format!("{pattern:?}"),
                &format!("{pattern:?} under \"src/tools\""),
                1,
            );
            assert_eq!(got, Ok(want), "{pattern}");
        }
    }

    #[tokio::test]
    async fn base_path_makes_pattern_relative_to_it() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        assert_eq!(
            call(&ws, json!({"pattern": "*.rs", "path": "src"})).await,
            Ok("src/a.rs\nsrc/main.rs\n[2 matches: 2 .rs files]".to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": "*.md", "path": "src"})).await,
            Ok(r#"no files match "*.md" under "src"; try glob "**/*.md""#.to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": "*", "path": "b.rs"})).await,
            Err(r#""b.rs" is not a directory"#.to_owned())
        );
    }

    #[tokio::test]
    async fn no_match_and_invalid_pattern() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        assert_eq!(
            call(&ws, json!({"pattern": "**/*.py"})).await,
            Ok(r#"no files match "**/*.py""#.to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": "src/[a"})).await,
            Err("error parsing glob 'src/[a': unclosed character class; missing ']'".to_owned())
        );
    }

    #[tokio::test]
    async fn caps_results_and_counts_the_rest() {
        let (_dir, root, ws) = workspace();
        for i in 0..250 {
            write(&root, &format!("d/f{i:03}.txt"), "");
        }
        let got = call(&ws, json!({"pattern": "d/*.txt"})).await.unwrap();
        let mut want: Vec<String> = (0..200).map(|i| format!("d/f{i:03}.txt")).collect();
        want.push("[... 50 more matches not shown]".to_owned());
        // The count is of every match, not only those shown.
        want.push("[250 matches: 250 .txt files]".to_owned());
        assert_eq!(got, want.join("\n"));
    }

    #[tokio::test]
    async fn symlinks_out_are_not_followed() {
        let (_dir, root, ws) = workspace();
        let out = tempfile::tempdir().unwrap();
        write(out.path(), "secret.rs", "");
        write(&root, "in.rs", "");
        symlink(out.path(), root.join("escape")).unwrap();
        assert_eq!(
            call(&ws, json!({"pattern": "**/*.rs"})).await,
            Ok("in.rs".to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": "*", "path": "escape"})).await,
            Err(r#"path "escape" resolves outside the workspace (symlink)"#.to_owned())
        );
    }
}
