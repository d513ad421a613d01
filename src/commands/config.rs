//! `rounds config`: every setting a run would use that is not left unset (the default model
//! included), with where it comes from, in the settings files' own format, so that a line can
//! be pasted into one and the whole output read as one; then, as comments, the model un-aliased
//! and whether its provider's key is found.

use std::path::Path;

use clap::CommandFactory;
use toml::de::DeValue;

use super::Failure;
use crate::cli::Cli;
use crate::settings::Layers;
use crate::{config, render, terminal};

/// `rounds config`.
pub(crate) fn config(layers: &Layers) -> Result<(), Failure> {
    let env = |name: &str| crate::env::var(name);
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let mut out = text(layers, &env);
    out.push_str(&model_notes(layers, &env, &cwd));
    render::print_export(&out);
    Ok(())
}

/// The model a run would use, un-aliased, and where its provider's key would come from (never
/// the key), as comments: the output stays a settings file.
fn model_notes(layers: &Layers, env: &dyn Fn(&str) -> Option<String>, cwd: &Path) -> String {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let given = Cli::command()
        .get_arguments()
        .find(|a| a.get_id() == "model")
        .and_then(|arg| applied(arg, layers, &env))
        .and_then(|(values, _)| values.last().cloned());
    let named = config::name_model(given.as_deref(), &layers.aliases);
    let mut notes = vec![match named.alias {
        Some(from) => format!(
            "model: {} is the {from} alias of {}",
            named.given, named.spec
        ),
        None => format!("model: {}", named.spec),
    }];
    let setting = |key: &str| layers.settings.get(key)?.values.last().cloned();
    let key_file = setting("api-key-file").map(|f| cwd.join(f));
    notes.push(key_note(&named, key_file.as_deref(), &env, &layers.aliases));
    let lines: Vec<String> = notes
        .iter()
        .map(|n| format!("# {}\n", terminal::line(n)))
        .collect();
    format!("\n{}", lines.concat())
}

/// Whether the key of the provider `named` resolves to is found, and where.
fn key_note(
    named: &config::Named,
    key_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    aliases: &std::collections::BTreeMap<String, String>,
) -> String {
    let entry = match crate::providers::provider_of(&named.spec) {
        Some("replay") => return "key: none needed (a replay makes no request)".to_owned(),
        Some(name) => crate::providers::find(name),
        None => None,
    };
    let Some(entry) = entry else {
        let word = named.spec.split('/').next().unwrap_or_default();
        let hint = config::did_you_mean(word, config::model_names(aliases));
        return format!("provider: unknown for {}{hint}", named.spec);
    };
    let (name, var) = (entry.name, entry.key_var);
    match config::key_origin(var, key_file, env) {
        Ok(Some(from)) => format!("key ({name}): found in {from}"),
        Ok(None) if !entry.key_required => format!("key ({name}): none, and none needed"),
        Ok(None) => format!("key ({name}): not found (set {var}, {var}_FILE or api-key-file)"),
        Err(e) => format!("key ({name}): {e}"),
    }
}

/// The settings as a settings file: a line per setting, then the aliases, then (commented out)
/// what was refused.
fn text(layers: &Layers, env: &dyn Fn(&str) -> Option<String>) -> String {
    let command = Cli::command();
    let rows: Vec<(String, String)> = command
        .get_arguments()
        .filter_map(|arg| row(arg, layers, env))
        .collect();
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0).min(60);
    let mut out = String::new();
    for (line, source) in rows {
        out.push_str(&format!("{line:width$}  # {}\n", terminal::line(&source)));
    }
    out.push_str(&aliases(layers));
    out.push_str(&refused(layers));
    out
}

/// One setting's line (`key = value`) and where its value comes from; `None` for a setting
/// left unset, and for the flags that are no settings.
fn row(
    arg: &clap::Arg,
    layers: &Layers,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, String)> {
    let long = arg.get_long()?;
    if matches!(long, "help" | "version" | "profile" | "config") {
        return None;
    }
    // A run without a model takes the default one: shown, so that no line hides it.
    let default_model = || {
        (long == "model").then(|| {
            (
                vec![crate::providers::DEFAULT_MODEL.to_owned()],
                "default".to_owned(),
            )
        })
    };
    let (values, source) = applied(arg, layers, env).or_else(default_model)?;
    let quoted: Vec<String> = values.iter().map(|v| toml_value(v)).collect();
    let value = match (arg.get_action().takes_values(), quoted.as_slice()) {
        (false, _) => "true".to_owned(),
        (true, [one]) if !is_list(arg) => one.clone(),
        (true, many) => format!("[{}]", many.join(", ")),
    };
    Some((format!("{long} = {value}"), source))
}

/// The values that apply to `arg` and their source: the environment, then the settings, then
/// clap's default.
fn applied(
    arg: &clap::Arg,
    layers: &Layers,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(Vec<String>, String)> {
    let from_env = arg
        .get_env()
        .and_then(|name| Some((name.to_str()?, env(name.to_str()?)?)))
        .filter(|(_, v)| !v.is_empty());
    if let Some((name, value)) = from_env {
        // Shown as a name only: an environment value may be a secret (a store URL).
        let shown = match arg.is_hide_env_values_set() {
            true => "(hidden)".to_owned(),
            false => value,
        };
        return Some((vec![shown], format!("env {name}")));
    }
    if let Some(s) = arg.get_long().and_then(|long| layers.settings.get(long)) {
        let sources: Vec<String> = s.sources.iter().map(ToString::to_string).collect();
        let mut source = sources.join(", ");
        if let Some(note) = &s.note {
            source.push_str(&format!(" ({note})"));
        }
        return Some((s.values.clone(), source));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    (!defaults.is_empty()).then(|| (defaults, "default".to_owned()))
}

/// The `[alias]` table: the user's aliases, then the project's.
fn aliases(layers: &Layers) -> String {
    let aliases: Vec<String> = layers
        .aliases
        .iter()
        .map(|(k, v)| format!("{} = {}", toml_key(k), toml_value(v)))
        .chain(layers.project_aliases.iter().map(|(k, v)| {
            format!(
                "{} = {}  # the project's: for its own model value only",
                toml_key(k),
                toml_value(v)
            )
        }))
        .collect();
    if aliases.is_empty() {
        return String::new();
    }
    format!("\n[alias]\n{}\n", aliases.join("\n"))
}

/// What was refused, commented out so that the output stays a settings file one can paste.
fn refused(layers: &Layers) -> String {
    if layers.refused.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n# Refused (see \"Who decides what\" in docs/security.md):\n");
    for r in &layers.refused {
        let quoted: Vec<String> = r.values.iter().map(|v| toml_value(v)).collect();
        // A switch is refused with no value: it was on.
        let value = if quoted.is_empty() {
            "true".to_owned()
        } else {
            quoted.join(", ")
        };
        let line = format!("{} = {}  # {}: {}", r.key, value, r.source, r.why);
        out.push_str(&format!("# {}\n", terminal::line(&line)));
    }
    out
}

/// Whether an argument is repeatable (its value is a list in a settings file).
fn is_list(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), clap::ArgAction::Append)
}

/// A value as a settings file holds it. Settings read a number back as the text it was
/// written as, so a value is written bare only when TOML reads it as a number of exactly that
/// text (`25`, `0.5`, `inf`); anything else (`infinity`, `1_000`, `true` for a flag that takes
/// a value) is a string.
// The toml crate writes TOML only with its "display" feature, which this build does not
// enable; its parser decides what is a number, and `toml_string` quotes the rest.
fn toml_value(v: &str) -> String {
    let number = match DeValue::parse(v).map(|parsed| parsed.into_inner()) {
        Ok(DeValue::Integer(n)) => n.radix() == 10 && n.as_str() == v,
        Ok(DeValue::Float(n)) => n.as_str() == v,
        _ => false,
    };
    match number {
        true => v.to_owned(),
        false => toml_string(v),
    }
}

/// A key as TOML writes it: bare when it can be, else quoted (an alias named `gpt.5` is one
/// key, not a table).
fn toml_key(k: &str) -> String {
    toml_writer::ToTomlKey::to_toml_key(k)
}

/// A TOML string, escaped as the `toml` crates' own writer does (control characters included).
fn toml_string(v: &str) -> String {
    toml_writer::ToTomlValue::to_toml_value(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Applied;
    use crate::trust::{Refusal, Source};
    use toml::de::DeTable;

    /// What the settings loader makes of a scalar it reads back (`settings::setting`).
    fn read_back(value: &DeValue<'_>) -> Option<String> {
        match value {
            DeValue::String(s) => Some(s.to_string()),
            DeValue::Integer(n) => Some(n.as_str().to_owned()),
            DeValue::Float(n) => Some(n.as_str().to_owned()),
            _ => None,
        }
    }

    fn field<'i>(table: &DeTable<'i>, key: &str) -> Option<DeValue<'i>> {
        let (_, value) = table.iter().find(|(k, _)| k.get_ref() == key)?;
        Some(value.get_ref().clone())
    }

    fn round_trip(write: fn(&str) -> String, v: &str) -> Result<String, String> {
        let doc = format!("k = {}\n", write(v));
        let table = DeTable::parse(&doc).map_err(|e| format!("{doc}: {e}"))?;
        let value = field(table.get_ref(), "k").ok_or("no k")?;
        read_back(&value).ok_or_else(|| format!("{doc}: not a scalar"))
    }

    const HOSTILE: &[&str] = &[
        "25",
        "0.5",
        "-3",
        "1e5",
        "inf",
        "-inf",
        "nan",
        "infinity",
        "Infinity",
        "NaN",
        ".5",
        "5.",
        "007",
        "1_000",
        "0x1F",
        "true",
        "false",
        "",
        "openai/gpt-4.1",
        "say \"hi\"",
        "C:\\dir\\",
        "two\nlines",
        "tab\there",
        "\u{7f}del",
        "\u{1b}[31mred",
        "\u{202e}bidi",
        "'single'",
        "[1, 2]",
        "x # not a comment",
        "héllo ✓",
    ];

    #[test]
    fn every_value_reads_back_as_written() {
        for v in HOSTILE {
            assert_eq!(round_trip(toml_value, v).as_deref(), Ok(*v), "{v:?}");
        }
    }

    #[test]
    fn the_old_rule_did_not() {
        // A number for f64, else JSON's quoting: the control that the table above can fail.
        fn old(v: &str) -> String {
            if v.parse::<f64>().is_ok() || v == "true" || v == "false" {
                v.to_owned()
            } else {
                serde_json::to_string(v).unwrap_or_default()
            }
        }
        for v in ["infinity", "NaN", ".5", "\u{7f}del", "true", "007"] {
            assert_ne!(round_trip(old, v).as_deref(), Ok(v), "{v:?}");
        }
    }

    #[test]
    fn the_whole_output_is_a_settings_file() {
        let source = Source::UserFile {
            path: "/home/u/.config/rounds/config.toml\n[x]".into(),
            line: 3,
            profile: false,
        };
        let mut layers = Layers::default();
        for (key, values) in [
            ("budget-usd", vec!["infinity"]),
            ("model", vec!["we\"ird\u{7f}"]),
            ("allow", vec!["bash:git *", "read"]),
        ] {
            let applied = Applied {
                values: values.into_iter().map(str::to_owned).collect(),
                sources: vec![source.clone()],
                note: Some("tightens \"25\"\n(default)".into()),
            };
            layers.settings.insert(key.into(), applied);
        }
        layers.aliases.insert("gpt.5".into(), "openai/gpt-5".into());
        layers.aliases.insert("fast".into(), "nan".into());
        layers
            .project_aliases
            .insert("my model".into(), "x\ny".into());
        layers.refused.push(Refusal {
            key: "base-url".into(),
            values: vec!["http://evil\n[alias]".into()],
            source,
            why: "only the user\nmay".into(),
        });
        let text = text(&layers, &|_| None);
        let table = match DeTable::parse(&text) {
            Ok(t) => t.into_inner(),
            Err(e) => panic!("{e}\n{text}"),
        };
        let get = |k: &str| field(&table, k);
        assert!(
            matches!(get("budget-usd"), Some(DeValue::String(s)) if s == "infinity"),
            "{text}"
        );
        assert!(matches!(get("model"), Some(DeValue::String(s)) if s == "we\"ird\u{7f}"));
        assert!(matches!(get("allow"), Some(DeValue::Array(a)) if a.len() == 2));
        let Some(DeValue::Table(alias)) = get("alias") else {
            panic!("{text}")
        };
        let keys: Vec<&str> = alias.keys().map(|k| k.get_ref().as_ref()).collect();
        assert_eq!(keys.len(), 3, "{text}");
        for key in ["gpt.5", "fast", "my model"] {
            assert!(keys.contains(&key), "{key}: {text}");
        }
        assert!(
            !text.contains("evil\n"),
            "a refused value stays in its comment"
        );
    }
}
