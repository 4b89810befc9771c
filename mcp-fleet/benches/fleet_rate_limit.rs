//! `fleet_rate_limit`: what one rate-limit decision costs on Redis against the local limiter.
//!
//! Rows (sequential decisions on a current-thread runtime, each awaited before the next; a
//! policy so generous that every decision admits, so each row measures the decision alone):
//! - `local/layer`: `RateLimitLayer::new` (governor in this process) around a no-op service —
//!   the floor.
//! - `redis/try_take`: `RedisPermits::try_take` alone: one `EVALSHA` of the GCRA script on a
//!   local redis-server (started by the bench on a free loopback port).
//! - `redis/layer`: `RateLimitLayer::shared` with those permits around the same no-op service.
//!
//! ```text
//! cargo bench -p mcp-fleet --bench fleet_rate_limit
//! ```
//!
//! Needs `redis-server` (`cargo xtask interop-setup`).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::Criterion;
use mcp_core::{Error, Layer, McpService, Operation, Payload};
use mcp_fleet::{Fleet, FleetSettings, StoreKeyMaterial};
use mcp_resilience::{RateLimitLayer, RateLimitPolicy, SharedPermits};
use mcp_testkit::redis::RedisServer;

/// Answers at once.
struct Noop;

#[async_trait]
impl McpService for Noop {
    async fn call(&self, _: Operation) -> Result<Payload, Error> {
        Ok(Payload::Value(serde_json::Value::Null))
    }
}

fn main() {
    let redis = match RedisServer::start() {
        Ok(redis) => redis,
        Err(e) => {
            eprintln!("fleet_rate_limit: {e}");
            std::process::exit(1);
        }
    };
    // The server is stopped (dropped) on every way out, before the exit code is set.
    let outcome = run(&redis);
    drop(redis);
    if let Err(e) = outcome {
        eprintln!("fleet_rate_limit: {e}");
        std::process::exit(1);
    }
}

fn run(redis: &RedisServer) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no tokio runtime: {e}"))?;
    let key = StoreKeyMaterial::from_bytes([9; 32]);
    let fleet =
        Fleet::new(FleetSettings::new(redis.url(), key, "bench")).map_err(|e| e.to_string())?;
    runtime.block_on(fleet.ping()).map_err(|e| e.to_string())?;

    let generous = NonZeroU32::MAX;
    let policy = RateLimitPolicy::per_second(generous).with_burst(generous);
    let permits = fleet.permits("bench");
    let local = RateLimitLayer::new(policy).layer(Noop);
    let shared = RateLimitLayer::shared(policy, Arc::clone(&permits)).layer(Noop);
    let operation = || Operation::new("ping", None);

    let mut criterion = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut group = criterion.benchmark_group("fleet_rate_limit");
    group.bench_function("local/layer", |b| {
        b.to_async(&runtime)
            .iter(|| async { local.call(operation()).await.map(|_| ()) })
    });
    group.bench_function("redis/try_take", |b| {
        b.to_async(&runtime)
            .iter(|| async { permits.try_take(&policy).await })
    });
    group.bench_function("redis/layer", |b| {
        b.to_async(&runtime)
            .iter(|| async { shared.call(operation()).await.map(|_| ()) })
    });
    group.finish();
    criterion.final_summary();
    summary(&runtime, &local, &shared, &permits, &policy);
    Ok(())
}

/// The rows `cargo xtask bench` appends to its report: per row the median of 5 loops of
/// sequential decisions, in ns per decision.
fn summary(
    runtime: &tokio::runtime::Runtime,
    local: &impl McpService,
    shared: &impl McpService,
    permits: &Arc<dyn SharedPermits>,
    policy: &RateLimitPolicy,
) {
    let local_ns = per_decision(runtime, 200_000, || async {
        let _ = local.call(Operation::new("ping", None)).await;
    });
    let take_ns = per_decision(runtime, 5_000, || async {
        let _ = permits.try_take(policy).await;
    });
    let shared_ns = per_decision(runtime, 5_000, || async {
        let _ = shared.call(Operation::new("ping", None)).await;
    });
    println!(
        "fleet_rate_limit: local/layer {local_ns:.0} ns/decision (governor in this process: the floor)"
    );
    println!(
        "fleet_rate_limit: redis/try_take {take_ns:.0} ns/decision (one GCRA script on a loopback \
         redis-server)"
    );
    println!(
        "fleet_rate_limit: redis/layer {shared_ns:.0} ns/decision (RateLimitLayer::shared around a \
         no-op service; {:.0}x the floor)",
        shared_ns / local_ns
    );
}

/// The median over 5 loops of `iterations` sequential `decide()`s, in ns per decision.
fn per_decision<F, Fut>(runtime: &tokio::runtime::Runtime, iterations: u32, decide: F) -> f64
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..iterations {
                    decide().await;
                }
                started.elapsed().as_nanos() as f64 / f64::from(iterations)
            })
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}
