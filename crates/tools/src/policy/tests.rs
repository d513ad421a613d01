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

/// A command line whose redirections are located lexically: relative paths without `..`
/// are inside the workspace, everything else is outside.
fn command(s: &str) -> Subject {
    Subject::Command(CommandLine::new(s, |p| {
        (!p.starts_with('/') && !p.split('/').any(|c| c == "..")).then(|| {
            let rel = p.trim_start_matches("./").to_owned();
            (rel.clone(), rel)
        })
    }))
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
    let cmd = |s: &str| p.permits("bash", Some(&command(s)));
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
    let cmd = |s: &str| p.permits("bash", Some(&command(s)));
    assert_eq!(cmd("ls && echo ok"), Decision::Allowed);
    assert!(matches!(cmd("ls; rm -rf /"), Decision::Denied(m) if m.contains("--deny bash(rm *)")));
    assert!(matches!(cmd("echo $(rm -rf /)"), Decision::Denied(_)));
}

#[test]
fn commas_inside_patterns_do_not_split_rules() {
    let p = policy(&["bash(git log --format=%H,%s),grep"], &[]);
    let rules = p.allow_rules();
    assert!(rules.contains(&"bash(git log --format=%H,%s)".to_owned()));
    // A rule the defaults already hold is recorded once.
    assert_eq!(
        rules.iter().filter(|r| *r == "grep").count(),
        1,
        "{rules:?}"
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

fn denied(d: Decision) -> String {
    match d {
        Decision::Denied(why) => why,
        Decision::Allowed => "allowed".to_owned(),
    }
}

/// The bypasses, and the other constructs the matcher refuses: a rule with a pattern
/// covers none of them and says which construct it did not understand; `-a bash` allows them.
#[test]
fn a_pattern_does_not_cover_what_the_matcher_does_not_understand() {
    let table: &[(&str, &str)] = &[
        ("git log $'\\'' ; touch X #'", "$'…' quoting"),
        ("git status #'\ntouch X\n#'", "a comment"),
        ("git log <<EOF\ngit it's\nEOF\ntouch X", "a here-document"),
        ("git () { touch X; }; git status", "a function definition"),
        ("git () ( touch X ); git status", "a function definition"),
        ("git log ${x:='$(touch X)'} ${x@P}", "a parameter expansion"),
        (
            "x='a[$(touch X)]'; git log ${y[x]}",
            "a variable assignment",
        ),
        ("git log $(touch X)", "a command substitution"),
        ("git log `touch X`", "a command substitution"),
        ("git diff <(touch X)", "a process substitution"),
        ("GIT_DIR=x git status", "a variable assignment"),
        ("(git status; touch X)", "a subshell"),
        ("{ git status; touch X; }", "a group ({ …; })"),
        ("git status & touch X", "a background job (&)"),
        ("git log 'oops", "a syntax error"),
    ];
    let p = policy(&["bash(git *)"], &[]);
    let bare = policy(&["bash"], &[]);
    for (script, construct) in table {
        assert_eq!(
            denied(p.permits("bash", Some(&command(script)))),
            format!("bash(git *) does not cover {construct}"),
            "{script:?}"
        );
        assert_eq!(
            bare.permits("bash", Some(&command(script))),
            Decision::Allowed,
            "{script:?}"
        );
    }
    let two = policy(&["bash(git *),bash(ls *)"], &[]);
    assert_eq!(
        denied(two.permits("bash", Some(&command("git () { :; }")))),
        "none of bash(git *), bash(ls *) covers a function definition"
    );
    // Even a pattern that matches anything does not cover code run from text.
    let any = policy(&["bash(*)"], &[]);
    assert_eq!(
        denied(any.permits("bash", Some(&command("eval 'touch X'")))),
        "bash(*) does not cover the builtin `eval`, which runs text as shell code"
    );
    assert_eq!(
        any.permits("bash", Some(&command("git status && ls"))),
        Decision::Allowed
    );
}

#[test]
fn every_command_must_match_and_a_star_never_reaches_the_next_line() {
    let p = policy(&["bash(git *)"], &[]);
    let cmd = |s: &str| denied(p.permits("bash", Some(&command(s))));
    assert_eq!(
        cmd("git status\ntouch X"),
        "\"touch X\" is not allowed: bash is only allowed as bash(git *) (every command in a \
         compound command must match)"
    );
    assert_eq!(
        cmd("touch X"),
        "\"touch X\" is not allowed: bash is only allowed as bash(git *)"
    );
    assert!(cmd("git log | sh").starts_with("\"sh\" is not allowed"));
    // A newline inside a quoted argument is an argument, not a second command.
    assert_eq!(cmd("git commit -m \"title\n\nbody\""), "allowed");
    // Quotes are removed before matching, and word boundaries kept.
    assert_eq!(cmd("'git' \"status\""), "allowed");
    assert!(cmd("'git status'").contains("is not allowed"));
    assert_eq!(cmd(""), "an empty command is not allowed");
}

#[test]
fn a_redirection_is_a_read_or_a_write_the_file_rules_decide() {
    let allowed = |allow: &[&str], deny: &[&str], script: &str| {
        denied(policy(allow, deny).permits("bash", Some(&command(script))))
    };
    // Streams are always fine; `2>&1` used to be cut at its `&`.
    assert_eq!(
        allowed(
            &["bash(git *)"],
            &[],
            "git log 2>&1 >/dev/null | git apply 2>&- >&2"
        ),
        "allowed"
    );
    assert_eq!(
        allowed(&["bash(ls *)"], &[], "ls -a > victim.txt"),
        "bash(ls *) does not cover the redirection `> victim.txt`: it writes \"victim.txt\", \
         and no write_file rule allows that"
    );
    assert_eq!(
        allowed(&["bash(ls *),write_file"], &[], "ls -a > victim.txt"),
        "allowed"
    );
    assert_eq!(
        allowed(
            &["bash(ls *),write_file(out/**)"],
            &[],
            "ls -a >> ./out/a/b.txt"
        ),
        "allowed"
    );
    assert_eq!(
        allowed(
            &["bash(ls *),write_file"],
            &["write_file(*.env)"],
            "ls -a &> .env"
        ),
        "bash(ls *) does not cover the redirection `&> .env`: it writes \".env\", which the \
         rule --deny write_file(*.env) denies"
    );
    for outside in ["/tmp/x", "../x", "a/../../x"] {
        assert_eq!(
            allowed(
                &["bash(git *),write_file"],
                &[],
                &format!("git --version > {outside}")
            ),
            format!(
                "bash(git *) does not cover the redirection `> {outside}`: it writes outside \
                 the workspace"
            )
        );
    }
    // Reads: the default allowlist has read_file; without it, reading needs a rule too.
    assert_eq!(
        allowed(&["bash(git *)"], &[], "git apply < fix.patch"),
        "allowed"
    );
    assert_eq!(
        allowed(&["none,bash(git *)"], &[], "git apply < fix.patch"),
        "bash(git *) does not cover the redirection `< fix.patch`: it reads \"fix.patch\", and \
         no read_file rule allows that"
    );
    assert_eq!(
        allowed(&["bash(git *)"], &[], "git apply < /etc/passwd"),
        "bash(git *) does not cover the redirection `< /etc/passwd`: it reads outside the \
         workspace"
    );
    // `-a bash` allows any redirection: the sandbox is the boundary there.
    assert_eq!(allowed(&["bash"], &[], "ls > /tmp/x"), "allowed");
}

#[test]
fn deny_rules_see_every_command_also_inside_what_is_refused() {
    let p = policy(&["bash"], &["bash(rm *)"]);
    for script in [
        "r''m -rf x",
        "f() { rm -rf x; }; f",
        "x=1 rm -rf x",
        "echo `rm -rf x`",
        "git log && rm -rf x",
    ] {
        let why = denied(p.permits("bash", Some(&command(script))));
        assert!(
            why.ends_with("is denied by the rule --deny bash(rm *)"),
            "{script}: {why}"
        );
    }
    assert_eq!(
        p.permits("bash", Some(&command("git rm x"))),
        Decision::Allowed
    );
}
