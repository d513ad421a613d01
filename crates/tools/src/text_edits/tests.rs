use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::Outputs;
use crate::hooks::Hooks;
use crate::pipeline::Settings;
use crate::policy::Policy;
use crate::redact::Redactor;
use crate::workspace::Workspace;
use crate::workspace::testing::write;

const BUGGY: &str = "def shout(s):\n    return s.lower() + \"!\"\n";
const FIXED: &str = "def shout(s):\n    return s.upper() + \"!\"\n";

fn toolbox(root: &Path, allow: &[&str], deny: &[&str]) -> Toolbox {
    let names = [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "edit_file",
        "write_file",
        "bash",
    ];
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let policy = Policy::new(&s(allow), &s(deny), &names).unwrap();
    let settings = Settings {
        timeout: Duration::from_secs(5),
        max_result_bytes: 100_000,
        env: Vec::new(),
        outputs: Outputs::none(),
        hooks: Hooks::default(),
        sandbox: Default::default(),
        redactor: Redactor::default(),
        images: None,
    };
    let registry = crate::builtin::registry(&Default::default());
    Toolbox::new(registry, policy, Workspace::new(root).unwrap(), settings)
}

/// The answer's edits run as the pipeline runs calls: their results, in order.
async fn run_text(tools: &Toolbox, answer: &str, asked: &[&str]) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    for (n, input) in tools.edits_in_text(answer, asked).into_iter().enumerate() {
        let call = call(format!("{ID_PREFIX}1_{n}"), input.clone());
        let result = tools.execute(&call, CancellationToken::new()).await;
        out.push((input, result.content));
    }
    out
}

async fn run_call(tools: &Toolbox, input: Value) -> String {
    let call = call("direct".into(), input);
    tools.execute(&call, CancellationToken::new()).await.content
}

fn answer(path: &str) -> String {
    format!("The bug is in `{path}`. Here is the fixed code for {path}:\n\n```python\n{FIXED}```\n")
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    let root = top.join("ws");
    write(&root, "strutil.py", BUGGY);
    write(&top, "outside.py", BUGGY);
    (dir, top, root)
}

/// What a hostile case is, its allow and deny rules, the path the answer names, the file it must
/// leave alone.
type Case<'a> = (
    &'a str,
    &'a [&'a str],
    &'a [&'a str],
    &'a str,
    std::path::PathBuf,
);

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[tokio::test]
async fn a_fixed_function_in_an_answer_is_an_edit_file_call_that_changes_the_file() {
    let (_dir, _top, root) = setup();
    let tools = toolbox(&root, &["edit_file"], &[]);
    let ran = run_text(&tools, &answer("strutil.py"), &[]).await;
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(
        ran[0].0,
        json!({"path": "strutil.py", "old_string": BUGGY.trim_end(), "new_string": FIXED.trim_end()})
    );
    assert!(ran[0].1.starts_with("edited strutil.py"), "{}", ran[0].1);
    assert_eq!(read(&root.join("strutil.py")), FIXED);
    // Named only by the user's request, and unnamed in the answer: still the one place it fits.
    write(&root, "strutil.py", BUGGY);
    write(&root, "test_strutil.py", "from strutil import shout\n");
    let unnamed = format!("The fix:\n```python\n{FIXED}```");
    assert_eq!(run_text(&tools, &unnamed, &[]).await, vec![]);
    let ran = run_text(
        &tools,
        &unnamed,
        &["Fix strutil.py so test_strutil.py passes."],
    )
    .await;
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(read(&root.join("strutil.py")), FIXED);
}

#[tokio::test]
async fn a_search_replace_block_is_exactly_the_edit_file_call() {
    let (_dir, _top, root) = setup();
    let tools = toolbox(&root, &["edit_file"], &[]);
    let text = "strutil.py\n```python\n<<<<<<< SEARCH\n    return s.lower() + \"!\"\n=======\n    \
                return s.upper() + \"!\"\n>>>>>>> REPLACE\n```\n";
    let ran = run_text(&tools, text, &[]).await;
    assert_eq!(
        ran[0].0,
        json!({"path": "strutil.py", "old_string": "    return s.lower() + \"!\"", "new_string": "    return s.upper() + \"!\""})
    );
    assert_eq!(read(&root.join("strutil.py")), FIXED);
}

/// Every way a block could reach past a boundary, each refused exactly as the same `edit_file`
/// call is (the same result, word for word), the file untouched; and each control, the same
/// answer with that boundary off, shows the harm the refusal prevents.
#[tokio::test]
async fn a_text_edit_is_refused_exactly_as_the_same_edit_file_call() {
    let (_dir, top, root) = setup();
    let outside = top.join("outside.py");
    std::os::unix::fs::symlink(&outside, root.join("link.py")).unwrap();
    write(&root, "config/secret.py", BUGGY);
    write(&root, "src/ok.py", BUGGY);
    let absolute = outside.display().to_string();
    // (what, allow, deny, the path the answer names, the file it must leave alone)
    let cases: Vec<Case> = vec![
        (
            "outside, relative",
            &["edit_file"],
            &[],
            "../outside.py",
            outside.clone(),
        ),
        (
            "outside, absolute",
            &["edit_file"],
            &[],
            &absolute,
            outside.clone(),
        ),
        (
            "a symlink out",
            &["edit_file"],
            &[],
            "link.py",
            outside.clone(),
        ),
        (
            "a denied file",
            &["edit_file"],
            &["edit_file(config/**)"],
            "config/secret.py",
            root.join("config/secret.py"),
        ),
        (
            "not in the allowlist",
            &["edit_file(src/**)"],
            &[],
            "config/secret.py",
            root.join("config/secret.py"),
        ),
    ];
    for (what, allow, deny, path, file) in &cases {
        let tools = toolbox(&root, allow, deny);
        let ran = run_text(&tools, &answer(path), &[]).await;
        assert_eq!(ran.len(), 1, "{what}: {ran:?}");
        let same = run_call(
            &tools,
            json!({"path": path, "old_string": BUGGY.trim_end(), "new_string": FIXED.trim_end()}),
        )
        .await;
        assert_eq!(ran[0].1, same, "{what}");
        assert!(
            ["outside", "denied", "not allowed"]
                .iter()
                .any(|w| same.contains(w)),
            "{what}: {same}"
        );
        assert_eq!(read(file), BUGGY, "{what}: the file changed");
        // Nothing was read to make the call: the file's text is not in it.
        assert!(!ran[0].0.to_string().contains("lower()"), "{what}: {ran:?}");
    }
    // The controls: the boundary off, the same answer changes the file.
    let controls: Vec<(&str, &Path, &[&str], &str, std::path::PathBuf)> = vec![
        (
            "absolute, the workspace around it",
            &top,
            &["edit_file"],
            &absolute,
            outside.clone(),
        ),
        (
            "a symlink, its target inside",
            &top,
            &["edit_file"],
            "ws/link.py",
            outside.clone(),
        ),
        (
            "no deny rule",
            &root,
            &["edit_file"],
            "config/secret.py",
            root.join("config/secret.py"),
        ),
    ];
    for (what, ws, allow, path, file) in controls {
        let tools = toolbox(ws, allow, &[]);
        let ran = run_text(&tools, &answer(path), &[]).await;
        assert_eq!(ran.len(), 1, "{what}: {ran:?}");
        assert_eq!(read(&file), FIXED, "control {what}: {ran:?}");
        assert!(
            ran[0].0.to_string().contains("lower()"),
            "control {what}: {ran:?}"
        );
        std::fs::write(&file, BUGGY).unwrap();
    }
}

#[tokio::test]
async fn without_edit_file_an_answer_stays_an_answer() {
    let (_dir, _top, root) = setup();
    for allow in [&[][..], &["write_file", "bash"][..]] {
        let tools = toolbox(&root, allow, &[]);
        assert_eq!(
            tools.edits_in_text(&answer("strutil.py"), &[]),
            Vec::<Value>::new()
        );
    }
    assert_eq!(read(&root.join("strutil.py")), BUGGY);
    // The control: with edit_file allowed, the same answer is an edit.
    let tools = toolbox(&root, &["edit_file"], &[]);
    assert_eq!(tools.edits_in_text(&answer("strutil.py"), &[]).len(), 1);
}

#[tokio::test]
async fn a_missing_file_or_an_unplaceable_block_stays_text() {
    let (_dir, _top, root) = setup();
    let tools = toolbox(&root, &["edit_file"], &[]);
    for text in [
        answer("nothere.py"),
        "Run this in strutil.py's folder:\n```sh\npython3 -m unittest\n```".to_owned(),
        "For example, in strutil.py:\n```python\nprint(shout('hi'))\n```".to_owned(),
        "Nothing to change in strutil.py:\n```python\ndef shout(s):\n    return s.lower() + \"!\"\n```"
            .to_owned(),
    ] {
        assert_eq!(tools.edits_in_text(&text, &[]), Vec::<Value>::new(), "{text}");
    }
    assert_eq!(read(&root.join("strutil.py")), BUGGY);
}

#[test]
fn the_forms_are_found_where_they_are_written() {
    let text = "Fix `a.py` and `b.py`.\n\n```python b.py\ndef b():\n    pass\n```\n\n\
                `c.py`:\n```\nx = 1\n```\n\n```js\n// src/d.js\nlet d = 1;\n```\n\ne.py\n\
                <<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n\n```\n```\n";
    let found = forms(text);
    let prose = vec![
        "a.py".to_owned(),
        "b.py".to_owned(),
        "c.py".to_owned(),
        "e.py".to_owned(),
    ];
    let code = |named: &[&str], code: &str| Form::Code {
        named: named.iter().map(|s| s.to_string()).collect(),
        prose: prose.clone(),
        code: code.to_owned(),
    };
    assert_eq!(
        found,
        vec![
            code(&["b.py"], "def b():\n    pass"),
            code(&["c.py"], "x = 1"),
            code(&["src/d.js"], "let d = 1;"),
            Form::Replace {
                path: "e.py".into(),
                search: "old".into(),
                replace: "new".into()
            },
        ]
    );
}

#[test]
fn paths_are_read_out_of_prose() {
    assert_eq!(
        parse::paths_in(
            "Edit **src/app.py**, then `.env` and (docs/a.md). Also v1.2, e.g. 3.14 and http://x.io/a.py"
        ),
        vec!["src/app.py", ".env", "docs/a.md", "e.g"]
    );
}

#[test]
fn awkward_answers_never_panic() {
    for text in [
        "```",
        "```\n",
        "~~~x\n\u{3000}# a.py\n~~~",
        "<<<<<<< SEARCH",
        "a.py\n<<<<<<< SEARCH\n=======",
        "a.py\n<<<<<<< SEARCH\n=======\n>>>>>>> REPLACE",
        "```py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```",
        "\u{3000}```\u{3000}é.py\nx\n```",
    ] {
        let _ = forms(text);
    }
    // A search/replace block with no file named anywhere is not taken.
    assert_eq!(
        forms("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE"),
        vec![]
    );
}
