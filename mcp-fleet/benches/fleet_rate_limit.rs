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
use std::time::Duration;

use async_trait::async_trait;
use criterion::Criterion;
use mcp_core::{Error, Layer, McpService, Operation, Payload};
use mcp_fleet::{Fleet, FleetSettings, StoreKeyMaterial};
use mcp_resilience::{RateLimitLayer, RateLimitPolicy};
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
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fleet_rate_limit: no tokio runtime: {e}");
            std::process::exit(1);
        }
    };
    let key = StoreKeyMaterial::from_bytes([9; 32]);
    let fleet = match Fleet::new(FleetSettings::new(redis.url(), key, "bench")) {
        Ok(fleet) => fleet,
        Err(e) => {
            eprintln!("fleet_rate_limit: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = runtime.block_on(fleet.ping()) {
        eprintln!("fleet_rate_limit: {e}");
        std::process::exit(1);
    }

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
    drop(redis);
}
