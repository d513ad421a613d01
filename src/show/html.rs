//! A transcript as one self-contained HTML page, for a CI artifact opened in a browser: inline
//! CSS, no external assets, no JavaScript (folded results are `<details>`), and a Content
//! Security Policy that would block scripts and loads even if something slipped through.
//!
//! Every piece of the transcript goes through [`escape`]: control characters are first shown
//! escaped (as on a terminal, so a hidden bidi override or escape sequence is visible), then
//! `& < > " '` become entities. Text is only ever placed in element content or quoted
//! attribute values, never in a tag name, an unquoted attribute or a URL.

use std::fmt::Write;

use super::{defect_text, duration, end_head, input_text, result_head, time};
use crate::conversation::{Block, ToolResult, ToolUse};
use crate::transcript::{AgentLine, Round, Transcript};

/// `raw` made safe as HTML text or as a quoted attribute value.
pub(crate) fn escape(raw: &str) -> String {
    let shown = crate::terminal::text(raw);
    let mut out = String::with_capacity(shown.len() + 16);
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
body{font:15px/1.45 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;\
color:#1f2328;background:#fff}\
h1{font-size:1.4rem}h2{font-size:1.1rem;margin:0 0 .5rem}\
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0;font:13px/1.4 ui-monospace,monospace}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{color:#59636e}dd{margin:0}\
section{border:1px solid #d1d9e0;border-radius:6px;padding:.8rem 1rem;margin:1rem 0}\
.meta{color:#59636e;font-weight:normal;font-size:.9rem}\
.call{border-left:3px solid #0969da;padding-left:.7rem;margin:.6rem 0}\
.call code{font:13px ui-monospace,monospace;overflow-wrap:anywhere}\
details{margin:.3rem 0}summary{cursor:pointer}\
.ok>summary{color:#1a7f37}.error>summary,.error>pre,.err{color:#cf222e}\
.thinking,.note{color:#59636e}.warn{color:#9a6700}\
.status-ok{color:#1a7f37}.status-bad{color:#cf222e}\
.outcome{border-width:2px}\
@media (prefers-color-scheme:dark){body{color:#e6edf3;background:#0d1117}\
dt,.meta,.thinking,.note{color:#9198a1}section{border-color:#3d444d}\
.call{border-left-color:#4493f8}.ok>summary,.status-ok{color:#3fb950}\
.error>summary,.error>pre,.err,.status-bad{color:#f85149}.warn{color:#d29922}}";

/// The whole transcript as an HTML document.
/// The images a transcript's run was given or shown (`--attach`, `read_file`), read back from
/// beside it by digest, as `data:` URLs the page shows inline (its CSP allows `data:` images and
/// nothing else): a file that is gone or is not the one recorded is named, not shown.
#[derive(Default)]
pub(crate) struct Kept(std::collections::HashMap<String, String>);

impl Kept {
    pub(crate) fn beside(transcript: &std::path::Path, t: &Transcript) -> Kept {
        let results = t
            .rounds
            .iter()
            .flat_map(|r| &r.results)
            .flat_map(|r| &r.media);
        let records: Vec<crate::transcript::Attached> = t
            .start
            .attachments
            .iter()
            .cloned()
            .chain(results.map(crate::transcript::Attached::from))
            .filter(|a| a.kind.is_image())
            .collect();
        let dir = transcript.with_extension("outputs").join("attachments");
        let mut kept = std::collections::HashMap::new();
        for a in records {
            let file = dir.join(format!(
                "{}.{}",
                a.sha256,
                crate::attachment::Attachment::extension(a.kind)
            ));
            let mut data = Vec::new();
            let read = crate::files::open_regular(&file)
                .ok()
                .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut data).ok());
            if read.is_none() {
                continue;
            }
            if let Ok(found) = crate::attachment::Attachment::of(&a.path, data)
                && found.sha256 == a.sha256
                && found.kind.is_image()
            {
                kept.insert(a.sha256.clone(), crate::attachment::data_url(&found));
            }
        }
        Kept(kept)
    }
}

/// An attached image inline, or what it was when it is not kept; a PDF as its name.
fn figure(out: &mut String, a: &crate::transcript::Attached, kept: &Kept) {
    let about = format!(
        "{} ({}, {} bytes{})",
        a.path,
        a.kind.media_type(),
        a.bytes,
        a.width
            .zip(a.height)
            .map(|(w, h)| format!(", {w}×{h}"))
            .unwrap_or_default()
    );
    match kept.0.get(&a.sha256) {
        Some(url) => {
            let _ = writeln!(
                out,
                "<figure><img src=\"{}\" alt=\"{}\"><figcaption>{}</figcaption></figure>",
                escape(url),
                escape(&a.path),
                escape(&about)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "<p class=\"meta\">Attached: {} (not shown: not kept beside the transcript)</p>",
                escape(&about)
            );
        }
    }
}

pub(crate) fn render(t: &Transcript, path: &str, kept: &Kept) -> String {
    let s = &t.start;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>rounds run {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&s.run_id)
    );
    let _ = writeln!(
        out,
        "<header>\n<h1>rounds run <code>{}</code></h1>\n<dl>",
        escape(&s.run_id)
    );
    let mut field = |name: &str, value: &str| {
        let _ = writeln!(out, "<dt>{name}</dt><dd>{}</dd>", escape(value));
    };
    field("model", &format!("{}/{}", s.provider, s.model));
    field("started", &time(&s.time));
    field("workspace", &s.workspace);
    field("tools", &s.tools.join(", "));
    if let Some(from) = &s.resumed_from {
        field("resumed from", from);
    }
    field("transcript", path);
    out.push_str("</dl>\n</header>\n");
    // How it ended comes first: it is what a person opening the page looks for.
    outcome(&mut out, t);
    let _ = writeln!(
        out,
        "<section class=\"prompt\">\n<h2>Prompt</h2>\n<pre>{}</pre>",
        escape(s.user_prompt())
    );
    for a in &s.attachments {
        if a.kind != crate::attachment::Kind::Text {
            figure(&mut out, a, kept);
        }
    }
    out.push_str("</section>\n");
    // The answer is shown once, at the top; the round whose text it is points there.
    let answered = t
        .end
        .as_ref()
        .is_some_and(|e| !e.final_text.is_empty() && super::answer_is_last_text(t, &e.final_text));
    let last = t.rounds.len();
    let agents = Nest {
        lines: t.agents.iter().map(|(_, l)| l).collect(),
        path: String::new(),
        kept,
    };
    for (i, round) in t.rounds.iter().enumerate() {
        render_round(&mut out, round, answered && i + 1 == last, &agents);
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// How the run ended: its status, usage, error, and its answer, as preformatted text (the
/// answer is the model's Markdown: shown as written, never as markup).
fn outcome(out: &mut String, t: &Transcript) {
    out.push_str("<section class=\"outcome\" id=\"outcome\">\n");
    if t.torn_tail {
        out.push_str(
            "<p class=\"warn\">The last line was cut off (the run was killed while writing \
             it).</p>\n",
        );
    }
    match &t.end {
        Some(end) => {
            let class = if end.exit_code == 0 {
                "status-ok"
            } else {
                "status-bad"
            };
            let _ = writeln!(
                out,
                "<h2>Outcome: <span class=\"{class}\">{}</span></h2>\n<p>{} · {}</p>",
                escape(&end_head(end)),
                escape(&super::usage_text(&end.usage, end.cost_usd)),
                duration(end.duration_ms)
            );
            if let Some(error) = &end.error {
                let _ = writeln!(out, "<pre class=\"err\">{}</pre>", escape(error));
            }
            if !end.final_text.is_empty() {
                let _ = writeln!(
                    out,
                    "<h2>Answer</h2>\n<pre class=\"answer\">{}</pre>",
                    escape(&end.final_text)
                );
            }
        }
        None => out.push_str(
            "<p class=\"warn\">No end line: the run is still going, or was killed.</p>\n",
        ),
    }
    out.push_str("</section>\n");
}

/// A round: its head line, retries, what the model said and called with each call's result,
/// then what went wrong or was elided. `answer`: its text is the run's answer, shown above.
/// The transcript's subagent lines, each shown inside the `task` call that started it, and the
/// calls that lead to the rounds being rendered (empty: the run's own).
struct Nest<'a> {
    lines: Vec<&'a AgentLine>,
    path: String,
    /// The images the page shows inline.
    kept: &'a Kept,
}

/// What a round's id starts with: a subagent's rounds are numbered from 1 too, so their ids
/// name the way down to it.
fn id_prefix(agents: &Nest<'_>) -> String {
    match agents.path.as_str() {
        "" => String::new(),
        path => format!("agent-{}-", escape(&path.replace('/', "-"))),
    }
}

fn render_round(out: &mut String, round: &Round, answer: bool, agents: &Nest<'_>) {
    let _ = writeln!(
        out,
        "<section class=\"round\" id=\"{at}round-{n}\">\n<h2>Round {n}{summary} <span \
         class=\"meta\">{} model · {} tools · {}{stop}</span></h2>",
        duration(round.model_ms),
        duration(round.tools_ms),
        escape(&super::usage_text(&round.usage, round.cost_usd)),
        n = round.round,
        at = id_prefix(agents),
        summary = if round.summary {
            " (summary, no tools)"
        } else {
            ""
        },
        stop = round
            .stop_reason
            .as_ref()
            .map(|r| format!(" · stop: {}", escape(&super::name(r))))
            .unwrap_or_default(),
    );
    for retry in &round.retries {
        let _ = writeln!(
            out,
            "<p class=\"warn\">Retry after attempt {}: {} (waited {})</p>",
            retry.attempt,
            escape(&retry.error),
            duration(retry.delay_ms)
        );
    }
    let mut pointed = false;
    for block in &round.blocks {
        match block {
            Block::Text { .. } if answer => {
                if !std::mem::replace(&mut pointed, true) {
                    out.push_str(
                        "<p class=\"note\">The answer: shown under Outcome, at the top.</p>\n",
                    );
                }
            }
            _ => render_block(out, round, block, agents),
        }
    }
    if let Some(check) = &round.check {
        let (class, open) = if check.passed {
            ("ok", "")
        } else {
            ("error", " open")
        };
        let _ = writeln!(
            out,
            "<div class=\"call\"><details class=\"result {class}\"{open}><summary>{}</summary>\
             <pre>{}</pre></details></div>",
            escape(&super::check_head(check)),
            escape(&check.output)
        );
    }
    for stray in super::stray_results(round) {
        let _ = writeln!(
            out,
            "<div class=\"call\"><p class=\"warn\">Result for no call ({})</p>",
            escape(&stray.tool_use_id)
        );
        result(out, stray);
        out.push_str("</div>\n");
    }
    if let Some(error) = &round.error {
        let _ = writeln!(out, "<p class=\"err\">Stream error: {}</p>", escape(error));
    }
    if !round.elided.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\">Elided from this request on to fit the context window: {} \
             earlier results.</p>",
            round.elided.len()
        );
    }
    out.push_str("</section>\n");
}

/// One block of the model's turn: text, thinking (folded), or a tool call with its result.
fn render_block(out: &mut String, round: &Round, block: &Block, agents: &Nest<'_>) {
    match block {
        Block::Text { text, .. } => {
            let _ = writeln!(out, "<pre class=\"text\">{}</pre>", escape(text));
        }
        Block::Thinking { text, .. } => {
            let _ = writeln!(
                out,
                "<details class=\"thinking\"><summary>Thinking ({} lines)</summary><pre>{}\
                 </pre></details>",
                text.lines().count(),
                escape(text)
            );
        }
        Block::RedactedThinking { .. } => {
            out.push_str("<p class=\"thinking\">[redacted thinking]</p>\n");
        }
        Block::Reasoning { summary, .. } => {
            let _ = writeln!(
                out,
                "<details class=\"thinking\"><summary>Reasoning (encrypted; {} summary \
                 parts)</summary><pre>{}</pre></details>",
                summary.len(),
                escape(&summary.join("\n\n"))
            );
        }
        Block::ToolUse(call) => render_call(out, round, call, agents),
    }
}

/// A tool call: its name, id and input (pretty JSON when it parsed), why it did not run if it
/// did not, and its result.
fn render_call(out: &mut String, round: &Round, call: &ToolUse, agents: &Nest<'_>) {
    let input = match serde_json::to_string_pretty(&call.input) {
        Ok(pretty) if call.defect.is_none() => pretty,
        _ => input_text(call),
    };
    let _ = writeln!(
        out,
        "<div class=\"call\">\n<div>→ <b>{}</b> <span class=\"meta\">{}</span></div>\n\
         <pre class=\"input\">{}</pre>",
        escape(&call.name),
        escape(&call.id),
        escape(&input)
    );
    if let Some(defect) = defect_text(call) {
        let _ = writeln!(out, "<p class=\"err\">Not run: {}</p>", escape(&defect));
    }
    if call.name == crate::tools::delegate::TASK {
        subagent(out, &call.id, agents);
    }
    match super::result_of(round, call) {
        Some(r) => {
            result(out, r);
            for m in &r.media {
                figure(out, &crate::transcript::Attached::from(m), agents.kept);
            }
        }
        None if call.defect.is_none() => {
            out.push_str("<p class=\"warn\">No result recorded.</p>\n");
        }
        None => {}
    }
    out.push_str("</div>\n");
}

/// The subagent a `task` call started, as `<details>`: its start, its rounds (rendered as the
/// run's are), its end.
fn subagent(out: &mut String, id: &str, agents: &Nest<'_>) {
    let path = match agents.path.as_str() {
        "" => id.to_owned(),
        outer => format!("{outer}/{id}"),
    };
    let inner = Nest {
        lines: agents.lines.clone(),
        path: path.clone(),
        kept: agents.kept,
    };
    let mine: Vec<&AgentLine> = agents
        .lines
        .iter()
        .copied()
        .filter(|l| l.at().call == path)
        .collect();
    if mine.is_empty() {
        return;
    }
    out.push_str("<details class=\"subagent\" open>\n");
    for line in mine {
        match line {
            AgentLine::Start(s) => {
                let _ = writeln!(
                    out,
                    "<summary>subagent <b>{}</b> · {} <span class=\"meta\">{}</span></summary>",
                    escape(&s.at.agent),
                    escape(&s.description),
                    escape(&s.model)
                );
            }
            AgentLine::Round(r) => render_round(out, &r.round, false, &inner),
            AgentLine::End(e) => {
                let class = if e.status == crate::outcome::Status::Completed {
                    "ok"
                } else {
                    "err"
                };
                let _ = writeln!(
                    out,
                    "<p class=\"{class}\">subagent {} · {} round{} · {} · {}</p>",
                    escape(e.status.as_str()),
                    e.rounds,
                    if e.rounds == 1 { "" } else { "s" },
                    escape(&super::usage_text(&e.usage, e.cost_usd)),
                    duration(e.duration_ms)
                );
            }
        }
    }
    out.push_str("</details>\n");
}

/// A result as `<details>`: the summary line says how it went and shows its first line; the
/// whole recorded result is inside. Errors are open.
fn result(out: &mut String, r: &ToolResult) {
    let (class, open) = if r.is_error {
        ("error", " open")
    } else {
        ("ok", "")
    };
    let first = r.content.lines().next().unwrap_or("");
    let total = r.content.lines().count();
    let size = if total > 1 {
        format!(" ({total} lines)")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "<details class=\"result {class}\"{open}><summary>{}{size} <span class=\"meta\">{}\
         </span></summary><pre>{}</pre></details>",
        escape(&result_head(r)),
        escape(first.trim()),
        escape(&r.content)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_quotes_and_controls() {
        assert_eq!(
            escape("<a href=\"x\" title='y'>&amp;</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;"
        );
        assert_eq!(escape("a\u{202e}b\x1b[2J\n"), "a\\u{202e}b\\x1b[2J\n");
    }
}
