//! `--check`: after an answer without tool calls, the user's command decides whether the run is
//! done. A failure goes back to the model as the next user turn, up to `--max-checks` times; the
//! same failing output twice with no tool call in between ends the run at once, since the model
//! is not getting on, and more attempts would only spend the budget.

use super::{Agent, Cancel, Stop};
use crate::conversation::{Message, StopReason};
use crate::outcome::CheckRun;
use crate::outcome::{Outcome, Status};
use crate::transcript::Round;

/// The check of one run and what it has seen so far.
pub(super) struct Checks {
    command: Option<String>,
    max: u32,
    attempts: u32,
    /// The output of the last failed check, until a tool call may have changed things.
    last_failed: Option<String>,
    /// The check passed and no tool has run since: an answer given again (after a schema's
    /// corrective turn) needs no new run.
    passed: bool,
}

/// What a check's run means for the loop.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// No check to run, or it passed.
    Done,
    /// It failed and may run again: the model is told.
    Again(String),
    /// It failed for the last time: the run ends as `check_failed`, saying why.
    Failed(String),
}

impl Checks {
    pub(super) fn new(command: Option<String>, max: u32) -> Checks {
        Checks {
            command,
            max,
            attempts: 0,
            last_failed: None,
            passed: false,
        }
    }

    /// The command to run for an answer, with its attempt number, when one must run.
    pub(super) fn next(&mut self) -> Option<(&str, u32)> {
        if self.passed {
            return None;
        }
        let command = self.command.as_deref()?;
        self.attempts += 1;
        Some((command, self.attempts))
    }

    /// A round called tools: the workspace may have changed since the last check.
    pub(super) fn tools_ran(&mut self) {
        self.passed = false;
        self.last_failed = None;
    }

    /// What `check` (this run's latest) means: done, one more try, or the end.
    pub(super) fn verdict(&mut self, check: Option<&CheckRun>) -> Verdict {
        let Some(check) = check else {
            return Verdict::Done;
        };
        if check.passed {
            self.passed = true;
            return Verdict::Done;
        }
        let how = match check.exit_code {
            Some(code) => format!("exit code {code}"),
            None => "it did not finish".to_owned(),
        };
        // A test runner's timing ("Ran 1 test in 0.001s") is no difference either.
        let output = super::guards::timeless(&unnumbered(&check.output)).into_owned();
        if self.last_failed.as_deref() == Some(output.as_str()) {
            return Verdict::Failed(format!(
                "the check failed ({how}) with the same output as the time before, and the \
                 model called no tool in between: it is not making progress (attempt {} of {})",
                check.attempt, self.max
            ));
        }
        if check.attempt >= self.max {
            return Verdict::Failed(format!(
                "the check still failed ({how}) after {} attempt{} (--max-checks)",
                check.attempt,
                if check.attempt == 1 { "" } else { "s" }
            ));
        }
        self.last_failed = Some(output);
        Verdict::Again(check.turn())
    }
}

/// A check's output as the stuck guard compares it: the files a cut output names are the
/// round's own (`check-3.stdout`), so `check-` and a number read the same in every round.
fn unnumbered(output: &str) -> String {
    const STEM: &str = "check-";
    let mut out = String::with_capacity(output.len());
    let mut rest = output;
    while let Some(at) = rest.find(STEM) {
        let after = &rest[at + STEM.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&rest[..at + STEM.len()]);
        if digits > 0 {
            out.push('#');
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

impl Agent {
    /// Runs `--check` after a round that answered without calling tools and may end the run
    /// (it hit no guard and is not the summary at the round limit), into the round's record.
    /// A round that called tools makes the last check stale. Returns what the check says, and
    /// `stop` — a cancellation (the deadline, a signal) during the check, which ended it.
    pub(super) async fn judge(
        &self,
        round: &mut Round,
        checks: &mut Checks,
        stop: Option<Stop>,
        may_end: bool,
        cancel: &Cancel,
    ) -> (Verdict, Option<Stop>) {
        if !round.results.is_empty() {
            checks.tools_ran();
        }
        let answer = round.results.is_empty() && round.stop_reason != Some(StopReason::PauseTurn);
        if !(answer && may_end && stop.is_none()) {
            return (Verdict::Done, stop);
        }
        let Some((command, attempt)) = checks.next().map(|(c, a)| (c.to_owned(), a)) else {
            return (Verdict::Done, stop);
        };
        let id = format!("check-{}", round.round);
        let token = cancel.token().child_token();
        let run = self.toolbox.check(&command, attempt, id, token).await;
        self.observer.check_finished(round.round, &run);
        if cancel.token().is_cancelled() {
            round.check = Some(run);
            return (Verdict::Done, Some(Stop::Cancelled));
        }
        let verdict = match checks.verdict(Some(&run)) {
            Verdict::Again(turn) if has_code(&round.blocks) => {
                Verdict::Again(format!("{turn}\n\n{}", self.code_note()))
            }
            verdict => verdict,
        };
        if let Verdict::Again(_) = verdict {
            tracing::warn!(
                "the check failed (attempt {attempt} of {}); the model is told and goes on",
                self.limits.max_checks
            );
        }
        round.check = Some(run);
        (verdict, stop)
    }

    /// What a failed check's turn adds after an answer that showed code: it changed no file.
    fn code_note(&self) -> String {
        let writers: Vec<&str> = ["edit_file", "write_file"]
            .into_iter()
            .filter(|t| self.toolbox.policy().offers(t))
            .collect();
        let how = if writers.is_empty() {
            "with a tool".to_owned()
        } else {
            format!("with {}", writers.join(" or "))
        };
        format!(
            "Your last answer had code in it, but no file changed: code written in an answer \
             is not applied to any file. Make the change in the file {how}, then answer again."
        )
    }

    /// The model answered without calling tools: whether the answer stands (the check passed,
    /// and it is valid against `--output-schema`, if any), the model is told what is wrong (a
    /// failed check, an invalid answer's one corrective turn), or the run ends. The check comes
    /// first: an answer in the right shape about work that is not done is not done.
    pub(super) fn answered(
        &self,
        done: &mut Outcome,
        history: &mut Vec<Message>,
        corrected: &mut bool,
        verdict: Verdict,
    ) -> Answer {
        match verdict {
            Verdict::Done => {}
            Verdict::Again(turn) => {
                history.push(Message::User(turn));
                return Answer::Corrected;
            }
            Verdict::Failed(why) => return Answer::Ended(Status::CheckFailed, why),
        }
        let Some(schema) = &self.output_schema else {
            return Answer::Accepted;
        };
        match schema.check(&done.final_text) {
            Ok(value) => {
                done.final_json = Some(value);
                Answer::Accepted
            }
            Err(errors) if *corrected => Answer::Ended(Status::Schema, errors.to_string()),
            Err(errors) => {
                // One corrective turn, quoting what was wrong.
                *corrected = true;
                history.push(Message::User(schema.corrective(&errors)));
                Answer::Corrected
            }
        }
    }
}

/// Whether an answer shows a fenced block of code.
fn has_code(blocks: &[crate::conversation::Block]) -> bool {
    super::final_text(blocks)
        .lines()
        .any(|l| l.trim_start().starts_with("```"))
}

/// What becomes of an answer given without tool calls.
pub(super) enum Answer {
    Accepted,
    /// The run ends: still not valid against the schema after the corrective turn, or the
    /// check failed for the last time; why.
    Ended(Status, String),
    /// Told what was wrong; the loop goes on.
    Corrected,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(attempt: u32, exit_code: i32, output: &str) -> CheckRun {
        CheckRun {
            command: "make test".into(),
            attempt,
            passed: exit_code == 0,
            exit_code: Some(exit_code),
            duration_ms: 1,
            output: output.into(),
            truncated: false,
            bytes: output.len() as u64,
            full_output: None,
            redacted: vec![],
        }
    }

    #[test]
    fn a_failure_is_told_until_the_last_attempt_and_a_pass_is_done() {
        let mut checks = Checks::new(Some("make test".into()), 3);
        assert_eq!(checks.next(), Some(("make test", 1)));
        let told = checks.verdict(Some(&run(1, 1, "one failure")));
        assert!(
            matches!(&told, Verdict::Again(t) if t.contains("one failure")),
            "{told:?}"
        );
        checks.tools_ran();
        assert_eq!(checks.next(), Some(("make test", 2)));
        assert_eq!(checks.verdict(Some(&run(2, 0, "ok"))), Verdict::Done);
        // Passed, and no tool ran since: an answer given again is not checked again.
        assert_eq!(checks.next(), None);
        checks.tools_ran();
        assert_eq!(checks.next(), Some(("make test", 3)));
        let end = checks.verdict(Some(&run(3, 2, "broken again")));
        assert!(
            matches!(&end, Verdict::Failed(w) if w.contains("after 3 attempts")),
            "{end:?}"
        );
    }

    #[test]
    fn the_same_failure_twice_without_a_tool_call_ends_it_and_a_tool_call_resets_that() {
        let mut checks = Checks::new(Some("t".into()), 10);
        checks.next();
        assert!(matches!(
            checks.verdict(Some(&run(1, 1, "x"))),
            Verdict::Again(_)
        ));
        checks.tools_ran();
        checks.next();
        // A tool ran in between: the same output is one more try, not a sign of being stuck.
        assert!(matches!(
            checks.verdict(Some(&run(2, 1, "x"))),
            Verdict::Again(_)
        ));
        checks.next();
        let end = checks.verdict(Some(&run(3, 1, "x")));
        assert!(matches!(&end, Verdict::Failed(w) if w.contains("not making progress")));
        // A runner's timing is no difference.
        let mut checks = Checks::new(Some("t".into()), 10);
        checks.next();
        let first = checks.verdict(Some(&run(1, 1, "FAILED\nRan 1 test in 0.001s")));
        assert!(matches!(first, Verdict::Again(_)));
        checks.next();
        let end = checks.verdict(Some(&run(2, 1, "FAILED\nRan 1 test in 0.004s")));
        assert!(matches!(&end, Verdict::Failed(w) if w.contains("not making progress")));
        // A cut output names its round's own spill file: that alone is no difference.
        let mut checks = Checks::new(Some("t".into()), 10);
        let cut =
            |n: u32| format!("[... 9 bytes cut; the whole output is in /o/check-{n}.stdout ...]");
        checks.next();
        assert!(matches!(
            checks.verdict(Some(&run(1, 1, &cut(1)))),
            Verdict::Again(_)
        ));
        checks.next();
        let end = checks.verdict(Some(&run(2, 1, &cut(2))));
        assert!(matches!(&end, Verdict::Failed(w) if w.contains("not making progress")));
        assert_eq!(
            unnumbered("check-12 check- check-x9"),
            "check-# check- check-x9"
        );
        // Without a check there is nothing to run and nothing to decide.
        let mut none = Checks::new(None, 3);
        assert_eq!(none.next(), None);
        assert_eq!(none.verdict(None), Verdict::Done);
    }
}
