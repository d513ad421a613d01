//! `--attach`: the files the user attaches to the prompt, read and judged before any request.
//! Images and PDFs go with the first turn in the provider's own shape, their bytes saved beside
//! the transcript; a text file becomes part of the turn's text. A file the provider's documented
//! limits refuse, or a model not known to take images or PDFs (`--vision` says it does), is a
//! usage error naming the file and the limit.

use std::path::Path;

use super::ConfigError;
use crate::attachment::{Attachment, Kind, Limits, takes_media};
use crate::cli::Cli;
use crate::files::Dir;
use crate::provider::ProviderChoice;
use crate::transcript::Attached;

/// The run's attachments.
#[derive(Debug, Default)]
pub(crate) struct Attachments {
    /// The images and PDFs, sent with the first turn.
    pub(crate) media: Vec<Attachment>,
    /// The text files, as the turn's text holds them (before the prompt).
    pub(crate) text: String,
    /// What the start line records of every file, in the order given.
    pub(crate) record: Vec<Attached>,
    /// How the run's provider bills them.
    rule: crate::attachment::TokenRule,
}

impl Attachments {
    /// About the bytes of text the images and PDFs stand for in the first turn (four a token).
    pub(crate) fn bytes(&self) -> usize {
        self.media
            .iter()
            .map(|a| a.tokens(self.rule) as usize * 4)
            .sum()
    }
}

/// Reads every `--attach` file (relative to `cwd`), keeps each image's and PDF's bytes in
/// `outputs` (`attachments/SHA256.EXT`), and checks them, with those of the conversation a
/// resumed run goes on from (each request carries them all again), against what
/// `provider` and `model` take.
pub(crate) fn resolve(
    cli: &Cli,
    cwd: &Path,
    (provider, model): (&ProviderChoice, &str),
    resumed: Option<&super::Resume>,
    outputs: &Dir,
) -> Result<Attachments, ConfigError> {
    let earlier = resumed.map_or(&[][..], |r| &r.history[..]);
    let mut out = Attachments::default();
    for file in &cli.attach {
        let shown = file.display().to_string();
        let data = std::fs::read(cwd.join(file)).map_err(|e| {
            ConfigError::Attach(crate::attachment::AttachError::Unreadable {
                path: shown.clone(),
                why: e.to_string(),
            })
        })?;
        let attachment = Attachment::of(&shown, data.clone()).map_err(ConfigError::Attach)?;
        out.record.push(Attached::from(&attachment));
        if attachment.kind == Kind::Text {
            out.text.push_str(&text_part(&shown, &data));
            continue;
        }
        save(outputs, &attachment, &data)?;
        out.media.push(attachment);
    }
    let mut all: Vec<Attachment> = earlier
        .iter()
        .filter_map(|m| match m {
            crate::conversation::Message::Attached { attachments, .. } => Some(attachments),
            _ => None,
        })
        .flatten()
        .cloned()
        .collect();
    all.extend(out.media.iter().cloned());
    if let (Some(first), ProviderChoice::Api { entry, wire, .. }) = (all.first(), provider) {
        let wire = *wire;
        out.rule = crate::attachment::TokenRule::of(Some(wire), model);
        if !cli.vision && !takes_media(entry.local, model) {
            return Err(ConfigError::Attach(
                crate::attachment::AttachError::Refused {
                    path: first.path.clone(),
                    why: format!(
                        "{}/{model} is not known to take images or PDFs; if it does, give --vision",
                        entry.name
                    ),
                },
            ));
        }
        Limits::of(wire, model)
            .check(&all)
            .map_err(ConfigError::Attach)?;
    }
    Ok(out)
}

/// Gives the images of the tool results a resumed conversation holds their bytes again, found
/// by digest beside any transcript of the chain (`transcripts`).
pub(crate) fn refill(
    history: &mut [crate::conversation::Message],
    transcripts: &[std::path::PathBuf],
) -> Result<(), ConfigError> {
    for message in history {
        let crate::conversation::Message::ToolResults(results) = message else {
            continue;
        };
        for media in results.iter_mut().flat_map(|r| &mut r.media) {
            let record = crate::transcript::Attached::from(&*media);
            let found = transcripts
                .iter()
                .find_map(|t| kept(t, std::slice::from_ref(&record)).ok());
            match found.and_then(|mut f| f.pop()) {
                Some(whole) => *media = whole,
                None => {
                    return Err(ConfigError::ResumeAttachment {
                        transcript: transcripts.last().cloned().unwrap_or_default(),
                        path: media.path.clone(),
                        why: "a tool result's image is not beside any transcript of the chain"
                            .into(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// What images the run's model takes (its provider's limits), when it takes any: `read_file`
/// then returns an image to it.
pub(crate) fn images(cli: &Cli, provider: &ProviderChoice, model: &str) -> Option<Limits> {
    match provider {
        ProviderChoice::Api { entry, wire, .. }
            if cli.vision || takes_media(entry.local, model) =>
        {
            Some(Limits::of(*wire, model))
        }
        _ => None,
    }
}

/// A text file as the turn holds it: its name, then its content fenced so that nothing in it
/// can close the fence.
fn text_part(path: &str, data: &[u8]) -> String {
    let text = String::from_utf8_lossy(data);
    format!(
        "Attached file {}:\n\n{}\n\n",
        crate::markdown::code_span(path),
        crate::markdown::fenced(&text, "")
    )
}

/// Keeps an attachment's bytes beside the transcript, named by its digest (so two files with one
/// content are kept once, and `--resume` finds them by what the start line records).
fn save(outputs: &Dir, attachment: &Attachment, data: &[u8]) -> Result<(), ConfigError> {
    let failed = |e: std::io::Error| ConfigError::SaveAttachment {
        path: attachment.path.clone(),
        why: e.to_string(),
    };
    let dir = outputs.subdir("attachments".as_ref()).map_err(failed)?;
    dir.target(attachment.kept_name())
        .and_then(|t| t.write(data))
        .map_err(failed)
}

/// The images and PDFs a recorded run (`transcript`) was given, read back from beside it by
/// the digest its start line records (never from a path it names: a transcript is a record,
/// not an instruction), each checked against that digest.
pub(crate) fn kept(
    transcript: &Path,
    recorded: &[Attached],
) -> Result<Vec<Attachment>, ConfigError> {
    let dir = transcript.with_extension("outputs").join("attachments");
    recorded
        .iter()
        .filter(|a| a.kind != Kind::Text)
        .map(|a| {
            let missing = |why: String| ConfigError::ResumeAttachment {
                transcript: transcript.to_owned(),
                path: a.path.clone(),
                why,
            };
            if a.sha256.len() != 64 || !a.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(missing("its recorded digest is not one".into()));
            }
            let file = dir.join(format!("{}.{}", a.sha256, Attachment::extension(a.kind)));
            let mut data = Vec::new();
            let mut opened = crate::files::open_regular(&file)
                .map_err(|e| missing(format!("{}: {e}", file.display())))?;
            std::io::Read::read_to_end(&mut opened, &mut data)
                .map_err(|e| missing(format!("{}: {e}", file.display())))?;
            let attachment = Attachment::of(&a.path, data).map_err(|e| missing(e.to_string()))?;
            if attachment.sha256 != a.sha256 {
                return Err(missing(format!(
                    "{} is not the file recorded",
                    file.display()
                )));
            }
            Ok(attachment)
        })
        .collect()
}
