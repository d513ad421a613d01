//! Loop guards: a model that runs away is stopped long before the round limit or the deadline.
//!
//! A small model can fill one response with a hundred copies of the same call, and answer the
//! same way round after round. Three guards bound that, each recorded in the round's transcript
//! line (`guards`):
//!
//! - **Calls per response** (`--max-calls-per-round N`): the first call past N ends the reading
//!   of the response. The stream is dropped, which cancels the request, so no more output is
//!   generated or paid for; what had already arrived is still read (without waiting), the first
//!   N calls run, and every later call gets an error result saying it was dropped and why. The
//!   limit is checked at the first call *past* N, not at the N-th, so a response with exactly N
//!   calls is read to its end and keeps its usage and stop reason.
//! - **Identical calls in one response** (same tool, same arguments) run once; each copy gets a
//!   result that points to the first.
//! - **Repetition across rounds** (`--max-repeats K`): the K-th time the same call returns the
//!   same result, the result says so plainly; if the model makes it once more and gets the same
//!   result again, the run ends with status `stuck` (exit 9).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::conversation::{Block, ErrorKind, Message, ToolResult, ToolUse};
use crate::transcript::{GuardKind, GuardNote, Round};

/// What becomes of a call as it arrives in the stream.
pub(crate) enum Admit {
    /// Run it.
    Run,
    /// Do not run it: this is its result.
    Answer(ToolResult),
}

/// The guards of one response (one attempt at a round's request).
pub(crate) struct Response {
    max_calls: u32,
    calls: u32,
    /// The first call of each (tool, arguments) in this response, by key.
    firsts: HashMap<String, String>,
    pub(crate) notes: Vec<GuardNote>,
}

impl Response {
    pub(crate) fn new(max_calls: u32) -> Response {
        Response {
            max_calls: max_calls.max(1),
            calls: 0,
            firsts: HashMap::new(),
            notes: Vec::new(),
        }
    }

    /// Decides about the next call of the response.
    pub(crate) fn admit(&mut self, call: &ToolUse) -> Admit {
        self.calls += 1;
        if self.calls > self.max_calls {
            if self.calls == self.max_calls + 1 {
                self.notes.push(note(GuardKind::Cut, None));
            }
            self.notes.push(note(GuardKind::Dropped, Some(&call.id)));
            let n = self.max_calls;
            return Admit::Answer(ToolResult::error(
                call,
                ErrorKind::Dropped,
                format!(
                    "not run: this run allows at most {n} tool call{} per response, and the \
                     response was cut here. Read the results you have, then ask for the calls \
                     you still need.",
                    if n == 1 { "" } else { "s" }
                ),
            ));
        }
        let key = key(call);
        if let Some(first) = self.firsts.get(&key) {
            let mut n = note(GuardKind::Duplicate, Some(&call.id));
            n.of = Some(first.clone());
            self.notes.push(n);
            let content = format!(
                "{COPY}this is the same call (same tool, same arguments) as {first} in this \
                 response; its result answers both."
            );
            return Admit::Answer(ToolResult::ok(call, content));
        }
        self.firsts.insert(key, call.id.clone());
        Admit::Run
    }

    /// Whether the response has asked for more calls than it may: read no further.
    pub(crate) fn is_cut(&self) -> bool {
        self.calls > self.max_calls
    }

    /// Counts the `cut` note's calls: every call the response had asked for once reading stopped.
    pub(crate) fn close(&mut self) {
        let calls = self.calls;
        if let Some(cut) = self.notes.iter_mut().find(|n| n.kind == GuardKind::Cut) {
            cut.count = Some(calls);
        }
    }
}

/// Repetition across the rounds of a run.
pub(crate) struct Repeats {
    max: u32,
    seen: HashMap<String, Seen>,
}

struct Seen {
    result: u64,
    count: u32,
}

impl Repeats {
    pub(crate) fn new(max: u32) -> Repeats {
        Repeats {
            max: max.max(1),
            seen: HashMap::new(),
        }
    }

    /// Looks at a finished round's calls and results (the calls the guards did not run are left
    /// out): adds the note to the result of a call that returned the same result for the
    /// `max`-th time, records it in the round's guards, and returns why the run is stuck when a
    /// call did so again after its note.
    pub(crate) fn check(&mut self, round: &mut Round) -> Option<String> {
        let notes = &mut round.guards;
        let mut stuck = None;
        for result in round.results.iter_mut() {
            let not_run = notes.iter().any(|n| {
                matches!(n.kind, GuardKind::Dropped | GuardKind::Duplicate)
                    && n.tool_use_id.as_deref() == Some(result.tool_use_id.as_str())
            });
            let call = round.blocks.iter().find_map(|b| match b {
                Block::ToolUse(call) if call.id == result.tool_use_id => Some(call),
                _ => None,
            });
            let Some(call) = call.filter(|_| !not_run) else {
                continue;
            };
            let count = self.count(call, fingerprint(result));
            // A first call is no repeat: with a limit of 1 there is no warning, and the first
            // repeat is the one that ends the run.
            let kind = match count {
                c if c > self.max => GuardKind::Stuck,
                c if c == self.max && c > 1 => GuardKind::Repeated,
                _ => continue,
            };
            result.content.push_str(&format!(
                "{NOTE}{count} times and got this same result each time. It will not change. Do \
                 something else.]"
            ));
            let mut n = note(kind, Some(&call.id));
            n.count = Some(count);
            notes.push(n);
            if kind == GuardKind::Stuck && stuck.is_none() {
                let warned = if self.max > 1 {
                    "and went on after being told it would not change"
                } else {
                    "and --max-repeats 1 allows no repeat"
                };
                stuck = Some(format!(
                    "stuck: the model made the same {} call {count} times and got the same result \
                     each time, {warned}",
                    call.name
                ));
            }
        }
        stuck
    }

    /// Counts the calls and results of a conversation resumed from a transcript, so that a
    /// model stuck before the resume is not given a fresh allowance by it. Results the guards
    /// made (dropped calls, copies) are not counts, and the note `check` added to a result is
    /// taken off again before it is compared.
    pub(crate) fn seed(&mut self, history: &[Message]) {
        let mut calls: HashMap<&str, &ToolUse> = HashMap::new();
        for message in history {
            match message {
                Message::Assistant { blocks, .. } => {
                    calls = blocks
                        .iter()
                        .filter_map(|b| match b {
                            Block::ToolUse(call) => Some((call.id.as_str(), call)),
                            _ => None,
                        })
                        .collect();
                }
                Message::ToolResults(results) => {
                    for result in results {
                        let made_here = result.error_kind == Some(ErrorKind::Dropped)
                            || result.content.starts_with(COPY);
                        if let Some(call) = calls.get(result.tool_use_id.as_str())
                            && !made_here
                        {
                            let mut as_returned = result.clone();
                            if let Some(at) = as_returned.content.find(NOTE) {
                                as_returned.content.truncate(at);
                            }
                            self.count(call, fingerprint(&as_returned));
                        }
                    }
                }
                Message::User(_) | Message::Attached { .. } => {}
            }
        }
    }

    /// How many times in a row `call` has now returned the result whose fingerprint this is.
    fn count(&mut self, call: &ToolUse, fingerprint: u64) -> u32 {
        let seen = self.seen.entry(key(call)).or_insert(Seen {
            result: fingerprint,
            count: 0,
        });
        if seen.result == fingerprint {
            seen.count += 1;
        } else {
            *seen = Seen {
                result: fingerprint,
                count: 1,
            };
        }
        seen.count
    }
}

/// What `check` appends to a repeated result, up to the count.
const NOTE: &str = "\n\n[rounds: you have made this exact call ";
/// How the result of a copy of a call in the same response begins.
const COPY: &str = "not run again: ";

fn note(kind: GuardKind, id: Option<&str>) -> GuardNote {
    GuardNote {
        kind,
        tool_use_id: id.map(str::to_owned),
        of: None,
        count: None,
    }
}

/// What makes two calls the same: the tool and its arguments, with object keys sorted (the
/// model may order them differently); the raw text for arguments that did not parse.
fn key(call: &ToolUse) -> String {
    let mut key = call.name.clone();
    key.push('\0');
    match (&call.defect, &call.raw_input) {
        (Some(_), Some(raw)) => key.push_str(raw),
        _ => canonical(&call.input, &mut key),
    }
    key
}

/// JSON with object keys in sorted order.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A hash of what a result says, leaving out what differs between two runs of the same call
/// with the same outcome: the call's own id (in the names of saved output files) and the lines
/// the tool marked volatile (`bash`'s duration), which it reports as data.
fn fingerprint(result: &ToolResult) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    result.is_error.hash(&mut h);
    let content = result.content.replace(&result.tool_use_id, "");
    for line in content.lines() {
        if !result.volatile.iter().any(|v| v == line) {
            timeless(line).hash(&mut h);
        }
    }
    h.finish()
}

/// A line with its durations (`0.003s`, `12 ms`) made alike: a test runner's "Ran 1 test in
/// 0.001s" must not make the same failing run look like progress each time. Scanned by hand:
/// it runs on every result of every round, and a regex would cost its compiled automaton.
pub(super) fn timeless(line: &str) -> std::borrow::Cow<'_, str> {
    const UNITS: [&str; 8] = ["seconds", "secs", "sec", "ms", "us", "µs", "ns", "s"];
    let b = line.as_bytes();
    if !b.iter().any(u8::is_ascii_digit) {
        return std::borrow::Cow::Borrowed(line);
    }
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let (mut out, mut last, mut i) = (String::new(), 0, 0);
    while i < b.len() {
        if !b[i].is_ascii_digit() || i > 0 && word(b[i - 1]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        let at = if b.get(i) == Some(&b' ') { i + 1 } else { i };
        let rest = &line[at..];
        let unit = UNITS.iter().find(|u| {
            rest.starts_with(*u) && rest.as_bytes().get(u.len()).is_none_or(|&c| !word(c))
        });
        if let Some(unit) = unit {
            out.push_str(&line[last..start]);
            out.push_str("#s");
            i = at + unit.len();
            last = i;
        }
    }
    if last == 0 {
        return std::borrow::Cow::Borrowed(line);
    }
    out.push_str(&line[last..]);
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_do_not_make_a_result_new() {
        assert_eq!(
            timeless("Ran 1 test in 0.001s"),
            timeless("Ran 1 test in 0.013s")
        );
        assert_eq!(timeless("took 12 ms, 3 seconds"), "took #s, #s");
        // Other numbers are the result: a count that changed is progress.
        assert_ne!(timeless("3 files"), timeless("4 files"));
        assert_ne!(
            timeless("FAILED (failures=1)"),
            timeless("FAILED (failures=2)")
        );
        assert_eq!(timeless("v1.2s3"), "v1.2s3");
        assert_eq!(timeless("a12s 5s"), "a12s #s");
        assert_eq!(timeless("0.5µs, 7 secs."), "#s, #s.");
        assert_eq!(timeless("3 sessions"), "3 sessions");
    }

    fn call(id: &str, name: &str, args: &str) -> ToolUse {
        ToolUse::from_raw(id.into(), name.into(), args)
    }

    fn result(call: &ToolUse, content: &str) -> ToolResult {
        ToolResult {
            tool_use_id: call.id.clone(),
            name: call.name.clone(),
            is_error: false,
            content: content.into(),
            error_kind: None,
            duration_ms: 0,
            truncated: false,
            bytes: content.len() as u64,
            full_output: None,
            redacted: Vec::new(),
            volatile: Vec::new(),
            exit_code: None,
            media: Vec::new(),
        }
    }

    #[test]
    fn calls_past_the_limit_are_dropped_and_copies_point_to_the_first() {
        let mut r = Response::new(3);
        let a = call("a", "list_dir", r#"{"path":"src","depth":2}"#);
        let b = call("b", "list_dir", r#"{"depth":2, "path":"src"}"#);
        let c = call("c", "list_dir", r#"{"path":"lib"}"#);
        let d = call("d", "glob", r#"{"pattern":"x"}"#);
        let e = call("e", "glob", r#"{"pattern":"y"}"#);
        assert!(matches!(r.admit(&a), Admit::Run));
        let Admit::Answer(copy) = r.admit(&b) else {
            panic!("the same arguments in another order are the same call")
        };
        assert!(!copy.is_error && copy.content.contains(" a "), "{copy:?}");
        assert!(matches!(r.admit(&c), Admit::Run));
        assert!(!r.is_cut(), "exactly the limit is not past it");
        let Admit::Answer(dropped) = r.admit(&d) else {
            panic!()
        };
        assert_eq!(dropped.error_kind, Some(ErrorKind::Dropped));
        assert!(
            dropped.content.contains("at most 3 tool calls"),
            "{dropped:?}"
        );
        assert!(r.is_cut());
        assert!(matches!(r.admit(&e), Admit::Answer(_)));
        r.close();
        let kinds: Vec<(GuardKind, Option<&str>, Option<u32>)> = r
            .notes
            .iter()
            .map(|n| (n.kind, n.tool_use_id.as_deref(), n.count))
            .collect();
        assert_eq!(
            kinds,
            [
                (GuardKind::Duplicate, Some("b"), None),
                (GuardKind::Cut, None, Some(5)),
                (GuardKind::Dropped, Some("d"), None),
                (GuardKind::Dropped, Some("e"), None),
            ]
        );
        assert_eq!(r.notes[0].of.as_deref(), Some("a"));
    }

    /// Runs one round of `calls` with their results through `repeats`.
    fn round(
        repeats: &mut Repeats,
        calls: &[(&ToolUse, &str)],
    ) -> (Vec<ToolResult>, Vec<GuardNote>, Option<String>) {
        let mut round = Round {
            round: 1,
            time: String::new(),
            blocks: calls
                .iter()
                .map(|(c, _)| Block::ToolUse((*c).clone()))
                .collect(),
            results: calls.iter().map(|(c, r)| result(c, r)).collect(),
            stop_reason: None,
            usage: Default::default(),
            cost_usd: None,
            check: None,
            model_ms: 0,
            tools_ms: 0,
            retries: vec![],
            error: None,
            summary: false,
            elided: vec![],
            guards: vec![],
        };
        let stuck = repeats.check(&mut round);
        (round.results, round.guards, stuck)
    }

    #[test]
    fn the_same_result_for_the_same_call_is_noted_at_the_limit_and_then_ends_the_run() {
        let mut repeats = Repeats::new(3);
        let other = call("o", "read_file", r#"{"path":"b"}"#);
        for i in 1..=2 {
            let c = call(&format!("c{i}"), "read_file", r#"{"path":"a"}"#);
            let (results, notes, stuck) =
                round(&mut repeats, &[(&c, "no such file"), (&other, "x")]);
            assert!(notes.is_empty() && stuck.is_none());
            assert_eq!(results[0].content, "no such file");
        }
        let c = call("c3", "read_file", r#"{"path":"a"}"#);
        let (results, notes, stuck) = round(&mut repeats, &[(&c, "no such file")]);
        assert!(stuck.is_none());
        assert!(
            results[0].content.contains("this exact call 3 times"),
            "{}",
            results[0].content
        );
        assert_eq!(
            (notes[0].kind, notes[0].count),
            (GuardKind::Repeated, Some(3))
        );
        let c = call("c4", "read_file", r#"{"path":"a"}"#);
        let (_, notes, stuck) = round(&mut repeats, &[(&c, "no such file")]);
        assert_eq!(notes[0].kind, GuardKind::Stuck);
        assert!(stuck.unwrap().contains("read_file call 4 times"));
    }

    #[test]
    fn with_a_limit_of_one_a_first_call_is_no_repeat_and_the_first_repeat_is_stuck() {
        let mut repeats = Repeats::new(1);
        let c = call("c1", "read_file", r#"{"path":"a"}"#);
        let (results, notes, stuck) = round(&mut repeats, &[(&c, "no such file")]);
        assert_eq!(results[0].content, "no such file");
        assert!(notes.is_empty() && stuck.is_none(), "{notes:?}");
        let c = call("c2", "read_file", r#"{"path":"a"}"#);
        let (_, notes, stuck) = round(&mut repeats, &[(&c, "no such file")]);
        assert_eq!(notes[0].kind, GuardKind::Stuck);
        let stuck = stuck.unwrap();
        assert!(stuck.contains("call 2 times"), "{stuck}");
        assert!(!stuck.contains("told"), "it was never told: {stuck}");
    }

    /// A conversation resumed from a transcript: `n` rounds of `c` returning `content`, with
    /// the note `check` added where it did, and a copy of the call in the last response.
    fn resumed(n: usize, content: &str) -> Vec<Message> {
        let mut earlier = Repeats::new(3);
        let mut history = vec![Message::User("go".into())];
        for i in 0..n {
            let c = call(&format!("c{i}"), "read_file", r#"{"path":"a"}"#);
            let copy = call(&format!("k{i}"), "read_file", r#"{"path":"a"}"#);
            let (mut results, _, _) = round(&mut earlier, &[(&c, content)]);
            let Admit::Answer(answer) = ({
                let mut r = Response::new(16);
                r.admit(&c);
                r.admit(&copy)
            }) else {
                panic!("a copy is answered")
            };
            results.push(answer);
            history.push(Message::Assistant {
                blocks: vec![Block::ToolUse(c), Block::ToolUse(copy)],
                provider: "anthropic".into(),
            });
            history.push(Message::ToolResults(results));
        }
        history
    }

    #[test]
    fn a_resumed_run_goes_on_counting_from_its_transcript() {
        // (Ids are taken out of results before they are compared: none may be a word in them.)
        let next = call("toolu_9", "read_file", r#"{"path":"a"}"#);
        // Stuck before the resume (noted at 3, stuck at 4): the same answer again is stuck.
        let mut repeats = Repeats::new(3);
        repeats.seed(&resumed(4, "no such file"));
        let (_, notes, stuck) = round(&mut repeats, &[(&next, "no such file")]);
        assert!(stuck.is_some(), "{notes:?}");
        // Two before: the third is noted, not stuck (the copies did not count).
        let mut repeats = Repeats::new(3);
        repeats.seed(&resumed(2, "no such file"));
        let (_, notes, stuck) = round(&mut repeats, &[(&next, "no such file")]);
        assert_eq!((notes[0].kind, stuck), (GuardKind::Repeated, None));
        // CONTROL: without the seed, the same round is the first of its kind.
        let mut repeats = Repeats::new(3);
        let (_, notes, stuck) = round(&mut repeats, &[(&next, "no such file")]);
        assert!(notes.is_empty() && stuck.is_none());
    }

    #[test]
    fn a_result_that_changes_starts_the_count_again() {
        let mut repeats = Repeats::new(3);
        for i in 0..10 {
            let c = call(&format!("c{i}"), "bash", r#"{"command":"date"}"#);
            let (_, notes, stuck) = round(&mut repeats, &[(&c, &format!("t={}", i / 2))]);
            assert!(notes.is_empty() && stuck.is_none(), "round {i}");
        }
    }

    #[test]
    fn durations_and_call_ids_do_not_make_results_differ() {
        let a = call("id_a", "bash", r#"{"command":"false"}"#);
        let b = call("id_b", "bash", r#"{"command":"false"}"#);
        let timed = |call: &ToolUse, content: &str, duration: &str| ToolResult {
            volatile: vec![duration.to_owned()],
            ..result(call, content)
        };
        let ra = timed(
            &a,
            "exit code: 1\nduration: 0.01s\nstdout: saved to out/id_a.stdout\n",
            "duration: 0.01s",
        );
        let rb = timed(
            &b,
            "exit code: 1\nduration: 0.03s\nstdout: saved to out/id_b.stdout\n",
            "duration: 0.03s",
        );
        assert_eq!(fingerprint(&ra), fingerprint(&rb));
        let rc = timed(&b, "exit code: 2\nduration: 0.03s\n", "duration: 0.03s");
        assert_ne!(fingerprint(&ra), fingerprint(&rc));
        // The guard leaves out what the tool marked, not what looks like a duration: a line
        // the tool did not mark is content, however it reads.
        let unmarked = result(
            &b,
            "exit code: 1\nduration: 0.03s\nstdout: saved to out/id_b.stdout\n",
        );
        assert_ne!(fingerprint(&ra), fingerprint(&unmarked));
    }
}
