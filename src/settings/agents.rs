//! `[agents.NAME]` tables: in the user's settings file, the project's `.rounds.toml` and the
//! files `--agents` names. Read here, each with its source; `trust::agents` decides what of
//! each applies.

use std::collections::BTreeMap;

use toml::de::{DeTable, DeValue};

use super::SettingsError;
use crate::trust::Source;
pub use crate::trust::agents::Written;

/// The `[agents.NAME]` tables of a TOML document: `agents` is its `agents` value, `at` makes
/// the source of a table from where its name is in the text.
pub(crate) fn read(
    agents: &DeValue<'_>,
    at: &dyn Fn(std::ops::Range<usize>) -> Source,
) -> Result<Vec<Written>, SettingsError> {
    let DeValue::Table(table) = agents else {
        return Err(SettingsError(
            "agents must be a table of [agents.NAME] tables".into(),
        ));
    };
    let mut written = Vec::new();
    for (name, body) in table {
        let origin = at(name.span());
        let DeValue::Table(body) = body.get_ref() else {
            return Err(SettingsError(format!(
                "{origin}: agents.{} is not a table",
                name.get_ref()
            )));
        };
        let mut keys = BTreeMap::new();
        for (key, value) in body {
            keys.insert(key.get_ref().to_string(), plain(value.get_ref()));
        }
        written.push(Written {
            name: name.get_ref().to_string(),
            keys,
            origin,
        });
    }
    Ok(written)
}

/// A value without its spans.
fn plain(value: &DeValue<'_>) -> toml::Value {
    match value {
        DeValue::String(s) => toml::Value::String(s.to_string()),
        DeValue::Integer(i) => i
            .to_string()
            .parse::<i64>()
            .map_or_else(|_| toml::Value::String(i.to_string()), toml::Value::Integer),
        DeValue::Float(f) => f
            .to_string()
            .parse::<f64>()
            .map_or_else(|_| toml::Value::String(f.to_string()), toml::Value::Float),
        DeValue::Boolean(b) => toml::Value::Boolean(*b),
        DeValue::Datetime(d) => toml::Value::String(d.to_string()),
        DeValue::Array(items) => {
            toml::Value::Array(items.iter().map(|v| plain(v.get_ref())).collect())
        }
        DeValue::Table(table) => toml::Value::Table(
            table
                .iter()
                .map(|(k, v)| (k.get_ref().to_string(), plain(v.get_ref())))
                .collect(),
        ),
    }
}

/// The agents of a file `--agents` names: its `[agents.NAME]` tables (nothing else).
pub(crate) fn read_file(path: &std::path::Path) -> Result<Vec<Written>, SettingsError> {
    let fail =
        |e: &dyn std::fmt::Display| SettingsError(format!("--agents {}: {e}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| fail(&e))?;
    let doc = DeTable::parse(&text).map_err(|e| fail(&e))?;
    let at = |span: std::ops::Range<usize>| Source::UserFile {
        path: path.to_owned(),
        line: text[..span.start.min(text.len())].matches('\n').count() + 1,
        profile: false,
    };
    let mut written = Vec::new();
    for (key, value) in doc.get_ref() {
        match key.get_ref().as_ref() {
            "agents" => written.extend(read(value.get_ref(), &at)?),
            other => {
                return Err(fail(&format!(
                    "{other:?}: an agents file holds only [agents.NAME] tables"
                )));
            }
        }
    }
    if written.is_empty() {
        return Err(fail(&"no [agents.NAME] table"));
    }
    Ok(written)
}
