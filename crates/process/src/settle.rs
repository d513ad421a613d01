//! Waiting for supervisors rounds abandoned: a call whose future is dropped (cancelled, the
//! run's deadline, a signal) leaves its supervisor ending the tool's tree on its own, for up to
//! its grace period. Without a wait, that supervisor outlives rounds by a fraction of a second,
//! and a CI step that checks for leftover processes right after rounds finds it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use super::{reap_orphans, supervisor};

/// A supervisor whose caller may go away before it is reaped. Dropped while it still holds the
/// pid, it asks the supervisor to end its tree (the lifeline closes too, but a stopped
/// supervisor would not see it) and records it as abandoned, for [`settle`].
pub(super) struct Abandon(pub(super) Option<Pid>);

impl Drop for Abandon {
    fn drop(&mut self) {
        let Some(pid) = self.0.take() else { return };
        let _ = kill_process(pid, Signal::TERM);
        let _ = kill_process(pid, Signal::CONT);
        abandoned().push(pid.as_raw_nonzero().get());
    }
}

/// Supervisors whose callers dropped them, ending their trees on their own.
static ABANDONED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn abandoned() -> std::sync::MutexGuard<'static, Vec<i32>> {
    ABANDONED.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long [`settle`] waits for abandoned supervisors: their grace for the tree, and a margin.
const SETTLE_PATIENCE: Duration =
    Duration::from_millis(supervisor::GRACE.as_millis() as u64 + 1500);

/// Waits, up to `SETTLE_PATIENCE`, until every abandoned supervisor has exited, and reaps it;
/// one still there after that is killed (its tree, re-parented to rounds, is `reap_orphans`'
/// business). Without this a supervisor still ending its tree outlives rounds by a fraction of
/// a second, and a CI step that checks for leftover processes right after finds it. Returns how
/// many it killed. Blocks: call it through [`settle_and_reap`].
fn settle() -> usize {
    let deadline = Instant::now() + SETTLE_PATIENCE;
    let mut waiting = std::mem::take(&mut *abandoned());
    loop {
        // Reap by pid: tokio's own reaper may have been first (then the pid is no child: ECHILD).
        waiting.retain(|&pid| {
            Pid::from_raw(pid).is_some_and(|p| {
                matches!(
                    rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG),
                    Ok(None)
                )
            })
        });
        if waiting.is_empty() {
            return 0;
        }
        if Instant::now() > deadline {
            for &pid in &waiting {
                if let Some(p) = Pid::from_raw(pid) {
                    let _ = kill_process(p, Signal::KILL);
                    let _ =
                        rustix::process::waitpid(Some(p), rustix::process::WaitOptions::empty());
                }
            }
            return waiting.len();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a run does before it ends: waits for the supervisors its cancelled calls left ending
/// their trees ([`settle`]), then reaps whatever else a tool left behind ([`reap_orphans`]).
/// Off the runtime's thread, so a second Ctrl-C is still heard while it waits.
pub async fn settle_and_reap() {
    let _ = tokio::task::spawn_blocking(|| {
        settle();
        reap_orphans()
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::zombie_processes)]
    fn an_abandoned_child_is_asked_to_end_and_waited_for() {
        // Reaped by `settle`, as rounds reaps its supervisors, not by `wait`.
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        drop(Abandon(Pid::from_raw(pid)));
        let started = Instant::now();
        assert_eq!(settle(), 0, "it ended on the TERM, not killed");
        assert!(started.elapsed() < SETTLE_PATIENCE);
        // Reaped: no zombie of it is left.
        assert!(std::fs::metadata(format!("/proc/{pid}")).is_err());
    }
}
