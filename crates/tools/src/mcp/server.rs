//! One MCP server process: started under rounds' supervisor (so its whole tree ends with rounds,
//! even when rounds is SIGKILLed), connected with rmcp over its stdin and stdout, and stopped.
//!
//! What a server says outside the protocol is kept for error messages: the tail of its stderr
//! (drained all the time, so a chatty server never blocks on a full pipe) and the first lines on
//! stdout that are not JSON (rmcp skips those silently, like the other SDKs; a server that prints
//! only such lines would otherwise just look hung).
//!
//! A line longer than the limit (`limits::max_line`) is not read to its end: rounds stops
//! reading, the connection ends, the pending calls get error results, and the server is dropped
//! (its tree ended); its later calls fail at once, saying why.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientInfo, Implementation, PaginatedRequestParams};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceExt};
use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

use super::McpError;
use super::limits::{self, MAX_TOOLS};
use super::spec::ServerSpec;
use crate::process;
use crate::process::ProcessContext;

/// How long a server may take to exit by itself once its stdin is closed.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// Bytes of stderr kept; error messages show the last lines of it.
const STDERR_KEPT: usize = 8 * 1024;
/// Lines of stderr shown in an error message.
const STDERR_SHOWN: usize = 12;
/// Non-JSON stdout lines kept, and how much of each.
const NOISE_KEPT: usize = 3;
const NOISE_LINE: usize = 200;

/// The connection to a running server, shared by its tools.
pub(crate) struct Link {
    pub(crate) name: String,
    pub(crate) peer: Peer<RoleClient>,
    /// The supervisor; taken out at shutdown.
    child: tokio::sync::Mutex<Option<Child>>,
    diag: Arc<Diagnostics>,
}

impl Link {
    /// Why the server did not answer a call of `tool`: how it ended, if it did, and the end of
    /// its stderr.
    pub(crate) async fn gone(&self, tool: &str) -> String {
        let ended = {
            let mut child = self.child.lock().await;
            match child.as_mut() {
                // It broke the protocol's limits: whatever it does now, it is not heard again.
                Some(child) if self.diag.oversized() => {
                    if let Ok(None) = child.try_wait() {
                        process::terminate(child).await;
                    }
                    "was dropped".to_owned()
                }
                // The pipe closes a moment before the supervisor has reaped the server.
                Some(child) => {
                    match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
                        Ok(Ok(status)) => describe(status),
                        _ => "closed the connection".to_owned(),
                    }
                }
                None => "was shut down".to_owned(),
            }
        };
        format!(
            "MCP server {} {ended}; the call of {tool} got no answer{}",
            self.name,
            self.diag.context()
        )
    }
}

/// A started server and its connection.
pub(crate) struct Running {
    pub(crate) link: Arc<Link>,
    service: RunningService<RoleClient, ClientInfo>,
}

impl Running {
    /// Closes the connection (EOF on its stdin is how MCP asks a stdio server to exit), gives
    /// the server `EXIT_GRACE` to do so, then ends the tree through the supervisor.
    pub(crate) async fn shutdown(self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.service.cancel()).await;
        if let Some(mut child) = self.link.child.lock().await.take() {
            // The supervisor exits only once the whole tree is gone.
            if tokio::time::timeout(EXIT_GRACE, child.wait())
                .await
                .is_err()
            {
                process::terminate(&mut child).await;
            }
        }
    }

    /// Best effort without awaiting: asks a still-running supervisor to end the tree.
    pub(crate) fn signal_stop(&self) {
        let Ok(mut child) = self.link.child.try_lock() else {
            return;
        };
        if let Some(child) = child.as_mut() {
            // Not yet reaped, so the pid is still the supervisor's.
            if let (Ok(None), Some(pid)) = (child.try_wait(), child.id())
                && let Some(pid) = Pid::from_raw(pid as i32)
            {
                let _ = kill_process(pid, Signal::TERM);
            }
        }
    }
}

/// A server process that has not yet been connected.
pub(crate) struct Spawned {
    spec: ServerSpec,
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    diag: Arc<Diagnostics>,
    stderr: JoinHandle<()>,
}

impl Spawned {
    /// Ends a server that will not be connected.
    pub(crate) async fn abort(mut self) {
        process::terminate(&mut self.child).await;
    }
}

/// Starts the server under the supervisor with the tool environment plus the server's own, in
/// the run's sandbox (with the network only if its entry asks for it).
/// Runs on the caller's thread: the supervisor's parent-death signal is tied to that thread.
pub(crate) fn spawn(spec: ServerSpec, processes: &ProcessContext<'_>) -> Result<Spawned, McpError> {
    let mut env: Vec<(OsString, OsString)> = processes
        .env
        .iter()
        .filter(|(k, _)| !spec.env.iter().any(|(own, _)| k == own.as_str()))
        .cloned()
        .collect();
    env.extend(spec.env.iter().map(|(k, v)| (k.into(), v.into())));
    let argv: Vec<OsString> = spec.argv.iter().map(OsString::from).collect();
    let failed = |what: String| McpError::Server {
        name: spec.name.clone(),
        what,
    };
    let sandbox = processes.sandbox.with_network(spec.network);
    let mut child = process::spawn_server(&argv, &env, processes.cwd, &sandbox)
        .map_err(|e| failed(format!("cannot start {:?}: {e}", spec.argv[0])))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(failed("its pipes were not set up".into()));
    };
    let diag = Arc::new(Diagnostics::default());
    let stderr = tokio::spawn(drain(stderr, spec.name.clone(), diag.clone()));
    Ok(Spawned {
        spec,
        child,
        stdin,
        stdout,
        diag,
        stderr,
    })
}

/// Why the handshake with a server failed.
#[derive(Debug, thiserror::Error)]
enum Handshake {
    #[error("initialize failed: {0}")]
    Initialize(#[source] Box<rmcp::service::ClientInitializeError>),
    #[error("tools/list failed: {0}")]
    ListTools(#[source] rmcp::ServiceError),
}

type Service = RunningService<RoleClient, ClientInfo>;

/// Initializes the connection and lists the server's tools within `limit`; on any failure the
/// server's tree is ended and the error says what happened.
pub(crate) async fn connect(
    spawned: Spawned,
    limit: Duration,
    max_line: usize,
) -> Result<(Running, Vec<rmcp::model::Tool>), McpError> {
    let Spawned {
        spec,
        mut child,
        stdin,
        stdout,
        diag,
        stderr,
    } = spawned;
    let transport = (Watch::new(stdout, diag.clone(), max_line), stdin);
    let initialized = AtomicBool::new(false);
    let stage = || {
        if initialized.load(Ordering::Relaxed) {
            "did not finish tools/list"
        } else {
            "did not answer initialize"
        }
    };
    let (what, wait_for_exit) = tokio::select! {
        r = tokio::time::timeout(limit, handshake(transport, &spec.name, &initialized)) => match r {
            Ok(Ok((service, tools))) => {
                let link = Arc::new(Link {
                    name: spec.name,
                    peer: service.peer().clone(),
                    child: tokio::sync::Mutex::new(Some(child)),
                    diag,
                });
                return Ok((Running { link, service }, tools));
            }
            Ok(Err(e)) => (e.to_string(), Duration::from_millis(500)),
            Err(_) => (format!("{} within {}s", stage(), limit.as_secs_f64()), Duration::ZERO),
        },
        status = child.wait() => match status {
            Ok(status) => (format!("{} during startup", describe(status)), Duration::ZERO),
            Err(e) => (format!("cannot wait for it: {e}"), Duration::ZERO),
        },
    };
    // When rmcp failed, the server may have died first: its exit says more than rmcp's view of
    // a dead pipe. Not after a timeout: dropping the handshake closed the server's stdin, and
    // an exit that follows is our doing, not the reason.
    let what = if wait_for_exit.is_zero() {
        what
    } else {
        match tokio::time::timeout(wait_for_exit, child.wait()).await {
            Ok(Ok(status)) => format!("{} during startup", describe(status)),
            _ => what,
        }
    };
    process::terminate(&mut child).await;
    // The tree is gone, so stderr reaches EOF; wait for its last words.
    let _ = tokio::time::timeout(Duration::from_millis(500), stderr).await;
    Err(McpError::Server {
        name: spec.name,
        what: format!("{what}{}", diag.context()),
    })
}

/// `initialize`, then (if the server has tools) `tools/list`; `initialized` says how far it got.
async fn handshake(
    transport: (Watch<ChildStdout>, ChildStdin),
    name: &str,
    initialized: &AtomicBool,
) -> Result<(Service, Vec<rmcp::model::Tool>), Handshake> {
    let info = ClientInfo::new(
        ClientCapabilities::default(),
        Implementation::new("rounds", env!("CARGO_PKG_VERSION")),
    );
    let service = info
        .serve(transport)
        .await
        .map_err(|e| Handshake::Initialize(Box::new(e)))?;
    initialized.store(true, Ordering::Relaxed);
    // A server without the tools capability has none to list (and may refuse the request).
    let has_tools = service
        .peer_info()
        .is_some_and(|i| i.capabilities.tools.is_some());
    let tools = if has_tools {
        list_tools(service.peer())
            .await
            .map(|(tools, more)| limits::vet(name, tools, more))
            .map_err(Handshake::ListTools)?
    } else {
        Vec::new()
    };
    Ok((service, tools))
}

/// The server's tools, page by page, up to a page past `MAX_TOOLS`; `true` when it had more.
async fn list_tools(
    peer: &Peer<RoleClient>,
) -> Result<(Vec<rmcp::model::Tool>, bool), rmcp::ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    // Each page should bring at least one tool: so many pages are enough for all of them.
    for _ in 0..=MAX_TOOLS {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() || tools.len() > MAX_TOOLS {
            break;
        }
    }
    Ok((tools, cursor.is_some()))
}

/// How the supervisor ended: with the server's exit code, or 128+N for signal N.
fn describe(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => "was killed by a signal".to_owned(),
    }
}

async fn drain(mut stderr: tokio::process::ChildStderr, name: String, diag: Arc<Diagnostics>) {
    let mut buf = vec![0u8; 4096];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let chunk = &buf[..n];
                tracing::debug!(
                    "MCP server {name} stderr: {}",
                    String::from_utf8_lossy(chunk).trim_end()
                );
                diag.stderr(chunk);
            }
        }
    }
}

/// What a server said outside the protocol.
#[derive(Default)]
struct Diagnostics {
    stderr: Mutex<VecDeque<u8>>,
    noise: Mutex<Vec<String>>,
    /// The line limit, once the server has sent a longer line (0: it has not).
    oversized: AtomicUsize,
}

impl Diagnostics {
    fn oversized(&self) -> bool {
        self.oversized.load(Ordering::Relaxed) > 0
    }

    fn stderr(&self, bytes: &[u8]) {
        let mut tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend(bytes);
        let excess = tail.len().saturating_sub(STDERR_KEPT);
        tail.drain(..excess);
    }

    fn noise(&self, line: &[u8]) {
        let mut noise = self.noise.lock().unwrap_or_else(|e| e.into_inner());
        let line = String::from_utf8_lossy(line);
        if noise.len() < NOISE_KEPT && !noise.iter().any(|seen| *seen == line) {
            noise.push(line.into_owned());
        }
    }

    /// `; it sent a line longer than …; it wrote non-JSON to stdout: …; stderr: …`, each part
    /// only when there is something.
    fn context(&self) -> String {
        let mut out = String::new();
        let limit = self.oversized.load(Ordering::Relaxed);
        if limit > 0 {
            out.push_str(&format!(
                "; it sent a message longer than {limit} bytes (one line of JSON-RPC), more than \
                 rounds reads"
            ));
        }
        let noise = self.noise.lock().unwrap_or_else(|e| e.into_inner());
        if !noise.is_empty() {
            out.push_str(&format!("; it wrote non-JSON to stdout: {noise:?}"));
        }
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = tail.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        let lines: Vec<&str> = text.trim().lines().collect();
        if !lines.is_empty() {
            let shown = &lines[lines.len().saturating_sub(STDERR_SHOWN)..];
            out.push_str(&format!("; stderr: {}", shown.join("\n")));
        }
        out
    }
}

/// The server's stdout as rmcp reads it, watched for lines that cannot be protocol messages
/// and for lines longer than the limit: rmcp reads a line with no maximum, so past the limit
/// this reader fails instead, which ends the connection before the line is held in memory.
struct Watch<R> {
    inner: R,
    diag: Arc<Diagnostics>,
    /// The beginning of the current line: enough to tell JSON from prose.
    head: Vec<u8>,
    /// Bytes of the current line so far, and the most a line may have.
    line: usize,
    max_line: usize,
}

impl<R> Watch<R> {
    fn new(inner: R, diag: Arc<Diagnostics>, max_line: usize) -> Watch<R> {
        Watch {
            inner,
            diag,
            head: Vec::new(),
            line: 0,
            max_line,
        }
    }

    /// Looks at bytes just read; `false` once a line is longer than the limit.
    fn scan(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            let end = memchr::memchr(b'\n', bytes);
            let part = &bytes[..end.unwrap_or(bytes.len())];
            self.line += part.len();
            if self.line > self.max_line {
                self.diag.oversized.store(self.max_line, Ordering::Relaxed);
                return false;
            }
            let room = NOISE_LINE.saturating_sub(self.head.len());
            self.head.extend_from_slice(&part[..part.len().min(room)]);
            match end {
                Some(i) => {
                    self.end_line();
                    self.line = 0;
                    bytes = &bytes[i + 1..];
                }
                None => break,
            }
        }
        true
    }

    fn end_line(&mut self) {
        let line = self.head.trim_ascii();
        let line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        if !line.is_empty() && !line.starts_with(b"{") && !line.starts_with(b"[") {
            self.diag.noise(line);
        }
        self.head.clear();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watch<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let too_long = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the server sent a line longer than the limit",
            )
        };
        if this.diag.oversized() {
            return Poll::Ready(Err(too_long()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled
            && !this.scan(&buf.filled()[before..])
        {
            return Poll::Ready(Err(too_long()));
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdout_noise_is_told_from_json_across_read_boundaries() {
        let diag = Arc::new(Diagnostics::default());
        let mut w = Watch::new((), diag.clone(), 4096);
        w.scan(b"{\"jsonrpc\":\"2.0\"}\n  \nStarting ser");
        w.scan(b"ver v1\r\n\xef\xbb\xbf[1]\nStarting server v1\n");
        w.scan(&[b'x'; 1000]);
        w.scan(b"\n  {\"id\":1}\n");
        let noise = || diag.noise.lock().unwrap().clone();
        assert_eq!(
            noise(),
            ["Starting server v1".to_owned(), "x".repeat(NOISE_LINE)]
        );
        w.scan(b"third\nfourth\n");
        assert_eq!(noise().len(), NOISE_KEPT);
        assert_eq!(noise()[2], "third");
    }

    #[test]
    fn a_line_longer_than_the_limit_stops_the_reading() {
        let diag = Arc::new(Diagnostics::default());
        let mut w = Watch::new((), diag.clone(), 10);
        // The control: lines up to the limit, however they are split across reads.
        assert!(w.scan(b"0123456789\n01234"));
        assert!(w.scan(b"56789\n\n0123456789"));
        assert!(!diag.oversized());
        assert!(!w.scan(b"0"), "one byte more");
        assert!(diag.oversized());
        assert!(
            diag.context()
                .starts_with("; it sent a message longer than 10 bytes"),
            "{}",
            diag.context()
        );
    }

    #[test]
    fn the_context_shows_the_last_lines_of_stderr() {
        let diag = Diagnostics::default();
        assert_eq!(diag.context(), "");
        for i in 0..2000 {
            diag.stderr(format!("line {i}\n").as_bytes());
        }
        assert!(diag.stderr.lock().unwrap().len() <= STDERR_KEPT);
        let context = diag.context();
        assert!(context.starts_with("; stderr: line 1988\n"), "{context}");
        assert!(context.ends_with("line 1999"), "{context}");
        diag.noise(b"hello");
        assert!(
            diag.context()
                .starts_with("; it wrote non-JSON to stdout: [\"hello\"]; stderr: ")
        );
    }
}
