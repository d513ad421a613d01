//! Edits that nearly match. Small models copy `old_string` with the wrong indentation (a method
//! quoted from column 0, tabs as spaces) or with trailing spaces; an exact match then fails and
//! they retry the same wrong text until the run is stuck. When the lines of `old_string` match
//! exactly one run of lines in the file once each line's leading and trailing whitespace is
//! ignored, that run is the edit's target: it is replaced by `new_string` re-indented to the
//! file's indentation, and the result says so. Otherwise the error shows the closest lines with
//! their numbers, so the next attempt can copy them.

/// Places listed when the near match is not unique.
const MAX_LISTED: usize = 10;
/// Lines of a file compared with `old_string` for the closest lines (bounds the work).
const MAX_SCANNED: usize = 5_000;
/// Characters of a line compared.
const MAX_COMPARED: usize = 120;
/// Lines shown as the closest.
const MAX_SHOWN: usize = 8;
/// Below this similarity (0..1) no line is shown as close.
const MIN_SIMILARITY: f64 = 0.5;

/// Where `old_string` matches when whitespace at line ends is ignored.
#[derive(Debug, PartialEq)]
pub(super) enum Near {
    /// Exactly one place: the edit to make.
    One(Edit),
    /// Several places, by their first line (1-based).
    Many(Vec<usize>),
    None,
}

/// A near match, ready to apply.
#[derive(Debug, PartialEq)]
pub(super) struct Edit {
    /// The byte range of the file replaced (whole lines).
    pub(super) range: std::ops::Range<usize>,
    pub(super) replacement: String,
    /// The first and last line replaced (1-based).
    pub(super) lines: (usize, usize),
}

impl Edit {
    pub(super) fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.replacement.len());
        out.push_str(&text[..self.range.start]);
        out.push_str(&self.replacement);
        out.push_str(&text[self.range.end..]);
        out
    }

    /// What the result says before the diff.
    pub(super) fn note(&self) -> String {
        let (a, b) = self.lines;
        let lines = if a == b {
            format!("line {a}")
        } else {
            format!("lines {a}-{b}")
        };
        format!(
            "old_string matched {lines} only with indentation and trailing whitespace ignored; \
             replaced them with new_string re-indented to the file's indentation"
        )
    }
}

/// One line of the file: where it starts, where its content ends (before `\r\n` or `\n`), and
/// where the next line starts.
struct Line {
    start: usize,
    content_end: usize,
    end: usize,
}

fn lines_of(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = text[start..]
            .find('\n')
            .map_or(text.len(), |i| start + i + 1);
        let content = text[start..end]
            .trim_end_matches('\n')
            .trim_end_matches('\r');
        out.push(Line {
            start,
            content_end: start + content.len(),
            end,
        });
        start = end;
    }
    out
}

/// Where `old` matches `text` line by line with each line's surrounding whitespace ignored.
pub(super) fn locate(text: &str, old: &str, new: &str) -> Near {
    let old = old.replace("\r\n", "\n");
    let ends_line = old.ends_with('\n');
    let wanted: Vec<&str> = old.strip_suffix('\n').unwrap_or(&old).split('\n').collect();
    let Some(first) = wanted.iter().position(|l| !l.trim().is_empty()) else {
        return Near::None;
    };
    let lines = lines_of(text);
    let content = |l: &Line| &text[l.start..l.content_end];
    let n = wanted.len();
    let mut hits = Vec::new();
    for i in 0..(lines.len() + 1).saturating_sub(n) {
        let same = (0..n).all(|k| content(&lines[i + k]).trim() == wanted[k].trim());
        if same {
            hits.push(i);
            if hits.len() > MAX_LISTED {
                break;
            }
        }
    }
    let [at] = hits[..] else {
        return match hits.is_empty() {
            true => Near::None,
            false => Near::Many(hits.iter().map(|i| i + 1).collect()),
        };
    };
    let last = &lines[at + n - 1];
    let eol = if text[last.content_end..last.end].starts_with('\r') {
        "\r\n"
    } else {
        "\n"
    };
    let file_indent = indent(content(&lines[at + first]));
    let old_indent = indent(wanted[first]);
    let new = new.replace("\r\n", "\n");
    let body = match ends_line {
        true => new.strip_suffix('\n').unwrap_or(&new),
        false => new.as_str(),
    };
    let replacement: Vec<String> = body
        .split('\n')
        .map(|l| reindent(l, old_indent, file_indent))
        .collect();
    // Deleting the lines takes their line ending too, rather than leaving an empty line.
    let end = if body.is_empty() {
        last.end
    } else {
        last.content_end
    };
    Near::One(Edit {
        range: lines[at].start..end,
        replacement: replacement.join(eol),
        lines: (at + 1, at + n),
    })
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// A line of new_string with the indentation old_string had replaced by the file's.
fn reindent(line: &str, old_indent: &str, file_indent: &str) -> String {
    if line.trim().is_empty() {
        return String::new();
    }
    match line.strip_prefix(old_indent) {
        Some(rest) => format!("{file_indent}{rest}"),
        None => line.to_owned(),
    }
}

/// The error's addition when `old` matches nowhere: the lines most like it, numbered as
/// read_file numbers them, or nothing when no line is close.
pub(super) fn closest(text: &str, old: &str) -> Option<String> {
    let old_lines: Vec<&str> = old.lines().collect();
    let first = old_lines.iter().map(|l| l.trim()).find(|l| !l.is_empty())?;
    let offset = old_lines.iter().position(|l| !l.trim().is_empty())?;
    let key: String = first.chars().take(MAX_COMPARED).collect();
    let lines: Vec<&str> = text.lines().collect();
    let (best, score) = lines
        .iter()
        .take(MAX_SCANNED)
        .enumerate()
        .map(|(i, l)| {
            let l: String = l.trim().chars().take(MAX_COMPARED).collect();
            (i, strsim::normalized_levenshtein(&l, &key))
        })
        .fold((0, 0.0), |acc, x| if x.1 > acc.1 { x } else { acc });
    if score < MIN_SIMILARITY {
        return None;
    }
    let from = best.saturating_sub(offset);
    let to = (from + old_lines.len().clamp(1, MAX_SHOWN)).min(lines.len());
    let shown: String = (from..to)
        .map(|i| format!("{:>6}\t{}\n", i + 1, lines[i]))
        .collect();
    Some(format!(
        " The closest lines are {}-{to}:\n{shown}",
        from + 1
    ))
}

#[cfg(test)]
mod tests;
