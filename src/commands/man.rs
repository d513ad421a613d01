//! `rounds man`: one page, rounds(1), with a section per subcommand (clap_mangen alone would
//! point to pages rounds-runs(1)… that no one installs).
//!
//! clap_mangen (0.3) renders each part of a page with its `.SH` header built in, and keeps the
//! renderers of the parts' bodies to itself; rendering subcommands into one page is an open
//! question upstream (clap-rs/clap#3365; #5769 proposes `flatten_help` for it). So a
//! subcommand's parts are rendered as clap_mangen renders them, and their headers are demoted
//! to subsections: whole `.SH` control lines, never text (roff escapes text lines that start
//! with a dot).

use std::io::Write;

use clap::CommandFactory;
use clap_mangen::Man;

use super::Failure;
use crate::cli::Cli;
use crate::render;

type Part = fn(&Man, &mut dyn Write) -> std::io::Result<()>;

/// roff's preamble, which every part comes with: the page needs it once.
const PREAMBLE: [&str; 2] = [".ie \\n(.g .ds Aq \\(aq", ".el .ds Aq '"];

/// `rounds man`.
pub(crate) fn man() -> Result<(), Failure> {
    let page = page().map_err(Failure::Man)?;
    render::print_document(page.as_bytes());
    Ok(())
}

fn page() -> std::io::Result<String> {
    let mut cmd = Cli::command();
    cmd.build();
    let main = Man::new(cmd.clone());
    let mut page: String = PREAMBLE.iter().map(|l| format!("{l}\n")).collect();
    for render in [
        Man::render_title,
        Man::render_name_section,
        Man::render_synopsis_section,
        Man::render_description_section,
        Man::render_options_section,
    ] as [Part; 5]
    {
        page.extend(lines(&main, render)?.map(|l| format!("{l}\n")));
    }
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        // batch parses its own flags; the top-level parser knows only its stub.
        let sub = match sub.get_name() {
            "batch" => crate::batch::args::own_command(),
            _ => sub.clone(),
        };
        page.push_str(&section(&sub)?);
    }
    for render in [Man::render_extra_section, Man::render_version_section] as [Part; 2] {
        page.extend(lines(&main, render)?.map(|l| format!("{l}\n")));
    }
    Ok(page)
}

/// A subcommand's section: its description, usage and options as subsections.
fn section(sub: &clap::Command) -> std::io::Result<String> {
    let man = Man::new(sub.clone());
    let name = sub.get_bin_name().unwrap_or(sub.get_name()).to_uppercase();
    let mut text = format!(".SH \"{name}\"\n");
    for render in [
        Man::render_description_section,
        Man::render_synopsis_section,
        Man::render_options_section,
    ] as [Part; 3]
    {
        for line in lines(&man, render)?.filter_map(|l| subsection(&l)) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    Ok(text)
}

/// A line of a subcommand's part as its section has it: the description needs no header of
/// its own (the section's name heads it), the other headers become subsections.
fn subsection(line: &str) -> Option<String> {
    match line {
        ".SH DESCRIPTION" => None,
        ".SH SYNOPSIS" => Some(".SS Usage".into()),
        ".SH OPTIONS" => Some(".SS Options".into()),
        // Options under a heading of their own (`.SH "RUN FLAGS…"`).
        _ => match line.strip_prefix(".SH ") {
            Some(title) => Some(format!(".SS {title}")),
            None => Some(line.to_owned()),
        },
    }
}

/// The lines of one part of `man`, without roff's preamble.
fn lines(man: &Man, render: Part) -> std::io::Result<impl Iterator<Item = String>> {
    let mut buf = Vec::new();
    render(man, &mut buf)?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !PREAMBLE.contains(l))
        .map(str::to_owned)
        .collect();
    Ok(lines.into_iter())
}
