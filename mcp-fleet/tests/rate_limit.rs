//! The fleet-wide rate limit on a real redis-server: four replicas with several callers each
//! stay within the one limit (and near it), and a Redis that goes away leaves each replica
//! its local limit, with one warning.

mod common;

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::{key, redis, settings, LogCapture};
use mcp_core::{Error, ErrorKind, Layer, McpService, Operation, Payload, RequestOptions};
use mcp_fleet::Fleet;
use mcp_resilience::{RateLimitLayer, RateLimitMode, RateLimitPolicy};
use serde_json::json;
use tokio::time::Instant;

/// Records when each call got through the limit.
#[derive(Default)]
struct Admitted {
    at: Mutex<Vec<Instant>>,
}

impl Admitted {
    fn before(&self, end: Instant) -> usize {
        self.at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|t| **t < end)
            .count()
    }

    fn count(&self) -> usize {
        self.at.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[async_trait]
impl McpService for Admitted {
    async fn call(&self, _: Operation) -> Result<Payload, Error> {
        self.at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Instant::now());
        Ok(Payload::Value(json!({})))
    }
}

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_replicas_together_stay_within_one_limit_and_near_it() {
    let redis = redis();
    let key = key();
    let policy = RateLimitPolicy::per_second(nz(50)).with_burst(nz(5));
    let admitted = Arc::new(Admitted::default());
    let run_for = Duration::from_secs(3);
    let replicas: Vec<Fleet> = (0..4)
        .map(|_| Fleet::new(settings(&redis.url(), &key, "mcph")).unwrap())
        .collect();
    // Connected before the clock starts (a replica's first connect is not the limit's cost).
    for fleet in &replicas {
        fleet.ping().await.unwrap();
    }

    let start = Instant::now();
    let end = start + run_for;
    let mut callers = Vec::new();
    for fleet in &replicas {
        let layer = RateLimitLayer::shared(policy, fleet.permits("github"));
        for _ in 0..4 {
            let service = layer.layer(admitted.clone());
            callers.push(tokio::spawn(async move {
                let mut errors = Vec::new();
                while Instant::now() < end {
                    let operation = Operation::call_tool("search", Some(json!({})))
                        .with_options(RequestOptions::new().with_deadline(end));
                    if let Err(e) = service.call(operation).await {
                        if e.kind() != ErrorKind::RateLimited {
                            errors.push(e.to_string());
                        }
                    }
                }
                errors
            }));
        }
    }
    for caller in callers {
        let errors = tokio::time::timeout(run_for + Duration::from_secs(10), caller)
            .await
            .expect("every caller stops at the end")
            .expect("a caller task");
        assert!(errors.is_empty(), "{errors:?}");
    }

    let allowed = 50.0 * run_for.as_secs_f64() + 5.0;
    let got = admitted.before(end) as f64;
    eprintln!("admitted {got} calls in {run_for:?}; the limit allows {allowed}");
    // A little over for the clocks (Redis's and ours start at slightly different moments).
    assert!(got <= allowed + 3.0, "admitted {got}, at most {allowed}");
    assert!(
        got >= 0.9 * allowed,
        "admitted {got}, too far under {allowed}"
    );
}

#[tokio::test]
async fn with_redis_gone_each_replica_keeps_its_local_limit_and_warns_once() {
    let mut redis = redis();
    let (logs, _guard) = LogCapture::start();
    let fleet = Fleet::new(settings(&redis.url(), &key(), "mcph")).unwrap();
    let policy = RateLimitPolicy::per_second(nz(50))
        .with_burst(nz(5))
        .with_mode(RateLimitMode::Reject);
    let admitted = Arc::new(Admitted::default());
    let service = RateLimitLayer::shared(policy, fleet.permits("github")).layer(admitted.clone());
    let call = || Operation::call_tool("search", Some(json!({})));
    let warning = "the fleet's rate limit is unreachable";

    // On Redis: the burst of 5, then rejections.
    for _ in 0..5 {
        service.call(call()).await.unwrap();
    }
    let refused = service.call(call()).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::RateLimited);
    assert!(
        refused
            .message()
            .contains("shared: Redis at redis://127.0.0.1:"),
        "{}",
        refused.message()
    );

    redis.kill().unwrap();
    // Locally: a fresh burst of 5 (the full rate: the local limiter was never used), then the
    // local limit rejects — every decision within the fleet's timeout.
    let started = Instant::now();
    let mut passed = 0;
    for _ in 0..8 {
        if service.call(call()).await.is_ok() {
            passed += 1;
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert!(
        (5..=6).contains(&passed),
        "{passed} admitted by the local limit"
    );
    assert_eq!(logs.count("WARN", warning), 1, "{}", logs.text());
    assert_eq!(admitted.count(), 5 + passed);

    redis.restart().unwrap();
    mcp_testkit::wait::until_async(
        "the fleet reaches Redis again",
        Duration::from_secs(5),
        || async { fleet.ping().await.is_ok() },
    )
    .await;
    // Redis is asked again a second after it last failed (decisions are local meanwhile).
    mcp_testkit::wait::until_async(
        "the limiter asks Redis again",
        Duration::from_secs(5),
        || async {
            let _ = service.call(call()).await;
            logs.count("INFO", "the fleet's rate limit answers again") == 1
        },
    )
    .await;
    assert_eq!(logs.count("WARN", warning), 1, "{}", logs.text());
}
