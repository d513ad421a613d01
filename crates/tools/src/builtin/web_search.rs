//! `web_search`: lets the model find pages to read with `web_fetch`.
//!
//! The backend is a URL template (`--search-url`, `{query}` replaced by the URL-encoded query);
//! the default is DuckDuckGo's HTML results page, which needs no key. Its answer is read as that
//! page, or — so a user can put their own service behind `--search-url` — as JSON of the shape
//! `{"results":[{"title","url","snippet"}]}`. Requests go through `web::get`, with the same caps,
//! deadline and scheme rules as `web_fetch`.

use std::time::Instant;

use async_trait::async_trait;
use markup5ever_rcdom::{Node, NodeData};
use reqwest::Url;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::typed::{BuiltinTool, SubjectOf};
use crate::web::{self, Body, Limits, descendants, one_line, parse_html, text_of};
use crate::{Class, ToolContext, ToolError, ToolOutput};

/// The backend when `--search-url` is not given.
pub(crate) const DEFAULT_SEARCH_URL: &str = "https://html.duckduckgo.com/html/?q={query}";
const DEFAULT_RESULTS: usize = 8;
const MAX_RESULTS: usize = 20;
/// DuckDuckGo's HTML endpoint is known to answer clients that do not look like a browser with a
/// bot check rather than results, so the default backend gets a browser's user agent; any other
/// backend gets ours (`rounds/VERSION`).
const BROWSER_AGENT: &str =
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

pub(crate) struct WebSearch {
    template: String,
    limits: Limits,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// What to search for, as typed into a search box.
    #[schemars(length(min = 1))]
    query: String,
    #[schemars(
        range(min = 1, max = MAX_RESULTS),
        description = format!("Results to return at most. Default {DEFAULT_RESULTS}.")
    )]
    max_results: Option<usize>,
}

/// One search result.
#[derive(Debug, PartialEq, Eq)]
struct Hit {
    title: String,
    url: String,
    snippet: String,
}

impl WebSearch {
    /// `search_url` is the `--search-url` template; `None` means DuckDuckGo.
    pub(crate) fn new(search_url: Option<String>) -> WebSearch {
        WebSearch {
            template: search_url.unwrap_or_else(|| DEFAULT_SEARCH_URL.to_owned()),
            // The endpoint is the user's (--search-url), often a search service on the inside;
            // the model only supplies the query string.
            limits: Limits {
                allow_private: true,
                ..Limits::default()
            },
        }
    }

    /// Replaces the time limit and byte cap (tests use short ones).
    #[cfg(test)]
    pub(crate) fn with_limits(
        mut self,
        timeout: std::time::Duration,
        max_bytes: usize,
    ) -> WebSearch {
        self.limits = Limits {
            timeout,
            max_bytes,
            ..self.limits
        };
        self
    }

    /// The backend URL for `query`: `{query}` replaced by the form-encoded query (`a b&c` →
    /// `a+b%26c`).
    fn url_for(&self, query: &str) -> Result<Url, ToolError> {
        if !self.template.contains("{query}") {
            return Err(ToolError::failed(format!(
                "the search URL {:?} (--search-url) has no {{query}} placeholder",
                self.template
            )));
        }
        let encoded: String = form_urlencoded::byte_serialize(query.as_bytes()).collect();
        let url = self.template.replace("{query}", &encoded);
        web::http_url(&url).map_err(|e| ToolError::failed(format!("--search-url: {e}")))
    }
}

#[async_trait]
impl BuiltinTool for WebSearch {
    type Input = Args;
    const NAME: &'static str = "web_search";
    const CLASS: Class = Class::Safe;
    const SUBJECT: SubjectOf = SubjectOf::Query;

    fn description(&self) -> String {
        format!(
            "Search the web. Returns a numbered list of results, each with its title, URL and \
             a snippet; read a result with web_fetch. Default {DEFAULT_RESULTS} results, at \
             most {MAX_RESULTS}. The backend is DuckDuckGo's HTML results page unless the user \
             set --search-url: a URL template whose {{query}} is replaced by the URL-encoded \
             query, answering with a DuckDuckGo-style HTML page or with JSON \
             {{\"results\":[{{\"title\":…,\"url\":…,\"snippet\":…}}]}}."
        )
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let max = args
            .max_results
            .unwrap_or(DEFAULT_RESULTS)
            .clamp(1, MAX_RESULTS);
        let url = self.url_for(&args.query)?;
        let agent = (self.template == DEFAULT_SEARCH_URL).then_some(BROWSER_AGENT);
        let deadline = Instant::now() + self.limits.timeout;
        let page = web::get(url, self.limits, agent, &web::any_url, &ctx.cancel).await?;
        if !page.status.is_success() {
            return Err(page.status_error());
        }
        let mime = page.mime();
        // DuckDuckGo answers a client it takes for a bot with a challenge page instead of
        // results: status 202, or a page that loads its `anomaly` script.
        let mut challenged = page.status.as_u16() == 202;
        let hits = match page.classify() {
            Body::Text(text) if is_json(&mime, text) => from_json(text)?,
            Body::Html(html) => {
                challenged |= html.contains("anomaly.js") || html.contains("anomaly-modal");
                let (html, base, cancel) = (html.to_owned(), page.url.clone(), ctx.cancel.clone());
                tokio::task::spawn_blocking(move || from_html(&html, &base, deadline, &cancel))
                    .await
                    .map_err(|e| ToolError::failed(format!("web_search failed: {e}")))??
            }
            _ => {
                return Err(ToolError::failed(format!(
                    "the search backend {} answered with {}, which is neither an HTML results \
                     page nor JSON",
                    page.url,
                    if mime.is_empty() {
                        "no content type"
                    } else {
                        &mime
                    }
                )));
            }
        };
        if hits.is_empty() && challenged {
            return Err(ToolError::failed(format!(
                "the search backend {} answered {} with a bot check instead of results \
                 (DuckDuckGo does this when it suspects automated queries); try again in a few \
                 minutes",
                page.url.host_str().unwrap_or(""),
                page.status_line()
            )));
        }
        Ok(render(&args.query, &hits, max).into())
    }
}

fn is_json(mime: &str, text: &str) -> bool {
    mime == "application/json" || mime.ends_with("+json") || text.trim_start().starts_with('{')
}

#[derive(Deserialize)]
struct JsonResults {
    results: Vec<JsonHit>,
}

#[derive(Deserialize)]
struct JsonHit {
    title: Option<String>,
    url: Option<String>,
    snippet: Option<String>,
}

/// The generic backend shape. Results without a URL say nothing fetchable and are dropped.
fn from_json(text: &str) -> Result<Vec<Hit>, ToolError> {
    let parsed: JsonResults = serde_json::from_str(text).map_err(|e| {
        ToolError::failed(format!(
            "the search backend answered JSON that is not {{\"results\":[{{\"title\",\"url\",\
             \"snippet\"}}]}}: {e}"
        ))
    })?;
    Ok(parsed
        .results
        .into_iter()
        .filter_map(|h| {
            let url = h.url.filter(|u| !u.trim().is_empty())?;
            Some(Hit {
                title: one_line(h.title.as_deref().unwrap_or("")),
                url: url.trim().to_owned(),
                snippet: one_line(h.snippet.as_deref().unwrap_or("")),
            })
        })
        .collect())
}

/// DuckDuckGo's HTML results: each `.result` block holds a `.result__a` link (title and href)
/// and a `.result__snippet`; ads (`.result--ad`) are skipped.
fn from_html(
    html: &str,
    base: &Url,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Vec<Hit>, ToolError> {
    let tree = parse_html(html, deadline, cancel)?;
    let mut hits = Vec::new();
    for block in descendants(&tree) {
        if !has_class(&block, "result") || has_class(&block, "result--ad") {
            continue;
        }
        let parts = descendants(&block);
        let Some(link) = parts.iter().find(|n| has_class(n, "result__a")) else {
            continue;
        };
        let url = unwrap_link(&attr(link, "href").unwrap_or_default(), base);
        if url.is_empty() {
            continue;
        }
        let snippet = parts.iter().find(|n| has_class(n, "result__snippet"));
        hits.push(Hit {
            title: one_line(&text_of(link)),
            url,
            snippet: snippet.map(|n| one_line(&text_of(n))).unwrap_or_default(),
        });
    }
    Ok(hits)
}

/// The value of an element's attribute.
fn attr(node: &Node, name: &str) -> Option<String> {
    let NodeData::Element { attrs, .. } = &node.data else {
        return None;
    };
    let attrs = attrs.borrow();
    let found = attrs.iter().find(|a| &*a.name.local == name)?;
    Some(found.value.to_string())
}

/// Whether an element's `class` list holds `class`.
fn has_class(node: &Node, class: &str) -> bool {
    attr(node, "class").is_some_and(|list| list.split_whitespace().any(|c| c == class))
}

/// DuckDuckGo sends result links through itself (`//duckduckgo.com/l/?uddg=<target>&rut=…`); the
/// model should see, and be allowed to fetch, the target.
fn unwrap_link(href: &str, base: &Url) -> String {
    let Ok(url) = base.join(href.trim()) else {
        return String::new();
    };
    let ddg = url
        .host_str()
        .is_some_and(|h| h == "duckduckgo.com" || h.ends_with(".duckduckgo.com"));
    if ddg
        && url.path() == "/l/"
        && let Some((_, target)) = url.query_pairs().find(|(k, _)| k == "uddg")
    {
        return target.into_owned();
    }
    url.to_string()
}

fn render(query: &str, hits: &[Hit], max: usize) -> String {
    if hits.is_empty() {
        return format!("No results for {query:?}.");
    }
    let mut out = String::new();
    for (n, hit) in hits.iter().take(max).enumerate() {
        if n > 0 {
            out.push_str("\n\n");
        }
        let title = if hit.title.is_empty() {
            &hit.url
        } else {
            &hit.title
        };
        out.push_str(&format!("{}. {title}\n   {}", n + 1, hit.url));
        if !hit.snippet.is_empty() {
            out.push_str(&format!("\n   {}", hit.snippet));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use std::time::Duration;

    use super::*;
    use crate::Tool;
    use crate::builtin::typed::Typed;
    use crate::policy::Subject;
    use crate::web::testing::{Reply, Server};
    use crate::workspace::testing::{self, workspace};
    use serde_json::Value;

    /// Shaped like html.duckduckgo.com's answer: an ad first, then three results whose links go
    /// through `//duckduckgo.com/l/?uddg=…`, entities and markup in titles and snippets.
    const DDG: &str = r#"<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<html>
<head>
<meta http-equiv="content-type" content="text/html; charset=UTF-8">
<title>rust async &amp; await at DuckDuckGo</title>
<link rel="stylesheet" href="/dist/h.css" type="text/css">
</head>
<body>
<div id="links" class="results">
  <div class="result results_links results_links_deep result--ad ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=example.com&amp;ad_provider=bing">Buy Rust Now</a>
      </h2>
      <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=example.com">Sponsored.</a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Frust%2Dlang.github.io%2Fasync%2Dbook%2F&amp;rut=1a2b3c">Asynchronous Programming in <b>Rust</b> &mdash; the &quot;async book&quot;</a>
      </h2>
      <div class="result__extras">
        <div class="result__extras__url">
          <span class="result__icon"><a rel="nofollow" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Frust%2Dlang.github.io%2F"><img class="result__icon__img" width="16" height="16" alt="" src="//external-content.duckduckgo.com/ip3/rust-lang.github.io.ico" name="i15"></a></span>
          <a class="result__url" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Frust%2Dlang.github.io%2Fasync%2Dbook%2F&amp;rut=1a2b3c">rust-lang.github.io/async-book</a>
        </div>
      </div>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Frust%2Dlang.github.io%2Fasync%2Dbook%2F&amp;rut=1a2b3c">Getting started with <b>async</b>/<b>.await</b>:
        what it&#x27;s for &amp; how it works.</a>
      <div class="clear"></div>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust%2Dlang.org%2Fstd%2Fkeyword.async.html%3Fsearch%3Da%2520b%26x%3D1&amp;rut=ffee">async - Rust</a>
      </h2>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust%2Dlang.org%2Fstd%2Fkeyword.async.html">Returns a Future instead of blocking the current thread.</a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="https://tokio.rs/tokio/tutorial">Tutorial | Tokio &lt;3</a>
      </h2>
    </div>
  </div>
  <div class="nav-link">
    <form action="/html/" method="post"><input type="submit" class="btn btn--alt" value="Next"><input type="hidden" name="q" value="rust async"></form>
  </div>
</div>
</body>
</html>
"#;

    const DDG_EMPTY: &str = r#"<html><body><div id="links" class="results">
<div class="no-results">No  results.</div></div></body></html>"#;

    const WANT: &str = "1. Asynchronous Programming in Rust — the \"async book\"\n   \
        https://rust-lang.github.io/async-book/\n   \
        Getting started with async/.await: what it's for & how it works.\n\n\
        2. async - Rust\n   \
        https://doc.rust-lang.org/std/keyword.async.html?search=a%20b&x=1\n   \
        Returns a Future instead of blocking the current thread.\n\n\
        3. Tutorial | Tokio <3\n   \
        https://tokio.rs/tokio/tutorial";

    fn backend(server: &Server, path: &str) -> Typed<WebSearch> {
        Typed::new(
            WebSearch::new(Some(server.url(path))).with_limits(Duration::from_secs(5), 1 << 20),
        )
    }

    async fn search(tool: &Typed<WebSearch>, input: Value) -> Result<String, String> {
        let (_dir, _root, ws) = workspace();
        testing::call(tool, &ws, input)
            .await
            .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn duckduckgo_html_becomes_a_numbered_list() {
        let server = Server::start(|path| match path {
            p if p.contains("nothing") => Reply::ok("text/html", DDG_EMPTY),
            _ => Reply::ok("text/html; charset=UTF-8", DDG),
        });
        let tool = backend(&server, "/html/?q={query}");
        let got = search(&tool, json!({"query": "rust async"})).await;
        assert_eq!(got, Ok(WANT.to_owned()));
        let got = search(&tool, json!({"query": "rust async", "max_results": 1})).await;
        assert_eq!(got, Ok(WANT.split("\n\n2.").next().unwrap().to_owned()));
        let got = search(&tool, json!({"query": "nothing here"})).await;
        assert_eq!(got, Ok(r#"No results for "nothing here"."#.to_owned()));
    }

    #[tokio::test]
    async fn json_backend_shape() {
        let results: Vec<Value> = (1..=5)
            .map(|n| json!({"title": format!("T{n}"), "url": format!("https://e.test/{n}"), "snippet": format!("s {n}\nmore")}))
            .chain([json!({"title": "no url"}), json!({"url": "https://e.test/bare"})])
            .collect();
        let body = json!({ "results": results }).to_string();
        let server = Server::start(move |path| match path {
            p if p.contains("empty") => Reply::ok("application/json", r#"{"results": []}"#),
            p if p.contains("bad") => Reply::ok("application/json", r#"{"items": []}"#),
            _ => Reply::ok("application/json; charset=utf-8", body.clone()),
        });
        let tool = backend(&server, "/api?q={query}&format=json");
        let got = search(&tool, json!({"query": "x", "max_results": 2})).await;
        let want =
            "1. T1\n   https://e.test/1\n   s 1 more\n\n2. T2\n   https://e.test/2\n   s 2 more";
        assert_eq!(got, Ok(want.to_owned()));
        let got = search(&tool, json!({"query": "x"})).await.unwrap();
        assert!(
            got.ends_with("\n\n6. https://e.test/bare\n   https://e.test/bare"),
            "{got}"
        );
        assert!(!got.contains("no url"));
        let got = search(&tool, json!({"query": "empty"})).await;
        assert_eq!(got, Ok(r#"No results for "empty"."#.to_owned()));
        let got = search(&tool, json!({"query": "bad"})).await.unwrap_err();
        assert!(
            got.starts_with("the search backend answered JSON that is not"),
            "{got}"
        );
    }

    #[tokio::test]
    async fn the_query_is_url_encoded() {
        let server = Server::start(|_| Reply::ok("application/json", r#"{"results": []}"#));
        let tool = backend(&server, "/s?q={query}&kl=wt-wt");
        search(&tool, json!({"query": "a b&c/é"})).await.unwrap();
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert!(
            requests[0].starts_with("GET /s?q=a+b%26c%2F%C3%A9&kl=wt-wt HTTP/1.1\r\n"),
            "{}",
            requests[0]
        );
        // Only the default backend gets a browser's user agent.
        assert!(
            requests[0].contains("user-agent: rounds/"),
            "{}",
            requests[0]
        );
    }

    #[tokio::test]
    async fn backend_failures_are_errors() {
        let server = Server::start(|path| match path {
            p if p.contains("busy") => {
                Reply::status(202, "text/html", "<form>are you a robot?</form>")
            }
            p if p.contains("anomaly") => Reply::ok(
                "text/html",
                r#"<div class="anomaly-modal__modal"><script src="/anomaly.js?cc=1"></script></div>"#,
            ),
            p if p.contains("pdf") => Reply::ok("application/pdf", "%PDF"),
            _ => Reply::status(503, "text/plain", "down for maintenance"),
        });
        let tool = backend(&server, "/s?q={query}");
        let got = search(&tool, json!({"query": "q"})).await;
        let want = format!(
            "HTTP 503 Service Unavailable from {}: down for maintenance",
            server.url("/s?q=q")
        );
        assert_eq!(got, Err(want));
        let got = search(&tool, json!({"query": "busy"})).await;
        let want = "the search backend 127.0.0.1 answered 202 Accepted with a bot check instead \
                    of results (DuckDuckGo does this when it suspects automated queries); try \
                    again in a few minutes";
        assert_eq!(got, Err(want.to_owned()));
        let got = search(&tool, json!({"query": "anomaly"}))
            .await
            .unwrap_err();
        assert!(got.contains("answered 200 OK with a bot check"), "{got}");
        let got = search(&tool, json!({"query": "pdf"})).await.unwrap_err();
        assert!(
            got.ends_with(
                "answered with application/pdf, which is neither an HTML results page nor JSON"
            ),
            "{got}"
        );
    }

    #[tokio::test]
    async fn bad_templates_are_refused() {
        let got = search(
            &Typed::new(WebSearch::new(Some("https://e.test/search".into()))),
            json!({"query": "q"}),
        )
        .await;
        assert_eq!(got, Err(r#"the search URL "https://e.test/search" (--search-url) has no {query} placeholder"#.to_owned()));
        let got = search(
            &Typed::new(WebSearch::new(Some("file:///tmp/{query}".into()))),
            json!({"query": "q"}),
        )
        .await;
        assert_eq!(got, Err(r#"--search-url: refused "file:///tmp/q": only http and https URLs can be fetched, not file:"#.to_owned()));
    }

    #[test]
    fn duckduckgo_links_are_unwrapped() {
        let base = Url::parse("https://html.duckduckgo.com/html/?q=x").unwrap();
        let unwrap = |href| unwrap_link(href, &base);
        assert_eq!(
            unwrap("//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.test%2Fp%3Fq%3D1&rut=9"),
            "https://a.test/p?q=1"
        );
        assert_eq!(unwrap("/l/?uddg=http%3A%2F%2Fb.test%2F"), "http://b.test/");
        assert_eq!(unwrap("https://c.test/x"), "https://c.test/x");
        assert_eq!(
            unwrap("//duckduckgo.com/l/?rut=9"),
            "https://duckduckgo.com/l/?rut=9"
        );
    }

    #[test]
    fn default_backend_and_subject() {
        let (_dir, _root, ws) = workspace();
        let tool = WebSearch::new(None);
        assert_eq!(tool.template, DEFAULT_SEARCH_URL);
        assert_eq!(
            tool.url_for("a b&c").unwrap().as_str(),
            "https://html.duckduckgo.com/html/?q=a+b%26c"
        );
        assert_eq!(
            Typed::new(tool).subject(&json!({"query": "rust"}), &ws),
            Some(Subject::Text("rust".to_owned()))
        );
    }
}
