//! What a run has spent, its subagents included: the budgets (`--budget-tokens`,
//! `--budget-usd`) are the run's, so every agent of it checks them against one account.

use std::sync::Mutex;

use crate::conversation::Usage;
use crate::outcome::Outcome;

/// The run's account, shared by the run and its subagents.
#[derive(Debug, Default)]
pub(crate) struct Spend {
    inner: Mutex<Account>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Account {
    /// Every round of every agent of the run.
    usage: Usage,
    cost: Option<f64>,
    /// The subagents' share of it.
    delegated: Usage,
    delegated_cost: Option<f64>,
}

fn plus(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

impl Spend {
    fn account(&self) -> Account {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a round's usage and cost; `delegated` when a subagent's.
    pub(crate) fn add(&self, usage: &Usage, cost: Option<f64>, delegated: bool) {
        let mut account = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        account.usage.add(usage);
        account.cost = plus(account.cost, cost);
        if delegated {
            account.delegated.add(usage);
            account.delegated_cost = plus(account.delegated_cost, cost);
        }
    }

    /// The tokens every agent of the run used so far.
    pub(crate) fn tokens(&self) -> u64 {
        self.account().usage.total()
    }

    /// What every agent of the run cost so far (0 when no price was known).
    pub(crate) fn cost(&self) -> f64 {
        self.account().cost.unwrap_or(0.0)
    }

    /// Rolls the subagents' usage and cost into the run's outcome.
    pub(crate) fn roll_up(&self, done: &mut Outcome) {
        let account = self.account();
        done.usage.add(&account.delegated);
        done.cost_usd = plus(done.cost_usd, account.delegated_cost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_counts_everything_and_rolls_up_only_what_subagents_spent() {
        let spend = Spend::default();
        let usage = |n| Usage {
            input_tokens: n,
            ..Usage::default()
        };
        spend.add(&usage(100), Some(0.5), false);
        spend.add(&usage(40), Some(0.25), true);
        spend.add(&usage(2), None, true);
        assert_eq!(spend.tokens(), 142);
        assert!((spend.cost() - 0.75).abs() < 1e-9);
        let mut done = Outcome::new(crate::outcome::Status::Completed, None);
        done.usage = usage(100);
        done.cost_usd = Some(0.5);
        spend.roll_up(&mut done);
        assert_eq!(done.usage.total(), 142);
        assert_eq!(done.cost_usd, Some(0.75));
    }
}
