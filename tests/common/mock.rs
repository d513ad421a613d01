//! A scripted model provider: a real HTTP/1.1 server on 127.0.0.1:0 that answers the Nth request
//! with the Nth scripted reply, writes each body step as its own HTTP chunk (so tests control
//! the network boundaries the client sees), and records every request.
//!
//! Plain threads and std sockets, so it works from tests and benchmarks alike without a runtime.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One step of a reply body.
#[derive(Clone, Debug)]
pub enum Step {
    /// Written as one HTTP chunk, then flushed.
    Bytes(Vec<u8>),
    /// Pause before the next step.
    Sleep(Duration),
    /// Wait until a file exists (lets a test hold a stream open until something happened).
    WaitFor(std::path::PathBuf, Duration),
    /// Drop the connection without finishing the body (a reset mid-stream).
    Reset,
}

#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<Step>,
}

impl Reply {
    /// An SSE reply whose events are written one chunk each.
    pub fn sse(events: Vec<String>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: events
                .into_iter()
                .map(|e| Step::Bytes(e.into_bytes()))
                .collect(),
        }
    }

    /// An SSE reply from raw bytes written in `chunk`-byte pieces.
    pub fn sse_bytes(bytes: &[u8], chunk: usize) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: bytes
                .chunks(chunk.max(1))
                .map(|c| Step::Bytes(c.to_vec()))
                .collect(),
        }
    }

    /// A server that accepted the connection and read the request, then sends nothing at all
    /// (no status line, no headers) for `d`, and drops the connection.
    pub fn silent(d: Duration) -> Reply {
        Reply {
            status: SILENT,
            headers: vec![],
            body: vec![Step::Sleep(d), Step::Reset],
        }
    }

    /// A JSON error reply.
    pub fn error(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![Step::Bytes(body.as_bytes().to_vec())],
        }
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// When the request had been read completely.
    pub received: std::time::Instant,
    /// When the reply had been written completely (`None` while it is being written).
    pub replied: Option<std::time::Instant>,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct MockServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    waits: Arc<Mutex<Vec<bool>>>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
}

/// Where replies come from: a script in order, or a function of the request (a simulator).
enum Source {
    Script(std::vec::IntoIter<Reply>),
    Respond(Box<dyn FnMut(&Recorded) -> Reply + Send>),
}

impl Source {
    fn reply(&mut self, request: &Recorded) -> Reply {
        let scripted = match self {
            Source::Script(replies) => replies.next(),
            Source::Respond(respond) => Some(respond(request)),
        };
        scripted.unwrap_or_else(|| {
            Reply::error(
                599,
                r#"{"error":{"message":"the mock has no more scripted replies"}}"#,
            )
        })
    }
}

impl MockServer {
    /// Starts serving `replies` in order; requests beyond the script get a 599 saying so.
    pub fn start(replies: Vec<Reply>) -> MockServer {
        MockServer::serve(Source::Script(replies.into_iter()))
    }

    /// Starts answering each request with `respond(request)`.
    pub fn respond(respond: impl FnMut(&Recorded) -> Reply + Send + 'static) -> MockServer {
        MockServer::serve(Source::Respond(Box::new(respond)))
    }

    fn serve(source: Source) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let waits = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(source));
        let (recorded, waited) = (requests.clone(), waits.clone());
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let accepted = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (recorded, waited, script) = (recorded.clone(), waited.clone(), script.clone());
                std::thread::spawn(move || serve(stream, &recorded, &waited, &script));
            }
        });
        MockServer {
            addr,
            requests,
            waits,
            connections,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// How many TCP connections clients opened.
    pub fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// For each `WaitFor` step served so far: whether its file appeared before the limit.
    pub fn waits(&self) -> Vec<bool> {
        self.waits.lock().unwrap().clone()
    }
}

fn serve(
    stream: TcpStream,
    recorded: &Mutex<Vec<Recorded>>,
    waited: &Mutex<Vec<bool>>,
    script: &Mutex<Source>,
) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut writer = stream;
    loop {
        let Some(request) = read_request(&mut reader) else {
            return;
        };
        let reply = script.lock().unwrap().reply(&request);
        let index = {
            let mut all = recorded.lock().unwrap();
            all.push(request);
            all.len() - 1
        };
        let (body_sent, finished) = write_reply(&mut writer, &reply, waited);
        recorded.lock().unwrap()[index].replied = body_sent;
        if finished.is_err() {
            return;
        }
    }
}

/// One HTTP/1.1 request off the connection (`None` when it closed), as every loopback server of
/// the tests reads them.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        received: std::time::Instant::now(),
        replied: None,
        method,
        path,
        headers,
        body,
    })
}

/// Writes a reply; returns when its last body step went out (the client may hang up before the
/// chunked terminator, which is then the error) and whether the whole reply was written.
fn write_reply(
    w: &mut TcpStream,
    reply: &Reply,
    waited: &Mutex<Vec<bool>>,
) -> (Option<std::time::Instant>, std::io::Result<()>) {
    match write_body(w, reply, waited) {
        Ok(()) => {
            let sent = std::time::Instant::now();
            let end = w.write_all(b"0\r\n\r\n").and_then(|()| w.flush());
            (Some(sent), end)
        }
        Err(e) => (None, Err(e)),
    }
}

/// The status of [`Reply::silent`]: no head is written.
const SILENT: u16 = 0;

fn write_body(w: &mut TcpStream, reply: &Reply, waited: &Mutex<Vec<bool>>) -> std::io::Result<()> {
    let silent = reply.status == SILENT;
    let mut head = format!(
        "HTTP/1.1 {} Mock\r\ntransfer-encoding: chunked\r\n",
        reply.status
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    if !silent {
        w.write_all(head.as_bytes())?;
        w.flush()?;
    }
    for step in &reply.body {
        match step {
            Step::Bytes(b) if b.is_empty() => {}
            Step::Bytes(b) => {
                w.write_all(format!("{:x}\r\n", b.len()).as_bytes())?;
                w.write_all(b)?;
                w.write_all(b"\r\n")?;
                w.flush()?;
            }
            Step::Sleep(d) => std::thread::sleep(*d),
            Step::WaitFor(path, limit) => {
                let deadline = std::time::Instant::now() + *limit;
                while !path.exists() && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                waited.lock().unwrap().push(path.exists());
            }
            Step::Reset => {
                let _ = w.shutdown(std::net::Shutdown::Both);
                return Err(std::io::ErrorKind::ConnectionReset.into());
            }
        }
    }
    Ok(())
}
