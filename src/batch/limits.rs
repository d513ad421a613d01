//! What the jobs of a batch share per provider endpoint: one HTTP client (one connection pool),
//! the `--rpm`/`--tpm` buckets, and the backoff after a 429. Plus the whole batch's budget.
//!
//! Each job's provider is wrapped in [`Limited`], which waits at the endpoint's [`Gate`] before
//! every request. When any job gets a 429, the gate closes for the `retry-after` it named (or a
//! backoff that doubles with each pause in a row that named none): every job's next request
//! waits at the gate instead of earning a 429 of its own. One backoff, not N.
//!
//! A 429 the shared pause handles is the endpoint's, not the job's: the job waits at the gate
//! and asks again, and none of its `--max-retries` is spent (they are for its own failures). So
//! that an endpoint that never recovers cannot hold a batch forever, a storm (429s with no
//! success between them) is waited out for at most [`STORM_LIMIT`]; after that each 429 counts
//! as the job's own again. A job's `--timeout` ends it, waiting or not. And while an endpoint is
//! paused, no new job should start for it ([`Pool::paused_until`], [`Pool::wait_open`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::StreamExt;

use crate::agent::Cancel;
use crate::app::ProviderSource;
use crate::conversation::Usage;
use crate::outcome::Status;
use crate::provider::retry::{MAX_BACKOFF, MAX_HONOURED_WAIT};

/// How long every job holds off after a 429 that names no wait: the default first backoff
/// (`--retry-delay`). Without it, each job would find the limit for itself. It doubles with
/// each pause in a row, up to `MAX_BACKOFF`.
const UNSAID_WAIT: Duration = Duration::from_secs(1);

/// The longest a storm of 429s is waited out at the gate, free of the jobs' retries. Rate
/// limits that recover do so in seconds to a minute or two; an endpoint still refusing
/// everything after five minutes is down or out of quota, and its jobs should say so.
pub(crate) const STORM_LIMIT: Duration = Duration::from_secs(300);
use crate::provider::{
    self, BuildError, EventStream, Provider, ProviderChoice, ProviderError, Request, StreamEvent,
};

/// A token bucket holding at most `capacity`, refilled at `per_sec`. Spending what a response
/// reported may take it below zero; requests then wait until it is back.
#[derive(Debug, Clone)]
struct Bucket {
    capacity: f64,
    per_sec: f64,
    level: f64,
    at: Instant,
}

impl Bucket {
    /// A limit of `per_minute`, spread evenly: bursts of at most a tenth of a minute's worth.
    fn per_minute(per_minute: f64, now: Instant) -> Bucket {
        let capacity = (per_minute / 10.0).max(1.0);
        Bucket {
            capacity,
            per_sec: per_minute / 60.0,
            level: capacity,
            at: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + elapsed * self.per_sec).min(self.capacity);
        self.at = now;
    }

    /// How long until `need` (at most the capacity) is there.
    fn wait(&mut self, now: Instant, need: f64) -> Duration {
        self.refill(now);
        let need = need.min(self.capacity);
        if self.level >= need {
            return Duration::ZERO;
        }
        Duration::from_secs_f64((need - self.level) / self.per_sec)
    }

    fn take(&mut self, amount: f64) {
        self.level -= amount;
    }
}

#[derive(Debug, Default)]
struct GateState {
    pause_until: Option<Instant>,
    /// When the current storm began: the first 429 since the endpoint last answered.
    storm: Option<Instant>,
    /// Pauses in a row that named no wait (each doubles the next).
    unsaid: u32,
    requests: Option<Bucket>,
    tokens: Option<Bucket>,
}

/// The requests of every job to one endpoint pass here.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    /// 429s that closed the gate (a 429 that arrives while it is closed only extends the wait).
    backoffs: AtomicU32,
}

impl Gate {
    pub(crate) fn new(rpm: Option<u32>, tpm: Option<u64>) -> Gate {
        let now = Instant::now();
        Gate {
            state: Mutex::new(GateState {
                pause_until: None,
                storm: None,
                unsaid: 0,
                requests: rpm.map(|n| Bucket::per_minute(f64::from(n), now)),
                tokens: tpm.map(|n| Bucket::per_minute(n as f64, now)),
            }),
            backoffs: AtomicU32::new(0),
        }
    }

    /// How long a request of about `tokens` must wait; zero means it may go, and it has been
    /// counted.
    fn try_admit(&self, now: Instant, tokens: u64) -> Duration {
        let Ok(mut s) = self.state.lock() else {
            return Duration::ZERO;
        };
        let mut wait = s
            .pause_until
            .map_or(Duration::ZERO, |until| until.saturating_duration_since(now));
        if let Some(b) = s.requests.as_mut() {
            wait = wait.max(b.wait(now, 1.0));
        }
        if let Some(b) = s.tokens.as_mut() {
            wait = wait.max(b.wait(now, tokens as f64));
        }
        if wait.is_zero() {
            if let Some(b) = s.requests.as_mut() {
                b.take(1.0);
            }
            if let Some(b) = s.tokens.as_mut() {
                b.take(tokens as f64);
            }
        }
        wait
    }

    /// Waits until a request of about `tokens` may go.
    pub(crate) async fn admit(&self, tokens: u64) {
        loop {
            let wait = self.try_admit(Instant::now(), tokens);
            if wait.is_zero() {
                return;
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// A response used `used` tokens of the `reserved` its request was admitted with.
    pub(crate) fn settle(&self, reserved: u64, used: u64) {
        if let Ok(mut s) = self.state.lock()
            && let Some(b) = s.tokens.as_mut()
        {
            b.take(used as f64 - reserved as f64);
        }
    }

    /// A 429 at `now`: closes the gate for `retry_after` (or the backoff when it names none);
    /// one that arrives while the gate is closed only extends the pause. Returns whether the
    /// job waits it out at the gate (free of its retries): yes, unless the storm has lasted
    /// longer than `STORM_LIMIT`.
    fn pause(&self, now: Instant, retry_after: Option<Duration>) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        let storm = *s.storm.get_or_insert(now);
        match s.pause_until.filter(|open| *open > now) {
            Some(open) => {
                let until = now + retry_after.unwrap_or(UNSAID_WAIT);
                s.pause_until = Some(open.max(until));
            }
            None => {
                let wait = retry_after.unwrap_or_else(|| {
                    s.unsaid += 1;
                    UNSAID_WAIT
                        .saturating_mul(1 << (s.unsaid - 1).min(16))
                        .min(MAX_BACKOFF)
                });
                s.pause_until = Some(now + wait);
                self.backoffs.fetch_add(1, Ordering::Relaxed);
            }
        }
        now.saturating_duration_since(storm) < STORM_LIMIT
    }

    /// The endpoint answered: the storm, if there was one, is over.
    fn answered(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.storm = None;
            s.unsaid = 0;
        }
    }

    /// Until when the gate is closed after a 429, if it is at `now`.
    fn paused_until(&self, now: Instant) -> Option<Instant> {
        let s = self.state.lock().ok()?;
        s.pause_until.filter(|until| *until > now)
    }

    pub(crate) fn backoffs(&self) -> u32 {
        self.backoffs.load(Ordering::Relaxed)
    }
}

/// `--budget-tokens` / `--budget-usd` of the whole batch: what its jobs have spent so far.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    tokens: Option<u64>,
    usd: Option<f64>,
    used_tokens: AtomicU64,
    /// Micro-dollars, so one atomic holds it.
    used_micro_usd: AtomicU64,
}

impl Budget {
    pub(crate) fn new(tokens: Option<u64>, usd: Option<f64>) -> Budget {
        Budget {
            tokens,
            usd,
            ..Budget::default()
        }
    }

    pub(crate) fn add(&self, usage: &Usage, cost_usd: Option<f64>) {
        self.used_tokens.fetch_add(usage.total(), Ordering::Relaxed);
        if let Some(c) = cost_usd.filter(|c| c.is_finite() && *c > 0.0) {
            self.used_micro_usd
                .fetch_add((c * 1e6).round() as u64, Ordering::Relaxed);
        }
    }

    /// Why the batch may make no more requests, once its budget is spent.
    pub(crate) fn spent(&self) -> Option<String> {
        let tokens = self.used_tokens.load(Ordering::Relaxed);
        if let Some(budget) = self.tokens.filter(|b| tokens >= *b) {
            return Some(format!(
                "the batch's token budget of {budget} is spent ({tokens} used)"
            ));
        }
        let usd = self.used_micro_usd.load(Ordering::Relaxed) as f64 / 1e6;
        self.usd
            .filter(|b| usd >= *b)
            .map(|budget| format!("the batch's budget of ${budget} is spent (${usd:.4} used)"))
    }
}

/// Per endpoint: one client and one gate, made on first use.
pub(crate) struct Pool {
    rpm: Option<u32>,
    tpm: Option<u64>,
    pub(crate) budget: Arc<Budget>,
    endpoints: Mutex<HashMap<String, Endpoint>>,
}

/// An endpoint's client (none when it could not be built) and gate.
type Endpoint = (Option<reqwest::Client>, Arc<Gate>);

impl Pool {
    pub(crate) fn new(rpm: Option<u32>, tpm: Option<u64>, budget: Budget) -> Pool {
        Pool {
            rpm,
            tpm,
            budget: Arc::new(budget),
            endpoints: Mutex::new(HashMap::new()),
        }
    }

    fn endpoint(&self, key: &str) -> Endpoint {
        let Ok(mut all) = self.endpoints.lock() else {
            return (None, Arc::new(Gate::new(self.rpm, self.tpm)));
        };
        all.entry(key.to_owned())
            .or_insert_with(|| {
                // A client that cannot be built is built (and fails) again by the job, which
                // then reports why.
                let client = provider::http::client().ok();
                (client, Arc::new(Gate::new(self.rpm, self.tpm)))
            })
            .clone()
    }

    /// How many shared backoffs 429s caused, over all endpoints.
    pub(crate) fn backoffs(&self) -> u32 {
        self.endpoints
            .lock()
            .map(|all| all.values().map(|(_, g)| g.backoffs()).sum())
            .unwrap_or(0)
    }

    /// Until when `endpoint` (a base URL; `None`: any endpoint of the batch) is paused after a
    /// 429, if it is now. A job for a paused endpoint should not start (or be claimed) before
    /// then: it would only wait at the gate, holding a slot and its lease.
    pub(crate) fn paused_until(&self, endpoint: Option<&str>) -> Option<Instant> {
        let now = Instant::now();
        let all = self.endpoints.lock().ok()?;
        match endpoint {
            Some(key) => all.get(key).and_then(|(_, g)| g.paused_until(now)),
            None => all.values().filter_map(|(_, g)| g.paused_until(now)).max(),
        }
    }

    /// Returns once `endpoint` (`None`: every endpoint) is not paused. The queue's worker
    /// awaits this before each claim, in a `select!` with its shutdown.
    pub(crate) async fn wait_open(&self, endpoint: Option<&str>) {
        while let Some(until) = self.paused_until(endpoint) {
            tokio::time::sleep_until(until.into()).await;
        }
    }

    /// The provider source of one job, which `cancel` stops when the batch's budget is spent.
    pub(crate) fn for_job(self: &Arc<Self>, cancel: Cancel) -> Arc<dyn ProviderSource> {
        Arc::new(JobProviders {
            pool: self.clone(),
            cancel,
        })
    }
}

struct JobProviders {
    pool: Arc<Pool>,
    cancel: Cancel,
}

impl ProviderSource for JobProviders {
    fn build(
        &self,
        choice: &ProviderChoice,
        model: &str,
        idle: Duration,
    ) -> Result<Arc<dyn Provider>, BuildError> {
        let Some(key) = choice.base_url().map(str::to_owned) else {
            return provider::build(choice, model, idle);
        };
        let (client, gate) = self.pool.endpoint(&key);
        let inner = provider::build_with(choice, model, idle, client.as_ref())?;
        let env: Vec<_> = std::env::vars_os().collect();
        let redactor = crate::redact::Redactor::for_run(choice.key(), &env, &[]);
        Ok(Arc::new(Limited {
            redactor,
            inner,
            gate,
            budget: self.pool.budget.clone(),
            cancel: self.cancel.clone(),
            last: Arc::new(AtomicU64::new(0)),
        }))
    }
}

/// A job's provider behind its endpoint's gate and the batch's budget.
struct Limited {
    inner: Arc<dyn Provider>,
    gate: Arc<Gate>,
    budget: Arc<Budget>,
    cancel: Cancel,
    /// Tokens the job's previous response used: the estimate the next request is admitted
    /// with under `--tpm` (settled once its response reports what it used).
    last: Arc<AtomicU64>,
    /// The job's key and the environment's secrets: a 429's text is logged here, before the
    /// job's own redactor could see it, and a provider may quote the key back.
    redactor: crate::redact::Redactor,
}

#[async_trait]
impl Provider for Limited {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn structured_output(&self) -> bool {
        self.inner.structured_output()
    }

    fn reads_text_edits(&self) -> bool {
        self.inner.reads_text_edits()
    }

    /// A subagent's own provider (a recording's), behind the same gate and budget.
    fn for_subagent(&self, at: &crate::transcript::AgentRef) -> Option<Arc<dyn Provider>> {
        let inner = self.inner.for_subagent(at)?;
        Some(Arc::new(Limited {
            inner,
            gate: self.gate.clone(),
            budget: self.budget.clone(),
            cancel: self.cancel.clone(),
            last: Arc::new(AtomicU64::new(0)),
            redactor: self.redactor.clone(),
        }))
    }

    async fn stream(&self, request: &Request<'_>) -> Result<EventStream, ProviderError> {
        loop {
            if let Some(why) = self.budget.spent() {
                // The loop, selecting on the cancellation, ends the run with this status before
                // this request is made.
                self.cancel.cancel(Status::Budget, why);
                std::future::pending::<()>().await;
            }
            let reserved = self.last.load(Ordering::Relaxed);
            self.gate.admit(reserved).await;
            match self.inner.stream(request).await {
                Ok(stream) => {
                    self.gate.answered();
                    let settle = Settle {
                        gate: self.gate.clone(),
                        reserved,
                        used: AtomicU64::new(0),
                        last: self.last.clone(),
                    };
                    return Ok(Box::pin(stream.inspect(move |event| {
                        if let Ok(StreamEvent::Usage(u)) = event {
                            settle.used.store(u.total(), Ordering::Relaxed);
                        }
                    })));
                }
                Err(e) => {
                    self.gate.settle(reserved, 0);
                    if !self.shared(&e) {
                        return Err(e);
                    }
                    let said = self.redactor.redacted(e.to_string());
                    tracing::warn!(
                        "{said}; waiting for the endpoint's shared pause (no retry spent)"
                    );
                }
            }
        }
    }
}

impl Limited {
    /// Whether `e` is a 429 the endpoint's shared pause handles (pausing it): the job then
    /// waits at the gate and asks again. A quota (a wait too long to honour, or a 429 that is
    /// no rate limit) and a storm past `STORM_LIMIT` are the job's own failures.
    fn shared(&self, e: &ProviderError) -> bool {
        let ProviderError::Http {
            status: 429,
            retry_after,
            ..
        } = e
        else {
            return false;
        };
        if !e.is_retryable() || retry_after.is_some_and(|w| w > MAX_HONOURED_WAIT) {
            return false;
        }
        self.gate.pause(Instant::now(), *retry_after)
    }
}

/// Settles a response's tokens with its gate when its stream is dropped.
struct Settle {
    gate: Arc<Gate>,
    reserved: u64,
    used: AtomicU64,
    last: Arc<AtomicU64>,
}

impl Drop for Settle {
    fn drop(&mut self) {
        let used = self.used.load(Ordering::Relaxed);
        self.gate.settle(self.reserved, used);
        self.last.store(used, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_per_minute_come_evenly_after_a_small_burst() {
        let gate = Gate::new(Some(600), None);
        let now = Instant::now();
        // A tenth of a minute's worth at once, then one every 100 ms.
        for _ in 0..60 {
            assert_eq!(gate.try_admit(now, 0), Duration::ZERO);
        }
        let wait = gate.try_admit(now, 0);
        assert!(
            wait > Duration::from_millis(99) && wait <= Duration::from_millis(100),
            "{wait:?}"
        );
        assert_eq!(gate.try_admit(now + wait, 0), Duration::ZERO);
    }

    #[test]
    fn tokens_are_settled_after_the_fact_and_a_debt_makes_requests_wait() {
        let gate = Gate::new(None, Some(6000));
        let now = Instant::now();
        assert_eq!(gate.try_admit(now, 0), Duration::ZERO);
        // The response used 1600 tokens: 1000 more than the 600 of capacity.
        gate.settle(0, 1600);
        let wait = gate.try_admit(now, 0);
        assert!((wait.as_secs_f64() - 10.0).abs() < 0.01, "{wait:?}");
        assert_eq!(gate.try_admit(now + wait, 0), Duration::ZERO);
    }

    #[test]
    fn a_429_closes_the_gate_once_and_later_ones_only_extend_it() {
        let gate = Gate::new(None, None);
        let now = Instant::now();
        let two = Some(Duration::from_secs(2));
        assert!(gate.pause(now, two));
        assert!(gate.pause(now + Duration::from_millis(10), two));
        assert_eq!(gate.backoffs(), 1);
        let wait = gate.try_admit(now + Duration::from_secs(1), 0);
        assert_eq!(wait, Duration::from_millis(1010));
        assert_eq!(
            gate.paused_until(now),
            Some(now + Duration::from_millis(2010))
        );
        assert_eq!(
            gate.try_admit(now + Duration::from_secs(3), 0),
            Duration::ZERO
        );
        assert_eq!(gate.paused_until(now + Duration::from_secs(3)), None);
        gate.pause(now + Duration::from_secs(3), Some(Duration::from_secs(1)));
        assert_eq!(gate.backoffs(), 2);
    }

    #[test]
    fn pauses_that_name_no_wait_double_until_the_endpoint_answers() {
        let gate = Gate::new(None, None);
        let mut now = Instant::now();
        let mut waits = Vec::new();
        for _ in 0..7 {
            gate.pause(now, None);
            let until = gate.paused_until(now).unwrap();
            waits.push((until - now).as_secs());
            now = until;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        gate.answered();
        gate.pause(now, None);
        assert_eq!(gate.paused_until(now), Some(now + UNSAID_WAIT));
    }

    #[test]
    fn a_storm_is_waited_out_for_a_while_then_429s_are_the_jobs_own_again() {
        let gate = Gate::new(None, None);
        let start = Instant::now();
        let wait = Some(Duration::from_secs(20));
        let mut now = start;
        while now < start + STORM_LIMIT {
            assert!(gate.pause(now, wait), "{:?} into the storm", now - start);
            now += Duration::from_secs(20);
        }
        assert!(!gate.pause(now, wait));
        // The control: an answer between them ends the storm, and the wait is free again.
        gate.answered();
        assert!(gate.pause(now, wait));
    }

    #[test]
    fn a_pool_says_which_endpoint_is_paused() {
        let pool = Pool::new(None, None, Budget::default());
        let (_, gate) = pool.endpoint("http://a");
        pool.endpoint("http://b");
        assert_eq!(pool.paused_until(None), None);
        gate.pause(Instant::now(), Some(Duration::from_secs(5)));
        assert!(pool.paused_until(Some("http://a")).is_some());
        assert!(pool.paused_until(None).is_some());
        assert_eq!(pool.paused_until(Some("http://b")), None);
        assert_eq!(pool.paused_until(Some("http://c")), None);
    }

    #[test]
    fn the_batch_budget_counts_tokens_and_dollars() {
        let budget = Budget::new(Some(100), Some(0.5));
        let usage = Usage {
            input_tokens: 60,
            output_tokens: 10,
            ..Usage::default()
        };
        budget.add(&usage, Some(0.2));
        assert_eq!(budget.spent(), None);
        budget.add(&usage, Some(0.2));
        assert!(budget.spent().unwrap().contains("token budget of 100"));
        let usd = Budget::new(None, Some(0.3));
        usd.add(&usage, Some(0.31));
        assert!(usd.spent().unwrap().contains("$0.3"));
    }
}
