//! An MCP server over stdio for rounds' end-to-end tests: every tool provokes one behaviour the
//! client must handle (a read-only answer, a slow call, an error result, a crash mid-call), and
//! flags make it misbehave at startup.
//!
//! It speaks newline-delimited JSON-RPC 2.0 by hand (MCP's stdio transport) rather than through
//! an SDK, for two reasons: it is strict where SDK servers are lenient (a request before the
//! `initialize` / `notifications/initialized` handshake, a missing `jsonrpc: "2.0"` or a
//! malformed line is answered with an error the tests see), and it keeps the benchmark honest:
//! a dev-dependency that turns on extra features of one of rounds' own dependencies gives
//! `cargo bench` a differently built binary from the one `cargo build --release` ships.
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
//! Run: `cargo run --example mcp_test_server` (it then waits for JSON-RPC on stdin).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const PAGE: usize = 3;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const PARSE_ERROR: i64 = -32700;

fn tools() -> Vec<Value> {
    let text = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    });
    let none = json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str, schema: &Value| json!({"name": name, "description": description, "inputSchema": schema});
    let mut echo = tool("echo", "Returns the text it is given.", &text);
    echo["annotations"] = json!({"readOnlyHint": true});
    let seconds = json!({
        "type": "object",
        "properties": {"seconds": {"type": "number"}},
        "required": ["seconds"]
    });
    let name = json!({"properties": {"name": {"type": "string"}}, "required": ["name"]});
    vec![
        echo,
        tool(
            "slow",
            "Sleeps for the given seconds, then answers.",
            &seconds,
        ),
        tool("fail", "Always fails.", &none),
        tool("crash", "Exits the server mid-call.", &none),
        // No type: the client must make it an object schema.
        tool("pid", "The server's process id.", &json!({})),
        tool("env", "The value of an environment variable.", &name),
        tool("mixed", "Content of several kinds.", &none),
        tool("dotted.name", "A name providers would refuse.", &none),
    ]
}

fn text(s: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": s.into()}], "isError": false})
}

/// What a request gets back: a result, a JSON-RPC error, or nothing (a cancelled call).
enum Answer {
    Result(Value),
    Error(i64, String),
    Silent,
}

#[derive(Clone)]
struct Server {
    log: Option<PathBuf>,
    hang_list: bool,
    /// Calls in flight, by the JSON text of their request id, for `notifications/cancelled`.
    running: Arc<Mutex<HashMap<String, CancellationToken>>>,
}

impl Server {
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

    fn cancel(&self, id: &Value) {
        if let Ok(running) = self.running.lock()
            && let Some(token) = running.get(&id.to_string())
        {
            token.cancel();
        }
    }

    async fn list_tools(&self, params: &Value) -> Answer {
        if self.hang_list {
            std::future::pending::<()>().await;
        }
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(cursor) => match cursor.as_str().and_then(|c| c.parse::<usize>().ok()) {
                Some(start) => start,
                None => return Answer::Error(INVALID_PARAMS, format!("bad cursor {cursor}")),
            },
        };
        let all = tools();
        let end = (start + PAGE).min(all.len());
        let mut page = json!({"tools": all[start.min(end)..end]});
        if end < all.len() {
            page["nextCursor"] = json!(end.to_string());
        }
        Answer::Result(page)
    }

    async fn call_tool(&self, id: &Value, params: &Value) -> Answer {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Answer::Error(INVALID_PARAMS, "tools/call without a name".into());
        };
        let arg = |key: &str| params.get("arguments").and_then(|a| a.get(key));
        let answer = match name {
            "echo" => text(arg("text").and_then(Value::as_str).unwrap_or_default()),
            "slow" => {
                let secs = arg("seconds").and_then(Value::as_f64).unwrap_or(1.0);
                let token = CancellationToken::new();
                if let Ok(mut running) = self.running.lock() {
                    running.insert(id.to_string(), token.clone());
                }
                let sleep = tokio::time::sleep(Duration::from_secs_f64(secs.max(0.0)));
                let cancelled = tokio::select! {
                    () = sleep => false,
                    () = token.cancelled() => true,
                };
                if let Ok(mut running) = self.running.lock() {
                    running.remove(&id.to_string());
                }
                if cancelled {
                    self.note("cancelled slow");
                    // MCP: the receiver of a cancellation does not answer the request.
                    return Answer::Silent;
                }
                text(format!("slept {secs}s"))
            }
            "fail" => json!({
                "content": [{"type": "text", "text": "it failed on purpose"}],
                "isError": true
            }),
            "crash" => {
                eprintln!("mcp_test_server: crashing on purpose");
                std::process::exit(3)
            }
            "pid" => text(std::process::id().to_string()),
            "env" => {
                let name = arg("name").and_then(Value::as_str).unwrap_or("");
                text(std::env::var(name).unwrap_or_else(|_| "(unset)".into()))
            }
            "mixed" => json!({
                "content": [
                    {"type": "text", "text": "some text"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                    {"type": "resource_link", "uri": "file:///notes.md", "name": "notes"}
                ],
                "isError": false
            }),
            "dotted.name" => text("dotted"),
            other => return Answer::Error(INVALID_PARAMS, format!("no tool {other}")),
        };
        Answer::Result(answer)
    }

    async fn answer(&self, id: &Value, method: &str, params: &Value) -> Answer {
        match method {
            "ping" => Answer::Result(json!({})),
            "tools/list" => self.list_tools(params).await,
            "tools/call" => self.call_tool(id, params).await,
            other => Answer::Error(METHOD_NOT_FOUND, format!("no method {other}")),
        }
    }
}

fn reply(id: &Value, answer: Answer) -> Option<Value> {
    match answer {
        Answer::Result(result) => Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
        Answer::Error(code, message) => Some(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": code, "message": message}
        })),
        Answer::Silent => None,
    }
}

/// Where the handshake stands: requests other than `ping` are refused until the client has
/// sent `initialize` and then `notifications/initialized`, as the MCP lifecycle requires.
#[derive(PartialEq)]
enum Phase {
    New,
    Initializing,
    Ready,
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

async fn serve(server: Server) -> anyhow::Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    // One writer, so concurrent answers never interleave within a line.
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(message) = rx.recv().await {
            let mut line = message.to_string();
            line.push('\n');
            if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut phase = Phase::New;
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            let _ = tx.send(
                reply(
                    &Value::Null,
                    Answer::Error(PARSE_ERROR, format!("not JSON: {line}")),
                )
                .unwrap_or_default(),
            );
            continue;
        };
        let id = message.get("id").cloned();
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        if message.get("jsonrpc") != Some(&json!("2.0")) {
            let answer = Answer::Error(INVALID_REQUEST, "jsonrpc must be \"2.0\"".into());
            let _ = tx.send(reply(&id.unwrap_or_default(), answer).unwrap_or_default());
            continue;
        }
        let Some(id) = id else {
            match method {
                "notifications/initialized" if phase == Phase::Initializing => {
                    phase = Phase::Ready;
                }
                "notifications/cancelled" => {
                    if let Some(request) = params.get("requestId") {
                        server.cancel(request);
                    }
                }
                _ => {}
            }
            continue;
        };
        let answer = match (method, &phase) {
            ("initialize", Phase::New) => {
                phase = Phase::Initializing;
                let version = params
                    .get("protocolVersion")
                    .cloned()
                    .unwrap_or(json!("2025-06-18"));
                Some(Answer::Result(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "mcp_test_server", "version": "0.1.0"}
                })))
            }
            ("initialize", _) => Some(Answer::Error(INVALID_REQUEST, "initialized twice".into())),
            ("ping", _) | (_, Phase::Ready) => None,
            (method, _) => Some(Answer::Error(
                INVALID_REQUEST,
                format!("{method} before the initialize handshake finished"),
            )),
        };
        if let Some(answer) = answer {
            let _ = tx.send(reply(&id, answer).unwrap_or_default());
            continue;
        }
        let (server, tx, method) = (server.clone(), tx.clone(), method.to_owned());
        tokio::spawn(async move {
            if let Some(message) = reply(&id, server.answer(&id, &method, &params).await) {
                let _ = tx.send(message);
            }
        });
    }
    server.note("stdin closed");
    drop(tx);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
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
    let server = Server {
        log,
        hang_list: has("--hang-list"),
        running: Arc::default(),
    };
    serve(server).await
}
