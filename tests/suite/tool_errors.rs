//! Calls the pipeline must refuse come back to the model as error results that say what was
//! wrong, and the run goes on.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::Value;

#[test]
fn bad_calls_become_error_results_and_the_run_continues() {
    let sb = Sandbox::new();
    sb.write("ok.txt", "fine\n");
    sb.write("secret.txt", "classified\n");
    std::fs::write(sb.path("outside.txt"), "outside\n").unwrap();
    let calls = [
        B::Tool("t1", "read_file", r#"{"path":"ok.txt"}"#),
        B::Tool("t2", "read_file", r#"{"path":"../outside.txt"}"#),
        B::Tool("t3", "read_file", r#"{"file":"ok.txt"}"#),
        B::Tool("t4", "bash", r#"{"command":"ls"}"#),
        B::Tool("t5", "read_file", r#"{"path":"secret.txt"}"#),
        B::Tool("t6", "read_file", r#"{"path": "ok.txt""#),
    ];
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(&calls, "tool_use", 10, 5)),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args(["--deny", "read_file(secret.txt)", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "done\n"),
        "{}",
        out.stderr
    );

    // The person who can allow it reads it too, in words.
    assert!(
        out.stderr.contains(
            "rounds: warning: the model called bash, which this run does not allow (allow it \
             with -a bash)"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("UnknownTool"), "{}", out.stderr);
    let lines = sb.transcript();
    let results = lines[1]["results"].as_array().unwrap();
    let kinds: Vec<&Value> = results.iter().map(|r| &r["error_kind"]).collect();
    assert_eq!(
        kinds,
        [
            &Value::Null,
            &"failed".into(),
            &"schema".into(),
            &"unknown_tool".into(),
            &"denied".into(),
            &"invalid_json".into()
        ]
    );
    let content = |i: usize| results[i]["content"].as_str().unwrap();
    assert_eq!(content(0), "     1\tfine\n");
    assert!(
        content(1).contains("outside the workspace"),
        "{}",
        content(1)
    );
    assert!(
        !content(1).contains("outside\n"),
        "the outside file must not be read"
    );
    assert!(
        content(2).contains("\"path\" is a required property"),
        "{}",
        content(2)
    );
    assert!(
        content(2).contains("'file' was unexpected"),
        "names the unexpected property: {}",
        content(2)
    );
    assert!(
        content(3)
            .contains("\"bash\" is not allowed in this run (the user can allow it with -a bash)")
            && content(3).contains("the available tools are: read_file, list_dir, glob, grep"),
        "{}",
        content(3)
    );
    assert_eq!(
        content(4),
        "denied by the rule --deny read_file(secret.txt)"
    );
    assert!(
        content(5).contains("not valid JSON") && content(5).contains("nothing was run"),
        "{}",
        content(5)
    );

    let end = &lines[3];
    assert_eq!(end["tool_calls"], 6);
    assert_eq!(
        end["tool_errors"],
        serde_json::json!({"invalid_json":1,"schema":1,"unknown_tool":1,"denied":1,"failed":1})
    );

    // The model saw every error, flagged, in call order.
    let second = server.requests()[1].json();
    let sent = second["messages"][2]["content"].as_array().unwrap();
    let flags: Vec<(&str, bool)> = sent
        .iter()
        .map(|r| {
            (
                r["tool_use_id"].as_str().unwrap(),
                r["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        flags,
        [
            ("t1", false),
            ("t2", true),
            ("t3", true),
            ("t4", true),
            ("t5", true),
            ("t6", true)
        ]
    );
    // The invalid-JSON call is echoed with an empty object, which the API accepts.
    assert_eq!(
        second["messages"][1]["content"][5]["input"],
        serde_json::json!({})
    );
}

#[test]
fn a_missing_path_names_what_is_there_and_an_empty_search_says_what_it_searched() {
    let sb = Sandbox::new();
    for f in [
        "app/main.py",
        "app/models.py",
        "app/views.py",
        "app/secret.py",
    ] {
        sb.write(f, "def handler():\n    pass\n");
    }
    let calls = [
        B::Tool("t1", "read_file", r#"{"path":"app/mian.py"}"#),
        B::Tool("t2", "list_dir", r#"{"path":"src"}"#),
        B::Tool("t3", "grep", r#"{"pattern":"Handler"}"#),
        B::Tool(
            "t4",
            "grep",
            r#"{"pattern":"Handler","case_insensitive":true}"#,
        ),
        B::Tool(
            "t5",
            "edit_file",
            r#"{"path":"app/secrte.py","old_string":"a","new_string":"b"}"#,
        ),
    ];
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(&calls, "tool_use", 10, 5)),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args([
            "-a",
            "edit_file",
            "--deny",
            "read_file(app/secret.py)",
            "--transcript",
        ])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let content = |i: usize| {
        lines[1]["results"][i]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        content(0),
        r#"no such file or directory: "app/mian.py"; the closest names in app/: "main.py", "views.py", "models.py""#
    );
    assert_eq!(
        content(1),
        r#"no such file or directory: "src"; the closest names in the workspace root: "app/""#
    );
    // Three: the file the deny rule hides is not searched.
    assert_eq!(
        content(2),
        "no matches for /Handler/ (3 files searched; case-sensitive: try case_insensitive: true)"
    );
    assert!(
        content(3).starts_with("app/main.py:1:def handler"),
        "{}",
        content(3)
    );
    // A name a deny rule hides from reading is never offered.
    let edit = content(4);
    assert!(
        edit.starts_with(r#"no such file or directory: "app/secrte.py""#),
        "{edit}"
    );
    assert!(!edit.contains("secret.py"), "{edit}");
}
