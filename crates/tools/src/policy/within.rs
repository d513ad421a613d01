//! A subagent's policy: its own rules inside its caller's (see `Policy::offers`,
//! `Policy::permits` and `Policy::hides`, which consult both).

use std::sync::Arc;

use super::{Policy, PolicyError, Rule, compile, split_rules};

impl Policy {
    /// A policy inside `parent`, for a subagent: a call runs only if `parent` permits it and
    /// these rules do, a tool is offered only if both offer it, and a deny of either wins. `allow`
    /// `None` keeps every tool the parent offers (except [`NAMED_ONLY`] ones, which only a rule
    /// naming them reaches).
    pub fn within(
        parent: Arc<Policy>,
        allow: Option<&[String]>,
        deny: &[String],
        known: &[&str],
    ) -> Result<Policy, PolicyError> {
        let every = ["*".to_owned()];
        let allow = allow.unwrap_or(&every);
        let compile_all = |values: &[String], flag| -> Result<Vec<Rule>, PolicyError> {
            let mut rules = Vec::new();
            for value in values {
                for rule in split_rules(value, flag)? {
                    rules.push(compile(&rule, flag, known)?);
                }
            }
            Ok(rules)
        };
        Ok(Policy {
            allow: compile_all(allow, "tools")?,
            deny: compile_all(deny, "deny")?,
            within: Some(parent),
        })
    }
}
