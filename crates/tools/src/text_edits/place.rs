//! Where a block of code belongs in a file. Two readings, each only when it is unmistakable:
//!
//! 1. **Definitions**: the block is one or more whole definitions (`def`, `class`, `fn`,
//!    `function`, `func`, `struct`, `enum`) and each is defined exactly once in the file; each
//!    replaces its namesake, re-indented to it. The block's other lines must already be in the
//!    file (its imports), or be comments: a block that needs more is not placed.
//! 2. **The whole file**: the block is the file with changes, dropping none of its lines but in
//!    a changed place (at most two lines going with nothing in their stead).
//!
//! Anything else (a fragment, a block that matches nowhere, the file unchanged) is not placed.

use similar::{DiffOp, TextDiff};

/// Words a header may start with, in the order they are written.
const MODIFIERS: [&str; 6] = [
    "pub(crate) ",
    "pub ",
    "export ",
    "default ",
    "async ",
    "static ",
];
/// Lines a changed place may drop with nothing in their stead and still be the whole file.
const MAX_DROPPED: usize = 2;
/// The least share of the file's lines the block keeps to be the whole file.
const MIN_RATIO: f32 = 0.5;

/// The `(old, new)` replacements that put `code` in `file`; empty when it has no clear place.
pub(super) fn place(file: &str, code: &str) -> Vec<(String, String)> {
    let file_lines: Vec<&str> = file.lines().collect();
    let code_lines: Vec<&str> = code.lines().collect();
    // A sketch ("# your implementation here", "// ... rest of the code") is not the code.
    if code_lines.iter().any(|l| is_elision(l)) {
        return Vec::new();
    }
    if let Some(edits) = definitions(file, &file_lines, &code_lines) {
        return edits;
    }
    whole(file, code).into_iter().collect()
}

/// A definition: where it starts (its decorators), where it ends, what it is and its name.
#[derive(Debug, PartialEq)]
struct Unit<'a> {
    start: usize,
    header: usize,
    end: usize,
    keyword: &'a str,
    name: &'a str,
}

fn definitions(file: &str, file_lines: &[&str], code: &[&str]) -> Option<Vec<(String, String)>> {
    let base = code
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent(l))
        .min()?;
    let mut units = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let line = code[i];
        match header(line).filter(|_| indent(line) == base) {
            Some((keyword, name)) => {
                let unit = unit(code, i, keyword, name);
                i = unit.end.max(i + 1);
                units.push(unit);
            }
            None => {
                // A loose line (an import, a blank, a comment) must not be lost: it is already
                // in the file, or it is only words.
                let t = line.trim();
                let known = t.is_empty()
                    || is_comment(t)
                    || t.starts_with('@')
                    || file_lines.iter().any(|f| f.trim() == t);
                if !known {
                    return None;
                }
                i += 1;
            }
        }
    }
    if units.is_empty() {
        return None;
    }
    let mut edits = Vec::new();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    for u in &units {
        let mut namesakes = (0..file_lines.len())
            .filter(|&j| header(file_lines[j]).is_some_and(|(k, n)| k == u.keyword && n == u.name));
        let (Some(at), None) = (namesakes.next(), namesakes.next()) else {
            return None;
        };
        let target = unit(file_lines, at, u.keyword, u.name);
        if taken
            .iter()
            .any(|&(s, e)| target.start < e && s < target.end)
        {
            return None;
        }
        taken.push((target.start, target.end));
        // A body emptied to `pass` where the file has code is a stub, not a fix.
        if hollow(&code[u.header + 1..u.end]) && !hollow(&file_lines[at + 1..target.end]) {
            return None;
        }
        let old = file_lines[target.start..target.end].join("\n");
        let prefix = &file_lines[at][..indent(file_lines[at])];
        let mut new = reindent(&code[u.start..u.end], indent(code[u.header]), prefix);
        // `export`, `pub`, `async` the block left off its header stay: it is still that one.
        let kept = modifiers(file_lines[at]);
        if modifiers(code[u.header]).is_empty() && !kept.is_empty() {
            let above: usize = new
                .lines()
                .take(u.header - u.start)
                .map(|l| l.len() + 1)
                .sum();
            new.insert_str(above + prefix.len(), kept);
        }
        if old.trim_end() == new.trim_end() {
            continue;
        }
        if file.matches(old.as_str()).count() != 1 {
            return None;
        }
        edits.push((old, new));
    }
    (!edits.is_empty()).then_some(edits)
}

/// The definition whose header is `lines[at]`: its decorators above, and its body, by braces
/// when it opens one before a line ends with `:`, else by indentation.
fn unit<'a>(lines: &[&str], at: usize, keyword: &'a str, name: &'a str) -> Unit<'a> {
    let own = indent(lines[at]);
    let mut start = at;
    while start > 0 && indent(lines[start - 1]) == own && is_decorator(lines[start - 1].trim()) {
        start -= 1;
    }
    let end = braced_end(lines, at).unwrap_or_else(|| indented_end(lines, at, own));
    Unit {
        start,
        header: at,
        end,
        keyword,
        name,
    }
}

/// The line after the brace that closes the first one opened from `at`, if a `{` opens before
/// a line of the header ends with `:` (Python's) or `;` (a declaration).
fn braced_end(lines: &[&str], at: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut opened = false;
    for (j, line) in lines.iter().enumerate().skip(at) {
        for c in strip_strings(line).chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return Some(j + 1);
        }
        let t = line.trim_end();
        if !opened && (t.ends_with(':') || t.ends_with(';')) {
            return None;
        }
    }
    None
}

/// The line after the body indented under the header at `at` (the header may run over lines
/// until one ends with `:`). Trailing blank lines are not the body's.
fn indented_end(lines: &[&str], at: usize, own: usize) -> usize {
    let mut j = at;
    while j < lines.len() && !lines[j].trim_end().ends_with(':') {
        j += 1;
    }
    let mut end = (j + 1).min(lines.len());
    for (k, line) in lines.iter().enumerate().skip(end) {
        if line.trim().is_empty() {
            continue;
        }
        if indent(line) <= own {
            break;
        }
        end = k + 1;
    }
    end
}

/// The words before a header's keyword (`export default `, `pub(crate) async `).
fn modifiers(line: &str) -> &str {
    let t = &line[indent(line)..];
    let mut rest = t;
    for prefix in MODIFIERS {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    &t[..t.len() - rest.len()]
}

/// A definition's keyword and name, when `line` starts one.
fn header(line: &str) -> Option<(&str, &str)> {
    let rest = &line[indent(line) + modifiers(line).len()..];
    let (keyword, rest) = rest.split_once(' ')?;
    if !["def", "class", "fn", "function", "func", "struct", "enum"].contains(&keyword) {
        return None;
    }
    let rest = rest.trim_start();
    let len = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(rest.len());
    (len > 0).then(|| (keyword, &rest[..len]))
}

/// `lines` moved from the indentation `from` to `prefix`.
fn reindent(lines: &[&str], from: usize, prefix: &str) -> String {
    lines
        .iter()
        .map(|l| {
            if l.trim().is_empty() {
                String::new()
            } else {
                let cut = indent(l).min(from);
                format!("{prefix}{}", &l[cut..])
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Leading spaces and tabs, in bytes (other whitespace is text: slicing at it could split one).
fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// A line that stands for code left out: `...`, or a comment saying the rest goes there.
fn is_elision(line: &str) -> bool {
    let t = line.trim();
    if t == "..." || t == "…" {
        return true;
    }
    if !is_comment(t) {
        return false;
    }
    let words = t.to_lowercase();
    [
        "...",
        "…",
        "your code",
        "your implementation",
        "implementation here",
        "implement this",
        "rest of",
        "existing code",
        "remains the same",
        "unchanged",
        "same as before",
    ]
    .iter()
    .any(|w| words.contains(w))
}

/// A body with no code in it: only blanks, comments, docstring quotes, `pass`, a brace.
fn hollow(body: &[&str]) -> bool {
    body.iter().all(|l| {
        let t = l.trim();
        t.is_empty()
            || is_comment(t)
            || t == "pass"
            || t == "}"
            || t.starts_with("\"\"\"")
            || t.starts_with("'''")
    })
}

fn is_comment(t: &str) -> bool {
    ["#", "//", "--", "/*", "*"]
        .iter()
        .any(|c| t.starts_with(c))
}

fn is_decorator(t: &str) -> bool {
    t.starts_with('@') || t.starts_with("#[")
}

/// A line without its quoted strings, so a brace in one is not counted.
fn strip_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote = None;
    let mut escaped = false;
    for c in line.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' || c == '`' => quote = Some(c),
            None => out.push(c),
        }
    }
    out
}

/// The whole file, rewritten: `(file, code)` when `code` is `file` with changes that drop none
/// of its lines unreplaced (at most [`MAX_DROPPED`] in one place) and keep most of them.
fn whole(file: &str, code: &str) -> Option<(String, String)> {
    let old = file.trim_end_matches('\n');
    let new = code.trim_end_matches('\n');
    if old.trim().is_empty() || old == new {
        return None;
    }
    let diff = TextDiff::from_lines(old, new);
    if diff.ratio() < MIN_RATIO {
        return None;
    }
    let file_lines: Vec<&str> = old.lines().collect();
    let dropped = |range: std::ops::Range<usize>| {
        file_lines[range]
            .iter()
            .filter(|l| !l.trim().is_empty())
            .count()
    };
    let ops = diff.ops();
    for (n, op) in ops.iter().enumerate() {
        if let DiffOp::Delete {
            old_index, old_len, ..
        } = *op
        {
            let lost = dropped(old_index..old_index + old_len);
            let at_edge = n == 0 || n == ops.len() - 1;
            if lost > MAX_DROPPED || at_edge && lost > 0 {
                return None;
            }
        }
    }
    Some((old.to_owned(), new.to_owned()))
}

#[cfg(test)]
mod tests;
