//! Markdown that someone else's text cannot break out of: fences and code spans made of more
//! backticks than any run inside the text.

/// The longest run of backticks in `text`.
pub fn longest_backticks(text: &str) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_outgrows_every_backtick_run() {
        assert_eq!(fenced("a\n", ""), "```\na\n```");
        assert_eq!(fenced("x ````` y", "text"), "``````text\nx ````` y\n``````");
        assert_eq!(longest_backticks("` `` ```` `"), 4);
    }
}
