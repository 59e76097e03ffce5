//! The dated price table: USD per million tokens per model id and alias,
//! compiled in from `data/prices.json` and overridable by a user file
//! (`OKSTRA_PRICES`, else `~/.config/okstra/prices.json`) in the same format.
//!
//! Arithmetic is exact: a price becomes an integer number of picodollars
//! per token (every list price has at most six decimals per million), a
//! cost is summed in picodollars and rounded once, to the microdollar. An
//! unknown model is never guessed at: [`Prices::cost`] returns `None` and
//! the caller keeps the tokens and says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ModelKey, Tokens};

/// The embedded table.
const EMBEDDED: &str = include_str!("../../data/prices.json");
/// Picodollars per token in one dollar per million tokens.
const PICO_PER_USD_PER_MTOK: f64 = 1e6;
/// Picodollars in one microdollar (the unit costs are kept in).
const PICO_PER_MICRO: u128 = 1_000_000;
/// Largest price accepted per million tokens: anything above is a typo.
const MAX_PRICE: f64 = 100_000.0;

/// Why a price file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read price file `{}`", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("price file `{}` is not a price table (expected {{\"asOf\": \"YYYY-MM-DD\", \"models\": {{\"<id>\": {{\"input\": 3, \"output\": 15, …}}}}}})", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("price file `{}`: model `{model}` has {field} `{value}`: expected a price per million tokens from 0 to {MAX_PRICE}", .path.display())]
    Value {
        path: PathBuf,
        model: String,
        field: &'static str,
        value: f64,
    },
}

/// A price table as written on disk.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TableWire {
    as_of: Option<String>,
    #[serde(default)]
    #[expect(dead_code, reason = "documents the file; always USD")]
    currency: Option<String>,
    #[serde(default)]
    #[expect(dead_code, reason = "documents the file; always per million tokens")]
    unit: Option<String>,
    #[serde(default)]
    #[expect(dead_code, reason = "free text for the reader of the file")]
    notes: Vec<String>,
    models: BTreeMap<String, PriceWire>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PriceWire {
    #[serde(default)]
    aliases: Vec<String>,
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    cache_write_1h: Option<f64>,
    fast_multiplier: Option<f64>,
}

/// One model's prices in picodollars per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rate {
    input: u128,
    output: u128,
    cache_read: Option<u128>,
    cache_write: Option<u128>,
    cache_write_1h: Option<u128>,
    /// Fast mode's multiplier in thousandths.
    fast_milli: Option<u128>,
}

/// The price table in use.
#[derive(Debug, Clone)]
pub struct Prices {
    /// The date the table's prices were read (the user file's, if it has one).
    pub as_of: String,
    rates: BTreeMap<String, Rate>,
    /// Alias or id (normalised) → id in `rates`.
    names: BTreeMap<String, String>,
}

/// Why a model's tokens could not be priced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpriced {
    UnknownModel(String),
    MissingRate { model: String, bucket: &'static str },
    NoFastPrice(String),
}

impl std::fmt::Display for Unpriced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unpriced::UnknownModel(model) => write!(
                f,
                "no price for model `{model}`: its tokens are kept and its cost is null (add it to a price file named by `OKSTRA_PRICES`)"
            ),
            Unpriced::MissingRate { model, bucket } => write!(
                f,
                "model `{model}` has {bucket} tokens but the price table has no {bucket} price for it: its cost is null"
            ),
            Unpriced::NoFastPrice(model) => write!(
                f,
                "model `{model}` ran in fast mode but the price table has no `fastMultiplier` for it: its cost is null"
            ),
        }
    }
}

impl Prices {
    /// The embedded table alone.
    pub fn embedded() -> Prices {
        let mut prices = Prices {
            as_of: String::new(),
            rates: BTreeMap::new(),
            names: BTreeMap::new(),
        };
        prices
            .merge(EMBEDDED, Path::new("data/prices.json"))
            .expect("the embedded price table is valid (a unit test checks it)");
        prices
    }

    /// The embedded table with the user's file on top: `OKSTRA_PRICES` if
    /// set (it must exist), else `$XDG_CONFIG_HOME/okstra/prices.json` or
    /// `~/.config/okstra/prices.json` when present.
    pub fn load(env: &dyn Fn(&str) -> Option<String>) -> Result<Prices, Error> {
        let mut prices = Prices::embedded();
        let explicit = env("OKSTRA_PRICES").filter(|p| !p.is_empty());
        let path = match explicit {
            Some(path) => Some(PathBuf::from(path)),
            None => env("XDG_CONFIG_HOME")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .or_else(|| env("HOME").map(|home| Path::new(&home).join(".config")))
                .map(|config| config.join("okstra/prices.json"))
                .filter(|path| path.exists()),
        };
        if let Some(path) = path {
            let text = super::lines::open_regular(&path)
                .and_then(|file| {
                    let mut text = String::new();
                    std::io::Read::read_to_string(
                        &mut std::io::Read::take(file, MAX_PRICE_FILE),
                        &mut text,
                    )?;
                    Ok(text)
                })
                .map_err(|source| Error::Read {
                    path: path.clone(),
                    source,
                })?;
            prices.merge(&text, &path)?;
        }
        Ok(prices)
    }

    /// Lay `text` (a price table) over this one: its models replace ours.
    fn merge(&mut self, text: &str, path: &Path) -> Result<(), Error> {
        let table: TableWire = serde_json::from_str(text).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
        if let Some(as_of) = table.as_of {
            self.as_of = as_of;
        }
        for (id, wire) in table.models {
            let check = |field: &'static str, value: f64| -> Result<u128, Error> {
                if value.is_finite() && (0.0..=MAX_PRICE).contains(&value) {
                    // Exact for prices with up to six decimals per million.
                    #[expect(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        reason = "range-checked above: 0 ≤ value ≤ 1e5, so value × 1e6 fits"
                    )]
                    Ok((value * PICO_PER_USD_PER_MTOK).round() as u128)
                } else {
                    Err(Error::Value {
                        path: path.to_path_buf(),
                        model: id.clone(),
                        field,
                        value,
                    })
                }
            };
            let optional = |field, value: Option<f64>| value.map(|v| check(field, v)).transpose();
            let rate = Rate {
                input: check("input", wire.input)?,
                output: check("output", wire.output)?,
                cache_read: optional("cacheRead", wire.cache_read)?,
                cache_write: optional("cacheWrite", wire.cache_write)?,
                cache_write_1h: optional("cacheWrite1h", wire.cache_write_1h)?,
                // `check` scales by 1e6; a multiplier is kept in thousandths.
                fast_milli: optional("fastMultiplier", wire.fast_multiplier)?
                    .map(|scaled| scaled / 1000),
            };
            self.names.insert(normalise(&id), id.clone());
            for alias in &wire.aliases {
                self.names.insert(normalise(alias), id.clone());
            }
            self.rates.insert(id, rate);
        }
        Ok(())
    }

    /// The table id a reported model name resolves to, if any.
    pub fn resolve(&self, model: &str) -> Option<&str> {
        let key = normalise(model);
        self.names
            .get(&key)
            .or_else(|| self.names.get(&strip_suffixes(&key)))
            .map(String::as_str)
    }

    /// The cost of `tokens` of `model`, in microdollars (rounded half up
    /// once, after summing in picodollars).
    pub fn cost(&self, model: &ModelKey, tokens: &Tokens) -> Result<u64, Unpriced> {
        let rate = self
            .resolve(&model.id)
            .and_then(|id| self.rates.get(id))
            .ok_or_else(|| Unpriced::UnknownModel(model.id.clone()))?;
        let missing = |bucket| Unpriced::MissingRate {
            model: model.id.clone(),
            bucket,
        };
        let bucket = |count: u64, price: Option<u128>, name| -> Result<u128, Unpriced> {
            if count == 0 {
                return Ok(0);
            }
            Ok(u128::from(count) * price.ok_or_else(|| missing(name))?)
        };
        let hour = tokens.cache_write_1h.min(tokens.cache_write);
        let mut pico = u128::from(tokens.input) * rate.input
            + u128::from(tokens.output) * rate.output
            + bucket(tokens.cache_read, rate.cache_read, "cache read")?
            + bucket(tokens.cache_write - hour, rate.cache_write, "cache write")?
            + bucket(
                hour,
                rate.cache_write_1h.or(rate.cache_write),
                "cache write",
            )?;
        if model.fast {
            let milli = rate
                .fast_milli
                .ok_or_else(|| Unpriced::NoFastPrice(model.id.clone()))?;
            pico = pico * milli / 1000;
        }
        let micros = (pico + PICO_PER_MICRO / 2) / PICO_PER_MICRO;
        Ok(u64::try_from(micros).unwrap_or(u64::MAX))
    }
}

/// Largest user price file read (a table of a few hundred models).
const MAX_PRICE_FILE: u64 = 4 << 20;

/// Lowercase, without a `provider/` prefix or a `[1m]`-style suffix.
fn normalise(model: &str) -> String {
    let model = model.trim();
    let model = model.split_once('[').map_or(model, |(head, _)| head);
    let model = model.rsplit_once('/').map_or(model, |(_, tail)| tail);
    model.to_ascii_lowercase()
}

/// Without a trailing date (`-20250514`, `-2025-05-14`) or `-latest`.
fn strip_suffixes(model: &str) -> String {
    let mut model = model.strip_suffix("-latest").unwrap_or(model);
    if let Some((head, tail)) = model.rsplit_once('-')
        && tail.len() == 8
        && tail.bytes().all(|b| b.is_ascii_digit())
    {
        model = head;
    }
    if let (Some(head), Some(tail)) = (
        model.get(..model.len().saturating_sub(11)),
        model.get(model.len().saturating_sub(11)..),
    ) && tail.len() == 11
        && !head.is_empty()
    {
        let date = tail.as_bytes();
        let is_date = date[0] == b'-'
            && date[5] == b'-'
            && date[8] == b'-'
            && [1, 2, 3, 4, 6, 7, 9, 10]
                .iter()
                .all(|&i| date[i].is_ascii_digit());
        if is_date {
            model = head;
        }
    }
    model.to_owned()
}

#[cfg(test)]
#[path = "price_tests.rs"]
mod tests;
