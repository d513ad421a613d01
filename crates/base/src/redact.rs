//! Redaction of the launcher's secrets from everything rounds writes or sends.
//!
//! Scrubbing keeps keys out of tool environments, but a tool that reads `.env` or a key file
//! still puts the secret into its output, and from there into the transcript (often a CI
//! artifact), stdout, the spill files and the next request. A [`Redactor`] is built once at setup
//! from the values rounds itself knows to be secret, and replaces each exact value, and each of
//! its common encodings (base64, hex, URL encoding, reversed: see `encode`), with
//! `[REDACTED:NAME]`, NAME being the variable that holds it:
//!
//! - the provider key the run resolved, wherever it came from (the variable, `{VAR}_FILE`,
//!   `--api-key-file`), named by its variable (`ANTHROPIC_API_KEY`);
//! - every variable of rounds' own environment whose name contains `KEY`, `TOKEN`, `SECRET` or
//!   `PASSWORD` in any case (`github_token` too), except names ending in `_FILE`, `_PATH` or
//!   `_DIR`, which say where a secret is kept rather than hold it;
//! - the provider key variables (`providers::key_vars`);
//! - `--redact NAME`: any variable, whatever its name.
//!
//! Values are trimmed of surrounding whitespace, and values shorter than [`MIN_SECRET_BYTES`]
//! are left alone: `TOKENIZERS_PARALLELISM=false` or `PASSWORD=root` would otherwise cut every
//! "false" or "root" out of every output, and a value that short is no secret a scan of output
//! could keep anyway. When values overlap, the longest match wins (a key inside a longer
//! connection string is reported as the longer one). Only names ever reach a record, never
//! values: `Debug` prints names alone.
//!
//! Matching is one Aho-Corasick automaton over every value, built once; a run with no secrets
//! has no automaton and pays nothing.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, MatchKind};

/// The shortest value redacted, in bytes (after trimming whitespace).
pub(crate) const MIN_SECRET_BYTES: usize = 8;

/// Words that make a variable's value a secret, wherever they are in its name, in any case.
pub(crate) const SECRET_WORDS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD"];

/// Name endings of variables that hold where a secret is (a path), not the secret.
const LOCATION_SUFFIXES: &[&str] = &["_FILE", "_PATH", "_DIR"];

/// Variables named for credentials whose value is where they are, not what they are:
/// Application Default Credentials' key file path.
const LOCATION_VARS: &[&str] = &["GOOGLE_APPLICATION_CREDENTIALS"];

/// The secrets of one run and how to take them out of text. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Redactor {
    inner: Option<Arc<Inner>>,
    /// Where streams made from this redactor note the names they found.
    seen: Option<Seen>,
}

/// The names streams found, for whoever handed them the redactor: a call's output is redacted
/// as it streams, inside the tool, and the result records what was found there.
#[derive(Debug, Clone, Default)]
pub struct Seen(Arc<Mutex<BTreeSet<String>>>);

impl Seen {
    /// The names found so far, sorted; forgets them.
    pub fn take(&self) -> Vec<String> {
        let mut names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *names).into_iter().collect()
    }

    fn note<'a>(&self, names: impl Iterator<Item = &'a String>) {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.extend(names.cloned());
    }
}

struct Inner {
    automaton: AhoCorasick,
    /// Per pattern: the variable that holds it.
    names: Vec<String>,
    /// Per pattern: what replaces it.
    markers: Vec<String>,
    /// The longest value, in bytes: how much of a stream may still be the start of a secret.
    longest: usize,
}

impl Redactor {
    /// A redactor for `secrets`, `(name, value)` pairs in order of preference: a value held by
    /// several names is reported under the first. Short values are dropped (see
    /// [`MIN_SECRET_BYTES`]).
    pub fn new(secrets: impl IntoIterator<Item = (String, Vec<u8>)>) -> Redactor {
        let mut seen = BTreeSet::new();
        let mut names = Vec::new();
        let mut values = Vec::new();
        for (name, value) in secrets {
            let value = value.trim_ascii();
            if value.len() < MIN_SECRET_BYTES {
                continue;
            }
            // Each form is one more pattern under the same name: an encoded secret is
            // reported as the secret it is.
            for form in encode::forms(value) {
                if seen.insert(form.clone()) {
                    names.push(name.clone());
                    values.push(form);
                }
            }
        }
        if values.is_empty() {
            return Redactor::default();
        }
        let automaton = match AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&values)
        {
            Ok(automaton) => automaton,
            Err(e) => {
                // Only a pattern set too large for the automaton's limits fails here, which no
                // set of environment values comes near; say so rather than run unredacted quietly.
                tracing::warn!("cannot build the redaction of secrets: {e}; nothing is redacted");
                return Redactor::default();
            }
        };
        let markers = names.iter().map(|n| format!("[REDACTED:{n}]")).collect();
        let longest = values.iter().map(Vec::len).max().unwrap_or(0);
        Redactor {
            inner: Some(Arc::new(Inner {
                automaton,
                names,
                markers,
                longest,
            })),
            seen: None,
        }
    }

    /// The redactor of a run: the provider key it resolved (`(variable, key)`), the variables
    /// of its environment `env` that the rules name, and the variables `extra` names
    /// (`--redact`). A `--redact` name that is unset or too short to redact is warned about.
    pub fn for_run(
        provider_key: Option<(String, &str)>,
        env: &[(OsString, OsString)],
        extra: &[String],
    ) -> Redactor {
        let value_of = |name: &str| {
            env.iter()
                .find(|(k, _)| k.as_bytes() == name.as_bytes())
                .map(|(_, v)| v.as_bytes().to_vec())
        };
        let mut secrets: Vec<(String, Vec<u8>)> = Vec::new();
        if let Some((name, key)) = provider_key {
            secrets.push((name, key.as_bytes().to_vec()));
        }
        for name in extra {
            match value_of(name) {
                Some(v) if v.trim_ascii().len() >= MIN_SECRET_BYTES => {
                    secrets.push((name.clone(), v));
                }
                Some(_) => tracing::warn!(
                    "--redact {name}: its value is shorter than {MIN_SECRET_BYTES} bytes and is \
                     not redacted"
                ),
                None => tracing::warn!("--redact {name}: no such variable is set"),
            }
        }
        let mut by_rule: Vec<(String, Vec<u8>)> = env
            .iter()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.as_bytes().to_vec()))
            .filter(|(k, _)| names_a_secret(k))
            .collect();
        // The provider variables first, then the rest by name: which name a shared value is
        // reported under must not depend on the order of the environment.
        by_rule.sort_by_key(|(k, _)| (!crate::providers::is_key_var(k), k.clone()));
        let headers: Vec<(String, Vec<u8>)> = (by_rule.iter())
            .filter(|(k, _)| crate::providers::is_header_var(k))
            .flat_map(|(k, v)| header_values(v).map(move |h| (k.clone(), h)))
            .collect();
        secrets.extend(by_rule);
        secrets.extend(headers);
        Redactor::new(secrets)
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// The names of the variables whose values are redacted, sorted, each once.
    pub fn names(&self) -> Vec<String> {
        let Some(inner) = &self.inner else {
            return Vec::new();
        };
        let names: BTreeSet<&String> = inner.names.iter().collect();
        names.into_iter().cloned().collect()
    }

    /// Replaces every secret in `text` with its marker; returns the names of those it found
    /// (sorted, each once), and leaves `text` untouched when there were none.
    pub fn redact(&self, text: &mut String) -> Vec<String> {
        let Some(inner) = &self.inner else {
            return Vec::new();
        };
        let mut found = BTreeSet::new();
        let mut out = Vec::new();
        let last = inner.replace(text.as_bytes(), text.len(), &mut out, &mut found);
        if found.is_empty() {
            return Vec::new();
        }
        out.extend_from_slice(&text.as_bytes()[last..]);
        // A value that is not UTF-8 can match inside a character of valid text; what is left
        // of that character is then shown as U+FFFD, never kept as broken UTF-8.
        *text = String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let names: BTreeSet<&str> = found.into_iter().map(|i| inner.names[i].as_str()).collect();
        names.into_iter().map(str::to_owned).collect()
    }

    /// A redactor for output that arrives in pieces, or `None` when there is nothing to redact.
    pub fn stream(&self) -> Option<Stream> {
        self.inner.as_ref().map(|inner| Stream {
            inner: inner.clone(),
            pending: Vec::new(),
            seen: self.seen.clone(),
        })
    }

    /// The same redactor, its streams noting in `seen` the names they find.
    pub fn noting(&self, seen: &Seen) -> Redactor {
        Redactor {
            inner: self.inner.clone(),
            seen: Some(seen.clone()),
        }
    }
}

impl Inner {
    /// Appends `hay` to `out` with each secret replaced by its marker, up to the first match
    /// that starts at or after `stop`; adds the patterns found to `found` and returns how much
    /// of `hay` was consumed (the end of the last match replaced; the caller copies the rest).
    fn replace(
        &self,
        hay: &[u8],
        stop: usize,
        out: &mut Vec<u8>,
        found: &mut BTreeSet<usize>,
    ) -> usize {
        let mut last = 0;
        for m in self.automaton.find_iter(hay) {
            if m.start() >= stop {
                break;
            }
            out.extend_from_slice(&hay[last..m.start()]);
            out.extend_from_slice(self.markers[m.pattern()].as_bytes());
            found.insert(m.pattern().as_usize());
            last = m.end();
        }
        last
    }
}

/// Names only: a redactor's values must never reach a log.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Redactor").field(&self.names()).finish()
    }
}

/// Two redactors are equal when they redact the same (a run builds one).
impl PartialEq for Redactor {
    fn eq(&self, other: &Redactor) -> bool {
        match (&self.inner, &other.inner) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for Redactor {}

/// The values of a `k=v,k2=v2` header list (`OTEL_EXPORTER_OTLP_HEADERS`), as written,
/// percent-decoded, and the last word of each: a credential that leaks leaks as a value or a
/// bearer token, not as the whole list.
fn header_values(list: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    list.split(|b| *b == b',').flat_map(|pair| {
        let value = pair
            .splitn(2, |b| *b == b'=')
            .nth(1)
            .unwrap_or_default()
            .trim_ascii();
        let mut decoded = Vec::with_capacity(value.len());
        let mut i = 0;
        while i < value.len() {
            let hex = value
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            match (value[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
                (b'%', Some(byte)) => {
                    decoded.push(byte);
                    i += 3;
                }
                (byte, _) => {
                    decoded.push(byte);
                    i += 1;
                }
            }
        }
        // `Bearer TOKEN`: the token alone is the secret.
        let word = decoded
            .rsplit(|b| *b == b' ')
            .next()
            .unwrap_or_default()
            .to_vec();
        [value.to_vec(), decoded, word]
    })
}

/// Whether a variable's name says it holds a secret (see the module doc).
fn names_a_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // A variable that says where credentials are (`AWS_WEB_IDENTITY_TOKEN_FILE`) is kept from
    // tools, but its value is a path, not a secret to take out of text.
    let location =
        LOCATION_SUFFIXES.iter().any(|s| upper.ends_with(s)) || LOCATION_VARS.contains(&&*upper);
    !location
        && (crate::providers::is_key_var(name) || SECRET_WORDS.iter().any(|w| upper.contains(w)))
}

/// Redaction of a stream: a secret may be split across pieces, so the last `longest - 1`
/// bytes, which may be the start of one, are held back until the next piece (or the end)
/// decides. What comes out is what redacting the whole at once would give.
pub struct Stream {
    inner: Arc<Inner>,
    pending: Vec<u8>,
    seen: Option<Seen>,
}

impl Stream {
    /// Takes the next piece; appends to `out` what is decided.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        self.pending.extend_from_slice(bytes);
        // A match starting before `cut` has every byte it could have, so it is the match a
        // search of the whole would find there; one starting later may still grow.
        let cut = self.pending.len().saturating_sub(self.inner.longest - 1);
        let mut found = BTreeSet::new();
        let last = self.inner.replace(&self.pending, cut, out, &mut found);
        self.note(&found);
        let keep = last.max(cut);
        out.extend_from_slice(&self.pending[last..keep]);
        self.pending.drain(..keep);
    }

    /// The end of the stream: appends the rest to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let mut found = BTreeSet::new();
        let last = self
            .inner
            .replace(&self.pending, self.pending.len(), out, &mut found);
        self.note(&found);
        out.extend_from_slice(&self.pending[last..]);
        self.pending.clear();
    }
}

impl Stream {
    fn note(&self, found: &BTreeSet<usize>) {
        if let Some(seen) = &self.seen
            && !found.is_empty()
        {
            seen.note(found.iter().map(|&i| &self.inner.names[i]));
        }
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("names", &self.inner.names)
            .field("pending", &self.pending.len())
            .finish()
    }
}

mod encode;
mod text;
pub use text::TextStream;
/// A text with the secrets of rounds' environment taken out: how a failure is said without a
/// run (a batch, a store, a subcommand), which has no run's redactor, and whose text may quote a
/// value (a path or a URL built from a variable, a server's error). A run's own ending is
/// redacted by the run, with its provider key too.
pub fn environment(text: String) -> String {
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    Redactor::for_run(None, &env, &[]).redacted(text)
}

#[cfg(test)]
mod tests;
