//! The request half of the Gemini provider: the neutral conversation as `contents`, with each
//! signature on the part it came on, only for Gemini, and ids only where Gemini issued them.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;

use super::{FunctionCall, FunctionResponse, GENERATED_ID_PREFIX, NAME, Part};
use crate::conversation::{Block, Message, ToolResult};
use crate::{Options, Request, ToolChoice};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Content>,
    contents: Vec<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation_config: Option<GenerationConfig>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig {
    function_calling_config: FunctionCallingConfig,
}

#[derive(Debug, Serialize)]
struct FunctionCallingConfig {
    mode: &'static str,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

/// `thinkingConfig`: one field, a token budget or (Gemini 3) a level.
#[derive(Debug, Serialize)]
enum ThinkingConfig {
    #[serde(rename = "thinkingBudget")]
    Budget(u32),
    #[serde(rename = "thinkingLevel")]
    Level(String),
}

#[derive(Debug, Serialize)]
struct Content {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    parts: Vec<Part>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WireTools<'a> {
    function_declarations: Vec<Declaration<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Declaration<'a> {
    name: &'a str,
    description: &'a str,
    /// Not `parameters`: that is an OpenAPI subset that rejects JSON Schema keywords such as
    /// `additionalProperties`, which our tool schemas use.
    parameters_json_schema: &'a Value,
}

impl Part {
    fn text(text: &str) -> Part {
        Part {
            text: Some(text.to_owned()),
            ..Part::default()
        }
    }

    fn inline(attachment: &crate::attachment::Attachment) -> Part {
        Part {
            inline_data: Some(super::Blob {
                mime_type: attachment.kind.media_type().to_owned(),
                data: attachment.base64.clone(),
            }),
            ..Part::default()
        }
    }
}

/// Gemini 3 rejects a history whose steps start with a function call it did not sign; for calls
/// made by another provider (a resumed run) or by an older Gemini, Google's documented sentinel
/// tells the validator to skip the check.
pub(super) const UNSIGNED_CALL: &str = "skip_thought_signature_validator";

/// Whether `model` validates call signatures: Gemini 3 and later, and the unversioned aliases
/// (`gemini-flash-latest`), which name the current generation.
pub(super) fn validates_call_signatures(model: &str) -> bool {
    let name = model.strip_prefix("models/").unwrap_or(model);
    let Some(rest) = name.strip_prefix("gemini-") else {
        return false;
    };
    let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
    major.parse::<u32>().map_or(true, |m| m >= 3)
}

/// Whether `model` is named as Gemini 3 or later, which take `thinkingLevel`. Older models (and
/// aliases, whose generation is unknown) get `thinkingBudget`, which every thinking model takes.
fn thinks_in_levels(model: &str) -> bool {
    let name = model.strip_prefix("models/").unwrap_or(model);
    let major: String = name
        .strip_prefix("gemini-")
        .unwrap_or("")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    major.parse::<u32>().is_ok_and(|m| m >= 3)
}

/// `generationConfig`: the output cap, the temperature and `thinkingConfig`. `--thinking-budget`
/// is sent as `thinkingBudget`; `--reasoning-effort` as `thinkingLevel` (LOW, MEDIUM, HIGH) for
/// Gemini 3, else as the effort's token budget.
fn generation_config(
    model: &str,
    max_tokens: Option<u32>,
    options: &Options,
) -> Option<GenerationConfig> {
    let thinking_config = match (options.thinking_budget, options.reasoning_effort) {
        (Some(budget), _) => Some(ThinkingConfig::Budget(budget)),
        (None, Some(effort)) if thinks_in_levels(model) => {
            Some(ThinkingConfig::Level(effort.as_str().to_ascii_uppercase()))
        }
        (None, Some(effort)) => Some(ThinkingConfig::Budget(effort.budget_tokens())),
        (None, None) => None,
    };
    let config = GenerationConfig {
        max_output_tokens: max_tokens,
        temperature: options.temperature,
        thinking_config,
    };
    let empty = config.max_output_tokens.is_none()
        && config.temperature.is_none()
        && config.thinking_config.is_none();
    (!empty).then_some(config)
}

/// The request body for `request` to `model`, as Gemini's own API expects it.
pub(crate) fn build_request<'a>(
    model: &str,
    request: &Request<'a>,
    options: &Options,
) -> WireRequest<'a> {
    build_body(model, NAME, request, options)
}

/// The request body for `request` to `model`, as Gemini expects it (Vertex AI takes the same).
/// `own` is the provider name whose signatures and call ids are valid here.
pub(crate) fn build_body<'a>(
    model: &str,
    own: &str,
    request: &Request<'a>,
    options: &Options,
) -> WireRequest<'a> {
    let system_instruction = (!request.system.is_empty()).then(|| Content {
        role: None,
        parts: vec![Part::text(request.system)],
    });
    let function_declarations: Vec<Declaration> = request
        .tools
        .iter()
        .map(|t| Declaration {
            name: &t.name,
            description: &t.description,
            parameters_json_schema: &t.input_schema,
        })
        .collect();
    let offered = !function_declarations.is_empty();
    let tools = if offered {
        vec![WireTools {
            function_declarations,
        }]
    } else {
        vec![]
    };
    WireRequest {
        system_instruction,
        contents: contents(request.messages, own, validates_call_signatures(model)),
        tools,
        tool_config: offered.then(|| {
            let mode = match request.tool_choice {
                ToolChoice::Auto => "AUTO",
                ToolChoice::None => "NONE",
            };
            ToolConfig {
                function_calling_config: FunctionCallingConfig { mode },
            }
        }),
        generation_config: generation_config(model, request.max_tokens, options),
    }
}

fn contents(messages: &[Message], own: &str, sign_unsigned: bool) -> Vec<Content> {
    let mut out: Vec<Content> = Vec::new();
    // A result may name its call's id only when Gemini issued that id.
    let mut gemini_ids: HashSet<&str> = HashSet::new();
    for message in messages {
        let (role, parts) = match message {
            Message::User(text) => ("user", vec![Part::text(text)]),
            // The files first, then the text about them.
            Message::Attached { attachments, text } => {
                let mut parts: Vec<Part> = attachments.iter().map(Part::inline).collect();
                parts.push(Part::text(text));
                ("user", parts)
            }
            Message::Assistant { blocks, provider } => {
                let mut parts = model_parts(blocks, provider == own, &mut gemini_ids);
                if sign_unsigned
                    && let Some(first) = parts.iter_mut().find(|p| p.function_call.is_some())
                    && first.thought_signature.is_none()
                {
                    first.thought_signature = Some(UNSIGNED_CALL.to_owned());
                }
                ("model", parts)
            }
            Message::ToolResults(results) => {
                let mut parts: Vec<Part> = results
                    .iter()
                    .map(|r| response_part(r, &gemini_ids))
                    .collect();
                // The images the results carry, after them in the same turn (a function
                // response holds JSON only).
                let media: Vec<Part> = results
                    .iter()
                    .flat_map(|r| &r.media)
                    .map(Part::inline)
                    .collect();
                if !media.is_empty() {
                    parts.push(Part::text(crate::attachment::FROM_RESULTS));
                    parts.extend(media);
                }
                ("user", parts)
            }
        };
        if parts.is_empty() {
            continue;
        }
        // Roles must alternate: tool results and the next prompt share one user turn, in order.
        match out.last_mut() {
            Some(prev) if prev.role == Some(role) => prev.parts.extend(parts),
            _ => out.push(Content {
                role: Some(role),
                parts,
            }),
        }
    }
    out
}

/// An assistant turn's parts in their original order. Signatures are only valid for the model
/// that made them, so another provider's are dropped.
fn model_parts<'m>(blocks: &'m [Block], ours: bool, ids: &mut HashSet<&'m str>) -> Vec<Part> {
    let keep = |s: &Option<String>| if ours { s.clone() } else { None };
    blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text, signature } => {
                let thought_signature = keep(signature);
                // A signature-only empty part must be echoed; an unsigned empty one is noise.
                if text.is_empty() && thought_signature.is_none() {
                    return None;
                }
                Some(Part {
                    text: Some(text.clone()),
                    thought_signature,
                    ..Part::default()
                })
            }
            // Thought summaries are display-only, but a signed thought part is model state.
            Block::Thinking {
                text,
                signature: Some(signature),
            } if ours => Some(Part {
                text: Some(text.clone()),
                thought: true,
                thought_signature: Some(signature.clone()),
                ..Part::default()
            }),
            Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::Reasoning { .. } => {
                None
            }
            Block::ToolUse(call) => {
                let id = (ours && !call.id.starts_with(GENERATED_ID_PREFIX)).then(|| {
                    ids.insert(&call.id);
                    call.id.clone()
                });
                Some(Part {
                    function_call: Some(FunctionCall {
                        id,
                        name: call.name.clone(),
                        args: call.input.clone(),
                    }),
                    thought_signature: keep(&call.signature),
                    ..Part::default()
                })
            }
        })
        .collect()
}

/// `response` must be an object; `output` and `error` are the keys the API documents.
fn response_part(result: &ToolResult, gemini_ids: &HashSet<&str>) -> Part {
    let key = if result.is_error { "error" } else { "output" };
    let mut response = serde_json::Map::new();
    response.insert(key.to_owned(), Value::String(result.content.clone()));
    Part {
        function_response: Some(FunctionResponse {
            id: gemini_ids
                .contains(result.tool_use_id.as_str())
                .then(|| result.tool_use_id.clone()),
            name: result.name.clone(),
            response: Value::Object(response),
        }),
        ..Part::default()
    }
}
