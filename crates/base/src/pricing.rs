//! What models cost and how much they can read, from `data/prices.toml` (compiled in) and
//! `--prices FILE`: a run's cost in USD from its usage, the price `--budget-usd` is checked
//! against, and the context window a run's requests are kept inside.
//!
//! A model that no entry matches has no price: the run reports no cost rather than a guess.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use crate::conversation::Usage;

const BUILTIN: &str = include_str!("../../../data/prices.toml");

/// USD per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Tokens written to the prompt cache (the 5-minute cache); `input` when not given.
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Tokens written to the hour-long cache; `cache_write` when not given.
    #[serde(default)]
    pub(crate) cache_write_1h: Option<f64>,
    /// Tokens read from the prompt cache; `input` when not given.
    #[serde(default)]
    pub cache_read: Option<f64>,
}

impl Price {
    /// What `usage` costs, in USD; cache writes at the hour-long cache's rate when
    /// `hour_long_cache`.
    pub fn cost(&self, usage: &Usage, hour_long_cache: bool) -> f64 {
        let write = match hour_long_cache {
            false => self.cache_write,
            true => self.cache_write_1h.or(self.cache_write),
        }
        .unwrap_or(self.input);
        let read = self.cache_read.unwrap_or(self.input);
        let per_token = |n: u64, usd_per_million: f64| n as f64 * usd_per_million / 1e6;
        per_token(usage.input_tokens, self.input)
            + per_token(usage.cache_write_tokens, write)
            + per_token(usage.cache_read_tokens, read)
            + per_token(usage.output_tokens, self.output)
    }
}

/// The compiled-in model aliases (`-m sonnet`), `name → provider/model`.
pub fn builtin_aliases() -> std::collections::BTreeMap<String, String> {
    toml::from_str::<File>(BUILTIN)
        .map(|f| f.aliases)
        .unwrap_or_default()
}

/// What the catalog knows of one model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelInfo {
    pub price: Option<Price>,
    pub context_window: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    #[allow(dead_code)]
    checked: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    source: Option<String>,
    #[serde(default)]
    model: Vec<Entry>,
    #[serde(default)]
    aliases: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(rename = "match")]
    pattern: String,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    input: Option<f64>,
    #[serde(default)]
    output: Option<f64>,
    #[serde(default)]
    cache_write: Option<f64>,
    #[serde(default)]
    cache_write_1h: Option<f64>,
    #[serde(default)]
    cache_read: Option<f64>,
    #[serde(default)]
    context_window: Option<u64>,
}

struct Compiled {
    pattern: String,
    matcher: GlobMatcher,
    provider: Option<String>,
    info: ModelInfo,
}

/// Every known model, `--prices` entries first.
pub struct Catalog {
    entries: Vec<Compiled>,
}

/// A `--prices` file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("--prices {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--prices {}: {source}", path.display())]
    Invalid {
        path: PathBuf,
        // Boxed: a TOML error is large, and this one travels in every config error.
        #[source]
        source: Box<TableError>,
    },
}

/// What is wrong with a price table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    #[error("match {pattern:?}: {source}")]
    Pattern {
        pattern: String,
        #[source]
        source: globset::Error,
    },
    #[error("{0}: give both input and output")]
    HalfPrice(String),
    #[error("{0}: prices must be numbers >= 0")]
    Negative(String),
}

impl Catalog {
    /// The compiled-in table, with `overrides` (a `--prices` file) in front of it.
    pub fn load(overrides: Option<&Path>) -> Result<Catalog, PricesError> {
        let mut entries = Vec::new();
        if let Some(path) = overrides {
            let text = std::fs::read_to_string(path).map_err(|source| PricesError::Read {
                path: path.to_owned(),
                source,
            })?;
            entries.extend(parse(&text).map_err(|source| PricesError::Invalid {
                path: path.to_owned(),
                source: Box::new(source),
            })?);
        }
        // A broken compiled-in table is caught by its test; here it only costs the prices.
        entries.extend(parse(BUILTIN).unwrap_or_default());
        Ok(Catalog { entries })
    }

    /// Every entry, as `rounds models` lists it: the glob on the model name, the provider it is
    /// for (`None`: any), what it knows. `--prices` entries first, as they are looked up.
    pub fn entries(&self) -> impl Iterator<Item = (&str, Option<&str>, ModelInfo)> {
        self.entries
            .iter()
            .map(|e| (e.pattern.as_str(), e.provider.as_deref(), e.info))
    }

    /// What is known of `model` at `provider` (an OpenAI-compatible server's models match only
    /// entries without a provider, since its prices are not OpenAI's).
    pub fn lookup(&self, provider: &str, model: &str) -> ModelInfo {
        let mut info = ModelInfo::default();
        let matching = self.entries.iter().filter(|e| {
            e.matcher.is_match(model) && e.provider.as_deref().is_none_or(|p| p == provider)
        });
        for entry in matching {
            info.price = info.price.or(entry.info.price);
            info.context_window = info.context_window.or(entry.info.context_window);
        }
        info
    }
}

fn parse(text: &str) -> Result<Vec<Compiled>, TableError> {
    let file: File = toml::from_str(text)?;
    file.model
        .into_iter()
        .map(|e| {
            let matcher = Glob::new(&e.pattern)
                .map_err(|source| TableError::Pattern {
                    pattern: e.pattern.clone(),
                    source,
                })?
                .compile_matcher();
            let price = match (e.input, e.output) {
                (Some(input), Some(output)) => Some(Price {
                    input,
                    output,
                    cache_write: e.cache_write,
                    cache_write_1h: e.cache_write_1h,
                    cache_read: e.cache_read,
                }),
                (None, None) => None,
                _ => return Err(TableError::HalfPrice(e.pattern)),
            };
            let negative = [
                e.input,
                e.output,
                e.cache_write,
                e.cache_write_1h,
                e.cache_read,
            ]
            .into_iter()
            .flatten()
            .any(|p| !p.is_finite() || p < 0.0);
            if negative {
                return Err(TableError::Negative(e.pattern));
            }
            Ok(Compiled {
                pattern: e.pattern,
                matcher,
                provider: e.provider,
                info: ModelInfo {
                    price,
                    context_window: e.context_window,
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_table_parses_and_knows_the_common_models() {
        parse(BUILTIN).unwrap();
        let aliases = builtin_aliases();
        assert_eq!(aliases["sonnet"], "anthropic/claude-sonnet-4-5");
        // Every alias names a model the table prices.
        let catalog = Catalog::load(None).unwrap();
        for (name, target) in &aliases {
            let (provider, model) = target.split_once('/').unwrap();
            assert!(catalog.lookup(provider, model).price.is_some(), "{name}");
        }
        let catalog = Catalog::load(None).unwrap();
        let sonnet = catalog.lookup("anthropic", "claude-sonnet-4-5-20250929");
        let price = sonnet.price.unwrap();
        assert_eq!((price.input, price.output), (3.0, 15.0));
        assert_eq!(sonnet.context_window, Some(200_000));
        assert_eq!(
            catalog
                .lookup("openai", "gpt-4.1-mini")
                .price
                .unwrap()
                .input,
            0.4
        );
        // A local server's model has no price, even when its name looks like a vendor's.
        assert_eq!(catalog.lookup("ollama", "gpt-4o").price, None);
        assert_eq!(catalog.lookup("ollama", "qwen3:8b"), ModelInfo::default());
        // A family without a price still has its window.
        let unknown_claude = catalog.lookup("anthropic", "claude-next");
        assert_eq!(unknown_claude.price, None);
        assert_eq!(unknown_claude.context_window, Some(200_000));
    }

    #[test]
    fn cost_bills_each_kind_of_token_at_its_rate() {
        let price = Price {
            input: 3.0,
            output: 15.0,
            cache_write: Some(3.75),
            cache_write_1h: Some(6.0),
            cache_read: Some(0.3),
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 1_000_000,
            reasoning_tokens: 0,
        };
        let five = price.cost(&usage, false);
        assert!((five - (3.0 + 1.5 + 0.6 + 3.75)).abs() < 1e-9, "{five}");
        let hour = price.cost(&usage, true);
        assert!((hour - (3.0 + 1.5 + 0.6 + 6.0)).abs() < 1e-9, "{hour}");
    }

    #[test]
    fn overrides_come_first_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("prices.toml");
        std::fs::write(
            &file,
            "[[model]]\nmatch = \"claude-sonnet-4*\"\nprovider = \"anthropic\"\ninput = 1.0\noutput = 2.0\n",
        )
        .unwrap();
        let catalog = Catalog::load(Some(&file)).unwrap();
        let info = catalog.lookup("anthropic", "claude-sonnet-4-5");
        assert_eq!(info.price.unwrap().input, 1.0);
        assert_eq!(
            info.context_window,
            Some(200_000),
            "the rest still comes from the table"
        );

        for bad in [
            "[[model]]\nmatch = \"x\"\ninput = 1.0\n",
            "[[model]]\nmatch = \"x\"\ninput = -1.0\noutput = 1.0\n",
            "[[model]]\nmatch = \"x\"\nprice = 3\n",
            "not toml",
        ] {
            std::fs::write(&file, bad).unwrap();
            let err = Catalog::load(Some(&file)).err().unwrap().to_string();
            assert!(err.starts_with("--prices "), "{err}");
        }
    }
}
