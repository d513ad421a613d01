//! An answer from a small model that wrote its edit as text (see `tools::text_edits`): the
//! edits it stands for become the round's calls, so they run as the model's own would, and the
//! loop goes on with their results instead of ending on an answer that changed nothing.

use super::round::Streamed;
use super::scheduler::Scheduler;
use super::{Agent, final_text};
use crate::conversation::{Block, Message, StopReason};
use crate::tools::text_edits;

impl Agent {
    /// Reads the edits out of a response that called no tool (and was not cut off), and starts
    /// them as the response's calls (ids `edit_from_text_ROUND_N`). Only for a provider whose
    /// model writes them (`Provider::reads_text_edits`).
    pub(super) fn edits_from_text(
        &self,
        number: u32,
        history: &[Message],
        scheduler: &mut Scheduler,
        out: &mut Streamed,
    ) {
        let called = out.blocks.iter().any(|b| matches!(b, Block::ToolUse(_)));
        if called || !self.provider.reads_text_edits() || out.stop == Some(StopReason::MaxTokens) {
            return;
        }
        let text = final_text(&out.blocks);
        let asked: Vec<&str> = history
            .iter()
            .filter_map(|m| match m {
                Message::User(text) | Message::Attached { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let edits = self.toolbox.edits_in_text(&text, &asked);
        for (n, input) in edits.into_iter().enumerate() {
            let id = format!("{}{number}_{}", text_edits::ID_PREFIX, n + 1);
            let mut block = Block::ToolUse(text_edits::call(id, input));
            self.settle(&mut block, out);
            if let Block::ToolUse(call) = &block {
                self.start(call, false, scheduler, out);
            }
            out.blocks.push(block);
            out.stop = Some(StopReason::ToolUse);
        }
    }
}
