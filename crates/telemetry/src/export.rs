//! Export off the loop, over rounds' own HTTP client.
//!
//! The SDK's batch processor and periodic reader each run a thread of their own that drives
//! the exporter with a blocking executor, which a tokio-based client cannot serve and which
//! would be two more threads in every run. Instead, ended spans go to a bounded in-memory
//! queue ([`Processor`]); a task of the run's own runtime posts them every second (or as soon
//! as a batch is full), with the metrics every minute; at the end of the run, [`Exporter::flush`]
//! posts what is left, bounded in time. A full queue drops spans and counts them; a failed
//! post is said once, as a warning, and changes nothing else.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::Context;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, Temporality};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

use crate::config::{Protocol, Signal};

/// Spans held for export at most; more are dropped (and counted) until a post empties it.
pub(crate) const QUEUE_LIMIT: usize = 2048;
/// A post as soon as this many spans wait.
const BATCH: usize = 512;
const SPAN_INTERVAL: Duration = Duration::from_secs(1);
const METRIC_INTERVAL: Duration = Duration::from_secs(60);
/// One post's bound: a collector that does not answer costs a run no more at its end.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// Ended spans waiting for export.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    spans: Mutex<Vec<SpanData>>,
    dropped: AtomicUsize,
    full: tokio::sync::Notify,
}

impl Queue {
    fn take(&self) -> Vec<SpanData> {
        self.spans
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }
}

/// The span processor of the run's tracer provider: ended spans into the [`Queue`].
#[derive(Debug)]
pub(crate) struct Processor(pub(crate) Arc<Queue>);

impl SpanProcessor for Processor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        let Ok(mut spans) = self.0.spans.lock() else {
            return;
        };
        if spans.len() >= QUEUE_LIMIT {
            self.0.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        spans.push(span);
        if spans.len() >= BATCH {
            self.0.full.notify_one();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// The run's metric reader, shared with the exporter that collects from it.
#[derive(Debug, Clone)]
pub(crate) struct Reader(pub(crate) Arc<ManualReader>);

impl MetricReader for Reader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// rounds' reqwest client as the OTLP exporter's: the run's TLS and proxy settings, no second
/// HTTP stack.
#[derive(Debug, Clone)]
struct Client(reqwest::Client);

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let response = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .timeout(POST_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await?;
        let mut out = Response::builder().status(status).body(bytes)?;
        *out.headers_mut() = headers;
        Ok(out)
    }
}

/// The exporter could not be built (a header the HTTP library refuses, as a rule).
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry exporter: {0}")]
pub struct BuildError(String);

/// What posts the run's telemetry.
pub(crate) struct Exporter {
    queue: Arc<Queue>,
    spans: Option<opentelemetry_otlp::SpanExporter>,
    metrics: Option<(opentelemetry_otlp::MetricExporter, Reader)>,
    /// Whether a failed post was said (once per run).
    warned: AtomicBool,
    /// Held through each post: the end of the run waits for one under way instead of
    /// cancelling it with the spans it took.
    posting: tokio::sync::Mutex<()>,
}

fn otlp_protocol(protocol: Protocol) -> opentelemetry_otlp::Protocol {
    match protocol {
        Protocol::Protobuf => opentelemetry_otlp::Protocol::HttpBinary,
        Protocol::Json => opentelemetry_otlp::Protocol::HttpJson,
    }
}

/// An OTLP/HTTP exporter's builder (spans' or metrics') set to post `signal` over `client`.
fn posting<B: WithExportConfig + WithHttpConfig>(
    builder: B,
    client: &reqwest::Client,
    signal: &Signal,
) -> B {
    let headers: HashMap<String, String> = signal.headers.iter().cloned().collect();
    builder
        .with_http_client(Client(client.clone()))
        .with_endpoint(signal.url.clone())
        .with_protocol(otlp_protocol(signal.protocol))
        .with_headers(headers)
        .with_timeout(POST_TIMEOUT)
}

impl Exporter {
    pub(crate) fn new(
        client: &reqwest::Client,
        traces: Option<&Signal>,
        metrics: Option<(&Signal, Reader)>,
        queue: Arc<Queue>,
        resource: &opentelemetry_sdk::Resource,
    ) -> Result<Exporter, BuildError> {
        let error = |e: opentelemetry_otlp::ExporterBuildError| BuildError(e.to_string());
        let mut spans = match traces {
            Some(signal) => Some(
                posting(
                    opentelemetry_otlp::SpanExporter::builder().with_http(),
                    client,
                    signal,
                )
                .build()
                .map_err(error)?,
            ),
            None => None,
        };
        // The span exporter sends the resource it is given: the provider gives it to the span
        // processor, which is ours.
        if let Some(exporter) = spans.as_mut() {
            exporter.set_resource(resource);
        }
        let metrics = match metrics {
            Some((signal, reader)) => Some((
                posting(
                    opentelemetry_otlp::MetricExporter::builder().with_http(),
                    client,
                    signal,
                )
                .build()
                .map_err(error)?,
                reader,
            )),
            None => None,
        };
        Ok(Exporter {
            queue,
            spans,
            metrics,
            warned: AtomicBool::new(false),
            posting: tokio::sync::Mutex::new(()),
        })
    }

    /// Posts what waits, spans then metrics (when `metrics`).
    async fn post(&self, metrics: bool) {
        let _posting = self.posting.lock().await;
        let batch = self.queue.take();
        if let Some(exporter) = &self.spans
            && !batch.is_empty()
            && let Err(e) = exporter.export(batch).await
        {
            self.warn(&e.to_string());
        }
        if metrics && let Some((exporter, reader)) = &self.metrics {
            let mut collected = ResourceMetrics::default();
            let result = match reader.collect(&mut collected) {
                Ok(()) => exporter.export(&collected).await,
                Err(e) => Err(e),
            };
            if let Err(e) = result {
                self.warn(&e.to_string());
            }
        }
    }

    fn warn(&self, error: &str) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "OpenTelemetry export failed (said once; the run goes on unchanged): {error}"
            );
        }
    }

    /// Posts every second, or when a batch is full; metrics every minute. Runs until dropped.
    pub(crate) async fn run(self: Arc<Self>) {
        let mut metrics = tokio::time::interval(METRIC_INTERVAL);
        metrics.tick().await;
        loop {
            let due = tokio::select! {
                _ = self.queue.full.notified() => false,
                _ = tokio::time::sleep(SPAN_INTERVAL) => false,
                _ = metrics.tick() => true,
            };
            self.post(due).await;
        }
    }

    /// Posts what is left, within `bound`; what does not make it is lost (and said).
    pub(crate) async fn flush(&self, bound: Duration) {
        if tokio::time::timeout(bound, self.post(true)).await.is_err() {
            self.warn(&format!(
                "the collector did not take the run's telemetry within {bound:?}"
            ));
        }
        let dropped = self.queue.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(
                "OpenTelemetry: {dropped} spans were dropped (more than {QUEUE_LIMIT} waited for \
                 the collector)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::InstrumentationScope;
    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status};

    fn span() -> SpanData {
        SpanData {
            span_context: SpanContext::empty_context(),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: "s".into(),
            start_time: std::time::SystemTime::UNIX_EPOCH,
            end_time: std::time::SystemTime::UNIX_EPOCH,
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: Status::Unset,
            instrumentation_scope: InstrumentationScope::builder("t").build(),
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_a_post_makes_room_again() {
        let queue = Arc::new(Queue::default());
        let processor = Processor(queue.clone());
        for _ in 0..QUEUE_LIMIT + 5 {
            processor.on_end(span());
        }
        assert_eq!(queue.dropped.load(Ordering::Relaxed), 5);
        assert_eq!(queue.take().len(), QUEUE_LIMIT);
        processor.on_end(span());
        assert_eq!(queue.take().len(), 1);
        assert_eq!(queue.dropped.load(Ordering::Relaxed), 5);
    }
}
