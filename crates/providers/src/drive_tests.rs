//! The driver's two bounds, over a scripted body in real (short) time: the idle timeout restarts
//! only on content, and a response is cut at its content cap without reading further.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;

use super::anthropic::AnthropicMapper;
use super::gemini::GeminiMapper;
use super::openai::OpenAiMapper;
use super::{Bounds, EventStream, Mapper, ProviderError, StreamEvent, drive_within};

/// A body that writes `steps` (a pause, then bytes) and counts how many reads were taken.
fn body(
    steps: Vec<(Duration, String)>,
    reads: Arc<AtomicUsize>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + Unpin {
    let stream = futures_util::stream::iter(steps).then(move |(pause, bytes)| {
        let reads = reads.clone();
        async move {
            tokio::time::sleep(pause).await;
            reads.fetch_add(1, Ordering::SeqCst);
            Ok(Bytes::from(bytes))
        }
    });
    Box::pin(stream)
}

/// Everything the stream yields, and how long that took.
async fn collect(mut stream: EventStream) -> (Vec<Result<StreamEvent, ProviderError>>, Duration) {
    let started = Instant::now();
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item);
    }
    (items, started.elapsed())
}

const TICK: Duration = Duration::from_millis(50);
const IDLE: Duration = Duration::from_millis(400);

fn bounds() -> Bounds {
    Bounds {
        idle: IDLE,
        max_bytes: super::MAX_RESPONSE_BYTES,
    }
}

fn anthropic_event(name: &str, data: serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn text_start() -> String {
    anthropic_event(
        "content_block_start",
        serde_json::json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    )
}

fn text_delta(text: &str) -> String {
    anthropic_event(
        "content_block_delta",
        serde_json::json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
    )
}

fn anthropic_end() -> String {
    [
        anthropic_event(
            "content_block_stop",
            serde_json::json!({"type":"content_block_stop","index":0}),
        ),
        anthropic_event(
            "message_delta",
            serde_json::json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}),
        ),
        anthropic_event("message_stop", serde_json::json!({"type":"message_stop"})),
    ]
    .concat()
}

/// `head` at once, then `tick` every 50 ms, `n` times, then `tail`.
fn ticking(head: &str, tick: &str, n: usize, tail: &str) -> Vec<(Duration, String)> {
    let mut steps = vec![(Duration::ZERO, head.to_owned())];
    steps.extend((0..n).map(|_| (TICK, tick.to_owned())));
    steps.push((TICK, tail.to_owned()));
    steps
}

/// Drives `mapper` over `steps`: the yielded items and the time taken.
async fn run<M: Mapper>(
    mapper: M,
    steps: Vec<(Duration, String)>,
    bounds: Bounds,
) -> (Vec<Result<StreamEvent, ProviderError>>, Duration, usize) {
    let reads = Arc::new(AtomicUsize::new(0));
    let stream = drive_within(body(steps, reads.clone()), mapper, bounds);
    let (items, took) = collect(stream).await;
    (items, took, reads.load(Ordering::SeqCst))
}

fn stalled(items: &[Result<StreamEvent, ProviderError>]) -> bool {
    matches!(items.last(), Some(Err(ProviderError::Idle { .. })))
}

#[tokio::test]
async fn keep_alives_of_every_provider_do_not_hold_off_the_idle_timeout() {
    let message_start = anthropic_event(
        "message_start",
        serde_json::json!({"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}),
    );
    let ping = anthropic_event("ping", serde_json::json!({"type":"ping"}));
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    let empty = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}]}\n\n";
    let usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n";
    let gemini_usage = "data: {\"usageMetadata\":{\"promptTokenCount\":1}}\n\n";
    // 100 keep-alives would take 5 s: the stream must be cut at the idle timeout instead.
    let anthropic = || AnthropicMapper::default();
    let chat = || OpenAiMapper::new("openai");
    let comment = ": keep-alive\n\n";
    stalls(
        "anthropic ping",
        anthropic(),
        ticking(&message_start, &ping, 100, ""),
    )
    .await;
    stalls(
        "SSE comment",
        anthropic(),
        ticking(&message_start, comment, 100, ""),
    )
    .await;
    stalls("empty chat chunk", chat(), ticking(role, empty, 100, "")).await;
    stalls(
        "usage-only chat chunk",
        chat(),
        ticking(role, usage, 100, ""),
    )
    .await;
    let gemini = ticking(gemini_usage, gemini_usage, 100, "");
    stalls("usage-only gemini chunk", GeminiMapper::default(), gemini).await;
}

async fn stalls<M: Mapper>(name: &str, mapper: M, steps: Vec<(Duration, String)>) {
    let (items, took, _) = run(mapper, steps, bounds()).await;
    assert!(stalled(&items), "{name}: {items:?}");
    assert!(took >= IDLE && took < IDLE * 3, "{name}: {took:?}");
}

#[tokio::test]
async fn content_every_tick_keeps_a_response_alive_past_the_idle_timeout() {
    // The control for the test above: the same pace, but text, runs three idle timeouts long.
    let steps = ticking(&text_start(), &text_delta("x"), 24, &anthropic_end());
    let (items, took, _) = run(AnthropicMapper::default(), steps, bounds()).await;
    assert!(
        matches!(items.last(), Some(Ok(StreamEvent::Done(_)))),
        "{items:?}"
    );
    assert!(took > IDLE * 3, "{took:?}");
    // Pings in between change nothing as long as content keeps coming.
    let ping = anthropic_event("ping", serde_json::json!({"type":"ping"}));
    let mut steps = ticking(&text_start(), &text_delta("x"), 12, &anthropic_end());
    for i in (2..steps.len()).step_by(2).rev() {
        steps.insert(i, (TICK, ping.clone()));
    }
    let (items, _, _) = run(AnthropicMapper::default(), steps, bounds()).await;
    assert!(
        matches!(items.last(), Some(Ok(StreamEvent::Done(_)))),
        "{items:?}"
    );
}

#[tokio::test]
async fn a_stall_after_content_is_still_a_stall() {
    let ping = anthropic_event("ping", serde_json::json!({"type":"ping"}));
    let mut steps = ticking(&text_start(), &text_delta("x"), 4, "");
    steps.extend((0..100).map(|_| (TICK, ping.clone())));
    let (items, took, _) = run(AnthropicMapper::default(), steps, bounds()).await;
    assert!(stalled(&items), "{items:?}");
    let text = items
        .iter()
        .filter(|i| matches!(i, Ok(StreamEvent::TextDelta(_))))
        .count();
    assert_eq!(text, 4, "the content before the stall is delivered");
    assert!(took < TICK * 5 + IDLE * 2, "{took:?}");
    let message = items.last().unwrap().as_ref().unwrap_err().to_string();
    assert_eq!(message, "anthropic: stream stalled: no content for 0.4s");
}

const CHUNK: usize = 64 * 1024;
const CAP: u64 = 1024 * 1024;

fn capped() -> Bounds {
    Bounds {
        idle: Duration::from_secs(30),
        max_bytes: CAP,
    }
}

/// A text block of `n` deltas of 64 KiB each, all at once.
fn big_text(n: usize) -> Vec<(Duration, String)> {
    let delta = text_delta(&"y".repeat(CHUNK));
    let mut steps = vec![(Duration::ZERO, text_start())];
    steps.extend((0..n).map(|_| (Duration::ZERO, delta.clone())));
    steps.push((Duration::ZERO, anthropic_end()));
    steps
}

#[tokio::test]
async fn a_response_past_the_cap_is_cut_without_reading_the_rest() {
    // Three times the cap is on offer; reading stops at the event that passes it.
    let (items, _, reads) = run(AnthropicMapper::default(), big_text(48), capped()).await;
    let Some(Err(err)) = items.last() else {
        panic!("{:?}", items.last());
    };
    assert!(
        matches!(err, ProviderError::TooLarge { limit: CAP, .. }),
        "{err}"
    );
    assert!(!err.is_retryable());
    assert_eq!(
        err.to_string(),
        "anthropic: response too large: more than 1 MiB of text, thinking and tool input \
         (the cap on one response); reading stopped"
    );
    let delivered: usize = items
        .iter()
        .map(|i| match i {
            Ok(StreamEvent::TextDelta(t)) => t.len(),
            _ => 0,
        })
        .sum();
    // The block start (1 KiB) and 15 deltas are under the cap, the 16th passes it: what was
    // mapped up to there is delivered, and nothing after it is read.
    assert_eq!(delivered, 16 * CHUNK);
    assert_eq!(reads, 1 + 16);
}

#[tokio::test]
async fn a_response_just_under_the_cap_completes() {
    // 15 deltas of 64 KiB and a block: 1 KiB under the cap.
    let (items, _, _) = run(AnthropicMapper::default(), big_text(15), capped()).await;
    assert!(
        matches!(items.last(), Some(Ok(StreamEvent::Done(_)))),
        "{:?}",
        items.last()
    );
}

#[tokio::test]
async fn tool_input_counts_towards_the_cap_though_it_streams_no_deltas() {
    let start = anthropic_event(
        "content_block_start",
        serde_json::json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}}),
    );
    let fragment = anthropic_event(
        "content_block_delta",
        serde_json::json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"z".repeat(CHUNK)}}),
    );
    let mut steps = vec![(Duration::ZERO, start)];
    steps.extend((0..48).map(|_| (Duration::ZERO, fragment.clone())));
    let (items, _, reads) = run(AnthropicMapper::default(), steps, capped()).await;
    assert!(
        matches!(items.last(), Some(Err(ProviderError::TooLarge { .. }))),
        "{items:?}"
    );
    assert!(reads < 20, "{reads}");
}
