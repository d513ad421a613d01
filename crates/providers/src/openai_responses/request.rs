//! The request half of the Responses provider: the neutral conversation as `input` items, in
//! order. Reasoning items go back only where they came from, and only with their encrypted
//! content (with `store: false` an id alone refers to nothing). Every body this builds validates
//! against `fixtures/wire/openai-responses-request.schema.json`, a trimmed copy of the SDK's
//! `ResponseCreateParamsStreaming` (see the tests).

use serde::Serialize;
use serde_json::Value;

use crate::conversation::{Block, Message};
use crate::openai::Flavor;
use crate::options::is_openai_reasoning_model;
use crate::{Options, Request, ToolChoice};

#[derive(Debug, Serialize)]
pub(crate) struct WireRequest<'a> {
    model: &'a str,
    stream: bool,
    /// Nothing is kept server-side: each request carries the whole conversation.
    store: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    /// Requests with the same key share a cache (the run's id, kept across `--resume`).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    /// `--output-schema`: text answers must follow it (function calls are unaffected).
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextConfig<'a>>,
}

#[derive(Debug, Serialize)]
struct TextConfig<'a> {
    format: Format<'a>,
}

/// A JSON Schema format. Fields in alphabetical order, `type` included: the order these bytes
/// had when they were built as a JSON map.
#[derive(Debug, Serialize)]
struct Format<'a> {
    name: &'static str,
    schema: &'a Value,
    strict: bool,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    /// Strict mode (the Responses default) needs every property required and no other keys
    /// allowed; our tools' schemas have optional properties.
    strict: bool,
}

#[derive(Debug, Serialize)]
struct Reasoning {
    effort: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        /// The argument text exactly as the model streamed it, when it came from OpenAI.
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: CallOutput<'a>,
    },
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        encrypted_content: &'a str,
    },
    /// A user message with files attached: input parts, the files first.
    #[serde(rename = "message")]
    Parts {
        role: &'static str,
        content: Vec<InputPart<'a>>,
    },
}

/// A call's output: its text, or its text and the images it carries (as codex's image viewing
/// returns them).
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum CallOutput<'a> {
    Text(String),
    Parts(Vec<InputPart<'a>>),
}

/// A part of an input message (`input_image`, `input_file`, `input_text`).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)]
enum InputPart<'a> {
    /// `image_url` is a `data:` URL; `detail` is `auto` (the SDK's type requires it).
    InputImage {
        detail: &'static str,
        image_url: String,
    },
    /// `file_data` is a `data:` URL.
    InputFile {
        filename: &'a str,
        file_data: String,
    },
    InputText {
        text: &'a str,
    },
}

impl<'a> InputPart<'a> {
    fn of(attachment: &'a crate::attachment::Attachment) -> InputPart<'a> {
        let url = crate::attachment::data_url(attachment);
        if attachment.kind.is_image() {
            InputPart::InputImage {
                detail: "auto",
                image_url: url,
            }
        } else {
            InputPart::InputFile {
                filename: attachment.file_name(),
                file_data: url,
            }
        }
    }
}

#[derive(Debug, Serialize)]
struct SummaryText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// The request body for `request` to `model`, sent by the provider called `provider`.
pub(crate) fn build_request<'a>(
    model: &'a str,
    provider: &str,
    flavor: Flavor,
    request: &Request<'a>,
    options: &Options,
) -> WireRequest<'a> {
    let tools: Vec<Tool> = request
        .tools
        .iter()
        .map(|t| Tool {
            kind: "function",
            name: &t.name,
            description: &t.description,
            parameters: &t.input_schema,
            strict: false,
        })
        .collect();
    let offered = !tools.is_empty();
    // Encrypted reasoning is what lets a stateless conversation keep the model's reasoning
    // between rounds; OpenAI's non-reasoning models reject the request for it.
    let reasons = flavor == Flavor::OpenAi
        && (is_openai_reasoning_model(model) || options.reasoning_effort.is_some());
    let mut input = Vec::new();
    for message in request.messages {
        push_items(message, provider, &mut input);
    }
    WireRequest {
        model,
        stream: true,
        store: false,
        instructions: request.system,
        input,
        tools,
        tool_choice: (offered && request.tool_choice == ToolChoice::None).then_some("none"),
        parallel_tool_calls: if offered {
            options.parallel_tool_calls.openai_field(flavor)
        } else {
            None
        },
        include: if reasons {
            vec!["reasoning.encrypted_content"]
        } else {
            vec![]
        },
        reasoning: options.reasoning_effort.map(|effort| Reasoning {
            effort: effort.as_str(),
        }),
        max_output_tokens: request.max_tokens,
        temperature: options.temperature,
        prompt_cache_key: request.cache.map(|c| c.key.as_str()),
        text: request.output_schema.map(|schema| TextConfig {
            format: Format {
                name: "final_answer",
                schema,
                strict: false,
                kind: "json_schema",
            },
        }),
    }
}

/// Whether a turn by provider `made_by` may have its reasoning sent to `provider`: the same
/// endpoint, however the user named it (`openai/o3` runs on the Responses API too).
fn same_origin(made_by: &str, provider: &str) -> bool {
    fn family(name: &str) -> &str {
        if name == "openai-responses" {
            "openai"
        } else {
            name
        }
    }
    family(made_by) == family(provider)
}

fn push_items<'a>(message: &'a Message, provider: &str, out: &mut Vec<Item<'a>>) {
    match message {
        Message::User(text) => out.push(Item::Message {
            role: "user",
            content: text,
        }),
        Message::Attached { attachments, text } => {
            let mut content: Vec<InputPart> = attachments.iter().map(InputPart::of).collect();
            content.push(InputPart::InputText { text });
            out.push(Item::Parts {
                role: "user",
                content,
            });
        }
        Message::Assistant {
            blocks,
            provider: made_by,
        } => {
            let ours = same_origin(made_by, provider);
            for block in blocks {
                match block {
                    Block::Text { text, .. } if !text.is_empty() => out.push(Item::Message {
                        role: "assistant",
                        content: text,
                    }),
                    Block::Reasoning {
                        id,
                        encrypted_content: Some(encrypted),
                        summary,
                    } if ours => out.push(Item::Reasoning {
                        id,
                        summary: summary
                            .iter()
                            .map(|text| SummaryText {
                                kind: "summary_text",
                                text,
                            })
                            .collect(),
                        encrypted_content: encrypted,
                    }),
                    Block::ToolUse(call) => out.push(Item::FunctionCall {
                        call_id: &call.id,
                        name: &call.name,
                        arguments: call.arguments_text(),
                    }),
                    // Other providers' thinking, signatures and reasoning mean nothing here.
                    Block::Text { .. }
                    | Block::Thinking { .. }
                    | Block::RedactedThinking { .. }
                    | Block::Reasoning { .. } => {}
                }
            }
        }
        Message::ToolResults(results) => {
            for r in results {
                // Like Chat Completions, a function output has no error flag: the text says it.
                let output = if r.is_error {
                    format!("Error: {}", r.content)
                } else {
                    r.content.clone()
                };
                let output = if r.media.is_empty() {
                    CallOutput::Text(output)
                } else {
                    let mut parts = vec![InputPart::InputText { text: &r.content }];
                    parts.extend(r.media.iter().map(InputPart::of));
                    CallOutput::Parts(parts)
                };
                out.push(Item::FunctionCallOutput {
                    call_id: &r.tool_use_id,
                    output,
                });
            }
        }
    }
}
