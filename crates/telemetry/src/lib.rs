//! OpenTelemetry traces and metrics of rounds runs, exported over OTLP/HTTP: off unless the
//! user's environment or flags say where to ([`Config`]).
//!
//! A run is one trace ([`Run`]): it joins the trace of whoever started rounds (`TRACEPARENT`,
//! as CI tracing integrations set it) and hands its own context to the tools it runs. Export
//! happens on a task beside the loop and is flushed, bounded in time, when the run ends
//! (`export`): a collector that is down or slow costs a warning, never an exit code.

#![forbid(unsafe_code)]

mod config;
mod export;
mod names;
mod run;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{ManualReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;

pub use config::{Config, ConfigError, Protocol, Signal, header_secrets};
pub use export::BuildError;
pub use run::{Hook, Run};

use export::{Exporter, Processor, Queue, Reader};

/// How long the end of a run waits for the collector, by default.
pub const FLUSH_BOUND: Duration = Duration::from_secs(2);

/// The run's instruments (the conventions' buckets for the GenAI ones).
#[derive(Clone)]
pub(crate) struct Instruments {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
    runs: Counter<u64>,
}

/// Telemetry for the process: its exporter and providers; [`Telemetry::run`] starts a run's
/// trace. Must be made inside the tokio runtime that runs the loop (its export task is one of
/// that runtime's).
pub struct Telemetry {
    tracer: SdkTracerProvider,
    /// Held for the instruments' sake: dropped, it would shut them down.
    _meter: SdkMeterProvider,
    instruments: Instruments,
    exporter: Arc<Exporter>,
    task: tokio::task::JoinHandle<()>,
    content: bool,
    parent: Context,
}

impl Telemetry {
    /// Starts exporting as `config` says, over `client`, under the trace `traceparent` (and
    /// `tracestate`) names, if any.
    pub fn start(
        config: &Config,
        client: &reqwest::Client,
        traceparent: Option<&str>,
        tracestate: Option<&str>,
    ) -> Result<Telemetry, BuildError> {
        // Empty, not the SDK's builder: it reads the OTEL_* variables itself, and `Config` did.
        let mut resource = Resource::builder_empty().with_service_name(config.service_name.clone());
        for (k, v) in &config.resource {
            resource = resource.with_attribute(KeyValue::new(k.clone(), v.clone()));
        }
        let resource = resource
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let queue = Arc::new(Queue::default());
        let reader = Reader(Arc::new(ManualReader::builder().build()));
        let exporter = Arc::new(Exporter::new(
            client,
            config.traces.as_ref(),
            config.metrics.as_ref().map(|m| (m, reader.clone())),
            queue.clone(),
            &resource,
        )?);
        let tracer = SdkTracerProvider::builder()
            .with_span_processor(Processor(queue))
            .with_resource(resource.clone())
            .build();
        let meter = SdkMeterProvider::builder()
            .with_reader(reader)
            .with_resource(resource)
            .build();
        let instruments = instruments(&meter);
        let task = tokio::spawn(exporter.clone().run());
        Ok(Telemetry {
            tracer,
            _meter: meter,
            instruments,
            exporter,
            task,
            content: config.content,
            parent: parent(traceparent, tracestate),
        })
    }

    /// A run's trace, started now: its `invoke_agent` span.
    pub fn run(&self, run_id: &str) -> Run {
        let tracer = self.tracer.tracer_with_scope(scope());
        Run::new(
            tracer,
            self.instruments.clone(),
            self.content,
            &self.parent,
            run_id,
        )
    }

    /// A batch's trace: one span (`name`) whose children are its jobs' runs ([`Group::run`]).
    pub fn group(&self, name: &str, attributes: &[(&str, String)]) -> Group {
        use opentelemetry::trace::{TraceContextExt, Tracer as _};
        let tracer = self.tracer.tracer_with_scope(scope());
        let attributes = (attributes.iter())
            .map(|(k, v)| KeyValue::new((*k).to_owned(), v.clone()))
            .collect::<Vec<_>>();
        let span = tracer
            .span_builder(name.to_owned())
            .with_attributes(attributes)
            .start_with_context(&tracer, &self.parent);
        Group {
            cx: self.parent.with_span(span),
            tracer,
            instruments: self.instruments.clone(),
            content: self.content,
        }
    }

    /// A run's trace under the span `traceparent` names (a queued job's: its enqueuer's), or
    /// under rounds' own parent when that names none or is not valid.
    pub fn run_under(&self, traceparent: Option<&str>, run_id: &str) -> Run {
        use opentelemetry::trace::TraceContextExt;
        let named = parent(traceparent, None);
        let parent = match named.span().span_context().is_valid() {
            true => named,
            false => self.parent.clone(),
        };
        let tracer = self.tracer.tracer_with_scope(scope());
        Run::new(
            tracer,
            self.instruments.clone(),
            self.content,
            &parent,
            run_id,
        )
    }

    /// Exports what is left, waiting at most `bound`; then stops exporting.
    pub async fn flush(&self, bound: Duration) {
        // After the last post: one under way finishes first (within the bound).
        self.exporter.flush(bound).await;
        self.task.abort();
    }
}

/// A span that holds runs: a batch.
pub struct Group {
    cx: Context,
    tracer: opentelemetry_sdk::trace::SdkTracer,
    instruments: Instruments,
    content: bool,
}

impl Group {
    /// A run of the group, started now as its child.
    pub fn run(&self, run_id: &str) -> Run {
        Run::new(
            self.tracer.clone(),
            self.instruments.clone(),
            self.content,
            &self.cx,
            run_id,
        )
    }

    /// The group's span as a W3C `traceparent` value: what a queued job carries to its worker.
    pub fn traceparent(&self) -> String {
        traceparent_of(&self.cx)
    }

    /// Ends the group's span with how it ended: `error` when it did not end well.
    pub fn end(&self, attributes: &[(&str, String)], error: Option<String>) {
        use opentelemetry::trace::{Status, TraceContextExt};
        let span = self.cx.span();
        for (k, v) in attributes {
            span.set_attribute(KeyValue::new((*k).to_owned(), v.clone()));
        }
        span.set_status(match error {
            Some(why) => Status::error(why),
            None => Status::Ok,
        });
        span.end();
    }
}

/// The span of `cx` as a W3C `traceparent` value.
pub(crate) fn traceparent_of(cx: &Context) -> String {
    use opentelemetry::trace::TraceContextExt;
    let span = cx.span();
    let context = span.span_context();
    format!(
        "00-{}-{}-{:02x}",
        context.trace_id(),
        context.span_id(),
        context.trace_flags().to_u8()
    )
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("rounds")
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_schema_url(names::SCHEMA_URL)
        .build()
}

/// The bucket boundaries the GenAI conventions advise for token counts and for durations.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

fn instruments(provider: &SdkMeterProvider) -> Instruments {
    let meter = provider.meter_with_scope(scope());
    Instruments {
        token_usage: meter
            .u64_histogram(names::GEN_AI_CLIENT_TOKEN_USAGE)
            .with_unit("{token}")
            .with_description("Number of input and output tokens used")
            .with_boundaries(TOKEN_BUCKETS.to_vec())
            .build(),
        operation_duration: meter
            .f64_histogram(names::GEN_AI_CLIENT_OPERATION_DURATION)
            .with_unit("s")
            .with_description("GenAI operation duration")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build(),
        tool_duration: meter
            .f64_histogram(names::TOOL_DURATION)
            .with_unit("s")
            .with_description("How long a tool call took")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build(),
        runs: meter
            .u64_counter(names::RUNS)
            .with_unit("{run}")
            .with_description("Runs ended, by status and exit code")
            .build(),
    }
}

/// The context a `TRACEPARENT` (W3C trace context) names; the empty context without one, or
/// when it is not valid (the run then starts a trace of its own).
fn parent(traceparent: Option<&str>, tracestate: Option<&str>) -> Context {
    let Some(traceparent) = traceparent else {
        return Context::new();
    };
    let mut carrier = HashMap::new();
    carrier.insert("traceparent".to_owned(), traceparent.trim().to_owned());
    if let Some(state) = tracestate {
        carrier.insert("tracestate".to_owned(), state.trim().to_owned());
    }
    TraceContextPropagator::new().extract_with_context(&Context::new(), &carrier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt;

    #[test]
    fn a_valid_traceparent_is_the_parent_and_anything_else_is_none() {
        let id = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let cx = parent(Some(id), Some("vendor=x"));
        let span = cx.span().span_context().clone();
        assert!(span.is_remote() && span.is_valid());
        assert_eq!(
            span.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(span.trace_state().get("vendor"), Some("x"));
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        ] {
            assert!(
                !parent(Some(bad), None).span().span_context().is_valid(),
                "{bad}"
            );
        }
        assert!(!parent(None, None).span().span_context().is_valid());
    }
}
