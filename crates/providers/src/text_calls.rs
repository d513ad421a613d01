//! Tool calls a model wrote as text. A local server whose chat template does not parse the
//! model's call format (small models on llama.cpp, Ollama, vLLM) passes the call through as
//! answer text: `<tool_call>{…}</tool_call>` (Qwen, Hermes), a fenced JSON block, or a response
//! that is nothing but the JSON. Read as an answer, the run would end there with the call unmade.
//!
//! Only what is unmistakably a call is taken: a tag or a fence opening a line outside a quote,
//! not introduced as an example, holding JSON objects with exactly `name` and `arguments` (or
//! `parameters`), every one naming a tool the request offered. Anything less stays text. Used
//! for the local providers only (`Flavor::Compatible`): a hosted API parses calls itself, so
//! text from it that looks like a call is the model talking about one.

use serde_json::{Map, Value};

/// The id prefix of calls read from text: how a transcript tells them from the server's calls.
pub(crate) const ID_PREFIX: &str = "call_from_text_";

/// Text longer than this is not searched (a call is far shorter; this bounds the work).
const MAX_TEXT: usize = 1 << 20;
/// At most this many calls are taken from one response (the loop guards bound them further).
const MAX_CALLS: usize = 16;
const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";
const FENCE: &str = "```";

/// One call found in the text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextCall {
    pub(crate) name: String,
    pub(crate) arguments: Map<String, Value>,
}

/// The calls a response's text holds, and the text left without them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    pub(crate) calls: Vec<TextCall>,
    pub(crate) rest: String,
}

/// The calls to `offered` tools that `text` holds; `None` when it holds none.
pub(crate) fn extract(text: &str, offered: &[String]) -> Option<Found> {
    if text.len() > MAX_TEXT || offered.is_empty() {
        return None;
    }
    let mut spans = candidates(text);
    if spans.is_empty() {
        spans.extend(bare(text));
    }
    let mut calls = Vec::new();
    let mut rest = Vec::new();
    let mut at = 0;
    for span in spans {
        let Some(found) = calls_in(&text[span.inner.0..span.inner.1], offered) else {
            continue;
        };
        if calls.len() + found.len() > MAX_CALLS {
            break;
        }
        // A small model at temperature 0 may write the same call over and over: once is the call.
        for call in found {
            if !calls.contains(&call) {
                calls.push(call);
            }
        }
        rest.push(text[at..span.start].trim());
        at = span.end;
    }
    if calls.is_empty() {
        return None;
    }
    rest.push(text[at..].trim());
    rest.retain(|r| !r.is_empty());
    Some(Found {
        calls,
        rest: rest.join("\n"),
    })
}

/// A stretch of text that may hold calls: `start..end` is what goes if it does, `inner` the JSON.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    start: usize,
    end: usize,
    inner: (usize, usize),
}

/// The tags and fences that open a line, outside quotes and examples, in order. One pass over
/// the lines: the work is linear in the text, however many tags it opens.
fn candidates(text: &str) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut pos = 0;
    // Once a fence finds no closing line, no later one will: not searched again.
    let mut unclosed = false;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let line = &text[pos..line_end];
        let body = line.trim_start();
        let indent = line.len() - body.len();
        let opens = body.starts_with(OPEN_TAG) || !unclosed && body.starts_with(FENCE);
        let span = if !opens || indent > 3 || is_example(&text[..pos]) {
            None
        } else if body.starts_with(OPEN_TAG) {
            let inner_start = pos + indent + OPEN_TAG.len();
            // An unclosed tag runs to the end: the model stopped after the call.
            Some(match text[inner_start..].find(CLOSE_TAG) {
                Some(i) => Span {
                    start: pos,
                    end: inner_start + i + CLOSE_TAG.len(),
                    inner: (inner_start, inner_start + i),
                },
                None => Span {
                    start: pos,
                    end: text.len(),
                    inner: (inner_start, text.len()),
                },
            })
        } else {
            let close = closing_fence(text, line_end);
            unclosed = close.is_none();
            close.map(|(close_start, close_end)| Span {
                start: pos,
                end: close_end,
                inner: (line_end, close_start),
            })
        };
        match span {
            Some(span) => {
                pos = span.end;
                spans.push(span);
            }
            None => pos = line_end,
        }
    }
    spans
}

/// A response that is nothing but calls: one or more JSON objects, and nothing else but the
/// stray braces a chat template's escaping leaves around them (`{{"name": …}}}}`).
fn bare(text: &str) -> Option<Span> {
    let start = text.find(|c: char| c != '{' && !c.is_whitespace())?;
    let open = text[..start].rfind('{')?;
    if text[..open].chars().any(|c| c != '{' && !c.is_whitespace()) {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(&text[open..]).into_iter::<Value>();
    while let Some(Ok(_)) = values.next() {}
    let end = open + values.byte_offset();
    let tail_is_braces = text[end..].chars().all(|c| c == '}' || c.is_whitespace());
    (end > open && tail_is_braces).then_some(Span {
        start: 0,
        end: text.len(),
        inner: (open, end),
    })
}

/// The line that closes a fence whose content starts at `from`: its start and end.
fn closing_fence(text: &str, from: usize) -> Option<(usize, usize)> {
    let mut pos = from;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        if text[pos..line_end].trim() == FENCE {
            return Some((pos, line_end));
        }
        pos = line_end;
    }
    None
}

/// Whether the last line with words before a candidate introduces it as an example.
fn is_example(before: &str) -> bool {
    let Some(last) = before.lines().rev().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let last = last.to_lowercase();
    ["example", "e.g.", "for instance", "such as", "like this"]
        .iter()
        .any(|w| last.contains(w))
}

/// The calls a tag's or fence's content holds: one or more JSON objects (or an array of them),
/// every one a call to an offered tool, or `None`.
fn calls_in(json: &str, offered: &[String]) -> Option<Vec<TextCall>> {
    let mut values = Vec::new();
    for value in serde_json::Deserializer::from_str(json).into_iter::<Value>() {
        match value.ok()? {
            Value::Array(items) => values.extend(items),
            v => values.push(v),
        }
    }
    if values.is_empty() {
        return None;
    }
    values.into_iter().map(|v| call_of(v, offered)).collect()
}

fn call_of(value: Value, offered: &[String]) -> Option<TextCall> {
    let Value::Object(mut object) = value else {
        return None;
    };
    let Some(Value::String(name)) = object.remove("name") else {
        return None;
    };
    let arguments = match (object.remove("arguments"), object.remove("parameters")) {
        (Some(a), None) | (None, Some(a)) => a,
        _ => return None,
    };
    // Some models write the arguments as a JSON string, as the wire format carries them.
    let arguments = match arguments {
        Value::String(s) => serde_json::from_str(&s).ok()?,
        a => a,
    };
    let Value::Object(arguments) = arguments else {
        return None;
    };
    (object.is_empty() && offered.contains(&name)).then_some(TextCall { name, arguments })
}

#[cfg(test)]
mod tests;
