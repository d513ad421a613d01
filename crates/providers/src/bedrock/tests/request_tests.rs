//! Request bodies, walked against botocore's service model of bedrock-runtime
//! (fixtures/wire/bedrock/converse-stream-shapes.json): required members, types, enum values,
//! and no member the model does not have.

use serde_json::{Value, json};

use super::super::request::{Family, build_request};
use crate::conversation::{Block, Class, ErrorKind, Message, ToolResult, ToolSpec, ToolUse};
use crate::testing::WIRE;
use crate::{Cache, CacheTtl, Options, Request, ToolChoice};

fn shapes() -> Value {
    let text =
        std::fs::read_to_string(format!("{WIRE}/bedrock/converse-stream-shapes.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["shapes"].clone()
}

/// Every way `value` breaks shape `name`, with the path to it.
fn check(shapes: &Value, name: &str, value: &Value, path: &str, errors: &mut Vec<String>) {
    let shape = &shapes[name];
    let mut nested = Vec::new();
    let mut found = Vec::new();
    let mut fail = |what: String| found.push(format!("{path}: {what} (shape {name})"));
    match shape["type"].as_str().unwrap() {
        "structure" if shape["document"] == true => {}
        "structure" => check_structure(shapes, shape, value, path, &mut nested),
        "list" => {
            let Some(items) = value.as_array() else {
                return fail(format!("{value} is not a list"));
            };
            if let Some(min) = shape["min"].as_u64()
                && (items.len() as u64) < min
            {
                fail(format!("{} items, fewer than {min}", items.len()));
            }
            let member = shape["member"]["shape"].as_str().unwrap();
            for (i, item) in items.iter().enumerate() {
                check(shapes, member, item, &format!("{path}[{i}]"), &mut nested);
            }
        }
        "map" => {
            let Some(object) = value.as_object() else {
                return fail(format!("{value} is not a map"));
            };
            let inner = shape["value"]["shape"].as_str().unwrap();
            for (k, v) in object {
                check(shapes, inner, v, &format!("{path}.{k}"), &mut nested);
            }
        }
        "string" => {
            let Some(s) = value.as_str() else {
                return fail(format!("{value} is not a string"));
            };
            if let Some(values) = shape["enum"].as_array()
                && !values.iter().any(|e| e == s)
            {
                fail(format!("{s:?} is not one of {values:?}"));
            }
            if let Some(min) = shape["min"].as_u64()
                && (s.chars().count() as u64) < min
            {
                fail(format!("{s:?} is shorter than {min}"));
            }
        }
        "blob" => {
            if !value.is_string() {
                fail(format!("{value} is not base64 text"));
            }
        }
        "integer" | "long" => match value.as_i64() {
            Some(n) if shape["min"].as_i64().is_some_and(|min| n < min) => {
                fail(format!("{n} below the minimum"))
            }
            Some(_) => {}
            None => fail(format!("{value} is not an integer")),
        },
        "float" | "double" => {
            if !value.is_number() {
                fail(format!("{value} is not a number"));
            }
        }
        "boolean" => {
            if !value.is_boolean() {
                fail(format!("{value} is not a boolean"));
            }
        }
        other => fail(format!("shape type {other} not handled by this walker")),
    }
    errors.extend(found);
    errors.extend(nested);
}

/// A structure: an object with its required members, only known ones, one if a union.
fn check_structure(
    shapes: &Value,
    shape: &Value,
    value: &Value,
    path: &str,
    errors: &mut Vec<String>,
) {
    let Some(object) = value.as_object() else {
        return errors.push(format!("{path}: {value} is not an object"));
    };
    let members = shape["members"].as_object().unwrap();
    if shape["union"] == true && object.len() != 1 {
        errors.push(format!("{path}: a union with {} members set", object.len()));
    }
    for required in shape["required"].as_array().into_iter().flatten() {
        let required = required.as_str().unwrap();
        // Members bound to the URI or headers are not in the body.
        if members[required].get("location").is_none() && !object.contains_key(required) {
            errors.push(format!("{path}: required member {required} missing"));
        }
    }
    for (key, v) in object {
        match members.get(key) {
            Some(m) if m.get("location").is_some() => {
                errors.push(format!("{path}: {key} belongs in the {}", m["location"]))
            }
            Some(m) => {
                let inner = m["shape"].as_str().unwrap();
                check(shapes, inner, v, &format!("{path}.{key}"), errors);
            }
            None => errors.push(format!("{path}: unknown member {key}")),
        }
    }
}

fn errors_of(body: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(&shapes(), "ConverseStreamRequest", body, "$", &mut errors);
    errors
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("Does {name}."),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        class: Class::Safe,
    }
}

fn result(id: &str, content: &str, is_error: bool) -> ToolResult {
    ToolResult {
        tool_use_id: id.into(),
        name: "list_files".into(),
        is_error,
        content: content.into(),
        error_kind: is_error.then_some(ErrorKind::Failed),
        duration_ms: 1,
        truncated: false,
        bytes: 0,
        full_output: None,
        redacted: Vec::new(),
        volatile: Vec::new(),
        exit_code: None,
        media: Vec::new(),
    }
}

/// A conversation with every kind of block: two tool rounds, signed and redacted reasoning, an
/// error result, and a turn from another provider whose reasoning must not be sent.
fn history() -> Vec<Message> {
    let call = |id: &str| {
        Block::ToolUse(ToolUse::from_raw(
            id.into(),
            "list_files".into(),
            r#"{"path":"."}"#,
        ))
    };
    vec![
        Message::User("List the files.".into()),
        Message::Assistant {
            blocks: vec![
                Block::Thinking {
                    text: "I should list.".into(),
                    signature: Some("sig-1".into()),
                },
                Block::RedactedThinking {
                    data: "ZW5jcnlwdGVk".into(),
                },
                Block::text("Listing."),
                call("tooluse_1"),
            ],
            provider: "bedrock".into(),
        },
        Message::ToolResults(vec![result("tooluse_1", "a.txt\nb.txt", false)]),
        Message::Assistant {
            blocks: vec![
                Block::Thinking {
                    text: "Foreign thoughts.".into(),
                    signature: Some("other-sig".into()),
                },
                Block::text(""),
                call("tooluse_2"),
            ],
            provider: "anthropic".into(),
        },
        Message::ToolResults(vec![result("tooluse_2", "no such dir", true)]),
        Message::User("Now summarise.".into()),
    ]
}

fn body(model: &str, cache: Option<&Cache>, options: Options, choice: ToolChoice) -> Value {
    let tools = [tool("list_files"), tool("read_file")];
    let tools: Vec<&ToolSpec> = tools.iter().collect();
    let messages = history();
    let request = Request {
        system: "You are terse.",
        messages: &messages,
        tools: &tools,
        max_tokens: None,
        tool_choice: choice,
        cache,
        output_schema: None,
    };
    serde_json::to_value(build_request(model, "bedrock", &request, &options)).unwrap()
}

#[test]
fn every_body_follows_botocores_model_of_converse_stream() {
    let hour = Cache {
        ttl: CacheTtl::OneHour,
        key: "run".into(),
    };
    let five = Cache {
        ttl: CacheTtl::FiveMinutes,
        key: "run".into(),
    };
    let thinking = Options {
        thinking_budget: Some(2048),
        ..Options::default()
    };
    let warm = Options {
        temperature: Some(0.2),
        ..Options::default()
    };
    let models = [
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "amazon.nova-pro-v1:0",
        "meta.llama3-3-70b-instruct-v1:0",
    ];
    for model in models {
        for cache in [None, Some(&hour), Some(&five)] {
            for options in [Options::default(), thinking, warm] {
                for choice in [ToolChoice::Auto, ToolChoice::None] {
                    let body = body(model, cache, options, choice);
                    assert_eq!(errors_of(&body), Vec::<String>::new(), "{model} {body:#}");
                }
            }
        }
    }
}

#[test]
fn the_walker_fails_bodies_that_break_the_model() {
    let good = body(
        "amazon.nova-pro-v1:0",
        None,
        Options::default(),
        ToolChoice::Auto,
    );
    assert!(errors_of(&good).is_empty());
    let mut broken = Vec::new();
    let mut b = good.clone();
    b["modelId"] = json!("x");
    broken.push(("a URI member in the body", b));
    let mut b = good.clone();
    b["messages"][0]["role"] = json!("human");
    broken.push(("a bad enum value", b));
    let mut b = good.clone();
    b["messages"][0]["content"][0] = json!({"text": "a", "toolUse": {}});
    broken.push(("two members of a union", b));
    let mut b = good.clone();
    b["toolConfig"]["tools"][0]["toolSpec"]
        .as_object_mut()
        .unwrap()
        .remove("inputSchema");
    broken.push(("a required member missing", b));
    let mut b = good.clone();
    b["inferenceConfig"] = json!({"max_tokens": 5});
    broken.push(("an unknown member", b));
    let mut b = good;
    b["inferenceConfig"] = json!({"maxTokens": "5"});
    broken.push(("a wrong type", b));
    for (what, body) in broken {
        assert!(!errors_of(&body).is_empty(), "{what} passed: {body:#}");
    }
}

#[test]
fn reasoning_goes_back_signed_and_only_to_bedrock() {
    let body = body(
        "anthropic.claude-sonnet-4-5",
        None,
        Options::default(),
        ToolChoice::Auto,
    );
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert_eq!(
        messages[1]["content"][0],
        json!({"reasoningContent": {"reasoningText": {"text": "I should list.", "signature": "sig-1"}}})
    );
    assert_eq!(
        messages[1]["content"][1],
        json!({"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}})
    );
    assert_eq!(
        messages[1]["content"][3],
        json!({"toolUse": {"toolUseId": "tooluse_1", "name": "list_files", "input": {"path": "."}}})
    );
    // Another provider's turn: no reasoning, no blank text, the call kept.
    assert_eq!(messages[3]["content"].as_array().unwrap().len(), 1);
    // The error result says so; the last user turn holds it and the new prompt.
    assert_eq!(
        messages[4]["content"],
        json!([
            {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "no such dir"}], "status": "error"}},
            {"text": "Now summarise."}
        ])
    );
    assert!(
        messages[2]["content"][0]["toolResult"]
            .get("status")
            .is_none()
    );
}

#[test]
fn cache_points_sit_where_anthropics_breakpoints_do() {
    let hour = Cache {
        ttl: CacheTtl::OneHour,
        key: "run".into(),
    };
    let point = json!({"cachePoint": {"type": "default", "ttl": "1h"}});
    let body = body(
        "us.anthropic.claude-sonnet-4-5",
        Some(&hour),
        Options::default(),
        ToolChoice::Auto,
    );
    assert_eq!(body["toolConfig"]["tools"][2], point);
    assert_eq!(body["system"], json!([{"text": "You are terse."}, point]));
    let messages = body["messages"].as_array().unwrap();
    let marked: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i]["content"].as_array().unwrap().last() == Some(&point))
        .collect();
    assert_eq!(marked, [2, 4]);
    let count = body.to_string().matches("cachePoint").count();
    assert!(count <= 4, "{count} breakpoints: more than the API allows");
    // Nova: system and messages, no tools; other families and --no-cache: none at all.
    let nova = body_of("amazon.nova-lite-v1:0", Some(&hour));
    assert!(!nova["toolConfig"].to_string().contains("cachePoint"));
    assert!(nova["system"].to_string().contains("cachePoint"));
    assert!(
        !body_of("meta.llama3-3-70b-instruct-v1:0", Some(&hour))
            .to_string()
            .contains("cachePoint")
    );
    assert!(
        !body_of("us.anthropic.claude-sonnet-4-5", None)
            .to_string()
            .contains("cachePoint")
    );
    let five = Cache {
        ttl: CacheTtl::FiveMinutes,
        key: "run".into(),
    };
    assert_eq!(
        body_of("anthropic.claude-sonnet-4-5", Some(&five))["system"][1],
        json!({"cachePoint": {"type": "default"}})
    );
}

fn body_of(model: &str, cache: Option<&Cache>) -> Value {
    body(model, cache, Options::default(), ToolChoice::Auto)
}

#[test]
fn thinking_and_token_caps_go_only_where_the_family_takes_them() {
    let thinking = Options {
        thinking_budget: Some(2048),
        temperature: None,
        ..Options::default()
    };
    let claude = body(
        "anthropic.claude-sonnet-4-5",
        None,
        thinking,
        ToolChoice::Auto,
    );
    assert_eq!(
        claude["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
    );
    let max = claude["inferenceConfig"]["maxTokens"].as_u64().unwrap();
    assert!(max > 2048, "{max}");
    let llama = body(
        "meta.llama3-3-70b-instruct-v1:0",
        None,
        thinking,
        ToolChoice::Auto,
    );
    assert!(llama.get("additionalModelRequestFields").is_none());
    assert!(llama.get("inferenceConfig").is_none());
    assert_eq!(
        Family::of("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3"),
        Family::Anthropic
    );
    assert_eq!(
        Family::of("arn:aws:bedrock:us-east-1:1:application-inference-profile/abc"),
        Family::Other
    );
    // No toolChoice in any body: `auto` is the default and some families refuse the field.
    assert!(claude["toolConfig"].get("toolChoice").is_none());
}
