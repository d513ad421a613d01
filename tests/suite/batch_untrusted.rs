//! What a jobs file, a model, a provider or the store can put into a batch's reports: ids,
//! statuses, errors and bad lines' messages, rendered into the step summary (read back with
//! comrak, a GFM parser after GitHub's own) and the JUnit XML (read back with roxmltree), as
//! an attacker would write them; and a control for each, showing the same text doing its harm
//! where nothing fences it.

use comrak::nodes::{AstNode, NodeValue};
use comrak::{Arena, Options, parse_document};
use rounds::batch::jobs::{self, BadLine};
use rounds::batch::report::{self, Summary};
use rounds::batch::results::ResultLine;
use rounds_base::terminal;

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

/// What a hostile text does to a page when nothing fences it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Harm {
    Link,
    Image,
    Html,
    Heading,
    /// It splits its table cell: the cell no longer holds the text.
    Cell,
}

/// How the control puts the text on the page: as it is, or in a one-backtick code span (a
/// fence that does not outgrow the text's own backticks and knows no table).
#[derive(Debug, Clone, Copy)]
enum Naive {
    Raw,
    Span,
}

const CASES: &[(&str, Harm, Naive)] = &[
    ("[x](https://evil.example)", Harm::Link, Naive::Raw),
    ("![t](https://track.example/p.png)", Harm::Image, Naive::Raw),
    ("<img src=x onerror=alert(1)>", Harm::Html, Naive::Raw),
    ("<script>alert(1)</script>", Harm::Html, Naive::Raw),
    ("</td></tr></table><b>", Harm::Html, Naive::Raw),
    ("https://evil.example/autolink", Harm::Link, Naive::Raw),
    ("<https://evil.example>", Harm::Link, Naive::Raw),
    ("x` [x](https://evil.example) `y", Harm::Link, Naive::Span),
    (
        "a``b` ![t](https://track.example/p.png) `",
        Harm::Image,
        Naive::Span,
    ),
    ("a|[x](https://evil.example)", Harm::Link, Naive::Span),
    (
        "a\\|![t](https://track.example/p.png)",
        Harm::Image,
        Naive::Raw,
    ),
    ("| x | y | z |", Harm::Cell, Naive::Raw),
    ("line\n# heading", Harm::Heading, Naive::Span),
    ("x\r\n<img src=x>", Harm::Html, Naive::Span),
    ("\n# heading\n", Harm::Heading, Naive::Raw),
];

/// A Markdown page as GFM reads it.
#[derive(Debug, Default)]
struct Page {
    /// Every node that is not plain text, a code span or the shapes the summary is made of
    /// (a heading, tables, a list, paragraphs): a link, an image, HTML, emphasis, …
    markup: Vec<String>,
    headings: Vec<String>,
    /// Each table's rows, each row its cells' text (code spans' text included).
    tables: Vec<Vec<Vec<String>>>,
    /// The list items' text.
    items: Vec<String>,
}

fn gfm() -> Options<'static> {
    let mut o = Options::default();
    let e = &mut o.extension;
    (e.table, e.autolink, e.strikethrough) = (true, true, true);
    (e.tasklist, e.footnotes, e.alerts) = (true, true, true);
    o
}

fn text_of<'a>(node: &'a AstNode<'a>) -> String {
    let mut out = String::new();
    for d in node.descendants() {
        match &d.data.borrow().value {
            NodeValue::Text(t) => out.push_str(t),
            NodeValue::Code(c) => out.push_str(&c.literal),
            NodeValue::SoftBreak | NodeValue::LineBreak => out.push('\n'),
            _ => {}
        }
    }
    out
}

fn read(md: &str) -> Page {
    let arena = Arena::new();
    let root = parse_document(&arena, md, &gfm());
    let mut page = Page::default();
    for node in root.descendants() {
        let value = node.data.borrow().value.clone();
        match value {
            NodeValue::Heading(_) => page.headings.push(text_of(node)),
            NodeValue::Table(_) => page.tables.push(
                node.children()
                    .map(|row| row.children().map(text_of).collect())
                    .collect(),
            ),
            NodeValue::Item(_) => page.items.push(text_of(node)),
            NodeValue::Document
            | NodeValue::Paragraph
            | NodeValue::TableRow(_)
            | NodeValue::TableCell
            | NodeValue::List(_)
            | NodeValue::Text(_)
            | NodeValue::Code(_)
            | NodeValue::SoftBreak => {}
            other => page.markup.push(format!("{other:?}")),
        }
    }
    page
}

fn harmed(page: &Page, harm: Harm, text: &str) -> bool {
    let has = |kind: &str| page.markup.iter().any(|m| m.starts_with(kind));
    match harm {
        Harm::Link => has("Link"),
        Harm::Image => has("Image"),
        Harm::Html => has("HtmlInline") || has("HtmlBlock"),
        Harm::Heading => page.headings.len() > 1,
        Harm::Cell => page.tables[0][1][0] != text,
    }
}

fn failed(id: &str, status: &str, error: &str) -> ResultLine {
    ResultLine {
        id: id.into(),
        line: 1,
        status: status.into(),
        exit_code: Some(1),
        rounds: 1,
        usage: Default::default(),
        cost_usd: None,
        duration_ms: 5,
        final_text: error.into(),
        final_json: None,
        error: Some(error.into()),
        failure: None,
        transcript: None,
        run_id: None,
    }
}

/// The text a reader sees for `text` in the summary: on one line, control characters escaped.
fn shown(text: &str) -> String {
    terminal::line(text).into_owned()
}

/// The same in a table cell. A `|` there is written `\|`; comrak reads the `\\|` that a
/// backslash before a pipe then makes as an escaped backslash and a pipe that does not end the
/// cell, and keeps both backslashes.
fn shown_in_cell(text: &str) -> String {
    shown(text).replace("\\|", "\\\\|")
}

#[test]
fn hostile_ids_statuses_errors_and_bad_lines_stay_text_in_the_batch_summary() {
    let results: Vec<ResultLine> = CASES
        .iter()
        .map(|(text, ..)| failed(text, text, text))
        .collect();
    let bad: Vec<BadLine> = CASES
        .iter()
        .enumerate()
        .map(|(i, (text, ..))| BadLine {
            line: i + 1,
            message: (*text).to_owned(),
        })
        .collect();
    let md = report::markdown(&Summary::of(&results, bad.len()), &results, &bad);
    let page = read(&md);
    assert_eq!(page.markup, Vec::<String>::new(), "{md}");
    assert_eq!(page.headings.len(), 1, "{md}");
    assert_eq!(page.tables.len(), 2, "{md}");

    // The status table: every status once, whole, in its cell; then the bad lines' count.
    let mut statuses: Vec<Vec<String>> = page.tables[0][1..].to_vec();
    assert_eq!(statuses.pop(), Some(vec!["bad lines".into(), "15".into()]));
    let mut wanted: Vec<Vec<String>> = CASES
        .iter()
        .map(|(t, ..)| vec![shown_in_cell(t), "1".into()])
        .collect();
    statuses.sort();
    wanted.sort();
    assert_eq!(statuses, wanted, "{md}");

    // The failed jobs: one row each, id, status and error's first line whole in their cells.
    let rows = &page.tables[1];
    assert_eq!(rows[0], ["job", "status", "error"]);
    for (row, (text, ..)) in rows[1..].iter().zip(CASES) {
        let first = text.lines().next().unwrap_or("");
        let cells = [
            shown_in_cell(text),
            shown_in_cell(text),
            shown_in_cell(first),
        ];
        assert_eq!(row, &cells, "{md}");
    }
    assert_eq!(rows.len(), CASES.len() + 1);

    // The bad lines: a list item each, the message whole.
    let items: Vec<String> = CASES
        .iter()
        .enumerate()
        .map(|(i, (text, ..))| format!("jobs line {}: {}", i + 1, shown(text)))
        .collect();
    assert_eq!(page.items, items, "{md}");
}

#[test]
fn the_same_texts_unfenced_make_links_images_html_headings_and_cells() {
    for (text, harm, naive) in CASES {
        let put = match naive {
            Naive::Raw => (*text).to_owned(),
            Naive::Span => format!("`{text}`"),
        };
        let md = format!(
            "\n### rounds batch\n\n| job | status | error |\n|---|---|---|\n| {put} | `error` | x |\n"
        );
        assert!(
            harmed(&read(&md), *harm, text),
            "{text:?}: no {harm:?} in\n{md}"
        );
        // The summary's own cell, for the same text, does no harm.
        let ours = report::markdown(&Summary::default(), &[failed(text, "error", "x")], &[]);
        let page = read(&ours);
        assert!(page.markup.is_empty(), "{ours}");
        assert_eq!(page.headings.len(), 1, "{ours}");
        assert_eq!(page.tables[1][1][0], shown_in_cell(text), "{ours}");
    }
}

/// Testcase names and failure messages as an XML parser reads them back.
fn junit_cases(xml: &str) -> Vec<(String, Option<String>)> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|c| {
            let failure = c
                .children()
                .find(|n| n.has_tag_name("failure") || n.has_tag_name("error"))
                .map(|f| f.attribute("message").unwrap_or("").to_owned());
            (c.attribute("name").unwrap_or("").to_owned(), failure)
        })
        .collect()
}

#[test]
fn hostile_ids_and_errors_stay_text_in_the_junit_xml() {
    let breakers = [
        "\"/><testcase name=\"forged\"/><testcase name=\"x",
        "a]]>b<!-- c --><![CDATA[d",
        "&amp; &#x41; &lt;",
        "quote ' and \"",
    ];
    let texts: Vec<&str> = CASES.iter().map(|c| c.0).chain(breakers).collect();
    let results: Vec<ResultLine> = texts.iter().map(|t| failed(t, "error", t)).collect();
    let bad = [BadLine {
        line: 9,
        message: breakers[0].into(),
    }];
    let cases = junit_cases(&report::junit(&results, &bad, 1.0));
    assert_eq!(cases.len(), texts.len() + 1);
    // An XML parser reads a line break in an attribute as a space.
    let attribute = |text: &str| text.replace("\r\n", " ").replace(['\n', '\r'], " ");
    for ((name, failure), text) in cases.iter().zip(&texts) {
        let first = text.lines().next().unwrap_or("");
        assert_eq!(name, &attribute(text));
        assert_eq!(
            failure.as_deref(),
            Some(&*format!("error (exit 1): {first}"))
        );
    }
    assert_eq!(cases[texts.len()].1.as_deref(), Some(breakers[0]));
    // Characters XML cannot hold are shown, not written.
    let controls = report::junit(&[failed("a\u{1b}[31m\u{0}", "error", "\u{ffff}")], &[], 1.0);
    assert_eq!(junit_cases(&controls)[0].0, "a\\u{1b}[31m\\u{0}");

    // Control: the same id written into the XML as it is forges a testcase.
    let raw = format!(
        "<testsuite><testcase name=\"{}\"/></testsuite>",
        breakers[0]
    );
    let forged = junit_cases(&raw);
    assert!(forged.iter().any(|c| c.0 == "forged"), "{forged:?}");
}

/// The summary's tables and items, and the files, of a batch with a hostile id, a failing job
/// whose error is hostile, an id at the file name limit and one past it.
#[test]
fn a_batch_with_hostile_ids_and_errors_writes_an_inert_summary() {
    let sb = Sandbox::new();
    let body: String = (1..=500).map(|i| format!("line {i}\n")).collect();
    sb.write("big.txt", &body);
    let hostile_error = "[x](https://evil.example) ![t](https://track.example/p.png) \
        <img src=x> ``` | a|b";
    let server = MockServer::respond(move |request| {
        let text = String::from_utf8_lossy(&request.body).into_owned();
        let asked = request.json()["messages"].as_array().map_or(0, Vec::len);
        if text.contains("Do limit.") && asked == 1 {
            Reply::sse(sse::anthropic(
                &[B::Tool("toolu_1", "read_file", r#"{"path":"big.txt"}"#)],
                "tool_use",
                1,
                1,
            ))
        } else if text.contains("Do fine.") {
            sse::answer("ok")
        } else {
            let message = serde_json::json!({"type": "error", "error": {
                "type": "invalid_request_error", "message": hostile_error}});
            Reply::error(400, &message.to_string())
        }
    });
    let hostile_id = "[x](https://evil.example) ![t](https://track.example/p.png) <img src=x> \
        `` a|b\\| # h";
    let limit_id = format!("{}abc", "é".repeat(36));
    assert_eq!(jobs::file_stem(&limit_id).len(), jobs::MAX_STEM_BYTES);
    let past_id = format!("{limit_id}d");
    let line =
        |id: &str, prompt: &str| serde_json::json!({"id": id, "prompt": prompt}).to_string() + "\n";
    let jobs_path = sb.path("jobs.jsonl");
    let text = [
        line(hostile_id, "Do hostile."),
        line(&limit_id, "Do limit."),
        line(&past_id, "Do past."),
        line("fine", "Do fine."),
    ]
    .concat();
    std::fs::write(&jobs_path, text).unwrap();
    let summary = sb.path("summary.md");
    let batch = || {
        let mut cmd = sb.anthropic(&server);
        cmd.arg("batch")
            .arg(&jobs_path)
            .arg("--out")
            .arg(sb.path("out"))
            .arg("--step-summary")
            .arg(&summary)
            .args(["--max-result-bytes", "1024", "--jobs", "1"]);
        cmd
    };
    let out = run(&mut batch());
    assert_eq!(out.code, 8, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("jobs.jsonl, line 3: the id is too long to name files"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains('\u{1b}'), "{}", out.stderr);

    let md = std::fs::read_to_string(&summary).unwrap();
    let page = read(&md);
    assert_eq!(page.markup, Vec::<String>::new(), "{md}");
    assert_eq!(
        page.headings,
        ["rounds batch: 1 of 4 jobs completed (1 bad line not run)"]
    );
    let mut rows = page.tables[1].clone();
    rows.sort();
    let error = format!("anthropic: HTTP 400 Bad Request: {hostile_error} (invalid_request_error)");
    let wanted = [
        [&shown_in_cell(hostile_id), "error", &error],
        ["job", "status", "error"],
        [&limit_id, "error", &error],
    ];
    assert_eq!(rows, wanted, "{md}");
    assert_eq!(page.items.len(), 1, "{md}");
    assert!(page.items[0].starts_with("jobs line 3: the id is too long"));

    // The id at the limit has its transcript and its outputs' folder; run again, its attempt
    // is set aside under a longer name.
    let stem = jobs::file_stem(&limit_id);
    let out_dir = sb.path("out");
    assert!(out_dir.join(format!("{stem}.jsonl")).is_file());
    let outputs = out_dir.join(format!("{stem}.outputs"));
    assert!(outputs.join("toolu_1.txt").is_file(), "{outputs:?}");
    let again = run(batch().arg("--retry-failed"));
    assert_eq!(again.code, 8, "{}", again.stderr);
    assert!(out_dir.join(format!("attempts/{stem}.1.jsonl")).is_file());
    assert!(out_dir.join(format!("{stem}.jsonl")).is_file());
}
