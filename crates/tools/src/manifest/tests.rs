use super::*;
use pretty_assertions::assert_eq;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn err(files: &[PathBuf]) -> String {
    match load(files) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn toml_and_json_manifests_declare_the_same_tool() {
    let dir = tempfile::tempdir().unwrap();
    let toml = write(
        dir.path(),
        "t.toml",
        r#"
[[tool]]
name = "greet"
description = "Say hello."
command = ["echo", "hello"]
class = "safe"
timeout = 5
subject = "who"
input_schema = { type = "object", properties = { who = { type = "string" } } }
"#,
    );
    let json = write(
        dir.path(),
        "t.json",
        r#"{"tools": [{"name": "greet2", "description": "Say hello.",
        "command": "echo hello", "input_schema": {"type": "object", "properties": {"who": {"type": "string"}}}}]}"#,
    );
    let tools = load(&[toml, json]).unwrap();
    let specs: Vec<(&str, Class)> = tools
        .iter()
        .map(|t| (t.spec().name.as_str(), t.spec().class))
        .collect();
    assert_eq!(specs, [("greet", Class::Safe), ("greet2", Class::Mutating)]);
    assert_eq!(
        tools[0].spec().input_schema["properties"]["who"]["type"],
        "string"
    );
    assert!(tools[0].origin().starts_with("manifest ") && tools[0].origin().ends_with("t.toml"));
    let ws = crate::Workspace::new(dir.path()).unwrap();
    let subject = tools[0].subject(&serde_json::json!({"who": "https://x"}), &ws);
    assert_eq!(subject, Some(Subject::Text("https://x".into())));
    let subject = tools[0].subject(&serde_json::json!({"who": "./src/a.rs"}), &ws);
    assert_eq!(subject, Some(Subject::Path("src/a.rs".into())));
    assert_eq!(
        tools[1].subject(&serde_json::json!({"who": "x"}), &ws),
        None
    );
}

#[test]
fn mistakes_are_reported_with_the_file_and_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "bad name",
            "[[tool]]\nname = \"a b\"\ndescription = \"d\"\ncommand = \"true\"\n",
            "names are 1-64 characters",
        ),
        (
            "no command",
            "[[tool]]\nname = \"a\"\ndescription = \"d\"\ncommand = []\n",
            "command is empty",
        ),
        (
            "schema",
            "[[tool]]\nname = \"a\"\ndescription = \"d\"\ncommand = \"true\"\ninput_schema = { type = \"string\" }\n",
            "\"type\": \"object\"",
        ),
        (
            "timeout",
            "[[tool]]\nname = \"a\"\ndescription = \"d\"\ncommand = \"true\"\ntimeout = -1\n",
            "timeout must be a positive",
        ),
        (
            "absurd timeout",
            "[[tool]]\nname = \"a\"\ndescription = \"d\"\ncommand = \"true\"\ntimeout = 1e300\n",
            "timeout must be a positive number of seconds up to 1000000000, not 1e300",
        ),
        (
            "unknown key",
            "[[tool]]\nname = \"a\"\ndescription = \"d\"\ncommand = \"true\"\ncolor = \"red\"\n",
            "unknown field `color`",
        ),
        ("empty", "# nothing\n", "no tools defined"),
    ];
    for (what, text, needle) in cases {
        let path = write(dir.path(), "m.toml", text);
        let e = err(std::slice::from_ref(&path));
        assert!(
            e.starts_with(&format!("tools file {}", path.display())) && e.contains(needle),
            "{what}: {e}"
        );
    }
    let a = write(
        dir.path(),
        "a.toml",
        "[[tool]]\nname = \"x\"\ndescription = \"d\"\ncommand = \"true\"\n",
    );
    let b = write(
        dir.path(),
        "b.toml",
        "[[tool]]\nname = \"x\"\ndescription = \"d\"\ncommand = \"true\"\n",
    );
    assert!(err(&[a, b]).contains("tool \"x\" is also defined in"));
    assert!(err(&[dir.path().join("missing.toml")]).starts_with("cannot read tools file"));
}

#[test]
fn structured_answers_are_read_and_anything_else_is_plain_output() {
    assert_eq!(
        structured(r#"{"content": "fine"}"#).unwrap().unwrap(),
        "fine"
    );
    assert_eq!(
        structured(r#"{"content": {"n": 1}}"#).unwrap().unwrap(),
        r#"{"n":1}"#
    );
    let failed = structured(r#"{"content": "nope", "is_error": true}"#)
        .unwrap()
        .unwrap_err();
    assert_eq!(failed.to_string(), "nope");
    assert!(structured("plain text").is_none());
    assert!(structured(r#"{"other": 1}"#).is_none());
    assert!(structured("[1, 2]").is_none());
}

#[test]
fn the_shipped_example_manifest_loads() {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/tools/tools.toml"
    ));
    let tools = load(&[path]).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(names, ["git_log", "line_count"]);
    assert!(tools.iter().all(|t| t.spec().class == Class::Safe));
}

/// What a command printing `text` left: kept whole up to 2 × 1 KiB, else spilled to `dir`.
fn captured(dir: &Path, text: &str) -> Captured {
    let mut capture = process::capture::Capture::new(Limits {
        head: 1024,
        tail: 1024,
        spill: Some(process::capture::SpillFile::at(&dir.join("out.stdout"), u64::MAX).unwrap()),
    });
    capture.push(text.as_bytes());
    capture.finish()
}

#[tokio::test]
async fn a_long_structured_answer_is_parsed_whole_not_cut() {
    let dir = tempfile::tempdir().unwrap();
    let long = "why ".repeat(5000);
    let error = serde_json::json!({"content": long, "is_error": true}).to_string();
    let got = answer("t", &captured(dir.path(), &error), 1 << 20).await;
    assert_eq!(got.unwrap_err().to_string(), long, "an error, all of it");
    // The controls: a long structured success, and long plain output, which stays cut.
    let fine = serde_json::json!({"content": long}).to_string();
    assert_eq!(
        answer("t", &captured(dir.path(), &fine), 1 << 20)
            .await
            .unwrap(),
        long
    );
    let plain = answer("t", &captured(dir.path(), &long), 1 << 20)
        .await
        .unwrap();
    assert!(plain.len() < 3000 && plain.contains("cut from the middle"));
    // Too long to read whole, or not saved: it cannot be told, so it is not a success.
    let over = answer("t", &captured(dir.path(), &error), 10_000).await;
    let over = over.unwrap_err().to_string();
    assert!(
        over.contains("more than the 10000 bytes read whole"),
        "{over}"
    );
    let mut unsaved = captured(dir.path(), &error);
    unsaved.spilled = None;
    let unsaved = answer("t", &unsaved, 1 << 20)
        .await
        .unwrap_err()
        .to_string();
    assert!(unsaved.contains("cannot be told whether"), "{unsaved}");
}
