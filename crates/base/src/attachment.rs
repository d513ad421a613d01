//! Files the user attaches to a prompt (issue 35): what each is, from its bytes and never its
//! name (`infer`'s magic numbers; text is what is valid UTF-8 without NUL bytes), how large it
//! is in bytes and pixels (`imagesize`, from the header, nothing decoded), its digest, and
//! whether a provider's documented limits let it through — all decided before any request.
//! Limits: docs/attachments research (Anthropic, OpenAI, Gemini, Bedrock, Vertex documentation).

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::providers::Wire;

/// What opens the user message (or part) that carries the images of tool results, on a wire
/// whose tool results hold text only (OpenAI Chat, Gemini).
pub const FROM_RESULTS: &str = "The images the tool results above refer to:";

/// What an attachment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Png,
    Jpeg,
    Gif,
    Webp,
    Pdf,
    /// UTF-8 text: sent as text, in the prompt's own turn.
    Text,
}

impl Kind {
    pub fn media_type(self) -> &'static str {
        match self {
            Kind::Png => "image/png",
            Kind::Jpeg => "image/jpeg",
            Kind::Gif => "image/gif",
            Kind::Webp => "image/webp",
            Kind::Pdf => "application/pdf",
            Kind::Text => "text/plain",
        }
    }

    pub fn is_image(self) -> bool {
        matches!(self, Kind::Png | Kind::Jpeg | Kind::Gif | Kind::Webp)
    }
}

/// What `bytes` are, or `None` for anything rounds does not attach.
pub fn sniff(bytes: &[u8]) -> Option<Kind> {
    match infer::get(bytes).map(|t| t.mime_type()) {
        Some("image/png") => Some(Kind::Png),
        Some("image/jpeg") => Some(Kind::Jpeg),
        Some("image/gif") => Some(Kind::Gif),
        Some("image/webp") => Some(Kind::Webp),
        Some("application/pdf") => Some(Kind::Pdf),
        Some(_) => None,
        None if !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok() => Some(Kind::Text),
        None => None,
    }
}

/// One attached file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The path as the user gave it.
    pub path: String,
    pub kind: Kind,
    pub bytes: u64,
    /// Lowercase hex.
    pub sha256: String,
    /// Pixels, for an image.
    pub size: Option<(u32, u32)>,
    /// A GIF with more than one frame (OpenAI takes only still ones).
    pub animated: bool,
    /// For a PDF: its pages as far as its text says (best effort), and whether it is encrypted.
    pub pages: Option<u32>,
    pub encrypted: bool,
    /// The bytes as base64 (standard, padded), made once: every request of the run sends them.
    pub base64: Base64,
}

/// An attachment's bytes as base64, shared by every request that carries them; shown by its
/// length only.
#[derive(Clone, PartialEq, Eq)]
pub struct Base64(Arc<str>);

impl Base64 {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Serialized as its text: a wire type that owns its parts holds it without a copy.
impl Serialize for Base64 {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Base64, D::Error> {
        String::deserialize(deserializer).map(|s| Base64(Arc::from(s)))
    }
}

impl std::fmt::Debug for Base64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Base64({} chars)", self.0.len())
    }
}

/// One attached file as the transcript records it (the start line's `attachments`, a tool
/// result's `media`): never its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields, rename = "Attached")]
pub struct Record {
    /// The path as the user gave it.
    pub path: String,
    /// What its content is (not its name).
    #[serde(rename = "type")]
    pub kind: Kind,
    pub bytes: u64,
    /// Lowercase hex.
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
    /// An image's pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// A PDF's pages, as far as its text says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
}

impl From<&Attachment> for Record {
    fn from(a: &Attachment) -> Record {
        Record {
            path: a.path.clone(),
            kind: a.kind,
            bytes: a.bytes,
            sha256: a.sha256.clone(),
            width: a.size.map(|s| s.0),
            height: a.size.map(|s| s.1),
            pages: a.pages,
        }
    }
}

/// An attachment is recorded as its [`Record`]; read back, it has no bytes until they are found
/// again by its digest (`Attachment::with_bytes`).
impl Serialize for Attachment {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Record::from(self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Attachment {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Attachment, D::Error> {
        let r = Record::deserialize(deserializer)?;
        Ok(Attachment {
            path: r.path,
            kind: r.kind,
            bytes: r.bytes,
            sha256: r.sha256,
            size: r.width.zip(r.height),
            animated: false,
            pages: r.pages,
            encrypted: false,
            base64: Base64(Arc::from("")),
        })
    }
}

impl schemars::JsonSchema for Attachment {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Record::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Record::json_schema(generator)
    }
}

impl Attachment {
    /// The name its bytes are kept under beside a transcript: `SHA256.EXT`.
    pub fn kept_name(&self) -> String {
        format!("{}.{}", self.sha256, Attachment::extension(self.kind))
    }

    /// The file extension an attachment of `kind` is kept under.
    pub fn extension(kind: Kind) -> &'static str {
        match kind {
            Kind::Png => "png",
            Kind::Jpeg => "jpg",
            Kind::Gif => "gif",
            Kind::Webp => "webp",
            Kind::Pdf => "pdf",
            Kind::Text => "txt",
        }
    }

    /// Its bytes (from their base64).
    pub fn decoded(&self) -> Vec<u8> {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(self.base64.as_str())
            .unwrap_or_default()
    }

    /// Whether its bytes are here (an attachment read back from a transcript has none yet).
    pub fn has_bytes(&self) -> bool {
        !self.base64.0.is_empty()
    }
}

/// Why a file cannot be attached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachError {
    #[error("--attach {path}: cannot read it: {why}")]
    Unreadable { path: String, why: String },
    #[error(
        "--attach {path}: not a file rounds attaches (PNG, JPEG, GIF, WebP, PDF or UTF-8 text, \
         told by its content, not its name)"
    )]
    Unknown { path: String },
    #[error("--attach {path}: {why}")]
    Refused { path: String, why: String },
}

impl Attachment {
    /// Reads and describes the file at `file`, given as `path`.
    pub fn read(file: &Path, path: &str) -> Result<Attachment, AttachError> {
        let data = std::fs::read(file).map_err(|e| AttachError::Unreadable {
            path: path.to_owned(),
            why: e.to_string(),
        })?;
        Attachment::of(path, data)
    }

    /// Describes `data`, attached as `path`.
    pub fn of(path: &str, data: Vec<u8>) -> Result<Attachment, AttachError> {
        use base64::Engine as _;
        let kind = sniff(&data).ok_or_else(|| AttachError::Unknown {
            path: path.to_owned(),
        })?;
        let size = kind
            .is_image()
            .then(|| imagesize::blob_size(&data).ok())
            .flatten()
            .map(|s| (s.width as u32, s.height as u32));
        let (pages, encrypted) = match kind {
            Kind::Pdf => pdf_facts(&data),
            _ => (None, false),
        };
        Ok(Attachment {
            path: path.to_owned(),
            kind,
            bytes: data.len() as u64,
            sha256: hex(&Sha256::digest(&data)),
            size,
            animated: kind == Kind::Gif && frames(&data) > 1,
            pages,
            encrypted,
            base64: Base64(Arc::from(
                base64::engine::general_purpose::STANDARD.encode(&data),
            )),
        })
    }
}

impl Attachment {
    /// The file's name without its directories (what a wire that wants a file name is sent).
    pub fn file_name(&self) -> &str {
        self.path.rsplit(['/', '\\']).next().unwrap_or(&self.path)
    }
}

/// How a provider bills an image, for estimates (the context window, budgets): each provider's
/// published rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenRule {
    /// Anthropic (and Bedrock, Claude on Vertex): pixels ÷ 750 once the long side is at most
    /// 1568 px; a PDF page as its text and an image, about 3,100.
    #[default]
    Anthropic,
    /// OpenAI: 85 + 170 per 512 px tile, once the image fits 2048 px and its short side is at
    /// most 768 px.
    OpenAi,
    /// Gemini: 258 for an image of at most 384 px a side, else 258 per 768 px tile; 258 a PDF
    /// page.
    Gemini,
}

impl TokenRule {
    /// The rule of `wire` for `model` (`None`: a recording, billed as Anthropic bills).
    pub fn of(wire: Option<Wire>, model: &str) -> TokenRule {
        match wire {
            Some(Wire::Chat | Wire::Responses) => TokenRule::OpenAi,
            Some(Wire::Gemini) => TokenRule::Gemini,
            Some(Wire::Vertex) if !model.starts_with("claude") => TokenRule::Gemini,
            _ => TokenRule::Anthropic,
        }
    }
}

impl Attachment {
    /// About how many input tokens the attachment is billed as under `rule`. An estimate, not a
    /// bill: exact counts need the provider's token counting.
    pub fn tokens(&self, rule: TokenRule) -> u64 {
        let pages = || self.pages.map_or(1 + self.bytes / (64 * 1024), u64::from);
        let (w, h) = self.size.unwrap_or((1568, 1568));
        let (w, h) = (f64::from(w.max(1)), f64::from(h.max(1)));
        let fit = |side: f64, w: f64, h: f64| {
            let scale = (side / w.max(h)).min(1.0);
            (w * scale, h * scale)
        };
        match (self.kind, rule) {
            (Kind::Text, _) => 0,
            (Kind::Pdf, TokenRule::Gemini) => pages() * 258,
            (Kind::Pdf, _) => pages() * 3100,
            (_, TokenRule::Anthropic) => {
                let (w, h) = fit(1568.0, w, h);
                (w * h / 750.0).ceil().max(1.0) as u64
            }
            (_, TokenRule::OpenAi) => {
                let (w, h) = fit(2048.0, w, h);
                let short = (768.0 / w.min(h)).min(1.0);
                let tiles = ((w * short) / 512.0).ceil() * ((h * short) / 512.0).ceil();
                85 + 170 * tiles as u64
            }
            (_, TokenRule::Gemini) if w <= 384.0 && h <= 384.0 => 258,
            (_, TokenRule::Gemini) => 258 * ((w / 768.0).ceil() * (h / 768.0).ceil()) as u64,
        }
    }

    /// [`Attachment::tokens`] under Anthropic's rule, the largest for an image of ordinary size:
    /// for estimates made before the provider is known.
    pub fn estimated_tokens(&self) -> u64 {
        self.tokens(TokenRule::Anthropic)
    }
}

/// `data:MEDIA_TYPE;base64,…`: how the OpenAI wires take a file inline.
pub fn data_url(attachment: &Attachment) -> String {
    format!(
        "data:{};base64,{}",
        attachment.kind.media_type(),
        attachment.base64.as_str()
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How many frames a GIF holds, as its graphic control extensions count them (an animation
/// has one per frame; a still image at most one), best effort.
fn frames(data: &[u8]) -> usize {
    memchr::memmem::find_iter(data, &[0x21, 0xF9, 0x04]).count()
}

/// A PDF's page count (its page tree's `/Type /Page` objects, not `/Pages`) and whether its
/// trailer names an `/Encrypt` dictionary: read from its text, best effort (a compressed object
/// stream hides both, and then the provider decides).
fn pdf_facts(data: &[u8]) -> (Option<u32>, bool) {
    let page = |pattern: &[u8]| {
        memchr::memmem::find_iter(data, pattern)
            .filter(|&at| data.get(at + pattern.len()) != Some(&b's'))
            .count()
    };
    let pages = page(b"/Type /Page") + page(b"/Type/Page");
    let encrypted = memchr::memmem::find(data, b"/Encrypt").is_some();
    ((pages > 0).then_some(pages as u32), encrypted)
}

/// Whether rounds knows `model` to take images and PDFs: every current model of the hosted
/// APIs and clouds does, but for the text-only ones of OpenAI's that are still served; a local
/// server's model is not known to (`--vision` says it does).
pub fn takes_media(local: bool, model: &str) -> bool {
    const TEXT_ONLY: &[&str] = &[
        "o1-mini",
        "o3-mini",
        "gpt-3.5",
        "gpt-4-0",
        "gpt-4-32k",
        "davinci",
    ];
    let bare = model.rsplit('/').next().unwrap_or(model);
    !local && !TEXT_ONLY.iter().any(|p| bare.starts_with(p))
}

/// What one provider takes, as documented. Sizes are of the file's own bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Which provider's documentation these are, for messages.
    pub who: &'static str,
    pub image_kinds: &'static [Kind],
    pub image_bytes: u64,
    /// The longest side, in pixels (`None`: the provider scales any size down itself).
    pub image_side: Option<u32>,
    /// More images than this in one request, and the longest side becomes `many_side`.
    pub many: Option<(usize, u32)>,
    pub images: usize,
    /// Whether an animated GIF is taken.
    pub animated_gif: bool,
    pub pdf_bytes: u64,
    pub pdf_pages: u32,
    pub documents: usize,
    /// Every attachment of a request together.
    pub total_bytes: u64,
}

const MB: u64 = 1024 * 1024;
const STILL: &[Kind] = &[Kind::Png, Kind::Jpeg, Kind::Gif, Kind::Webp];
const NO_GIF: &[Kind] = &[Kind::Png, Kind::Jpeg, Kind::Webp];

/// Anthropic Messages (also Claude on Vertex): 5 MB per image *as base64* (the API measures the
/// encoded string), 8000 px (2000 px with more than 20 images), 100 images, 32 MB a request,
/// PDFs of at most 100 pages.
const ANTHROPIC: Limits = Limits {
    who: "Anthropic",
    image_kinds: STILL,
    image_bytes: 5 * MB * 3 / 4,
    image_side: Some(8000),
    many: Some((20, 2000)),
    images: 100,
    animated_gif: true,
    pdf_bytes: 32 * MB,
    pdf_pages: 100,
    documents: 100,
    total_bytes: 32 * MB,
};

/// OpenAI (Chat Completions, Responses, Azure): 20 MB per image (50 MB of images a request),
/// 500 images, still GIFs only; PDFs of 32 MB and 100 pages.
const OPENAI: Limits = Limits {
    who: "OpenAI",
    image_kinds: STILL,
    image_bytes: 20 * MB,
    image_side: None,
    many: None,
    images: 500,
    animated_gif: false,
    pdf_bytes: 32 * MB,
    pdf_pages: 100,
    documents: 100,
    total_bytes: 50 * MB,
};

/// Gemini API: no GIF; 100 MB inline a request, PDFs of 50 MB and 1,000 pages.
const GEMINI: Limits = Limits {
    who: "Gemini",
    image_kinds: NO_GIF,
    image_bytes: 100 * MB,
    image_side: None,
    many: None,
    images: 3000,
    animated_gif: false,
    pdf_bytes: 50 * MB,
    pdf_pages: 1000,
    documents: 3000,
    total_bytes: 100 * MB,
};

/// Gemini on Vertex AI: as Gemini, with 7 MB per inline image.
const VERTEX_GEMINI: Limits = Limits {
    who: "Vertex AI (Gemini)",
    image_bytes: 7 * MB,
    ..GEMINI
};

/// Bedrock Converse: 20 images of 3.75 MB and 8000 px, 5 documents of 4.5 MB.
const BEDROCK: Limits = Limits {
    who: "Bedrock",
    image_kinds: STILL,
    image_bytes: 15 * MB / 4,
    image_side: Some(8000),
    many: None,
    images: 20,
    animated_gif: true,
    pdf_bytes: 9 * MB / 2,
    pdf_pages: 100,
    documents: 5,
    total_bytes: 20 * 15 * MB / 4 + 5 * 9 * MB / 2,
};

impl Limits {
    /// The limits of `wire` for `model` (on Vertex, Claude's or Gemini's).
    pub fn of(wire: Wire, model: &str) -> Limits {
        match wire {
            Wire::Anthropic => ANTHROPIC,
            Wire::Chat | Wire::Responses => OPENAI,
            Wire::Gemini => GEMINI,
            Wire::Bedrock => BEDROCK,
            Wire::Vertex if model.starts_with("claude") => ANTHROPIC,
            Wire::Vertex => VERTEX_GEMINI,
        }
    }

    /// Whether every attachment of one request is within these limits; the first that is not,
    /// named with the limit it passes.
    pub fn check(&self, all: &[Attachment]) -> Result<(), AttachError> {
        let images = all.iter().filter(|a| a.kind.is_image()).count();
        let documents = all.iter().filter(|a| a.kind == Kind::Pdf).count();
        let total: u64 = all.iter().map(|a| a.bytes).sum();
        for a in all {
            if let Some(why) = self.refuses(a, images) {
                return Err(AttachError::Refused {
                    path: a.path.clone(),
                    why: format!("{why} ({} limits)", self.who),
                });
            }
        }
        let over = |what: String| {
            let path = all.last().map(|a| a.path.clone()).unwrap_or_default();
            Err(AttachError::Refused {
                path,
                why: format!("{what} ({} limits)", self.who),
            })
        };
        if images > self.images {
            return over(format!(
                "{images} images, more than the {} one request may hold",
                self.images
            ));
        }
        if documents > self.documents {
            return over(format!(
                "{documents} PDFs, more than the {} one request may hold",
                self.documents
            ));
        }
        if total > self.total_bytes {
            return over(format!(
                "{} of attachments together, more than the {} one request may carry",
                size(total),
                size(self.total_bytes)
            ));
        }
        Ok(())
    }

    /// Why one attachment alone is refused, if it is (an image a tool returns).
    pub fn refusal(&self, a: &Attachment) -> Option<String> {
        self.refuses(a, 1)
            .map(|why| format!("{why} ({} limits)", self.who))
    }

    /// Why one attachment is refused, among `images` images.
    fn refuses(&self, a: &Attachment, images: usize) -> Option<String> {
        match a.kind {
            Kind::Text => None,
            Kind::Pdf if a.encrypted => Some("an encrypted PDF cannot be read".into()),
            Kind::Pdf if a.bytes > self.pdf_bytes => Some(format!(
                "a PDF of {}, more than {}",
                size(a.bytes),
                size(self.pdf_bytes)
            )),
            Kind::Pdf => a
                .pages
                .filter(|&p| p > self.pdf_pages)
                .map(|p| format!("a PDF of {p} pages, more than {}", self.pdf_pages)),
            kind if !self.image_kinds.contains(&kind) => {
                Some(format!("{} images are not taken", kind.media_type()))
            }
            Kind::Gif if a.animated && !self.animated_gif => {
                Some("an animated GIF is not taken (only still ones)".into())
            }
            _ if a.bytes > self.image_bytes => Some(format!(
                "an image of {}, more than {}",
                size(a.bytes),
                size(self.image_bytes)
            )),
            _ => {
                let side = match self.many {
                    Some((many, side)) if images > many => Some(side),
                    _ => self.image_side,
                }?;
                let (w, h) = a.size?;
                (w.max(h) > side).then(|| {
                    let many = match self.many {
                        Some((many, _)) if images > many => {
                            format!(" with more than {many} images")
                        }
                        _ => String::new(),
                    };
                    format!("{w}×{h} pixels, more than {side} on a side{many}")
                })
            }
        }
    }
}

/// `3.8 MB`, `640 KB`, `12 bytes`.
fn size(bytes: u64) -> String {
    if bytes >= MB {
        format!("{:.1} MB", bytes as f64 / MB as f64)
    } else if bytes >= 1024 {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests;
