//! A command line that could not be read: said as every failure is, with two additions. A
//! prompt that starts with a subcommand's name (`rounds show me the failing test`, or
//! `rounds -m haiku show me`, which clap reads as a prompt) is told to put `--` first. Under `-o json` or `-o stream-json`, stdout also gets the JSON object (or
//! `end` event) a run that cannot start prints, so a script reading stdout always gets one.
//! What people bring from other tools (`-p`, `--yolo`, `rounds exec …`) and a flag given with
//! its value as one argument (an action's `args: --max-rounds 20`) are answered in rounds' own
//! words (habits.rs) rather than clap's guesses.

use std::ffi::OsString;

use clap::CommandFactory;
use clap::error::ErrorKind;

use super::{Ended, Failure};

mod habits;
use crate::cli::{Cli, OutputMode};
use crate::settings::{Layers, ParseError};
pub(crate) use habits::Habit;

/// The command line as parsed; or how the program ends when it could not be, or when it reads
/// as something its writer cannot have meant (a subcommand's name after flags, which clap takes
/// as a prompt's first word: `rounds --profile ci config` would send "config" to the model).
pub(crate) fn read(
    parsed: Result<(Cli, Layers), ParseError>,
    args: &[OsString],
) -> Result<(Cli, Layers), Ended> {
    let failure = match parsed {
        Ok((cli, layers)) => {
            let exec = habits::exec_word(&cli, args).map(Failure::Habit);
            match exec.or_else(|| command_after_flags(&cli, args)) {
                None => return Ok((cli, layers)),
                Some(failure) => failure,
            }
        }
        Err(ParseError::Clap(e)) => habits::unknown_argument(&e, args)
            .map(Failure::Habit)
            .or_else(|| prompt_like_command(&e, args))
            .unwrap_or(Failure::Flags(e)),
        Err(ParseError::Settings(e)) => Failure::Settings(e),
    };
    Err(ending(failure, args))
}

/// How a command line that could not be read ends: said on stderr, and under `-o json` or
/// `stream-json` also as the JSON object on stdout.
fn ending(failure: Failure, args: &[OsString]) -> Ended {
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

/// A run whose prompt's first word names a subcommand, with flags before it and no `--`:
/// the writer meant the subcommand (`rounds -c model=gpt config`), or forgot the `--` a prompt
/// starting with that word needs (`rounds -m haiku show me the tests`). Either way the prompt
/// is not sent.
fn command_after_flags(cli: &Cli, args: &[OsString]) -> Option<Failure> {
    let first = cli.prompt.first()?;
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str())
        .collect::<Option<_>>()?;
    let named = first == "help"
        || Cli::command()
            .get_subcommands()
            .any(|c| c.get_name() == first);
    if !named || words.contains(&"--") {
        return None;
    }
    let at = words.iter().position(|w| w == first)?;
    let (before, after) = (&words[..at], &words[at + 1..]);
    let join = |parts: &[&[&str]]| shell_words::join(parts.concat());
    Some(Failure::CommandAfterFlags {
        command: first.clone(),
        as_command: format!("rounds {}", join(&[&[first], before, after])),
        as_prompt: format!("rounds {}", join(&[before, &["--", first], after])),
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

    /// `rounds WORDS…` as the process gets them (habits' tests too).
    pub(super) fn args(words: &[&str]) -> Vec<OsString> {
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
    fn a_subcommand_name_after_flags_is_refused_unless_after_dashdash() {
        use clap::Parser;
        let said = |words: &[&str]| {
            let args = args(words);
            let cli = Cli::try_parse_from(&args).unwrap();
            command_after_flags(&cli, &args).map(|f| f.to_string())
        };
        let refused = said(&["--profile", "ci", "config"]).unwrap();
        assert!(refused.contains("rounds config --profile ci"), "{refused}");
        assert!(
            refused.contains("rounds --profile ci -- config"),
            "{refused}"
        );
        let refused = said(&["-m", "haiku", "show", "me", "the tests"]).unwrap();
        assert!(
            refused.contains("rounds -m haiku -- show me 'the tests'"),
            "{refused}"
        );
        assert_eq!(said(&["-m", "haiku", "--", "show", "me"]), None);
        assert_eq!(said(&["-m", "haiku", "showing", "me"]), None);
        assert_eq!(said(&["-m", "haiku", "what", "tools", "exist"]), None);
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
