//! The forms a secret takes when a tool encodes it: a tool that cannot print the key can still
//! print `base64 key.txt` or `rev key.txt`, and the model decodes it. Each secret is redacted in
//! the encodings a shell has at hand, so the transcript and the next request never carry them:
//!
//! - base64 and base64url at each of the three alignments a value can have inside a longer
//!   input (only the characters that depend on the value alone: the ones at its edges mix in
//!   the neighbouring bytes, which the secret does not decide), and the whole value's base64 at
//!   the start of the output wrapped as `base64` (76 columns) and `openssl base64` (64) wrap it;
//! - hex, lower and upper case (`xxd -p`, `od`, `hexdump` without spacing);
//! - URL encoding: reserved bytes only (`curl --data-urlencode`, `jq @uri`), with `+` for a
//!   space as forms write it, and every byte encoded; upper and lower case;
//! - the bytes reversed (`rev`).
//!
//! What this cannot catch is said in docs/security.md: a secret split, wrapped at another width,
//! compressed, encrypted or encoded twice passes.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

/// Columns `base64` (GNU coreutils) and `openssl base64` wrap their output at.
const WRAPS: [usize; 2] = [76, 64];

/// `value` and its encodings (see the module doc), each once, `value` first.
pub(super) fn forms(value: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![value.to_vec()];
    let mut add = |form: Vec<u8>| {
        if !form.is_empty() && !out.contains(&form) {
            out.push(form);
        }
    };
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for align in 0..3 {
            add(base64_core(engine, value, align).into_bytes());
        }
        let whole = base64_core(engine, value, 0);
        for width in WRAPS {
            if whole.len() > width {
                add(wrapped(&whole, width));
            }
        }
    }
    add(hex(value, b"0123456789abcdef"));
    add(hex(value, b"0123456789ABCDEF"));
    for digits in [b"0123456789ABCDEF", b"0123456789abcdef"] {
        add(percent(value, digits, false, false));
        add(percent(value, digits, true, false));
        add(percent(value, digits, false, true));
    }
    add(value.iter().rev().copied().collect());
    out
}

/// The characters of the base64 of `value`, placed `align` bytes into a longer input, that
/// depend on the value's bytes alone.
fn base64_core(engine: &base64::engine::GeneralPurpose, value: &[u8], align: usize) -> String {
    let mut input = vec![0u8; align];
    input.extend_from_slice(value);
    let encoded = engine.encode(&input);
    // A character holds 6 bits: the first wholly the value's starts after the prefix's bits,
    // the last ends at or before the value's last bit.
    let first = (align * 8).div_ceil(6);
    let last = (input.len() * 8) / 6;
    encoded.get(first..last).unwrap_or_default().to_owned()
}

/// `text` with a newline after every `width` characters.
fn wrapped(text: &str, width: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + text.len() / width);
    for (i, chunk) in text.as_bytes().chunks(width).enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(chunk);
    }
    out
}

fn hex(value: &[u8], digits: &[u8; 16]) -> Vec<u8> {
    value
        .iter()
        .flat_map(|b| [digits[usize::from(b >> 4)], digits[usize::from(b & 15)]])
        .collect()
}

/// URL encoding of `value`: the bytes outside RFC 3986's unreserved set (all bytes with
/// `every`), as `%XX`; with `plus`, a space as `+`.
fn percent(value: &[u8], digits: &[u8; 16], every: bool, plus: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 3);
    for &b in value {
        let unreserved = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        if plus && b == b' ' {
            out.push(b'+');
        } else if unreserved && !every {
            out.push(b);
        } else {
            out.extend_from_slice(&[
                b'%',
                digits[usize::from(b >> 4)],
                digits[usize::from(b & 15)],
            ]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"sk-ant-api03-Zx9_q/+w==k";

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    /// Every way a tool could print `KEY` encoded, in a longer output with 0, 1 and 2 bytes in
    /// front: one of the forms is inside what it prints.
    #[test]
    fn every_encoding_at_every_alignment_holds_a_form() {
        let forms = forms(KEY);
        for lead in ["", "x", "xy", "xyz", "long lead "] {
            let mut input = lead.as_bytes().to_vec();
            input.extend_from_slice(KEY);
            input.extend_from_slice(b"\ntrailing bytes");
            let printed: Vec<(&str, Vec<u8>)> = vec![
                ("base64", STANDARD_NO_PAD.encode(&input).into_bytes()),
                (
                    "base64 padded",
                    base64::engine::general_purpose::STANDARD
                        .encode(&input)
                        .into_bytes(),
                ),
                ("base64url", URL_SAFE_NO_PAD.encode(&input).into_bytes()),
                ("hex", hex(&input, b"0123456789abcdef")),
                ("HEX", hex(&input, b"0123456789ABCDEF")),
                (
                    "urlencode",
                    percent(&input, b"0123456789ABCDEF", false, false),
                ),
                (
                    "urlencode lower",
                    percent(&input, b"0123456789abcdef", false, false),
                ),
                (
                    "every byte",
                    percent(&input, b"0123456789ABCDEF", true, false),
                ),
                ("rev", input.iter().rev().copied().collect()),
            ];
            for (how, out) in printed {
                assert!(
                    forms.iter().any(|f| contains(&out, f)),
                    "{how} with {lead:?} in front: no form matches {}",
                    String::from_utf8_lossy(&out)
                );
            }
        }
    }

    #[test]
    fn a_key_file_base64_wraps_is_matched_across_its_line_breaks() {
        let key = "sk-ant-api03-".to_owned() + &"AbCdEfGh".repeat(12);
        let file = format!("{key}\n");
        let one_line = STANDARD_NO_PAD.encode(file.as_bytes());
        for width in WRAPS {
            let printed = String::from_utf8(wrapped(&one_line, width)).unwrap();
            assert!(printed.contains('\n'));
            assert!(
                forms(key.as_bytes())
                    .iter()
                    .any(|f| f.contains(&b'\n') && contains(printed.as_bytes(), f)),
                "wrapped at {width}"
            );
        }
    }

    #[test]
    fn the_cores_hold_no_bits_of_the_neighbours() {
        // The same value between different neighbours gives the same cores.
        for align in 0..3 {
            let core = base64_core(&STANDARD_NO_PAD, KEY, align);
            for lead in [[0u8; 3], [255u8; 3]] {
                let mut input = lead[..align].to_vec();
                input.extend_from_slice(KEY);
                input.push(lead[0]);
                assert!(STANDARD_NO_PAD.encode(&input).contains(&core), "{align}");
            }
        }
    }

    #[test]
    fn forms_are_distinct_and_the_value_comes_first() {
        let forms = forms(b"abcdefgh12345678");
        assert_eq!(forms[0], b"abcdefgh12345678");
        for (i, f) in forms.iter().enumerate() {
            assert!(!forms[..i].contains(f));
        }
        assert!(forms.contains(&b"87654321hgfedcba".to_vec()));
        assert!(
            forms.contains(
                &b"6162636465666768"
                    .iter()
                    .chain(b"3132333435363738")
                    .copied()
                    .collect()
            )
        );
    }
}
