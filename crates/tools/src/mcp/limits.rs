//! What rounds accepts from an MCP server: everything a server sends is hostile input, and some
//! of it is resent to the model every round. So a message (one line on the server's stdout) is
//! at most `MAX_LINE` bytes — a server that sends more is dropped —, a server offers at most
//! `MAX_TOOLS` tools, a description is cut at `MAX_DESCRIPTION` bytes, and a tool whose input
//! schema is larger than `MAX_SCHEMA` bytes is left out; each with a warning.

use rmcp::model::Tool;

/// The longest message (one line of JSON-RPC) read from a server. Results larger than what
/// the model gets are capped later like every tool's (head + tail, the whole in a file); this
/// bound is what keeps memory in check while a line is still being read.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;
/// The most tools taken from one server; the rest are left out.
pub(crate) const MAX_TOOLS: usize = 512;
/// The longest tool description kept whole.
pub(crate) const MAX_DESCRIPTION: usize = 2048;
/// The largest input schema (as JSON) of a tool that is offered.
pub(crate) const MAX_SCHEMA: usize = 16 * 1024;

/// `MAX_LINE`, or less when `ROUNDS_MCP_MAX_LINE` (bytes) says so: the tests show the bound
/// with a few MiB instead of hundreds. It can only lower the limit.
pub(crate) fn max_line() -> usize {
    crate::env::var("ROUNDS_MCP_MAX_LINE")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .map_or(MAX_LINE, |n| n.min(MAX_LINE))
}

/// The tools of server `server` that are offered, held to the limits, with a warning for each
/// kind of cut. `more` says the server had tools beyond those listed.
pub(crate) fn vet(server: &str, mut tools: Vec<Tool>, more: bool) -> Vec<Tool> {
    if more || tools.len() > MAX_TOOLS {
        tracing::warn!(
            "MCP server {server} offers more than {MAX_TOOLS} tools; only the first \
             {MAX_TOOLS} are used"
        );
        tools.truncate(MAX_TOOLS);
    }
    let mut cut = 0;
    let mut kept = Vec::with_capacity(tools.len());
    for mut tool in tools {
        let schema = serde_json::to_string(&tool.input_schema).map_or(usize::MAX, |s| s.len());
        if schema > MAX_SCHEMA {
            tracing::warn!(
                "MCP server {server}: tool {:?} is left out: its input schema is {schema} bytes, \
                 more than {MAX_SCHEMA}",
                shorten(&tool.name, 64)
            );
            continue;
        }
        if let Some(d) = &tool.description
            && d.len() > MAX_DESCRIPTION
        {
            cut += 1;
            let kept = shorten(d, MAX_DESCRIPTION);
            let text = format!(
                "{kept} [… {} more bytes cut by rounds]",
                d.len() - kept.len()
            );
            tool.description = Some(text.into());
        }
        kept.push(tool);
    }
    if cut > 0 {
        tracing::warn!(
            "MCP server {server}: {cut} tool description(s) longer than {MAX_DESCRIPTION} bytes \
             were cut"
        );
    }
    kept
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn shorten(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    fn tool(name: &str, description: &str, schema: Value) -> Tool {
        let Value::Object(schema) = schema else {
            panic!("not an object")
        };
        Tool::new(name.to_owned(), description.to_owned(), schema)
    }

    fn names(tools: &[Tool]) -> Vec<String> {
        tools.iter().map(|t| t.name.to_string()).collect()
    }

    #[test]
    fn too_many_tools_keep_the_first() {
        let many: Vec<Tool> = (0..MAX_TOOLS + 5)
            .map(|i| tool(&format!("t{i}"), "d", json!({})))
            .collect();
        let kept = vet("s", many.clone(), false);
        assert_eq!(kept.len(), MAX_TOOLS);
        assert_eq!(names(&kept), names(&many[..MAX_TOOLS]));
        // The control: at the limit nothing is cut; a server with more pages is cut too.
        assert_eq!(vet("s", many[..MAX_TOOLS].to_vec(), false).len(), MAX_TOOLS);
        assert_eq!(vet("s", many[..3].to_vec(), true).len(), 3);
    }

    #[test]
    fn long_descriptions_are_cut_with_a_marker_and_huge_schemas_left_out() {
        let at_limit = "é".repeat(MAX_DESCRIPTION / 2);
        let over = format!("{at_limit}x☔☔");
        let wide = json!({"type": "object", "description": "w".repeat(MAX_SCHEMA)});
        let fits = json!({"type": "object", "description": "w".repeat(MAX_SCHEMA - 100)});
        let kept = vet(
            "s",
            vec![
                tool("ok", &at_limit, json!({})),
                tool("long", &over, json!({})),
                tool("wide", "d", wide),
                tool("fits", "d", fits),
            ],
            false,
        );
        assert_eq!(names(&kept), ["ok", "long", "fits"]);
        assert_eq!(kept[0].description.as_deref(), Some(at_limit.as_str()));
        assert_eq!(
            kept[1].description.as_deref(),
            Some(format!("{at_limit} [… 7 more bytes cut by rounds]").as_str())
        );
    }

    #[test]
    fn the_line_limit_can_only_be_lowered() {
        // Read from the environment, which tests share: only the parsing is checked here.
        assert!(max_line() <= MAX_LINE);
        assert_eq!(shorten("a☔b", 2), "a");
        assert_eq!(shorten("a☔b", 4), "a☔");
    }
}
