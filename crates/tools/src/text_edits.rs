//! Edits a model wrote as text. A small model asked to fix a file often answers with the fixed
//! code in a fenced block instead of calling `edit_file`: read as an answer, no file changes and
//! the run ends (or its check fails the same way twice). For the models that do this (the local
//! servers, as for tool calls written as text), two forms are read from an answer:
//!
//! - a search/replace block, under the line naming its file: exactly an `edit_file` call;
//! - a fenced block of code whose file the answer names (on the fence, on the line before it,
//!   in a comment opening it, or anywhere in its prose), placed in that file by `place`: the
//!   whole file rewritten, or whole definitions (`def`, `fn`, `class`, …) replaced.
//!
//! Each becomes an `edit_file` call, recorded as the call it stands for and run through the same
//! pipeline (allowlist, hooks, sandbox, the workspace's path rules), so it can do nothing that
//! the same call could not. What cannot be placed, or names no existing file, stays text.

use serde_json::{Value, json};

use crate::conversation::ToolUse;
use crate::pipeline::Toolbox;
use crate::workspace::PathError;

mod parse;
mod place;

pub use parse::{Form, forms};

/// The tool every text edit becomes.
pub const TOOL: &str = "edit_file";
/// The id prefix of calls read from an answer's text: how a transcript tells them apart.
pub const ID_PREFIX: &str = "edit_from_text_";
/// Files larger than this are not read to place a block (edit_file's own limit is larger).
const MAX_FILE: u64 = 1 << 20;
/// Files named only in prose that are read to place one block.
const MAX_CANDIDATES: usize = 8;
/// Fenced blocks of one answer looked at.
const MAX_BLOCKS: usize = 16;
/// At most this many edits are taken from one answer.
const MAX_EDITS: usize = 8;

impl Toolbox {
    /// The `edit_file` inputs an answer's text stands for, in the order written; none when
    /// `edit_file` is not offered in this run. `asked` is what the user wrote: the files it
    /// names are where a block the answer does not place itself may go.
    pub fn edits_in_text(&self, text: &str, asked: &[&str]) -> Vec<Value> {
        if !self.policy().offers(TOOL) {
            return Vec::new();
        }
        let mut edits = Vec::new();
        let mut blocks = 0;
        for form in forms(text) {
            match form {
                Form::Replace {
                    path,
                    search,
                    replace,
                } => edits.push(input(&path, &search, &replace)),
                Form::Code {
                    named,
                    mut prose,
                    code,
                } => {
                    // Each block may read a few files: an answer of many blocks is not all read.
                    blocks += 1;
                    if blocks > MAX_BLOCKS {
                        break;
                    }
                    prose.extend(asked.iter().flat_map(|a| parse::paths_in(a)));
                    edits.extend(self.code_edits(named, &prose, &code));
                }
            }
            if edits.len() >= MAX_EDITS {
                edits.truncate(MAX_EDITS);
                break;
            }
        }
        edits
    }

    /// A fenced block's edits. The first file the block names itself that is there is taken
    /// as a user would take it: refused as `edit_file` refuses its path, if it is. A file only
    /// the prose names must be the one place the block fits.
    fn code_edits(&self, named: Vec<String>, prose: &[String], code: &str) -> Vec<Value> {
        for path in named {
            match self.file_text(&path) {
                Ok(Some(text)) => return edits_at(&path, place::place(&text, code)),
                Ok(None) => continue,
                // The call the block stands for, which the pipeline refuses for its path: the
                // block over itself, since what it would replace cannot be known.
                Err(()) => return vec![input(&path, code, code)],
            }
        }
        let mut seen = std::collections::HashSet::new();
        let candidates = prose
            .iter()
            .filter(|p| seen.insert(*p))
            .take(MAX_CANDIDATES);
        let mut placed = candidates.filter_map(|path| {
            let text = self.file_text(path).ok()??;
            let edits = place::place(&text, code);
            (!edits.is_empty()).then_some((path, edits))
        });
        match (placed.next(), placed.next()) {
            (Some((path, edits)), None) => edits_at(path, edits),
            _ => Vec::new(),
        }
    }

    /// The text of the file `path` names, as `edit_file` would read it: `Ok(None)` when there is
    /// no such file (or it is too large or not text to place a block in), `Err` when the call
    /// would be refused (the allowlist, a deny rule, a path out of the workspace or through a
    /// symlink out of it), before anything is read.
    fn file_text(&self, path: &str) -> Result<Option<String>, ()> {
        let probe = call("probe".to_owned(), input(path, "a", "b"));
        if self.checked(&probe, &probe.input).is_err() {
            return Err(());
        }
        let file = match self.workspace().open_file(path) {
            Ok((file, _)) => file,
            Err(PathError::NotFound(_)) => return Ok(None),
            Err(_) => return Err(()),
        };
        let mut bytes = Vec::new();
        use std::io::Read;
        if (&file).take(MAX_FILE + 1).read_to_end(&mut bytes).is_err()
            || bytes.len() as u64 > MAX_FILE
        {
            return Ok(None);
        }
        Ok(String::from_utf8(bytes).ok().filter(|t| !t.contains('\0')))
    }
}

/// The `edit_file` call an input stands for, with its id.
pub fn call(id: String, input: Value) -> ToolUse {
    ToolUse {
        id,
        name: TOOL.to_owned(),
        input,
        raw_input: None,
        defect: None,
        signature: None,
    }
}

fn edits_at(path: &str, edits: Vec<(String, String)>) -> Vec<Value> {
    edits
        .into_iter()
        .map(|(old, new)| input(path, &old, &new))
        .collect()
}

fn input(path: &str, old: &str, new: &str) -> Value {
    json!({"path": path, "old_string": old, "new_string": new})
}

#[cfg(test)]
mod tests;
