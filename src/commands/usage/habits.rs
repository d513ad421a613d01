//! What people bring from other agents' command lines, answered in rounds' words instead of
//! clap's guesses ("a similar argument exists: '--color'" for `--yolo`): `claude -p`'s `-p`
//! (rounds always runs that way), the flags that turn every permission off, `codex exec`'s
//! subcommand (which clap would send to the model as the prompt's first word), and a flag given
//! with its value as one argument (an action's `args: --max-rounds 20` on one line).

use std::ffi::OsString;

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::cli::Cli;

/// `claude -p` / `--print`: print mode, which is the only way rounds runs.
const PRINT: [&str; 2] = ["-p", "--print"];

/// Claude Code's and codex's switches for running with no permission checks and no sandbox.
const NO_PERMISSIONS: [&str; 3] = [
    "--yolo",
    "--dangerously-skip-permissions",
    "--dangerously-bypass-approvals-and-sandbox",
];

/// A habit from another tool, or an argument that holds two: why it is refused and what to type.
#[derive(Debug, thiserror::Error)]
pub enum Habit {
    #[error(
        "rounds needs no {flag}: it always runs headless and prints the answer (as claude -p \
         does), and the prompt is its arguments: {retry}"
    )]
    Print { flag: String, retry: String },
    #[error(
        "rounds has no {flag}: --full-auto is the edit + shell preset (file edits and bash, \
         inside the sandbox), --edit the edit one, and -a TOOL allows one tool more"
    )]
    NoPermissions { flag: String },
    #[error(
        "\"exec\" is not a subcommand of rounds: a run is what rounds does with its arguments \
         (codex exec's job), so drop the word: {retry}; a prompt that starts with it needs -- \
         first: {as_prompt}"
    )]
    Exec { retry: String, as_prompt: String },
    #[error(
        "{given:?} is one argument holding a flag and its value: give them as two arguments \
         (in an action's args: one argument per line), or as {joined}"
    )]
    Joined { given: String, joined: String },
    #[error(
        "{given:?} is one argument holding several: give each flag as an argument of its own \
         (in an action's args: one argument per line)"
    )]
    Several { given: String },
}

/// The words after the program's name, when they are all UTF-8.
fn words(args: &[OsString]) -> Option<Vec<&str>> {
    args.iter().skip(1).map(|a| a.to_str()).collect()
}

/// An unknown argument that is a habit from another tool, or a flag and its value in one.
pub(super) fn unknown_argument(error: &clap::Error, args: &[OsString]) -> Option<Habit> {
    if error.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(given)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = given.split('=').next().unwrap_or(given);
    if PRINT.contains(&flag) {
        let kept: Vec<&str> = words(args)?
            .into_iter()
            .filter(|w| !PRINT.contains(w))
            .collect();
        return Some(Habit::Print {
            flag: flag.to_owned(),
            retry: format!("rounds {}", shell_words::join(kept)),
        });
    }
    if NO_PERMISSIONS.contains(&flag) {
        return Some(Habit::NoPermissions {
            flag: flag.to_owned(),
        });
    }
    joined(given)
}

/// `--max-rounds 20` as one argument: a launcher that passes a line as one argument (an
/// action's `args`, a quoted variable) gives this, and clap's "a similar argument exists:
/// '--max-rounds'" does not say what is wrong.
fn joined(given: &str) -> Option<Habit> {
    let (flag, rest) = given.split_once(char::is_whitespace)?;
    let long = flag.strip_prefix("--")?;
    let command = Cli::command();
    let arg = command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?;
    let value = rest.trim();
    if arg.get_action().takes_values() && !value.starts_with('-') {
        return Some(Habit::Joined {
            given: given.to_owned(),
            // Unquoted: an action's args line is taken as it is, quotes and all.
            joined: format!("{flag}={value}"),
        });
    }
    Some(Habit::Several {
        given: given.to_owned(),
    })
}

/// `rounds exec "fix it"` (as `codex exec`): clap reads `exec` as the prompt's first word, and
/// the model would get "exec fix it". A `--` anywhere says the prompt is meant as written.
pub(super) fn exec_word(cli: &Cli, args: &[OsString]) -> Option<Habit> {
    if cli.prompt.first().is_none_or(|w| w != "exec") {
        return None;
    }
    let words = words(args)?;
    if words.contains(&"--") {
        return None;
    }
    let at = words.iter().position(|w| *w == "exec")?;
    let (before, after) = (&words[..at], &words[at + 1..]);
    let join = |parts: &[&[&str]]| shell_words::join(parts.concat());
    Some(Habit::Exec {
        retry: format!("rounds {}", join(&[before, after]))
            .trim_end()
            .to_owned(),
        as_prompt: format!("rounds {}", join(&[before, &["--", "exec"], after])),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::args;
    use super::*;
    use clap::Parser;

    /// What the habit check says of words clap refuses (`None`: clap's own words stand).
    fn refused(words: &[&str]) -> Option<String> {
        let args = args(words);
        let e = Cli::command().try_get_matches_from(&args).unwrap_err();
        unknown_argument(&e, &args).map(|h| h.to_string())
    }

    #[test]
    fn habits_from_other_tools_get_rounds_words() {
        let said = refused(&["-p", "fix it"]).unwrap();
        assert!(said.contains("needs no -p"), "{said}");
        assert!(said.ends_with("rounds 'fix it'"), "{said}");
        let said = refused(&["--print", "-m", "haiku", "fix it"]).unwrap();
        assert!(said.ends_with("rounds -m haiku 'fix it'"), "{said}");
        for flag in NO_PERMISSIONS {
            let said = refused(&[flag, "fix it"]).unwrap();
            assert!(said.contains(&format!("has no {flag}")), "{said}");
            assert!(said.contains("--full-auto is the edit + shell preset"));
        }
        // A mistyped flag of rounds' own keeps clap's suggestion.
        assert_eq!(refused(&["--max-round", "3", "x"]), None);
    }

    #[test]
    fn a_flag_and_its_value_in_one_argument_are_told_apart() {
        let said = refused(&["--max-rounds 20", "x"]).unwrap();
        assert!(said.contains("one argument per line"), "{said}");
        assert!(said.ends_with("or as --max-rounds=20"), "{said}");
        let said = refused(&["--allow read_file(src/*)", "x"]).unwrap();
        assert!(said.ends_with("or as --allow=read_file(src/*)"), "{said}");
        let said = refused(&["--edit --full-auto", "x"]).unwrap();
        assert!(said.contains("several"), "{said}");
        assert!(said.contains("one argument per line"), "{said}");
        // Not a flag of rounds: clap's words.
        assert_eq!(refused(&["--bogus 20", "x"]), None);
    }

    #[test]
    fn exec_as_the_first_word_is_refused_unless_after_dashdash() {
        let said = |words: &[&str]| {
            let args = args(words);
            let cli = Cli::try_parse_from(&args).unwrap();
            exec_word(&cli, &args).map(|h| h.to_string())
        };
        let refused = said(&["exec", "fix it"]).unwrap();
        assert!(
            refused.contains("drop the word: rounds 'fix it'"),
            "{refused}"
        );
        assert!(refused.ends_with("rounds -- exec 'fix it'"), "{refused}");
        let refused = said(&["-m", "haiku", "exec", "fix"]).unwrap();
        assert!(refused.contains("rounds -m haiku fix;"), "{refused}");
        assert_eq!(said(&["--", "exec", "the", "plan"]), None);
        assert_eq!(said(&["execute", "the", "plan"]), None);
        assert_eq!(said(&["fix", "exec"]), None);
    }
}
