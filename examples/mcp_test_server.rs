//! An MCP server over stdio, built with rmcp, for rounds' end-to-end tests: every tool provokes
//! one behaviour the client must handle (a read-only answer, a slow call, an error result, a
//! crash mid-call), and flags make it misbehave at startup.
//!
//! Tools: `echo {text}` (read-only), `slow {seconds}`, `fail`, `crash` (exits with code 3
//! mid-call), `pid`, `env {name}`, `mixed` (non-text content) and `dotted.name` (a name that
//! needs sanitizing). `tools/list` answers three tools a page, so clients must follow cursors.
//!
//! Flags: `--garbage` (answers every line with non-JSON), `--hang` (never answers), `--hang-list`
//! (initializes, then never answers `tools/list`), `--exit` (exits at once with code 1),
//! `--log FILE` (appends `cancelled slow` when that call is cancelled, and `stdin closed` when
//! the client closed the connection); other arguments are ignored.
//!
//! Flags that test what a client accepts: `--huge` adds `big {bytes}` (a valid text result of
//! that size, on one line as JSON-RPC has it) and `endless {bytes}` (starts its answer, writes
//! that many bytes and never ends the line); `--many-tools N` adds N tools `gen_I` with 1 KB
//! descriptions; `--long-description N` makes `echo`'s description N bytes; `--big-schema N`
//! adds `wide`, whose input schema is about N bytes.
//!
//! Run: `cargo run --example mcp_test_server` (it then waits for JSON-RPC on stdin).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, Resource, ServerCapabilities, ServerInfo, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

const PAGE: usize = 3;

#[derive(Clone)]
struct TestServer {
    log: Option<PathBuf>,
    hang_list: bool,
    tools: Vec<Tool>,
}

fn schema(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The tools `args` ask for: the usual ones, and those of the limit-testing flags.
fn tools_for(args: &[String]) -> Vec<Tool> {
    let number = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse::<usize>().ok())
    };
    let mut all = tools();
    let bytes = || {
        schema(json!({
            "type": "object",
            "properties": {"bytes": {"type": "integer"}},
            "required": ["bytes"]
        }))
    };
    if args.iter().any(|a| a == "--huge") {
        all.push(Tool::new(
            "big",
            "A text result of that many bytes.",
            bytes(),
        ));
        all.push(Tool::new(
            "endless",
            "An answer whose line never ends.",
            bytes(),
        ));
    }
    if let Some(n) = number("--long-description") {
        all[0].description = Some("d".repeat(n).into());
    }
    if let Some(n) = number("--big-schema") {
        let wide = json!({"type": "object", "description": "w".repeat(n)});
        all.push(Tool::new("wide", "A huge schema.", schema(wide)));
    }
    if let Some(n) = number("--many-tools") {
        let empty = schema(json!({"type": "object"}));
        for i in 0..n {
            all.push(Tool::new(
                format!("gen_{i}"),
                "g".repeat(1000),
                empty.clone(),
            ));
        }
    }
    all
}

fn tools() -> Vec<Tool> {
    let text = schema(json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    }));
    let none = schema(json!({"type": "object", "properties": {}}));
    vec![
        Tool::new("echo", "Returns the text it is given.", text)
            .annotate(ToolAnnotations::new().read_only(true)),
        Tool::new(
            "slow",
            "Sleeps for the given seconds, then answers.",
            schema(json!({
                "type": "object",
                "properties": {"seconds": {"type": "number"}},
                "required": ["seconds"]
            })),
        ),
        Tool::new("fail", "Always fails.", none.clone()),
        Tool::new("crash", "Exits the server mid-call.", none.clone()),
        // No type: the client must make it an object schema.
        Tool::new("pid", "The server's process id.", Map::new()),
        Tool::new(
            "env",
            "The value of an environment variable.",
            schema(json!({"properties": {"name": {"type": "string"}}, "required": ["name"]})),
        ),
        Tool::new("mixed", "Content of several kinds.", none.clone()),
        Tool::new("dotted.name", "A name providers would refuse.", none),
    ]
}

impl TestServer {
    fn note(&self, line: &str) {
        if let Some(path) = &self.log {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path);
            if let Ok(mut file) = file {
                let _ = writeln!(file, "{line}");
            }
        }
    }
}

fn arg<'a>(params: &'a CallToolRequestParams, key: &str) -> Option<&'a Value> {
    params.arguments.as_ref().and_then(|a| a.get(key))
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp_test_server", "0.1.0"))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if self.hang_list {
            std::future::pending::<()>().await;
        }
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let all = &self.tools;
        let end = (start + PAGE).min(all.len());
        let mut page = ListToolsResult::with_all_items(all[start.min(end)..end].to_vec());
        if end < all.len() {
            page.next_cursor = Some(end.to_string());
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let text = |s: String| Ok(CallToolResult::success(vec![ContentBlock::text(s)]));
        match params.name.as_ref() {
            "echo" => text(
                arg(&params, "text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
            "slow" => {
                let secs = arg(&params, "seconds")
                    .and_then(Value::as_f64)
                    .unwrap_or(1.0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs_f64(secs.max(0.0))) => {
                        text(format!("slept {secs}s"))
                    }
                    () = context.ct.cancelled() => {
                        self.note("cancelled slow");
                        text("cancelled".into())
                    }
                }
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text(
                "it failed on purpose",
            )])),
            "crash" => {
                eprintln!("mcp_test_server: crashing on purpose");
                std::process::exit(3)
            }
            "pid" => text(std::process::id().to_string()),
            "env" => {
                let name = arg(&params, "name").and_then(Value::as_str).unwrap_or("");
                text(std::env::var(name).unwrap_or_else(|_| "(unset)".into()))
            }
            "mixed" => Ok(CallToolResult::success(vec![
                ContentBlock::text("some text"),
                ContentBlock::image("iVBORw0KGgo=", "image/png"),
                ContentBlock::resource_link(Resource::new("file:///notes.md", "notes")),
            ])),
            "dotted.name" => text("dotted".into()),
            "big" => {
                let n = arg(&params, "bytes").and_then(Value::as_u64).unwrap_or(0);
                text("b".repeat(n as usize))
            }
            "endless" => {
                let n = arg(&params, "bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
                let id = serde_json::to_string(&context.id).unwrap_or_default();
                if let Err(e) = endless_line(&id, n) {
                    eprintln!("mcp_test_server: endless: {e}");
                }
                std::future::pending::<Result<CallToolResult, ErrorData>>().await
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

/// Bypasses rmcp: writes the start of a real answer to request `id`, then `n` bytes of a line
/// that never ends.
fn endless_line(id: &str, n: usize) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    write!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
    )?;
    let chunk = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while sent < n {
        let part = &chunk[..chunk.len().min(n - sent)];
        out.write_all(part)?;
        sent += part.len();
    }
    out.flush()
}

/// Reads stdin line by line, answering each with `reply` (or nothing), until EOF.
fn misbehave(reply: Option<&str>) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if let Some(reply) = reply {
        writeln!(out, "{reply}")?;
        out.flush()?;
    }
    for line in std::io::stdin().lock().lines() {
        line?;
        if let Some(reply) = reply {
            writeln!(out, "{reply}")?;
            out.flush()?;
        }
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--exit") {
        eprintln!("mcp_test_server: exiting on purpose");
        std::process::exit(1);
    }
    if has("--hang") {
        eprintln!("mcp_test_server: hanging on purpose");
        return misbehave(None);
    }
    if has("--garbage") {
        eprintln!("mcp_test_server: talking nonsense on purpose");
        return misbehave(Some("this is not JSON"));
    }
    let log = args
        .iter()
        .position(|a| a == "--log")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let hang_list = has("--hang-list");
    let tools = tools_for(&args);
    let server = TestServer {
        log,
        hang_list,
        tools,
    };
    let service = server.clone().serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    server.note("stdin closed");
    Ok(())
}
