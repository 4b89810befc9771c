//! The policies and the pool around the transport's sessions: the resilience layers wrap a
//! session (retries within one deadline, the breaker opening), and a pool of sessions serves
//! concurrent calls.

use std::time::Duration;

use mcp_core::{ErrorKind, Layer, McpService, McpServiceExt, Operation, RequestOptions};
use mcp_resilience::{
    BreakerPolicy, CircuitBreakerLayer, RetryLayer, RetryPolicy, TimeoutLayer, TimeoutPolicy,
};
use mcp_session::ClientSession;
use serde_json::json;

use super::{handshake_connector, open, PROMPTLY};
use crate::peer::Peer;
use crate::slow_stats::slow_stats;

/// The resilience layers wrap the transport's session: calls go through; an idempotent call is
/// retried, every attempt reaching the server, all within the one deadline of the whole call;
/// and the breaker opens on a failing server.
pub async fn policies_wrap_the_transport(peer: &Peer) {
    let session = open(peer).await;
    retries_share_one_deadline(peer, &session).await;
    let breakers = CircuitBreakerLayer::new(
        BreakerPolicy::default()
            .with_failure_threshold(2)
            .with_open_for(Duration::from_secs(60)),
    );
    let stack = TimeoutLayer::new(
        TimeoutPolicy::default().with_tool_call_timeout(Duration::from_millis(400)),
    )
    .layer(
        RetryLayer::new(RetryPolicy::default().with_max_retries(2))
            .layer(breakers.layer(session.clone())),
    );
    let result = stack
        .call_tool(
            "echo",
            Some(json!({ "text": "stacked" })),
            RequestOptions::new(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: echo through the stack failed: {e}", peer.name));
    assert_eq!(result.text(), "stacked");
    // Not idempotent, so not retried: each timeout is one failure for the breaker.
    for _ in 0..2 {
        let error = tokio::time::timeout(
            PROMPTLY,
            stack.call_tool(
                "slow",
                Some(json!({ "duration_ms": 30_000, "steps": 0 })),
                RequestOptions::new(),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{}: the stack's deadline did not hold", peer.name))
        .expect_err("slower than the deadline");
        assert_eq!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);
    }
    let error = stack
        .call_tool(
            "echo",
            Some(json!({ "text": "refused" })),
            RequestOptions::new(),
        )
        .await
        .expect_err("the breaker is open");
    assert_eq!(
        error.kind(),
        ErrorKind::CircuitOpen,
        "{}: {error}",
        peer.name
    );
    session.close().await;
}

/// An idempotent call that times out attempt after attempt: the retry layer sends it again
/// (the server sees more than one attempt), and the outer deadline ends the whole call — not
/// each attempt's deadline, which alone would let the retries run far past [`PROMPTLY`].
async fn retries_share_one_deadline(peer: &Peer, session: &ClientSession) {
    const WHOLE_CALL: Duration = Duration::from_millis(1_500);
    const ATTEMPT: Duration = Duration::from_millis(300);
    // With one deadline per attempt only, 100 retries of 300 ms would take half a minute.
    let retry = RetryPolicy::fixed(Duration::from_millis(20), 100);
    let stack = TimeoutLayer::new(TimeoutPolicy::default().with_tool_call_timeout(WHOLE_CALL))
        .layer(
            RetryLayer::new(retry).layer(
                TimeoutLayer::new(TimeoutPolicy::default().with_tool_call_timeout(ATTEMPT))
                    .layer(session.clone()),
            ),
        );
    let before = slow_stats(peer, session).await;
    let call = Operation::call_tool("slow", Some(json!({ "duration_ms": 30_000, "steps": 0 })))
        .with_idempotent(true);
    let error = tokio::time::timeout(PROMPTLY, stack.call(call))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{}: the retries outlived the whole call's deadline of {WHOLE_CALL:?}",
                peer.name
            )
        })
        .expect_err("every attempt is slower than its deadline");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);
    let after = slow_stats(peer, session).await;
    assert!(
        after.started >= before.started + 2,
        "{}: the server saw {} attempt(s), not a retry",
        peer.name,
        after.started - before.started
    );
}

/// A pool of sessions over the transport serves concurrent calls.
pub async fn pool_serves_the_transport(peer: &Peer) {
    let pool = mcp_pool::SessionPool::new(
        handshake_connector(peer),
        mcp_pool::PoolConfig::new()
            .with_min_idle(1)
            .with_max_size(3)
            .with_connect_timeout(Duration::from_secs(10)),
    );
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..20 {
        let pool = pool.clone();
        calls.spawn(async move {
            let result = pool
                .call_tool(
                    "echo",
                    Some(json!({ "text": format!("pooled-{i}") })),
                    RequestOptions::new(),
                )
                .await;
            (i, result.map(|r| r.text()))
        });
    }
    while let Some(joined) = calls.join_next().await {
        let (i, answer) = joined.expect("the call task");
        let answer =
            answer.unwrap_or_else(|e| panic!("{}: pooled call {i} failed: {e}", peer.name));
        assert_eq!(answer, format!("pooled-{i}"), "{}", peer.name);
    }
    let stats = pool.stats();
    assert!(
        stats.connections >= 1 && stats.connections <= 3,
        "{}: {stats:?}",
        peer.name
    );
    tokio::time::timeout(PROMPTLY, pool.close())
        .await
        .unwrap_or_else(|_| panic!("{}: closing the pool is not bounded", peer.name));
}
