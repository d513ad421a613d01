//! What a batch reports once it ends: the JUnit XML file (a testcase per job), the Markdown
//! summary for CI job pages, and the figures of the final stderr table.

use std::collections::BTreeMap;

use super::jobs::BadLine;
use super::results::ResultLine;
use crate::conversation::Usage;
use crate::outcome::Status;
use crate::{markdown, terminal};

/// The figures of a finished batch.
#[derive(Debug, Default)]
pub struct Summary {
    /// Jobs by status, in the order of the README's exit table (not started last).
    pub(crate) by_status: BTreeMap<String, usize>,
    pub(crate) jobs: usize,
    pub(crate) completed: usize,
    pub(crate) usage: Usage,
    pub(crate) cost_usd: Option<f64>,
    /// The slowest jobs: (id, milliseconds), slowest first.
    pub(crate) slowest: Vec<(String, u64)>,
    pub(crate) bad_lines: usize,
}

impl Summary {
    /// "N of M jobs completed": every line of the jobs file counts, a bad line as a job that
    /// did not run, so no line is left out of the count unseen.
    pub(crate) fn headline(&self) -> String {
        let all = self.jobs + self.bad_lines;
        let mut text = format!(
            "{} of {all} job{} completed",
            self.completed,
            if all == 1 { "" } else { "s" }
        );
        if self.bad_lines > 0 {
            let s = if self.bad_lines == 1 { "" } else { "s" };
            text.push_str(&format!(" ({} bad line{s} not run)", self.bad_lines));
        }
        text
    }

    /// The batch's status when no signal stopped it: completed when every line of the jobs
    /// file was a job that completed; unavailable when the only jobs that did not were ended by
    /// a provider that stayed unavailable (running the batch again resumes them); else
    /// incomplete.
    pub(crate) fn status(&self) -> Status {
        let unavailable = self.by_status.get(Status::Unavailable.as_str());
        match (self.bad_lines, self.jobs - self.completed) {
            (0, 0) => Status::Completed,
            (0, failed) if unavailable == Some(&failed) => Status::Unavailable,
            _ => Status::Incomplete,
        }
    }

    pub fn of(results: &[ResultLine], bad_lines: usize) -> Summary {
        let mut s = Summary {
            jobs: results.len(),
            bad_lines,
            ..Summary::default()
        };
        for r in results {
            *s.by_status.entry(r.status.clone()).or_default() += 1;
            s.completed += usize::from(r.completed());
            s.usage.add(&r.usage);
            if let Some(c) = r.cost_usd {
                s.cost_usd = Some(s.cost_usd.unwrap_or(0.0) + c);
            }
        }
        let mut times: Vec<(String, u64)> = results
            .iter()
            .filter(|r| r.exit_code.is_some())
            .map(|r| (r.id.clone(), r.duration_ms))
            .collect();
        times.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        times.truncate(5);
        s.slowest = times;
        s
    }
}

/// The JUnit XML report: one testcase per job (a failure for each that did not complete, with
/// its error and its last answer) and one per bad line of the jobs file (an error).
pub fn junit(results: &[ResultLine], bad: &[BadLine], seconds: f64) -> String {
    let failures = results.iter().filter(|r| !r.completed()).count();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let head = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"{}\" time=\"{seconds:.3}\"",
        results.len() + bad.len(),
        bad.len()
    );
    xml.push_str(&format!("<testsuites name=\"rounds batch\" {head}>\n"));
    xml.push_str(&format!(
        "  <testsuite name=\"rounds batch\" skipped=\"0\" {head}>\n"
    ));
    for r in results {
        xml.push_str(&format!(
            "    <testcase classname=\"rounds.batch\" name=\"{}\" time=\"{:.3}\"",
            escape(&r.id),
            r.duration_ms as f64 / 1000.0
        ));
        if r.completed() {
            xml.push_str(">\n");
        } else {
            let code = r.exit_code.map_or("none".to_owned(), |c| c.to_string());
            let error = r.error.as_deref().unwrap_or("");
            xml.push_str(&format!(
                ">\n      <failure type=\"{}\" message=\"{}\">",
                escape(&r.status),
                escape(&format!(
                    "{} (exit {code}): {}",
                    r.status,
                    first_line(error)
                ))
            ));
            let mut body = format!("status: {}\nexit code: {code}\nerror: {error}\n", r.status);
            if !r.final_text.is_empty() {
                body.push_str(&format!("last answer:\n{}\n", r.final_text));
            }
            xml.push_str(&escape(&body));
            xml.push_str("</failure>\n");
        }
        if let Some(path) = &r.transcript {
            xml.push_str(&format!(
                "      <system-out>transcript: {}</system-out>\n",
                escape(&path.display().to_string())
            ));
        }
        xml.push_str("    </testcase>\n");
    }
    for b in bad {
        xml.push_str(&format!(
            "    <testcase classname=\"rounds.batch.jobs\" name=\"line {}\" time=\"0\">\n      \
             <error type=\"bad_line\" message=\"{}\"/>\n    </testcase>\n",
            b.line,
            escape(&b.message)
        ));
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

/// Text for XML content and attribute values: the five markup characters as entities, and
/// the characters XML 1.0 cannot hold at all (most C0 controls, lone surrogates cannot occur in
/// a `str`, U+FFFE and U+FFFF) as a visible `\u{…}`.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The most failed jobs, and bad lines, the Markdown summary lists one by one.
const MAX_FAILED_ROWS: usize = 50;
const MAX_BAD_ROWS: usize = 20;

/// The Markdown summary appended to `$GITHUB_STEP_SUMMARY` (or `--step-summary FILE`). Ids,
/// statuses, errors and bad lines' messages come from the jobs file, a model, a provider or the
/// store: each is a code span no text inside can close (see `markdown`), so none can add a
/// link, an image, HTML, a heading or a row to the page. It starts and ends with a blank line,
/// to stand apart from whatever else the step appends.
pub fn markdown(summary: &Summary, results: &[ResultLine], bad: &[BadLine]) -> String {
    let mut md = format!(
        "\n### rounds batch: {}\n\n| status | jobs |\n|---|---|\n",
        summary.headline()
    );
    for (status, n) in &summary.by_status {
        md.push_str(&format!("| {} | {n} |\n", cell(status)));
    }
    if !bad.is_empty() {
        md.push_str(&format!("| bad lines | {} |\n", bad.len()));
    }
    let u = &summary.usage;
    md.push_str(&format!(
        "\nTokens: {} in, {} out{}.\n",
        u.input_total(),
        u.output_tokens,
        summary
            .cost_usd
            .map_or(String::new(), |c| format!("; cost ${c:.4}"))
    ));
    let failed: Vec<&ResultLine> = results.iter().filter(|r| !r.completed()).collect();
    if !failed.is_empty() {
        md.push_str("\n| job | status | error |\n|---|---|---|\n");
        for r in failed.iter().take(MAX_FAILED_ROWS) {
            let error = first_line(r.error.as_deref().unwrap_or(""));
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                cell(&r.id),
                cell(&r.status),
                cell(&crate::net::clip(error, 200))
            ));
        }
        if failed.len() > MAX_FAILED_ROWS {
            md.push_str(&format!(
                "\n…and {} more.\n",
                failed.len() - MAX_FAILED_ROWS
            ));
        }
    }
    if !bad.is_empty() {
        md.push('\n');
    }
    for b in bad.iter().take(MAX_BAD_ROWS) {
        md.push_str(&format!(
            "- jobs line {}: {}\n",
            b.line,
            span(&crate::net::clip(&b.message, 300))
        ));
    }
    if bad.len() > MAX_BAD_ROWS {
        md.push_str(&format!(
            "\n…and {} more bad lines.\n",
            bad.len() - MAX_BAD_ROWS
        ));
    }
    md.push('\n');
    md
}

/// Someone else's text as a code span on one line, control characters shown escaped.
fn span(text: &str) -> String {
    markdown::code_span(&terminal::line(text))
}

/// The same in a table cell.
fn cell(text: &str) -> String {
    markdown::cell_span(&terminal::line(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, status: &str, ms: u64) -> ResultLine {
        ResultLine {
            id: id.into(),
            line: 1,
            status: status.into(),
            exit_code: Some(if status == "completed" { 0 } else { 3 }),
            rounds: 1,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 1,
                ..Usage::default()
            },
            cost_usd: None,
            duration_ms: ms,
            final_text: "answer <b>&\u{1b}[31m".into(),
            final_json: None,
            error: (status != "completed").then(|| "the round limit\nwas reached".to_owned()),
            failure: None,
            transcript: None,
            run_id: None,
        }
    }

    #[test]
    fn figures_count_statuses_usage_and_the_slowest() {
        let results = [result("a", "completed", 5), result("b", "max_rounds", 9)];
        let s = Summary::of(&results, 1);
        assert_eq!((s.jobs, s.completed, s.bad_lines), (2, 1, 1));
        assert_eq!(s.by_status.get("max_rounds"), Some(&1));
        assert_eq!(s.usage.input_tokens, 20);
        assert_eq!(s.slowest[0], ("b".to_owned(), 9));
        let md = markdown(&s, &results, &[]);
        assert!(
            md.contains("1 of 3 jobs completed (1 bad line not run)"),
            "{md}"
        );
        assert!(md.contains("| `b` | `max_rounds` |"), "{md}");
    }

    #[test]
    fn a_bad_line_fails_the_batch_and_only_unavailable_jobs_make_it_unavailable() {
        let status = |statuses: &[&str], bad: usize| {
            let results: Vec<ResultLine> = statuses.iter().map(|s| result("j", s, 1)).collect();
            Summary::of(&results, bad).status()
        };
        assert_eq!(status(&["completed", "completed"], 0), Status::Completed);
        assert_eq!(status(&["completed"], 1), Status::Incomplete);
        assert_eq!(status(&[], 1), Status::Incomplete);
        assert_eq!(
            status(&["completed", "unavailable"], 0),
            Status::Unavailable
        );
        let both = ["unavailable", "unavailable"];
        assert_eq!(status(&both, 0), Status::Unavailable);
        assert_eq!(status(&both, 1), Status::Incomplete);
        let mixed = ["unavailable", "error"];
        assert_eq!(status(&mixed, 0), Status::Incomplete);
        let one = Summary::of(&[result("a", "completed", 1)], 0);
        assert_eq!(one.headline(), "1 of 1 job completed");
    }

    #[test]
    fn escaping_leaves_no_markup_and_no_forbidden_characters() {
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
        assert_eq!(escape("\u{1b}[0m\u{0}\ttab"), "\\u{1b}[0m\\u{0}\ttab");
    }
}
