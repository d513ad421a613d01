//! What a word means to bash: its value after quote removal, the expansions bash could still
//! apply to it, the re-quoted form rules match, and the command names whose meaning is not in
//! their words at all.

use super::{NotUnderstood, not_understood};

/// A word's value and, per character, whether bash sees it unquoted (it may then expand it).
pub(super) struct Word {
    pub(super) value: String,
    pub(super) unquoted: Vec<bool>,
}

impl Word {
    pub(super) fn append(&mut self, other: Word) {
        self.value.push_str(&other.value);
        self.unquoted.extend(other.unquoted);
    }

    /// The value with every quoted or escaped character replaced by NUL (which no script
    /// holds), for checks on what bash would expand.
    fn skeleton(&self) -> Vec<char> {
        self.value
            .chars()
            .zip(&self.unquoted)
            .map(|(c, &u)| if u { c } else { '\0' })
            .collect()
    }
}

/// What a word is for: a command name and a redirection target must be literal; an argument may
/// hold a glob (bash expands it to file names, which a rule's `*` covers anyway).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Name,
    Argument,
    Target,
}

/// The value of a word after the checks its role needs: nothing bash would expand in a way the
/// value does not show.
pub(super) fn checked(word: Word, role: Role) -> Result<String, NotUnderstood> {
    let sk = word.skeleton();
    if sk.first() == Some(&'#') {
        return not_understood("a comment");
    }
    // `~` expands at the start of a word, and after `=` or `:` in one shaped like an
    // assignment (bash does that for arguments too, outside POSIX mode).
    let assignment = assignment_shaped(&sk);
    if sk.first() == Some(&'~') || (assignment && sk.contains(&'~')) {
        return not_understood("a tilde expansion (~)");
    }
    if brace_expansion(&sk) {
        return not_understood("a brace expansion");
    }
    let pattern = sk.iter().any(|c| matches!(c, '*' | '?' | '['));
    match role {
        Role::Name if assignment => return not_understood("a variable assignment"),
        Role::Name if pattern => return not_understood("a glob pattern in a command name"),
        Role::Target if pattern => {
            return not_understood("a glob pattern in a redirection target");
        }
        _ => {}
    }
    Ok(word.value)
}

pub(super) fn quote(word: &str) -> String {
    if word.chars().any(char::is_control) {
        let mut out = String::from("$'");
        for c in word.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    } else if word.is_empty()
        || word.chars().any(|c| {
            c.is_whitespace()
                || matches!(
                    c,
                    '\'' | '"' | '\\' | ';' | '&' | '|' | '(' | ')' | '<' | '>' | '$' | '`'
                )
        })
    {
        format!("'{}'", word.replace('\'', "'\\''"))
    } else {
        word.to_owned()
    }
}

pub(super) fn push(word: &mut Word, c: char, unquoted: bool) {
    word.value.push(c);
    word.unquoted.push(unquoted);
}

/// An unquoted word: a backslash quotes the next character (and with a newline, disappears).
/// Anything bash would treat specially that tree-sitter left in the word is refused.
pub(super) fn unquoted(text: &str, word: &mut Word) -> Result<(), NotUnderstood> {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(next) => push(word, next, false),
                None => return not_understood("a backslash at the end of the script"),
            },
            '$' | '`' => return not_understood(format!("an unquoted `{c}`")),
            ' ' | '\t' | '\n' | '\r' | '|' | '&' | ';' | '(' | ')' | '<' | '>' | '\'' | '"' => {
                return not_understood(format!("a {c:?} the parser read as part of a word"));
            }
            c => push(word, c, true),
        }
    }
    Ok(())
}

/// The inside of `"…"`: a backslash quotes only `$`, `` ` ``, `"`, `\` and newline.
pub(super) fn double_quoted(inner: &str, word: &mut Word) -> Result<(), NotUnderstood> {
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    push(word, next, false);
                }
                _ => push(word, '\\', false),
            },
            '$' => return not_understood("a `$` in double quotes"),
            '`' => return not_understood("a command substitution"),
            '"' => return not_understood("a double-quoted string it cannot read"),
            c => push(word, c, false),
        }
    }
    Ok(())
}

/// `NAME=…` or `NAME+=…` with the name unquoted.
fn assignment_shaped(sk: &[char]) -> bool {
    let Some(eq) = sk.iter().position(|&c| c == '=') else {
        return false;
    };
    let name = sk[..eq].strip_suffix(&['+']).unwrap_or(&sk[..eq]);
    matches!(name.first(), Some(c) if c.is_ascii_alphabetic() || *c == '_')
        && name.iter().all(|c| c.is_ascii_alphanumeric() || *c == '_')
}

/// Whether bash could brace-expand the word: an unquoted `{` with its matching `}` and an
/// unquoted `,` or `..` between them. (Coarser than bash, never looser.)
fn brace_expansion(sk: &[char]) -> bool {
    let mut open = Vec::new();
    for (i, &c) in sk.iter().enumerate() {
        match c {
            '{' => open.push(i),
            '}' => {
                if let Some(start) = open.pop() {
                    let inside = &sk[start + 1..i];
                    if inside.contains(&',') || inside.windows(2).any(|w| w == ['.', '.']) {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Reserved words bash recognizes in a command's first word; tree-sitter reads some of them
/// (`time`, `coproc`) as plain command names.
const RESERVED: &[&str] = &[
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "time", "until", "while",
];

/// Why no pattern may cover this command whatever its text: a reserved word, or a builtin whose
/// effect is not in its words (it runs text as code, changes what later commands mean, or assigns
/// to a variable named in its arguments, where bash evaluates an array subscript as code:
/// `read 'a[$(touch X)]'`).
pub(super) fn hazard(name: &str, args: &[String]) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("the reserved word `{name}`"));
    }
    const ASSIGNS: &str = "assigns to variables it is given by name, where bash runs code in an \
                           array subscript";
    let any = |f: fn(&str) -> bool| args.iter().any(|a| f(a));
    let why = match name {
        "eval" | "source" | "." | "trap" | "fc" | "compgen" | "complete" => {
            "runs text as shell code"
        }
        "exec" | "command" | "builtin" => "runs the command named in its arguments",
        "alias" | "hash" | "enable" | "shopt" | "set" => "changes what later commands mean",
        "let" | "declare" | "typeset" | "local" | "export" | "readonly" | "unset" | "read"
        | "mapfile" | "readarray" | "getopts" => ASSIGNS,
        "printf" if any(|a| a.starts_with("-v")) => ASSIGNS,
        "test" | "[" if any(|a| a == "-v" || a == "-R") => ASSIGNS,
        "wait" if any(|a| a.starts_with('-') && a.contains('p')) => ASSIGNS,
        _ => return None,
    };
    Some(format!("the builtin `{name}`, which {why}"))
}
