//! `web_fetch`: lets the model read a web page or a text resource by URL.
//!
//! HTML becomes Markdown (scripts and styles dropped, links kept and made absolute) because raw
//! markup would spend most of the context on tags; other text is shown as it is; binary content is
//! only described. Every cap is stated in the output, so the model knows when it saw a part.

use std::time::Instant;

use async_trait::async_trait;
use reqwest::Url;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::typed::{BuiltinTool, SubjectOf};
use crate::policy::Subject;
use crate::web::{self, Body, Limits, Page};
use crate::{Class, ToolContext, ToolError, ToolOutput};

/// Characters of text shown per call, after conversion.
const MAX_CHARS: usize = 100_000;
/// The largest `max_bytes` the model may ask for.
const MAX_BYTES_LIMIT: usize = 10 * 1024 * 1024;

pub(crate) struct WebFetch {
    limits: Limits,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// The http:// or https:// URL to fetch.
    url: String,
    #[schemars(
        range(min = 1, max = MAX_BYTES_LIMIT),
        description = format!("Body bytes to download at most. Default {}.", web::DEFAULT_MAX_BYTES)
    )]
    max_bytes: Option<usize>,
}

impl WebFetch {
    pub(crate) fn new() -> WebFetch {
        WebFetch {
            limits: Limits::default(),
        }
    }

    /// Replaces the time limit and default byte cap (tests use short ones).
    #[cfg(test)]
    pub(crate) fn with_limits(
        mut self,
        timeout: std::time::Duration,
        max_bytes: usize,
    ) -> WebFetch {
        self.limits = Limits {
            timeout,
            max_bytes,
            ..self.limits
        };
        self
    }

    /// Lets it reach loopback, private and link-local addresses (`--web-allow-private`).
    pub(crate) fn allow_private(mut self, yes: bool) -> WebFetch {
        self.limits.allow_private = yes;
        self
    }
}

#[async_trait]
impl BuiltinTool for WebFetch {
    type Input = Args;
    const NAME: &'static str = "web_fetch";
    const CLASS: Class = Class::Safe;
    const SUBJECT: SubjectOf = SubjectOf::Url;

    /// Says the default limits whatever this instance's are (tests shorten them).
    fn description(&self) -> String {
        let limits = Limits::default();
        format!(
            "Fetch a URL with an HTTP GET (http and https only) and return its content: HTML \
             as Markdown (scripts and styles removed, links absolute), JSON, XML and other text \
             as is; binary content (images, PDFs, archives) is described, not shown. The output \
             starts with the final URL after redirects (at most {}), the HTTP status, the \
             content type and the size. At most {} KiB of the body is downloaded (max_bytes \
             changes that) and at most {MAX_CHARS} characters are shown; a cut is always \
             stated. The whole fetch must finish within {}. A status that is not 2xx is an \
             error showing the start of the body.",
            web::MAX_REDIRECTS,
            limits.max_bytes / 1024,
            web::seconds(limits.timeout),
        )
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut limits = self.limits;
        if let Some(max) = args.max_bytes {
            limits.max_bytes = max.clamp(1, MAX_BYTES_LIMIT);
        }
        let url = web::http_url(&args.url)?;
        // The time limit covers the conversion too.
        let deadline = Instant::now() + limits.timeout;
        // The allowlist judged the URL the model gave; every URL a redirect leads to must pass
        // the same rule.
        let permit = |hop: &Url| ctx.gate.permits(&Subject::Url(hop.to_string()));
        let page = web::get(url, limits, None, &permit, &ctx.cancel).await?;
        if !page.status.is_success() {
            return Err(page.status_error());
        }
        // Parsing a large page takes a while; keep it off the async workers.
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || render(&page, deadline, &cancel))
            .await
            .map_err(|e| ToolError::failed(format!("web_fetch failed: {e}")))?
            .map(ToolOutput::from)
    }
}

fn render(page: &Page, deadline: Instant, cancel: &CancellationToken) -> Result<String, ToolError> {
    let content_type = match page.content_type.as_str() {
        "" => "(none)",
        t => t,
    };
    let mut out = format!("URL: {}\nStatus: {}\n", page.url, page.status_line());
    let (title, text, what) = match page.classify() {
        Body::Html(html) => {
            let page_text = web::html_to_markdown(html, &page.url, deadline, cancel)?;
            (
                page_text.title,
                page_text.text,
                "characters of the page as Markdown",
            )
        }
        Body::Text(text) => (String::new(), text.to_owned(), "characters"),
        Body::Binary => {
            let mime = match page.mime() {
                m if m.is_empty() => "no content type".to_owned(),
                m => m,
            };
            out.push_str(&format!(
                "Content-Type: {content_type}\nSize: {}\n\n",
                size(page)
            ));
            let more = if page.cut { "more than " } else { "" };
            let n = page.body.len();
            out.push_str(&format!(
                "binary content ({mime}, {more}{n} bytes); not shown"
            ));
            return Ok(out);
        }
    };
    if !title.is_empty() {
        out.push_str(&format!("Title: {title}\n"));
    }
    out.push_str(&format!(
        "Content-Type: {content_type}\nSize: {}\n\n",
        size(page)
    ));
    if text.trim().is_empty() {
        out.push_str("(no text content)");
        return Ok(out);
    }
    match text.char_indices().nth(MAX_CHARS) {
        None => out.push_str(&text),
        Some((end, _)) => {
            let total = text.chars().count();
            out.push_str(&text[..end]);
            out.push_str(&format!(
                "\n\n[cut: showing the first {MAX_CHARS} of {total} {what}]"
            ));
        }
    }
    if page.cut {
        out.push_str(&format!(
            "\n\n[cut: the body is longer than {} bytes (max_bytes); the rest was not \
             downloaded]",
            page.body.len()
        ));
    }
    Ok(out)
}

/// `1234 bytes`; for a cut body, how much was read and, when the server said, of how much.
fn size(page: &Page) -> String {
    let read = page.body.len();
    match (page.cut, page.length) {
        (false, _) => format!("{read} bytes"),
        (true, Some(total)) => format!("first {read} of {total} bytes"),
        (true, None) => format!("first {read} bytes (more not downloaded)"),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use std::time::Duration;

    use super::*;
    use crate::Tool;
    use crate::builtin::typed::Typed;
    use crate::web::testing::{Reply, Server};
    use crate::workspace::testing::{self, context, workspace};
    use serde_json::Value;

    async fn fetch(tool: &Typed<WebFetch>, input: Value) -> Result<String, String> {
        let (_dir, _root, ws) = workspace();
        testing::call(tool, &ws, input)
            .await
            .map_err(|e| e.to_string())
    }

    /// The test servers listen on 127.0.0.1, which only `--web-allow-private` reaches.
    fn loopback() -> WebFetch {
        WebFetch::new().allow_private(true)
    }

    async fn get(url: &str) -> Result<String, String> {
        fetch(&Typed::new(loopback()), json!({ "url": url })).await
    }

    const PAGE: &str = r#"<!DOCTYPE html>
<html><head><title>Tea &amp; Biscuits</title>
<style>body { color: red }</style>
<script>var secret = "do not show";</script></head>
<body>
<nav><a href="/">Home</a></nav>
<h1>Brewing tea</h1>
<p>Steep for <b>3&nbsp;minutes</b>. See <a href="guide.html">the guide</a>
or <a href="https://example.org/x">elsewhere</a>.</p>
<script>document.write("also hidden")</script>
<ul><li>Green</li><li>Black</li></ul>
<a href="javascript:void(0)">Click</a>
</body></html>"#;

    #[tokio::test]
    async fn html_becomes_markdown() {
        let server = Server::start(|_| Reply::ok("text/html; charset=utf-8", PAGE));
        let url = server.url("/docs/tea.html");
        let got = get(&url).await.unwrap();
        let base = &server.base;
        let want = format!(
            "URL: {url}\nStatus: 200 OK\nTitle: Tea & Biscuits\n\
             Content-Type: text/html; charset=utf-8\nSize: {} bytes\n\n\
             [Home]({base}/)\n\n# Brewing tea\n\n\
             Steep for **3\u{a0}minutes**. See [the guide]({base}/docs/guide.html) or \
             [elsewhere](https://example.org/x).\n\n*   Green\n*   Black\n\nClick",
            PAGE.len()
        );
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn json_and_plain_text_are_shown_as_they_are() {
        let body = "{\"a\": [1, 2],\n \"b\": \"x\"}\n";
        let server = Server::start(move |path| match path {
            "/j" => Reply::ok("application/json", body),
            _ => Reply::ok("text/plain", "just text\n  indented\n"),
        });
        let got = get(&server.url("/j")).await.unwrap();
        let want = format!(
            "URL: {}\nStatus: 200 OK\nContent-Type: application/json\nSize: {} bytes\n\n{body}",
            server.url("/j"),
            body.len()
        );
        assert_eq!(got, want);
        let got = get(&server.url("/t")).await.unwrap();
        assert!(
            got.ends_with("Size: 21 bytes\n\njust text\n  indented\n"),
            "{got}"
        );
    }

    #[tokio::test]
    async fn endless_body_is_cut_at_the_cap() {
        let server = Server::start(|_| Reply::Endless);
        let tool = Typed::new(loopback().with_limits(Duration::from_secs(10), 64 * 1024));
        let started = Instant::now();
        let got = fetch(&tool, json!({"url": server.url("/")})).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            got.contains("Size: first 65536 bytes (more not downloaded)\n\nyyyy"),
            "{got}"
        );
        assert!(got.ends_with(
            "[cut: the body is longer than 65536 bytes (max_bytes); the rest was not downloaded]"
        ));
        // The model may ask for less.
        let got = fetch(&tool, json!({"url": server.url("/"), "max_bytes": 10}))
            .await
            .unwrap();
        assert!(got.contains("\n\nyyyyyyyyyy\n\n[cut: the body is longer than 10 bytes"));
    }

    #[tokio::test]
    async fn long_text_is_cut_at_the_character_cap() {
        let body = "é".repeat(MAX_CHARS + 5);
        let server = Server::start(move |_| Reply::ok("text/plain; charset=utf-8", body.clone()));
        let got = get(&server.url("/")).await.unwrap();
        let want_end = format!(
            "{}\n\n[cut: showing the first {MAX_CHARS} of {} characters]",
            "é".repeat(10),
            MAX_CHARS + 5
        );
        assert!(got.ends_with(&want_end));
    }

    #[tokio::test]
    async fn a_stalled_server_times_out() {
        let server = Server::start(|_| Reply::Stall);
        let tool = Typed::new(loopback().with_limits(Duration::from_millis(300), 1024));
        let started = Instant::now();
        let got = fetch(&tool, json!({"url": server.url("/slow")})).await;
        assert!(started.elapsed() < Duration::from_secs(3));
        let want = format!("fetching {} timed out after 300 ms", server.url("/slow"));
        assert_eq!(got, Err(want));
    }

    #[tokio::test]
    async fn cancellation_stops_a_slow_fetch() {
        let server = Server::start(|_| Reply::Stall);
        let (_dir, _root, ws) = workspace();
        let ctx = context(&ws);
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let started = Instant::now();
        let got = Typed::new(loopback())
            .run(json!({"url": server.url("/slow")}), &ctx)
            .await
            .map_err(|e| e.to_string());
        assert!(started.elapsed() < Duration::from_secs(3));
        let want = format!("fetching {} was cancelled", server.url("/slow"));
        assert_eq!(got, Err(want));
    }

    #[tokio::test]
    async fn redirects_are_followed_and_bounded() {
        let server = Server::start(|path| match path {
            "/a" => Reply::redirect("/b"),
            "/b" => Reply::redirect("c?x=1"),
            "/c?x=1" => Reply::ok("text/plain", "arrived"),
            "/passwd" => Reply::redirect("file:///etc/passwd"),
            _ => Reply::redirect("/loop"),
        });
        let got = get(&server.url("/a")).await.unwrap();
        let want = format!(
            "URL: {}\nStatus: 200 OK\nContent-Type: text/plain\nSize: 7 bytes\n\narrived",
            server.url("/c?x=1")
        );
        assert_eq!(got, want);

        let got = get(&server.url("/loop")).await;
        let want = format!(
            "too many redirects: more than 5 starting from {0} (the last one pointed to {0})",
            server.url("/loop")
        );
        assert_eq!(got, Err(want));

        let got = get(&server.url("/passwd")).await;
        let want = format!(
            "refused the redirect from {} to file:///etc/passwd: only http and https URLs can \
             be fetched",
            server.url("/passwd")
        );
        assert_eq!(got, Err(want));
        assert!(!server.requests().iter().any(|r| r.contains("etc/passwd")));
    }

    /// Issue 12 §4: the pipeline judges the first URL; the gate is asked about each hop.
    #[tokio::test]
    async fn every_redirect_hop_must_pass_the_rule() {
        let server = Server::start(|path| match path {
            "/docs/a" => Reply::redirect("/docs/b"),
            "/docs/b" => Reply::redirect("/private"),
            _ => Reply::ok("text/plain", "secret"),
        });
        let rule = format!("web_fetch({}/docs/*)", server.base);
        let policy =
            crate::policy::Policy::new(&[format!("none,{rule}")], &[], &["web_fetch"]).unwrap();
        let (_dir, _root, ws) = workspace();
        let mut ctx = context(&ws);
        ctx.gate = crate::Gate::new(std::sync::Arc::new(policy), "web_fetch");
        let got = Typed::new(loopback())
            .run(json!({"url": server.url("/docs/a")}), &ctx)
            .await
            .map_err(|e| e.to_string());
        let (b, private) = (server.url("/docs/b"), server.url("/private"));
        let want = format!(
            "refused the redirect from {b} to {private}: \"{private}\" is not allowed: web_fetch \
             is only allowed as {rule}"
        );
        assert_eq!(got, Err(want));
        let asked: Vec<String> = server
            .requests()
            .iter()
            .map(|r| r[..13].to_owned())
            .collect();
        assert_eq!(asked, ["GET /docs/a H", "GET /docs/b H"]);
        // CONTROL: an open gate (no rule) follows the same hops to the end.
        let got = get(&server.url("/docs/a")).await.unwrap();
        assert!(got.ends_with("secret"), "{got}");
    }

    #[tokio::test]
    async fn error_statuses_are_errors_with_a_snippet() {
        let server = Server::start(|path| match path {
            "/html" => Reply::status(
                500,
                "text/html",
                "<h1>Oops</h1><p>the <i>db</i> is down</p>",
            ),
            _ => Reply::status(404, "text/plain", "no such\npage"),
        });
        let got = get(&server.url("/missing")).await;
        let want = format!(
            "HTTP 404 Not Found from {}: no such page",
            server.url("/missing")
        );
        assert_eq!(got, Err(want));
        let got = get(&server.url("/html")).await;
        let want = format!(
            "HTTP 500 Internal Server Error from {}: # Oops the *db* is down",
            server.url("/html")
        );
        assert_eq!(got, Err(want));
    }

    #[tokio::test]
    async fn binary_content_is_described_not_shown() {
        let server = Server::start(|path| match path {
            "/png" => Reply::ok("image/png", &b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"[..]),
            "/bin" => Reply::ok("application/octet-stream", &b"ab\0cd"[..]),
            "/none" => Reply::Full {
                status: 200,
                headers: Vec::new(),
                body: b"\0\x01".to_vec(),
            },
            _ => Reply::ok("text/plain", &b"caf\xe9"[..]),
        });
        let got = get(&server.url("/png")).await.unwrap();
        assert!(got.starts_with(&format!("URL: {}\nStatus: 200 OK\n", server.url("/png"))));
        assert!(got.ends_with(
            "Content-Type: image/png\nSize: 16 bytes\n\nbinary content (image/png, 16 bytes); not shown"
        ));
        let got = get(&server.url("/bin")).await.unwrap();
        assert!(got.ends_with("binary content (application/octet-stream, 5 bytes); not shown"));
        let got = get(&server.url("/none")).await.unwrap();
        assert!(got.ends_with(
            "Content-Type: (none)\nSize: 2 bytes\n\nbinary content (no content type, 2 bytes); not shown"
        ));
        let got = get(&server.url("/latin1")).await.unwrap();
        assert!(got.ends_with("binary content (text/plain, 4 bytes); not shown"));
    }

    #[tokio::test]
    async fn other_schemes_are_refused_up_front() {
        for url in [
            "ftp://example.com/f",
            "file:///etc/passwd",
            "data:text/plain,hi",
        ] {
            let scheme = url.split(':').next().unwrap();
            let want =
                format!("refused {url:?}: only http and https URLs can be fetched, not {scheme}:");
            assert_eq!(get(url).await, Err(want));
        }
        assert_eq!(
            get("not a url").await,
            Err(r#"invalid URL "not a url": relative URL without a base"#.to_owned())
        );
    }

    #[tokio::test]
    async fn connection_failures_are_clear() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/");
        let got = get(&url).await.unwrap_err();
        assert!(
            got.starts_with(&format!("cannot fetch {url}: connection failed")),
            "{got}"
        );
    }

    #[tokio::test]
    async fn inside_addresses_are_refused_unless_allowed() {
        let server = Server::start(|_| Reply::ok("text/plain", "inside secret"));
        let public_only = Typed::new(WebFetch::new());
        let literal = server.url("/");
        let got = fetch(&public_only, json!({ "url": literal }))
            .await
            .unwrap_err();
        assert!(
            got.starts_with(&format!(
                "refused {literal}: 127.0.0.1 is not a public address"
            )),
            "{got}"
        );
        // A name is checked where it is resolved.
        let port = literal.rsplit(':').next().unwrap().trim_end_matches('/');
        let named = format!("http://localhost:{port}/");
        let got = fetch(&public_only, json!({ "url": named }))
            .await
            .unwrap_err();
        assert!(got.contains("localhost resolves to "), "{got}");
        assert!(got.contains("--web-allow-private"), "{got}");
        assert_eq!(
            server.requests().len(),
            0,
            "a refused fetch reached the server"
        );
        let got = fetch(&Typed::new(loopback()), json!({ "url": literal }))
            .await
            .unwrap();
        assert!(got.ends_with("inside secret"), "{got}");
    }

    #[test]
    fn subject_is_the_url() {
        let (_dir, _root, ws) = workspace();
        let tool = Typed::new(WebFetch::new());
        assert_eq!(
            tool.subject(&json!({"url": "https://docs.rs/x"}), &ws),
            Some(Subject::Url("https://docs.rs/x".to_owned()))
        );
        assert_eq!(tool.subject(&json!({}), &ws), None);
    }
}
