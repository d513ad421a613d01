//! Reads a bash command line the way the allowlist needs it: as the simple commands bash will run
//! and the files its redirections open, or not at all.
//!
//! A rule such as `bash(git *)` is only worth something if "this script runs git and nothing else"
//! can be decided. Bash is too rich to decide that in general (functions, expansions that run code,
//! here-documents, …), so this module accepts a small, explicit subset and calls everything else
//! "not understood", naming the construct, so that the policy can refuse it (RELIABILITY.md,
//! "Guards fail closed"). The subset: simple commands made of plain words and quoted strings with
//! no expansion in them, joined by `;`, `&&`, `||`, `|`, `|&` and newlines, with file
//! redirections.
//!
//! The parse is tree-sitter's bash grammar (the approach codex takes for its safe-command check),
//! walked with an allowlist of node kinds. tree-sitter is an editor's parser, though: it recovers
//! from errors, and some of its token boundaries differ from bash's (it takes `\r` for a blank,
//! splits `gi\<newline>t` into two words, attaches the `> x` of `a && b > x` to the whole list).
//! So the walk does not trust it alone: every byte between accepted nodes must be a blank, a
//! newline where bash ends a command, or a line continuation after a blank; and each word's value
//! is computed here from its source text with bash's quoting rules, refusing anything bash would
//! expand (an unquoted `$`, a leading `~`, `{a,b}`, …). Where the two could disagree, the script is
//! not understood.

use std::cell::RefCell;

use tree_sitter::{Node, Parser, Tree};

use words::{Role, Word, double_quoted, hazard, push, quote, unquoted};

mod words;

/// A script the matcher fully understands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Script {
    /// Every simple command, in source order, whether or not it will run (`a || b`).
    pub(crate) commands: Vec<SimpleCommand>,
    /// Every redirection in the script. They are not tied to their command: tree-sitter attaches
    /// some to the wrong one, and each is judged on its own anyway.
    pub(crate) redirects: Vec<Redirect>,
}

/// One simple command: its words after quote removal, exactly as bash passes them as argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    pub(crate) words: Vec<String>,
}

/// One redirection: its source text (for messages) and what it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub(crate) shown: String,
    pub(crate) target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A descriptor pointed at another (`2>&1`, `>&2`, `<&-`) or at a stream bash emulates
    /// (`/dev/null`, `/dev/stdout`, …): no file of the user's is opened.
    Stream,
    /// `< FILE`: the path as bash will open it, relative to the directory bash runs in.
    Read(String),
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `>& FILE`: the path as bash will open it.
    Write(String),
}

/// What the matcher does not understand, in plain words ("a function definition").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{construct}")]
pub(crate) struct NotUnderstood {
    pub(crate) construct: String,
}

fn not_understood<T>(construct: impl Into<String>) -> Result<T, NotUnderstood> {
    Err(NotUnderstood {
        construct: construct.into(),
    })
}

impl SimpleCommand {
    /// The text rules are matched against: the words joined by single spaces. A word that holds a
    /// blank, a quote, a backslash or a character that would end a command or start an expansion
    /// (or is empty) is shown in single quotes, one with a control character in `$'…'`: word
    /// boundaries survive (`'git status' x` is not `git status x`), the text reads back as the
    /// same command, and it never holds a newline for a rule's `*` to reach across. Glob
    /// characters stay as they are, so `bash(ls *.rs)` matches `ls *.rs`.
    pub(crate) fn text(&self) -> String {
        let words: Vec<String> = self.words.iter().map(|w| quote(w)).collect();
        words.join(" ")
    }
}

/// Parses `script`, accepting only what the matcher understands (see the module doc).
pub(crate) fn parse(script: &str) -> Result<Script, NotUnderstood> {
    if script.contains('\0') {
        return not_understood("a NUL character");
    }
    let Some(tree) = tree(script) else {
        return not_understood("a script the shell parser could not read");
    };
    let root = tree.root_node();
    if root.has_error() {
        return not_understood(first_error(root));
    }
    let mut walk = Walk {
        src: script,
        script: Script::default(),
    };
    walk.program(root)?;
    let script = walk.script;
    // Relative paths are resolved against the directory bash starts in; after a `cd` they mean
    // something else, and following `cd` through a script is more than this matcher does.
    let moves = script
        .commands
        .iter()
        .find(|c| matches!(c.words[0].as_str(), "cd" | "pushd" | "popd"));
    let relative = script.redirects.iter().find(|r| match &r.target {
        Target::Read(p) | Target::Write(p) => !p.starts_with('/'),
        Target::Stream => false,
    });
    if let (Some(cd), Some(r)) = (moves, relative) {
        return not_understood(format!(
            "the redirection `{}` after `{}` (a relative path in a script that changes directory)",
            r.shown, cd.words[0]
        ));
    }
    Ok(script)
}

/// The text of every simple command anywhere in `script`, also inside constructs `parse` refuses
/// (function bodies, substitutions, subshells) and in scripts with syntax errors: from its name
/// to its end as written, and its words re-joined when they are plain. Deny rules are checked
/// against these, best effort: a deny rule is not a security boundary (see docs/tools.md).
pub(crate) fn command_texts(script: &str) -> Vec<String> {
    let Some(tree) = tree(script) else {
        return Vec::new();
    };
    let walk = Walk {
        src: script,
        script: Script::default(),
    };
    let mut texts = Vec::new();
    let mut cursor = tree.walk();
    // Iterative pre-order, so no nesting depth can overflow the stack.
    loop {
        let node = cursor.node();
        if node.kind() == "command" {
            let start = node
                .child_by_field_name("name")
                .map_or(node.start_byte(), |n| n.start_byte());
            if let Some(text) = script.get(start..node.end_byte()) {
                texts.push(text.trim().to_owned());
            }
            if let Ok(words) = walk.plain_words(node) {
                texts.push(SimpleCommand { words }.text());
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return texts;
            }
        }
    }
}

thread_local! {
    /// Building a parser allocates; one per thread is reused for every check.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn tree(script: &str) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        let parser = slot.as_mut()?;
        parser.reset();
        parser.parse(script, None)
    })
}

/// Names the first error or missing node in a tree that has one.
fn first_error(root: Node) -> String {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_missing() {
            return format!("an incomplete command (a missing `{}`)", node.kind());
        }
        if node.is_error() {
            return "a syntax error".to_owned();
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return "a syntax error".to_owned();
            }
        }
    }
}

/// A construct the walk does not accept, in the words an error message uses.
fn construct(node: Node) -> String {
    let name = match node.kind() {
        "function_definition" => "a function definition",
        "command_substitution" => "a command substitution",
        "process_substitution" => "a process substitution",
        "heredoc_redirect" => "a here-document",
        "herestring_redirect" => "a here-string",
        "ansi_c_string" => "$'…' quoting",
        "translated_string" => "$\"…\" quoting",
        "variable_assignment" | "variable_assignments" => "a variable assignment",
        "subshell" => "a subshell",
        "compound_statement" => "a group ({ …; })",
        "expansion" | "simple_expansion" => "a parameter expansion",
        "arithmetic_expansion" => "an arithmetic expansion",
        "brace_expression" => "a brace expansion",
        "comment" => "a comment",
        "declaration_command" => "a declaration (declare, export, local, readonly, typeset)",
        "unset_command" => "the builtin `unset`",
        "test_command" => "a test expression ([ … ] or [[ … ]])",
        "negated_command" => "a negated command (!)",
        "if_statement" => "an if statement",
        "case_statement" => "a case statement",
        "for_statement" | "c_style_for_statement" | "while_statement" => "a loop",
        "&" => "a background job (&)",
        // tree-sitter reads `$"…"` as a `$` token before a string.
        "$" => "an unquoted `$`",
        ";;" | ";&" | ";;&" => "a case terminator outside a case",
        "ERROR" => "a syntax error",
        kind => return format!("shell syntax it does not know ({kind})"),
    };
    name.to_owned()
}

/// Where a newline may stand between the children of a node.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Newlines {
    /// Between the statements of the script.
    Anywhere,
    /// After `&&`, `||`, `|` and `|&` only, where bash reads on.
    AfterOperator,
    /// Nowhere: inside a command a newline would end it.
    Never,
}

/// Nesting of lists and pipelines beyond this is refused rather than recursed into: `a && b`
/// chains nest one level per operator.
const MAX_DEPTH: usize = 100;

struct Walk<'s> {
    src: &'s str,
    script: Script,
}

impl<'s> Walk<'s> {
    fn text(&self, node: Node) -> Result<&'s str, NotUnderstood> {
        match self.src.get(node.byte_range()) {
            Some(text) => Ok(text),
            None => not_understood("text the parser misplaced"),
        }
    }

    /// The script up to byte `at` (empty if `at` is not a character boundary, which tree-sitter's
    /// offsets always are).
    fn before(&self, at: usize) -> &'s str {
        self.src.get(..at).unwrap_or_default()
    }

    /// The children of `node`, after checking that the text between them (and between them and
    /// the ends of `span`) is only what bash also takes for blanks.
    fn children(
        &self,
        node: Node<'s>,
        span: (usize, usize),
        newlines: Newlines,
    ) -> Result<Vec<Node<'s>>, NotUnderstood> {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        let mut at = span.0;
        let mut after_operator = false;
        for child in &children {
            self.gap(at, child.start_byte(), newlines, after_operator)?;
            at = child.end_byte();
            after_operator = matches!(child.kind(), "&&" | "||" | "|" | "|&") && !child.is_named();
        }
        self.gap(at, span.1, newlines, after_operator)?;
        Ok(children)
    }

    fn gap(
        &self,
        from: usize,
        to: usize,
        newlines: Newlines,
        after_operator: bool,
    ) -> Result<(), NotUnderstood> {
        if from > to {
            return not_understood("text the parser misplaced");
        }
        let Some(gap) = self.src.get(from..to) else {
            return not_understood("text the parser misplaced");
        };
        let newline_ok = match newlines {
            Newlines::Anywhere => true,
            Newlines::AfterOperator => after_operator,
            Newlines::Never => false,
        };
        // A line continuation is removed before bash splits words, so it separates only when a
        // blank is next to it; tree-sitter takes it for a blank either way.
        let mut blank_before = from == 0 || self.before(from).ends_with([' ', '\t', '\n']);
        let mut chars = gap.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                ' ' | '\t' => blank_before = true,
                '\n' if newline_ok => blank_before = true,
                '\n' => return not_understood("a newline inside a command"),
                '\\' if chars.peek() == Some(&'\n') => {
                    chars.next();
                    if !blank_before {
                        return not_understood("a line continuation inside a word");
                    }
                }
                '\r' => {
                    return not_understood("a carriage return (bash reads it as part of a word)");
                }
                c => return not_understood(format!("text the parser skipped ({c:?})")),
            }
        }
        Ok(())
    }

    fn program(&mut self, root: Node<'s>) -> Result<(), NotUnderstood> {
        for child in self.children(root, (0, self.src.len()), Newlines::Anywhere)? {
            match child.kind() {
                ";" if !child.is_named() => {}
                _ if child.is_named() && child.kind() != "comment" => self.statement(child, 0)?,
                _ => return not_understood(construct(child)),
            }
        }
        Ok(())
    }

    fn statement(&mut self, node: Node<'s>, depth: usize) -> Result<(), NotUnderstood> {
        if depth > MAX_DEPTH {
            return not_understood("commands nested too deeply");
        }
        let span = (node.start_byte(), node.end_byte());
        match node.kind() {
            "command" => self.command(node),
            "list" | "pipeline" => {
                for child in self.children(node, span, Newlines::AfterOperator)? {
                    match child.kind() {
                        "&&" | "||" | "|" | "|&" if !child.is_named() => {}
                        _ if child.is_named() && child.kind() != "comment" => {
                            self.statement(child, depth + 1)?;
                        }
                        _ => return not_understood(construct(child)),
                    }
                }
                Ok(())
            }
            "redirected_statement" => {
                for child in self.children(node, span, Newlines::Never)? {
                    match child.kind() {
                        "file_redirect" => self.redirect(child)?,
                        "command" | "list" | "pipeline" => self.statement(child, depth + 1)?,
                        _ => return not_understood(construct(child)),
                    }
                }
                Ok(())
            }
            _ => not_understood(construct(node)),
        }
    }

    fn command(&mut self, node: Node<'s>) -> Result<(), NotUnderstood> {
        let span = (node.start_byte(), node.end_byte());
        let mut pieces: Vec<Word> = Vec::new();
        // Where the last child ended, and whether it was a word.
        let mut last: Option<(usize, bool)> = None;
        for child in self.children(node, span, Newlines::Never)? {
            let adjacent = last.map(|(end, word)| (end == child.start_byte(), word));
            last = Some((child.end_byte(), child.kind() != "file_redirect"));
            let node = match child.kind() {
                "file_redirect" => {
                    self.redirect(child)?;
                    continue;
                }
                "command_name" => self.only_child(child)?,
                _ if !pieces.is_empty() => child,
                _ => return not_understood(construct(child)),
            };
            let word = self.word(node)?;
            match (adjacent, pieces.last_mut()) {
                // Nothing between two words makes them one word to bash (`'a'\b` is `ab`),
                // whether or not tree-sitter made a concatenation of them.
                (Some((true, true)), Some(previous)) => previous.append(word),
                // A word right after a redirection would belong to its target.
                (Some((true, false)), _) => return not_understood("a word the parser split"),
                _ => pieces.push(word),
            }
        }
        let mut words = Vec::with_capacity(pieces.len());
        for (i, word) in pieces.into_iter().enumerate() {
            let role = if i == 0 { Role::Name } else { Role::Argument };
            words.push(words::checked(word, role)?);
        }
        let Some(name) = words.first() else {
            return not_understood("a redirection without a command");
        };
        if let Some(why) = hazard(name, &words[1..]) {
            return not_understood(why);
        }
        self.script.commands.push(SimpleCommand { words });
        Ok(())
    }

    /// The one child of `node` that spans all of it (a command name's word).
    fn only_child(&self, node: Node<'s>) -> Result<Node<'s>, NotUnderstood> {
        let span = (node.start_byte(), node.end_byte());
        match self.children(node, span, Newlines::Never)?.as_slice() {
            [only] => Ok(*only),
            _ => not_understood(construct(node)),
        }
    }

    /// A command's words when they are all plain, for `command_texts`; no checks on the name.
    fn plain_words(&self, node: Node<'s>) -> Result<Vec<String>, NotUnderstood> {
        let mut words = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "file_redirect" => {}
                "command_name" => words.push(self.word(self.only_child(child)?)?.value),
                _ if !words.is_empty() => words.push(self.word(child)?.value),
                _ => return not_understood(construct(child)),
            }
        }
        Ok(words)
    }

    fn checked_word(&self, node: Node<'s>, role: Role) -> Result<String, NotUnderstood> {
        words::checked(self.word(node)?, role)
    }

    /// The value of a word-like node: a plain word, a quoted string without expansions, or a
    /// concatenation of those.
    fn word(&self, node: Node<'s>) -> Result<Word, NotUnderstood> {
        let text = self.text(node)?;
        let mut word = Word {
            value: String::new(),
            unquoted: Vec::new(),
        };
        match node.kind() {
            "word" | "number" => match node.named_child(0) {
                None => unquoted(text, &mut word)?,
                Some(inner) => return not_understood(construct(inner)),
            },
            "raw_string" if node.child_count() == 0 => {
                let Some(inner) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) else {
                    return not_understood("a single-quoted string it cannot read");
                };
                for c in inner.chars() {
                    push(&mut word, c, false);
                }
            }
            "string" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    match child.kind() {
                        "\"" | "string_content" => {}
                        "$" => return not_understood("a `$` in double quotes"),
                        _ => return not_understood(construct(child)),
                    }
                }
                let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
                    return not_understood("a double-quoted string it cannot read");
                };
                double_quoted(inner, &mut word)?;
            }
            "concatenation" => {
                let mut at = node.start_byte();
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if child.start_byte() != at {
                        return not_understood("a word the parser split");
                    }
                    at = child.end_byte();
                    if child.kind() == "concatenation" {
                        return not_understood(construct(child));
                    }
                    word.append(self.word(child)?);
                }
                if at != node.end_byte() {
                    return not_understood("a word the parser split");
                }
            }
            _ => return not_understood(construct(node)),
        }
        Ok(word)
    }

    fn redirect(&mut self, node: Node<'s>) -> Result<(), NotUnderstood> {
        // `{fd}>file` makes bash pick a descriptor and assign it to a variable; tree-sitter
        // reads `{fd}` as an argument in front of the redirection.
        if self.before(node.start_byte()).ends_with('}') {
            return not_understood("a named file descriptor ({fd}>)");
        }
        let shown = self.text(node)?.to_owned();
        let span = (node.start_byte(), node.end_byte());
        let mut op = None;
        let mut fd = None;
        let mut target = None;
        for child in self.children(node, span, Newlines::Never)? {
            match child.kind() {
                "file_descriptor" => fd = Some(self.text(child)?),
                _ if !child.is_named() && op.is_none() => op = Some(child.kind()),
                _ if child.is_named() && target.is_none() && op.is_some() => {
                    target = Some(self.checked_word(child, Role::Target)?);
                }
                _ => return not_understood(construct(child)),
            }
        }
        if fd.is_some_and(|fd| !fd.bytes().all(|b| b.is_ascii_digit())) {
            return not_understood(format!("the redirection `{shown}`"));
        }
        let duplicate = |t: &str| {
            let digits = t.strip_suffix('-').unwrap_or(t);
            t == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        };
        let target = match (op, target) {
            (Some(">&-" | "<&-"), None) => Target::Stream,
            (Some(">&" | "<&"), Some(t)) if duplicate(&t) => Target::Stream,
            // `>& FILE` (no descriptor in front) sends stdout and stderr to FILE, like `&>`.
            (Some(">&"), Some(t)) if fd.is_none() => write_target(t),
            (Some(">" | ">>" | ">|" | "&>" | "&>>"), Some(t)) => write_target(t),
            (Some("<"), Some(t)) if is_stream(&t) => Target::Stream,
            (Some("<"), Some(t)) if !t.is_empty() => Target::Read(t),
            _ => return not_understood(format!("the redirection `{shown}`")),
        };
        if matches!(&target, Target::Write(t) if t.is_empty()) {
            return not_understood(format!("the redirection `{shown}`"));
        }
        self.script.redirects.push(Redirect { shown, target });
        Ok(())
    }
}

fn write_target(path: String) -> Target {
    if is_stream(&path) {
        Target::Stream
    } else {
        Target::Write(path)
    }
}

/// Files bash itself emulates or that are no file of the user's.
fn is_stream(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdin" | "/dev/stdout" | "/dev/stderr"
    ) || path
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod roundtrip_tests;
#[cfg(test)]
mod tests;
