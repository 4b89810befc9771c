//! The timing loops, shared by every client so that each is measured the same way.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::args::{ClientArgs, Mode};
use crate::usage::{process_usage, ServerUsage};

/// What one client run measured; printed as one JSON line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// `ours`, `rmcp` or `floor`.
    pub client: String,
    /// Measured calls.
    pub calls: usize,
    /// Calls in flight.
    pub inflight: usize,
    /// Median per-call latency, µs (latency mode; in throughput mode, of the batch mean).
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// Calls per second over the measured phase.
    pub calls_per_sec: f64,
    /// User + system CPU of the client process per measured call, µs.
    pub cpu_us_per_call: f64,
    /// Peak resident set size of the client process, KiB.
    pub max_rss_kib: u64,
    /// CPU (user + sys) per measured call of the server process the client started (a
    /// gateway, or the server itself when direct), µs, from `/proc`; `None` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_call: Option<f64>,
    /// CPU per measured call of the server's own children (the server a gateway fronts), µs;
    /// `None` when it has none or it is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_cpu_us_per_call: Option<f64>,
    /// Peak resident set (`VmHWM`) of the server process the client started, KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_max_rss_kib: Option<u64>,
}

impl Measurement {
    /// Prints the JSON line.
    pub fn print(&self) {
        println!(
            "{}",
            serde_json::to_string(self).expect("a measurement serializes")
        );
    }
}

/// Makes `calls` calls with `inflight` of them in flight (local tasks on the caller's
/// current-thread runtime); the latency of each.
async fn in_flight<F, Fut>(inflight: usize, calls: usize, call: F) -> Result<Vec<Duration>, String>
where
    F: Fn() -> Fut + Clone + 'static,
    Fut: Future<Output = Result<(), String>> + 'static,
{
    let remaining = Rc::new(Cell::new(calls));
    let local = tokio::task::LocalSet::new();
    let mut workers = Vec::new();
    for _ in 0..inflight {
        let call = call.clone();
        let remaining = remaining.clone();
        workers.push(local.spawn_local(async move {
            let mut mine = Vec::new();
            while remaining.get() > 0 {
                remaining.set(remaining.get() - 1);
                let t = Instant::now();
                call().await?;
                mine.push(t.elapsed());
            }
            Ok::<_, String>(mine)
        }));
    }
    let results = local
        .run_until(async move {
            let mut all = Vec::new();
            for w in workers {
                all.push(w.await.map_err(|e| e.to_string())?);
            }
            Ok::<_, String>(all)
        })
        .await?;
    let mut latencies = Vec::with_capacity(calls);
    for r in results {
        latencies.extend(r?);
    }
    Ok(latencies)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

/// Runs the warm-up and the measured phase of `args` with `call` (one tool call, which must
/// check its result and return `Err` on anything unexpected), on the current-thread runtime
/// the caller is in (throughput mode spawns `inflight` local tasks).
///
/// The warm-up has the measured phase's shape: in throughput mode it keeps `inflight` calls in
/// flight too (and makes at least `inflight` calls, unless there is no warm-up), so that a
/// client which opens a connection per call in flight (HTTP/1.1) has opened them before the
/// clock starts, and the figure is the steady state, not start-up.
pub async fn measure<F, Fut>(
    client: &str,
    args: &ClientArgs,
    call: F,
) -> Result<Measurement, String>
where
    F: Fn() -> Fut + Clone + 'static,
    Fut: Future<Output = Result<(), String>> + 'static,
{
    match args.mode {
        Mode::Latency => {
            for _ in 0..args.warmup {
                call().await?;
            }
        }
        Mode::Throughput if args.warmup > 0 => {
            // At least one call per worker, so that every connection is open.
            let calls = args.warmup.max(args.inflight);
            in_flight(args.inflight, calls, call.clone()).await?;
        }
        Mode::Throughput => {}
    }
    // Read before the client's own CPU and the clock start, so scanning /proc counts in neither.
    let server_before = ServerUsage::snapshot();
    let (cpu_before, _) = process_usage();
    let started = Instant::now();
    let mut latencies = Vec::new();
    match args.mode {
        Mode::Latency => {
            latencies.reserve(args.calls);
            for _ in 0..args.calls {
                let t = Instant::now();
                call().await?;
                latencies.push(t.elapsed());
            }
        }
        Mode::Throughput => {
            latencies = in_flight(args.inflight, args.calls, call).await?;
        }
    }
    let elapsed = started.elapsed();
    let (cpu_after, max_rss_kib) = process_usage();
    let server_after = ServerUsage::snapshot();
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / args.calls as f64;
    let server_cpu = server_before
        .as_ref()
        .zip(server_after.as_ref())
        .map(|(before, after)| after.since(before));
    latencies.sort_unstable();
    Ok(Measurement {
        client: client.to_owned(),
        calls: args.calls,
        inflight: if args.mode == Mode::Latency {
            1
        } else {
            args.inflight
        },
        p50_us: percentile(&latencies, 0.50),
        p99_us: percentile(&latencies, 0.99),
        calls_per_sec: args.calls as f64 / elapsed.as_secs_f64(),
        cpu_us_per_call: per_call(cpu_after - cpu_before),
        max_rss_kib,
        server_cpu_us_per_call: server_cpu.map(|cpu| per_call(cpu.server)),
        upstream_cpu_us_per_call: server_cpu.and_then(|cpu| cpu.upstream.map(per_call)),
        server_max_rss_kib: server_after.map(|usage| usage.children_max_rss_kib),
    })
}
