//! The Chat Completions request from the neutral conversation: the system prompt as the first
//! message, assistant turns as text plus `tool_calls`, each tool result as its own `tool`
//! message. The fields of each message are declared in alphabetical order: that is the order
//! the body has always had (it was built as JSON maps, which serialize sorted), and changing
//! the bytes would change what servers cache by prefix.

use serde::Serialize;
use serde_json::Value;

use super::Flavor;
use crate::conversation::{Block, Message};
use crate::{Effort, Options, Request, ToolChoice};

#[derive(Debug, Serialize)]
pub(crate) struct WireRequest<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    /// Requests with the same key share a cache on api.openai.com (the run's id).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    /// `--output-schema`: text answers must follow it (tool calls are unaffected).
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    messages: Vec<ChatMessage<'a>>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Debug, Serialize)]
struct ResponseFormat<'a> {
    json_schema: JsonSchemaFormat<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'static str,
    schema: &'a Value,
    strict: bool,
}

/// One entry of `messages`. The role is a plain field rather than a serde tag so that it
/// keeps its alphabetical place among the fields (a tag would be written first).
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ChatMessage<'a> {
    /// The system prompt and user prompts.
    Text {
        content: &'a str,
        role: &'static str,
    },
    Assistant {
        /// `null` when the turn is only calls, as the API documents.
        content: Option<String>,
        role: &'static str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall<'a>>,
    },
    Tool {
        content: String,
        role: &'static str,
        tool_call_id: &'a str,
    },
    /// A user turn with files attached: content parts, the files first.
    Parts {
        content: Vec<ChatPart<'a>>,
        role: &'static str,
    },
}

/// A content part of a user message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatPart<'a> {
    ImageUrl { image_url: ImageUrl },
    File { file: FileData<'a> },
    Text { text: &'a str },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    /// A `data:` URL.
    url: String,
}

#[derive(Debug, Serialize)]
struct FileData<'a> {
    /// A `data:` URL.
    file_data: String,
    filename: &'a str,
}

impl<'a> ChatPart<'a> {
    fn of(attachment: &'a crate::attachment::Attachment) -> ChatPart<'a> {
        let url = crate::attachment::data_url(attachment);
        if attachment.kind.is_image() {
            ChatPart::ImageUrl {
                image_url: ImageUrl { url },
            }
        } else {
            ChatPart::File {
                file: FileData {
                    file_data: url,
                    filename: attachment.file_name(),
                },
            }
        }
    }
}

#[derive(Debug, Serialize)]
struct ToolCall<'a> {
    function: FunctionCall<'a>,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    /// The argument text exactly as it was streamed, when it was kept.
    arguments: String,
    name: &'a str,
}

/// The request body for `request`.
pub(crate) fn build_request<'a>(
    model: &'a str,
    flavor: Flavor,
    request: &Request<'a>,
    options: &Options,
) -> WireRequest<'a> {
    let tools: Vec<WireTool> = request
        .tools
        .iter()
        .map(|t| WireTool {
            kind: "function",
            function: WireFunction {
                name: &t.name,
                description: &t.description,
                parameters: &t.input_schema,
            },
        })
        .collect();
    // llama.cpp only makes parallel calls when asked, and a small local model asked for them
    // can fill a response with calls; hosted OpenAI gets them as it always did (`Parallel`).
    // "auto" is the default choice and some servers (Ollama) do not accept the field, so only
    // "none" is sent.
    let parallel_tool_calls = if tools.is_empty() {
        None
    } else {
        options.parallel_tool_calls.openai_field(flavor)
    };
    let tool_choice =
        (!tools.is_empty() && request.tool_choice == ToolChoice::None).then_some("none");
    let (max_completion_tokens, max_tokens) = match flavor {
        Flavor::OpenAi => (request.max_tokens, None),
        Flavor::Compatible => (None, request.max_tokens),
    };
    let system_role = match flavor {
        Flavor::OpenAi => "developer",
        Flavor::Compatible => "system",
    };
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(ChatMessage::Text {
            content: request.system,
            role: system_role,
        });
    }
    for message in request.messages {
        push_messages(message, &mut messages);
    }
    WireRequest {
        model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools,
        tool_choice,
        parallel_tool_calls,
        max_completion_tokens,
        max_tokens,
        // Compatible servers cache by prefix on their own and may refuse unknown fields.
        prompt_cache_key: match flavor {
            Flavor::OpenAi => request.cache.map(|c| c.key.as_str()),
            Flavor::Compatible => None,
        },
        response_format: match flavor {
            Flavor::OpenAi => request.output_schema.map(|schema| ResponseFormat {
                json_schema: JsonSchemaFormat {
                    name: "final_answer",
                    schema,
                    strict: false,
                },
                kind: "json_schema",
            }),
            Flavor::Compatible => None,
        },
        reasoning_effort: options.reasoning_effort.map(Effort::as_str),
        temperature: options.temperature,
        messages,
    }
}

fn push_messages<'a>(message: &'a Message, out: &mut Vec<ChatMessage<'a>>) {
    match message {
        Message::User(text) => out.push(ChatMessage::Text {
            content: text,
            role: "user",
        }),
        Message::Attached { attachments, text } => {
            let mut content: Vec<ChatPart> = attachments.iter().map(ChatPart::of).collect();
            content.push(ChatPart::Text { text });
            out.push(ChatMessage::Parts {
                content,
                role: "user",
            });
        }
        Message::Assistant { blocks, .. } => {
            let text: String = blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let tool_calls: Vec<ToolCall> = blocks
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse(call) => Some(ToolCall {
                        function: FunctionCall {
                            arguments: call.arguments_text(),
                            name: &call.name,
                        },
                        id: &call.id,
                        kind: "function",
                    }),
                    _ => None,
                })
                .collect();
            let content = (!text.is_empty() || tool_calls.is_empty()).then_some(text);
            out.push(ChatMessage::Assistant {
                content,
                role: "assistant",
                tool_calls,
            });
        }
        Message::ToolResults(results) => {
            for r in results {
                // Chat Completions has no error flag on tool messages; the text says it instead.
                let content = if r.is_error {
                    format!("Error: {}", r.content)
                } else {
                    r.content.clone()
                };
                out.push(ChatMessage::Tool {
                    content,
                    role: "tool",
                    tool_call_id: &r.tool_use_id,
                });
            }
            // A tool message carries text only: the images the results carry follow as a user
            // message, right after them (as llm and opencode send them).
            let media: Vec<ChatPart> = results
                .iter()
                .flat_map(|r| &r.media)
                .map(ChatPart::of)
                .collect();
            if !media.is_empty() {
                let mut content = vec![ChatPart::Text {
                    text: crate::attachment::FROM_RESULTS,
                }];
                content.extend(media);
                out.push(ChatMessage::Parts {
                    content,
                    role: "user",
                });
            }
        }
    }
}
