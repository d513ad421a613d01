//! Text from the model, tool servers and providers, made safe for a terminal. Such text is
//! hostile input: an escape sequence in a tool name, an MCP description or an HTTP error body
//! could retitle the window, move the cursor over the "✗ denied" lines, clear the screen to fake
//! a result, or write the user's clipboard (OSC 52). Everything rounds shows a person goes
//! through here; bytes meant for programs (JSON modes, `-o text` into a pipe) do not.

use std::borrow::Cow;

/// Whether `c` can change what a terminal shows other than as a character: C0 and C1 controls,
/// DEL, and the Unicode marks that reorder text (bidirectional overrides and isolates).
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control character escaped as `\x1b`, `\r`, `\u{202e}`…, keeping newlines
/// and tabs: for multi-line text shown as such (an answer, an error).
pub fn text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// `text` on one line: newlines and tabs are escaped too (a progress line, a table cell).
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let kept = |c: char| keep_lines && (c == '\n' || c == '\t');
    if !text.chars().any(|c| is_unsafe(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if kept(c) || !is_unsafe(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x100 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_sequences_are_shown_not_obeyed() {
        // (input, as text, as a line)
        let table = [
            ("plain words", "plain words", "plain words"),
            ("a\nb\tc", "a\nb\tc", "a\\nb\\tc"),
            (
                "\x1b]0;owned\x07title",
                "\\x1b]0;owned\\x07title",
                "\\x1b]0;owned\\x07title",
            ),
            (
                "\x1b[2J\x1b[HAll tests passed",
                "\\x1b[2J\\x1b[HAll tests passed",
                "\\x1b[2J\\x1b[HAll tests passed",
            ),
            (
                "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
                "\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07",
                "\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07",
            ),
            (
                "\x1b[1A\x1b[2K✓ ok",
                "\\x1b[1A\\x1b[2K✓ ok",
                "\\x1b[1A\\x1b[2K✓ ok",
            ),
            ("over\rwrite", "over\\rwrite", "over\\rwrite"),
            ("c1 \u{9b}31m", "c1 \\x9b31m", "c1 \\x9b31m"),
            ("del\x7f", "del\\x7f", "del\\x7f"),
            ("nul\0", "nul\\x00", "nul\\x00"),
            (
                "evil\u{202e}txt.exe",
                "evil\\u{202e}txt.exe",
                "evil\\u{202e}txt.exe",
            ),
            ("é ☔ 漢字", "é ☔ 漢字", "é ☔ 漢字"),
        ];
        for (input, as_text, as_line) in table {
            assert_eq!(text(input), as_text, "{input:?}");
            assert_eq!(line(input), as_line, "{input:?}");
            for shown in [text(input), line(input)] {
                assert!(
                    !shown.contains('\x1b') && !shown.contains('\r'),
                    "{shown:?}"
                );
            }
        }
        assert!(matches!(text("clean\n"), Cow::Borrowed(_)));
    }
}
