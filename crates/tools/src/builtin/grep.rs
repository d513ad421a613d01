//! `grep`: search file contents by regex, the way ripgrep would: .gitignore respected, binary and
//! huge files skipped, output in `path:line:text` form the model already knows, and capped.

use std::io::Read;
use std::path::Path;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use regex::bytes::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use super::typed::{BuiltinTool, Files, SubjectOf};
use crate::workspace::PathError;
use crate::{Class, ToolContext, ToolError, ToolOutput, Workspace};
use named::Named;

/// Matching lines shown per call.
const MAX_MATCHES: usize = 200;
/// Bigger files are skipped: likely generated or data, and slow to search.
const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// A NUL byte in this much of a file's start marks it binary.
const SNIFF_BYTES: usize = 8 * 1024;
/// Characters shown of one line; minified files would otherwise flood the result.
const MAX_LINE_CHARS: usize = 500;
const MAX_CONTEXT: usize = 5;

mod named;

pub(crate) struct Grep;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// No look-around or backreferences.
    pattern: String,
    /// File or directory to search. Default: the workspace root.
    path: Option<String>,
    /// Search only the files whose name (or, with a `/`, whose path) matches this glob.
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    /// Lines to show around each match.
    #[serde(default)]
    #[schemars(range(max = MAX_CONTEXT))]
    context: usize,
}

#[async_trait]
impl BuiltinTool for Grep {
    type Input = Args;
    const NAME: &'static str = "grep";
    const CLASS: Class = Class::Safe;
    /// The file or directory searched: `grep(src/**)` allows searching under `src`.
    const SUBJECT: SubjectOf = SubjectOf::Path { default: Some(".") };

    fn description(&self) -> String {
        format!(
            "Search file contents for a regular expression, line by line. Prints \
             `path:line:text` per matching line (`path-line-text` for context lines). Skips \
             binary files, files over 10 MiB and what .gitignore ignores. At most {MAX_MATCHES} \
             matches."
        )
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Files::run(Self::NAME, ctx, move |files| search(files, &args))
            .await
            .map(ToolOutput::from)
    }
}

/// Searches `args.path`. A file a deny rule keeps from being read (`gate`) is not searched: a
/// walk passes over it without a word, a file named outright is refused naming the rule.
fn search(files: &Files, args: &Args) -> Result<String, ToolError> {
    let Files {
        workspace,
        gate,
        cancel,
    } = files;
    let given = args.path.as_deref().unwrap_or(".");
    let base = files.resolve(given)?;
    let regex = RegexBuilder::new(&args.pattern)
        .case_insensitive(args.case_insensitive)
        .build()
        .map_err(|e| ToolError::failed(e.to_string()))?;
    let filter = args.glob.as_deref().map(file_filter).transpose()?;
    let mut out = Output {
        regex,
        context: args.context.min(MAX_CONTEXT),
        lines: Vec::new(),
        shown: 0,
        more_matches: 0,
        more_files: 0,
        searched: 0,
    };

    if !base.is_dir() {
        return search_file(files, args, &base, given, out);
    }

    let mut big = 0usize;
    let mut named = Named::new(&args.pattern, args.case_insensitive);
    for entry in workspace.walker(&base).build() {
        if cancel.is_cancelled() {
            return Err(ToolError::failed("grep was cancelled"));
        }
        let Ok(entry) = entry else { continue };
        if let Some(named) = &mut named {
            named.walked(files, &entry);
        }
        // Symlinks are not file types here (the walk does not follow them): their targets are
        // either searched where they really are or outside the workspace.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        if let Some(filter) = &filter
            && !filter.matches(path, &base)
        {
            continue;
        }
        if entry.metadata().is_ok_and(|m| m.len() > MAX_FILE_BYTES) {
            big += 1;
            continue;
        }
        let display = workspace.display(path);
        if gate.hides(&display).is_some() {
            continue;
        }
        match read_searchable(workspace, path, &display) {
            Ok(data) => out.file(&display, &data),
            Err(Skip::TooBig) => big += 1,
            // A file that vanished or was swapped mid-walk is skipped, not an error for the
            // whole search.
            Err(Skip::Binary | Skip::Unreadable(_)) => {}
        }
    }
    let matched = out.shown > 0;
    let text = out.finish(args, big);
    Ok(match named.and_then(|n| n.note(matched)) {
        Some(note) => format!("{text}\n{note}"),
        None => text,
    })
}

/// A file named outright: searched even if ignored, and a skip is worth saying.
fn search_file(
    files: &Files,
    args: &Args,
    base: &Path,
    given: &str,
    mut out: Output,
) -> Result<String, ToolError> {
    let Files {
        workspace, gate, ..
    } = files;
    if let Some(rule) = gate.hides(&workspace.display(base)) {
        return Err(ToolError::failed(format!(
            "{given:?} is not searched: the rule --deny {rule} covers it"
        )));
    }
    match read_searchable(workspace, base, given) {
        Ok(data) => {
            out.file(given, &data);
            Ok(out.finish(args, 0))
        }
        Err(Skip::TooBig) => Ok(format!("{given:?} is larger than 10 MiB; not searched")),
        Err(Skip::Binary) => Ok(format!("{given:?} is a binary file; not searched")),
        Err(Skip::Unreadable(e)) => Err(e.into()),
    }
}

/// The `glob` argument: a bare pattern filters file names, one with `/` the path under the base.
struct FileFilter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl FileFilter {
    fn matches(&self, path: &Path, base: &Path) -> bool {
        if self.whole_path {
            path.strip_prefix(base)
                .is_ok_and(|rel| self.matcher.is_match(rel))
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        }
    }
}

fn file_filter(glob: &str) -> Result<FileFilter, ToolError> {
    let glob = glob.strip_prefix("./").unwrap_or(glob);
    let matcher = GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::failed(e.to_string()))?
        .compile_matcher();
    Ok(FileFilter {
        matcher,
        whole_path: glob.contains('/'),
    })
}

/// Why a file's contents are not searched.
enum Skip {
    Binary,
    TooBig,
    Unreadable(PathError),
}

fn read_searchable(workspace: &Workspace, path: &Path, display: &str) -> Result<Vec<u8>, Skip> {
    let file = workspace
        .open_checked(path, display)
        .map_err(Skip::Unreadable)?;
    let mut data = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut data)
        .map_err(|e| {
            Skip::Unreadable(PathError::Io {
                path: display.to_owned(),
                message: e.to_string(),
            })
        })?;
    if data.len() as u64 > MAX_FILE_BYTES {
        return Err(Skip::TooBig);
    }
    if data[..data.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(Skip::Binary);
    }
    Ok(data)
}

struct Output {
    regex: Regex,
    context: usize,
    lines: Vec<String>,
    shown: usize,
    more_matches: usize,
    more_files: usize,
    /// Files whose contents were searched.
    searched: usize,
}

impl Output {
    fn file(&mut self, display: &str, data: &[u8]) {
        self.searched += 1;
        if data.is_empty() {
            return;
        }
        let data = data.strip_suffix(b"\n").unwrap_or(data);
        let lines: Vec<&[u8]> = data
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .collect();
        let matches: Vec<usize> = (0..lines.len())
            .filter(|&i| self.regex.is_match(lines[i]))
            .collect();
        let take = matches.len().min(MAX_MATCHES - self.shown);
        if take < matches.len() {
            self.more_matches += matches.len() - take;
            self.more_files += 1;
        }
        if take == 0 {
            return;
        }
        let shown = &matches[..take];
        self.shown += take;

        // Groups of lines to print (inclusive ranges): each shown match with its context, merged
        // when they touch, stopping short of the first match that is not shown.
        let limit = matches.get(take).map_or(lines.len(), |&next| next);
        let mut groups: Vec<(usize, usize)> = Vec::new();
        for &m in shown {
            let lo = m.saturating_sub(self.context);
            let hi = (m + self.context).min(limit - 1);
            match groups.last_mut() {
                Some(last) if lo <= last.1 + 1 => last.1 = hi,
                _ => groups.push((lo, hi)),
            }
        }
        for (lo, hi) in groups {
            if self.context > 0 && !self.lines.is_empty() {
                self.lines.push("--".to_owned());
            }
            for (i, line) in lines.iter().enumerate().take(hi + 1).skip(lo) {
                let sep = if shown.binary_search(&i).is_ok() {
                    ':'
                } else {
                    '-'
                };
                self.lines
                    .push(format!("{display}{sep}{}{sep}{}", i + 1, clip(line)));
            }
        }
    }

    fn finish(self, args: &Args, big: usize) -> String {
        let mut out = if self.lines.is_empty() {
            no_matches(args, self.searched)
        } else {
            self.lines.join("\n")
        };
        if self.more_matches > 0 {
            out.push_str(&format!(
                "\n[... {} not shown]",
                matches_in_files(self.more_matches, self.more_files)
            ));
        }
        if big > 0 {
            let files = match big {
                1 => "1 file larger than 10 MiB was".to_owned(),
                n => format!("{n} files larger than 10 MiB were"),
            };
            out.push_str(&format!("\n[{files} not searched]"));
        }
        out
    }
}

/// What a search that found nothing says: how many files it looked in, and, when case may be
/// why, that it was case-sensitive.
fn no_matches(args: &Args, searched: usize) -> String {
    let files = match searched {
        0 => "no file was searched: check path and glob".to_owned(),
        1 => "1 file searched".to_owned(),
        n => format!("{n} files searched"),
    };
    let mut out = format!("no matches for /{}/ ({files}", args.pattern);
    if !args.case_insensitive && has_letters(&args.pattern) {
        out.push_str("; case-sensitive: try case_insensitive: true");
    }
    // A model's pattern often guesses the text around a name (`def parse_config\(`): the name
    // alone finds what the guess missed.
    let longest = args
        .pattern
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .max_by_key(|t| t.chars().count())
        .filter(|t| t.chars().count() >= 3 && *t != args.pattern);
    if let Some(token) = longest {
        out.push_str(&format!("; or a shorter pattern: {token:?}"));
    }
    if args.glob.is_some() {
        out.push_str("; or no glob");
    }
    out.push(')');
    out
}

/// Whether a regex matches letters itself: escapes like `\d` or `\b` do not count.
fn has_letters(pattern: &str) -> bool {
    let mut escaped = false;
    pattern.chars().any(|c| {
        let letter = !escaped && c.is_alphabetic();
        escaped = !escaped && c == '\\';
        letter
    })
}

fn matches_in_files(matches: usize, files: usize) -> String {
    let m = if matches == 1 { "match" } else { "matches" };
    let f = if files == 1 { "file" } else { "files" };
    format!("{matches} more {m} in {files} {f}")
}

fn clip(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::Tool;
    use crate::builtin::typed::Typed;
    use crate::workspace::testing::{self, context, workspace, write};
    use serde_json::Value;

    async fn call(ws: &Workspace, input: Value) -> Result<String, String> {
        testing::call(&Typed::new(Grep), ws, input)
            .await
            .map_err(|e| e.to_string())
    }

    fn tree(root: &Path) {
        write(root, "src/main.rs", "fn main() {\n    run();\n}\n");
        write(
            root,
            "src/lib.rs",
            "pub fn run() {}\r\npub fn RUN_ALL() {}\n",
        );
        write(root, "b.txt", "nothing to see\n");
        write(root, "a.md", "run the tests\n");
        write(root, "target/gen.rs", "fn run() {}\n");
        write(root, "img.bin", b"run\0run\n");
        write(root, ".gitignore", "target/\n");
    }

    #[tokio::test]
    async fn matches_in_sorted_files_gitignore_and_binary_skipped() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        let got = call(&ws, json!({"pattern": r"run\("})).await;
        let want = "src/lib.rs:1:pub fn run() {}\nsrc/main.rs:2:    run();";
        assert_eq!(got, Ok(want.to_owned()));
        let got = call(&ws, json!({"pattern": "run", "glob": "*.md"})).await;
        assert_eq!(got, Ok("a.md:1:run the tests".to_owned()));
        let got = call(&ws, json!({"pattern": "run", "glob": "src/l*.rs"})).await;
        assert_eq!(got, Ok("src/lib.rs:1:pub fn run() {}".to_owned()));
    }

    #[tokio::test]
    async fn case_insensitive_and_path() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        let got = call(
            &ws,
            json!({"pattern": "fn run", "path": "src/lib.rs", "case_insensitive": true}),
        )
        .await;
        assert_eq!(
            got,
            Ok("src/lib.rs:1:pub fn run() {}\nsrc/lib.rs:2:pub fn RUN_ALL() {}".to_owned())
        );
        // An explicitly named file is searched even when ignored.
        let got = call(&ws, json!({"pattern": "run", "path": "./target/gen.rs"})).await;
        assert_eq!(got, Ok("./target/gen.rs:1:fn run() {}".to_owned()));
        let got = call(&ws, json!({"pattern": "run", "path": "img.bin"})).await;
        assert_eq!(
            got,
            Ok(r#""img.bin" is a binary file; not searched"#.to_owned())
        );
    }

    #[tokio::test]
    async fn context_groups_are_separated() {
        let (_dir, root, ws) = workspace();
        let content: String = (1..=20).map(|n| format!("l{n}\n")).collect();
        write(&root, "a.txt", &content);
        write(&root, "b.txt", "x\nl1\n");
        // Lines 1 and 4 with one line of context touch (1-2, 3-5): one group, no separator.
        let got = call(&ws, json!({"pattern": "^l(1|4|10)$", "context": 1})).await;
        let want = "a.txt:1:l1\na.txt-2-l2\na.txt-3-l3\na.txt:4:l4\na.txt-5-l5\n--\n\
                    a.txt-9-l9\na.txt:10:l10\na.txt-11-l11\n--\nb.txt-1-x\nb.txt:2:l1";
        assert_eq!(got, Ok(want.to_owned()));
    }

    #[tokio::test]
    async fn caps_matches_and_counts_the_rest() {
        let (_dir, root, ws) = workspace();
        for i in 0..250 {
            write(&root, &format!("f{i:03}.txt"), "hit\nmiss\n");
        }
        write(&root, "g.txt", "hit\nhit\nhit\n");
        let got = call(&ws, json!({"pattern": "hit"})).await.unwrap();
        let mut want: Vec<String> = (0..200).map(|i| format!("f{i:03}.txt:1:hit")).collect();
        want.push("[... 53 more matches in 51 files not shown]".to_owned());
        assert_eq!(got, want.join("\n"));
    }

    #[tokio::test]
    async fn cap_inside_a_file_stops_context_before_the_next_match() {
        let (_dir, root, ws) = workspace();
        let content: String = (1..=205).map(|n| format!("hit {n}\n")).collect();
        write(&root, "a.txt", &content);
        let got = call(&ws, json!({"pattern": "hit", "context": 2}))
            .await
            .unwrap();
        let mut want: Vec<String> = (1..=200).map(|n| format!("a.txt:{n}:hit {n}")).collect();
        want.push("[... 5 more matches in 1 file not shown]".to_owned());
        assert_eq!(got, want.join("\n"));
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let (_dir, root, ws) = workspace();
        write(&root, "min.js", format!("{}\n", "é".repeat(600)));
        let got = call(&ws, json!({"pattern": "é"})).await;
        assert_eq!(got, Ok(format!("min.js:1:{}…", "é".repeat(500))));
    }

    #[tokio::test]
    async fn big_files_are_skipped_and_said() {
        let (_dir, root, ws) = workspace();
        let big = vec![b'a'; (MAX_FILE_BYTES + 1) as usize];
        write(&root, "big.txt", &big);
        write(&root, "small.txt", "a\n");
        let got = call(&ws, json!({"pattern": "a"})).await;
        assert_eq!(
            got,
            Ok("small.txt:1:a\n[1 file larger than 10 MiB was not searched]".to_owned())
        );
    }

    /// A model that greps for a file's name inside files is told where the file is; a file a
    /// deny rule hides from grep is not named.
    #[tokio::test]
    async fn a_pattern_that_names_a_file_of_the_workspace_says_where_it_is() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        write(&root, "docs/notes.txt", "Stand-up is at 9:30.\n");
        write(&root, "secrets/keys.txt", "k\n");
        let got = call(&ws, json!({"pattern": r"notes\.txt"})).await.unwrap();
        assert_eq!(
            got,
            "no matches for /notes\\.txt/ (7 files searched; case-sensitive: try \
             case_insensitive: true; or a shorter pattern: \"notes\")\n\
             [docs/notes.txt is a file in the workspace: read it with read_file]"
        );
        let got = call(&ws, json!({"pattern": "src"})).await.unwrap();
        assert!(got.ends_with("\n[src is a directory in the workspace: list it with list_dir]"));
        // Beside matches too, for a name that looks like a path.
        write(&root, "a.md", "see notes.txt\n");
        let got = call(&ws, json!({"pattern": "notes.txt"})).await.unwrap();
        assert_eq!(
            got,
            "a.md:1:see notes.txt\n[docs/notes.txt is a file in the workspace: read it with read_file]"
        );

        // A deny rule that hides the file from grep hides its name too; the control: the same
        // search without the rule names it.
        let search = |deny: &[&str]| {
            let policy = crate::policy::Policy::new(
                &["grep".to_owned()],
                &deny.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
                &["grep", "read_file", "list_dir", "glob"],
            )
            .unwrap();
            let mut ctx = context(&ws);
            ctx.gate = crate::Gate::new(std::sync::Arc::new(policy), "grep");
            let input = json!({"pattern": "keys.txt"});
            async move { Typed::new(Grep).run(input, &ctx).await.unwrap() }
        };
        assert!(
            search(&["read_file(secrets/**)"])
                .await
                .starts_with("no matches")
        );
        assert!(
            !search(&["read_file(secrets/**)"])
                .await
                .contains("secrets/keys.txt")
        );
        assert!(
            search(&[])
                .await
                .contains("[secrets/keys.txt is a file in the workspace")
        );
    }

    #[tokio::test]
    async fn no_match_and_invalid_regex() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        // What was searched, and that case mattered when it may have.
        assert_eq!(
            call(&ws, json!({"pattern": "Zebra"})).await,
            Ok(
                "no matches for /Zebra/ (5 files searched; case-sensitive: try \
                case_insensitive: true)"
                    .to_owned()
            )
        );
        let ignoring = json!({"pattern": "zebra", "case_insensitive": true});
        assert_eq!(
            call(&ws, ignoring).await,
            Ok("no matches for /zebra/ (5 files searched)".to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": r"\d{4}", "path": "b.txt"})).await,
            Ok(r"no matches for /\d{4}/ (1 file searched)".to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": "[.]", "glob": "*.none"})).await,
            Ok(
                "no matches for /[.]/ (no file was searched: check path and glob; or no glob)"
                    .to_owned()
            )
        );
        // A guess at the text around a name: the name alone is suggested.
        assert_eq!(
            call(
                &ws,
                json!({"pattern": r"def parse_config\(", "case_insensitive": true})
            )
            .await,
            Ok(
                "no matches for /def parse_config\\(/ (5 files searched; or a shorter pattern: \
                 \"parse_config\")"
                    .to_owned()
            )
        );
        let err = call(&ws, json!({"pattern": "a(b"})).await.unwrap_err();
        assert_eq!(
            err,
            "regex parse error:\n    a(b\n     ^\nerror: unclosed group"
        );
        let err = call(&ws, json!({"pattern": "a", "glob": "[x"}))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            "error parsing glob '[x': unclosed character class; missing ']'"
        );
    }

    #[tokio::test]
    async fn symlinks_out_are_not_followed() {
        let (_dir, root, ws) = workspace();
        let out = tempfile::tempdir().unwrap();
        write(out.path(), "secret.txt", "password\n");
        symlink(out.path(), root.join("dir-link")).unwrap();
        symlink(out.path().join("secret.txt"), root.join("file-link")).unwrap();
        write(&root, "in.txt", "password\n");
        assert_eq!(
            call(&ws, json!({"pattern": "password"})).await,
            Ok("in.txt:1:password".to_owned())
        );
        assert_eq!(
            call(&ws, json!({"pattern": "password", "path": "file-link"})).await,
            Err(r#"path "file-link" resolves outside the workspace (symlink)"#.to_owned())
        );
    }

    #[tokio::test]
    async fn cancelled_call_stops() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        let ctx = context(&ws);
        ctx.cancel.cancel();
        let got = Typed::new(Grep).run(json!({"pattern": "run"}), &ctx).await;
        assert_eq!(
            got.map_err(|e| e.to_string()),
            Err("grep was cancelled".to_owned())
        );
    }
}
