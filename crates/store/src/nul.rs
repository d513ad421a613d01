//! PostgreSQL cannot store the NUL character, neither in `text` nor in a `jsonb` string, but a
//! transcript can hold one (a tool that printed binary output, a model that emitted `\u0000`).
//! Rejecting such a line would end the run over its record, and dropping the character would make
//! export lossy, so NUL is escaped on the way in and restored on the way out.
//!
//! The escape character is U+10FFFF, a noncharacter reserved by Unicode for internal use: it is
//! valid in PostgreSQL text and practically never occurs in real text, so stored strings stay
//! readable and queryable unchanged. NUL becomes U+10FFFF followed by `0`, and U+10FFFF itself is
//! doubled, which keeps the encoding reversible for every string.

use std::borrow::Cow;

use serde_json::{Map, Value};

const MARK: char = '\u{10FFFF}';

/// A string PostgreSQL can store.
pub(crate) fn escape(s: &str) -> Cow<'_, str> {
    if !s.contains(['\0', MARK]) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\0' => {
                out.push(MARK);
                out.push('0');
            }
            MARK => {
                out.push(MARK);
                out.push(MARK);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The string `escape` was given. A mark followed by anything else cannot come from `escape`;
/// it is kept as it is rather than failing the export.
pub(crate) fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains(MARK) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != MARK {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('0') => {
                out.push('\0');
                chars.next();
            }
            Some(&MARK) => {
                out.push(MARK);
                chars.next();
            }
            _ => out.push(MARK),
        }
    }
    Cow::Owned(out)
}

/// `escape` applied to every string and object key in a JSON value.
pub(crate) fn escape_value(v: Value) -> Value {
    map_strings(v, &|s| escape(s).into_owned())
}

/// Undoes `escape_value`.
pub(crate) fn unescape_value(v: Value) -> Value {
    map_strings(v, &|s| unescape(s).into_owned())
}

fn map_strings(v: Value, f: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(f(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(|i| map_strings(i, f)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (f(&k), map_strings(v, f)))
                .collect::<Map<_, _>>(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_and_the_mark_itself_round_trip_and_plain_text_is_untouched() {
        for s in [
            "",
            "plain",
            "a\0b",
            "\0",
            "\0\0",
            "x\u{10FFFF}y",
            "\u{10FFFF}0",
            "\u{10FFFF}\0\u{10FFFF}",
            "tail\u{10FFFF}",
        ] {
            let stored = escape(s);
            assert!(!stored.contains('\0'), "{stored:?}");
            assert_eq!(unescape(&stored), s, "{s:?}");
        }
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert!(matches!(unescape("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn values_are_escaped_in_keys_and_nested_strings() {
        let v = json!({"a\0": ["x\0", {"k": "\u{10FFFF}"}], "n": 1.5, "b": true, "z": null});
        let stored = escape_value(v.clone());
        assert!(!stored.to_string().contains("\\u0000"), "{stored}");
        assert_eq!(unescape_value(stored), v);
    }
}
