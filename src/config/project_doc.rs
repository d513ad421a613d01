//! The project's instructions (`--project-doc`, default `AGENTS.md`): found in each directory
//! from the repository's root (the nearest directory with a `.git`, a directory or a file, at
//! or above the workspace; without one, the workspace alone) down to the workspace, read once
//! before anything runs, and capped.
//!
//! They are text from the repository, so nothing about them can fail a run or reach outside
//! it: a file that is not UTF-8 is read lossily, a huge one is cut (32 KiB in all, as codex
//! reads), a link that leads out of the repository or to something not a file is skipped with
//! a warning, and each file is opened once (see `find`). They inform the model and set nothing: no setting is ever read from them.

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::ConfigError;
use crate::files::{self, OpenError};
use crate::transcript::ProjectDoc;

/// The most bytes of project instructions a run sends, all files together.
pub(crate) const MAX_BYTES: usize = 32 * 1024;

/// What a cut file ends with.
const CUT: &str = "\n\n[rounds: cut here; project instructions are capped at 32 KiB]";

/// The project's instructions a run sends (path from the repository's root and text, root
/// first) and what its `start` line records of them.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProjectDocs {
    pub(crate) sent: Vec<(String, String)>,
    pub(crate) record: Vec<ProjectDoc>,
}

impl ProjectDocs {
    /// The bytes of text sent.
    pub(crate) fn len(&self) -> usize {
        self.sent.iter().map(|(_, text)| text.len()).sum()
    }
}

/// `--project-doc` names only a file, never a path: a name with a separator (or `..`) could
/// read a file of the user's instead of the repository's.
pub(super) fn check_names(names: &[String]) -> Result<(), ConfigError> {
    match names
        .iter()
        .find(|n| n.is_empty() || n.contains('/') || n.contains('\0') || *n == "." || *n == "..")
    {
        Some(bad) => Err(ConfigError::ProjectDocName(bad.clone())),
        None => Ok(()),
    }
}

/// The instructions named `names` for a run in `workspace` (canonical), at most `MAX_BYTES`.
pub(super) fn read(workspace: &Path, names: &[String]) -> ProjectDocs {
    read_capped(workspace, names, MAX_BYTES)
}

fn read_capped(workspace: &Path, names: &[String], cap: usize) -> ProjectDocs {
    let root = repository_root(workspace);
    let mut dirs: Vec<&Path> = workspace
        .ancestors()
        .take_while(|d| d.starts_with(&root))
        .collect();
    dirs.reverse();
    let mut docs = ProjectDocs::default();
    let mut left = cap;
    let mut unread = Vec::new();
    for dir in dirs {
        let Some((file, rel)) = find(dir, names, &root) else {
            continue;
        };
        if left == 0 {
            unread.push(rel);
            continue;
        }
        match read_one(file, &rel, left) {
            Ok((text, bytes, truncated)) if !text.trim().is_empty() => {
                left -= text.len();
                let text = if truncated { text + CUT } else { text };
                if truncated {
                    // Nothing after the cut is read: the budget is spent.
                    left = 0;
                    tracing::warn!(
                        "{rel}: project instructions are capped at {} KiB in all; only its \
                         start is sent",
                        cap / 1024
                    );
                }
                docs.record.push(ProjectDoc {
                    path: rel.clone(),
                    bytes,
                    truncated,
                });
                docs.sent.push((rel, text));
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("{rel}: not read: {e}"),
        }
    }
    if !unread.is_empty() {
        tracing::warn!(
            "project instructions are capped at {} KiB in all; not read: {}",
            cap / 1024,
            unread.join(", ")
        );
    }
    docs
}

/// The nearest directory at or above `workspace` holding `.git` (a directory, or the file of a
/// worktree or submodule); the workspace itself when there is none.
fn repository_root(workspace: &Path) -> PathBuf {
    workspace
        .ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .unwrap_or(workspace)
        .to_owned()
}

/// The first of `names` in `dir` that is a regular file, opened, and its path from the root; one
/// that is anything else is skipped with a warning.
///
/// Opened once, by [`files::open_regular`]: no link is followed in any component, and the
/// descriptor is checked (a regular file, not procfs). A link is followed one step, and only to
/// a path with no link, `..` or `.` in it that lies inside the repository (`CLAUDE.md ->
/// AGENTS.md`), opened the same way: checking a path and then opening it again would let a tool
/// of another run over the same workspace (`rounds batch --jobs 4`) swap the file for a link to
/// `/proc/self/environ` in between.
fn find(dir: &Path, names: &[String], root: &Path) -> Option<(File, String)> {
    for name in names {
        let path = dir.join(name);
        let rel = path
            .strip_prefix(root)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_else(|_| name.clone());
        let opened = match files::open_regular(&path) {
            Err(OpenError::Link(target)) if inside(&target, root) => files::open_regular(&target),
            Err(OpenError::Link(_)) => {
                tracing::warn!("{rel}: a link out of the repository; not read");
                continue;
            }
            other => other,
        };
        match opened {
            Ok(file) => return Some((file, rel)),
            Err(OpenError::NotFound) => {}
            Err(OpenError::Link(_)) => tracing::warn!("{rel}: a link to a link; not read"),
            Err(e) => tracing::warn!("{rel}: not read: {e}"),
        }
    }
    None
}

/// Whether `target` names a place inside `root` by itself: absolute, with no `.` or `..`
/// component (the walk that opens it follows no link, so where it names is where it is).
fn inside(target: &Path, root: &Path) -> bool {
    target.is_absolute()
        && target.starts_with(root)
        && target
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// A file's text, at most `left` bytes of it (cut at a character), lossily decoded; its size on
/// disk; whether it was cut. A file that is not UTF-8 is said once on stderr.
fn read_one(file: File, rel: &str, left: usize) -> std::io::Result<(String, u64, bool)> {
    let bytes = file.metadata()?.len();
    let mut raw = Vec::new();
    // Lossy decoding never shortens, so `left + 1` raw bytes tell whether the text fits.
    file.take(left as u64 + 1).read_to_end(&mut raw)?;
    let mut text = match String::from_utf8(raw) {
        Ok(text) => text,
        Err(e) => {
            tracing::warn!("{rel}: not UTF-8; bytes that are not are sent as U+FFFD");
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    let truncated = text.len() > left;
    if truncated {
        let mut end = left;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    Ok((text, bytes, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn files_come_from_the_root_down_the_first_name_of_each_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("a/b");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "root claude").unwrap();
        std::fs::write(root.join("a/CLAUDE.md"), "a claude").unwrap();
        std::fs::write(ws.join("AGENTS.md"), "b").unwrap();
        let docs = read(&ws, &names(&["AGENTS.md", "CLAUDE.md"]));
        let sent: Vec<(&str, &str)> = docs
            .sent
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        assert_eq!(
            sent,
            [
                ("AGENTS.md", "root"),
                ("a/CLAUDE.md", "a claude"),
                ("a/b/AGENTS.md", "b")
            ]
        );
        assert_eq!(docs.record[0].bytes, 4);
        // Above the repository's root nothing is read.
        let docs = read(&root.join("a"), &names(&["CLAUDE.md"]));
        assert_eq!(docs.sent.len(), 2);
    }

    #[test]
    fn the_cap_cuts_at_a_character_and_leaves_the_rest_unread() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("x/.git")).unwrap();
        let ws = root.join("x/y");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(root.join("x/AGENTS.md"), "ééééé").unwrap();
        std::fs::write(ws.join("AGENTS.md"), "never").unwrap();
        let docs = read_capped(&ws, &names(&["AGENTS.md"]), 5);
        assert_eq!(docs.sent.len(), 1);
        assert_eq!(docs.sent[0].1, format!("éé{CUT}"));
        assert!(docs.record[0].truncated);
        assert_eq!(docs.record[0].bytes, 10);
        // No .git inside x/y's own tree above x: the root is x, the file outside it unread.
        assert!(!docs.sent.iter().any(|(p, _)| p.starts_with("..")));
    }

    #[test]
    fn a_name_is_a_file_name_never_a_path() {
        for bad in ["", "../AGENTS.md", "a/b", ".", ".."] {
            assert!(check_names(&names(&[bad])).is_err(), "{bad:?}");
        }
        assert!(check_names(&names(&["AGENTS.md", "CLAUDE.md", ".cursorrules"])).is_ok());
    }
}
