//! One tool of an MCP server, offered to the model like a built-in: `tools/call` raced against
//! the call's timeout and cancellation, and the result's content turned into text.
//!
//! A call the model no longer waits for is cancelled on the server too
//! (`notifications/cancelled`), whichever way it was abandoned — a timeout seen here, or the
//! pipeline dropping the call — so the server can stop the work.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ContentBlock, RequestId, ResourceContents, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::{Map, Value, json};

use super::server::Link;
use crate::{Class, Tool, ToolContext, ToolError, ToolSpec};

pub(crate) struct McpTool {
    spec: ToolSpec,
    /// The name the server knows the tool by (the spec's name was made safe for providers).
    original: String,
    link: Arc<Link>,
}

impl McpTool {
    pub(crate) fn new(link: Arc<Link>, name: String, tool: rmcp::model::Tool) -> McpTool {
        let description = match tool.description.as_deref().map(str::trim) {
            Some(d) if !d.is_empty() => d.to_owned(),
            _ => format!("Tool {} of the MCP server {}.", tool.name, link.name),
        };
        // Only a server's explicit promise that the tool changes nothing lets it run in parallel.
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        McpTool {
            spec: ToolSpec {
                name,
                description,
                input_schema: object_schema(Map::clone(&tool.input_schema)),
                class: if read_only {
                    Class::Safe
                } else {
                    Class::Mutating
                },
            },
            original: tool.name.into_owned(),
            link,
        }
    }
}

/// Providers require an object schema at the top: a missing `type` is filled in, anything else
/// that is not an object schema becomes "any object".
fn object_schema(mut schema: Map<String, Value>) -> Value {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Value::Object(schema),
        None => {
            schema.insert("type".into(), json!("object"));
            Value::Object(schema)
        }
        Some(other) => {
            tracing::warn!("MCP tool input schema of type {other} replaced by an object schema");
            json!({"type": "object"})
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn origin(&self) -> String {
        format!("mcp {}", self.link.name)
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let arguments = match input {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let params = CallToolRequestParams::new(self.original.clone()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = match self
            .link
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Err(self.transport_failure(e).await),
        };
        // Until the answer is in, leaving this function cancels the call on the server.
        let mut abandoned = Abandoned {
            peer: self.link.peer.clone(),
            id: Some(handle.id.clone()),
            reason: "abandoned",
        };
        let answer = tokio::select! {
            answer = &mut handle.rx => answer,
            () = tokio::time::sleep(ctx.timeout) => {
                abandoned.reason = "timed out";
                return Err(ToolError::TimedOut(format!(
                    "timed out after {:.1}s; the MCP server {} was told to cancel the call",
                    ctx.timeout.as_secs_f64(),
                    self.link.name
                )));
            }
            () = ctx.cancel.cancelled() => {
                abandoned.reason = "cancelled";
                return Err(ToolError::failed("the call was cancelled"));
            }
        };
        abandoned.id = None;
        match answer {
            Ok(Ok(result)) => self.result(result),
            Ok(Err(ServiceError::McpError(e))) => Err(ToolError::failed(format!(
                "MCP server {} refused the call of {}: {} (code {})",
                self.link.name, self.original, e.message, e.code.0
            ))),
            Ok(Err(e)) => Err(self.transport_failure(e).await),
            // The connection ended with the call outstanding.
            Err(_) => Err(self.transport_failure(ServiceError::TransportClosed).await),
        }
    }
}

impl McpTool {
    fn result(&self, answer: ServerResult) -> Result<String, ToolError> {
        // The result is decoded without knowing which request it answers; an empty or unusual
        // one may have been taken for another kind.
        let result = match answer {
            ServerResult::CallToolResult(r) => r,
            other => serde_json::to_value(&other)
                .and_then(serde_json::from_value::<CallToolResult>)
                .map_err(|_| {
                    ToolError::failed(format!(
                        "MCP server {} answered the call of {} with something that is not a \
                         tool result",
                        self.link.name, self.original
                    ))
                })?,
        };
        let text = render(&result);
        if result.is_error == Some(true) {
            return Err(ToolError::Failed(if text.is_empty() {
                format!("{} reported an error without a message", self.original)
            } else {
                text
            }));
        }
        Ok(text)
    }

    async fn transport_failure(&self, e: ServiceError) -> ToolError {
        tracing::debug!("MCP call of {} failed: {e}", self.spec.name);
        ToolError::Failed(self.link.gone(&self.original).await)
    }
}

/// Sends `notifications/cancelled` for a call left before its answer came: on a timeout, or
/// when the pipeline drops the call. Sent from a task of its own, so that a server that stopped
/// reading its stdin cannot hold the call up.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    reason: &'static str,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let params = CancelledNotificationParam::new(Some(id), Some(self.reason.to_owned()));
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(params).await;
        });
    }
}

/// The text the model sees: text items as they are, other kinds as short placeholders, joined
/// by newlines; structured content when there is nothing else.
pub(crate) fn render(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(render_block).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

fn render_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image: {}, {} bytes]", i.mime_type, decoded(&i.data)),
        ContentBlock::Audio(a) => format!("[audio: {}, {} bytes]", a.mime_type, decoded(&a.data)),
        ContentBlock::ResourceLink(r) => format!("[resource: {}]", r.uri),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {} bytes]",
                mime_type.as_deref().unwrap_or("binary"),
                decoded(blob)
            ),
            _ => "[resource of an unsupported kind]".to_owned(),
        },
        _ => "[content of an unsupported kind]".to_owned(),
    }
}

/// The size of base64 data once decoded, without decoding it.
fn decoded(base64: &str) -> usize {
    let len = base64.trim_end().len();
    let padding = base64
        .trim_end()
        .bytes()
        .rev()
        .take_while(|&b| b == b'=')
        .count();
    (len / 4 * 3 + (len % 4).saturating_sub(1)).saturating_sub(padding.min(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{EmbeddedResource, Resource};

    #[test]
    fn content_kinds_become_text_and_placeholders() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::audio("AAAA", "audio/wav"),
            ContentBlock::resource_link(Resource::new("file:///a.txt", "a")),
            ContentBlock::embedded_text("mem://note", "the note"),
            ContentBlock::Resource(EmbeddedResource::new(
                ResourceContents::BlobResourceContents {
                    uri: "mem://blob".into(),
                    mime_type: None,
                    blob: "AAE".into(),
                    meta: None,
                },
            )),
            ContentBlock::text("last"),
        ]);
        assert_eq!(
            render(&result),
            "first\n[image: image/png, 8 bytes]\n[audio: audio/wav, 3 bytes]\n\
             [resource: file:///a.txt]\n[resource: mem://note]\nthe note\n\
             [resource: mem://blob, binary, 2 bytes]\nlast"
        );
        let mut structured = CallToolResult::success(vec![]);
        structured.structured_content = Some(json!({"n": 1}));
        assert_eq!(render(&structured), r#"{"n":1}"#);
    }

    #[test]
    fn decoded_sizes_follow_base64_padding() {
        for (text, n) in [
            ("", 0),
            ("QQ==", 1),
            ("QUI=", 2),
            ("QUJD", 3),
            ("QQ", 1),
            ("QUI", 2),
        ] {
            assert_eq!(decoded(text), n, "{text}");
        }
    }

    #[test]
    fn schemas_are_made_object_schemas() {
        let map = |v: Value| v.as_object().unwrap().clone();
        let props = json!({"properties": {"a": {"type": "string"}}});
        assert_eq!(
            object_schema(map(props)),
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
        let kept = json!({"type": "object", "required": ["a"]});
        assert_eq!(object_schema(map(kept.clone())), kept);
        assert_eq!(
            object_schema(map(json!({"type": "string"}))),
            json!({"type": "object"})
        );
    }
}
