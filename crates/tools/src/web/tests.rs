use pretty_assertions::assert_eq;

use super::*;

fn page(content_type: &str, body: &[u8], cut: bool) -> Page {
    Page {
        url: Url::parse("http://h/").unwrap(),
        status: StatusCode::OK,
        content_type: content_type.to_owned(),
        length: None,
        body: body.to_vec(),
        cut,
    }
}

fn kind(content_type: &str, body: &[u8], cut: bool) -> &'static str {
    match page(content_type, body, cut).classify() {
        Body::Html(_) => "html",
        Body::Text(_) => "text",
        Body::Binary => "binary",
    }
}

#[test]
fn classify_by_type_then_bytes() {
    assert_eq!(kind("text/html; charset=UTF-8", b"<p>x", false), "html");
    assert_eq!(kind("application/xhtml+xml", b"<p>x", false), "html");
    assert_eq!(kind("Application/JSON", b"{}", false), "text");
    assert_eq!(kind("application/ld+json", b"{}", false), "text");
    assert_eq!(kind("image/svg+xml", b"<svg/>", false), "text");
    assert_eq!(kind("text/csv", b"a,b", false), "text");
    assert_eq!(kind("", b"  <!DOCTYPE html><p>x", false), "html");
    assert_eq!(kind("", b"plain", false), "text");
    assert_eq!(kind("application/pdf", b"%PDF-1.7", false), "binary");
    assert_eq!(kind("text/plain", b"a\0b", false), "binary");
    // "é" split by the byte cap is text; the same bytes at the real end are not.
    assert_eq!(kind("text/plain", b"caf\xc3", true), "text");
    assert_eq!(kind("text/plain", b"caf\xc3", false), "binary");
}

#[test]
fn only_http_and_https() {
    assert!(http_url("https://docs.rs/x").is_ok());
    assert!(http_url(" HTTP://example.com ").is_ok());
    let err = http_url("javascript:alert(1)").unwrap_err().to_string();
    assert_eq!(
        err,
        r#"refused "javascript:alert(1)": only http and https URLs can be fetched, not javascript:"#
    );
}

fn convert(html: &str) -> Converted {
    let base = Url::parse("https://site.test/dir/page").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    html_to_markdown(html, &base, deadline, &CancellationToken::new()).unwrap()
}

#[test]
fn links_are_made_absolute_and_noise_dropped() {
    let got = convert(
        "<title> A\n  page </title><p><a href=\"../up\">up</a> <a href=\"#frag\">here</a> \
         <a href=\"mailto:a@b.c\">mail</a> <img src=\"data:image/png;base64,AAAA\" alt=\"dot\">\
         <img src=\"/i.png\" alt=\"pic\"></p><noscript>enable js</noscript>\
         <p>one</p>\n\n\n\n<p>two   </p>",
    );
    assert_eq!(got.title, "A page");
    assert_eq!(
        got.text,
        "[up](https://site.test/up) [here](https://site.test/dir/page#frag) \
         [mail](mailto:a@b.c) ![pic](https://site.test/i.png)\n\none\n\ntwo"
    );
}

#[test]
fn deep_nesting_is_flattened_not_a_stack_overflow() {
    let depth = 2000;
    let html = format!(
        "{}deep <b>text</b>{}",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    );
    assert_eq!(convert(&html).text, "deep text");
}

#[test]
fn parsing_gives_up_at_the_deadline_and_on_cancel() {
    // Quadratic to parse: minutes, were it not stopped.
    let html = "<div>".repeat(400_000);
    let started = Instant::now();
    let deadline = started + Duration::from_millis(300);
    let err = parse_html(&html, deadline, &CancellationToken::new()).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        err.to_string()
            .starts_with("gave up parsing the HTML after "),
        "{err}"
    );
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = parse_html(&html, deadline, &cancel).unwrap_err();
    assert_eq!(err.to_string(), "cancelled while parsing the HTML");
}
