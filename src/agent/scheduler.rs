//! Runs a round's tool calls as they arrive from the stream.
//!
//! Calls are submitted in the order the model emitted them, usually while it is still streaming.
//! A single dispatcher task takes them in that order and acquires permits from a fair (FIFO)
//! semaphore of `max_parallel` permits: a safe call takes one, a mutating call takes all of them.
//! Fairness gives the whole rule: consecutive safe calls run together (bounded), a mutating call
//! waits until every earlier call has released its permit, and every later call queues behind
//! it. Each call answers on its own oneshot, and `finish` awaits them in submission order, so
//! results go back in the model's order whatever order they finish in.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::Observer;
use crate::conversation::{ErrorKind, ToolResult, ToolUse};
use crate::tools::Class;
use crate::tools::pipeline::Toolbox;

struct Job {
    call: ToolUse,
    class: Class,
    reply: oneshot::Sender<ToolResult>,
}

/// Where the round's tool time went: from the first call's start to the last call's end.
type Span = Arc<Mutex<Option<(Instant, Instant)>>>;

/// The tool calls of one round.
pub(crate) struct Scheduler {
    toolbox: Arc<Toolbox>,
    jobs: Option<mpsc::UnboundedSender<Job>>,
    pending: Vec<(ToolUse, oneshot::Receiver<ToolResult>)>,
    dispatcher: tokio::task::JoinHandle<()>,
    cancel: CancellationToken,
    span: Span,
}

impl Scheduler {
    pub(crate) fn new(
        toolbox: Arc<Toolbox>,
        max_parallel: usize,
        cancel: CancellationToken,
        observer: Arc<dyn Observer>,
    ) -> Scheduler {
        let (tx, rx) = mpsc::unbounded_channel();
        let span = Arc::new(Mutex::new(None));
        let dispatcher = tokio::spawn(dispatch(
            rx,
            toolbox.clone(),
            max_parallel.max(1),
            cancel.clone(),
            observer,
            span.clone(),
        ));
        Scheduler {
            toolbox,
            jobs: Some(tx),
            pending: Vec::new(),
            dispatcher,
            cancel,
            span,
        }
    }

    /// Queues a call; it starts as soon as the scheduling rules allow. Never blocks.
    pub(crate) fn submit(&mut self, call: ToolUse) {
        let class = self.toolbox.class_of(&call);
        let (reply, rx) = oneshot::channel();
        self.pending.push((call.clone(), rx));
        if let Some(jobs) = &self.jobs {
            // The dispatcher only stops after `finish` drops the sender, so this cannot fail; if
            // it ever did, the dropped reply turns into an error result below.
            let _ = jobs.send(Job { call, class, reply });
        }
    }

    /// Records a call that must not run, with an error result, in its place in the order.
    pub(crate) fn refuse(&mut self, call: ToolUse, why: &str) {
        let result = ToolResult::error(&call, ErrorKind::Denied, why);
        self.answer(call, result);
    }

    /// Records a call that is not run, with the result it gets instead, in its place in the order.
    pub(crate) fn answer(&mut self, call: ToolUse, result: ToolResult) {
        let (reply, rx) = oneshot::channel();
        let _ = reply.send(result);
        self.pending.push((call, rx));
    }

    /// Whether any call was submitted (and may have started).
    pub(crate) fn has_calls(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Stops every call that has not finished (their results say they were cancelled).
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits for every submitted call and returns the results in submission order, with the
    /// wall time from the first call's start to the last call's end.
    pub(crate) async fn finish(mut self) -> (Vec<ToolResult>, Duration) {
        self.jobs = None;
        let mut results = Vec::with_capacity(self.pending.len());
        for (call, rx) in self.pending.drain(..) {
            let result = rx.await.unwrap_or_else(|_| {
                ToolResult::error(
                    &call,
                    ErrorKind::Failed,
                    "internal error: the tool task ended without a result",
                )
            });
            results.push(result);
        }
        let _ = (&mut self.dispatcher).await;
        let span = self.span.lock().map(|s| *s).unwrap_or(None);
        let wall = span
            .map(|(a, b)| b.saturating_duration_since(a))
            .unwrap_or_default();
        (results, wall)
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        // Abandoned mid-round (the run failed or was interrupted): no call may outlive it.
        self.cancel.cancel();
    }
}

async fn dispatch(
    mut jobs: mpsc::UnboundedReceiver<Job>,
    toolbox: Arc<Toolbox>,
    max_parallel: usize,
    cancel: CancellationToken,
    observer: Arc<dyn Observer>,
    span: Span,
) {
    let permits = Arc::new(Semaphore::new(max_parallel));
    let mut running = JoinSet::new();
    while let Some(job) = jobs.recv().await {
        let n = match job.class {
            Class::Safe => 1,
            Class::Mutating => max_parallel as u32,
        };
        let permit = tokio::select! {
            p = permits.clone().acquire_many_owned(n) => p.ok(),
            () = cancel.cancelled() => None,
        };
        let Some(permit) = permit else {
            let _ = job.reply.send(ToolResult::error(
                &job.call,
                ErrorKind::Cancelled,
                "the call was cancelled before it started",
            ));
            continue;
        };
        let toolbox = toolbox.clone();
        let cancel = cancel.child_token();
        let observer = observer.clone();
        let span = span.clone();
        running.spawn(async move {
            let start = Instant::now();
            if let Ok(mut s) = span.lock() {
                s.get_or_insert((start, start));
            }
            observer.tool_started(
                &job.call,
                toolbox.subject(&job.call).as_ref().map(|s| s.as_str()),
            );
            let result = toolbox.execute(&job.call, cancel).await;
            drop(permit);
            if let Ok(mut s) = span.lock()
                && let Some((_, end)) = s.as_mut()
            {
                *end = (*end).max(Instant::now());
            }
            observer.tool_finished(&result);
            let _ = job.reply.send(result);
        });
    }
    while running.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests;
