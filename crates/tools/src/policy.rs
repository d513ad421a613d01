//! The allowlist: which tools the model is offered and which calls may run.
//!
//! Rules are `TOOL` or `TOOL(PATTERN)`, comma-separated; `all` and `none` are words. The list
//! starts as the read-only file tools; `--allow` adds rules (`none` first clears them) and
//! `--deny` takes away; deny wins. A tool is offered when some allow rule names it and no
//! pattern-less deny rule does. A call is permitted when an allow rule matches it (by name, and
//! by pattern on its subject) and no deny rule does.
//!
//! A bash command is judged on its parse (`shell`): a rule with a pattern covers a script only if
//! the matcher understands all of it, the pattern matches each simple command in it, and each
//! file a redirection opens is one the file tools' rules allow. What is not understood is not
//! covered, and the error names what was not understood.
//!
//! A path is judged where it is written and where it leads (`Subject::Located`): both must be
//! allowed and neither denied, and a path that leads outside the workspace matches no rule with
//! a pattern. A URL is judged on its parsed parts when the pattern is written as a URL
//! (`policy_url`). What cannot be decided (a URL that does not parse) is covered by no allow
//! rule and by every deny rule that could concern it.

use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use reqwest::Url;

use super::shell::{self, Script, Target};

mod url;
mod within;

use url::UrlPattern;
pub(crate) use url::UrlPatternError;

/// The tools allowed when the user says nothing.
pub(crate) const DEFAULT_ALLOW: &[&str] = &["read_file", "list_dir", "glob", "grep"];

/// Tools an allow rule offers only when it names them (`task`, `task(reviewer)`), never through
/// a glob or `all`: delegating multiplies what a run spends, so it is asked for by name.
pub(crate) const NAMED_ONLY: &[&str] = &["task"];

/// What an allowlist pattern is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A workspace-relative path as written (lexically normalized): `*` stays within one
    /// directory, `**` crosses them. Tools name their subject this way; the pipeline adds where
    /// the path leads (`Located`) before asking the policy, since only it has the workspace.
    Path(String),
    /// A workspace path and where it really leads: `real` is the workspace-relative path once
    /// every symlink on the way is followed, or `None` when it leads outside the workspace or
    /// cannot be resolved. Both must be allowed, neither denied; `None` matches no pattern.
    Located { path: String, real: Option<String> },
    /// A URL: a pattern written as a URL matches its parsed parts (see `policy_url`), any other
    /// pattern its text.
    Url(String),
    /// Other text: `*` matches anything, `/` included.
    Text(String),
    /// A bash command line, judged on its parse (see `CommandLine`).
    Command(CommandLine),
}

impl Subject {
    pub fn as_str(&self) -> &str {
        match self {
            Subject::Path(s) | Subject::Url(s) | Subject::Text(s) => s,
            Subject::Located { path, .. } => path,
            Subject::Command(c) => &c.text,
        }
    }
}

/// A bash command line as the allowlist judges it: its text (shown in progress, and what deny
/// rules see), its parse, and where each file its redirections name lies in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    text: String,
    script: Result<Script, shell::NotUnderstood>,
    /// Each path a redirection opens, as bash will open it, with the workspace-relative path
    /// as written and where it leads (what file tool rules match), or `None` when it lies
    /// outside the workspace.
    places: Vec<(String, Option<(String, String)>)>,
}

impl CommandLine {
    /// Parses `text`. `locate` maps a path as a redirection names it (relative paths are
    /// relative to the workspace root, where bash runs) to its workspace-relative form, or `None`
    /// when it is outside: the policy has no workspace, so the caller, which has, resolves them.
    pub(crate) fn new(
        text: &str,
        locate: impl Fn(&str) -> Option<(String, String)>,
    ) -> CommandLine {
        let script = shell::parse(text);
        let places = match &script {
            Ok(script) => script
                .redirects
                .iter()
                .filter_map(|r| match &r.target {
                    Target::Read(path) | Target::Write(path) => Some((path.clone(), locate(path))),
                    Target::Stream => None,
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        CommandLine {
            text: text.to_owned(),
            script,
            places,
        }
    }

    fn place(&self, path: &str) -> Option<&(String, String)> {
        self.places
            .iter()
            .find(|(p, _)| p == path)
            .and_then(|(_, place)| place.as_ref())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("bad rule {rule:?} in {flag}: {problem}")]
    Syntax {
        flag: &'static str,
        rule: String,
        #[source]
        problem: RuleProblem,
    },
    #[error("unknown tool {name:?} in {flag}; known tools: {known}")]
    UnknownTool {
        flag: &'static str,
        name: String,
        known: String,
    },
}

/// What is wrong with how a rule is written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RuleProblem {
    #[error("unbalanced ')'")]
    UnbalancedClose,
    #[error("unbalanced '('")]
    UnbalancedOpen,
    #[error("expected TOOL(PATTERN) with ')' at the end")]
    NoClosingParen,
    #[error("missing tool name")]
    NoTool,
    #[error("{}", .0.kind())]
    Glob(#[from] globset::Error),
    #[error(transparent)]
    Url(#[from] UrlPatternError),
}

#[derive(Debug, Clone)]
struct Rule {
    text: String,
    tool: GlobMatcher,
    pattern: Option<Pattern>,
    /// An allow rule whose tool part is a glob (`all`, `*`): it never reaches [`NAMED_ONLY`].
    glob_allow: bool,
}

#[derive(Debug, Clone)]
struct Pattern {
    path: GlobMatcher,
    text: GlobMatcher,
    /// The pattern's parts when it is written as a URL; URL subjects are matched on them.
    url: Option<UrlPattern>,
}

impl Pattern {
    /// Whether the pattern matches a URL (or text holding one), or `None` when that cannot be
    /// decided because a URL pattern meets text that does not parse as a URL.
    fn matches_url(&self, text: &str, is_url: bool) -> Option<bool> {
        let Some(pattern) = &self.url else {
            return Some(self.text.is_match(text));
        };
        // Text without `://` is no URL, and as text no URL pattern could match it either.
        if !is_url && !text.contains("://") {
            return Some(false);
        }
        Url::parse(text).ok().map(|url| pattern.matches(&url))
    }
}

impl Rule {
    fn matches_tool(&self, tool: &str) -> bool {
        self.tool.is_match(tool) && !(self.glob_allow && NAMED_ONLY.contains(&tool))
    }

    /// Whether the rule matches the call, `None` when that cannot be decided. A `Located`
    /// subject is judged by `Policy::permits_located`, view by view; alone it is its path.
    fn judge(&self, tool: &str, subject: Option<&Subject>) -> Option<bool> {
        if !self.matches_tool(tool) {
            return Some(false);
        }
        match (&self.pattern, subject) {
            (None, _) => Some(true),
            (Some(_), None) => Some(false),
            (Some(p), Some(Subject::Path(s) | Subject::Located { path: s, .. })) => {
                Some(p.path.is_match(s))
            }
            (Some(p), Some(Subject::Url(s))) => p.matches_url(s, true),
            (Some(p), Some(Subject::Text(s))) => p.matches_url(s, false),
            // Judged command by command in `Policy::permits_command`, never as a whole.
            (Some(_), Some(Subject::Command(_))) => Some(false),
        }
    }

    /// As an allow rule: only what it certainly matches.
    fn matches(&self, tool: &str, subject: Option<&Subject>) -> bool {
        self.judge(tool, subject) == Some(true)
    }

    /// As a deny rule: also what it cannot tell.
    fn denies(&self, tool: &str, subject: Option<&Subject>) -> bool {
        self.judge(tool, subject) != Some(false)
    }

    /// Whether the rule's pattern matches one text as a whole, as deny rules see commands.
    fn matches_text(&self, tool: &str, text: &str) -> bool {
        self.matches_tool(tool) && self.pattern.as_ref().is_none_or(|p| p.text.is_match(text))
    }

    /// Whether the rule's pattern matches one simple command's re-joined text. That text never
    /// holds a newline (see `SimpleCommand::text`); refusing one anyway keeps a `*`, which
    /// globset lets match newlines, from ever reaching from one command into the next.
    fn covers_command(&self, tool: &str, text: &str) -> bool {
        !text.contains('\n') && self.pattern.is_some() && self.matches_text(tool, text)
    }
}

/// Whether a call may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Allowed,
    Denied(String),
}

#[derive(Debug, Clone)]
pub struct Policy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    /// The policy this one narrows (a subagent's inside its parent's): a call must pass both,
    /// and a tool is offered only when both offer it.
    within: Option<Arc<Policy>>,
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
            within: None,
        })
    }

    /// Whether the model is told about `tool` at all.
    pub fn offers(&self, tool: &str) -> bool {
        self.offers_here(tool) && self.within.as_ref().is_none_or(|p| p.offers(tool))
    }

    fn offers_here(&self, tool: &str) -> bool {
        self.allow.iter().any(|r| r.matches_tool(tool))
            && !self
                .deny
                .iter()
                .any(|r| r.pattern.is_none() && r.matches_tool(tool))
    }

    /// Whether one call may run.
    pub(crate) fn permits(&self, tool: &str, subject: Option<&Subject>) -> Decision {
        if let Some(parent) = &self.within
            && let denied @ Decision::Denied(_) = parent.permits(tool, subject)
        {
            return denied;
        }
        self.permits_here(tool, subject)
    }

    fn permits_here(&self, tool: &str, subject: Option<&Subject>) -> Decision {
        match subject {
            Some(Subject::Command(command)) => return self.permits_command(tool, command),
            Some(Subject::Located { path, real }) => {
                return self.permits_located(tool, path, real.as_deref());
            }
            _ => {}
        }
        if let Some(rule) = self.deny.iter().find(|r| r.denies(tool, subject)) {
            return Decision::Denied(format!("denied by the rule --deny {}", rule.text));
        }
        if self.allow.iter().any(|r| r.matches(tool, subject)) {
            return Decision::Allowed;
        }
        let what = match subject {
            Some(s) => format!("{:?} is not allowed", s.as_str()),
            None => "this call is not allowed".to_owned(),
        };
        self.only_as(tool, &what)
    }

    /// "WHAT: TOOL is only allowed as RULES".
    fn only_as(&self, tool: &str, what: &str) -> Decision {
        let patterns: Vec<&str> = self
            .allow
            .iter()
            .filter(|r| r.matches_tool(tool))
            .map(|r| r.text.as_str())
            .collect();
        Decision::Denied(format!(
            "{what}: {tool} is only allowed as {}",
            patterns.join(", ")
        ))
    }

    /// A path is allowed when the path as written and the path it leads to are each matched by
    /// some allow rule, and neither by a deny rule. A path that leads outside the workspace
    /// (`real` is `None`) is allowed only by a rule without a pattern: the tool itself then
    /// refuses it, or (a command tool) answers for it.
    fn permits_located(&self, tool: &str, path: &str, real: Option<&str>) -> Decision {
        let written = Subject::Path(path.to_owned());
        let leads = real
            .filter(|r| *r != path)
            .map(|r| Subject::Path(r.to_owned()));
        for rule in &self.deny {
            if rule.denies(tool, Some(&written)) {
                return Decision::Denied(format!("denied by the rule --deny {}", rule.text));
            }
            if let Some(leads) = &leads
                && rule.denies(tool, Some(leads))
            {
                return Decision::Denied(format!(
                    "{path:?} leads to {:?}, which the rule --deny {} denies",
                    leads.as_str(),
                    rule.text
                ));
            }
        }
        if !self.allow.iter().any(|r| r.matches(tool, Some(&written))) {
            return self.only_as(tool, &format!("{path:?} is not allowed"));
        }
        let pattern_less = || {
            self.allow
                .iter()
                .any(|r| r.pattern.is_none() && r.matches_tool(tool))
        };
        match (real, &leads) {
            (None, _) if !pattern_less() => self.only_as(
                tool,
                &format!("{path:?} leads outside the workspace, which no pattern covers"),
            ),
            (Some(real), Some(leads))
                if !self.allow.iter().any(|r| r.matches(tool, Some(leads))) =>
            {
                self.only_as(
                    tool,
                    &format!("{path:?} leads to {real:?} (a symlink), which is not allowed"),
                )
            }
            _ => Decision::Allowed,
        }
    }

    /// The deny rule that keeps a file a walk came across (grep's and glob's, in `tool`) out of
    /// the result: one with a pattern for `read_file`, since showing the file's content or name
    /// is reading it, or for `tool` itself. `rel` is where the file really is.
    pub(crate) fn hides(&self, tool: &str, rel: &str) -> Option<&str> {
        let subject = Subject::Path(rel.to_owned());
        let here = self
            .deny
            .iter()
            .filter(|r| r.pattern.is_some())
            .find(|r| r.denies("read_file", Some(&subject)) || r.denies(tool, Some(&subject)))
            .map(|r| r.text.as_str());
        here.or_else(|| self.within.as_ref()?.hides(tool, rel))
    }

    /// A shell command is denied if a deny rule matches its text or any command in it (best
    /// effort, also inside what the matcher refuses). Then a pattern-less rule allows anything
    /// (the sandbox bounds it); a rule with a pattern allows only a script the matcher
    /// understands, whose every command the pattern matches, and whose every redirection opens
    /// a file the file tools' own rules allow.
    fn permits_command(&self, tool: &str, line: &CommandLine) -> Decision {
        if let Some(denied) = self.denies_command(tool, line) {
            return denied;
        }
        if self
            .allow
            .iter()
            .any(|r| r.pattern.is_none() && r.matches_tool(tool))
        {
            return Decision::Allowed;
        }
        let rules: Vec<&Rule> = self.allow.iter().filter(|r| r.matches_tool(tool)).collect();
        let names: Vec<&str> = rules.iter().map(|r| r.text.as_str()).collect();
        let not_covered = |what: &str| {
            Decision::Denied(match names.as_slice() {
                [] => format!("{tool} is not allowed"),
                [one] => format!("{one} does not cover {what}"),
                many => format!("none of {} covers {what}", many.join(", ")),
            })
        };
        let script = match &line.script {
            Ok(script) => script,
            Err(e) => return not_covered(&e.construct),
        };
        if script.commands.is_empty() {
            return Decision::Denied("an empty command is not allowed".into());
        }
        for command in &script.commands {
            let text = command.text();
            if !rules.iter().any(|r| r.covers_command(tool, &text)) {
                let compound = if script.commands.len() > 1 {
                    " (every command in a compound command must match)"
                } else {
                    ""
                };
                return Decision::Denied(format!(
                    "{text:?} is not allowed: {tool} is only allowed as {}{compound}",
                    names.join(", ")
                ));
            }
        }
        match self.uncovered_redirect(line, script) {
            Some(what) => not_covered(&what),
            None => Decision::Allowed,
        }
    }

    /// The denial of the first deny rule that matches the command line's text or the text of a
    /// command in it.
    fn denies_command(&self, tool: &str, line: &CommandLine) -> Option<Decision> {
        let deny: Vec<&Rule> = self.deny.iter().filter(|r| r.matches_tool(tool)).collect();
        let mut texts = vec![line.text.clone()];
        if !deny.is_empty() {
            texts.extend(shell::command_texts(&line.text));
        }
        deny.into_iter().find_map(|rule| {
            let text = texts.iter().find(|t| rule.matches_text(tool, t))?;
            Some(Decision::Denied(format!(
                "{text:?} is denied by the rule --deny {}",
                rule.text
            )))
        })
    }

    /// The first redirection that opens a file the file tools' own rules would not let them
    /// open, described for the denial. A redirection is the shell itself reading or writing a
    /// file: the rule for the file tool that does the same decides, as it would for the model
    /// calling that tool.
    fn uncovered_redirect(&self, line: &CommandLine, script: &Script) -> Option<String> {
        for redirect in &script.redirects {
            let (file_tool, path, verb) = match &redirect.target {
                Target::Stream => continue,
                Target::Read(path) => ("read_file", path, "reads"),
                Target::Write(path) => ("write_file", path, "writes"),
            };
            let what = format!("the redirection `{}`", redirect.shown);
            let Some((rel, real)) = line.place(path) else {
                return Some(format!("{what}: it {verb} outside the workspace"));
            };
            // As the file tool would be judged: the path as written and where it leads.
            for view in [rel, real] {
                let subject = Subject::Path(view.clone());
                if let Some(deny) = self
                    .deny
                    .iter()
                    .find(|r| r.denies(file_tool, Some(&subject)))
                {
                    return Some(format!(
                        "{what}: it {verb} {view:?}, which the rule --deny {} denies",
                        deny.text
                    ));
                }
                if !self
                    .allow
                    .iter()
                    .any(|r| r.matches(file_tool, Some(&subject)))
                {
                    return Some(format!(
                        "{what}: it {verb} {view:?}, and no {file_tool} rule allows that"
                    ));
                }
            }
        }
        None
    }

    /// The rules in effect, for the transcript: each once (`-a read_file` repeats a default).
    pub fn allow_rules(&self) -> Vec<String> {
        let mut rules: Vec<String> = Vec::new();
        for r in &self.allow {
            if !rules.contains(&r.text) {
                rules.push(r.text.clone());
            }
        }
        rules
    }
}

/// What a running tool may ask the allowlist about its own call: whether it may go on to another
/// subject (`web_fetch`'s redirect hops) and which files a walk must leave out (grep, glob). The
/// pipeline gives each call one for its tool; `Gate::open()`, for tools run outside the pipeline
/// (`ToolContext::new`, unit tests), permits everything and hides nothing.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    policy: Option<Arc<Policy>>,
    tool: String,
}

impl Gate {
    pub(crate) fn new(policy: Arc<Policy>, tool: &str) -> Gate {
        Gate {
            policy: Some(policy),
            tool: tool.to_owned(),
        }
    }

    pub(crate) fn open() -> Gate {
        Gate {
            policy: None,
            tool: String::new(),
        }
    }

    /// Whether the call may go on to `subject`, as if it had been the call's subject.
    pub(crate) fn permits(&self, subject: &Subject) -> Decision {
        match &self.policy {
            Some(policy) => policy.permits(&self.tool, Some(subject)),
            None => Decision::Allowed,
        }
    }

    /// The deny rule that hides a file at `rel` (workspace-relative, symlinks resolved) from a
    /// walk; see [`Policy::hides`].
    pub(crate) fn hides(&self, rel: &str) -> Option<String> {
        let policy = self.policy.as_ref()?;
        policy.hides(&self.tool, rel).map(str::to_owned)
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
                    problem: RuleProblem::UnbalancedClose,
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
            problem: RuleProblem::UnbalancedOpen,
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
    let syntax = |problem: RuleProblem| PolicyError::Syntax {
        flag,
        rule: rule.to_owned(),
        problem,
    };
    let (tool, pattern) = match rule.find('(') {
        Some(open) => {
            let inner = rule[open + 1..]
                .strip_suffix(')')
                .ok_or_else(|| syntax(RuleProblem::NoClosingParen))?;
            (rule[..open].trim(), Some(inner))
        }
        None => (rule, None),
    };
    let tool = if tool == "all" { "*" } else { tool };
    if tool.is_empty() {
        return Err(syntax(RuleProblem::NoTool));
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
            .map_err(|e| syntax(e.into()))
    };
    let pattern = match pattern {
        None => None,
        Some(p) => Some(Pattern {
            path: glob(p, true)?,
            text: glob(p, false)?,
            url: UrlPattern::parse(p).map_err(|e| syntax(e.into()))?,
        }),
    };
    Ok(Rule {
        text: rule.to_owned(),
        tool: glob(tool, false)?,
        pattern,
        glob_allow: is_glob && !flag.ends_with("deny"),
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod subject_tests;
