//! Test support for request builders: one table of conversations and options that every wire
//! API's builder is run on, and a check that each body serializes to the exact bytes captured
//! from the builder before its request types were typed (a renamed, dropped, added or reordered
//! field fails it).

use serde_json::{Value, json};

use crate::conversation::{Block, Class, ErrorKind, Message, ToolResult, ToolSpec, ToolUse};
use crate::{Cache, CacheTtl, Effort, Options, Parallel, Request, ToolChoice};

/// One request's inputs, owned so that a [`Request`] can borrow them.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    system: &'static str,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
    max_tokens: Option<u32>,
    tool_choice: ToolChoice,
    cache: Option<Cache>,
    output_schema: Option<Value>,
    pub(crate) options: Options,
}

impl Case {
    fn new(name: &'static str, messages: Vec<Message>) -> Case {
        Case {
            name,
            system: "",
            messages,
            tools: Vec::new(),
            max_tokens: None,
            tool_choice: ToolChoice::Auto,
            cache: None,
            output_schema: None,
            options: Options::default(),
        }
    }

    /// Runs `f` on this case's request.
    pub(crate) fn with_request<T>(&self, f: impl FnOnce(&Request<'_>) -> T) -> T {
        let tools: Vec<&ToolSpec> = self.tools.iter().collect();
        let request = Request {
            system: self.system,
            messages: &self.messages,
            tools: &tools,
            max_tokens: self.max_tokens,
            tool_choice: self.tool_choice,
            cache: self.cache.as_ref(),
            output_schema: self.output_schema.as_ref(),
        };
        f(&request)
    }
}

fn tools() -> Vec<ToolSpec> {
    let spec = |name: &str, schema: Value| ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: schema,
        class: Class::Safe,
    };
    vec![
        spec(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"], "additionalProperties": false}),
        ),
        spec(
            "grep",
            json!({"type": "object", "properties": {"pattern": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1}}, "required": ["pattern"]}),
        ),
    ]
}

fn ok(call: &ToolUse, content: &str) -> ToolResult {
    ToolResult {
        tool_use_id: call.id.clone(),
        name: call.name.clone(),
        is_error: false,
        content: content.into(),
        error_kind: None,
        duration_ms: 3,
        truncated: false,
        bytes: 0,
        full_output: None,
        redacted: Vec::new(),
        volatile: Vec::new(),
        exit_code: None,
        media: Vec::new(),
    }
}

fn assistant(provider: &str, blocks: Vec<Block>) -> Message {
    Message::Assistant {
        blocks,
        provider: provider.into(),
    }
}

/// A tool round: text, two calls (one signed, one with arguments not in canonical form), an
/// ok and an error result, then the next prompt.
fn tool_round(provider: &str) -> Vec<Message> {
    let mut first = ToolUse::from_raw("toolu_1".into(), "read_file".into(), r#"{"path":"a.rs"}"#);
    first.signature = Some("call-sig".into());
    let raw = r#"{ "pattern": "fn main", "limit": 2 }"#;
    let second = ToolUse::from_raw("call_rounds_1".into(), "grep".into(), raw).keep_raw(raw);
    vec![
        Message::User("look at a.rs".into()),
        assistant(
            provider,
            vec![
                Block::text("Reading."),
                Block::ToolUse(first.clone()),
                Block::ToolUse(second.clone()),
            ],
        ),
        Message::ToolResults(vec![
            ok(&first, "fn main() {}"),
            ToolResult::error(&second, ErrorKind::Denied, "not allowed"),
        ]),
        Message::User("and then?".into()),
    ]
}

/// Every kind of assistant block, made by `provider`.
fn thinking_turn(provider: &str) -> Vec<Message> {
    let call = ToolUse::from_raw("toolu_9".into(), "grep".into(), r#"{"pattern":"x"}"#);
    vec![
        Message::User("think".into()),
        assistant(
            provider,
            vec![
                Block::Thinking {
                    text: "hmm".into(),
                    signature: Some("sig-1".into()),
                },
                Block::Thinking {
                    text: "unsigned".into(),
                    signature: None,
                },
                Block::RedactedThinking {
                    data: "opaque".into(),
                },
                Block::Reasoning {
                    id: "rs_1".into(),
                    encrypted_content: Some("enc".into()),
                    summary: vec!["first".into(), "second".into()],
                },
                Block::Text {
                    text: "answer".into(),
                    signature: Some("text-sig".into()),
                },
                Block::text(""),
                Block::ToolUse(call.clone()),
            ],
        ),
        Message::ToolResults(vec![ok(&call, "x found")]),
    ]
}

/// The table: `own` is the provider name whose turns the builder under test treats as its own.
pub(crate) fn cases(own: &str) -> Vec<Case> {
    let cache = |ttl| Cache {
        ttl,
        key: "run-1".into(),
    };
    let mut out = vec![Case::new("empty", vec![])];
    let mut text = Case::new(
        "text",
        vec![
            Message::User("hi".into()),
            assistant(own, vec![Block::text("hello")]),
            Message::User("again".into()),
        ],
    );
    text.system = "Be brief.";
    out.push(text);
    out.push(Case::new("thinking_ours", thinking_turn(own)));
    out.push(Case::new("thinking_foreign", thinking_turn("elsewhere")));
    let mut tool = Case::new("tools", tool_round(own));
    tool.tools = tools();
    tool.system = "sys";
    out.push(tool);
    let mut tool_none = Case::new("tool_choice_none_parallel_off", tool_round("elsewhere"));
    tool_none.tools = tools();
    tool_none.tool_choice = ToolChoice::None;
    tool_none.options.parallel_tool_calls = Parallel::Off;
    out.push(tool_none);
    let mut parallel = Case::new("parallel_on_off", vec![Message::User("go".into())]);
    parallel.tools = tools();
    parallel.options.parallel_tool_calls = Parallel::Off;
    out.push(parallel);
    let only_call = ToolUse::from_raw("c1".into(), "grep".into(), r#"{"pattern":"y"}"#);
    out.push(Case::new(
        "call_without_text",
        vec![
            Message::User("q".into()),
            assistant(own, vec![Block::ToolUse(only_call.clone())]),
            Message::ToolResults(vec![ok(&only_call, "")]),
        ],
    ));
    let mut options = Case::new("options", vec![Message::User("q".into())]);
    options.max_tokens = Some(4096);
    options.options = Options {
        reasoning_effort: Some(Effort::High),
        thinking_budget: Some(2048),
        temperature: Some(0.3),
        parallel_tool_calls: Parallel::On,
    };
    out.push(options);
    let mut effort = Case::new("effort_low", vec![Message::User("q".into())]);
    effort.options.reasoning_effort = Some(Effort::Low);
    out.push(effort);
    let mut hour = Case::new("cache_1h", tool_round(own));
    hour.system = "sys";
    hour.tools = tools();
    hour.cache = Some(cache(CacheTtl::OneHour));
    out.push(hour);
    let mut five = Case::new("cache_5m_thinking_last", thinking_turn(own));
    five.system = "sys";
    five.cache = Some(cache(CacheTtl::FiveMinutes));
    five.messages.pop();
    out.push(five);
    let mut bare = Case::new("cache_no_system", vec![Message::User("q".into())]);
    bare.cache = Some(cache(CacheTtl::FiveMinutes));
    out.push(bare);
    out.extend(media_cases(own));
    let mut schema = Case::new("output_schema", vec![Message::User("q".into())]);
    schema.output_schema =
        Some(json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}));
    out.push(schema);
    out
}

/// The cases with files: a turn with an image and a PDF attached (tiny, but what each wire sends
/// whole), cached; and a tool result that carries an image.
fn media_cases(own: &str) -> Vec<Case> {
    let mut out = Vec::new();
    let png = [
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0,
        0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0,
    ];
    let attachments = vec![
        crate::attachment::Attachment::of("shots/diagram.png", png.to_vec()).unwrap(),
        crate::attachment::Attachment::of("docs/spec v2.pdf", b"%PDF-1.7\n%%EOF\n".to_vec())
            .unwrap(),
    ];
    let mut attached = Case::new(
        "attachments",
        vec![
            Message::Attached {
                attachments,
                text: "what do these show?".into(),
            },
            assistant(own, vec![Block::text("a diagram and a spec")]),
            Message::User("and the spec's version?".into()),
        ],
    );
    attached.cache = Some(Cache {
        ttl: CacheTtl::FiveMinutes,
        key: "run-1".into(),
    });
    out.push(attached);
    // A tool result that carries an image (`read_file` of one, for a model that takes images).
    let look = ToolUse::from_raw("toolu_7".into(), "read_file".into(), r#"{"path":"a.png"}"#);
    let mut seen = ok(
        &look,
        "image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached",
    );
    seen.media = vec![crate::attachment::Attachment::of("a.png", png.to_vec()).unwrap()];
    out.push(Case::new(
        "image_result",
        vec![
            Message::User("look at a.png".into()),
            assistant(own, vec![Block::ToolUse(look)]),
            Message::ToolResults(vec![seen]),
        ],
    ));
    out
}

/// Fails unless every `(case, body)` serialized in `got` is the one in `want`, byte for byte.
/// The failure shows the first difference and `got` as the table to paste (once the difference
/// is known to be intended).
pub(crate) fn assert_bodies(got: &[(String, String)], want: &[(&str, &str)]) {
    let got: Vec<(&str, &str)> = got.iter().map(|(n, b)| (n.as_str(), b.as_str())).collect();
    if got == want {
        return;
    }
    let table: String = got
        .iter()
        .map(|(name, body)| format!("    (\n        \"{name}\",\n        r#\"{body}\"#,\n    ),\n"))
        .collect();
    for (g, w) in got.iter().zip(want) {
        pretty_assertions::assert_eq!(g, w, "the table as built now:\n{table}");
    }
    assert_eq!(got.len(), want.len(), "the table as built now:\n{table}");
}

mod tests {
    use super::*;

    fn got(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, b)| ((*n).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn the_same_bodies_pass() {
        assert_bodies(&got(&[("a", r#"{"x":1}"#)]), &[("a", r#"{"x":1}"#)]);
    }

    #[test]
    #[should_panic(expected = "the table as built now")]
    fn a_reordered_field_fails() {
        assert_bodies(
            &got(&[("a", r#"{"y":2,"x":1}"#)]),
            &[("a", r#"{"x":1,"y":2}"#)],
        );
    }

    #[test]
    #[should_panic(expected = "the table as built now")]
    fn a_missing_case_fails() {
        assert_bodies(&got(&[("a", "{}")]), &[("a", "{}"), ("b", "{}")]);
    }
}
