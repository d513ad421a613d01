//! `rounds models`: the built-in providers, the model aliases and the models whose context
//! window and prices rounds knows (`data/prices.toml`, `--prices`); and the values shell
//! completion offers for `-m`, from the same data.

use std::collections::BTreeMap;

use clap::builder::PossibleValue;
use serde::Serialize;

use super::Failure;
use crate::cli::{ListOutput, ModelsArgs};
use crate::pricing::{Catalog, ModelInfo};
use crate::providers::PROVIDERS;
use crate::settings::Layers;
use crate::{render, terminal};

/// `rounds models`.
pub(crate) fn models(args: &ModelsArgs, layers: &Layers) -> Result<(), Failure> {
    let catalog = Catalog::load(args.prices.as_deref()).map_err(|e| Failure::Config(e.into()))?;
    let listing = Listing::gather(&catalog, &layers.aliases);
    let text = match args.output {
        ListOutput::Json => {
            let mut json = serde_json::to_string_pretty(&listing).unwrap_or_default();
            json.push('\n');
            json
        }
        ListOutput::Text => listing.text(),
    };
    render::print_export(&text);
    Ok(())
}

/// What `rounds models` shows, as `-o json` writes it.
#[derive(Debug, Serialize)]
struct Listing {
    providers: Vec<Provider>,
    aliases: Vec<Alias>,
    models: Vec<Model>,
}

#[derive(Debug, Serialize)]
struct Provider {
    name: &'static str,
    api: &'static str,
    key_variable: &'static str,
    key_required: bool,
    /// A cloud's credentials, when they are more than a key.
    credentials: Option<&'static str>,
    /// The variables that override the URL, the first set one winning.
    url_variables: &'static [&'static str],
    default_url: &'static str,
    /// Bare model names that pick this provider (`claude-` for anthropic).
    bare_prefixes: &'static [&'static str],
}

#[derive(Debug, Serialize)]
struct Alias {
    alias: String,
    model: String,
    /// `settings` (an `[alias]` table of the user's) or `built-in`.
    from: &'static str,
    #[serde(flatten)]
    known: Known,
}

#[derive(Debug, Serialize)]
struct Model {
    /// The provider the entry is for; `None`: any (a family's context window).
    provider: Option<String>,
    /// A glob on the model name as sent to the provider.
    #[serde(rename = "match")]
    pattern: String,
    #[serde(flatten)]
    known: Known,
}

/// The context window and prices (USD per million tokens) of a model, where known.
#[derive(Debug, Serialize)]
struct Known {
    context_window: Option<u64>,
    input_usd: Option<f64>,
    output_usd: Option<f64>,
    cache_read_usd: Option<f64>,
    cache_write_usd: Option<f64>,
}

impl From<ModelInfo> for Known {
    fn from(info: ModelInfo) -> Known {
        let price = info.price;
        Known {
            context_window: info.context_window,
            input_usd: price.map(|p| p.input),
            output_usd: price.map(|p| p.output),
            cache_read_usd: price.and_then(|p| p.cache_read),
            cache_write_usd: price.and_then(|p| p.cache_write),
        }
    }
}

impl Listing {
    fn gather(catalog: &Catalog, user_aliases: &BTreeMap<String, String>) -> Listing {
        let providers = PROVIDERS
            .iter()
            .map(|e| Provider {
                name: e.name,
                api: e.wire.name(),
                key_variable: e.key_var,
                key_required: e.key_required,
                credentials: e.auth.describe(),
                url_variables: e.url_vars,
                default_url: e.default_url,
                bare_prefixes: e.bare_prefixes,
            })
            .collect();
        let models = catalog
            .entries()
            .map(|(pattern, provider, info)| Model {
                provider: provider.map(str::to_owned),
                pattern: pattern.to_owned(),
                known: info.into(),
            })
            .collect();
        Listing {
            providers,
            aliases: aliases(catalog, user_aliases),
            models,
        }
    }

    fn text(&self) -> String {
        let providers = self.providers.iter().map(|p| {
            let key = match (p.credentials, p.key_required) {
                (Some(credentials), _) => credentials.to_owned(),
                (None, true) => p.key_variable.to_owned(),
                (None, false) => format!("{} (optional)", p.key_variable),
            };
            let url = match (p.default_url, p.url_variables) {
                ("", []) => "from its location and project".to_owned(),
                ("", [only]) => (*only).to_owned(),
                ("", vars) => format!("from its region (or {})", vars.join(", ")),
                (url, []) => url.to_owned(),
                (url, vars) => format!("{url} (or {})", vars.join(", ")),
            };
            vec![p.name.to_owned(), p.api.to_owned(), key, url]
        });
        let aliases = self.aliases.iter().map(|a| {
            let mut row = vec![a.alias.clone(), a.model.clone(), a.from.to_owned()];
            row.extend(known_cells(&a.known));
            row
        });
        let models = self.models.iter().map(|m| {
            let mut row = vec![
                m.provider.clone().unwrap_or_else(|| "(any)".to_owned()),
                m.pattern.clone(),
            ];
            row.extend(known_cells(&m.known));
            row
        });
        let priced = ["CONTEXT", "$/M IN", "$/M OUT", "$/M CACHED"];
        [
            table(&["PROVIDER", "API", "KEY", "URL"], providers),
            table(
                &[&["ALIAS", "MODEL", "FROM"][..], &priced].concat(),
                aliases,
            ),
            table(
                &[&["PROVIDER", "MODEL (GLOB)"][..], &priced].concat(),
                models,
            ),
        ]
        .join("\n")
    }
}

/// Every alias (the user's over the built-in ones) with what the catalog knows of its model.
fn aliases(catalog: &Catalog, user: &BTreeMap<String, String>) -> Vec<Alias> {
    let builtin = crate::pricing::builtin_aliases();
    let mut all: BTreeMap<&String, (&String, &'static str)> =
        builtin.iter().map(|(k, v)| (k, (v, "built-in"))).collect();
    all.extend(user.iter().map(|(k, v)| (k, (v, "settings"))));
    all.into_iter()
        .map(|(alias, (model, from))| {
            let info = match model.split_once('/') {
                Some((provider, name)) => catalog.lookup(provider, name),
                None => ModelInfo::default(),
            };
            Alias {
                alias: alias.clone(),
                model: model.clone(),
                from,
                known: info.into(),
            }
        })
        .collect()
}

fn known_cells(k: &Known) -> Vec<String> {
    let usd = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    vec![
        k.context_window
            .map_or_else(|| "-".to_owned(), |n| n.to_string()),
        usd(k.input_usd),
        usd(k.output_usd),
        usd(k.cache_read_usd),
    ]
}

/// Rows under a header, each column as wide as its widest cell. Cells pass through
/// `terminal::line`: an alias comes from a settings file.
fn table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut all: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    all.extend(rows.map(|r| r.iter().map(|c| terminal::line(c).into_owned()).collect()));
    let mut widths = vec![0; header.len()];
    for row in &all {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in all {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// What a completion script offers for `-m`: the aliases (each described by its model), the
/// models they name, and every provider's `NAME/` prefix. Offered, not enforced: a run takes
/// any model name.
pub(crate) fn completion_values() -> Vec<PossibleValue> {
    let aliases = crate::pricing::builtin_aliases();
    let mut values: Vec<PossibleValue> = aliases
        .iter()
        .map(|(alias, model)| PossibleValue::new(alias.clone()).help(model.clone()))
        .collect();
    let mut models: Vec<&String> = aliases.values().collect();
    models.sort();
    models.dedup();
    values.extend(models.into_iter().map(|m| PossibleValue::new(m.clone())));
    values.extend(
        PROVIDERS
            .iter()
            .map(|e| PossibleValue::new(format!("{}/", e.name)).help(e.wire.name())),
    );
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_alias_and_provider_is_listed_and_offered_for_completion() {
        let catalog = Catalog::load(None).unwrap();
        let mut user = BTreeMap::new();
        user.insert("sonnet".to_owned(), "anthropic/claude-opus-4-5".to_owned());
        user.insert("local".to_owned(), "ollama/qwen3".to_owned());
        let listing = Listing::gather(&catalog, &user);
        assert_eq!(listing.providers.len(), PROVIDERS.len());
        let find = |name: &str| listing.aliases.iter().find(|a| a.alias == name).unwrap();
        // The user's alias wins over the built-in one of that name, as in a run.
        assert_eq!(find("sonnet").model, "anthropic/claude-opus-4-5");
        assert_eq!(find("sonnet").from, "settings");
        assert_eq!(find("haiku").from, "built-in");
        assert_eq!(find("haiku").known.context_window, Some(200_000));
        assert_eq!(find("local").known.input_usd, None);
        let text = listing.text();
        for entry in PROVIDERS {
            assert!(text.contains(entry.name), "{text}");
        }
        let offered: Vec<String> = completion_values()
            .iter()
            .map(|v| v.get_name().to_owned())
            .collect();
        for name in ["sonnet", "flash", "anthropic/claude-sonnet-4-5", "ollama/"] {
            assert!(offered.iter().any(|o| o == name), "{name}: {offered:?}");
        }
    }
}
