//! Finding the edit forms in an answer's text. Pure: which files exist is the toolbox's to say.

/// Lines an answer may have before it is not searched (an edit is far shorter; bounds the work).
const MAX_LINES: usize = 20_000;
/// What prose wraps a path in: quotes, backticks, emphasis, brackets, punctuation.
const WRAPPING: &str = "`*'\"()[]<>{}:;!?";
/// A path is no longer than this.
const MAX_PATH: usize = 300;

/// One edit an answer's text holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Form {
    /// A search/replace block and the path on the line above it.
    Replace {
        path: String,
        search: String,
        replace: String,
    },
    /// A fenced block of code, the paths it names itself (its fence, a comment opening it, the
    /// line before it, in that order) and the paths the answer's prose names.
    Code {
        named: Vec<String>,
        prose: Vec<String>,
        code: String,
    },
}

/// The edit forms in `text`, in order.
pub fn forms(text: &str) -> Vec<Form> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() > MAX_LINES {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut prose = Vec::new();
    // Fenced blocks of code: (named, code), given the prose's paths once it is all read.
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((marker, info)) = fence_open(lines[i]) else {
            if is_search(lines[i]) {
                let (form, next) = replace_block(&lines, i, &[]);
                found.extend(form);
                i = next;
                continue;
            }
            prose.extend(paths_in(lines[i]));
            i += 1;
            continue;
        };
        let close = (i + 1..lines.len())
            .find(|&j| lines[j].trim() == marker)
            .unwrap_or(lines.len());
        let content = &lines[i + 1..close];
        let before = previous_line(&lines[..i]);
        if content.iter().any(|l| is_search(l)) {
            let mut above: Vec<String> = paths_in(info);
            above.extend(before.map(paths_in).unwrap_or_default());
            let mut j = 0;
            while j < content.len() {
                if is_search(content[j]) {
                    let (form, next) = replace_block(content, j, &above);
                    found.extend(form);
                    j = next;
                } else {
                    j += 1;
                }
            }
        } else if !content.iter().all(|l| l.trim().is_empty()) {
            let mut named = paths_in(info);
            let mut code = content;
            if let Some(path) = comment_path(content[0]) {
                named.push(path);
                code = &content[1..];
            }
            let one_path = before.map(paths_in).filter(|p| p.len() == 1);
            named.extend(one_path.into_iter().flatten());
            blocks.push((found.len(), named, join(code)));
        }
        i = close + 1;
    }
    dedup(&mut prose);
    // Each block goes where it was written among the search/replace blocks.
    for (at, named, code) in blocks.into_iter().rev() {
        let form = Form::Code {
            named,
            prose: prose.clone(),
            code,
        };
        found.insert(at, form);
    }
    found
}

/// A fence opening a line (indented at most three spaces): its closing marker and info string.
fn fence_open(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_start();
    if line.len() - body.len() > 3 {
        return None;
    }
    for marker in ["```", "~~~"] {
        if let Some(info) = body.strip_prefix(marker) {
            // A fence's info string has no backtick (else it is inline code).
            return (!info.contains('`')).then_some((marker, info.trim()));
        }
    }
    None
}

fn is_search(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("<<<<<") && t.trim_start_matches('<').trim() == "SEARCH"
}

fn is_divider(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 5 && t.chars().all(|c| c == '=')
}

fn is_replace(line: &str) -> bool {
    let t = line.trim();
    t.starts_with(">>>>>") && t.trim_start_matches('>').trim() == "REPLACE"
}

/// The search/replace block whose SEARCH line is `lines[at]`, and the line after it. Its path is
/// the line above it, else the first of `above` (the fence's, the line before the fence).
fn replace_block(lines: &[&str], at: usize, above: &[String]) -> (Option<Form>, usize) {
    let Some(divider) = (at + 1..lines.len()).find(|&j| is_divider(lines[j])) else {
        return (None, at + 1);
    };
    let Some(end) = (divider + 1..lines.len()).find(|&j| is_replace(lines[j])) else {
        return (None, at + 1);
    };
    let own = previous_line(&lines[..at])
        .filter(|l| fence_open(l).is_none() && !is_replace(l))
        .and_then(|l| paths_in(l).into_iter().next());
    let form = own
        .or_else(|| above.first().cloned())
        .map(|path| Form::Replace {
            path,
            search: join(&lines[at + 1..divider]),
            replace: join(&lines[divider + 1..end]),
        });
    (form, end + 1)
}

/// The nearest line above with words on it.
fn previous_line<'a>(lines: &[&'a str]) -> Option<&'a str> {
    lines.iter().rev().find(|l| !l.trim().is_empty()).copied()
}

/// A comment line that is nothing but a path (`# src/app.py`, `// main.rs`, `<!-- a.html -->`).
fn comment_path(line: &str) -> Option<String> {
    let t = line.trim();
    let rest = ["#", "//", "--", "/*", "<!--", ";"]
        .iter()
        .find_map(|c| t.strip_prefix(c))?;
    let rest = rest
        .trim()
        .trim_end_matches("*/")
        .trim_end_matches("-->")
        .trim();
    let rest = rest
        .strip_prefix("File:")
        .or_else(|| rest.strip_prefix("file:"))
        .unwrap_or(rest)
        .trim();
    let paths = paths_in(rest);
    (paths.len() == 1 && !rest.contains(' ')).then(|| paths[0].clone())
}

/// The words of `line` that look like file paths (`src/app.py`, `.env`, `../x`, `/etc/hosts`),
/// with the quotes, backticks, emphasis and punctuation prose puts around them taken off.
pub(crate) fn paths_in(line: &str) -> Vec<String> {
    let mut out: Vec<String> = line
        .split(|c: char| c.is_whitespace() || c == '=' || c == ',')
        .filter_map(|word| {
            let w = word
                .trim_start_matches(|c: char| WRAPPING.contains(c))
                .trim_end_matches(|c: char| WRAPPING.contains(c) || c == '.');
            looks_like_path(w).then(|| w.to_owned())
        })
        .collect();
    dedup(&mut out);
    out
}

fn looks_like_path(w: &str) -> bool {
    if w.is_empty() || w.len() > MAX_PATH || w.starts_with('-') || w.contains("://") {
        return false;
    }
    if !w
        .chars()
        .all(|c| c.is_alphanumeric() || "_./~-+@".contains(c))
    {
        return false;
    }
    if !w.chars().any(char::is_alphabetic) {
        return false;
    }
    let name = w.rsplit('/').next().unwrap_or(w);
    let extension = name.rsplit_once('.').is_some_and(|(_, ext)| {
        (1..=10).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    (w.contains('/') && !name.is_empty()) || extension
}

fn join(lines: &[&str]) -> String {
    lines.join("\n")
}

fn dedup(paths: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
}
