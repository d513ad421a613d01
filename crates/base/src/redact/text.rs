//! Redaction of what the model and the run say, as text: the model's answer, thinking and tool
//! calls as they stream, and error messages. The model can write back decoded what a tool
//! printed encoded, and an error body can quote a key; both go through here before anything
//! is printed, recorded or sent again.

use super::{Redactor, Stream};

/// A [`Stream`] over text pieces (the model's deltas): what comes out is whole characters only,
/// since the stream may hold back a secret's first bytes in the middle of one.
#[derive(Debug, Default)]
pub struct TextStream {
    stream: Option<Stream>,
    /// Decided bytes that end inside a character; the next piece completes it.
    carry: Vec<u8>,
}

impl TextStream {
    pub fn new(redactor: &Redactor) -> TextStream {
        TextStream {
            stream: redactor.stream(),
            carry: Vec::new(),
        }
    }

    /// Takes the next piece; returns what is decided of the text so far.
    pub fn push(&mut self, piece: &str) -> String {
        let Some(stream) = &mut self.stream else {
            return piece.to_owned();
        };
        stream.push(piece.as_bytes(), &mut self.carry);
        self.whole_characters(false)
    }

    /// The end of the text (its block is complete, or the response broke off): the rest.
    pub fn finish(&mut self) -> String {
        if let Some(stream) = &mut self.stream {
            stream.finish(&mut self.carry);
        }
        self.whole_characters(true)
    }

    /// Takes out of `carry` the longest prefix that is whole UTF-8 (all of it at the `end`,
    /// lossily: a secret that is not UTF-8 may leave half a character, shown as U+FFFD).
    fn whole_characters(&mut self, end: bool) -> String {
        let upto = match std::str::from_utf8(&self.carry) {
            Ok(_) => self.carry.len(),
            Err(e) if e.error_len().is_none() && !end => e.valid_up_to(),
            Err(_) => self.carry.len(),
        };
        let rest = self.carry.split_off(upto);
        let done = std::mem::replace(&mut self.carry, rest);
        String::from_utf8(done)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

impl Redactor {
    /// Redacts every string in `value` (a tool call's input), keys included; returns the names
    /// found, sorted, each once.
    pub fn redact_json(&self, value: &mut serde_json::Value) -> Vec<String> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut found = std::collections::BTreeSet::new();
        self.walk(value, &mut found);
        found.into_iter().collect()
    }

    fn walk(&self, value: &mut serde_json::Value, found: &mut std::collections::BTreeSet<String>) {
        use serde_json::Value;
        match value {
            Value::String(s) => found.extend(self.redact(s)),
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v, found)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (mut key, mut v) in entries {
                    found.extend(self.redact(&mut key));
                    self.walk(&mut v, found);
                    map.insert(key, v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// `text` redacted (an error message, a note): the text rounds shows or records.
    pub fn redacted(&self, text: impl Into<String>) -> String {
        let mut text = text.into();
        self.redact(&mut text);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-ant-split-across-deltas-9f2c";

    fn redactor() -> Redactor {
        Redactor::new([("ANTHROPIC_API_KEY".to_owned(), KEY.as_bytes().to_vec())])
    }

    #[test]
    fn a_secret_split_across_deltas_never_comes_out_whole_or_in_part() {
        let text = format!("héllo {KEY} wörld ✓ and {KEY}");
        let r = redactor();
        // Every split into two pieces, and into pieces of every size, at byte boundaries that
        // are character boundaries (deltas are strings).
        let bounds: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        let expected = text.replace(KEY, "[REDACTED:ANTHROPIC_API_KEY]");
        for &cut in &bounds {
            let mut s = TextStream::new(&r);
            let mut out = s.push(&text[..cut]);
            out += &s.push(&text[cut..]);
            out += &s.finish();
            assert_eq!(out, expected, "cut at {cut}");
        }
        for size in 1..8 {
            let mut s = TextStream::new(&r);
            let mut out = String::new();
            let mut at = 0;
            while at < text.len() {
                let mut end = (at + size).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                let piece = s.push(&text[at..end]);
                assert!(!piece.contains("sk-ant-split"), "{piece}");
                out += &piece;
                at = end;
            }
            out += &s.finish();
            assert_eq!(out, expected, "pieces of {size}");
        }
    }

    #[test]
    fn without_secrets_the_text_passes_as_it_comes() {
        let mut s = TextStream::new(&Redactor::default());
        assert_eq!(s.push("abc"), "abc");
        assert_eq!(s.finish(), "");
    }

    #[test]
    fn tool_inputs_are_redacted_in_every_string_and_key() {
        let r = redactor();
        let mut input = serde_json::json!({
            "command": format!("echo {KEY}"),
            "list": [KEY, 1, null],
            KEY: {"nested": KEY},
        });
        assert_eq!(r.redact_json(&mut input), ["ANTHROPIC_API_KEY"]);
        assert!(!input.to_string().contains(KEY), "{input}");
        let mut plain = serde_json::json!({"command": "ls"});
        assert!(r.redact_json(&mut plain).is_empty());
    }
}
