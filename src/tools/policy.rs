//! The allowlist: which tools the model is offered and which calls may run.
//!
//! Rules are `TOOL` or `TOOL(PATTERN)`, comma-separated; `all` and `none` are words. The list
//! starts as the read-only file tools; `--allow` adds rules (`none` first clears them) and
//! `--deny` takes away; deny wins. A tool is offered when some allow rule names it and no
//! pattern-less deny rule does. A call is permitted when an allow rule matches it (by name, and
//! by pattern on its subject) and no deny rule does.

use globset::{GlobBuilder, GlobMatcher};

use super::command_parts;

/// The tools allowed when the user says nothing.
pub const DEFAULT_ALLOW: &[&str] = &["read_file", "list_dir", "glob", "grep"];

/// What an allowlist pattern is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A workspace-relative path: `*` stays within one directory, `**` crosses them.
    Path(String),
    /// A URL or other text: `*` matches anything, `/` included.
    Text(String),
    /// A shell command: like `Text`, but a rule allows it only if it matches every simple
    /// command in it (see `command_parts`).
    Command(String),
}

impl Subject {
    pub fn as_str(&self) -> &str {
        match self {
            Subject::Path(s) | Subject::Text(s) | Subject::Command(s) => s,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("bad rule {rule:?} in {flag}: {message}")]
    Syntax {
        flag: &'static str,
        rule: String,
        message: String,
    },
    #[error("unknown tool {name:?} in {flag}; known tools: {known}")]
    UnknownTool {
        flag: &'static str,
        name: String,
        known: String,
    },
}

#[derive(Debug, Clone)]
struct Rule {
    text: String,
    tool: GlobMatcher,
    pattern: Option<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    path: GlobMatcher,
    text: GlobMatcher,
}

impl Rule {
    fn matches_tool(&self, tool: &str) -> bool {
        self.tool.is_match(tool)
    }

    fn matches(&self, tool: &str, subject: Option<&Subject>) -> bool {
        if !self.matches_tool(tool) {
            return false;
        }
        match (&self.pattern, subject) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(p), Some(Subject::Path(s))) => p.path.is_match(s),
            (Some(p), Some(Subject::Text(s) | Subject::Command(s))) => p.text.is_match(s),
        }
    }
}

/// Whether a call may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    Denied(String),
}

#[derive(Debug, Clone)]
pub struct Policy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

impl Policy {
    /// Builds the policy from `--allow` and `--deny` values (each a comma-separated list).
    /// `known` is every registered tool name, to catch typos.
    pub fn new(allow: &[String], deny: &[String], known: &[&str]) -> Result<Policy, PolicyError> {
        let mut allow_rules: Vec<String> = DEFAULT_ALLOW.iter().map(|s| s.to_string()).collect();
        for value in allow {
            for rule in split_rules(value, "--allow")? {
                match rule.as_str() {
                    "none" => allow_rules.clear(),
                    _ => allow_rules.push(rule),
                }
            }
        }
        allow_rules.dedup();
        let mut deny_rules = Vec::new();
        for value in deny {
            for rule in split_rules(value, "--deny")? {
                match rule.as_str() {
                    "none" => deny_rules.clear(),
                    _ => deny_rules.push(rule),
                }
            }
        }
        let compile_all = |rules: Vec<String>, flag| {
            rules
                .into_iter()
                .map(|r| compile(&r, flag, known))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Policy {
            allow: compile_all(allow_rules, "--allow")?,
            deny: compile_all(deny_rules, "--deny")?,
        })
    }

    /// Whether the model is told about `tool` at all.
    pub fn offers(&self, tool: &str) -> bool {
        self.allow.iter().any(|r| r.matches_tool(tool))
            && !self
                .deny
                .iter()
                .any(|r| r.pattern.is_none() && r.matches_tool(tool))
    }

    /// Whether one call may run.
    pub fn permits(&self, tool: &str, subject: Option<&Subject>) -> Decision {
        if let Some(Subject::Command(command)) = subject {
            return self.permits_command(tool, command);
        }
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, subject)) {
            return Decision::Denied(format!("denied by the rule --deny {}", rule.text));
        }
        if self.allow.iter().any(|r| r.matches(tool, subject)) {
            return Decision::Allowed;
        }
        let patterns: Vec<&str> = self
            .allow
            .iter()
            .filter(|r| r.matches_tool(tool))
            .map(|r| r.text.as_str())
            .collect();
        let what = match subject {
            Some(s) => format!("{:?}", s.as_str()),
            None => "this call".to_owned(),
        };
        Decision::Denied(format!(
            "{what} is not allowed: {tool} is only allowed as {}",
            patterns.join(", ")
        ))
    }

    /// A shell command is denied if a deny rule matches it or any part of it, and allowed only if
    /// a pattern-less rule allows the tool or every part matches an allow pattern.
    fn permits_command(&self, tool: &str, command: &str) -> Decision {
        let parts = command_parts::split(command);
        let whole = Subject::Text(command.to_owned());
        let mut subjects = vec![whole];
        if let Ok(parts) = &parts {
            subjects.extend(parts.iter().map(|p| Subject::Text(p.clone())));
        }
        for rule in &self.deny {
            if let Some(s) = subjects.iter().find(|s| rule.matches(tool, Some(s))) {
                return Decision::Denied(format!(
                    "{:?} is denied by the rule --deny {}",
                    s.as_str(),
                    rule.text
                ));
            }
        }
        if self
            .allow
            .iter()
            .any(|r| r.pattern.is_none() && r.matches_tool(tool))
        {
            return Decision::Allowed;
        }
        let rules: Vec<&Rule> = self.allow.iter().filter(|r| r.matches_tool(tool)).collect();
        let texts: Vec<&str> = rules.iter().map(|r| r.text.as_str()).collect();
        let parts = match parts {
            Ok(parts) if !parts.is_empty() => parts,
            Ok(_) => return Decision::Denied("an empty command is not allowed".into()),
            Err(command_parts::Unreadable(why)) => {
                return Decision::Denied(format!(
                    "the command cannot be checked against {} ({why})",
                    texts.join(", ")
                ));
            }
        };
        for part in &parts {
            let s = Subject::Text(part.clone());
            if !rules.iter().any(|r| r.matches(tool, Some(&s))) {
                return Decision::Denied(format!(
                    "{part:?} is not allowed: {tool} is only allowed as {} (every command in a \
                     compound command must match)",
                    texts.join(", ")
                ));
            }
        }
        Decision::Allowed
    }

    /// The rules in effect, for the transcript.
    pub fn allow_rules(&self) -> Vec<String> {
        self.allow.iter().map(|r| r.text.clone()).collect()
    }

    pub fn deny_rules(&self) -> Vec<String> {
        self.deny.iter().map(|r| r.text.clone()).collect()
    }
}

/// Splits on commas outside parentheses, so `bash(git log --format=%H,%s)` stays one rule.
fn split_rules(value: &str, flag: &'static str) -> Result<Vec<String>, PolicyError> {
    let mut rules = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for ch in value.chars() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1).ok_or_else(|| PolicyError::Syntax {
                    flag,
                    rule: value.to_owned(),
                    message: "unbalanced ')'".into(),
                })?;
            }
            ',' if depth == 0 => {
                rules.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    if depth != 0 {
        return Err(PolicyError::Syntax {
            flag,
            rule: value.to_owned(),
            message: "unbalanced '('".into(),
        });
    }
    rules.push(current);
    Ok(rules
        .into_iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect())
}

fn compile(rule: &str, flag: &'static str, known: &[&str]) -> Result<Rule, PolicyError> {
    let syntax = |message: String| PolicyError::Syntax {
        flag,
        rule: rule.to_owned(),
        message,
    };
    let (tool, pattern) = match rule.find('(') {
        Some(open) => {
            let inner = rule[open + 1..]
                .strip_suffix(')')
                .ok_or_else(|| syntax("expected TOOL(PATTERN) with ')' at the end".into()))?;
            (rule[..open].trim(), Some(inner))
        }
        None => (rule, None),
    };
    let tool = if tool == "all" { "*" } else { tool };
    if tool.is_empty() {
        return Err(syntax("missing tool name".into()));
    }
    let is_glob = tool.contains(['*', '?', '[']);
    if !is_glob && !known.contains(&tool) {
        return Err(PolicyError::UnknownTool {
            flag,
            name: tool.to_owned(),
            known: known.join(", "),
        });
    }
    let glob = |text: &str, literal_separator| {
        GlobBuilder::new(text)
            .literal_separator(literal_separator)
            .build()
            .map(|g| g.compile_matcher())
            .map_err(|e| syntax(e.kind().to_string()))
    };
    let pattern = match pattern {
        None => None,
        Some(p) => Some(Pattern {
            path: glob(p, true)?,
            text: glob(p, false)?,
        }),
    };
    Ok(Rule {
        text: rule.to_owned(),
        tool: glob(tool, false)?,
        pattern,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const KNOWN: &[&str] = &[
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "bash",
        "write_file",
    ];

    fn policy(allow: &[&str], deny: &[&str]) -> Policy {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Policy::new(&s(allow), &s(deny), KNOWN).unwrap()
    }

    fn path(s: &str) -> Subject {
        Subject::Path(s.into())
    }

    #[test]
    fn default_offers_exactly_the_read_only_tools() {
        let p = policy(&[], &[]);
        let offered: Vec<_> = KNOWN.iter().filter(|t| p.offers(t)).collect();
        assert_eq!(offered, vec![&"read_file", &"list_dir", &"glob", &"grep"]);
    }

    #[test]
    fn none_clears_and_all_allows_everything() {
        assert!(!policy(&["none"], &[]).offers("read_file"));
        let p = policy(&["none,bash"], &[]);
        assert!(p.offers("bash") && !p.offers("read_file"));
        assert!(policy(&["all"], &[]).offers("write_file"));
    }

    #[test]
    fn deny_wins_and_pattern_less_deny_hides_the_tool() {
        let p = policy(&["all"], &["bash"]);
        assert!(!p.offers("bash"));
        assert!(matches!(p.permits("bash", None), Decision::Denied(_)));
        let p = policy(&["bash"], &["bash(rm *)"]);
        assert!(p.offers("bash"));
        let rm = Subject::Text("rm -rf /tmp/x".into());
        assert_eq!(
            p.permits("bash", Some(&rm)),
            Decision::Denied("denied by the rule --deny bash(rm *)".into())
        );
    }

    #[test]
    fn path_patterns_respect_directory_boundaries() {
        let p = policy(&["none,read_file(src/*)"], &[]);
        assert_eq!(
            p.permits("read_file", Some(&path("src/a.rs"))),
            Decision::Allowed
        );
        assert!(matches!(
            p.permits("read_file", Some(&path("src/x/a.rs"))),
            Decision::Denied(_)
        ));
        assert!(matches!(
            p.permits("read_file", Some(&path("srcx/a.rs"))),
            Decision::Denied(_)
        ));
        let p = policy(&["none,read_file(src/**)"], &[]);
        assert_eq!(
            p.permits("read_file", Some(&path("src/x/y/a.rs"))),
            Decision::Allowed
        );
    }

    #[test]
    fn text_patterns_cross_slashes() {
        let p = policy(&["bash(git *)"], &[]);
        let cmd = Subject::Text("git diff src/a.rs".into());
        assert_eq!(p.permits("bash", Some(&cmd)), Decision::Allowed);
        let other = Subject::Text("cargo build".into());
        assert_eq!(
            p.permits("bash", Some(&other)),
            Decision::Denied(
                "\"cargo build\" is not allowed: bash is only allowed as bash(git *)".into()
            )
        );
    }

    #[test]
    fn compound_commands_must_match_in_every_part() {
        let p = policy(&["bash(git *)"], &[]);
        let cmd = |s: &str| p.permits("bash", Some(&Subject::Command(s.into())));
        assert_eq!(cmd("git status && git diff | git apply"), Decision::Allowed);
        assert_eq!(
            cmd("git status; rm -rf x"),
            Decision::Denied(
                "\"rm -rf x\" is not allowed: bash is only allowed as bash(git *) (every command \
                 in a compound command must match)"
                    .into()
            )
        );
        for bad in [
            "git log $(rm -rf x)",
            "git log `curl x`",
            "(git status; sh)",
            "git log 'oops",
        ] {
            assert!(matches!(cmd(bad), Decision::Denied(_)), "{bad}");
        }
        let p = policy(&["bash"], &["bash(rm *)"]);
        let cmd = |s: &str| p.permits("bash", Some(&Subject::Command(s.into())));
        assert_eq!(cmd("ls && echo ok"), Decision::Allowed);
        assert!(
            matches!(cmd("ls; rm -rf /"), Decision::Denied(m) if m.contains("--deny bash(rm *)"))
        );
        assert!(matches!(cmd("echo $(rm -rf /)"), Decision::Denied(_)));
    }

    #[test]
    fn commas_inside_patterns_do_not_split_rules() {
        let p = policy(&["bash(git log --format=%H,%s),grep"], &[]);
        let rules = p.allow_rules();
        assert_eq!(
            rules[rules.len() - 2..],
            ["bash(git log --format=%H,%s)", "grep"]
        );
    }

    #[test]
    fn typos_and_bad_syntax_are_errors() {
        let err = Policy::new(&["red_file".into()], &[], KNOWN).unwrap_err();
        assert!(matches!(err, PolicyError::UnknownTool { ref name, .. } if name == "red_file"));
        let err = Policy::new(&["bash(git *".into()], &[], KNOWN).unwrap_err();
        assert!(matches!(err, PolicyError::Syntax { .. }), "{err}");
        assert!(Policy::new(&["mcp__*".into()], &[], KNOWN).is_ok());
    }
}
