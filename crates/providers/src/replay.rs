//! The replay provider (`-m replay:FILE.jsonl`): plays back the model side of a recorded
//! transcript, round by round, while tools run for real. A recorded run becomes a hermetic
//! regression test, and a new user can watch a whole run with no API key.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use super::{EventStream, Provider, ProviderError, Request, StreamEvent};
use crate::conversation::{Block, StopReason};
use crate::transcript::{AgentLine, AgentRef, Round, Transcript};

pub(crate) struct Replay {
    model: String,
    rounds: Vec<Round>,
    next: AtomicUsize,
    /// Each subagent's recorded rounds and model, by the way down to it (`AgentRef::call`).
    agents: Arc<HashMap<String, (String, Vec<Round>)>>,
}

impl Replay {
    pub(crate) fn new(transcript: &Transcript) -> Replay {
        let mut agents: HashMap<String, (String, Vec<Round>)> = HashMap::new();
        for (_, line) in &transcript.agents {
            let entry = agents.entry(line.at().call.clone()).or_default();
            match line {
                AgentLine::Start(start) => entry.0 = start.model.clone(),
                AgentLine::Round(round) => entry.1.push(round.round.clone()),
                AgentLine::End(_) => {}
            }
        }
        Replay {
            model: transcript.start.model.clone(),
            rounds: transcript.rounds.clone(),
            next: AtomicUsize::new(0),
            agents: Arc::new(agents),
        }
    }
}

#[async_trait]
impl Provider for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn for_subagent(&self, at: &AgentRef) -> Option<Arc<dyn Provider>> {
        let (model, rounds) = self.agents.get(&at.call).cloned().unwrap_or_default();
        Some(Arc::new(Replay {
            model,
            rounds,
            next: AtomicUsize::new(0),
            agents: self.agents.clone(),
        }))
    }

    async fn stream(&self, _request: &Request<'_>) -> Result<EventStream, ProviderError> {
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(round) = self.rounds.get(i) else {
            return Err(ProviderError::Replay(format!(
                "the recording has {} rounds; round {} was requested (the replayed run went \
                 further than the recorded one)",
                self.rounds.len(),
                i + 1
            )));
        };
        let mut events = Vec::new();
        for block in &round.blocks {
            match block {
                Block::Text { text, .. } => events.push(StreamEvent::TextDelta(text.clone())),
                Block::Thinking { text, .. } => {
                    events.push(StreamEvent::ThinkingDelta(text.clone()))
                }
                _ => {}
            }
            events.push(StreamEvent::Block(block.clone()));
        }
        events.push(StreamEvent::Usage(round.usage));
        events.push(StreamEvent::Done(
            round.stop_reason.unwrap_or(StopReason::EndTurn),
        ));
        Ok(Box::pin(futures_util::stream::iter(
            events.into_iter().map(Ok),
        )))
    }
}
