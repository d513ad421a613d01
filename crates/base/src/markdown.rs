//! Markdown that someone else's text cannot break out of: fences and code spans made of more
//! backticks than any run inside the text.
//!
//! Inside a code span Markdown reads nothing: no link, image, HTML, emphasis or entity. What
//! could still escape one is a backtick run as long as its own (it would close the span), a
//! line break (the next line is read as a block: a heading, a list item, a table row) and, in
//! a table, a `|` (GFM splits a row at pipes before it looks for code spans). The helpers here
//! rule out all three.

/// The longest run of backticks in `text`.
pub(crate) fn longest_backticks(text: &str) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// `text` as a fenced code block (with `info` after the opening fence), whose fence is longer
/// than any backtick run inside it, so no line of it can close the block.
pub fn fenced(text: &str, info: &str) -> String {
    let fence = "`".repeat((longest_backticks(text) + 1).max(3));
    format!("{fence}{info}\n{}\n{fence}", text.trim_end_matches('\n'))
}

/// `text` as an inline code span, on one line, whose backtick strings are longer than any run
/// inside it; empty text is the empty string. Line breaks become spaces, as a code span shows
/// them anyway, so that none can start a block: a caller who wants them seen escapes them
/// first (`terminal::line`).
pub fn code_span(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let text: String = text
        .chars()
        .map(|c| if matches!(c, '\n' | '\r') { ' ' } else { c })
        .collect();
    let ticks = "`".repeat(longest_backticks(&text) + 1);
    // A span that starts or ends with a backtick needs a space between it and the ticks, and a
    // span with a space at both ends loses one at each: the pad keeps the text as it was.
    let all_spaces = text.bytes().all(|b| b == b' ');
    let pad = (text.starts_with('`')
        || text.ends_with('`')
        || (text.starts_with(' ') && text.ends_with(' ')))
        && !all_spaces;
    let pad = if pad { " " } else { "" };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

/// `text` as a code span in a GFM table cell: a `|` is written `\|`, which the table reads as
/// part of the cell (and GitHub shows as `|` inside the span) instead of the cell's end.
pub fn cell_span(text: &str) -> String {
    code_span(&text.replace('|', "\\|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_outgrows_every_backtick_run() {
        assert_eq!(fenced("a\n", ""), "```\na\n```");
        assert_eq!(fenced("x ````` y", "text"), "``````text\nx ````` y\n``````");
        assert_eq!(longest_backticks("` `` ```` `"), 4);
    }

    #[test]
    fn a_code_span_outgrows_every_backtick_run_and_stays_on_its_line() {
        assert_eq!(code_span("a"), "`a`");
        assert_eq!(code_span(""), "");
        assert_eq!(code_span("a`b"), "``a`b``");
        assert_eq!(code_span("`x"), "`` `x ``");
        assert_eq!(code_span(" x "), "`  x  `");
        assert_eq!(code_span("  "), "`  `");
        assert_eq!(code_span("two\nlines\r\n# h"), "`two lines  # h`");
        assert_eq!(cell_span("a|b\\|c"), "`a\\|b\\\\|c`");
    }
}
