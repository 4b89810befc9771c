//! `layer_call`: what the metrics layer adds to one call, against the same call without it.
//!
//! Rows (sequential calls on a current-thread runtime, each awaited before the next; the inner
//! service answers at once, so the row is all overhead):
//! - `bare/tools_list`, `layer/tools_list`: a `tools/list` (no subject: the operation itself
//!   allocates nothing).
//! - `bare/tools_call`, `layer/tools_call`: a `tools/call` of one tool, answered with an
//!   in-memory result (the layer looks up the tool's series and the result's `isError`).
//! - `bare/tools_call_raw_1k`, `layer/tools_call_raw_1k`: the same answered with 1 KiB of raw
//!   JSON without `isError` (the layer's search for the key over it).
//! - With `--features opentelemetry`: `otel_follow/tools_call` (the feature's default: nothing
//!   configured, the caller's context looked at for an active span on every call),
//!   `otel_meter/tools_call` (the semantic-convention histogram recorded on an SDK meter too)
//!   and `otel_traced/tools_call` (a client span per call and its traceparent in the options).
//! - `endpoint/record_call`: no call, only `EndpointHandle::record_call` — what a server
//!   routed over several endpoints records per attempt besides the layer (15 successes, which
//!   move the latency average, to one failure; target < 50 ns).
//!
//! ```text
//! cargo bench -p mcp-metrics --bench layer_call [--features opentelemetry]
//! ```
//!
//! After the criterion group it times plain loops (the median of five runs) and prints one
//! line per row: `layer_call: layer/tools_call … ns/call, overhead … ns over bare/tools_call
//! (target < 100 ns)`.
//!
//! Instruction counts (stable on a noisy machine): with `LAYER_CALL_COUNT=<row>:<calls>` the
//! bench runs only that many calls of that row and exits, e.g.
//!
//! ```text
//! BIN=$(ls -t target/release/deps/layer_call-* | grep -v '\.d$' | head -1)
//! for n in 1000 11000; do
//!   LAYER_CALL_COUNT=layer/tools_list:$n valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n $BIN
//! done
//! ```
//!
//! and the difference of the two totals over 10 000 calls is the per-call count.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::Criterion;
use mcp_core::{BoxService, Error, Layer, McpService, Operation, Payload};
use mcp_metrics::{EndpointHandle, EndpointInfo, Metrics, MetricsConfig};
use serde_json::json;

/// Answers every call at once with a clone of its result.
struct Noop {
    result: Payload,
}

#[async_trait]
impl McpService for Noop {
    async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        black_box(&operation);
        Ok(self.result.clone())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Request {
    List,
    Call,
    CallRaw,
}

impl Request {
    fn operation(self) -> Operation {
        match self {
            Request::List => Operation::new("tools/list", None),
            Request::Call | Request::CallRaw => {
                Operation::new("tools/call", None).with_subject("echo")
            }
        }
    }

    fn result(self) -> Payload {
        match self {
            Request::List => Payload::Value(json!({"tools": []})),
            Request::Call => Payload::Value(json!({"content": [{"type": "text", "text": "hi"}]})),
            Request::CallRaw => {
                let text = "x".repeat(1000);
                let json = format!(r#"{{"content":[{{"type":"text","text":"{text}"}}]}}"#);
                Payload::from_json_str(&json).expect("valid JSON")
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wrap {
    Bare,
    Layer,
    #[cfg(feature = "opentelemetry")]
    OtelFollow,
    #[cfg(feature = "opentelemetry")]
    OtelMeter,
    #[cfg(feature = "opentelemetry")]
    OtelTraced,
}

struct Row {
    name: &'static str,
    call: Request,
    wrap: Wrap,
    /// The bare row this one is measured against.
    floor: Option<&'static str>,
}

fn rows() -> Vec<Row> {
    #[cfg_attr(not(feature = "opentelemetry"), allow(unused_mut))]
    let mut rows = vec![
        Row {
            name: "bare/tools_list",
            call: Request::List,
            wrap: Wrap::Bare,
            floor: None,
        },
        Row {
            name: "layer/tools_list",
            call: Request::List,
            wrap: Wrap::Layer,
            floor: Some("bare/tools_list"),
        },
        Row {
            name: "bare/tools_call",
            call: Request::Call,
            wrap: Wrap::Bare,
            floor: None,
        },
        Row {
            name: "layer/tools_call",
            call: Request::Call,
            wrap: Wrap::Layer,
            floor: Some("bare/tools_call"),
        },
        Row {
            name: "bare/tools_call_raw_1k",
            call: Request::CallRaw,
            wrap: Wrap::Bare,
            floor: None,
        },
        Row {
            name: "layer/tools_call_raw_1k",
            call: Request::CallRaw,
            wrap: Wrap::Layer,
            floor: Some("bare/tools_call_raw_1k"),
        },
    ];
    #[cfg(feature = "opentelemetry")]
    rows.extend([
        Row {
            name: "otel_follow/tools_call",
            call: Request::Call,
            wrap: Wrap::OtelFollow,
            floor: Some("bare/tools_call"),
        },
        Row {
            name: "otel_meter/tools_call",
            call: Request::Call,
            wrap: Wrap::OtelMeter,
            floor: Some("bare/tools_call"),
        },
        Row {
            name: "otel_traced/tools_call",
            call: Request::Call,
            wrap: Wrap::OtelTraced,
            floor: Some("bare/tools_call"),
        },
    ]);
    rows
}

/// What a row's service needs kept alive (the SDK providers).
#[allow(dead_code)]
enum Keep {
    Nothing,
    #[cfg(feature = "opentelemetry")]
    Meter(opentelemetry_sdk::metrics::SdkMeterProvider),
    #[cfg(feature = "opentelemetry")]
    Tracer(opentelemetry_sdk::trace::SdkTracerProvider),
}

fn service(row: &Row) -> (BoxService, Keep) {
    let inner: BoxService = Arc::new(Noop {
        result: row.call.result(),
    });
    // Without OpenTelemetry the layer has nothing to follow; with the feature built but off
    // it checks the caller's context once per call.
    let config = MetricsConfig::new();
    #[cfg(feature = "opentelemetry")]
    let config = config.follow_current_context(false);
    let layered = |config: MetricsConfig| -> BoxService {
        Arc::new(
            Metrics::with_config(config)
                .layer("bench", "inproc")
                .layer(inner.clone()),
        )
    };
    match row.wrap {
        Wrap::Bare => (inner.clone(), Keep::Nothing),
        Wrap::Layer => (layered(config), Keep::Nothing),
        #[cfg(feature = "opentelemetry")]
        Wrap::OtelFollow => (layered(MetricsConfig::new()), Keep::Nothing),
        #[cfg(feature = "opentelemetry")]
        Wrap::OtelMeter => {
            use opentelemetry::metrics::MeterProvider;
            let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
                .with_periodic_exporter(
                    opentelemetry_sdk::metrics::InMemoryMetricExporter::default(),
                )
                .build();
            let service = layered(config.with_meter(provider.meter("bench")));
            (service, Keep::Meter(provider))
        }
        #[cfg(feature = "opentelemetry")]
        Wrap::OtelTraced => {
            use opentelemetry::trace::TracerProvider;
            // Spans are made, sampled and ended, and exported nowhere.
            let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
            let service = layered(config.with_tracer(provider.tracer("bench")));
            (service, Keep::Tracer(provider))
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

async fn call(service: &BoxService, call: Request) {
    let result = service.call(call.operation()).await;
    black_box(result.is_ok());
}

/// Times `calls` sequential calls of `row` (after a warm-up); nanoseconds per call.
fn time_row(row: &Row, calls: u32) -> f64 {
    let (service, _keep) = service(row);
    runtime().block_on(async {
        for _ in 0..calls / 10 {
            call(&service, row.call).await;
        }
        let started = Instant::now();
        for _ in 0..calls {
            call(&service, row.call).await;
        }
        started.elapsed().as_nanos() as f64 / f64::from(calls)
    })
}

/// The row that records on an endpoint instead of making a call.
const ENDPOINT_ROW: &str = "endpoint/record_call";

fn endpoint() -> EndpointHandle {
    Metrics::new().server("bench").endpoint(EndpointInfo {
        url: "https://eu.example.com/mcp".into(),
        address: Some("eu.example.com".into()),
        port: Some(443),
        region: Some("eu-west-1".into()),
    })
}

/// The `i`th attempt of the endpoint row: latencies that vary a little, one in 16 a failure.
#[inline]
fn record_call(endpoint: &EndpointHandle, i: u64) {
    let latency = Duration::from_nanos(800_000 + (i & 0xff) * 1_000);
    endpoint.record_call(black_box(latency), black_box(i & 15 != 0));
}

/// Times `calls` records on one endpoint (after a warm-up); nanoseconds per record.
fn time_endpoint(calls: u32) -> f64 {
    let endpoint = endpoint();
    for i in 0..u64::from(calls / 10) {
        record_call(&endpoint, i);
    }
    let started = Instant::now();
    for i in 0..u64::from(calls) {
        record_call(&endpoint, i);
    }
    started.elapsed().as_nanos() as f64 / f64::from(calls)
}

fn criterion_rows(c: &mut Criterion) {
    let mut group = c.benchmark_group("layer_call");
    group.measurement_time(Duration::from_secs(2));
    let runtime = runtime();
    for row in rows() {
        let (service, _keep) = service(&row);
        group.bench_function(row.name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iters {
                        call(&service, row.call).await;
                    }
                    started.elapsed()
                })
            })
        });
    }
    let endpoint = endpoint();
    let mut i = 0u64;
    group.bench_function(ENDPOINT_ROW, |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            record_call(&endpoint, i);
        })
    });
    group.finish();
}

/// The plain-loop summary: every row, and each layered row's overhead over its bare row.
fn summary() {
    let calls: u32 = std::env::var("LAYER_CALL_SUMMARY_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let median = |row: &Row| {
        let mut runs: Vec<f64> = (0..5).map(|_| time_row(row, calls)).collect();
        runs.sort_by(f64::total_cmp);
        runs[runs.len() / 2]
    };
    let mut measured: Vec<(&str, f64)> = Vec::new();
    for row in rows() {
        let ns = median(&row);
        match row
            .floor
            .and_then(|f| measured.iter().find(|(name, _)| *name == f))
        {
            Some(&(floor_name, floor)) => {
                // The target is the layer's own; exporters cost what their SDK costs.
                let target = if row.wrap == Wrap::Layer {
                    " (target < 100 ns)"
                } else {
                    ""
                };
                println!(
                    "layer_call: {} {ns:.1} ns/call, overhead {:.1} ns over {floor_name}{target}",
                    row.name,
                    ns - floor
                );
            }
            None => println!("layer_call: {} {ns:.1} ns/call (the floor)", row.name),
        }
        measured.push((row.name, ns));
    }
    let mut runs: Vec<f64> = (0..5).map(|_| time_endpoint(calls)).collect();
    runs.sort_by(f64::total_cmp);
    println!(
        "layer_call: {ENDPOINT_ROW} {:.1} ns/call (target < 50 ns)",
        runs[runs.len() / 2]
    );
}

/// `LAYER_CALL_COUNT=<row>:<calls>`: only that many calls of that row (for callgrind or perf).
fn count_only(spec: &str) {
    let (name, calls) = spec
        .split_once(':')
        .unwrap_or_else(|| panic!("LAYER_CALL_COUNT is <row>:<calls>, not {spec:?}"));
    if name == ENDPOINT_ROW {
        let calls: u64 = calls.parse().expect("a number of calls");
        let endpoint = endpoint();
        for i in 0..calls {
            record_call(&endpoint, i);
        }
        return;
    }
    let row = rows()
        .into_iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name:?}"));
    let calls: u64 = calls.parse().expect("a number of calls");
    let (service, _keep) = service(&row);
    runtime().block_on(async {
        for _ in 0..calls {
            call(&service, row.call).await;
        }
    });
}

fn main() {
    if let Ok(spec) = std::env::var("LAYER_CALL_COUNT") {
        count_only(&spec);
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    criterion_rows(&mut criterion);
    criterion.final_summary();
    if std::env::var("LAYER_CALL_SUMMARY").as_deref() != Ok("0") {
        summary();
    }
}
