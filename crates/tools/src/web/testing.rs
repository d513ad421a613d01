//! A real HTTP server on 127.0.0.1 for the web tools' tests: one thread per connection, every
//! reply `connection: close`, each request's head recorded.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the server answers one request.
#[derive(Clone)]
pub(crate) enum Reply {
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Headers, then body bytes until the client hangs up (at most 30 s).
    Endless,
    /// Headers, then silence for up to 10 s.
    Stall,
}

impl Reply {
    pub(crate) fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::status(200, content_type, body)
    }

    pub(crate) fn status(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Full {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub(crate) fn redirect(location: &str) -> Reply {
        Reply::Full {
            status: 302,
            headers: vec![("location".into(), location.into())],
            body: Vec::new(),
        }
    }
}

type Handler = dyn Fn(&str) -> Reply + Send + Sync;

pub(crate) struct Server {
    pub(crate) base: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Serves `handler(request target)` for every request.
    pub(crate) fn start(handler: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            // Bounded, so a leftover server cannot serve forever.
            for stream in listener.incoming().take(100).flatten() {
                let (handler, seen) = (Arc::clone(&handler), Arc::clone(&seen));
                std::thread::spawn(move || serve(stream, &*handler, &seen));
            }
        });
        Server { base, requests }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Each request's head (request line and headers), in arrival order.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, handler: &Handler, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let target = head.split(' ').nth(1).unwrap_or("").to_owned();
    seen.lock().unwrap().push(head);
    let mut stream = stream;
    let reply = handler(&target);
    let _ = match reply {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut out = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
            for (name, value) in headers {
                out.push_str(&format!("{name}: {value}\r\n"));
            }
            out.push_str("connection: close\r\n\r\n");
            stream
                .write_all(out.as_bytes())
                .and_then(|()| stream.write_all(&body))
        }
        Reply::Endless => endless(&mut stream),
        Reply::Stall => stream
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\nab",
            )
            .map(|()| stall(&stream)),
    };
}

fn endless(stream: &mut TcpStream) -> std::io::Result<()> {
    stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n",
    )?;
    let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, "y".repeat(16 * 1024));
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        stream.write_all(chunk.as_bytes())?;
    }
    Ok(())
}

/// Waits for the client to hang up (or 10 s), sending nothing.
fn stall(stream: &TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = std::io::Read::read(&mut &*stream, &mut [0; 1]);
}
