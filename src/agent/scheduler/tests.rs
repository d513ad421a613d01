//! Scheduling is proven with instrumented tools: a barrier that only opens when N calls are
//! inside it at once (real parallelism), and a shared log of enter/exit events (exclusivity and
//! ordering).

use super::*;
use crate::tools::policy::Policy;
use crate::tools::{Registry, Tool, ToolContext, ToolError, ToolSpec, Workspace};
use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Barrier;

#[derive(Default)]
struct Probe {
    active: AtomicUsize,
    peak: AtomicUsize,
    log: Mutex<Vec<String>>,
}

impl Probe {
    fn enter(&self, name: &str) {
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.log.lock().unwrap().push(format!("+{name}"));
    }
    fn exit(&self, name: &str) {
        self.log.lock().unwrap().push(format!("-{name}"));
        self.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sleeps `ms` (from its input), logging entry and exit under the call's `tag`.
struct Sleepy {
    spec: ToolSpec,
    probe: Arc<Probe>,
    barrier: Option<Arc<Barrier>>,
}

#[async_trait]
impl Tool for Sleepy {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn run(&self, input: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let tag = input["tag"].as_str().unwrap_or("?").to_owned();
        self.probe.enter(&tag);
        if let Some(b) = &self.barrier {
            b.wait().await;
        }
        let ms = input["ms"].as_u64().unwrap_or(0);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => {}
            () = ctx.cancel.cancelled() => {}
        }
        self.probe.exit(&tag);
        Ok(format!("done {tag}"))
    }
}

fn spec(name: &str, class: Class) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: "test".into(),
        input_schema: json!({"type": "object"}),
        class,
    }
}

fn toolbox(
    probe: &Arc<Probe>,
    barrier: Option<Arc<Barrier>>,
    dir: &std::path::Path,
) -> Arc<Toolbox> {
    let mut registry = Registry::default();
    for (name, class) in [("safe", Class::Safe), ("mutating", Class::Mutating)] {
        registry.register(Arc::new(Sleepy {
            spec: spec(name, class),
            probe: probe.clone(),
            barrier: barrier.clone(),
        }));
    }
    let policy = Policy::new(&["none,safe,mutating".into()], &[], &["safe", "mutating"]).unwrap();
    let ws = Workspace::new(dir).unwrap();
    let settings = crate::tools::pipeline::Settings {
        timeout: Duration::from_secs(5),
        max_result_bytes: 30_000,
        env: Vec::new(),
        outputs: crate::tools::Outputs::new(
            crate::files::Dir::create_all(&dir.join("outputs")).unwrap(),
            u64::MAX,
        ),
        hooks: Default::default(),
        sandbox: Default::default(),
        redactor: Default::default(),
        images: None,
    };
    Arc::new(Toolbox::new(registry, policy, ws, settings))
}

fn call(id: usize, name: &str, tag: &str, ms: u64) -> ToolUse {
    ToolUse::from_raw(
        format!("c{id}"),
        name.into(),
        &json!({"tag": tag, "ms": ms}).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_calls_really_run_at_the_same_time() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probe::default());
    // The barrier only opens when all four calls are inside the tool at once.
    let tb = toolbox(&probe, Some(Arc::new(Barrier::new(4))), dir.path());
    let mut s = Scheduler::new(
        tb,
        8,
        CancellationToken::new(),
        Arc::new(super::super::Quiet),
    );
    for i in 0..4 {
        s.submit(call(i, "safe", &format!("s{i}"), 0));
    }
    let (results, _) = tokio::time::timeout(Duration::from_secs(5), s.finish())
        .await
        .expect("the barrier never opened: calls did not run in parallel");
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    assert_eq!(probe.peak.load(Ordering::SeqCst), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_come_back_in_call_order_whatever_order_they_finish_in() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probe::default());
    let tb = toolbox(&probe, None, dir.path());
    let mut s = Scheduler::new(
        tb,
        8,
        CancellationToken::new(),
        Arc::new(super::super::Quiet),
    );
    for (i, ms) in [120u64, 60, 0].into_iter().enumerate() {
        s.submit(call(i, "safe", &format!("s{i}"), ms));
    }
    let (results, wall) = s.finish().await;
    let ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(ids, ["c0", "c1", "c2"]);
    // Entry order is up to the runtime's threads; only the finish order is fixed by the sleeps.
    let log = probe.log.lock().unwrap().clone();
    let exits: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|e| e.starts_with('-'))
        .collect();
    assert_eq!(exits, ["-s2", "-s1", "-s0"], "log was {log:?}");
    assert!(wall >= Duration::from_millis(120), "{wall:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_call_waits_for_earlier_calls_and_blocks_later_ones() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probe::default());
    let tb = toolbox(&probe, None, dir.path());
    let mut s = Scheduler::new(
        tb,
        8,
        CancellationToken::new(),
        Arc::new(super::super::Quiet),
    );
    s.submit(call(0, "safe", "a", 80));
    s.submit(call(1, "safe", "b", 40));
    s.submit(call(2, "mutating", "M", 40));
    s.submit(call(3, "safe", "c", 10));
    s.submit(call(4, "safe", "d", 10));
    let (results, _) = s.finish().await;
    assert_eq!(results.len(), 5);
    let log = probe.log.lock().unwrap().clone();
    let pos = |e: &str| log.iter().position(|x| x == e).unwrap();
    assert!(pos("+M") > pos("-a") && pos("+M") > pos("-b"), "{log:?}");
    assert_eq!(
        pos("-M"),
        pos("+M") + 1,
        "nothing may run during M: {log:?}"
    );
    assert!(pos("+c") > pos("-M") && pos("+d") > pos("-M"), "{log:?}");
    // Before and after M, the safe calls overlapped.
    assert!(pos("+b") < pos("-a"), "{log:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallelism_is_bounded_by_max_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probe::default());
    let tb = toolbox(&probe, None, dir.path());
    let mut s = Scheduler::new(
        tb,
        2,
        CancellationToken::new(),
        Arc::new(super::super::Quiet),
    );
    for i in 0..6 {
        s.submit(call(i, "safe", &format!("s{i}"), 30));
    }
    s.finish().await;
    assert_eq!(probe.peak.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_running_and_queued_calls_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probe::default());
    let tb = toolbox(&probe, None, dir.path());
    let cancel = CancellationToken::new();
    let mut s = Scheduler::new(tb, 1, cancel.clone(), Arc::new(super::super::Quiet));
    s.submit(call(0, "safe", "long", 10_000));
    s.submit(call(1, "safe", "queued", 10_000));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    s.cancel();
    let (results, _) = s.finish().await;
    assert!(started.elapsed() < Duration::from_secs(2));
    let kinds: Vec<_> = results.iter().map(|r| r.error_kind).collect();
    assert_eq!(
        kinds,
        [Some(ErrorKind::Cancelled), Some(ErrorKind::Cancelled)]
    );
}
