//! `routing`: what routing across endpoints costs a call.
//!
//! Rows:
//! - `decision/choose_3`: the routing decision itself ([`RoutingPolicy::choose`]) over three
//!   endpoints with latencies — what the router runs after every probe round and on every
//!   reason to move (never per call).
//! - `call/single` and `call/routed_3`: one `call_tool` through the facade's full stack
//!   (enterprise profile: metrics, timeout, retry, breaker, gate) to an in-process server
//!   reached by URL, for a server with one URL and for a server with three endpoints — the
//!   same servers, called alternately in the same loops. Their difference is what routing adds
//!   per call (the routed gate: the endpoint's down flag, the calls in flight, the active-endpoint
//!   check, the endpoint's breaker and its call record); target < 100 ns.
//!
//! ```text
//! cargo bench -p mcp-client --features enterprise --bench routing
//! ```
//!
//! After the criterion group it times plain loops and prints one line per row:
//! `routing: <row> … ns`.
//!
//! Instruction counts (stable where times are not): with `ROUTING_CALL_COUNT=<row>:<calls>`
//! the bench makes only that many calls of that row and exits, e.g.
//!
//! ```text
//! BIN=$(ls -t target/release/deps/routing-* | grep -v '\.d$' | head -1)
//! for n in 1000 11000; do
//!   ROUTING_CALL_COUNT=routed:$n valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n $BIN
//! done
//! ```
//!
//! and the difference of the two totals over 10 000 calls is the per-call count.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use mcp_client::config::{ClientConfig, EndpointConfig, ServerConfig, TransportConfig};
use mcp_client::{McpClient, RouteCandidate, RoutingPolicy};
use mcp_client::{TransportFactory, TransportSpec};
use mcp_core::{Error, TransportConnector};
use mcp_transport_local::{LocalServer, LocalTool, RequestContext};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to echo.
    text: String,
}

fn server() -> LocalServer {
    LocalServer::builder("bench", "1.0.0")
        .tool(
            LocalTool::new("echo", |_ctx: RequestContext, args: EchoArgs| async move {
                args.text
            })
            .read_only(),
        )
        .build()
        .expect("a valid server")
}

/// In-process servers reached by URL: `bench://hN/mcp` is server N.
struct ByUrl(Vec<LocalServer>);

impl TransportFactory for ByUrl {
    fn kinds(&self) -> &'static [&'static str] {
        &["bench"]
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["bench"]
    }

    fn connector(&self, spec: &TransportSpec) -> Result<Arc<dyn TransportConnector>, Error> {
        let Some(url) = spec.transport.url() else {
            return Err(Error::protocol("a bench server has a URL"));
        };
        let index: usize = url
            .trim_start_matches("bench://h")
            .trim_end_matches("/mcp")
            .parse()
            .map_err(|_| Error::protocol(format!("no bench server at {url}")))?;
        self.0
            .get(index)
            .map(LocalServer::connector)
            .ok_or_else(|| Error::protocol(format!("no bench server at {url}")))
    }
}

fn url(index: usize) -> String {
    format!("bench://h{index}/mcp")
}

/// A client with `single` (one URL) and `routed` (three endpoints, one region).
async fn client() -> McpClient {
    let single = ServerConfig::new(
        "single",
        TransportConfig::Url {
            url: url(0),
            headers: BTreeMap::new(),
        },
    );
    let mut routed = ServerConfig::new(
        "routed",
        TransportConfig::Url {
            url: url(1),
            headers: BTreeMap::new(),
        },
    );
    routed.endpoints = (1..=3)
        .map(|i| EndpointConfig {
            url: url(i),
            region: Some("eu-west".into()),
            headers: BTreeMap::new(),
        })
        .collect();
    let client = McpClient::builder(ClientConfig {
        servers: vec![single, routed],
        source: None,
        region: Some("eu-west".into()),
        store: None,
    })
    .transport(Arc::new(ByUrl((0..4).map(|_| server()).collect())))
    .start()
    .await;
    for report in client.servers() {
        assert!(report.status.is_ready(), "{report:?}");
    }
    client
}

fn candidates() -> [RouteCandidate; 3] {
    let ms = |n| Some(Duration::from_millis(n));
    [
        RouteCandidate {
            usable: true,
            settled: true,
            local: true,
            latency: ms(40),
        },
        RouteCandidate {
            usable: true,
            settled: true,
            local: true,
            latency: ms(35),
        },
        RouteCandidate {
            usable: true,
            settled: true,
            local: false,
            latency: ms(5),
        },
    ]
}

fn criterion_rows(c: &mut Criterion, runtime: &tokio::runtime::Runtime, client: &McpClient) {
    let mut group = c.benchmark_group("routing");
    let policy = RoutingPolicy::default();
    let candidates = candidates();
    group.bench_function("decision/choose_3", |b| {
        b.iter(|| black_box(policy.choose(black_box(&candidates), black_box(Some(0)))))
    });
    for (row, tool) in [
        ("call/single", "single__echo"),
        ("call/routed_3", "routed__echo"),
    ] {
        group.bench_function(row, |b| {
            b.iter(|| {
                runtime
                    .block_on(client.call_tool(tool, Some(json!({"text": "hi"}))))
                    .expect("echo answers")
            })
        });
    }
    group.finish();
}

/// Ns per call of the two rows, run alternately in `rounds` rounds of `calls` calls each:
/// the median of each row, and the median of the per-round differences (paired, so a slow
/// moment of the machine weighs on both rows of its round).
fn interleaved(
    runtime: &tokio::runtime::Runtime,
    client: &McpClient,
    rounds: usize,
    calls: u32,
) -> [f64; 3] {
    let mut samples: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (slot, tool) in ["single__echo", "routed__echo"].into_iter().enumerate() {
            let started = Instant::now();
            runtime.block_on(async {
                for _ in 0..calls {
                    black_box(
                        client
                            .call_tool(tool, Some(json!({"text": "hi"})))
                            .await
                            .expect("echo answers"),
                    );
                }
            });
            samples[slot].push(started.elapsed().as_nanos() as f64 / f64::from(calls));
        }
    }
    let mut differences: Vec<f64> = samples[1]
        .iter()
        .zip(&samples[0])
        .map(|(routed, single)| routed - single)
        .collect();
    let median = |s: &mut Vec<f64>| {
        s.sort_by(f64::total_cmp);
        s[s.len() / 2]
    };
    let [mut single, mut routed] = samples;
    [
        median(&mut single),
        median(&mut routed),
        median(&mut differences),
    ]
}

fn summary(runtime: &tokio::runtime::Runtime, client: &McpClient) {
    let policy = RoutingPolicy::default();
    let candidates = candidates();
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let iterations = 2_000_000u32;
            let started = Instant::now();
            for i in 0..iterations {
                black_box(policy.choose(black_box(&candidates), black_box(Some((i % 3) as usize))));
            }
            started.elapsed().as_nanos() as f64 / f64::from(iterations)
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    println!(
        "routing: decision/choose_3 {:.1} ns/decision (not per call: after probe rounds and moves)",
        runs[runs.len() / 2]
    );
    let [single, routed, added] = interleaved(runtime, client, 21, 5_000);
    println!("routing: call/single {single:.0} ns/call (full stack, in-process server by URL)");
    println!(
        "routing: call/routed_3 {routed:.0} ns/call, routing adds {added:.0} ns per call \
         (median of 21 paired rounds; target < 100 ns)"
    );
}

/// `ROUTING_CALL_COUNT=<single|routed>:<calls>`: only that many calls of that row, then exit —
/// for instruction counts (`valgrind --tool=callgrind`; the difference of two runs with
/// different counts, over the difference of the counts, is the per-call count).
fn count_only(runtime: &tokio::runtime::Runtime) -> bool {
    let Ok(spec) = std::env::var("ROUTING_CALL_COUNT") else {
        return false;
    };
    let (row, calls) = spec
        .split_once(':')
        .expect("ROUTING_CALL_COUNT=<single|routed>:<calls>");
    let tool = match row {
        "single" => "single__echo",
        "routed" => "routed__echo",
        other => panic!("no row {other:?} (single or routed)"),
    };
    let calls: u32 = calls.parse().expect("a number of calls");
    runtime.block_on(async {
        let client = client().await;
        for _ in 0..calls {
            black_box(
                client
                    .call_tool(tool, Some(json!({"text": "hi"})))
                    .await
                    .expect("echo answers"),
            );
        }
        client.shutdown().await;
    });
    true
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if count_only(&runtime) {
        return;
    }
    let client = runtime.block_on(client());
    let mut criterion = Criterion::default().configure_from_args();
    criterion_rows(&mut criterion, &runtime, &client);
    criterion.final_summary();
    summary(&runtime, &client);
    runtime.block_on(client.shutdown());
}
