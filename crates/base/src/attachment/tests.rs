use pretty_assertions::assert_eq;

use super::*;

/// A PNG's signature and `IHDR` chunk: what `infer` and `imagesize` read.
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut b = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
    b.extend_from_slice(b"IHDR");
    b.extend_from_slice(&width.to_be_bytes());
    b.extend_from_slice(&height.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    b
}

/// A GIF's header, with one graphic control extension per frame.
fn gif(frames: usize) -> Vec<u8> {
    let mut b = b"GIF89a".to_vec();
    b.extend_from_slice(&[10, 0, 20, 0, 0, 0, 0]);
    for _ in 0..frames {
        b.extend_from_slice(&[0x21, 0xF9, 0x04, 0, 0, 0, 0, 0, 0x2C]);
    }
    b.push(0x3B);
    b
}

fn pdf(pages: usize, encrypted: bool) -> Vec<u8> {
    let mut text = String::from("%PDF-1.7\n1 0 obj << /Type /Pages /Count 9 >> endobj\n");
    for i in 0..pages {
        text.push_str(&format!(
            "{} 0 obj << /Type /Page /Parent 1 0 R >> endobj\n",
            i + 2
        ));
    }
    if encrypted {
        text.push_str("trailer << /Encrypt 9 0 R >>\n");
    }
    text.into_bytes()
}

fn attach(name: &str, data: Vec<u8>) -> Attachment {
    Attachment::of(name, data).unwrap()
}

#[test]
fn the_kind_comes_from_the_bytes_not_the_name() {
    assert_eq!(attach("shot.txt", png(2, 3)).kind, Kind::Png);
    assert_eq!(attach("a.png", b"plain words\n".to_vec()).kind, Kind::Text);
    assert_eq!(
        attach(
            "x",
            vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F', 0]
        )
        .kind,
        Kind::Jpeg
    );
    let mut webp = b"RIFF\x24\0\0\0WEBPVP8 ".to_vec();
    webp.extend_from_slice(&[0; 24]);
    assert_eq!(attach("x", webp).kind, Kind::Webp);
    assert_eq!(attach("x", pdf(1, false)).kind, Kind::Pdf);
    // Refused: a program, an archive, text with a NUL, bytes that are not UTF-8.
    for (name, data) in [
        ("tool", b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec()),
        ("a.zip", b"PK\x03\x04\x14\0\0\0".to_vec()),
        ("nul.txt", b"a\0b".to_vec()),
        ("latin1.txt", vec![b'c', b'a', b'f', 0xE9]),
    ] {
        assert_eq!(
            Attachment::of(name, data),
            Err(AttachError::Unknown { path: name.into() }),
            "{name}"
        );
    }
}

#[test]
fn an_attachment_knows_its_size_digest_pixels_frames_and_pages() {
    let a = attach("a.png", png(640, 480));
    assert_eq!((a.bytes, a.size), (33, Some((640, 480))));
    assert_eq!(
        a.sha256,
        hex(&Sha256::digest(png(640, 480))),
        "the digest is of the bytes"
    );
    assert_eq!(a.sha256.len(), 64);
    assert_eq!(attach("g", gif(1)).size, Some((10, 20)));
    assert!(!attach("still", gif(1)).animated);
    assert!(attach("moving", gif(3)).animated);
    let doc = attach("d.pdf", pdf(3, false));
    assert_eq!((doc.pages, doc.encrypted), (Some(3), false));
    assert!(attach("e.pdf", pdf(1, true)).encrypted);
}

#[test]
fn each_provider_refuses_what_its_documentation_says_and_names_the_file_and_the_limit() {
    let big = |kind_bytes: Vec<u8>, bytes: u64| Attachment {
        bytes,
        ..attach("big", kind_bytes)
    };
    let cases: Vec<(Wire, &str, Vec<Attachment>, Option<&str>)> = vec![
        // The controls: what each takes.
        (
            Wire::Anthropic,
            "m",
            vec![attach("a.png", png(8000, 10))],
            None,
        ),
        (Wire::Chat, "m", vec![attach("still.gif", gif(1))], None),
        (
            Wire::Bedrock,
            "m",
            vec![attach("d.pdf", pdf(2, false))],
            None,
        ),
        // Pixels, and fewer of them with many images (Anthropic).
        (
            Wire::Anthropic,
            "m",
            vec![attach("wide.png", png(8001, 10))],
            Some("wide.png: 8001×10 pixels, more than 8000 on a side (Anthropic limits)"),
        ),
        (
            Wire::Anthropic,
            "m",
            (0..21)
                .map(|i| attach(&format!("{i}.png"), png(2001, 10)))
                .collect(),
            Some("0.png: 2001×10 pixels, more than 2000 on a side with more than 20 images"),
        ),
        // Bytes: Anthropic counts base64, so 3.75 MB of file.
        (
            Wire::Anthropic,
            "m",
            vec![big(png(10, 10), 4 * MB)],
            Some("big: an image of 4.0 MB, more than 3.8 MB (Anthropic limits)"),
        ),
        (Wire::Chat, "m", vec![big(png(10, 10), 4 * MB)], None),
        // Kinds.
        (
            Wire::Gemini,
            "m",
            vec![attach("still.gif", gif(1))],
            Some("still.gif: image/gif images are not taken (Gemini limits)"),
        ),
        (
            Wire::Responses,
            "m",
            vec![attach("moving.gif", gif(2))],
            Some("moving.gif: an animated GIF is not taken"),
        ),
        (
            Wire::Anthropic,
            "m",
            vec![attach("moving.gif", gif(2))],
            None,
        ),
        // Vertex: Claude's rules for Claude, Gemini's for the rest.
        (
            Wire::Vertex,
            "claude-sonnet-4-5",
            vec![attach("g.gif", gif(1))],
            None,
        ),
        (
            Wire::Vertex,
            "gemini-2.5-pro",
            vec![attach("g.gif", gif(1))],
            Some("(Vertex AI (Gemini) limits)"),
        ),
        // PDFs: pages, encryption, count.
        (
            Wire::Anthropic,
            "m",
            vec![attach("long.pdf", pdf(101, false))],
            Some("long.pdf: a PDF of 101 pages, more than 100"),
        ),
        (
            Wire::Chat,
            "m",
            vec![attach("locked.pdf", pdf(1, true))],
            Some("locked.pdf: an encrypted PDF cannot be read"),
        ),
        (
            Wire::Bedrock,
            "m",
            (0..6)
                .map(|i| attach(&format!("{i}.pdf"), pdf(1, false)))
                .collect(),
            Some("5.pdf: 6 PDFs, more than the 5 one request may hold (Bedrock limits)"),
        ),
        (
            Wire::Bedrock,
            "m",
            (0..21)
                .map(|i| attach(&format!("{i}.png"), png(9, 9)))
                .collect(),
            Some("20.png: 21 images, more than the 20 one request may hold"),
        ),
        // Text goes as text, whatever its size.
        (
            Wire::Bedrock,
            "m",
            vec![big(b"words".to_vec(), 50 * MB)],
            None,
        ),
    ];
    for (wire, model, all, refused) in cases {
        let got = Limits::of(wire, model).check(&all);
        match refused {
            None => assert_eq!(got, Ok(()), "{wire:?} {model}"),
            Some(says) => {
                let e = got.expect_err(says).to_string();
                assert!(e.contains(says), "{wire:?}: {e}");
                assert!(e.starts_with("--attach "), "{e}");
            }
        }
    }
}

#[test]
fn each_provider_bills_an_image_by_its_own_rule() {
    let image = |w, h| attach("i.png", png(w, h));
    // Anthropic: pixels ÷ 750 after fitting 1568 px (1000×1000: 1334; 3136×3136 fits to 1568).
    assert_eq!(image(1000, 1000).tokens(TokenRule::Anthropic), 1334);
    assert_eq!(image(3136, 3136).tokens(TokenRule::Anthropic), 3279);
    // OpenAI: 1024×1024 fits its short side to 768: 2×2 tiles, 85 + 4 × 170.
    assert_eq!(image(1024, 1024).tokens(TokenRule::OpenAi), 765);
    assert_eq!(image(200, 200).tokens(TokenRule::OpenAi), 255);
    // Gemini: 258 small, else 258 per 768 px tile.
    assert_eq!(image(300, 300).tokens(TokenRule::Gemini), 258);
    assert_eq!(image(1000, 800).tokens(TokenRule::Gemini), 4 * 258);
    let doc = attach("d.pdf", pdf(3, false));
    assert_eq!(doc.tokens(TokenRule::Gemini), 3 * 258);
    assert_eq!(doc.tokens(TokenRule::Anthropic), 3 * 3100);
    assert_eq!(
        TokenRule::of(Some(Wire::Chat), "gpt-4.1"),
        TokenRule::OpenAi
    );
    assert_eq!(
        TokenRule::of(Some(Wire::Vertex), "gemini-2.5-pro"),
        TokenRule::Gemini
    );
    assert_eq!(
        TokenRule::of(Some(Wire::Vertex), "claude-sonnet-4-5"),
        TokenRule::Anthropic
    );
    assert_eq!(TokenRule::of(None, "anything"), TokenRule::Anthropic);
}
