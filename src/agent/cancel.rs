//! Stopping a run early, with the reason recorded when it happens: the deadline and the
//! signal watcher say why they cancel, and the loop ends with that status itself.

use std::sync::{Arc, Mutex};
use tokio_util::task::AbortOnDropHandle;

use tokio_util::sync::CancellationToken;

use crate::outcome::Status;

/// A cancellation that carries its reason. Clones share it.
#[derive(Clone, Default)]
pub(crate) struct Cancel {
    token: CancellationToken,
    reason: Arc<Mutex<Option<(Status, String)>>>,
}

impl Cancel {
    /// Cancels the run, ending it with `status` and `message`. The first reason stands, except
    /// that a signal replaces a deadline: the user's word is the last. Returns the status of an
    /// earlier cancellation, if there was one.
    pub(crate) fn cancel(&self, status: Status, message: impl Into<String>) -> Option<Status> {
        let Ok(mut reason) = self.reason.lock() else {
            self.token.cancel();
            return None;
        };
        let earlier = reason.as_ref().map(|(s, _)| *s);
        let replace = match earlier {
            None => true,
            Some(Status::Interrupted(_)) => false,
            Some(_) => matches!(status, Status::Interrupted(_)),
        };
        if replace {
            *reason = Some((status, message.into()));
        }
        self.token.cancel();
        earlier
    }

    /// A cancellation inside this one, for a subagent: it stops when `token` does (a child of
    /// this one's token: the `task` call's), and says why with this one's reason. What cancels
    /// it with a reason (the run's budget) cancels this one too: a budget is the run's.
    pub(crate) fn within(&self, token: CancellationToken) -> Cancel {
        Cancel {
            token,
            reason: self.reason.clone(),
        }
    }

    /// The token tasks select on; cancelling it directly records no reason.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Why the run was cancelled, once it was.
    pub(crate) fn reason(&self) -> Option<(Status, String)> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }
}

/// Cancels the run with `Timeout` after `after`; dropping the guard stops the timer.
pub(crate) fn deadline(after: std::time::Duration, cancel: Cancel) -> AbortOnDropHandle<()> {
    AbortOnDropHandle::new(tokio::spawn(async move {
        tokio::time::sleep(after).await;
        let secs = after.as_secs_f64();
        cancel.cancel(
            Status::Timeout,
            format!("the run's deadline of {secs}s passed"),
        );
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Signal;

    #[test]
    fn the_first_reason_stands_but_a_signal_replaces_a_deadline() {
        let cancel = Cancel::default();
        assert_eq!(cancel.cancel(Status::Timeout, "deadline"), None);
        assert!(cancel.token().is_cancelled());
        let sigint = Status::Interrupted(Signal::Interrupt);
        assert_eq!(cancel.cancel(sigint, "by SIGINT"), Some(Status::Timeout));
        assert_eq!(cancel.reason(), Some((sigint, "by SIGINT".to_owned())));
        let sigterm = Status::Interrupted(Signal::Terminate);
        assert_eq!(cancel.cancel(sigterm, "by SIGTERM"), Some(sigint));
        assert_eq!(cancel.cancel(Status::Timeout, "late"), Some(sigint));
        assert_eq!(cancel.reason().map(|r| r.0), Some(sigint));
    }
}
