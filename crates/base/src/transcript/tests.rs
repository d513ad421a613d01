use super::*;
use pretty_assertions::assert_eq;

fn sample_start() -> Start {
    Start {
        run_id: "r1".into(),
        time: "2026-01-01T00:00:00Z".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        workspace: "/ws".into(),
        prompt: "hi".into(),
        project_docs: Vec::new(),
        system: "sys".into(),
        tools: vec!["read_file".into()],
        limits: Limits {
            max_rounds: 25,
            max_tokens: None,
            budget_tokens: None,
            budget_usd: None,
            context_window: None,
            timeout_secs: None,
            tool_timeout_secs: 30.0,
            max_parallel: 8,
            max_calls_per_round: None,
            max_repeats: None,
            check: None,
            max_checks: None,
        },
        resumed_from: None,
        sandbox: None,
        redaction: Vec::new(),
        attachments: Vec::new(),
    }
}

#[test]
fn lines_round_trip_and_carry_version_and_type_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/t.jsonl");
    let mut w = Writer::create(&path).unwrap();
    w.write(&Line::Start(sample_start())).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(r#"{"v":1,"type":"start","run_id":"r1""#),
        "{text}"
    );
    assert!(text.ends_with('\n'));
    let t = read(&path).unwrap();
    assert_eq!(t.start, sample_start());
    assert!(!t.torn_tail);
}

#[test]
fn a_torn_last_line_is_skipped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = Writer::create(&path).unwrap();
    w.write(&Line::Start(sample_start())).unwrap();
    drop(w);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"v":1,"type":"round","round":1,"ti"#)
        .unwrap();
    let t = read(&path).unwrap();
    assert!(t.torn_tail);
    assert!(t.rounds.is_empty());
}

#[test]
fn a_bad_line_in_the_middle_is_an_error_naming_it() {
    let start = serde_json::to_string(&Record {
        v: 1,
        line: Line::Start(sample_start()),
    });
    let text = format!("{}\nnot json\n", start.unwrap());
    let err = parse(Path::new("t.jsonl"), &text).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn a_chain_is_followed_oldest_first_and_expanded_into_a_conversation() {
    use crate::conversation::{Block, Message, ToolResult, ToolUse};
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("1.jsonl");
    let second = dir.path().join("2.jsonl");
    let call = ToolUse::from_raw("c1".into(), "read_file".into(), r#"{"path":"a"}"#);
    let result = ToolResult::error(&call, crate::conversation::ErrorKind::Failed, "nope");
    let round = |blocks: Vec<Block>, results: Vec<ToolResult>| Round {
        round: 1,
        time: "t".into(),
        blocks,
        results,
        stop_reason: None,
        usage: Usage::default(),
        model_ms: 0,
        tools_ms: 0,
        retries: vec![],
        error: None,
        summary: false,
        elided: vec![],
        guards: vec![],
        cost_usd: None,
        check: None,
    };
    let mut w = Writer::create(&first).unwrap();
    w.write(&Line::Start(sample_start())).unwrap();
    w.write(&Line::Round(round(
        vec![Block::ToolUse(call.clone())],
        vec![result.clone()],
    )))
    .unwrap();
    let mut w = Writer::create(&second).unwrap();
    let mut start = sample_start();
    start.provider = "openai".into();
    start.prompt = "and now?".into();
    start.resumed_from = Some(first.display().to_string());
    w.write(&Line::Start(start)).unwrap();
    w.write(&Line::Round(round(vec![Block::text("done")], vec![])))
        .unwrap();
    let chain = read_chain(&second).unwrap();
    assert_eq!(
        conversation(&chain, &[]),
        vec![
            Message::User("hi".into()),
            Message::Assistant {
                blocks: vec![Block::ToolUse(call)],
                provider: "anthropic".into()
            },
            Message::ToolResults(vec![result]),
            Message::User("and now?".into()),
            Message::Assistant {
                blocks: vec![Block::text("done")],
                provider: "openai".into()
            },
        ]
    );
    std::fs::remove_file(&first).unwrap();
    assert!(matches!(read_chain(&second), Err(ReadError::Io { .. })));
}

#[test]
fn calls_without_results_are_closed_and_stray_results_left_out() {
    use crate::conversation::{Message, ToolUse};
    let call = |id: &str| ToolUse::from_raw(id.into(), "t".into(), "{}");
    let (a, b) = (call("a"), call("b"));
    let answer = |c: &ToolUse| ToolResult::error(c, ErrorKind::Failed, "ran");
    // b's result, then one for a call that is not there; none for a.
    let blocks = [a.clone(), b.clone()].map(Block::ToolUse);
    let line = serde_json::json!({"round": 1, "time": "t", "blocks": blocks,
        "results": [answer(&b), answer(&call("ghost"))], "stop_reason": null,
        "usage": Usage::default(), "model_ms": 0, "tools_ms": 0});
    let mut round: Round = serde_json::from_value(line).unwrap();
    let mut t = Transcript {
        start: sample_start(),
        rounds: vec![round.clone()],
        end: None,
        torn_tail: false,
        agents: Vec::new(),
    };
    let closed = ToolResult::error(&a, ErrorKind::Cancelled, NO_RESULT);
    let got = conversation(std::slice::from_ref(&t), &[]);
    assert_eq!(got[2], Message::ToolResults(vec![closed, answer(&b)]));
    // The control: a complete round is kept as recorded.
    round.results = vec![answer(&a), answer(&b)];
    t.rounds = vec![round];
    let got = conversation(&[t], &[]);
    assert_eq!(got[2], Message::ToolResults(vec![answer(&a), answer(&b)]));
}

#[test]
fn a_write_failure_is_reported_with_the_path() {
    // /dev/full accepts the open and fails every write with ENOSPC, like a full disk.
    let Ok(file) = File::options().write(true).open("/dev/full") else {
        return;
    };
    let mut w = Writer {
        file,
        path: PathBuf::from("/dev/full"),
    };
    let err = w.write(&Line::Start(sample_start())).unwrap_err();
    assert!(
        err.to_string().starts_with("transcript /dev/full: "),
        "{err}"
    );
}
