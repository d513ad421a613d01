use super::*;
use pretty_assertions::assert_eq;

fn redactor(secrets: &[(&str, &str)]) -> Redactor {
    Redactor::new(
        secrets
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())),
    )
}

fn redacted(r: &Redactor, text: &str) -> (String, Vec<String>) {
    let mut text = text.to_owned();
    let names = r.redact(&mut text);
    (text, names)
}

fn env(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    vars.iter().map(|(k, v)| (k.into(), v.into())).collect()
}

#[test]
fn every_occurrence_becomes_its_marker_and_the_names_found_are_reported_once() {
    let r = redactor(&[
        ("GITHUB_TOKEN", "ghp_0123456789"),
        ("DB_PASSWORD", "hunter2hunter2"),
    ]);
    let (text, names) = redacted(
        &r,
        "token=ghp_0123456789\npw: hunter2hunter2 again ghp_0123456789ghp_0123456789",
    );
    assert_eq!(
        text,
        "token=[REDACTED:GITHUB_TOKEN]\npw: [REDACTED:DB_PASSWORD] again \
         [REDACTED:GITHUB_TOKEN][REDACTED:GITHUB_TOKEN]"
    );
    assert_eq!(names, ["DB_PASSWORD", "GITHUB_TOKEN"]);
    assert_eq!(r.names(), ["DB_PASSWORD", "GITHUB_TOKEN"]);
    let (text, names) = redacted(&r, "nothing secret here: ghp_012345678");
    assert_eq!(text, "nothing secret here: ghp_012345678");
    assert!(names.is_empty());
}

#[test]
fn values_shorter_than_the_minimum_are_left_alone_and_whitespace_is_trimmed() {
    let seven = "a".repeat(MIN_SECRET_BYTES - 1);
    let eight = "b".repeat(MIN_SECRET_BYTES);
    let r = redactor(&[
        ("SHORT_KEY", seven.as_str()),
        ("PADDED_KEY", "  \tpadded-secret\n"),
        ("BLANK_KEY", "        "),
        ("EIGHT_KEY", eight.as_str()),
    ]);
    assert_eq!(r.names(), ["EIGHT_KEY", "PADDED_KEY"]);
    let (text, _) = redacted(&r, &format!("{seven} [padded-secret] {eight}"));
    assert_eq!(
        text,
        format!("{seven} [[REDACTED:PADDED_KEY]] [REDACTED:EIGHT_KEY]")
    );
    assert!(redactor(&[("SHORT_KEY", "k")]).is_empty());
}

#[test]
fn the_longest_match_wins_when_values_overlap() {
    let r = redactor(&[
        ("INNER_KEY", "abcdefgh"),
        ("LONGER_KEY", "abcdefgh-and-more"),
        ("URL_SECRET", "postgres://u:abcdefgh@db"),
    ]);
    let cases = [
        ("abcdefgh-and-more", "[REDACTED:LONGER_KEY]"),
        ("abcdefgh-and-mor", "[REDACTED:INNER_KEY]-and-mor"),
        ("postgres://u:abcdefgh@db/x", "[REDACTED:URL_SECRET]/x"),
        (
            "postgres://u:abcdefgh@dc",
            "postgres://u:[REDACTED:INNER_KEY]@dc",
        ),
        ("xabcdefghx", "x[REDACTED:INNER_KEY]x"),
    ];
    for (input, want) in cases {
        assert_eq!(redacted(&r, input).0, want, "{input}");
    }
}

#[test]
fn a_value_held_by_several_names_is_reported_under_the_first() {
    let r = redactor(&[
        ("ANTHROPIC_API_KEY", "sk-same-value"),
        ("MY_KEY", "sk-same-value"),
    ]);
    assert_eq!(r.names(), ["ANTHROPIC_API_KEY"]);
    assert_eq!(
        redacted(&r, "sk-same-value").0,
        "[REDACTED:ANTHROPIC_API_KEY]"
    );
}

#[test]
fn a_run_redacts_its_provider_key_the_variables_the_rules_name_and_redact_names() {
    let vars = env(&[
        ("GITHUB_TOKEN", "ghp_token_value_1"),
        ("npm_config__authToken", "npm-token-value"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret-value"),
        ("MYSQL_PASSWORD", "mysql-password-value"),
        ("OPENAI_API_KEY", "sk-openai-unused-here"),
        ("PLAIN_VALUE", "plain-but-asked-for"),
        ("UNASKED", "not-a-secret-by-name"),
        // Where a secret is kept, not the secret.
        ("ANTHROPIC_API_KEY_FILE", "/run/secrets/anthropic"),
        ("SSH_KEY_PATH", "/home/me/.ssh/id_ed25519"),
        ("GNUPG_KEY_DIR", "/home/me/.gnupg"),
        // A provider's credential variable whose value is a path: an error names that path.
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            "/home/me/.config/gcloud/adc.json",
        ),
        // Too short to be redacted safely.
        ("TOKENIZERS_PARALLELISM", "false"),
        ("HOME", "/home/me"),
        ("PATH", "/usr/bin:/bin"),
    ]);
    let r = Redactor::for_run(
        Some(("ANTHROPIC_API_KEY".to_owned(), "sk-ant-from-a-file")),
        &vars,
        &["PLAIN_VALUE".to_owned(), "NOT_SET".to_owned()],
    );
    assert_eq!(
        r.names(),
        [
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "MYSQL_PASSWORD",
            "OPENAI_API_KEY",
            "PLAIN_VALUE",
            "npm_config__authToken",
        ]
    );
    let (text, names) = redacted(
        &r,
        "sk-ant-from-a-file not-a-secret-by-name plain-but-asked-for /home/me/.gnupg",
    );
    assert_eq!(
        text,
        "[REDACTED:ANTHROPIC_API_KEY] not-a-secret-by-name [REDACTED:PLAIN_VALUE] \
         /home/me/.gnupg"
    );
    assert_eq!(names, ["ANTHROPIC_API_KEY", "PLAIN_VALUE"]);
}

#[test]
fn the_provider_variable_names_a_value_shared_with_another_whatever_the_order() {
    for vars in [
        env(&[
            ("A_TOKEN", "shared-value-1"),
            ("OPENAI_API_KEY", "shared-value-1"),
        ]),
        env(&[
            ("OPENAI_API_KEY", "shared-value-1"),
            ("A_TOKEN", "shared-value-1"),
        ]),
    ] {
        let r = Redactor::for_run(None, &vars, &[]);
        assert_eq!(r.names(), ["OPENAI_API_KEY"]);
    }
}

#[test]
fn a_run_with_no_secrets_has_nothing_to_do() {
    let r = Redactor::for_run(None, &env(&[("HOME", "/home/me"), ("KEY", "short")]), &[]);
    assert!(r.is_empty());
    assert!(r.stream().is_none());
    assert_eq!(redacted(&r, "anything").0, "anything");
}

#[test]
fn debug_shows_names_never_values() {
    let r = redactor(&[("GITHUB_TOKEN", "ghp_0123456789")]);
    let shown = format!("{r:?} {:?}", r.stream());
    assert!(shown.contains("GITHUB_TOKEN"), "{shown}");
    assert!(!shown.contains("ghp_0123456789"), "{shown}");
}

#[test]
fn a_value_that_is_not_utf8_never_leaves_broken_text() {
    // The middle of "éééé…": it can only match across character boundaries.
    let value = "ééééé".as_bytes()[1..9].to_vec();
    let r = Redactor::new([("ODD_KEY".to_owned(), value)]);
    let (text, names) = redacted(&r, "éééééé");
    assert_eq!(names, ["ODD_KEY"]);
    assert!(text.contains("[REDACTED:ODD_KEY]"), "{text}");
}

/// Redacts `input` streamed in pieces of `sizes` (cycled), checking the held-back bytes stay
/// bounded.
fn streamed(r: &Redactor, input: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut stream = r.stream().unwrap();
    let mut out = Vec::new();
    let mut rest = input;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, tail) = rest.split_at((*size).min(rest.len()));
        stream.push(piece, &mut out);
        assert!(stream.pending.len() < stream.inner.longest, "{stream:?}");
        rest = tail;
    }
    stream.finish(&mut out);
    out
}

#[test]
fn a_stream_redacts_secrets_split_across_pieces_as_the_whole_would_be() {
    let r = redactor(&[
        ("INNER_KEY", "abcdefgh"),
        ("LONGER_KEY", "abcdefgh-and-more"),
        ("GITHUB_TOKEN", "ghp_0123456789"),
    ]);
    let input = "..abcdefgh-and-more.abcdefgh-and-mor.ghp_0123456789ghp_0123456789\n\
                 abcdefgabcdefgh ghp_012345678 ghp_0123456789";
    let (whole, _) = redacted(&r, input);
    assert!(!whole.contains("abcdefgh") && !whole.contains("ghp_0123456789"));
    for size in 1..=input.len() {
        let got = streamed(&r, input.as_bytes(), &[size]);
        assert_eq!(String::from_utf8(got).unwrap(), whole, "pieces of {size}");
    }
    // Every split into two pieces, and uneven pieces.
    for split in 0..=input.len() {
        let got = streamed(&r, input.as_bytes(), &[split.max(1), input.len()]);
        assert_eq!(String::from_utf8(got).unwrap(), whole, "split at {split}");
    }
    let got = streamed(&r, input.as_bytes(), &[3, 1, 7, 2, 13]);
    assert_eq!(String::from_utf8(got).unwrap(), whole);
}

#[test]
fn a_stream_without_secrets_passes_everything_through() {
    let r = redactor(&[("GITHUB_TOKEN", "ghp_0123456789")]);
    let input: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    assert_eq!(streamed(&r, &input, &[1, 100, 4096]), input);
}

#[test]
fn a_secret_is_redacted_in_each_of_its_encodings_under_its_own_name() {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let key = "sk-ant-api03-encoded?key&value";
    let r = redactor(&[("ANTHROPIC_API_KEY", key)]);
    let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    let printed = [
        STANDARD.encode(key),
        STANDARD.encode(format!("a{key}")),
        STANDARD.encode(format!("ab{key}")),
        URL_SAFE_NO_PAD.encode(format!("abc{key}")),
        hex.clone(),
        hex.to_uppercase(),
        key.replace('?', "%3F").replace('&', "%26"),
        key.chars().rev().collect(),
    ];
    for text in printed {
        let (out, names) = redacted(&r, &format!("out: {text} end"));
        assert_eq!(names, ["ANTHROPIC_API_KEY"], "{text}");
        assert!(
            out.contains("[REDACTED:ANTHROPIC_API_KEY]"),
            "{text} -> {out}"
        );
        // What is left of an encoded form is its edge characters at most, never the core.
        assert!(out.len() < text.len() / 2 + 40, "{text} -> {out}");
    }
    // The control: another value's encodings pass.
    let (out, names) = redacted(&r, &STANDARD.encode("sk-ant-api03-another-value!!"));
    assert!(names.is_empty(), "{out}");
}
