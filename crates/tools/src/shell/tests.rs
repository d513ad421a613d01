use super::*;
use pretty_assertions::assert_eq;

fn words(script: &str) -> Vec<Vec<String>> {
    match parse(script) {
        Ok(s) => s.commands.into_iter().map(|c| c.words).collect(),
        Err(e) => panic!("{script:?} not understood: {e}"),
    }
}

fn texts(script: &str) -> Vec<String> {
    parse(script)
        .unwrap()
        .commands
        .iter()
        .map(SimpleCommand::text)
        .collect()
}

fn refused(script: &str) -> String {
    match parse(script) {
        Ok(s) => panic!("{script:?} was understood as {s:?}"),
        Err(e) => e.construct,
    }
}

#[test]
fn a_simple_command_is_its_words_after_quote_removal() {
    assert_eq!(words("git status"), [["git", "status"]]);
    assert_eq!(
        words("  git log --format='%H;%s' \"a|b\"  "),
        [["git", "log", "--format=%H;%s", "a|b"]]
    );
    assert_eq!(words(r"echo a\;b"), [["echo", "a;b"]]);
    assert_eq!(
        words(r#"printf "a\"b\\c\$d\e" 'x\y' a"b"c'd'e"#),
        [["printf", r#"a"b\c$d\e"#, r"x\y", "abcde"]]
    );
    assert_eq!(words("echo \"\" ''"), [["echo", "", ""]]);
    assert_eq!(words("echo \"two\nlines\""), [["echo", "two\nlines"]]);
    assert_eq!(words("echo \"a\\\nb\""), [["echo", "ab"]]);
    assert_eq!(
        words("git log \\\n  --oneline \\\n  -3"),
        [["git", "log", "--oneline", "-3"]]
    );
    // Only `~` at a word's start expands; HEAD~1, @{u} and a, are plain.
    assert_eq!(
        words("git log HEAD~1 @{u}..HEAD HEAD@{1}..HEAD@{2} a,b 10#5"),
        [[
            "git",
            "log",
            "HEAD~1",
            "@{u}..HEAD",
            "HEAD@{1}..HEAD@{2}",
            "a,b",
            "10#5"
        ]]
    );
    // A glob in an argument is bash's to expand; a rule's `*` covers whatever it becomes.
    assert_eq!(words("ls src/*.rs"), [["ls", "src/*.rs"]]);
}

#[test]
fn separators_split_commands() {
    assert_eq!(
        words("git status; rm -rf x"),
        [vec!["git", "status"], vec!["rm", "-rf", "x"]]
    );
    assert_eq!(
        words("a && b || c | d |& e\nf;g"),
        [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"]]
    );
    assert_eq!(words("a &&\n  b |\n c\n\n"), [["a"], ["b"], ["c"]]);
    assert_eq!(words("a;"), [["a"]]);
    assert!(parse("").unwrap().commands.is_empty());
    assert!(parse(" \n ").unwrap().commands.is_empty());
}

#[test]
fn the_text_rules_match_keeps_word_boundaries_and_never_holds_a_newline() {
    assert_eq!(
        texts("git commit -m \"fix it\" ''  --author=\"A <a@b>\""),
        ["git commit -m 'fix it' '' '--author=A <a@b>'"]
    );
    assert_eq!(texts("'git status' x"), ["'git status' x"]);
    assert_eq!(texts("echo \"it's\""), [r"echo 'it'\''s'"]);
    assert_eq!(texts("echo \"a\nb\tc\""), [r"echo $'a\nb\tc'"]);
    assert_eq!(texts("echo 'a\\b'"), [r"echo 'a\b'"]);
}

/// Every construct the issue lists, and the others the walk refuses, with the name the error
/// gives it.
/// Scripts the matcher does not fully understand, and the construct its error names.
const NOT_UNDERSTOOD: &[(&str, &str)] = &[
    // The issue's bypasses.
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
    ("git log ${y[x]}", "a parameter expansion"),
    // Expansions and substitutions of every kind.
    ("git log $x", "a parameter expansion"),
    ("git log \"$x\"", "a parameter expansion"),
    ("git log $(touch X)", "a command substitution"),
    ("git log \"`touch X`\"", "a command substitution"),
    ("git log $((1+2))", "an arithmetic expansion"),
    ("git diff <(ls a) >(tee b)", "a process substitution"),
    ("git log $\"x\"", "an unquoted `$`"),
    ("git log {a,b}", "a brace expansion"),
    ("git log {1..3}", "a brace expansion"),
    ("git log ~/x", "a tilde expansion (~)"),
    ("make prefix=~/x", "a tilde expansion (~)"),
    ("git log \"a$\"", "a `$` in double quotes"),
    // Structure.
    ("x=1 git status", "a variable assignment"),
    ("(git status; sh)", "a subshell"),
    ("{ git status; sh; }", "a group ({ …; })"),
    ("git status & touch X", "a background job (&)"),
    ("git status &", "a background job (&)"),
    ("git log <<< 'x'", "a here-string"),
    ("! git status", "a negated command (!)"),
    ("[ -f x ]", "a test expression ([ … ] or [[ … ]])"),
    ("if git status; then sh; fi", "an if statement"),
    ("for x in a; do sh; done", "a loop"),
    (
        "export X=1",
        "a declaration (declare, export, local, readonly, typeset)",
    ),
    ("git status ;; sh", "a case terminator outside a case"),
    ("git log 'oops", "a syntax error"),
    // Builtins whose effect is not in their words.
    (
        "eval 'touch X'",
        "the builtin `eval`, which runs text as shell code",
    ),
    (
        "source x.sh",
        "the builtin `source`, which runs text as shell code",
    ),
    (". x.sh", "the builtin `.`, which runs text as shell code"),
    (
        "trap 'touch X' EXIT",
        "the builtin `trap`, which runs text as shell code",
    ),
    (
        "exec git status",
        "the builtin `exec`, which runs the command named in its arguments",
    ),
    (
        "'read' 'a[$(touch X)]'",
        "the builtin `read`, which assigns to variables it is given by name, where bash runs \
             code in an array subscript",
    ),
    ("time git status", "the reserved word `time`"),
    ("coproc git status", "the reserved word `coproc`"),
    // Where tree-sitter and bash could read the text differently.
    ("gi\\\nt status", "a line continuation inside a word"),
    ("git status\\\n--short", "a line continuation inside a word"),
    (
        "echo a\rb",
        "a carriage return (bash reads it as part of a word)",
    ),
    ("git {fd}>out", "a named file descriptor ({fd}>)"),
    ("g* status", "a glob pattern in a command name"),
    (
        "git status > *.txt",
        "a glob pattern in a redirection target",
    ),
    ("git status\0", "a NUL character"),
    (
        "cd sub && git log > out",
        "the redirection `> out` after `cd` (a relative path in a script that changes \
             directory)",
    ),
];

#[test]
fn what_is_not_understood_is_named() {
    let table = NOT_UNDERSTOOD;
    let wrong: Vec<String> = table
        .iter()
        .filter_map(|(script, construct)| {
            let got = parse(script).map_err(|e| e.construct);
            (got != Err((*construct).to_owned())).then(|| format!("{script:?}: {got:?}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn builtins_that_assign_by_name_are_refused_only_with_that_option() {
    assert!(parse("printf '%s\\n' x").is_ok());
    assert!(parse("printf -v 'a[$(touch X)]' x").is_err());
    assert!(parse("test -f x").is_ok());
    assert!(parse("test -v 'a[$(touch X)]'").is_err());
    assert!(parse("wait").is_ok());
    assert!(parse("wait -p 'a[$(touch X)]'").is_err());
    // Quoting a name does not hide it: the value decides.
    assert!(parse("'eval' x").is_err());
    assert!(parse("\\eval x").is_err());
}

#[test]
fn redirections_are_classified() {
    let targets = |s: &str| -> Vec<Target> {
        parse(s)
            .unwrap()
            .redirects
            .into_iter()
            .map(|r| r.target)
            .collect()
    };
    use Target::{Read, Stream, Write};
    assert_eq!(
        targets("git log 2>&1 >&2 2>&- <&0 1>&3- >/dev/null 2>>/dev/stderr </dev/stdin"),
        [
            Stream, Stream, Stream, Stream, Stream, Stream, Stream, Stream
        ]
    );
    assert_eq!(
        targets("git log > a >> b >| c &> d &>> e >& f 3> g < h"),
        [
            Write("a".into()),
            Write("b".into()),
            Write("c".into()),
            Write("d".into()),
            Write("e".into()),
            Write("f".into()),
            Write("g".into()),
            Read("h".into()),
        ]
    );
    assert_eq!(
        targets("git log > 'out file' >\"../x\" >/abs"),
        [
            Write("out file".into()),
            Write("../x".into()),
            Write("/abs".into())
        ]
    );
    // tree-sitter attaches `> x` to the whole list; bash, to `b`. Either way it is judged.
    assert_eq!(targets("a && b > x"), [Write("x".into())]);
    assert_eq!(targets("> x git log"), [Write("x".into())]);
    let shown: Vec<String> = parse("git log  2>&1 >out")
        .unwrap()
        .redirects
        .into_iter()
        .map(|r| r.shown)
        .collect();
    assert_eq!(shown, ["2>&1", ">out"]);
    // A redirection with no command writes a file all the same; it is still seen.
    let alone = parse("> x").unwrap();
    assert!(alone.commands.is_empty());
    assert_eq!(alone.redirects.len(), 1);
}

#[test]
fn deny_rules_see_commands_inside_what_is_refused() {
    let found =
        command_texts(r"f() { rm -rf x; }; echo $(r''m -rf y) `rm z` && x=1 rm w; >o r\m v; 'oops");
    for expected in ["rm -rf x", "r''m -rf y", "rm -rf y", "rm z", "rm w", "rm v"] {
        assert!(found.iter().any(|t| t == expected), "{expected}: {found:?}");
    }
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let long = vec!["a"; 5000].join(" && ");
    assert_eq!(refused(&long), "commands nested too deeply");
    let nested = format!("{}a{}", "$(".repeat(2000), ")".repeat(2000));
    assert!(parse(&nested).is_err());
    assert!(command_texts(&nested).contains(&"a".to_owned()));
    let ok = vec!["a"; 50].join(" && ");
    assert_eq!(words(&ok).len(), 50);
}
