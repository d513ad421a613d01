//! Anthropic's prompt cache, simulated from its documented rules, to measure what a run's
//! requests would be billed: the prompt is the tools, then the system prompt, then every
//! message's blocks, in order; a `cache_control` breakpoint caches the prefix up to its block
//! if that prefix is at least 1,024 tokens; a request reads the longest cached prefix that ends
//! at a breakpoint or at one of the 20 blocks before it; what lies between that and the last
//! breakpoint is written; what follows the last breakpoint is plain input. Writes are billed at
//! 1.25× the input price and reads at 0.1× (the 5-minute cache). Tokens are counted as bytes/4.

#![allow(dead_code)]

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::sse::{self, B};

/// What the simulated run asks for.
pub const PROMPT: &str = "Read f0.txt to f19.txt, one per round, then say you are done.";

/// A 20-round run against the simulated cache: writes `f0.txt`…`f19.txt` of `file_bytes` into
/// `ws`, starts a server whose model reads one of them per round and then answers, and lets
/// `run` drive a run of `rounds` against it. Returns what the 21 requests' input was billed,
/// relative to the same input uncached.
pub fn twenty_rounds(ws: &Path, file_bytes: usize, run: impl FnOnce(&MockServer)) -> f64 {
    for i in 0..20 {
        let line = format!("line {i} of a file the model reads, padded to a useful length\n");
        std::fs::write(
            ws.join(format!("f{i}.txt")),
            line.repeat(file_bytes / line.len()),
        )
        .unwrap();
    }
    let billed = Arc::new(Mutex::new(Vec::new()));
    let record = billed.clone();
    let mut sim = CacheSim::default();
    let mut n = 0;
    let server = MockServer::respond(move |request| {
        let b = sim.bill(&request.json());
        record.lock().unwrap().push(b);
        let usage = json!({"input_tokens": b.input, "cache_creation_input_tokens": b.cache_write,
            "cache_read_input_tokens": b.cache_read, "output_tokens": 1});
        n += 1;
        let events = if n <= 20 {
            let (id, text) = (format!("t{n}"), format!("Reading file {}.", n - 1));
            let input = format!(r#"{{"path":"f{}.txt"}}"#, n - 1);
            let blocks = [B::Text(&text), B::Tool(&id, "read_file", &input)];
            sse::anthropic_with_usage(&blocks, "tool_use", usage, 30)
        } else {
            sse::anthropic_with_usage(&[B::Text("All read.")], "end_turn", usage, 10)
        };
        Reply::sse(events)
    });
    run(&server);
    let billed = billed.lock().unwrap();
    assert_eq!(billed.len(), 21, "the run made {} requests", billed.len());
    let uncached: u64 = billed.iter().map(|b| b.total()).sum();
    let cost: f64 = billed.iter().map(|b| b.cost()).sum();
    cost / uncached as f64
}

/// The longest stretch of blocks before a breakpoint the API checks for an earlier entry.
const LOOKBACK: usize = 20;
/// The shortest prefix the API caches (Sonnet).
const MIN_TOKENS: u64 = 1024;

/// Input tokens of one request, as the API would report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Billed {
    /// After the last breakpoint (or all of it when nothing could be cached).
    pub input: u64,
    pub cache_write: u64,
    pub cache_read: u64,
}

impl Billed {
    pub fn total(&self) -> u64 {
        self.input + self.cache_write + self.cache_read
    }

    /// What the input costs, in units of the uncached input price.
    pub fn cost(&self) -> f64 {
        self.input as f64 + 1.25 * self.cache_write as f64 + 0.1 * self.cache_read as f64
    }
}

/// The cache of one API key: the prefixes written so far, by hash.
#[derive(Default)]
pub struct CacheSim {
    cached: HashSet<u64>,
}

impl CacheSim {
    /// Bills one Messages request body and caches what its breakpoints ask for.
    pub fn bill(&mut self, body: &Value) -> Billed {
        let blocks = blocks(body);
        let mut hashes = Vec::with_capacity(blocks.len());
        let mut tokens = Vec::with_capacity(blocks.len());
        let mut hasher = DefaultHasher::new();
        let mut total = 0;
        for (block, _) in &blocks {
            block.to_string().hash(&mut hasher);
            hashes.push(hasher.finish());
            total += (block.to_string().len() as u64 / 4).max(1);
            tokens.push(total);
        }
        let breakpoints: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter(|(_, (_, marked))| *marked)
            .map(|(i, _)| i)
            .collect();
        // The longest cached prefix any breakpoint finds, looking back 20 blocks from it.
        let read_to = breakpoints
            .iter()
            .filter_map(|&b| {
                (b.saturating_sub(LOOKBACK - 1)..=b)
                    .rev()
                    .find(|&j| self.cached.contains(&hashes[j]))
            })
            .max();
        let read = read_to.map_or(0, |j| tokens[j]);
        let last = breakpoints.last().copied();
        let cacheable_to = last.filter(|&l| tokens[l] >= MIN_TOKENS);
        for &b in &breakpoints {
            if tokens[b] >= MIN_TOKENS {
                self.cached.insert(hashes[b]);
            }
        }
        match cacheable_to {
            Some(l) if tokens[l] > read => Billed {
                input: total - tokens[l],
                cache_write: tokens[l] - read,
                cache_read: read,
            },
            _ => Billed {
                input: total - read,
                cache_write: 0,
                cache_read: read,
            },
        }
    }
}

/// Every block of the prompt in order, without its `cache_control` (which is not part of
/// the cached content), and whether it carried one.
fn blocks(body: &Value) -> Vec<(Value, bool)> {
    let mut out = Vec::new();
    let mut push = |v: &Value| {
        let mut v = v.clone();
        let marked = v
            .as_object_mut()
            .is_some_and(|o| o.remove("cache_control").is_some());
        out.push((v, marked));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool);
    }
    match &body["system"] {
        Value::String(s) if !s.is_empty() => push(&serde_json::json!({"type": "text", "text": s})),
        Value::Array(items) => items.iter().for_each(&mut push),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::String(s) => push(&serde_json::json!({"type": "text", "text": s})),
            Value::Array(items) => items.iter().for_each(&mut push),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize, marked: bool) -> Value {
        let mut b = json!({"type": "text", "text": "x".repeat(n * 4 - 24)});
        if marked {
            b["cache_control"] = json!({"type": "ephemeral"});
        }
        b
    }

    #[test]
    fn writes_then_reads_and_respects_the_minimum_and_the_lookback() {
        let mut sim = CacheSim::default();
        let first = json!({"messages": [{"role": "user", "content": [text(2000, true)]}]});
        let billed = sim.bill(&first);
        assert_eq!(billed.cache_read, 0);
        assert!(
            billed.cache_write >= 1990 && billed.input == 0,
            "{billed:?}"
        );
        // The same prefix again, plus a new marked block: read the old, write the new.
        let second = json!({"messages": [{"role": "user", "content": [text(2000, false), text(500, true)]}]});
        let billed = sim.bill(&second);
        assert!(
            billed.cache_read >= 1990 && billed.cache_write >= 490,
            "{billed:?}"
        );
        // Too short to cache.
        let mut fresh = CacheSim::default();
        let short = json!({"messages": [{"role": "user", "content": [text(100, true)]}]});
        assert_eq!(fresh.bill(&short).cache_write, 0);
        assert_eq!(fresh.bill(&short).cache_read, 0);
        // A breakpoint more than 20 blocks after the cached one finds nothing.
        let mut far = vec![text(2000, false)];
        far.extend((0..25).map(|_| text(10, false)));
        far.push(text(10, true));
        let far = json!({"messages": [{"role": "user", "content": far}]});
        assert_eq!(sim.bill(&far).cache_read, 0);
    }
}
