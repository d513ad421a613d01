//! The ConverseStream request body from the neutral conversation. One shape serves every model
//! family on Bedrock; what differs by family is only what the family accepts: extended thinking
//! (through `additionalModelRequestFields`, Anthropic's own field) and `cachePoint` blocks
//! (Anthropic and Amazon Nova models).
//!
//! `toolChoice` is never sent: `auto` is its default, only some families accept the field at
//! all, and Converse has no `none`. A tool-less round (`ToolChoice::None`) still defines the
//! tools (a history with tool calls needs them); a call the model makes anyway is refused by
//! the loop, as for every provider.

use serde::Serialize;
use serde_json::Value;

use crate::conversation::{Block, Message};
use crate::{CacheTtl, Options, Request};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConverseRequest<'a> {
    messages: Vec<WireMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<SystemBlock<'a>>,
    #[serde(skip_serializing_if = "InferenceConfig::is_empty")]
    inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_model_request_fields: Option<AdditionalFields>,
}

/// The model's own fields: Anthropic's extended thinking. Fields in alphabetical order, the
/// order these bytes had when they were built as a JSON map.
#[derive(Debug, Serialize)]
struct AdditionalFields {
    thinking: Thinking,
}

#[derive(Debug, Serialize)]
struct Thinking {
    budget_tokens: u32,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum SystemBlock<'a> {
    Text(&'a str),
    CachePoint(CachePoint),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct InferenceConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

impl InferenceConfig {
    fn is_empty(&self) -> bool {
        self.max_tokens.is_none() && self.temperature.is_none()
    }
}

#[derive(Debug, Serialize)]
struct ToolConfig<'a> {
    tools: Vec<Tool<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum Tool<'a> {
    ToolSpec(ToolSpec<'a>),
    CachePoint(CachePoint),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolSpec<'a> {
    name: &'a str,
    /// At least one character when present.
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    input_schema: InputSchema<'a>,
}

#[derive(Debug, Serialize)]
struct InputSchema<'a> {
    json: &'a Value,
}

/// A prompt-cache breakpoint: everything before it is cached.
#[derive(Debug, Clone, Serialize)]
struct CachePoint {
    #[serde(rename = "type")]
    kind: &'static str,
    /// Only the hour-long cache names its lifetime; the five-minute one is the default.
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

#[derive(Debug, Serialize)]
struct WireMessage {
    role: &'static str,
    content: Vec<ContentBlock>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum ContentBlock {
    Text(String),
    ToolUse(ToolUseBlock),
    ToolResult(ToolResultBlock),
    ReasoningContent(ReasoningContent),
    CachePoint(CachePoint),
    Image(MediaBlock),
    Document(MediaBlock),
}

/// An attached image (`{"format": "png", "source": {"bytes": BASE64}}`) or document (with its
/// `name`).
#[derive(Debug, Serialize)]
struct MediaBlock {
    format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    source: MediaSource,
}

#[derive(Debug, Serialize)]
struct MediaSource {
    bytes: crate::attachment::Base64,
}

impl ContentBlock {
    /// An attachment as Converse takes it; `named` holds the document names given so far in
    /// its message, which must differ.
    fn media(attachment: &crate::attachment::Attachment, named: &mut Vec<String>) -> ContentBlock {
        use crate::attachment::Kind;
        let source = MediaSource {
            bytes: attachment.base64.clone(),
        };
        let format = match attachment.kind {
            Kind::Png => "png",
            Kind::Jpeg => "jpeg",
            Kind::Gif => "gif",
            Kind::Webp => "webp",
            Kind::Pdf | Kind::Text => "pdf",
        };
        if attachment.kind.is_image() {
            return ContentBlock::Image(MediaBlock {
                format,
                name: None,
                source,
            });
        }
        let name = document_name(attachment.file_name(), named);
        named.push(name.clone());
        ContentBlock::Document(MediaBlock {
            format,
            name: Some(name),
            source,
        })
    }
}

/// A document's name as Converse accepts it: letters, digits, single spaces, hyphens,
/// parentheses and square brackets; the file's stem with anything else a space, numbered when
/// a document of the message (`named`) has it already.
pub(super) fn document_name(file: &str, named: &[String]) -> String {
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let kept: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-()[]".contains(c) {
                c
            } else {
                ' '
            }
        })
        .collect();
    let words: Vec<&str> = kept.split_whitespace().collect();
    let stem = match words.join(" ") {
        name if name.is_empty() => "document".to_owned(),
        name => name,
    };
    let mut name = stem.clone();
    let mut n = 1;
    while named.contains(&name) {
        n += 1;
        name = format!("{stem} ({n})");
    }
    name
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseBlock {
    tool_use_id: String,
    name: String,
    input: Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResultBlock {
    tool_use_id: String,
    content: Vec<ToolResultContent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum ToolResultContent {
    Text(String),
    /// An image the result carries (`read_file` of an image).
    Image(MediaBlock),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum ReasoningContent {
    ReasoningText {
        text: String,
        /// Sent back exactly as the model signed it.
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Encrypted reasoning, base64 as it arrived.
    RedactedContent(String),
}

/// Which family a model id belongs to, for the features only some accept. Inference profiles
/// (`us.anthropic.…`) and ARNs name the model inside; an application inference profile's ARN
/// does not, and gets neither feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Anthropic,
    Nova,
    Other,
}

impl Family {
    pub(crate) fn of(model: &str) -> Family {
        let model = model.to_ascii_lowercase();
        if model.contains("anthropic.") || model.contains("claude") {
            Family::Anthropic
        } else if model.contains("amazon.nova") {
            Family::Nova
        } else {
            Family::Other
        }
    }
}

/// The request body for `request` to `model`. With caching, breakpoints where the Anthropic
/// provider puts them (four at most, the API's limit): after the tool definitions (Anthropic
/// models only: Nova caches no tools) and the system prompt, after the newest message, and
/// after the previous request's newest message.
pub(crate) fn build_request<'a>(
    model: &str,
    provider: &str,
    request: &Request<'a>,
    options: &Options,
) -> ConverseRequest<'a> {
    let family = Family::of(model);
    let point = request
        .cache
        .filter(|_| family != Family::Other)
        .map(|c| CachePoint {
            kind: "default",
            ttl: (c.ttl == CacheTtl::OneHour).then_some("1h"),
        });
    let mut tools: Vec<Tool> = request
        .tools
        .iter()
        .map(|t| {
            Tool::ToolSpec(ToolSpec {
                name: &t.name,
                description: &t.description,
                input_schema: InputSchema {
                    json: &t.input_schema,
                },
            })
        })
        .collect();
    if let Some(p) = point.clone().filter(|_| family == Family::Anthropic)
        && !tools.is_empty()
    {
        tools.push(Tool::CachePoint(p));
    }
    let mut system = Vec::new();
    if !request.system.is_empty() {
        system.push(SystemBlock::Text(request.system));
        system.extend(point.clone().map(SystemBlock::CachePoint));
    }
    let mut messages = wire_messages(request.messages, provider);
    if let Some(p) = &point {
        let n = messages.len();
        for i in [n.checked_sub(1), n.checked_sub(3)].into_iter().flatten() {
            mark(&mut messages[i], p);
        }
    }
    let thinking = options
        .anthropic_thinking()
        .filter(|_| family == Family::Anthropic);
    let max_tokens = match family {
        // Anthropic's models need a cap, larger than the thinking budget.
        Family::Anthropic => Some(options.anthropic_max_tokens(request.max_tokens)),
        _ => request.max_tokens,
    };
    ConverseRequest {
        messages,
        system,
        inference_config: InferenceConfig {
            max_tokens,
            temperature: options.temperature,
        },
        tool_config: (!tools.is_empty()).then_some(ToolConfig { tools }),
        additional_model_request_fields: thinking.map(|budget| AdditionalFields {
            thinking: Thinking {
                budget_tokens: budget,
                kind: "enabled",
            },
        }),
    }
}

/// Appends a breakpoint to a message. Not after reasoning (Anthropic refuses a breakpoint on a
/// thinking block), and never twice.
fn mark(message: &mut WireMessage, point: &CachePoint) {
    match message.content.last() {
        Some(ContentBlock::ReasoningContent(_) | ContentBlock::CachePoint(_)) | None => {}
        Some(_) => message
            .content
            .push(ContentBlock::CachePoint(point.clone())),
    }
}

fn wire_messages(messages: &[Message], provider: &str) -> Vec<WireMessage> {
    let mut out: Vec<WireMessage> = Vec::new();
    for message in messages {
        let (role, content) = match message {
            // Bedrock refuses a blank text block.
            Message::User(text) if text.trim().is_empty() => continue,
            Message::User(text) => ("user", vec![ContentBlock::Text(text.clone())]),
            // The files first; a message with a document must hold text too, which it does.
            Message::Attached { attachments, text } => {
                let mut named = Vec::new();
                let mut blocks: Vec<ContentBlock> = attachments
                    .iter()
                    .map(|a| ContentBlock::media(a, &mut named))
                    .collect();
                let text = if text.trim().is_empty() {
                    "(attached)"
                } else {
                    text
                };
                blocks.push(ContentBlock::Text(text.to_owned()));
                ("user", blocks)
            }
            Message::Assistant {
                blocks,
                provider: p,
            } => {
                let blocks = assistant_blocks(blocks, p == provider);
                if blocks.is_empty() {
                    continue;
                }
                ("assistant", blocks)
            }
            Message::ToolResults(results) => {
                let blocks = results
                    .iter()
                    .map(|r| {
                        ContentBlock::ToolResult(ToolResultBlock {
                            tool_use_id: r.tool_use_id.clone(),
                            content: std::iter::once(ToolResultContent::Text(r.content.clone()))
                                .chain(r.media.iter().filter_map(|m| {
                                    match ContentBlock::media(m, &mut Vec::new()) {
                                        ContentBlock::Image(image) => {
                                            Some(ToolResultContent::Image(image))
                                        }
                                        _ => None,
                                    }
                                }))
                                .collect(),
                            status: r.is_error.then_some("error"),
                        })
                    })
                    .collect();
                ("user", blocks)
            }
        };
        // Roles must alternate: a turn joins the previous one of the same role (tool results
        // first, then the new prompt text).
        match out.last_mut() {
            Some(prev) if prev.role == role => prev.content.extend(content),
            _ => out.push(WireMessage { role, content }),
        }
    }
    out
}

/// An assistant turn's blocks in their order. Reasoning goes back only to the provider that
/// signed it, and only signed (Anthropic refuses unsigned thinking); blank text is dropped.
fn assistant_blocks(blocks: &[Block], ours: bool) -> Vec<ContentBlock> {
    blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text, .. } if text.trim().is_empty() => None,
            Block::Text { text, .. } => Some(ContentBlock::Text(text.clone())),
            Block::Thinking {
                text,
                signature: Some(signature),
            } if ours => Some(ContentBlock::ReasoningContent(
                ReasoningContent::ReasoningText {
                    text: text.clone(),
                    signature: Some(signature.clone()),
                },
            )),
            Block::RedactedThinking { data } if ours => Some(ContentBlock::ReasoningContent(
                ReasoningContent::RedactedContent(data.clone()),
            )),
            Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::Reasoning { .. } => {
                None
            }
            Block::ToolUse(call) => Some(ContentBlock::ToolUse(ToolUseBlock {
                tool_use_id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            })),
        })
        .collect()
}
