//! What a run asks of the model beyond the conversation: how hard to reason, how many tokens to
//! think with, how random to be. Setup resolves them once and checks them against the provider
//! and the model ([`super::ProviderChoice::configure`]), so a request the API would reject never
//! leaves; each request builder turns them into its own wire fields.

use super::anthropic::DEFAULT_MAX_TOKENS;
use super::openai::Flavor;

/// `--reasoning-effort` (and a job line's `reasoning_effort`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
}

impl Effort {
    /// The value OpenAI takes (`reasoning.effort`, `reasoning_effort`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// A thinking budget for the APIs that take tokens rather than a level (Anthropic, Gemini
    /// 2.5). Low is Anthropic's minimum; high stays within every Gemini 2.5 model's maximum
    /// (Flash: 24576).
    pub(crate) fn budget_tokens(self) -> u32 {
        match self {
            Effort::Low => 1024,
            Effort::Medium => 8192,
            Effort::High => 24576,
        }
    }
}

/// `--parallel-tool-calls`: whether a response may ask for several tool calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Parallel {
    // What each provider does by default, except that hosted OpenAI is asked for them (as
    // before this option existed) and compatible servers are told nothing (llama.cpp's server
    // then makes one call per response). (Plain comments: on a ValueEnum, doc comments would
    // become the flag's help.)
    #[default]
    Auto,
    On,
    // One call per response: asked of every API that has a switch for it, and enforced by the
    // loop (a second call is dropped) for those that do not (Gemini).
    Off,
}

impl Parallel {
    /// The OpenAI APIs' `parallel_tool_calls` field, when tools are offered.
    pub(crate) fn openai_field(self, flavor: Flavor) -> Option<bool> {
        match (self, flavor) {
            (Parallel::On, _) | (Parallel::Auto, Flavor::OpenAi) => Some(true),
            (Parallel::Off, _) => Some(false),
            (Parallel::Auto, Flavor::Compatible) => None,
        }
    }
}

/// The sampling and reasoning options of every request of a run. Empty by default: nothing is
/// sent and each model uses its own defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Options {
    pub reasoning_effort: Option<Effort>,
    /// `--thinking-budget`: tokens of extended thinking (Anthropic) or `thinkingBudget` (Gemini).
    pub thinking_budget: Option<u32>,
    /// `--temperature`, 0 to 2 (clap checks the range).
    pub temperature: Option<f64>,
    pub parallel_tool_calls: Parallel,
}

/// Anthropic rejects a smaller `budget_tokens`.
pub(crate) const ANTHROPIC_MIN_BUDGET: u32 = 1024;

impl Options {
    /// Anthropic extended thinking: the budget given, else the effort's; `None` is thinking off.
    pub(crate) fn anthropic_thinking(&self) -> Option<u32> {
        self.thinking_budget
            .or(self.reasoning_effort.map(Effort::budget_tokens))
    }

    /// Anthropic's `max_tokens`, which must exceed the thinking budget: the user's cap (setup has
    /// checked it is larger), else the default answer room on top of the budget.
    pub(crate) fn anthropic_max_tokens(&self, requested: Option<u32>) -> u32 {
        match (requested, self.anthropic_thinking()) {
            (Some(n), _) => n,
            (None, Some(budget)) => budget.saturating_add(DEFAULT_MAX_TOKENS),
            (None, None) => DEFAULT_MAX_TOKENS,
        }
    }
}

/// Whether `model` is one of OpenAI's reasoning families (o1, o3, o4, gpt-5), which the Responses
/// API serves best: their reasoning items can be carried from round to round there.
pub(crate) fn is_openai_reasoning_family(model: &str) -> bool {
    let name = model.strip_prefix("ft:").unwrap_or(model);
    let family = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.', '_']))
    };
    ["o1", "o3", "o4", "gpt-5"].into_iter().any(family)
}

/// Whether `model` is an OpenAI reasoning model: the reasoning families except their chat
/// variants (`gpt-5-chat-latest`). These reject `temperature`, and their reasoning items can be
/// asked for encrypted.
pub(crate) fn is_openai_reasoning_model(model: &str) -> bool {
    is_openai_reasoning_family(model) && !model.contains("-chat")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasoning_families_are_recognised_by_name() {
        for m in [
            "o1",
            "o1-pro",
            "o3",
            "o3-mini",
            "o4-mini-2025-04-16",
            "gpt-5",
            "gpt-5-mini",
            "gpt-5.1",
            "gpt-5-codex",
            "ft:o4-mini:org::x",
        ] {
            assert!(is_openai_reasoning_family(m), "{m}");
            assert!(is_openai_reasoning_model(m), "{m}");
        }
        for m in [
            "gpt-4.1",
            "gpt-4o",
            "o10-lookalike",
            "omni",
            "gpt-50",
            "gpt-4o-mini",
        ] {
            assert!(!is_openai_reasoning_family(m), "{m}");
        }
        assert!(is_openai_reasoning_family("gpt-5-chat-latest"));
        assert!(!is_openai_reasoning_model("gpt-5-chat-latest"));
    }

    #[test]
    fn anthropic_max_tokens_leaves_room_above_the_budget() {
        let off = Options::default();
        assert_eq!(off.anthropic_max_tokens(None), DEFAULT_MAX_TOKENS);
        assert_eq!(off.anthropic_max_tokens(Some(100)), 100);
        let budget = Options {
            thinking_budget: Some(4000),
            ..Options::default()
        };
        assert_eq!(budget.anthropic_max_tokens(None), 4000 + DEFAULT_MAX_TOKENS);
        assert_eq!(budget.anthropic_max_tokens(Some(5000)), 5000);
        let effort = Options {
            reasoning_effort: Some(Effort::Low),
            ..Options::default()
        };
        assert_eq!(effort.anthropic_thinking(), Some(1024));
        let both = Options {
            reasoning_effort: Some(Effort::High),
            thinking_budget: Some(2000),
            ..Options::default()
        };
        assert_eq!(
            both.anthropic_thinking(),
            Some(2000),
            "the explicit budget wins"
        );
    }
}
