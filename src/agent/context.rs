//! Keeping requests inside the model's context window. Every round resends the whole
//! conversation, so a long run grows until the provider refuses it; before that, the oldest
//! tool results are elided from the conversation the requests are built from (the transcript
//! keeps them whole): each becomes a one-line stub saying what it was.
//!
//! Elision happens in chunks — when a request would pass `HIGH` of the window, enough of the
//! oldest results go to bring it down to `LOW` — so the prefix a provider has cached stays the
//! same for many rounds in between. The system prompt, the user's turns and the newest round's
//! results are never elided. Sizes are estimated from bytes, corrected by what the provider
//! reported for the previous request.

use crate::attachment::TokenRule;
use crate::conversation::{Block, Message};

/// Share of the window past which a request triggers elision.
const HIGH: f64 = 0.85;
/// Share of the window elision brings a request down to.
const LOW: f64 = 0.6;
/// After the provider refused a request as too long: the target of the one retry.
const HARDER: f64 = 0.4;
/// Bytes of JSON framing each message and block costs on the wire, roughly.
const FRAMING: u64 = 32;

/// The context budget of a run.
pub(crate) struct Context {
    window: u64,
    /// Bytes every request carries besides the conversation (system prompt, tool definitions).
    fixed: u64,
    /// Tokens per byte, learnt from the provider's reports (a quarter to start with).
    tokens_per_byte: f64,
    /// How the provider bills the images and PDFs the conversation holds.
    rule: TokenRule,
}

impl Context {
    pub(crate) fn new(window: u64, fixed_bytes: u64, rule: TokenRule) -> Context {
        Context {
            window,
            fixed: fixed_bytes,
            tokens_per_byte: 0.25,
            rule,
        }
    }

    /// The estimated size of a request over `history`, in tokens.
    pub(crate) fn estimate(&self, history: &[Message]) -> u64 {
        ((self.fixed + bytes(history, self.rule)) as f64 * self.tokens_per_byte) as u64
    }

    /// Learns from what the provider reported for a request over `history`: code and JSON
    /// often take more tokens per byte than prose.
    pub(crate) fn calibrate(&mut self, history: &[Message], reported_input: u64) {
        let bytes = self.fixed + bytes(history, self.rule);
        if bytes > 0 && reported_input > 0 {
            self.tokens_per_byte = (reported_input as f64 / bytes as f64).clamp(0.1, 1.0);
        }
    }

    /// Elides the oldest tool results when the next request would pass `HIGH` of the window;
    /// returns the ids elided now.
    pub(crate) fn fit(&self, history: &mut [Message]) -> Vec<String> {
        if (self.estimate(history) as f64) <= HIGH * self.window as f64 {
            return Vec::new();
        }
        self.elide_to(history, LOW)
    }

    /// After the provider refused a request as too long: elide down to `HARDER`.
    pub(crate) fn fit_harder(&self, history: &mut [Message]) -> Vec<String> {
        self.elide_to(history, HARDER)
    }

    fn elide_to(&self, history: &mut [Message], share: f64) -> Vec<String> {
        let target = (share * self.window as f64) as u64;
        // The newest round's results stay whole: the model has not read them yet.
        let newest = history
            .iter()
            .rposition(|m| matches!(m, Message::ToolResults(_)));
        let mut elided = Vec::new();
        for i in 0..history.len() {
            if self.estimate(history) <= target {
                break;
            }
            if Some(i) == newest {
                break;
            }
            if let Message::ToolResults(results) = &mut history[i] {
                for r in results.iter_mut() {
                    if r.elide() {
                        elided.push(r.tool_use_id.clone());
                    }
                }
            }
        }
        elided
    }
}

/// The bytes a conversation takes in a request, roughly.
fn bytes(history: &[Message], rule: TokenRule) -> u64 {
    history
        .iter()
        .map(|m| match m {
            Message::User(text) => text.len() as u64 + FRAMING,
            // Counted as the tokens a provider bills them as, four bytes each.
            Message::Attached { attachments, text } => {
                let media: u64 = attachments.iter().map(|a| a.tokens(rule) * 4).sum();
                text.len() as u64 + FRAMING + media
            }
            Message::Assistant { blocks, .. } => blocks
                .iter()
                .map(|b| {
                    FRAMING
                        + match b {
                            Block::Text { text, .. } | Block::Thinking { text, .. } => text.len(),
                            Block::RedactedThinking { data } => data.len(),
                            Block::Reasoning {
                                id,
                                encrypted_content,
                                summary,
                            } => {
                                id.len()
                                    + encrypted_content.as_ref().map_or(0, String::len)
                                    + summary.iter().map(String::len).sum::<usize>()
                            }
                            Block::ToolUse(call) => call.name.len() + call.arguments_text().len(),
                        } as u64
                })
                .sum(),
            Message::ToolResults(results) => results
                .iter()
                .map(|r| {
                    let media: u64 = r.media.iter().map(|m| m.tokens(rule) * 4).sum();
                    FRAMING + r.tool_use_id.len() as u64 + r.content.len() as u64 + media
                })
                .sum(),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{ToolResult, ToolUse};

    fn round(id: &str, bytes: usize) -> [Message; 2] {
        let call = ToolUse::from_raw(id.into(), "read_file".into(), "{}");
        let mut result = ToolResult::error(&call, crate::conversation::ErrorKind::Failed, "");
        result.is_error = false;
        result.error_kind = None;
        result.content = "x".repeat(bytes);
        result.bytes = bytes as u64;
        [
            Message::Assistant {
                blocks: vec![Block::ToolUse(call)],
                provider: "anthropic".into(),
            },
            Message::ToolResults(vec![result]),
        ]
    }

    fn history(rounds: usize, bytes: usize) -> Vec<Message> {
        let mut h = vec![Message::User("the prompt".into())];
        for i in 0..rounds {
            h.extend(round(&format!("t{i}"), bytes));
        }
        h
    }

    #[test]
    fn nothing_is_elided_below_the_high_mark() {
        let context = Context::new(20_000, 2_000, TokenRule::default());
        let mut h = history(5, 8_000);
        assert!(context.estimate(&h) < 17_000);
        assert!(context.fit(&mut h).is_empty());
    }

    #[test]
    fn the_oldest_results_go_in_one_chunk_down_to_the_low_mark_and_the_newest_stays() {
        let context = Context::new(20_000, 2_000, TokenRule::default());
        let mut h = history(9, 8_000);
        assert!(context.estimate(&h) as f64 > 0.85 * 20_000.0);
        let elided = context.fit(&mut h);
        assert_eq!(elided[0], "t0", "oldest first");
        assert!(context.estimate(&h) as f64 <= 0.6 * 20_000.0);
        let Message::ToolResults(last) = h.last().unwrap() else {
            panic!()
        };
        assert_eq!(last[0].content.len(), 8_000, "the newest round stays whole");
        // The stubs say what was there; eliding again changes nothing (the prefix stays).
        let Message::ToolResults(first) = &h[2] else {
            panic!()
        };
        assert!(
            first[0].content.contains("8000 bytes"),
            "{}",
            first[0].content
        );
        let before = h.clone();
        assert!(context.elide_to(&mut h, 0.6).is_empty());
        assert_eq!(h, before);
        // Next round, still under the high mark: no new elision, the same prefix.
        h.extend(round("t9", 8_000));
        assert!(context.fit(&mut h).is_empty());
    }

    #[test]
    fn the_user_turns_are_never_elided_and_calibration_follows_the_provider() {
        let mut context = Context::new(1_000, 0, TokenRule::default());
        let mut h = vec![Message::User("p".repeat(8_000))];
        h.extend(round("t0", 100));
        context.fit(&mut h);
        assert!(matches!(&h[0], Message::User(p) if p.len() == 8_000));
        let before = context.estimate(&h);
        context.calibrate(&h, before * 2);
        assert!(context.estimate(&h) > before * 3 / 2);
    }
}
