//! `write_file`: the model's way to create a file or replace one whole.
//!
//! All the care (confinement, atomic replace, permissions kept, no writing through symlinks) lives
//! in `Workspace::write_atomic`, shared with `edit_file`; this file is the tool's face: schema,
//! subject for the allowlist, and the one-line result the model reads.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::typed::{BuiltinTool, Files, SubjectOf};
use crate::{Class, ToolContext, ToolError, ToolOutput};

pub(crate) struct WriteFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    // Relative to the workspace root (or absolute inside it), as the system prompt says.
    path: String,
    /// The whole new content.
    content: String,
}

#[async_trait]
impl BuiltinTool for WriteFile {
    type Input = Args;
    const NAME: &'static str = "write_file";
    const CLASS: Class = Class::Mutating;
    const SUBJECT: SubjectOf = SubjectOf::Path { default: None };

    fn description(&self) -> String {
        "Create a file, or replace all of its content. Missing directories are created. To \
         change part of a file, use edit_file."
            .to_owned()
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let report = Files::run(Self::NAME, ctx, move |files| {
            Ok(files
                .workspace
                .write_atomic(&args.path, args.content.as_bytes(), true)?)
        })
        .await?;
        let what = match report.replaced {
            None => "created".to_owned(),
            Some(old) => format!("overwrote {old} bytes"),
        };
        Ok(format!("wrote {} bytes to {} ({what})", report.bytes, report.path).into())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};
    use std::path::Path;
    use std::time::{Duration, Instant};

    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::Tool;
    use crate::Workspace;
    use crate::builtin::typed::Typed;
    use crate::policy::Subject;
    use crate::workspace::testing::{self, mkfifo, workspace, write};

    async fn call(ws: &Workspace, path: &str, content: &str) -> Result<String, String> {
        let input = json!({"path": path, "content": content});
        testing::call(&Typed::new(WriteFile), ws, input)
            .await
            .map_err(|e| e.to_string())
    }

    /// Every entry under `dir`, recursively, as sorted relative paths: shows stray temp files.
    fn tree(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
                if path.is_dir() && !path.is_symlink() {
                    stack.push(path);
                }
            }
        }
        out.sort();
        out
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[tokio::test]
    async fn creates_file_and_missing_parents() {
        let (_dir, root, ws) = workspace();
        let got = call(&ws, "src/deep/new.rs", "fn main() {}\n").await;
        assert_eq!(
            got,
            Ok("wrote 13 bytes to src/deep/new.rs (created)".to_owned())
        );
        assert_eq!(
            std::fs::read_to_string(root.join("src/deep/new.rs")).unwrap(),
            "fn main() {}\n"
        );
        assert_eq!(tree(&root), ["src", "src/deep", "src/deep/new.rs"]);
        let abs = root.join("empty.txt");
        let got = call(&ws, abs.to_str().unwrap(), "").await;
        assert_eq!(got, Ok("wrote 0 bytes to empty.txt (created)".to_owned()));
    }

    #[tokio::test]
    async fn overwrite_keeps_mode_and_reports_old_size() {
        let (_dir, root, ws) = workspace();
        write(&root, "conf.txt", "old content");
        let path = root.join("conf.txt");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let got = call(&ws, "./conf.txt", "new").await;
        assert_eq!(
            got,
            Ok("wrote 3 bytes to conf.txt (overwrote 11 bytes)".to_owned())
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode(&path), 0o640);
        // Special bits are not carried over.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o4755)).unwrap();
        call(&ws, "conf.txt", "again").await.unwrap();
        assert_eq!(mode(&path), 0o755);
        assert_eq!(tree(&root), ["conf.txt"]);
    }

    #[tokio::test]
    async fn refuses_paths_outside() {
        let parent = tempfile::tempdir().unwrap();
        let parent = parent.path().canonicalize().unwrap();
        let root = parent.join("ws");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(parent.join("ws-evil")).unwrap();
        let ws = Workspace::new(&root).unwrap();
        let evil = parent.join("ws-evil/f").display().to_string();
        let elsewhere = parent.join("elsewhere").display().to_string();
        for path in ["../x", "a/../../x", evil.as_str(), elsewhere.as_str()] {
            assert_eq!(
                call(&ws, path, "x").await,
                Err(format!("path {path:?} is outside the workspace")),
                "{path}"
            );
        }
        assert_eq!(tree(&parent), ["ws", "ws-evil"]);
    }

    #[tokio::test]
    async fn refuses_symlinks_out_and_symlink_targets() {
        let (_dir, root, ws) = workspace();
        let out = tempfile::tempdir().unwrap();
        let out = out.path().canonicalize().unwrap();
        write(&out, "secret", "s");
        symlink(out.join("secret"), root.join("file-link")).unwrap();
        symlink(&out, root.join("dir-link")).unwrap();
        symlink(out.join("nothing"), root.join("dangling")).unwrap();
        write(&root, "inside.txt", "i");
        symlink("inside.txt", root.join("inside-link")).unwrap();
        for path in ["file-link", "dangling", "inside-link"] {
            assert_eq!(
                call(&ws, path, "x").await,
                Err(format!(
                    "path {path:?} is a symlink; files are not written through symlinks \
                     (write to the file it points to instead)"
                )),
                "{path}"
            );
        }
        for path in ["dir-link/secret", "dir-link/new", "dir-link/sub/new"] {
            assert_eq!(
                call(&ws, path, "x").await,
                Err(format!(
                    "path {path:?} resolves outside the workspace (symlink)"
                )),
                "{path}"
            );
        }
        assert_eq!(tree(&out), ["secret"]);
        assert_eq!(std::fs::read_to_string(out.join("secret")).unwrap(), "s");
        assert_eq!(
            std::fs::read_to_string(root.join("inside.txt")).unwrap(),
            "i"
        );
    }

    #[tokio::test]
    async fn refuses_directories_and_special_files_leaving_all_untouched() {
        let (_dir, root, ws) = workspace();
        write(&root, "d/keep.txt", "keep");
        write(&root, "plain", "original");
        mkfifo(&root.join("fifo"));
        let started = Instant::now();
        assert_eq!(
            call(&ws, "d", "x").await,
            Err(r#""d" is not a regular file (it is a directory)"#.to_owned())
        );
        assert_eq!(
            call(&ws, "fifo", "x").await,
            Err(r#""fifo" is not a regular file (it is a FIFO)"#.to_owned())
        );
        assert_eq!(
            call(&ws, "/dev/null", "x").await,
            Err(r#"path "/dev/null" is outside the workspace"#.to_owned())
        );
        // A parent that is a file: fails before anything is written.
        assert_eq!(
            call(&ws, "plain/child", "x").await,
            Err(r#""plain" is not a directory"#.to_owned())
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(tree(&root), ["d", "d/keep.txt", "fifo", "plain"]);
        assert_eq!(
            std::fs::read_to_string(root.join("plain")).unwrap(),
            "original"
        );
    }

    #[test]
    fn spec_and_subject() {
        let (_dir, root, ws) = workspace();
        let tool = Typed::new(WriteFile);
        assert_eq!(tool.spec().name, "write_file");
        assert_eq!(tool.spec().class, Class::Mutating);
        assert_eq!(
            tool.spec().input_schema["required"],
            json!(["path", "content"])
        );
        assert_eq!(
            tool.subject(&json!({"path": root.join("a/b.rs"), "content": ""}), &ws),
            Some(Subject::Path("a/b.rs".to_owned()))
        );
        assert_eq!(tool.subject(&json!({"path": "../b.rs"}), &ws), None);
    }
}
