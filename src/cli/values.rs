//! The parsers of flag values clap's own types do not check: seconds, dollars, a temperature,
//! a command.

/// The most seconds any time flag takes (about 31 years): far beyond any real limit, and small
/// enough that adding it to the current time cannot overflow.
const MAX_SECS: f64 = 1e9;

/// A flag's value that is not what the flag takes: what it expected, and what it got.
#[derive(Debug, thiserror::Error)]
#[error("expected {expected}, got {got:?}")]
pub(crate) struct BadValue {
    expected: String,
    got: String,
}

fn bad(expected: impl Into<String>, got: &str) -> BadValue {
    BadValue {
        expected: expected.into(),
        got: got.to_owned(),
    }
}

pub(super) fn nonnegative_secs(s: &str) -> Result<f64, BadValue> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=MAX_SECS).contains(&v) => Ok(v),
        _ => Err(bad(format!("a number of seconds from 0 to {MAX_SECS}"), s)),
    }
}

pub(super) fn positive_usd(s: &str) -> Result<f64, BadValue> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(bad("a positive amount of US dollars", s)),
    }
}

pub(super) fn temperature(s: &str) -> Result<f64, BadValue> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=2.0).contains(&v) => Ok(v),
        _ => Err(bad("a temperature from 0 to 2", s)),
    }
}

pub(crate) fn positive_secs(s: &str) -> Result<f64, BadValue> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= MAX_SECS => Ok(v),
        _ => Err(bad(
            format!("a positive number of seconds up to {MAX_SECS}"),
            s,
        )),
    }
}

/// A command to run (`--check`): one that is empty or only blanks would run `bash -c ''`, which
/// exits 0 and so "passes" — what `--check "$VERIFY"` gives when the variable is unset.
pub(crate) fn command(s: &str) -> Result<String, BadValue> {
    if s.trim().is_empty() {
        return Err(bad(
            "a command (an empty one always passes; is the variable it came from unset?)",
            s,
        ));
    }
    Ok(s.to_owned())
}
