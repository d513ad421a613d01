//! The Messages request from the neutral conversation: system prompt and tools (with their
//! cache breakpoints), messages with thinking echoed only to Anthropic, extended thinking.

use serde::Serialize;
use serde_json::Value;

use super::super::{CacheTtl, Options, Request};
use crate::conversation::{Block, Message};

/// Anthropic requires `max_tokens`; this is used when the user did not set one.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

#[derive(Debug, Serialize)]
pub(crate) struct WireRequest<'a> {
    /// Anthropic's own API names the model here; Vertex names it in the URL instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    /// Vertex's version of the API, in the body where Anthropic's own API has a header.
    #[serde(skip_serializing_if = "Option::is_none")]
    anthropic_version: Option<&'static str>,
    /// Vertex's betas, in the body where Anthropic's own API has the `anthropic-beta` header.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    anthropic_beta: Vec<&'static str>,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "System::is_empty")]
    system: System<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    messages: Vec<WireMessage<'a>>,
}

// The objects below that were once built as JSON maps declare their fields in alphabetical
// order, `type` included: maps serialize sorted, and the bytes (which prompt caching keys on)
// stay what they were.

/// The system prompt: a string, or one text block when it carries a cache breakpoint.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum System<'a> {
    Text(&'a str),
    Blocks([ContentBlock<'a>; 1]),
}

impl System<'_> {
    fn is_empty(&self) -> bool {
        matches!(self, System::Text(""))
    }
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A cache breakpoint: `{"type":"ephemeral"}`, with the documented `ttl` for the hour-long cache.
#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct ToolChoice {
    #[serde(rename = "type")]
    kind: &'static str,
    /// `--parallel-tool-calls off` (only with `auto`; `none` has no such field).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    disable_parallel_tool_use: bool,
}

/// Extended thinking, on with this many tokens.
#[derive(Debug, Serialize)]
struct Thinking {
    budget_tokens: u32,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: WireContent<'a>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(&'a str),
    Blocks(Vec<ContentBlock<'a>>),
}

/// A content block: its breakpoint (a key that sorts first), its fields, then its `type`.
#[derive(Debug, Serialize)]
struct ContentBlock<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
    #[serde(flatten)]
    body: BlockBody<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum BlockBody<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        signature: &'a str,
        thinking: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        input: &'a Value,
        name: &'a str,
    },
    ToolResult {
        /// Its text, or its text and the images it carries.
        content: WireContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        tool_use_id: &'a str,
    },
    /// An attached image (`image`) or PDF (`document`), inline as base64.
    Media {
        source: MediaSource<'a>,
        #[serde(skip)]
        document: bool,
    },
}

/// `{"data": BASE64, "media_type": …, "type": "base64"}`.
#[derive(Debug, Serialize)]
struct MediaSource<'a> {
    data: &'a str,
    media_type: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> BlockBody<'a> {
    fn media(attachment: &'a crate::attachment::Attachment) -> BlockBody<'a> {
        BlockBody::Media {
            source: MediaSource {
                data: attachment.base64.as_str(),
                media_type: attachment.kind.media_type(),
                kind: "base64",
            },
            document: !attachment.kind.is_image(),
        }
    }
}

impl<'a> From<BlockBody<'a>> for ContentBlock<'a> {
    fn from(body: BlockBody<'a>) -> ContentBlock<'a> {
        let kind = match body {
            BlockBody::Text { .. } => "text",
            BlockBody::Thinking { .. } => "thinking",
            BlockBody::RedactedThinking { .. } => "redacted_thinking",
            BlockBody::ToolUse { .. } => "tool_use",
            BlockBody::ToolResult { .. } => "tool_result",
            BlockBody::Media {
                document: false, ..
            } => "image",
            BlockBody::Media { document: true, .. } => "document",
        };
        ContentBlock {
            cache_control: None,
            body,
            kind,
        }
    }
}

/// Where a Messages body goes, which decides the fields around the conversation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Host<'a> {
    /// Anthropic's API: the model in the body, version and betas in headers.
    Anthropic { model: &'a str },
    /// Claude on Vertex AI (`:streamRawPredict`): the model in the URL, the version and betas
    /// in the body, as the anthropic SDK's Vertex client sends them.
    Vertex,
}

/// The Messages version Vertex AI serves.
pub(crate) const VERTEX_VERSION: &str = "vertex-2023-10-16";

/// The request body for `request` to Anthropic's own API (see [`build_body`]).
pub(crate) fn build_request<'a>(
    model: &'a str,
    request: &Request<'a>,
    options: &Options,
) -> WireRequest<'a> {
    build_body(Host::Anthropic { model }, super::NAME, request, options)
}

/// The request body for `request`, as Anthropic expects it. `own` is the provider name whose
/// thinking signatures are valid here (turns recorded by another provider lose their thinking).
/// With thinking on, `tool_choice` is
/// still only ever `auto` or `none`, the two that Anthropic allows with thinking.
///
/// With caching, four breakpoints at most (the API's limit): the last tool definition and the
/// system prompt (the prefix every round shares), the newest message's last block (this
/// request's whole prompt, read back by the next round), and the last block of the previous
/// request's newest message (what the previous round wrote, in case this round added more than
/// the 20 blocks the API looks back from a breakpoint).
pub(crate) fn build_body<'a>(
    host: Host<'a>,
    own: &str,
    request: &Request<'a>,
    options: &Options,
) -> WireRequest<'a> {
    let breakpoint = request.cache.map(|c| cache_control(c.ttl));
    let mut tools: Vec<WireTool> = request
        .tools
        .iter()
        .map(|t| WireTool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.input_schema,
            cache_control: None,
        })
        .collect();
    if let Some(last) = tools.last_mut() {
        last.cache_control = breakpoint;
    }
    let system = match &breakpoint {
        Some(cc) if !request.system.is_empty() => System::Blocks([ContentBlock {
            cache_control: Some(*cc),
            ..BlockBody::Text {
                text: request.system,
            }
            .into()
        }]),
        _ => System::Text(request.system),
    };
    let mut messages = wire_messages(request.messages, own);
    if let Some(cc) = &breakpoint {
        let n = messages.len();
        for i in [n.checked_sub(1), n.checked_sub(3)].into_iter().flatten() {
            mark(&mut messages[i], cc);
        }
    }
    let kind = match request.tool_choice {
        crate::ToolChoice::Auto => "auto",
        crate::ToolChoice::None => "none",
    };
    let tool_choice = (!tools.is_empty()).then_some(ToolChoice {
        kind,
        disable_parallel_tool_use: kind == "auto"
            && options.parallel_tool_calls == crate::Parallel::Off,
    });
    let (model, anthropic_version, anthropic_beta) = match host {
        Host::Anthropic { model } => (Some(model), None, vec![]),
        Host::Vertex => {
            let hour = request.cache.is_some_and(|c| c.ttl == CacheTtl::OneHour);
            let betas = if hour {
                vec![super::EXTENDED_TTL_BETA]
            } else {
                vec![]
            };
            (None, Some(VERTEX_VERSION), betas)
        }
    };
    WireRequest {
        model,
        anthropic_version,
        anthropic_beta,
        max_tokens: options.anthropic_max_tokens(request.max_tokens),
        stream: true,
        system,
        tools,
        tool_choice,
        thinking: options.anthropic_thinking().map(|budget| Thinking {
            budget_tokens: budget,
            kind: "enabled",
        }),
        temperature: options.temperature,
        messages,
    }
}

fn cache_control(ttl: CacheTtl) -> CacheControl {
    CacheControl {
        ttl: match ttl {
            CacheTtl::FiveMinutes => None,
            CacheTtl::OneHour => Some("1h"),
        },
        kind: "ephemeral",
    }
}

/// Puts a cache breakpoint on a message's last block. Thinking blocks cannot carry one; a
/// message ending in one (never a user message) is left as it is.
fn mark(message: &mut WireMessage, cc: &CacheControl) {
    let content = std::mem::replace(&mut message.content, WireContent::Blocks(vec![]));
    let mut blocks = into_blocks(content);
    if let Some(last) = blocks.last_mut()
        && !matches!(
            last.body,
            BlockBody::Thinking { .. } | BlockBody::RedactedThinking { .. }
        )
    {
        last.cache_control = Some(*cc);
    }
    message.content = WireContent::Blocks(blocks);
}

fn wire_messages<'a>(messages: &'a [Message], own: &str) -> Vec<WireMessage<'a>> {
    let mut out: Vec<WireMessage> = Vec::new();
    for message in messages {
        let (role, content) = match message {
            Message::User(text) => ("user", WireContent::Text(text)),
            // The files first: Anthropic reads images best before the text about them.
            Message::Attached { attachments, text } => {
                let mut blocks: Vec<ContentBlock> = attachments
                    .iter()
                    .map(|a| BlockBody::media(a).into())
                    .collect();
                blocks.push(BlockBody::Text { text }.into());
                ("user", WireContent::Blocks(blocks))
            }
            Message::Assistant { blocks, provider } => {
                let blocks = assistant_blocks(blocks, provider == own);
                if blocks.is_empty() {
                    continue;
                }
                ("assistant", WireContent::Blocks(blocks))
            }
            Message::ToolResults(results) => {
                let blocks = results
                    .iter()
                    .map(|r| {
                        let content = if r.media.is_empty() {
                            WireContent::Text(&r.content)
                        } else {
                            let mut blocks = vec![BlockBody::Text { text: &r.content }.into()];
                            blocks.extend(r.media.iter().map(|m| BlockBody::media(m).into()));
                            WireContent::Blocks(blocks)
                        };
                        BlockBody::ToolResult {
                            content,
                            is_error: r.is_error,
                            tool_use_id: &r.tool_use_id,
                        }
                        .into()
                    })
                    .collect();
                ("user", WireContent::Blocks(blocks))
            }
        };
        // The API wants alternating roles: merge a turn into the previous one of the same role
        // (tool results first, then the new prompt text, as Anthropic requires).
        match out.last_mut() {
            Some(prev) if prev.role == role => {
                let mut merged = into_blocks(std::mem::replace(
                    &mut prev.content,
                    WireContent::Blocks(vec![]),
                ));
                merged.extend(into_blocks(content));
                prev.content = WireContent::Blocks(merged);
            }
            _ => out.push(WireMessage { role, content }),
        }
    }
    out
}

fn into_blocks(content: WireContent) -> Vec<ContentBlock> {
    match content {
        WireContent::Text(text) => vec![BlockBody::Text { text }.into()],
        WireContent::Blocks(blocks) => blocks,
    }
}

/// An assistant turn's blocks in their original order. Thinking is only valid where it was
/// signed, so it is dropped when the turn came from another provider; empty text is rejected by
/// the API and dropped.
fn assistant_blocks(blocks: &[Block], ours: bool) -> Vec<ContentBlock<'_>> {
    blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text, .. } if text.is_empty() => None,
            Block::Text { text, .. } => Some(BlockBody::Text { text }),
            Block::Thinking {
                text,
                signature: Some(signature),
            } if ours => Some(BlockBody::Thinking {
                signature,
                thinking: text,
            }),
            Block::Thinking { .. } => None,
            Block::RedactedThinking { data } if ours => Some(BlockBody::RedactedThinking { data }),
            Block::RedactedThinking { .. } | Block::Reasoning { .. } => None,
            Block::ToolUse(call) => Some(BlockBody::ToolUse {
                id: &call.id,
                input: &call.input,
                name: &call.name,
            }),
        })
        .map(ContentBlock::from)
        .collect()
}
