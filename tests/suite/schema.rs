//! `schema/rounds.schema.json` is generated from the types that write the lines
//! (`rounds_base::schema::document`): a change to them must be a visible diff of the file. Regenerate
//! it with `ROUNDS_UPDATE_SNAPSHOTS=1 cargo test --test integration suite::schema`, and read the
//! diff. Every test that runs the binary checks the lines it sees against the file
//! (`common::check_schema`): that is what shows it accepts what rounds writes; here, what it
//! must refuse.

use serde_json::{Value, json};

use crate::common::schema_errors;

#[test]
fn the_committed_schema_is_the_generated_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/rounds.schema.json");
    let generated = rounds_base::schema::document();
    if std::env::var_os("ROUNDS_UPDATE_SNAPSHOTS").is_some() {
        let mut text = serde_json::to_string_pretty(&generated).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap();
    }
    let committed: Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    assert!(
        committed == generated,
        "schema/rounds.schema.json is not what the types generate; if the change is intended, \
         regenerate it (see this file's doc) and review the diff"
    );
}

/// One valid line of each type, every optional field present (written by hand, as a reader of
/// the format would).
fn valid_lines() -> Vec<(&'static str, Value)> {
    let usage = json!({"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 3,
                       "cache_write_tokens": 2, "reasoning_tokens": 1});
    let call = json!({"id": "t1", "name": "read_file", "input": {"path": "a"},
                      "raw_input": "{\"path\":\"a\"}", "signature": "sig",
                      "defect": {"kind": "invalid_json", "detail": "expected value"}});
    let result = json!({"tool_use_id": "t1", "name": "read_file", "is_error": true,
                        "content": "no", "error_kind": "invalid_json", "duration_ms": 3,
                        "truncated": true, "bytes": 9000, "full_output": "/tmp/out",
                        "redacted": ["API_KEY"]});
    let mut tool_use = json!({"v": 1, "type": "tool_use", "round": 1});
    let mut tool_result = json!({"v": 1, "type": "tool_result", "round": 1});
    for (event, fields) in [(&mut tool_use, &call), (&mut tool_result, &result)] {
        let event = event.as_object_mut().unwrap();
        event.extend(fields.as_object().unwrap().clone());
    }
    let mut block = call.clone();
    block["type"] = json!("tool_use");
    vec![
        (
            "start",
            json!({"v": 1, "type": "start", "run_id": "r1", "time": "2026-01-01T00:00:00Z",
                   "provider": "anthropic", "model": "m", "workspace": "/ws", "prompt": "go",
                   "system": "sys", "tools": ["read_file"], "resumed_from": null,
                   "limits": {"max_rounds": 25, "max_tokens": null, "budget_tokens": 1000,
                              "budget_usd": 0.5, "context_window": 200000, "timeout_secs": null,
                              "tool_timeout_secs": 30.0, "max_parallel": 8,
                              "max_calls_per_round": 16, "max_repeats": 3},
                   "sandbox": {"mode": "workspace-write", "required": false, "landlock_abi": 6,
                               "network": false, "write": ["/ws"],
                               "enforced": {"filesystem": true, "network_tcp": true,
                                            "network_other": true, "processes": true,
                                            "signals": true, "abstract_unix_sockets": true}},
                   "redaction": ["API_KEY"]}),
        ),
        (
            "round",
            json!({"v": 1, "type": "round", "round": 1, "time": "2026-01-01T00:00:01Z",
                   "blocks": [{"type": "thinking", "text": "hm", "signature": "s"},
                              {"type": "redacted_thinking", "data": "x"},
                              {"type": "reasoning", "id": "rs_1", "encrypted_content": "e",
                               "summary": ["s"]},
                              {"type": "text", "text": "hi", "signature": "g"},
                              block],
                   "results": [result], "stop_reason": "tool_use", "usage": usage,
                   "cost_usd": 0.01, "model_ms": 10, "tools_ms": 3,
                   "retries": [{"round": 1, "attempt": 1, "error": "503", "delay_ms": 500}],
                   "error": "the stream broke", "summary": true, "elided": ["t0"],
                   "guards": [{"kind": "duplicate", "tool_use_id": "t2", "of": "t1"},
                              {"kind": "cut", "count": 40}]}),
        ),
        (
            "end",
            json!({"v": 1, "type": "end", "status": "unavailable", "exit_code": 10,
                   "rounds": 1, "final_text": "", "usage": usage, "cost_usd": 0.01,
                   "duration_ms": 20, "error": "anthropic: HTTP 429",
                   "failure": {"kind": "rate_limited", "retryable": true, "retry_after": 1.5},
                   "tool_calls": 1, "tool_errors": {"invalid_json": 1}}),
        ),
        (
            "text_delta",
            json!({"v": 1, "type": "text_delta", "round": 1, "text": "x"}),
        ),
        (
            "thinking_delta",
            json!({"v": 1, "type": "thinking_delta", "round": 1, "text": "x"}),
        ),
        ("tool_use", tool_use),
        ("tool_result", tool_result),
        (
            "retry",
            json!({"v": 1, "type": "retry", "round": 1, "attempt": 2, "error": "429",
                   "delay_ms": 1000}),
        ),
    ]
}

#[test]
fn the_schema_accepts_every_line_type_with_every_field() {
    for (name, line) in valid_lines() {
        let errors = schema_errors(&line);
        assert!(errors.is_empty(), "{name}: {errors:#?}\n{line}");
    }
}

#[test]
fn the_schema_refuses_hostile_and_broken_lines() {
    // (line, JSON pointer, the value put there; None takes the field away).
    let hostile: &[(&str, &str, Option<Value>)] = &[
        // Unknown names in enums.
        ("end", "/status", Some(json!("fine"))),
        ("end", "/status", Some(json!("incomplete"))),
        ("end", "/exit_code", Some(json!(8))),
        ("end", "/tool_errors/exploded", Some(json!(1))),
        ("end", "/failure/kind", Some(json!("flaky"))),
        ("round", "/stop_reason", Some(json!("bored"))),
        ("round", "/results/0/error_kind", Some(json!("oops"))),
        ("round", "/guards/0/kind", Some(json!("ignored"))),
        ("round", "/blocks/0/type", Some(json!("image"))),
        ("tool_use", "/defect/kind", Some(json!("weird"))),
        ("start", "/sandbox/mode", Some(json!("danger-full-access"))),
        ("v", "/v", Some(json!(2))),
        ("v", "/type", Some(json!("mystery"))),
        // Required fields taken away.
        ("start", "/run_id", None),
        ("start", "/limits/max_tokens", None),
        ("start", "/sandbox/enforced/filesystem", None),
        ("round", "/usage", None),
        ("round", "/usage/output_tokens", None),
        ("round", "/results/0/bytes", None),
        ("round", "/blocks/4/input", None),
        ("end", "/error", None),
        ("end", "/tool_errors", None),
        ("end", "/failure/retryable", None),
        ("tool_use", "/round", None),
        ("tool_result", "/is_error", None),
        ("retry", "/delay_ms", None),
        ("v", "/v", None),
        // Properties no line has.
        ("start", "/admin", Some(json!(true))),
        ("start", "/limits/unlimited", Some(json!(true))),
        ("start", "/sandbox/enforced/everything", Some(json!(true))),
        ("round", "/usage/free_tokens", Some(json!(1))),
        ("round", "/blocks/0/command", Some(json!("rm -rf /"))),
        ("round", "/blocks/4/run_anyway", Some(json!(true))),
        ("round", "/results/0/exit", Some(json!(0))),
        ("round", "/guards/0/note", Some(json!("x"))),
        ("round", "/retries/0/why", Some(json!("x"))),
        ("end", "/final_json", Some(json!({}))),
        ("end", "/failure/attempts", Some(json!(3))),
        ("tool_use", "/defect/extra", Some(json!("x"))),
        ("tool_result", "/exit", Some(json!(0))),
        ("v", "/extra", Some(json!(1))),
        // Wrong types and values out of range.
        ("start", "/tools", Some(json!("read_file"))),
        ("start", "/time", Some(json!("yesterday"))),
        ("start", "/limits/max_rounds", Some(json!(0))),
        ("start", "/limits/tool_timeout_secs", Some(json!(0))),
        ("start", "/limits/max_parallel", Some(json!(-1))),
        ("start", "/redaction", Some(json!([]))),
        ("start", "/redaction", Some(json!(["A", "A"]))),
        ("round", "/round", Some(json!(0))),
        ("round", "/usage/input_tokens", Some(json!("10"))),
        ("round", "/results/0/content", Some(json!(null))),
        ("round", "/blocks/4/input", Some(json!("{\"path\":\"a\"}"))),
        ("round", "/summary", Some(json!(false))),
        ("round", "/cost_usd", Some(json!(-1))),
        ("end", "/exit_code", Some(json!("0"))),
        ("end", "/tool_errors/invalid_json", Some(json!(0))),
        ("end", "/failure/retryable", Some(json!("yes"))),
        ("end", "/failure/retry_after", Some(json!(-1))),
        ("v", "/round", Some(json!(0))),
        ("retry", "/attempt", Some(json!(0))),
        // Absent rather than null: a field rounds leaves out is never written as null.
        ("round", "/cost_usd", Some(json!(null))),
        ("round", "/error", Some(json!(null))),
        ("end", "/cost_usd", Some(json!(null))),
        ("end", "/failure/retry_after", Some(json!(null))),
        ("end", "/failure", Some(json!(null))),
        ("start", "/sandbox", Some(json!(null))),
        ("tool_use", "/signature", Some(json!(null))),
        ("tool_result", "/error_kind", Some(json!(null))),
    ];
    let lines = valid_lines();
    let line = |name: &str| {
        // "v" is any short line: the version, the tag and the wrapper are every line's.
        let name = if name == "v" { "text_delta" } else { name };
        lines.iter().find(|(n, _)| *n == name).unwrap().1.clone()
    };
    for (name, pointer, value) in hostile {
        let valid = line(name);
        // The control: the same line, unbroken, passes (so each refusal is the change's).
        assert!(schema_errors(&valid).is_empty(), "{name}");
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let mut broken = valid.clone();
        let target = broken.pointer_mut(parent).unwrap();
        let previous = match (target, value) {
            (Value::Object(map), Some(v)) => map.insert(key.to_owned(), v.clone()),
            (Value::Object(map), None) => map.remove(key),
            (other, _) => panic!("{name}{pointer}: not an object: {other}"),
        };
        assert!(
            value.is_some() || previous.is_some(),
            "{name}{pointer}: nothing to take away"
        );
        assert!(
            !schema_errors(&broken).is_empty(),
            "{name}{pointer} = {value:?} was accepted:\n{broken}"
        );
    }
}
