//! The typed values of one source (a batch job line, a queued job) over a run's settings.

use std::collections::BTreeMap;

use super::{
    Pin, Refusal, Rule, Source, ceiling, refusal, rule, rule_for, untrusted_model, user_only,
};

/// A limit's value, comparable with a ceiling.
pub(crate) trait Number: PartialOrd + Copy + std::fmt::Display {
    fn as_f64(self) -> f64;
}

impl Number for u32 {
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Number for u64 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl Number for f64 {
    fn as_f64(self) -> f64 {
        self
    }
}

/// Applies the typed values of one source (a batch job line, a queue row's job) over a run's
/// settings, each by its rule; what the source may not set is collected in `refused`.
pub(crate) struct Overlay {
    source: Source,
    pin: Pin,
    pub(crate) refused: Vec<Refusal>,
}

impl Overlay {
    pub(crate) fn new(source: Source, pin: Pin) -> Overlay {
        Overlay {
            source,
            pin,
            refused: Vec::new(),
        }
    }

    fn refuse(&mut self, key: &str, value: &dyn std::fmt::Display, why: Option<String>) {
        let values = [value.to_string()];
        let refusal = match why {
            Some(why) => refusal(key, &values, &self.source, why),
            None => user_only(key, &values, &self.source),
        };
        self.refused.push(refusal);
    }

    /// A key the source replaces, if it may.
    pub(crate) fn set<T: std::fmt::Debug>(&mut self, key: &str, slot: &mut T, value: T) {
        match rule_for(key, &self.source) {
            Rule::Harmless => *slot = value,
            _ => self.refuse(key, &format!("{value:?}"), None),
        }
    }

    /// The model: from an untrusted source, as `untrusted_model` allows.
    pub(crate) fn model(&mut self, slot: &mut Option<String>, spec: String) {
        if self.source.trusted() {
            *slot = Some(spec);
            return;
        }
        match untrusted_model(&spec, &BTreeMap::new(), &self.pin, &self.source) {
            Ok(model) => *slot = Some(model),
            Err(r) => self.refused.push(r),
        }
    }

    /// A limit that is always set (it has a default).
    pub(crate) fn limit<T: PartialOrd + Copy + std::fmt::Display>(
        &mut self,
        key: &str,
        slot: &mut T,
        value: T,
    ) {
        match rule_for(key, &self.source) {
            Rule::Harmless => *slot = value,
            Rule::Tighten if value < *slot => *slot = value,
            Rule::Tighten => self.not_tighter(key, &value, &*slot),
            _ => self.refuse(key, &value, None),
        }
    }

    /// A limit that may be unset (unlimited, or the key's ceiling).
    pub(crate) fn limit_opt<T: Number>(&mut self, key: &str, slot: &mut Option<T>, value: T) {
        match (rule_for(key, &self.source), *slot) {
            (Rule::Harmless, _) => *slot = Some(value),
            (Rule::Tighten, Some(current)) if value < current => *slot = Some(value),
            (Rule::Tighten, None) if value.as_f64() < ceiling(key) => *slot = Some(value),
            (Rule::Tighten, current) => {
                let shown = current.map_or_else(|| ceiling(key).to_string(), |c| c.to_string());
                self.not_tighter(key, &value, &shown);
            }
            _ => self.refuse(key, &value, None),
        }
    }

    fn not_tighter(
        &mut self,
        key: &str,
        value: &dyn std::fmt::Display,
        current: &dyn std::fmt::Display,
    ) {
        let why =
            format!("a limit from this source only tightens, and {value} is not below {current}");
        self.refuse(key, value, Some(why));
    }

    /// A deny list (or `--fail-on`): from any source, only added to.
    pub(crate) fn grow(&mut self, key: &str, slot: &mut Vec<String>, values: Vec<String>) {
        debug_assert_eq!(rule(key), Rule::Grow);
        for v in values {
            if !slot.contains(&v) {
                slot.push(v);
            }
        }
    }
}
