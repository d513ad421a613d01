//! `edit_file`: the model's way to change part of a file without resending all of it.
//!
//! The model names an exact piece of text and its replacement. Requiring the text to occur exactly
//! once (unless `replace_all`) means an edit never lands somewhere the model did not look; when
//! there is no match, the error says whether whitespace or line endings were the likely reason, so
//! the next attempt can succeed. Only the replaced bytes change: line endings (the model's `\n` is
//! matched as `\r\n` in a CRLF file) and a missing final newline stay as they were. The write is
//! `Workspace::replace_atomic`, so a failed edit leaves the file untouched. The result shows a
//! unified diff so the model can check what it did.

use std::borrow::Cow;
use std::io::Read;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use similar::udiff::UnifiedHunkHeader;
use similar::{ChangeTag, TextDiff};

use super::typed::{BuiltinTool, Files, SubjectOf};
use crate::{Class, ToolContext, ToolError, ToolOutput};

mod near;

/// Larger files are refused: the whole file is held in memory (twice) and diffed.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Unchanged lines shown around each change.
const CONTEXT_LINES: usize = 3;
/// Diff lines (hunk headers included) in the result; the rest is counted, not shown.
const MAX_DIFF_LINES: usize = 200;
/// Bytes shown of one diff line, so a minified file does not flood the result.
const MAX_LINE_BYTES: usize = 500;
/// After this the diff is still correct but may be less minimal.
const DIFF_TIMEOUT: Duration = Duration::from_secs(1);
/// Line numbers listed when old_string occurs more than once.
const MAX_LISTED: usize = 10;

pub(crate) struct EditFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    // Relative to the workspace root (or absolute inside it), as the system prompt says.
    path: String,
    #[schemars(length(min = 1))]
    old_string: String,
    /// May be empty.
    new_string: String,
    /// Replace every occurrence.
    #[serde(default)]
    replace_all: bool,
}

#[async_trait]
impl BuiltinTool for EditFile {
    type Input = Args;
    const NAME: &'static str = "edit_file";
    const CLASS: Class = Class::Mutating;
    const SUBJECT: SubjectOf = SubjectOf::Path { default: None };

    fn description(&self) -> String {
        "Replace old_string with new_string in a text file. old_string must match the file \
         exactly, indentation included, and occur once (include surrounding lines to make it \
         unique) unless replace_all is true. Returns a diff of the change."
            .to_owned()
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Files::run(Self::NAME, ctx, move |files| edit(files, &args))
            .await
            .map(ToolOutput::from)
    }
}

fn edit(files: &Files, args: &Args) -> Result<String, ToolError> {
    let path = args.path.as_str();
    if args.old_string.is_empty() {
        return Err(ToolError::failed(
            "old_string is empty; to create a file or replace all of it, use write_file",
        ));
    }
    // The path first: an edit read from text whose file cannot be read is the block over
    // itself (see `text_edits`), and must be refused for its path as any edit of it is.
    let (file, real) = files.open_file(path)?;
    if args.old_string == args.new_string {
        return Err(ToolError::failed(
            "old_string and new_string are identical; there is nothing to change",
        ));
    }
    let mut bytes = Vec::new();
    (&file)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::failed(format!("cannot read {path:?}: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ToolError::failed(format!(
            "{path:?} is larger than {} MiB; edit_file does not edit files that large",
            MAX_FILE_BYTES / (1024 * 1024)
        )));
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => text,
        _ => {
            return Err(ToolError::failed(format!(
                "{path:?} looks binary (it has NUL bytes or is not valid UTF-8); edit_file only \
                 edits UTF-8 text files"
            )));
        }
    };
    let (updated, count, note) = change(&text, path, args)?;
    // The file that was read, even when `path` went through a symlink inside the workspace; and
    // only if it is still that file.
    let rel = files.workspace.display(&real);
    let report = files
        .workspace
        .replace_atomic(&rel, updated.as_bytes(), &file)?;
    let s = if count == 1 { "" } else { "s" };
    let note = note.map(|n| format!(" ({n})")).unwrap_or_default();
    Ok(format!(
        "edited {}: {count} replacement{s}{note}\n{}",
        report.path,
        unified_diff(&report.path, &text, &updated)
    ))
}

/// The file's new text, the number of replacements, and what to say about a near match.
fn change(
    text: &str,
    path: &str,
    args: &Args,
) -> Result<(String, usize, Option<String>), ToolError> {
    let (old, new) = in_file_style(text, &args.old_string, &args.new_string);
    let count = text.matches(old.as_ref()).count();
    // Mixed line endings have their own, exact advice (see `not_found`).
    let mixed = to_lf(text).contains(to_lf(&args.old_string).as_ref());
    if count == 0 && !mixed {
        return match near::locate(text, &args.old_string, &args.new_string) {
            near::Near::One(edit) => Ok((edit.apply(text), 1, Some(edit.note()))),
            near::Near::Many(lines) => Err(ToolError::failed(ambiguous_near(path, &lines))),
            near::Near::None => Err(ToolError::failed(not_found(text, path, &args.old_string))),
        };
    }
    if count == 0 {
        return Err(ToolError::failed(not_found(text, path, &args.old_string)));
    }
    if count > 1 && !args.replace_all {
        return Err(ToolError::failed(ambiguous(text, path, &old, count)));
    }
    let updated = if args.replace_all {
        text.replace(old.as_ref(), &new)
    } else {
        text.replacen(old.as_ref(), &new, 1)
    };
    Ok((updated, count, None))
}

fn ambiguous_near(path: &str, lines: &[usize]) -> String {
    let listed: Vec<String> = lines.iter().map(usize::to_string).collect();
    format!(
        "old_string was not found in {path:?}; with indentation ignored it matches at lines {}: \
         copy it exactly, with surrounding lines so that it matches once",
        listed.join(", ")
    )
}

/// The strings in the file's own line-ending style: models write `\n` even when the file uses
/// `\r\n`, and a CRLF file must stay CRLF. The strings as given win when only they match (a
/// mixed file).
fn in_file_style<'a>(text: &str, old: &'a str, new: &'a str) -> (Cow<'a, str>, Cow<'a, str>) {
    let crlf = text.matches("\r\n").count();
    let bare_lf = text.matches('\n').count() - crlf;
    let convert =
        |s: &'a str| -> Cow<'a, str> { if crlf > bare_lf { to_crlf(s) } else { to_lf(s) } };
    let (styled_old, styled_new) = (convert(old), convert(new));
    if !text.contains(styled_old.as_ref()) && text.contains(old) {
        return (Cow::Borrowed(old), Cow::Borrowed(new));
    }
    (styled_old, styled_new)
}

fn to_lf(s: &str) -> Cow<'_, str> {
    if s.contains("\r\n") {
        Cow::Owned(s.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(s)
    }
}

fn to_crlf(s: &str) -> Cow<'_, str> {
    if s.contains('\n') {
        Cow::Owned(to_lf(s).replace('\n', "\r\n"))
    } else {
        Cow::Borrowed(s)
    }
}

/// The zero-match error, with the likely reason when there is one.
fn not_found(text: &str, path: &str, old: &str) -> String {
    let mut msg = format!("old_string was not found in {path:?}.");
    if to_lf(text).contains(to_lf(old).as_ref()) {
        msg.push_str(
            " It matches if line endings are ignored: the file mixes CRLF and LF line endings \
             there; copy the text with its exact line endings.",
        );
    } else if let Some(line) = whitespace_insensitive_match(text, old) {
        msg.push_str(&format!(
            " A match ignoring whitespace starts at line {line}: check indentation, tabs versus \
             spaces and trailing spaces."
        ));
    }
    msg.push_str(" Read the file again and copy old_string exactly.");
    let mixed = to_lf(text).contains(to_lf(old).as_ref());
    if let Some(close) = near::closest(text, old).filter(|_| !mixed) {
        msg.push_str(&close);
    }
    msg
}

/// The 1-based line where `old` occurs if all whitespace is ignored on both sides.
fn whitespace_insensitive_match(text: &str, old: &str) -> Option<usize> {
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let needle = squeeze(old);
    if needle.is_empty() {
        return None;
    }
    let at = squeeze(text).find(&needle)?;
    // Map the offset in the squeezed text back to the original by counting kept bytes again.
    let mut kept = 0;
    for (offset, c) in text.char_indices().filter(|(_, c)| !c.is_whitespace()) {
        if kept == at {
            return Some(line_of(text, offset));
        }
        kept += c.len_utf8();
    }
    None
}

fn ambiguous(text: &str, path: &str, old: &str, count: usize) -> String {
    let lines: Vec<String> = text
        .match_indices(old)
        .take(MAX_LISTED)
        .map(|(offset, _)| line_of(text, offset).to_string())
        .collect();
    let more = if count > MAX_LISTED { ", …" } else { "" };
    format!(
        "old_string occurs {count} times in {path:?} (at lines {}{more}); add surrounding lines \
         to old_string so that it matches exactly once, or set replace_all to true to replace \
         every occurrence",
        lines.join(", ")
    )
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `diff -u` style, line endings not shown (a CRLF file's diff reads like any other).
fn unified_diff(path: &str, old: &str, new: &str) -> String {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    let (mut shown, mut cut) = (0, 0);
    let mut push = |line: &str| {
        if shown < MAX_DIFF_LINES {
            out.push_str(line);
            out.push('\n');
            shown += 1;
        } else {
            cut += 1;
        }
    };
    for group in diff.grouped_ops(CONTEXT_LINES) {
        push(&UnifiedHunkHeader::new(&group).to_string());
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                push(&format!("{sign}{}", shorten(change.value())));
                if change.missing_newline() {
                    push("\\ No newline at end of file");
                }
            }
        }
    }
    if cut > 0 {
        out.push_str(&format!(
            "[diff cut after {MAX_DIFF_LINES} lines; {cut} more lines not shown]\n"
        ));
    }
    out
}

fn shorten(line: &str) -> Cow<'_, str> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.len() <= MAX_LINE_BYTES {
        return Cow::Borrowed(line);
    }
    let mut end = MAX_LINE_BYTES;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}[… {} more bytes]",
        &line[..end],
        line.len() - end
    ))
}

#[cfg(test)]
mod tests;
