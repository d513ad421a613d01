//! A command line that could not be read: said as every failure is, with two additions. A
//! prompt that starts with a subcommand's name (`rounds show me the failing test`) is told to
//! put `--` first. Under `-o json` or `-o stream-json`, stdout also gets the JSON object (or
//! `end` event) a run that cannot start prints, so a script reading stdout always gets one.

use std::ffi::OsString;

use clap::CommandFactory;
use clap::error::ErrorKind;

use super::{Ended, Failure};
use crate::cli::{Cli, OutputMode};
use crate::settings::ParseError;

/// How the program ends when `args` could not be read.
pub(crate) fn parse_failed(error: ParseError, args: &[OsString]) -> Ended {
    let failure = match error {
        ParseError::Clap(e) => prompt_like_command(&e, args).unwrap_or(Failure::Flags(e)),
        ParseError::Settings(e) => Failure::Settings(e),
    };
    // `--help` and `--version` are no errors: clap prints them as they are.
    let help = matches!(&failure, Failure::Flags(e) if !e.use_stderr());
    match output_asked(args) {
        Some(output @ (OutputMode::Json | OutputMode::StreamJson)) if !help => {
            Ended::FailedAs(failure, output)
        }
        _ => Ended::Failed(failure),
    }
}

/// `rounds show me the failing test`: the first word names a subcommand, a word that is no
/// flag follows it, and the subcommand could not take them.
fn prompt_like_command(error: &clap::Error, args: &[OsString]) -> Option<Failure> {
    let kinds = [
        ErrorKind::UnknownArgument,
        ErrorKind::InvalidValue,
        ErrorKind::InvalidSubcommand,
    ];
    if !kinds.contains(&error.kind()) {
        return None;
    }
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str())
        .collect::<Option<_>>()?;
    let (first, rest) = words.split_first()?;
    let command = Cli::command();
    let named = *first == "help" || command.get_subcommands().any(|c| c.get_name() == *first);
    if !named || rest.first().is_none_or(|w| w.starts_with('-')) {
        return None;
    }
    Some(Failure::PromptIsCommand {
        command: (*first).to_owned(),
        retry: format!("rounds -- {}", shell_words::join(&words)),
    })
}

/// The output mode the words ask for (`-o json`, `-ojson`, `--output=json`, …; the last one
/// wins, as when they are read), from words that could not be parsed: `None` when none does.
/// (A settings file's `output` is not read: it may be the file that could not be.)
fn output_asked(args: &[OsString]) -> Option<OutputMode> {
    let mut asked = None;
    let mut words = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(word) = words.next() {
        let value = match word.as_ref() {
            "--" => break,
            "-o" | "--output" => words.next().map(|v| v.into_owned()),
            w => w
                .strip_prefix("--output=")
                .or_else(|| w.strip_prefix("-o="))
                .or_else(|| w.strip_prefix("-o"))
                .map(str::to_owned),
        };
        if let Some(value) = value {
            asked = Some(match value.as_str() {
                "json" => OutputMode::Json,
                "stream-json" => OutputMode::StreamJson,
                _ => OutputMode::Text,
            });
        }
    }
    asked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        std::iter::once("rounds")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn the_output_mode_is_read_from_words_that_do_not_parse() {
        let table: [(&[&str], Option<OutputMode>); 9] = [
            (&["-o", "json", "--bogus"], Some(OutputMode::Json)),
            (&["--output=stream-json", "x"], Some(OutputMode::StreamJson)),
            (&["-ojson"], Some(OutputMode::Json)),
            (&["--output", "json", "-o", "text"], Some(OutputMode::Text)),
            (&["runs", "-o", "json", "-n", "x"], Some(OutputMode::Json)),
            (&["--", "-o", "json"], None),
            (&["x", "--max-rounds", "0"], None),
            (&["-o"], None),
            (&["--output"], None),
        ];
        for (words, want) in table {
            assert_eq!(output_asked(&args(words)), want, "{words:?}");
        }
    }

    #[test]
    fn only_a_word_after_a_subcommand_name_reads_as_a_prompt() {
        let failed = |words: &[&str]| {
            let args = args(words);
            let e = Cli::command().try_get_matches_from(&args).unwrap_err();
            prompt_like_command(&e, &args).map(|f| f.to_string())
        };
        let said = failed(&["show", "me", "the", "failing", "test"]).unwrap();
        assert!(
            said.contains("rounds -- show me the failing test"),
            "{said}"
        );
        let said = failed(&["help", "me", "fix it"]).unwrap();
        assert!(said.contains("rounds -- help me 'fix it'"), "{said}");
        assert!(failed(&["config", "the", "thing"]).is_some());
        // A mistyped flag or value of a subcommand is no prompt.
        assert_eq!(failed(&["runs", "-n", "many"]), None);
        assert_eq!(failed(&["show", "--bogus"]), None);
        assert_eq!(failed(&["--bogus", "show", "me"]), None);
    }
}
