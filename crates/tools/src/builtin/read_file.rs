//! `read_file`: the model's way to look at a text file, with line numbers it can cite and page by.
//!
//! Output is capped per call (lines and bytes) because a whole large file would crowd out the
//! conversation; when a cap cuts the output, the last line says exactly how to get the rest.
//! Binary files are reported, never dumped.

use std::io::{self, BufRead, BufReader, Cursor, Read};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::typed::{BuiltinTool, Files, SubjectOf};
use crate::attachment::{self, Limits};
use crate::{Class, ToolContext, ToolError, ToolOutput};

/// Bytes of file content shown per call.
const MAX_BYTES: usize = 256 * 1024;
/// Lines shown per call.
const MAX_LINES: usize = 2000;
/// How much of the file's start decides "binary": the same answer whatever range is asked for.
const SNIFF_BYTES: u64 = 8 * 1024;
/// Lines after the shown ones are only counted (for "of N") up to here, so a huge file does not
/// make every call read all of it.
const COUNT_LIMIT: u64 = 64 * 1024 * 1024;

/// `images`: the run's model takes images, and is told it can look at them with this tool.
#[derive(Default)]
pub(crate) struct ReadFile {
    pub(crate) images: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    // Relative to the workspace root (or absolute inside it), as the system prompt says.
    path: String,
    /// First line to show, from 1.
    #[schemars(range(min = 1))]
    start_line: Option<usize>,
    /// Last line to show, inclusive.
    #[schemars(range(min = 1))]
    end_line: Option<usize>,
}

#[async_trait]
impl BuiltinTool for ReadFile {
    type Input = Args;
    const NAME: &'static str = "read_file";
    const CLASS: Class = Class::Safe;
    const SUBJECT: SubjectOf = SubjectOf::Path { default: None };

    fn description(&self) -> String {
        let mut text = format!(
            "Read a text file. Each line comes as its number, a tab and its text. At most \
             {MAX_LINES} lines or {} KiB per call; when more remain, the last line says where \
             to continue.",
            MAX_BYTES / 1024
        );
        if self.images {
            text.push_str(" A PNG, JPEG, GIF or WebP image is shown to you as an image.");
        }
        text
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let images = ctx.images;
        Files::run(Self::NAME, ctx, move |files| read(files, &args, images)).await
    }
}

/// Why showing stopped before the requested range was done.
enum Cut {
    Lines,
    Bytes,
    /// The first line alone was over the byte cap; only its start is shown.
    LongLine,
}

fn read(files: &Files, args: &Args, images: Option<Limits>) -> Result<ToolOutput, ToolError> {
    let path = args.path.as_str();
    let start = args.start_line.unwrap_or(1);
    if start == 0 {
        return Err(ToolError::failed("start_line must be 1 or more"));
    }
    if let Some(end) = args.end_line
        && end < start
    {
        return Err(ToolError::failed(format!(
            "end_line ({end}) is before start_line ({start})"
        )));
    }
    let (mut file, _) = files.open_file(path)?;
    let io_err = |e: io::Error| ToolError::failed(format!("cannot read {path:?}: {e}"));
    let size = file.metadata().map_err(io_err)?.len();

    let mut head = Vec::new();
    (&mut file)
        .take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(io_err)?;
    if head.is_empty() {
        return match start {
            1 => Ok("(empty file)".to_owned().into()),
            _ => Err(past_end(path, start, 0)),
        };
    }
    if looks_binary(&head, (head.len() as u64) < SNIFF_BYTES) {
        return binary(file, path, size, head, images);
    }

    let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(file));
    let mut shown = show(&mut reader, start, args.end_line).map_err(io_err)?;
    if shown.count == 0 {
        return Err(past_end(path, start, shown.seen));
    }
    if let Some(footer) = shown.footer(start, size) {
        shown.text.push_str(&footer);
    }
    Ok(shown.text.into())
}

/// A binary file: an image, to a model that takes images, within its provider's limits;
/// otherwise a note saying what it is.
fn binary(
    file: std::fs::File,
    path: &str,
    size: u64,
    mut head: Vec<u8>,
    images: Option<Limits>,
) -> Result<ToolOutput, ToolError> {
    let image = attachment::sniff(&head).filter(|k| k.is_image());
    let (Some(kind), Some(limits)) = (image, images) else {
        return Ok(match image {
            Some(kind) => format!(
                "binary file {path:?} ({size} bytes), an image ({}) this model is not known \
                 to take; not shown",
                kind.media_type()
            ),
            None => format!("binary file {path:?} ({size} bytes); not shown"),
        }
        .into());
    };
    let refuse = |why: String| ToolError::failed(format!("cannot show the image {path:?}: {why}"));
    if size > limits.image_bytes {
        return Err(refuse(format!(
            "{size} bytes, more than the {} bytes {} takes",
            limits.image_bytes, limits.who
        )));
    }
    (&file)
        .take(limits.image_bytes + 1)
        .read_to_end(&mut head)
        .map_err(|e| refuse(e.to_string()))?;
    let shown = attachment::Attachment::of(path, head).map_err(|e| refuse(e.to_string()))?;
    if let Some(why) = limits.refusal(&shown) {
        return Err(refuse(why));
    }
    let pixels = shown
        .size
        .map(|(w, h)| format!(", {w}×{h} pixels"))
        .unwrap_or_default();
    Ok(ToolOutput {
        text: format!(
            "image {path:?} ({}, {size} bytes{pixels}), attached",
            kind.media_type()
        ),
        volatile: Vec::new(),
        exit_code: None,
        media: vec![shown],
    })
}

/// What one pass over the file showed of the range asked for.
struct Shown {
    /// The numbered lines.
    text: String,
    /// How many lines `text` holds.
    count: usize,
    /// Lines read: all of the file's unless `counted_all` is false.
    seen: usize,
    /// Counting the lines after the shown ones stopped at `COUNT_LIMIT`.
    counted_all: bool,
    cut: Option<Cut>,
}

/// Shows the lines from `start` to `end` (or the end of the file) within the caps, then counts
/// the rest of the file's lines when a cap cut the range.
fn show(reader: &mut impl BufRead, start: usize, end: Option<usize>) -> io::Result<Shown> {
    let mut shown = Shown {
        text: String::new(),
        count: 0,
        seen: 0,
        counted_all: true,
        cut: None,
    };
    let (mut shown_bytes, mut scanned) = (0usize, 0u64);
    let mut line = Vec::new();
    loop {
        // Keep one byte more than the cap so an over-long line is recognisable, never the whole
        // of a multi-gigabyte line.
        let keep = if shown.cut.is_none() {
            MAX_BYTES + 2
        } else {
            0
        };
        let consumed = next_line(reader, keep, &mut line)?;
        if consumed == 0 {
            return Ok(shown);
        }
        shown.seen += 1;
        scanned += consumed as u64;
        if shown.cut.is_some() {
            if scanned > COUNT_LIMIT {
                shown.counted_all = false;
                return Ok(shown);
            }
            continue;
        }
        if shown.seen < start {
            continue;
        }
        let text = trim_eol(&line);
        if shown.count == MAX_LINES {
            shown.cut = Some(Cut::Lines);
        } else if shown.count == 0 && text.len() > MAX_BYTES {
            push_line(&mut shown.text, shown.seen, utf8_prefix(&text[..MAX_BYTES]));
            shown.count = 1;
            shown.cut = Some(Cut::LongLine);
        } else if shown.count > 0 && shown_bytes + line.len() > MAX_BYTES {
            shown.cut = Some(Cut::Bytes);
        } else {
            push_line(&mut shown.text, shown.seen, text);
            shown.count += 1;
            shown_bytes += line.len();
        }
        if shown.cut.is_none() && end.is_some_and(|end| shown.seen >= end) {
            return Ok(shown);
        }
    }
}

impl Shown {
    /// The last line when a cap cut the output: what was shown of how much, and how to read on.
    /// `size` is the file's in bytes.
    fn footer(&self, start: usize, size: u64) -> Option<String> {
        let last = start + self.count - 1;
        let total = if self.counted_all {
            self.seen.to_string()
        } else {
            format!("more than {}", self.seen)
        };
        Some(match self.cut.as_ref()? {
            Cut::Lines => format!(
                "[showing lines {start}-{last} of {total}; call again with start_line={} to read \
                 more]",
                last + 1
            ),
            Cut::Bytes => format!(
                "[showing lines {start}-{last} of {total}: output is capped at {MAX_BYTES} bytes \
                 per call and the file is {size} bytes; call again with start_line={} to read \
                 more]",
                last + 1
            ),
            Cut::LongLine if self.seen > start => format!(
                "[line {start} is longer than {MAX_BYTES} bytes; only its start is shown and the \
                 rest of it cannot be read with this tool; the file has {total} lines; call again \
                 with start_line={} to read on]",
                start + 1
            ),
            Cut::LongLine => format!(
                "[line {start} is longer than {MAX_BYTES} bytes; only its start is shown and the \
                 rest of it cannot be read with this tool]"
            ),
        })
    }
}

fn past_end(path: &str, start: usize, lines: usize) -> ToolError {
    let s = if lines == 1 { "" } else { "s" };
    ToolError::failed(format!(
        "start_line {start} is past the end of {path:?}, which has {lines} line{s}"
    ))
}

/// A NUL byte or invalid UTF-8 means binary. A multi-byte character cut by the end of the sample
/// (not by the end of the file) does not count.
fn looks_binary(head: &[u8], whole_file: bool) -> bool {
    if head.contains(&0) {
        return true;
    }
    match std::str::from_utf8(head) {
        Ok(_) => false,
        Err(e) => e.error_len().is_some() || whole_file,
    }
}

/// Reads one line (with its newline), storing at most `keep` bytes of it in `line`; returns the
/// bytes consumed, 0 at the end of the file.
fn next_line(reader: &mut impl BufRead, keep: usize, line: &mut Vec<u8>) -> io::Result<usize> {
    line.clear();
    let mut consumed = 0;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(consumed);
        }
        let (used, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = keep.saturating_sub(line.len()).min(used);
        line.extend_from_slice(&buf[..room]);
        reader.consume(used);
        consumed += used;
        if done {
            return Ok(consumed);
        }
    }
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Drops a multi-byte character split by the byte cap instead of showing a replacement char.
fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// Past the binary sniff a stray invalid byte is shown as U+FFFD rather than hiding the file.
fn push_line(out: &mut String, number: usize, text: &[u8]) {
    let text = String::from_utf8_lossy(text);
    out.push_str(&format!("{number:>6}\t{text}\n"));
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::Tool;
    use crate::Workspace;
    use crate::builtin::typed::Typed;
    use crate::policy::Subject;
    use crate::workspace::testing::{self, mkfifo, workspace, write};
    use serde_json::Value;

    async fn call(ws: &Workspace, input: Value) -> Result<String, String> {
        testing::call(&Typed::new(ReadFile::default()), ws, input)
            .await
            .map_err(|e| e.to_string())
    }

    fn numbered(range: std::ops::RangeInclusive<usize>, text: impl Fn(usize) -> String) -> String {
        range.map(|n| format!("{n:>6}\t{}\n", text(n))).collect()
    }

    #[tokio::test]
    async fn whole_file_in_cat_n_format() {
        let (_dir, root, ws) = workspace();
        write(&root, "a.txt", "one\ntwo\r\nthree");
        let got = call(&ws, json!({"path": "a.txt"})).await;
        assert_eq!(
            got,
            Ok("     1\tone\n     2\ttwo\n     3\tthree\n".to_owned())
        );
    }

    #[tokio::test]
    async fn ranges() {
        let (_dir, root, ws) = workspace();
        let content: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        write(&root, "a.txt", &content);
        let got = call(
            &ws,
            json!({"path": "a.txt", "start_line": 3, "end_line": 5}),
        )
        .await;
        assert_eq!(got, Ok(numbered(3..=5, |n| format!("line {n}"))));
        let got = call(&ws, json!({"path": "./a.txt", "start_line": 9})).await;
        assert_eq!(got, Ok(numbered(9..=10, |n| format!("line {n}"))));
        let got = call(
            &ws,
            json!({"path": "a.txt", "start_line": 10, "end_line": 99}),
        )
        .await;
        assert_eq!(got, Ok(numbered(10..=10, |n| format!("line {n}"))));
        let got = call(&ws, json!({"path": "a.txt", "start_line": 11})).await;
        assert_eq!(
            got,
            Err(r#"start_line 11 is past the end of "a.txt", which has 10 lines"#.to_owned())
        );
        let got = call(
            &ws,
            json!({"path": "a.txt", "start_line": 5, "end_line": 4}),
        )
        .await;
        assert_eq!(got, Err("end_line (4) is before start_line (5)".to_owned()));
    }

    #[tokio::test]
    async fn line_cap_says_how_to_continue() {
        let (_dir, root, ws) = workspace();
        let content: String = (1..=5234).map(|n| format!("l{n}\n")).collect();
        write(&root, "big.txt", &content);
        let got = call(&ws, json!({"path": "big.txt"})).await.unwrap();
        let mut want = numbered(1..=2000, |n| format!("l{n}"));
        want.push_str(
            "[showing lines 1-2000 of 5234; call again with start_line=2001 to read more]",
        );
        assert_eq!(got, want);
        let got = call(&ws, json!({"path": "big.txt", "start_line": 4001}))
            .await
            .unwrap();
        assert_eq!(got, numbered(4001..=5234, |n| format!("l{n}")));
    }

    #[tokio::test]
    async fn byte_cap_says_how_to_continue() {
        let (_dir, root, ws) = workspace();
        // 1000 lines of 299 bytes + newline: 873 whole lines fit in 256 KiB.
        let line = |n: usize| format!("{n:0>299}");
        let content: String = (1..=1000).map(|n| line(n) + "\n").collect();
        write(&root, "wide.txt", &content);
        let got = call(&ws, json!({"path": "wide.txt"})).await.unwrap();
        let mut want = numbered(1..=873, line);
        want.push_str(
            "[showing lines 1-873 of 1000: output is capped at 262144 bytes per call and the \
             file is 300000 bytes; call again with start_line=874 to read more]",
        );
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn over_long_line_is_cut() {
        let (_dir, root, ws) = workspace();
        write(&root, "min.js", format!("{}\nnext\n", "x".repeat(300_000)));
        let got = call(&ws, json!({"path": "min.js"})).await.unwrap();
        let want = format!(
            "     1\t{}\n[line 1 is longer than 262144 bytes; only its start is shown and the \
             rest of it cannot be read with this tool; the file has 2 lines; call again with \
             start_line=2 to read on]",
            "x".repeat(MAX_BYTES)
        );
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn binary_and_invalid_utf8_are_reported() {
        let (_dir, root, ws) = workspace();
        write(&root, "x.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        write(&root, "latin1.txt", b"caf\xe9\n");
        assert_eq!(
            call(&ws, json!({"path": "x.png"})).await,
            Ok(
                r#"binary file "x.png" (16 bytes), an image (image/png) this model is not known to take; not shown"#
                    .to_owned()
            )
        );
        assert_eq!(
            call(&ws, json!({"path": "latin1.txt"})).await,
            Ok(r#"binary file "latin1.txt" (5 bytes); not shown"#.to_owned())
        );
    }

    #[tokio::test]
    async fn utf8_split_at_sniff_boundary_is_text() {
        let (_dir, root, ws) = workspace();
        // "é" is two bytes; the 8192-byte sample ends between them.
        let content = format!("{}é\n", "a".repeat(8191));
        write(&root, "t.txt", &content);
        let got = call(&ws, json!({"path": "t.txt"})).await;
        assert_eq!(got, Ok(format!("     1\t{content}")));
    }

    #[tokio::test]
    async fn empty_file() {
        let (_dir, root, ws) = workspace();
        write(&root, "e.txt", "");
        assert_eq!(
            call(&ws, json!({"path": "e.txt"})).await,
            Ok("(empty file)".to_owned())
        );
        assert_eq!(
            call(&ws, json!({"path": "e.txt", "start_line": 2})).await,
            Err(r#"start_line 2 is past the end of "e.txt", which has 0 lines"#.to_owned())
        );
    }

    #[tokio::test]
    async fn refusals_come_from_the_workspace() {
        let (_dir, root, ws) = workspace();
        mkfifo(&root.join("fifo"));
        assert_eq!(
            call(&ws, json!({"path": "fifo"})).await,
            Err(r#""fifo" is not a regular file (it is a FIFO)"#.to_owned())
        );
        assert_eq!(
            call(&ws, json!({"path": "../x"})).await,
            Err(r#"path "../x" is outside the workspace"#.to_owned())
        );
    }

    #[test]
    fn subject_is_workspace_relative() {
        let (_dir, root, ws) = workspace();
        let tool = Typed::new(ReadFile::default());
        let abs = root.join("src/a.rs");
        assert_eq!(
            tool.subject(&json!({"path": abs}), &ws),
            Some(Subject::Path("src/a.rs".to_owned()))
        );
        assert_eq!(tool.subject(&json!({"path": "../a"}), &ws), None);
        assert_eq!(tool.subject(&json!({}), &ws), None);
    }
}
