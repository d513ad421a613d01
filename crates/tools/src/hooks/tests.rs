use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn printed(bytes: &[u8]) -> Captured {
    let mut capture = process::capture::Capture::new(Limits {
        head: MAX_REPLY,
        tail: 0,
        spill: None,
    });
    capture.push(bytes);
    capture.finish()
}

/// Why a reply was refused, as the hook's error says it.
#[derive(Debug, PartialEq)]
struct Why(String);

impl Why {
    fn contains(&self, part: &str) -> bool {
        self.0.contains(part)
    }
}

/// The reply to `bytes` on stdout, or the message saying why they are none.
fn read(bytes: &[u8]) -> Result<Option<Value>, Why> {
    reply(&printed(bytes)).map_err(|e| Why(e.to_string()))
}

#[test]
fn only_nothing_or_a_whole_json_object_is_a_reply() {
    // The controls: what a hook that means to go on prints.
    assert_eq!(read(b""), Ok(None));
    assert_eq!(read(b" \n\t\n"), Ok(None));
    assert_eq!(read(b"{}\n"), Ok(None));
    assert_eq!(read(b"{\"note\": 1}"), Ok(None));
    assert_eq!(
        read(b"\n{\"input\": {\"path\": \"b.txt\"}}\n"),
        Ok(Some(json!({"path": "b.txt"})))
    );
    // What a broken or hostile hook prints: each is refused, saying why.
    let refused: [(&[u8], &str); 8] = [
        (b"ok\n", "not a complete JSON object"),
        (
            b"{\"input\": {\"path\": \"b.txt\"",
            "not a complete JSON object",
        ),
        (b"{\"input\": {}} and more", "not a complete JSON object"),
        (
            b"{\"input\": {}}\n{\"input\": {}}",
            "not a complete JSON object",
        ),
        (
            b"{\"input\": {\"path\": \"\xff\"}}",
            "not a complete JSON object",
        ),
        (b"[{\"input\": {}}]", "printed an array on stdout"),
        (b"\"input\"", "printed a string on stdout"),
        (b"null", "printed null on stdout"),
    ];
    for (stdout, why) in refused {
        let got = read(stdout);
        assert!(
            got.as_ref().is_err_and(|e| e.contains(why)),
            "{:?}: {got:?}",
            String::from_utf8_lossy(stdout)
        );
    }
}

#[test]
fn a_reply_is_read_whole_up_to_the_limit_and_refused_beyond_it() {
    // A rewrite far past the old 64 KiB + 4 KiB window still parses.
    let big = "x".repeat(5 * 1024 * 1024);
    let text = json!({"input": {"content": big}}).to_string();
    assert_eq!(read(text.as_bytes()), Ok(Some(json!({"content": big}))));
    let mut over = text.into_bytes();
    over.resize(MAX_REPLY + 1, b' ');
    let got = read(&over);
    assert!(
        got.as_ref()
            .is_err_and(|e| e.contains("more than the 16 MiB a reply may have")),
        "{got:?}"
    );
}

#[test]
fn terminal_text_has_its_control_characters_escaped() {
    assert_eq!(shown("a\u{1b}[2Jb\nc\u{0}"), "a\\u{1b}[2Jb\\nc\\u{0}");
    assert_eq!(shown("plain – text"), "plain – text");
}
