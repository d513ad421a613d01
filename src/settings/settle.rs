//! What of the settings files (and `-c`, and a queue's run flags) applies beneath what the user
//! gave on the command line and in the environment: each value by its source's rule.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::ArgMatches;
use clap::parser::ValueSource;

use super::{Applied, Layers, Read, Setting};
use crate::trust::{self, Refusal, Rule, Source};

/// Decides, with `trust`, what of `read` applies beneath what the user `given` on the command
/// line and in the environment (of `command`'s arguments), and returns the flags to place before
/// the command line's (so the user's own word wins) with what applies and what was refused.
pub(crate) fn settle(
    command: &clap::Command,
    given: &ArgMatches,
    read: Read,
) -> (Vec<OsString>, Layers) {
    let mut layers = Layers {
        aliases: read.aliases.clone(),
        agents: read.agents.clone(),
        ..Layers::default()
    };
    let project = Source::ProjectFile {
        path: PathBuf::from(".rounds.toml"),
        line: 0,
        profile: false,
    };
    let (project_aliases, refused) = trust::untrusted_aliases(&read.project_aliases, &project);
    layers.project_aliases = project_aliases;
    layers.refused = refused;
    let pin = pin(given, &read);
    let mut keys: Vec<&str> = read
        .trusted
        .iter()
        .chain(&read.untrusted)
        .map(|s| s.key.as_str())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut words = Vec::new();
    for key in keys {
        let Some(arg) = command.get_arguments().find(|a| a.get_long() == Some(key)) else {
            continue;
        };
        let of = |group: &[Setting]| -> Vec<Setting> {
            group.iter().filter(|s| s.key == key).cloned().collect()
        };
        let (trusted, untrusted) = (of(&read.trusted), of(&read.untrusted));
        let default = arg
            .get_default_values()
            .first()
            .map(|v| v.to_string_lossy().into_owned());
        let applied = match trust::rule(key) {
            Rule::Grow => grow(&trusted, &untrusted, user_gave(command, given, arg)),
            _ if user_gave(command, given, arg) => None,
            Rule::Harmless => harmless(
                &trusted,
                &untrusted,
                &layers.project_aliases,
                &pin,
                &mut layers.refused,
            ),
            Rule::Tighten => tighten(key, &trusted, &untrusted, default, &mut layers.refused),
            Rule::UserOnly => user_only(key, &trusted, &untrusted, &mut layers.refused),
        };
        let Some(applied) = applied else { continue };
        if push_words(&mut words, arg, key, &applied.values) {
            layers.settings.insert(key.to_owned(), applied);
        }
    }
    (words, layers)
}

/// Whether the user gave `arg` on the command line or in the environment, or something that
/// conflicts with it (a file's `transcript` against `--no-transcript`): the user's word stands.
fn user_gave(command: &clap::Command, given: &ArgMatches, arg: &clap::Arg) -> bool {
    let from_user = |id: &str| {
        matches!(
            given.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    from_user(arg.get_id().as_str())
        || command
            .get_arg_conflicts_with(arg)
            .iter()
            .any(|other| from_user(other.get_id().as_str()))
}

/// A key only the user may set: the untrusted values refused, the user's own kept.
fn user_only(
    key: &str,
    trusted: &[Setting],
    untrusted: &[Setting],
    refused: &mut Vec<Refusal>,
) -> Option<Applied> {
    for u in untrusted {
        refused.push(trust::user_only(key, &u.values, &u.origin));
    }
    trusted.last().map(|t| Applied {
        values: t.values.clone(),
        sources: vec![t.origin.clone()],
        note: None,
    })
}

/// The flags that give `values` to `arg` (`--key=value` each; `--key` for a switch on);
/// whether there are any (a switch set to false gives none).
fn push_words(words: &mut Vec<OsString>, arg: &clap::Arg, key: &str, values: &[String]) -> bool {
    let switch = !arg.get_action().takes_values();
    if switch && values == ["false"] {
        return false;
    }
    // `-c no-cache=true` reads as a switch's value: clap takes a switch bare.
    if values.is_empty() || (switch && values == ["true"]) {
        words.push(OsString::from(format!("--{key}")));
        return true;
    }
    for value in values {
        words.push(OsString::from(format!("--{key}={value}")));
    }
    true
}

/// What the user pinned the model's provider to (see `trust::Pin`), from what they gave and
/// their own settings.
fn pin(given: &ArgMatches, read: &Read) -> trust::Pin {
    let user_gave = |id: &str| {
        matches!(
            given.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    let in_files = |key: &str| read.trusted.iter().any(|s| s.key == key);
    let endpoint = ["base_url", "api_key_file"].iter().any(|id| user_gave(id))
        || in_files("base-url")
        || in_files("api-key-file");
    let model = given
        .get_one::<String>("model")
        .filter(|_| user_gave("model"))
        .cloned()
        .or_else(|| {
            read.trusted
                .iter()
                .rev()
                .find(|s| s.key == "model")
                .and_then(|s| s.values.first().cloned())
        })
        .map(|m| {
            read.aliases
                .get(&m)
                .cloned()
                .or_else(|| crate::pricing::builtin_aliases().remove(&m))
                .unwrap_or(m)
        });
    trust::Pin::new(endpoint, model.as_deref())
}

/// A deny list or `--fail-on`: every source's values, added to the user's own.
fn grow(trusted: &[Setting], untrusted: &[Setting], user: bool) -> Option<Applied> {
    let all: Vec<&Setting> = trusted.iter().chain(untrusted).collect();
    if all.is_empty() {
        return None;
    }
    let mut values: Vec<String> = Vec::new();
    for s in &all {
        for v in &s.values {
            if !values.contains(v) {
                values.push(v.clone());
            }
        }
    }
    let note = (all.len() > 1 || user).then(|| {
        if user {
            "added to the flag's: deny lists only grow".to_owned()
        } else {
            "every source's, added up: deny lists only grow".to_owned()
        }
    });
    Some(Applied {
        values,
        sources: all.iter().map(|s| s.origin.clone()).collect(),
        note,
    })
}

/// A key an untrusted source may set: `-c` and the user's chosen profile beat it, it beats the
/// user's file; a model must pass `trust::untrusted_model`.
fn harmless(
    trusted: &[Setting],
    untrusted: &[Setting],
    aliases: &BTreeMap<String, String>,
    pin: &trust::Pin,
    refused: &mut Vec<Refusal>,
) -> Option<Applied> {
    let applied = |s: &Setting, values: Vec<String>| Applied {
        values,
        sources: vec![s.origin.clone()],
        note: None,
    };
    let strong = trusted.iter().rev().find(|s| {
        matches!(
            s.origin,
            Source::Override | Source::UserFile { profile: true, .. }
        )
    });
    if let Some(t) = strong {
        return Some(applied(t, t.values.clone()));
    }
    if let Some(u) = untrusted.last() {
        let checked = match (u.key.as_str(), u.values.as_slice()) {
            ("model", [spec]) => {
                trust::untrusted_model(spec, aliases, pin, &u.origin).map(|m| vec![m])
            }
            _ => Ok(u.values.clone()),
        };
        match checked {
            Ok(values) => return Some(applied(u, values)),
            Err(refusal) => refused.push(refusal),
        }
    }
    trusted.last().map(|t| applied(t, t.values.clone()))
}

/// A limit: an untrusted value applies only when below the one the key would otherwise have
/// (the user's file or profile, else the default).
fn tighten(
    key: &str,
    trusted: &[Setting],
    untrusted: &[Setting],
    default: Option<String>,
    refused: &mut Vec<Refusal>,
) -> Option<Applied> {
    let t = trusted.last();
    let current = t.and_then(|t| t.values.first().cloned()).or(default);
    let (current_source, strong) = match t {
        Some(t) => (t.origin.to_string(), matches!(t.origin, Source::Override)),
        None => ("the default".to_owned(), false),
    };
    let kept = t.map(|t| Applied {
        values: t.values.clone(),
        sources: vec![t.origin.clone()],
        note: None,
    });
    let Some(u) = untrusted.last().filter(|_| !strong) else {
        return kept;
    };
    let value = u.values.first().cloned().unwrap_or_default();
    match trust::tightens(key, &value, current.as_deref()) {
        Some(true) => Some(Applied {
            values: vec![value],
            sources: vec![u.origin.clone()],
            note: Some(match &current {
                Some(c) => format!("tighter than {c}, {current_source}"),
                None => "unlimited otherwise".to_owned(),
            }),
        }),
        Some(false) => {
            refused.push(Refusal {
                key: key.to_owned(),
                values: u.values.clone(),
                source: u.origin.clone(),
                why: format!(
                    "a limit from this source only tightens, and {value} is not below {} ({current_source})",
                    current.as_deref().unwrap_or("the built-in ceiling")
                ),
            });
            kept
        }
        None => {
            refused.push(Refusal {
                key: key.to_owned(),
                values: u.values.clone(),
                source: u.origin.clone(),
                why: format!("{value:?} is not a number"),
            });
            kept
        }
    }
}
