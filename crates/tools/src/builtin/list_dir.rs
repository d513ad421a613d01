//! `list_dir`: a depth-limited tree of a directory, so the model can find its way around a
//! workspace without a shell.
//!
//! It is a listing, not a search: ignore files are not applied (the model may need to see that
//! `target/` exists), but `.git` is never descended into and the output is capped.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::tally::Tally;
use super::typed::{BuiltinTool, Files, SubjectOf};
use crate::{Class, Gate, ToolContext, ToolError, ToolOutput, Workspace};

/// Entries shown per call.
const MAX_ENTRIES: usize = 500;
/// Entries counted (for "N more") before giving up: a deep tree must not make the call slow.
const MAX_COUNTED: usize = 50_000;
const MAX_DEPTH: usize = 5;

pub(crate) struct ListDir;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// Default: the workspace root.
    path: Option<String>,
    /// Levels to show. Default 1.
    #[schemars(range(min = 1, max = MAX_DEPTH))]
    depth: Option<usize>,
}

#[async_trait]
impl BuiltinTool for ListDir {
    type Input = Args;
    const NAME: &'static str = "list_dir";
    const CLASS: Class = Class::Safe;
    const SUBJECT: SubjectOf = SubjectOf::Path { default: Some(".") };

    fn description(&self) -> String {
        format!(
            "List a directory as an indented tree: directories end with `/`, files show their \
             size in bytes. At most {MAX_ENTRIES} entries; .gitignore is not applied."
        )
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Files::run(Self::NAME, ctx, move |files| list(files, &args))
            .await
            .map(ToolOutput::from)
    }
}

fn list(files: &Files, args: &Args) -> Result<String, ToolError> {
    let given = args.path.as_deref().unwrap_or(".");
    let depth = args.depth.unwrap_or(1).clamp(1, MAX_DEPTH);
    let dir = files.resolve(given)?;
    let workspace = &files.workspace;
    let mut listing = Listing {
        workspace,
        gate: &files.gate,
        cancel: &files.cancel,
        depth,
        lines: Vec::new(),
        total: 0,
        top: Tally::default(),
    };
    // The top directory must be listable; below it, an unreadable directory is a note.
    let entries = workspace.open_dir(&dir, given)?;
    listing.walk(&dir, entries, 0)?;

    if listing.lines.is_empty() {
        return Ok("(empty directory)".to_owned());
    }
    let mut out = listing.lines.join("\n");
    let more = listing.total.saturating_sub(MAX_ENTRIES);
    if listing.total >= MAX_COUNTED {
        out.push_str(&format!("\n[... more than {more} more entries not shown]"));
        return Ok(out);
    } else if more > 0 {
        out.push_str(&format!("\n[... {more} more entries not shown]"));
    }
    if listing.top.total() > 1 {
        let noun = if depth > 1 {
            "entries at the top"
        } else {
            "entries"
        };
        out.push('\n');
        out.push_str(&listing.top.line(noun));
    }
    Ok(out)
}

struct Listing<'a> {
    workspace: &'a Workspace,
    /// What a deny rule keeps from being read is left out, names included, as grep and glob do.
    gate: &'a Gate,
    cancel: &'a CancellationToken,
    depth: usize,
    lines: Vec<String>,
    total: usize,
    /// The directory's own entries, counted by kind.
    top: Tally,
}

impl Listing<'_> {
    fn walk(
        &mut self,
        dir: &Path,
        entries: std::fs::ReadDir,
        level: usize,
    ) -> Result<(), ToolError> {
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        let indent = "  ".repeat(level);
        for entry in entries {
            if self.cancel.is_cancelled() {
                return Err(ToolError::failed("list_dir was cancelled"));
            }
            if self.total >= MAX_COUNTED {
                return Ok(());
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = dir.join(entry.file_name());
            if self.gate.hides(&self.workspace.display(&path)).is_some() {
                continue;
            }
            self.total += 1;
            // DirEntry::file_type does not follow symlinks, so a symlinked directory is never
            // descended into (it could lead out of the workspace, or in a loop).
            let Ok(file_type) = entry.file_type() else {
                self.push(format!("{indent}{name} (unreadable)"));
                continue;
            };
            if level == 0 {
                if file_type.is_dir() {
                    self.top.dir();
                } else if file_type.is_file() {
                    self.top.file(&name);
                } else {
                    self.top.other();
                }
            }
            if file_type.is_symlink() {
                let line = format!("{indent}{name} -> {}", self.link_target(&path));
                self.push(line);
            } else if file_type.is_dir() {
                self.push(format!("{indent}{name}/"));
                if name != ".git" && level + 1 < self.depth {
                    let shown = self.workspace.display(&path);
                    match self.workspace.open_dir(&path, &shown) {
                        Ok(children) => self.walk(&path, children, level + 1)?,
                        Err(e) => self.push(format!("{indent}  ({e})")),
                    }
                }
            } else if file_type.is_file() {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                let unit = if size == 1 { "byte" } else { "bytes" };
                self.push(format!("{indent}{name} ({size} {unit})"));
            } else {
                self.push(format!("{indent}{name} ({})", special_kind(&file_type)));
            }
        }
        Ok(())
    }

    fn push(&mut self, line: String) {
        if self.lines.len() < MAX_ENTRIES {
            self.lines.push(line);
        }
    }

    /// The link text is workspace content and shown as is; where it leads is only classified,
    /// never followed.
    fn link_target(&self, link: &Path) -> String {
        let text = match std::fs::read_link(link) {
            Ok(target) => target.to_string_lossy().into_owned(),
            Err(_) => return "(unreadable link)".to_owned(),
        };
        match std::fs::canonicalize(link) {
            Ok(real) if real.starts_with(self.workspace.root()) => text,
            Ok(_) => format!("{text} (outside the workspace)"),
            Err(_) => format!("{text} (broken)"),
        }
    }
}

fn special_kind(file_type: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "device"
    } else {
        "special file"
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
    use crate::policy::Subject;
    use crate::workspace::testing::{self, mkfifo, workspace, write};
    use serde_json::Value;

    async fn call(ws: &Workspace, input: Value) -> Result<String, String> {
        testing::call(&Typed::new(ListDir), ws, input)
            .await
            .map_err(|e| e.to_string())
    }

    fn tree(root: &Path) {
        write(root, "b.txt", "hello");
        write(root, "a/x.rs", "12");
        write(root, "a/deep/y.rs", "123");
        write(root, ".git/HEAD", "ref");
        write(root, ".gitignore", "a/\n");
        std::fs::create_dir(root.join("empty")).unwrap();
    }

    #[tokio::test]
    async fn lists_one_level_sorted() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        let got = call(&ws, json!({})).await;
        let want = ".git/\n.gitignore (3 bytes)\na/\nb.txt (5 bytes)\nempty/\n\
                    [5 entries: 1 file without an extension, 1 .txt file, 3 directories]";
        assert_eq!(got, Ok(want.to_owned()));
    }

    #[tokio::test]
    async fn lists_deeper_without_entering_git() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        let got = call(&ws, json!({"path": ".", "depth": 3})).await;
        let want = ".git/\n.gitignore (3 bytes)\na/\n  deep/\n    y.rs (3 bytes)\n  \
                    x.rs (2 bytes)\nb.txt (5 bytes)\nempty/\n[5 entries at the top: 1 file \
                    without an extension, 1 .txt file, 3 directories]";
        assert_eq!(got, Ok(want.to_owned()));
        let got = call(&ws, json!({"path": "a/deep"})).await;
        assert_eq!(got, Ok("y.rs (3 bytes)".to_owned()));
        let got = call(&ws, json!({"path": "empty"})).await;
        assert_eq!(got, Ok("(empty directory)".to_owned()));
    }

    #[tokio::test]
    async fn symlinks_and_special_files_are_shown_not_followed() {
        let (_dir, root, ws) = workspace();
        let out = tempfile::tempdir().unwrap();
        write(out.path(), "secret.txt", "s");
        symlink(out.path(), root.join("escape")).unwrap();
        symlink("real", root.join("inner")).unwrap();
        symlink("gone", root.join("dangling")).unwrap();
        write(&root, "real/f", "1");
        mkfifo(&root.join("pipe"));
        let got = call(&ws, json!({"depth": 2})).await.unwrap();
        let want = format!(
            "dangling -> gone (broken)\nescape -> {} (outside the workspace)\ninner -> \
             real\npipe (FIFO)\nreal/\n  f (1 byte)\n[5 entries at the top: 1 directory, 4 other \
             entries]",
            out.path().display()
        );
        assert_eq!(got, want);
        assert_eq!(
            call(&ws, json!({"path": "escape"})).await,
            Err(r#"path "escape" resolves outside the workspace (symlink)"#.to_owned())
        );
    }

    #[tokio::test]
    async fn refuses_files_and_outside() {
        let (_dir, root, ws) = workspace();
        tree(&root);
        assert_eq!(
            call(&ws, json!({"path": "b.txt"})).await,
            Err(r#""b.txt" is not a directory"#.to_owned())
        );
        assert_eq!(
            call(&ws, json!({"path": ".."})).await,
            Err(r#"path ".." is outside the workspace"#.to_owned())
        );
    }

    #[tokio::test]
    async fn caps_entries_and_counts_the_rest() {
        let (_dir, root, ws) = workspace();
        for i in 0..620 {
            write(&root, &format!("f{i:04}"), "");
        }
        let got = call(&ws, json!({})).await.unwrap();
        let mut want: Vec<String> = (0..500).map(|i| format!("f{i:04} (0 bytes)")).collect();
        want.push("[... 120 more entries not shown]".to_owned());
        want.push("[620 entries: 620 files without an extension]".to_owned());
        assert_eq!(got, want.join("\n"));
    }

    #[test]
    fn subject_defaults_to_root() {
        let (_dir, _root, ws) = workspace();
        let tool = Typed::new(ListDir);
        assert_eq!(
            tool.subject(&json!({}), &ws),
            Some(Subject::Path(".".to_owned()))
        );
        assert_eq!(
            tool.subject(&json!({"path": "./src/"}), &ws),
            Some(Subject::Path("src".to_owned()))
        );
    }
}
