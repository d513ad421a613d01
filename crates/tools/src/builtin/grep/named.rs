//! A search whose pattern is the name of something in the workspace. A small model asked about
//! `notes.txt` may grep for "notes.txt" inside files, find no line that mentions it, and answer
//! that the file does not exist. The walk of the search passes every name anyway, so a pattern
//! that is a plain name (a file name, a path) is compared with each, and the result says where
//! that file or directory is and which tool reads it.

use crate::builtin::typed::Files;

/// Names listed in the note, at most.
const MAX_LISTED: usize = 3;

pub(super) struct Named {
    literal: String,
    case_insensitive: bool,
    found: Vec<(String, bool)>,
}

impl Named {
    /// For a pattern that is a plain name: letters, digits, `.`, `_`, `-` and `/`, with the
    /// regex escapes a model writes for them (`notes\.txt`). Anything else is a regex with
    /// intent of its own.
    pub(super) fn new(pattern: &str, case_insensitive: bool) -> Option<Self> {
        let mut literal = String::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            let c = match c {
                '\\' => chars
                    .next()
                    .filter(|n| matches!(n, '.' | '-' | '/' | '_'))?,
                c if c.is_alphanumeric() || matches!(c, '_' | '-' | '/') => c,
                // An unescaped dot in a name is the dot itself far more often than "any".
                '.' => '.',
                _ => return None,
            };
            literal.push(c);
        }
        let literal = literal.trim_start_matches("./").trim_end_matches('/');
        (literal.chars().count() >= 2).then(|| Self {
            literal: literal.to_owned(),
            case_insensitive,
            found: Vec::new(),
        })
    }

    /// One entry of the search's walk; what a deny rule hides from grep is not compared.
    pub(super) fn walked(&mut self, files: &Files, entry: &ignore::DirEntry) {
        if entry.depth() == 0 {
            return;
        }
        let display = files.workspace.display(entry.path());
        if files.gate.hides(&display).is_none() {
            self.visit(&display, entry.file_type().is_some_and(|t| t.is_dir()));
        }
    }

    /// One entry of the walk, as the workspace displays it.
    pub(super) fn visit(&mut self, display: &str, is_dir: bool) {
        if self.found.len() > MAX_LISTED {
            return;
        }
        let same = |a: &str, b: &str| {
            if self.case_insensitive {
                a.eq_ignore_ascii_case(b)
            } else {
                a == b
            }
        };
        let name = display.rsplit('/').next().unwrap_or(display);
        let whole = self.literal.contains('/')
            && (same(display, &self.literal)
                || display
                    .len()
                    .checked_sub(self.literal.len() + 1)
                    .is_some_and(|at| {
                        display.is_char_boundary(at)
                            && display[at..].starts_with('/')
                            && same(&display[at + 1..], &self.literal)
                    }));
        if whole || same(name, &self.literal) {
            self.found.push((display.to_owned(), is_dir));
        }
    }

    /// The line the result ends with, if the pattern named something. With matches, only for
    /// a pattern that looks like a path (`x.txt`, `src/app`): a bare word that is also a
    /// directory's name (`src`, `test`) is more likely a search for the word.
    pub(super) fn note(&self, matched: bool) -> Option<String> {
        if self.found.is_empty() || matched && !self.literal.contains(['.', '/']) {
            return None;
        }
        let tool = |dir: bool| {
            if dir {
                "list it with list_dir"
            } else {
                "read it with read_file"
            }
        };
        Some(match self.found.as_slice() {
            [(path, dir)] => {
                let kind = if *dir { "directory" } else { "file" };
                format!("[{path} is a {kind} in the workspace: {}]", tool(*dir))
            }
            many => {
                let shown: Vec<&str> = (many.iter().take(MAX_LISTED))
                    .map(|(p, _)| p.as_str())
                    .collect();
                let more = if many.len() > MAX_LISTED {
                    " and more"
                } else {
                    ""
                };
                format!(
                    "[{} is the name of {}{more} in the workspace: read a file with read_file]",
                    self.literal,
                    shown.join(", ")
                )
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(pattern: &str, entries: &[(&str, bool)]) -> Option<Named> {
        let mut n = Named::new(pattern, false)?;
        for (path, dir) in entries {
            n.visit(path, *dir);
        }
        Some(n)
    }

    #[test]
    fn a_plain_name_is_compared_and_a_regex_is_not() {
        for pattern in [
            "notes.txt",
            r"notes\.txt",
            "./docs/notes.txt",
            "config-loader",
            "a_b",
        ] {
            assert!(Named::new(pattern, false).is_some(), "{pattern}");
        }
        for pattern in [
            "fn run\\(",
            "a|b",
            "x*",
            "^main",
            "[ab]",
            "x",
            r"\d+",
            "a b",
        ] {
            assert!(Named::new(pattern, false).is_none(), "{pattern}");
        }
    }

    #[test]
    fn the_note_names_the_file_or_directory_and_the_tool_that_reads_it() {
        let tree = [
            ("docs", true),
            ("docs/notes.txt", false),
            ("src", true),
            ("src/app", true),
            ("src/app/notes.txt.bak", false),
        ];
        let n = named(r"notes\.txt", &tree).unwrap();
        assert_eq!(
            n.note(false).as_deref(),
            Some("[docs/notes.txt is a file in the workspace: read it with read_file]")
        );
        // Also beside matches: the model may have wanted the file, not lines naming it.
        assert!(n.note(true).is_some());
        let n = named("src/app", &tree).unwrap();
        assert_eq!(
            n.note(false).as_deref(),
            Some("[src/app is a directory in the workspace: list it with list_dir]")
        );
        // A bare word that names a directory: said when nothing matched, not beside matches.
        let n = named("docs", &tree).unwrap();
        assert!(n.note(false).is_some());
        assert_eq!(n.note(true), None);
        // A name nothing has, and a name only a longer name contains: nothing said.
        assert_eq!(named("readme.md", &tree).unwrap().note(false), None);
        assert_eq!(named("otes.txt", &tree).unwrap().note(false), None);
    }

    #[test]
    fn several_paths_of_one_name_are_listed_and_case_follows_the_search() {
        let tree = [("a/x.py", false), ("b/x.py", false), ("c/X.py", false)];
        let n = named("x.py", &tree).unwrap();
        assert_eq!(
            n.note(false).as_deref(),
            Some(
                "[x.py is the name of a/x.py, b/x.py in the workspace: read a file with read_file]"
            )
        );
        let mut n = Named::new("x.py", true).unwrap();
        for (p, d) in tree {
            n.visit(p, d);
        }
        assert!(n.note(false).unwrap().contains("a/x.py, b/x.py, c/X.py"));
    }
}
