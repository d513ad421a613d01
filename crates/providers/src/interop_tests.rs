//! The request bodies of every wire × case of [`crate::wire_cases`], written out for
//! `scripts/interop/validate.py` to check against the official SDKs' request types (Anthropic's
//! and OpenAI's TypedDicts, google-genai's models, botocore's Converse shape). Each wire's
//! `request_tests` pin the bytes its builder makes; this checks those bytes are what the API
//! accepts, so a hand-typed wire struct cannot drift from the API unnoticed. It writes only when
//! `ROUNDS_INTEROP_OUT` names a directory (`.ci/run` sets it) and otherwise returns at once, so
//! `cargo test` stays offline and fast.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use crate::openai::{Flavor, OpenAi};
use crate::wire_cases::cases;
use crate::{Options, Provider, Request, anthropic, gemini, openai_responses};

#[test]
fn dump_every_wire_body_for_the_sdk_checks() {
    let Some(dir) = std::env::var_os("ROUNDS_INTEROP_OUT") else {
        return;
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).unwrap();
    // Writes `WIRE__VARIANT__CASE.json` for each case, as `build` makes its body.
    let dump =
        |wire: &str, variant: &str, own: &str, build: &dyn Fn(&Request, &Options) -> String| {
            for case in cases(own) {
                let body = case.with_request(|r| build(r, &case.options));
                let name = format!("{wire}__{variant}__{}.json", case.name);
                std::fs::write(dir.join(name), body).unwrap();
            }
        };

    let claude = anthropic::Host::Anthropic {
        model: "claude-sonnet-4-5",
    };
    for (variant, host, own) in [
        ("anthropic", claude, "anthropic"),
        ("vertex", anthropic::Host::Vertex, "vertex"),
    ] {
        dump("anthropic", variant, own, &|r, o| {
            to_json(&anthropic::build_body(host, own, r, o))
        });
    }
    // Chat's builder is private to `openai`; its provider posts exactly what the builder makes,
    // so the bodies are caught from the provider, posting to a listener here.
    let (url, posted) = listen();
    let client = crate::net::builder(Duration::from_secs(5))
        .no_proxy()
        .build()
        .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (variant, flavor, model) in [
        ("openai", Flavor::OpenAi, "gpt-4.1"),
        ("compatible", Flavor::Compatible, "qwen3"),
    ] {
        dump("openai", variant, "openai", &|r, o| {
            let provider = OpenAi::new(crate::endpoint::Endpoint {
                name: "openai",
                flavor,
                local: false,
                client: client.clone(),
                url: url.clone(),
                key: None,
                credentials: None,
                headers: reqwest::header::HeaderMap::new(),
                model: model.into(),
                idle: Duration::from_secs(30),
                options: *o,
            });
            let answer = runtime.block_on(provider.stream(r));
            assert!(answer.is_err(), "the listener answers 418");
            posted.recv_timeout(Duration::from_secs(5)).unwrap()
        });
    }
    for (variant, model, name, flavor) in [
        ("reasoning", "o3", "openai", Flavor::OpenAi),
        ("chat_model", "gpt-4.1", "openai-responses", Flavor::OpenAi),
        ("compatible", "local", "local", Flavor::Compatible),
    ] {
        dump("openai_responses", variant, "openai", &|r, o| {
            to_json(&openai_responses::build_request(model, name, flavor, r, o))
        });
    }
    for (variant, model, own) in [
        ("gemini_2_5", "gemini-2.5-flash", "gemini"),
        ("gemini_3", "gemini-3-pro-preview", "gemini"),
        ("vertex", "gemini-2.5-pro", "vertex"),
    ] {
        dump("gemini", variant, own, &|r, o| {
            to_json(&gemini::build_body(model, own, r, o))
        });
    }
    #[cfg(feature = "bedrock")]
    for (variant, model) in [
        ("claude", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("nova", "amazon.nova-pro-v1:0"),
        ("other", "meta.llama3-70b-instruct-v1:0"),
    ] {
        dump("bedrock", variant, "bedrock", &|r, o| {
            to_json(&crate::bedrock::build_request(model, "bedrock", r, o))
        });
    }
}

fn to_json(body: &impl serde::Serialize) -> String {
    serde_json::to_string(body).unwrap()
}

/// A listener on 127.0.0.1 that sends the body of each request it gets down the channel and
/// answers 418.
fn listen() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/chat", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(&stream);
            let (mut line, mut length) = (String::new(), 0);
            while line != "\r\n" {
                line.clear();
                reader.read_line(&mut line).unwrap();
                if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = n.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let _ = stream.write_all(b"HTTP/1.1 418 I'm a teapot\r\ncontent-length: 0\r\n\r\n");
            if tx.send(String::from_utf8(body).unwrap()).is_err() {
                return;
            }
        }
    });
    (url, rx)
}
