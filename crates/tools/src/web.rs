//! What `web_fetch` and `web_search` share: one bounded GET and the HTML handling both need.
//!
//! A URL comes from the model, so every request is fenced in: only `http` and `https`, and the
//! caller's own check (`web_fetch`'s allowlist rule), both again on every redirect hop, which is
//! why redirects are followed here and not by reqwest; a cap on the bytes read, one deadline for
//! the whole exchange, `ctx.cancel` honoured throughout, and unless allowed only public
//! destinations (see `addr`), with proxies trusted only on the way to them (see
//! `web_proxy`). Failures become error results the model can read, never a failed run.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use html5ever::tendril::{StrTendril, TendrilSink};
use markup5ever_rcdom::{Node, NodeData, RcDom};
use reqwest::header::{CONTENT_TYPE, LOCATION, USER_AGENT};
use reqwest::{StatusCode, Url};
use tokio_util::sync::CancellationToken;

mod addr;
use crate::ToolError;
use crate::net::{clip, describe};
use crate::policy::Decision;

mod proxy;

/// The caller's say on each URL a request goes to (the first and every redirect hop): `Denied`
/// with the reason stops the request before it is sent.
pub(crate) type Permit<'a> = &'a (dyn Fn(&Url) -> Decision + Sync);

/// A [`Permit`] for callers without a say (`web_search`, whose endpoint is the user's).
pub(crate) fn any_url(_: &Url) -> Decision {
    Decision::Allowed
}

/// Redirect hops followed before giving up.
pub(crate) const MAX_REDIRECTS: usize = 5;
/// Time for the whole exchange: connecting, every redirect hop and reading the body.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);
/// Body bytes read by default; the rest is never downloaded.
pub(crate) const DEFAULT_MAX_BYTES: usize = 2 * 1024 * 1024;

/// How far one request may go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) timeout: Duration,
    pub(crate) max_bytes: usize,
    /// Whether loopback, private and link-local destinations may be reached.
    pub(crate) allow_private: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: DEFAULT_TIMEOUT,
            max_bytes: DEFAULT_MAX_BYTES,
            allow_private: false,
        }
    }
}

/// A response, read up to the byte cap.
pub(crate) struct Page {
    /// Where the last redirect led.
    pub(crate) url: Url,
    pub(crate) status: StatusCode,
    /// The `content-type` header as sent, or empty.
    pub(crate) content_type: String,
    /// The `content-length` header, when the server sent one.
    pub(crate) length: Option<u64>,
    pub(crate) body: Vec<u8>,
    /// Reading stopped at the byte cap with more to come.
    pub(crate) cut: bool,
}

/// What a body turned out to be.
pub(crate) enum Body<'a> {
    Html(&'a str),
    Text(&'a str),
    Binary,
}

impl Page {
    /// The content type without parameters, lower-cased (`text/html`).
    pub(crate) fn mime(&self) -> String {
        mime(&self.content_type)
    }

    /// What the body is; see [`classify`].
    pub(crate) fn classify(&self) -> Body<'_> {
        classify(&self.mime(), &self.body, self.cut)
    }

    /// `200 OK`, `404 Not Found`.
    pub(crate) fn status_line(&self) -> String {
        let reason = self.status.canonical_reason().unwrap_or("");
        format!("{} {reason}", self.status.as_u16())
            .trim_end()
            .to_owned()
    }

    /// The error result for a non-success status: the status and the start of what the server
    /// said, since error pages often explain themselves.
    pub(crate) fn status_error(&self) -> ToolError {
        // The snippet needs only the start, which also keeps its conversion quick.
        let head = &self.body[..self.body.len().min(16 * 1024)];
        let cut = self.cut || head.len() < self.body.len();
        let deadline = Instant::now() + Duration::from_secs(1);
        let converted =
            |html| html_to_markdown(html, &self.url, deadline, &CancellationToken::new());
        let snippet = match classify(&self.mime(), head, cut) {
            Body::Html(html) => converted(html)
                .map(|c| one_line(&c.text))
                .unwrap_or_default(),
            Body::Text(text) => one_line(text),
            Body::Binary => String::new(),
        };
        let mut msg = format!("HTTP {} from {}", self.status_line(), self.url);
        if !snippet.is_empty() {
            msg.push_str(": ");
            msg.push_str(&clip(&snippet, 300));
        }
        ToolError::failed(msg)
    }
}

/// Decides by content type, then by the bytes: text that is not valid UTF-8 (or holds NUL bytes)
/// is reported as binary rather than shown garbled.
fn classify<'a>(mime: &str, body: &'a [u8], cut: bool) -> Body<'a> {
    let Some(text) = utf8_text(body, cut) else {
        return Body::Binary;
    };
    if mime == "text/html" || mime == "application/xhtml+xml" {
        return Body::Html(text);
    }
    if is_textual(mime) {
        return Body::Text(text);
    }
    if !mime.is_empty() {
        return Body::Binary;
    }
    let head = text
        .trim_start()
        .get(..14)
        .unwrap_or("")
        .to_ascii_lowercase();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        Body::Html(text)
    } else {
        Body::Text(text)
    }
}

fn mime(content_type: &str) -> String {
    let essence = content_type.split(';').next().unwrap_or("");
    essence.trim().to_ascii_lowercase()
}

/// `application/` types that are text, besides every `+json` and `+xml`.
const TEXT_APPLICATIONS: &str =
    "json xml javascript ecmascript x-javascript x-ndjson yaml x-yaml toml x-sh sql graphql";

fn is_textual(mime: &str) -> bool {
    let application = mime.strip_prefix("application/");
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || application.is_some_and(|a| TEXT_APPLICATIONS.split(' ').any(|t| t == a))
}

/// The body as text, or `None` for binary. A multi-byte character split by the byte cap does
/// not make a cut body binary.
fn utf8_text(body: &[u8], cut: bool) -> Option<&str> {
    if body.contains(&0) {
        return None;
    }
    match std::str::from_utf8(body) {
        Ok(text) => Some(text),
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&body[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

/// Whitespace runs (newlines included) become single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parses a URL the model gave and refuses every scheme but `http` and `https`.
pub(crate) fn http_url(text: &str) -> Result<Url, ToolError> {
    let url = Url::parse(text.trim())
        .map_err(|e| ToolError::failed(format!("invalid URL {text:?}: {e}")))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(ToolError::failed(format!(
            "refused {text:?}: only http and https URLs can be fetched, not {other}:"
        ))),
    }
}

/// Why a route has no client. Kept with the route, so every later request reports it too.
#[derive(Debug, Clone, thiserror::Error)]
enum ClientError {
    #[error("cannot use the proxy {proxy}: {}", describe(.source.as_ref()))]
    Proxy {
        proxy: Url,
        #[source]
        source: Arc<reqwest::Error>,
    },
    #[error("cannot set up the HTTP client: {}", describe(.0.as_ref()))]
    Setup(#[source] Arc<reqwest::Error>),
}

type Built = OnceLock<Result<reqwest::Client, ClientError>>;

/// The clients of the process, one per route: connection pooling across calls, rustls set up
/// once per client.
struct Clients {
    /// `--web-allow-private`: reqwest's own proxy handling, no address checked.
    any: Built,
    proxies: proxy::Proxies,
    /// Straight to the destination, no proxy, no name trusted.
    direct: Built,
    /// Through each proxy, trusting that proxy's name alone (the only name it resolves).
    via: Vec<(Url, Built)>,
}

impl Clients {
    fn get() -> &'static Clients {
        static CLIENTS: OnceLock<Clients> = OnceLock::new();
        CLIENTS.get_or_init(|| {
            let proxies = proxy::Proxies::from_env();
            let via = proxies
                .all()
                .into_iter()
                .map(|p| (p.clone(), OnceLock::new()))
                .collect();
            Clients {
                any: OnceLock::new(),
                proxies,
                direct: OnceLock::new(),
                via,
            }
        })
    }
}

/// The client for a request to `url`. Unless private addresses are allowed, the route is
/// decided first (see `web_proxy`) and each route has its own client, resolving names through
/// [`addr::PublicOnly`]: so a proxy's name is trusted only on a connection that goes to it.
fn client_for(url: &Url, allow_private: bool) -> Result<&'static reqwest::Client, ToolError> {
    let clients = Clients::get();
    let builder =
        || crate::net::builder(Duration::from_secs(10)).redirect(reqwest::redirect::Policy::none());
    if allow_private {
        return built(&clients.any, || Ok(builder()));
    }
    let Some(via) = clients.proxies.route(url) else {
        let resolver = addr::PublicOnly { trusted: vec![] };
        return built(&clients.direct, || {
            Ok(builder().no_proxy().dns_resolver(Arc::new(resolver)))
        });
    };
    let Some((_, cell)) = clients.via.iter().find(|(p, _)| p == via) else {
        return Err(ToolError::failed(format!("no client for the proxy {via}")));
    };
    built(cell, || {
        let proxy = reqwest::Proxy::all(via.clone()).map_err(|e| ClientError::Proxy {
            proxy: via.clone(),
            source: Arc::new(e),
        })?;
        let resolver = addr::PublicOnly {
            trusted: via.host_str().map(str::to_owned).into_iter().collect(),
        };
        Ok(builder().proxy(proxy).dns_resolver(Arc::new(resolver)))
    })
}

/// The client in `cell`, built by `make` the first time.
fn built(
    cell: &'static Built,
    make: impl FnOnce() -> Result<reqwest::ClientBuilder, ClientError>,
) -> Result<&'static reqwest::Client, ToolError> {
    let client = cell.get_or_init(|| make()?.build().map_err(|e| ClientError::Setup(Arc::new(e))));
    client
        .as_ref()
        .map_err(|e| ToolError::failed(e.to_string()))
}

/// GETs `url`, following up to [`MAX_REDIRECTS`] redirects, within `limits`; `ctx.cancel`
/// stops it at any point; `permit` is asked before each URL is requested, the first included.
/// Any status comes back as a [`Page`]: judging it is the caller's.
pub(crate) async fn get(
    url: Url,
    limits: Limits,
    user_agent: Option<&str>,
    permit: Permit<'_>,
    cancel: &CancellationToken,
) -> Result<Page, ToolError> {
    let shown = url.to_string();
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::failed(format!("fetching {shown} was cancelled"))),
        done = tokio::time::timeout(limits.timeout, fetch(url, limits, user_agent, permit)) => {
            done.unwrap_or_else(|_| {
                Err(ToolError::failed(format!(
                    "fetching {shown} timed out after {}",
                    seconds(limits.timeout)
                )))
            })
        }
    }
}

async fn fetch(
    start: Url,
    limits: Limits,
    user_agent: Option<&str>,
    permit: Permit<'_>,
) -> Result<Page, ToolError> {
    let (url, response) = follow_redirects(start, limits, user_agent, permit).await?;
    read_page(url, response, limits.max_bytes).await
}

/// Requests `start` and each URL it redirects to, every one judged before it is requested:
/// the last URL and its response.
async fn follow_redirects(
    start: Url,
    limits: Limits,
    user_agent: Option<&str>,
    permit: Permit<'_>,
) -> Result<(Url, reqwest::Response), ToolError> {
    let mut url = start.clone();
    let mut from: Option<Url> = None;
    let mut hops = 0;
    loop {
        judge(&url, from.as_ref(), limits.allow_private, permit)?;
        let client = client_for(&url, limits.allow_private)?;
        let mut request = client.get(url.clone());
        if let Some(agent) = user_agent {
            request = request.header(USER_AGENT, agent);
        }
        let response = request
            .send()
            .await
            .map_err(|e| ToolError::failed(format!("cannot fetch {url}: {}", describe(&e))))?;
        let Some(next) = redirect(&url, &response)? else {
            return Ok((url, response));
        };
        hops += 1;
        if hops > MAX_REDIRECTS {
            return Err(ToolError::failed(format!(
                "too many redirects: more than {MAX_REDIRECTS} starting from {start} (the last \
                 one pointed to {next})"
            )));
        }
        from = Some(std::mem::replace(&mut url, next));
    }
}

/// Whether `url` (reached by a redirect `from`, if so) may be requested: the caller's say, then,
/// unless private destinations are allowed, the address check.
fn judge(
    url: &Url,
    from: Option<&Url>,
    allow_private: bool,
    permit: Permit<'_>,
) -> Result<(), ToolError> {
    if let Decision::Denied(why) = permit(url) {
        return Err(ToolError::failed(match from {
            Some(from) => format!("refused the redirect from {from} to {url}: {why}"),
            None => format!("refused {url}: {why}"),
        }));
    }
    match (!allow_private).then(|| addr::refusal(url)).flatten() {
        Some(refused) => Err(ToolError::failed(refused)),
        None => Ok(()),
    }
}

/// Where a redirect response leads; `None` for any other response.
fn redirect(url: &Url, response: &reqwest::Response) -> Result<Option<Url>, ToolError> {
    let status = response.status().as_u16();
    let location = response.headers().get(LOCATION);
    let (true, Some(location)) = (matches!(status, 301 | 302 | 303 | 307 | 308), location) else {
        return Ok(None);
    };
    let next = location
        .to_str()
        .ok()
        .and_then(|l| url.join(l.trim()).ok())
        .ok_or_else(|| {
            ToolError::failed(format!(
                "{url} redirected to an invalid location {location:?}"
            ))
        })?;
    if !matches!(next.scheme(), "http" | "https") {
        return Err(ToolError::failed(format!(
            "refused the redirect from {url} to {next}: only http and https URLs can be fetched"
        )));
    }
    Ok(Some(next))
}

/// Reads the body up to `max_bytes`; one byte past the cap tells "exactly the cap" from "more to
/// come" without waiting for the rest.
async fn read_page(
    url: Url,
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<Page, ToolError> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let length = response.content_length();
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        ToolError::failed(format!(
            "reading the body of {url} failed: {}",
            describe(&e)
        ))
    })? {
        let room = max_bytes + 1 - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() > max_bytes {
            body.truncate(max_bytes);
            cut = true;
            break;
        }
    }
    Ok(Page {
        url,
        status,
        content_type,
        length,
        body,
        cut,
    })
}

/// `20 s`, or `300 ms` below a second.
pub(crate) fn seconds(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// A page turned into Markdown.
pub(crate) struct Converted {
    /// The `<title>`, whitespace collapsed; empty without one.
    pub(crate) title: String,
    pub(crate) text: String,
}

/// Elements whose content is not reading matter (code, styling, embedded objects, form widgets),
/// or is repeated elsewhere (`head`: its title is kept apart).
const SKIPPED: &[&str] = &[
    "head", "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
    "embed", "select", "button",
];

/// Nesting depth past which elements are flattened to their text. htmd converts recursively, so
/// a page nested far deeper than real pages are (a few dozen levels) would overflow the stack.
const MAX_DEPTH: usize = 256;

/// Input handed to the HTML parser at a time; between pieces it checks the deadline.
const PARSE_PIECE: usize = 4096;

/// Parses HTML, giving up at `deadline` or on `cancel`: html5ever's tree building is quadratic
/// in nesting depth (the scope checks walk the open elements), so a page of a few MiB of nested
/// tags could otherwise keep a thread busy for hours.
pub(crate) fn parse_html(
    html: &str,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Rc<Node>, ToolError> {
    let started = Instant::now();
    let mut parser = html5ever::parse_document(RcDom::default(), Default::default());
    let mut rest = html;
    while !rest.is_empty() {
        if cancel.is_cancelled() {
            return Err(ToolError::failed("cancelled while parsing the HTML"));
        }
        if Instant::now() >= deadline {
            return Err(ToolError::failed(format!(
                "gave up parsing the HTML after {} ms: it is nested too deeply to parse in time",
                started.elapsed().as_millis()
            )));
        }
        let mut end = rest.len().min(PARSE_PIECE);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&rest[..end]));
        rest = &rest[end..];
    }
    Ok(parser.finish().document)
}

/// HTML to Markdown, with scripts and styles gone and link targets made absolute against `base`
/// so the model can fetch them as they are. Parsing stops as [`parse_html`] says.
pub(crate) fn html_to_markdown(
    html: &str,
    base: &Url,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Converted, ToolError> {
    let tree = parse_html(html, deadline, cancel)?;
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    flatten_deep(&tree);
    let mut title = String::new();
    for node in descendants(&tree) {
        let NodeData::Element { name, attrs, .. } = &node.data else {
            continue;
        };
        match &*name.local {
            "title" if title.is_empty() => title = one_line(&text_of(&node)),
            "a" | "img" => {
                let key = if &*name.local == "a" { "href" } else { "src" };
                let mut attrs = attrs.borrow_mut();
                // `javascript:` links and inline `data:` images are noise to a reader; without
                // the attribute htmd keeps just the link text (or drops the image).
                attrs.retain_mut(|attr| {
                    if &*attr.name.local != key {
                        return true;
                    }
                    match base.join(attr.value.trim()) {
                        Ok(url) if matches!(url.scheme(), "http" | "https" | "mailto") => {
                            attr.value = url.as_str().into();
                            true
                        }
                        _ => false,
                    }
                });
            }
            _ => {}
        }
    }
    let text = converter.tree_to_markdown(&tree);
    Ok(Converted {
        title,
        text: squeeze_blank_lines(&text),
    })
}

/// Replaces what lies below [`MAX_DEPTH`] with its text.
fn flatten_deep(root: &Rc<Node>) {
    let mut stack = vec![(Rc::clone(root), 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth < MAX_DEPTH {
            let children = node.children.borrow();
            stack.extend(children.iter().map(|c| (Rc::clone(c), depth + 1)));
            continue;
        }
        let text = text_of(&node);
        let leaf = Node::new(NodeData::Text {
            contents: RefCell::new(text.as_str().into()),
        });
        leaf.parent.set(Some(Rc::downgrade(&node)));
        *node.children.borrow_mut() = vec![leaf];
    }
}

/// Every node under `root`, in document order; iterative, since page nesting can be deep.
pub(crate) fn descendants(root: &Rc<Node>) -> Vec<Rc<Node>> {
    let mut out = Vec::new();
    let mut stack = vec![Rc::clone(root)];
    while let Some(node) = stack.pop() {
        stack.extend(node.children.borrow().iter().rev().cloned());
        out.push(node);
    }
    out
}

/// The text under a node, as written (entities decoded by the parser).
pub(crate) fn text_of(node: &Rc<Node>) -> String {
    let mut out = String::new();
    for n in descendants(node) {
        if let NodeData::Text { contents } = &n.data {
            out.push_str(&contents.borrow());
        }
    }
    out
}

/// Layout-heavy pages leave runs of empty lines and trailing spaces; they only cost tokens.
fn squeeze_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests;
