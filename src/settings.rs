//! Settings files: `$XDG_CONFIG_HOME/rounds/config.toml` (the user's) and `./.rounds.toml`
//! (the project's), holding any long flag of a run under its own name (`model = "…"`,
//! `allow = ["bash(git *)"]`, `tool-timeout = 60`), `[profile.NAME]` tables chosen with
//! `--profile NAME`, and `[alias]` model aliases; `-c key=value` sets one more.
//!
//! A project file comes with the code rounds is run on — in CI, often a pull request's — so it
//! may not set what widens what a run can reach or do ([`USER_ONLY`]: the endpoint the key goes
//! to, hooks and servers that run commands, the allowlist, the sandbox, where files are
//! written); those come from the user's own file, `-c`, the environment or flags.
//!
//! Precedence, highest first: flags, environment variables (as clap reads them), `-c`, the
//! chosen profile (project's over user's), the project file, the user file, the defaults. Files
//! are turned into flags placed before the command line's, for settings the command line and the
//! environment leave alone, so clap itself checks every value. Unknown keys are errors naming
//! the file and line.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};
use toml::de::{DeTable, DeValue};

use crate::cli::Cli;

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File { path: PathBuf, line: usize },
    Override,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Override => f.write_str("-c"),
        }
    }
}

/// One setting from a file or `-c`: the flag's long name, its values (one per repetition; none
/// for a switch turned on) and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub key: String,
    pub values: Vec<String>,
    pub origin: Origin,
}

/// What the files (and `-c`) say, after layering.
#[derive(Debug, Default)]
pub struct Layers {
    /// By key; a later layer replaces an earlier one's value.
    pub settings: BTreeMap<String, Setting>,
    /// Model aliases (`[alias]`): `name = "provider/model"`.
    pub aliases: BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

/// Settings a project file may not set (see the module's documentation).
pub const USER_ONLY: &[&str] = &[
    "allow",
    "api-key-file",
    "base-url",
    "mcp",
    "mcp-config",
    "output-last-message",
    "post-tool-hook",
    "pre-tool-hook",
    "prices",
    "resume",
    "sandbox",
    "sandbox-write",
    "search-url",
    "store",
    "tool-env",
    "tool-network",
    "tools-file",
    "transcript",
    "web-allow-private",
    "workspace",
];

/// A settings file and whether it is the user's own (trusted) or the project's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    pub path: PathBuf,
    pub users: bool,
}

/// The settings files, in ascending precedence: the user's, then the project's.
pub fn files(env: &dyn Fn(&str) -> Option<String>, cwd: &Path) -> Vec<SettingsFile> {
    let user = env("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|dir| SettingsFile {
            path: dir.join("rounds/config.toml"),
            users: true,
        });
    let project = SettingsFile {
        path: cwd.join(".rounds.toml"),
        users: false,
    };
    user.into_iter()
        .chain([project])
        .filter(|f| f.path.is_file())
        .collect()
}

/// Reads `files` and `overrides` (`-c key=value`) into layers, with `profile` applied.
pub fn load(
    files: &[SettingsFile],
    profile: Option<&str>,
    overrides: &[String],
) -> Result<Layers, SettingsError> {
    let known = long_flags();
    let mut layers = Layers::default();
    // The chosen profile's settings, applied over every file's top level.
    let mut chosen = Vec::new();
    let mut profiles = Vec::new();
    for file in files {
        let path = &file.path;
        // A project file may not widen what a run can reach (`USER_ONLY`).
        let allowed = |s: Setting| -> Result<Setting, SettingsError> {
            if !file.users && USER_ONLY.contains(&s.key.as_str()) {
                return Err(SettingsError(format!(
                    "{}: {} can only be set in your own settings file, with -c or a flag: a \
                     project file comes with the code rounds runs on",
                    s.origin, s.key
                )));
            }
            Ok(s)
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| SettingsError(format!("{}: {e}", path.display())))?;
        let doc =
            DeTable::parse(&text).map_err(|e| SettingsError(format!("{}: {e}", path.display())))?;
        let at = |span: std::ops::Range<usize>| Origin::File {
            path: path.clone(),
            line: text[..span.start.min(text.len())].matches('\n').count() + 1,
        };
        for (key, value) in doc.get_ref() {
            match (key.get_ref().as_ref(), value.get_ref()) {
                ("profile", DeValue::Table(table)) => {
                    for (name, body) in table {
                        let name = name.get_ref().to_string();
                        let DeValue::Table(body) = body.get_ref() else {
                            return Err(SettingsError(format!(
                                "{}: profile.{name} is not a table",
                                at(value.span())
                            )));
                        };
                        if profile == Some(name.as_str()) {
                            for (k, v) in body {
                                let s = setting(&known, k.get_ref(), v.get_ref(), at(k.span()))?;
                                chosen.push(allowed(s)?);
                            }
                        }
                        profiles.push(name);
                    }
                }
                ("alias", DeValue::Table(table)) => {
                    for (name, target) in table {
                        let target = target.get_ref().as_str().ok_or_else(|| {
                            SettingsError(format!(
                                "{}: an alias is a \"provider/model\" string",
                                at(name.span())
                            ))
                        })?;
                        layers
                            .aliases
                            .insert(name.get_ref().to_string(), target.to_owned());
                    }
                }
                (name, value) => {
                    let s = allowed(setting(&known, name, value, at(key.span()))?)?;
                    layers.settings.insert(s.key.clone(), s);
                }
            }
        }
    }
    if let Some(wanted) = profile
        && !profiles.iter().any(|p| p == wanted)
    {
        return Err(SettingsError(format!(
            "--profile {wanted}: no [profile.{wanted}] in the settings files (found: {})",
            if profiles.is_empty() {
                "none".to_owned()
            } else {
                profiles.join(", ")
            }
        )));
    }
    for s in chosen {
        layers.settings.insert(s.key.clone(), s);
    }
    for item in overrides {
        let Some((key, value)) = item.split_once('=') else {
            return Err(SettingsError(format!("-c {item:?}: expected key=value")));
        };
        let key = key.trim();
        if !known.contains_key(key) {
            return Err(SettingsError(format!(
                "-c {key}: unknown setting{}",
                suggest(&known, key)
            )));
        }
        layers.settings.insert(
            key.to_owned(),
            Setting {
                key: key.to_owned(),
                values: vec![value.to_owned()],
                origin: Origin::Override,
            },
        );
    }
    Ok(layers)
}

/// Every long flag of a run that a file may set, and whether it takes a value.
fn long_flags() -> BTreeMap<String, bool> {
    let command = Cli::command();
    command
        .get_arguments()
        .filter_map(|a| Some((a.get_long()?.to_owned(), a.get_action().takes_values())))
        .filter(|(name, _)| !matches!(name.as_str(), "help" | "version" | "profile" | "config"))
        .collect()
}

fn setting(
    known: &BTreeMap<String, bool>,
    key: &str,
    value: &DeValue<'_>,
    origin: Origin,
) -> Result<Setting, SettingsError> {
    let Some(&takes_value) = known.get(key) else {
        return Err(SettingsError(format!(
            "{origin}: unknown setting {key:?}{}",
            suggest(known, key)
        )));
    };
    let scalar = |v: &DeValue<'_>| -> Option<String> {
        match v {
            DeValue::String(s) => Some(s.to_string()),
            DeValue::Integer(n) => Some(n.as_str().to_owned()),
            DeValue::Float(n) => Some(n.as_str().to_owned()),
            _ => None,
        }
    };
    let values = match (takes_value, value) {
        (false, DeValue::Boolean(true)) => vec![],
        (false, DeValue::Boolean(false)) => {
            return Ok(Setting {
                key: key.into(),
                values: vec!["false".into()],
                origin,
            });
        }
        (false, _) => {
            return Err(SettingsError(format!(
                "{origin}: {key} is a switch: true or false"
            )));
        }
        (true, DeValue::Array(items)) => items
            .iter()
            .map(|i| scalar(i.get_ref()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                SettingsError(format!("{origin}: {key}: a list of strings or numbers"))
            })?,
        (true, v) => vec![
            scalar(v)
                .ok_or_else(|| SettingsError(format!("{origin}: {key}: a string or a number")))?,
        ],
    };
    Ok(Setting {
        key: key.into(),
        values,
        origin,
    })
}

fn suggest(known: &BTreeMap<String, bool>, key: &str) -> String {
    let close = known
        .keys()
        .find(|k| k.contains(key) || key.contains(k.as_str()) || k.replace('-', "_") == key);
    match close {
        Some(k) => format!(" (did you mean {k:?}?)"),
        None => "; settings are the long flags of a run, as in rounds --help".to_owned(),
    }
}

/// The flags the layers add before the command line's: only for settings the command line and
/// the environment leave alone (those win), and switches turned on.
pub fn flags(layers: &Layers, given: &ArgMatches) -> Vec<OsString> {
    let command = Cli::command();
    let mut out = Vec::new();
    for setting in layers.settings.values() {
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_long() == Some(setting.key.as_str()))
        else {
            continue;
        };
        let from_user = |id: &str| {
            matches!(
                given.value_source(id),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
        };
        // Given by the user, or in conflict with something the user gave (a file's
        // `transcript` against `--no-transcript`): the user's word stands.
        if from_user(arg.get_id().as_str())
            || command
                .get_arg_conflicts_with(arg)
                .iter()
                .any(|other| from_user(other.get_id().as_str()))
        {
            continue;
        }
        if setting.values == ["false"] && !arg.get_action().takes_values() {
            continue;
        }
        if setting.values.is_empty() {
            out.push(OsString::from(format!("--{}", setting.key)));
        }
        for value in &setting.values {
            out.push(OsString::from(format!("--{}={value}", setting.key)));
        }
    }
    out
}

/// Why the command line could not be read.
#[derive(Debug)]
pub enum ParseError {
    /// Bad flags, or `--help`/`--version` (clap prints those itself).
    Clap(clap::Error),
    /// A settings file or `-c` is wrong (a usage error).
    Settings(SettingsError),
}

/// Parses `args` with the settings files and `-c` applied beneath them (for a run, and for
/// `rounds config`, which shows the result); other subcommands take their flags as given.
pub fn parse(
    args: Vec<OsString>,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
) -> Result<(Cli, Layers), ParseError> {
    use clap::FromArgMatches;
    let command = Cli::command();
    let given = command
        .clone()
        .try_get_matches_from(&args)
        .map_err(ParseError::Clap)?;
    let applies = matches!(given.subcommand_name(), None | Some("config"));
    if !applies {
        let cli = Cli::from_arg_matches(&given).map_err(ParseError::Clap)?;
        return Ok((cli, Layers::default()));
    }
    let profile = given.get_one::<String>("profile").cloned();
    let overrides: Vec<String> = given
        .get_many::<String>("config")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let layers =
        load(&files(env, cwd), profile.as_deref(), &overrides).map_err(ParseError::Settings)?;
    if given.subcommand_name().is_some() {
        // `rounds config` shows the layers; it takes no run flags to merge them with.
        let cli = Cli::from_arg_matches(&given).map_err(ParseError::Clap)?;
        return Ok((cli, layers));
    }
    let mut full = args.clone();
    let insert_at = 1.min(full.len());
    let added = flags(&layers, &given);
    full.splice(insert_at..insert_at, added);
    let matches = command
        .try_get_matches_from(&full)
        .map_err(ParseError::Clap)?;
    let cli = Cli::from_arg_matches(&matches).map_err(ParseError::Clap)?;
    Ok((cli, layers))
}
