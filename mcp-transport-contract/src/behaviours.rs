//! The behaviours every transport must show, one async function each. Each opens its own
//! sessions through the peer's connector and closes them; each is bounded by [`LIMIT`] (the
//! [`contract_suite!`](crate::contract_suite) wrapper fails a behaviour that does not finish).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::jsonrpc::ErrorObject;
use mcp_core::types::{ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_core::{
    ErrorKind, Layer, McpService, McpServiceExt, Operation, RequestOptions, TransportReceiver,
    TransportSender,
};
use mcp_resilience::{
    BreakerPolicy, CircuitBreakerLayer, RetryLayer, RetryPolicy, TimeoutLayer, TimeoutPolicy,
};
use mcp_session::{
    ClientHandler, ClientSession, Connector, ServerNotification, SessionConnector, SessionOptions,
};
use serde_json::json;

use crate::peer::Peer;
use crate::slow_stats::{eventually_slow_stats, slow_stats};

/// The most any one behaviour may take, set-up and tear-down included.
pub const LIMIT: Duration = Duration::from_secs(60);
/// How long the suite waits for something that should happen at once (a failure after the peer
/// died, a notification, a cancellation reaching the server).
pub(crate) const PROMPTLY: Duration = Duration::from_secs(10);

/// The names of every behaviour, in the order [`contract_suite!`](crate::contract_suite)
/// registers them.
pub const ALL: &[&str] = &[
    "handshake",
    "calls_in_flight",
    "large_message",
    "message_over_the_cap",
    "cancellation_reaches_the_server",
    "progress",
    "notifications",
    "server_to_client_request",
    "deadline_holds_without_an_answer",
    "peer_dying_mid_call",
    "close_is_idempotent",
    "policies_wrap_the_transport",
    "pool_serves_the_transport",
];

/// The name the suite's handler gives when the server asks (elicitation).
pub const ELICITED_NAME: &str = "contract-suite";

/// Declares elicitation and accepts every form with [`ELICITED_NAME`].
#[derive(Debug, Default)]
struct ContractHandler;

#[async_trait]
impl ClientHandler for ContractHandler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let mut content = serde_json::Map::new();
        content.insert("name".into(), json!(ELICITED_NAME));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        })
    }
}

fn session_connector(peer: &Peer) -> SessionConnector {
    let options = SessionOptions {
        request_timeout: Duration::from_secs(20),
        ..SessionOptions::default()
    };
    SessionConnector::new(peer.connector.clone(), Arc::new(ContractHandler), options)
}

async fn open(peer: &Peer) -> ClientSession {
    session_connector(peer)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{}: connecting failed: {e}", peer.name))
}

async fn echo(session: &ClientSession, text: &str) -> Result<String, mcp_core::Error> {
    let result = session
        .call_tool("echo", Some(json!({ "text": text })), RequestOptions::new())
        .await?;
    Ok(result.text())
}

fn within(timeout: Duration) -> RequestOptions {
    RequestOptions::new().with_timeout(timeout)
}

/// Connects, sees the fixture's tools, calls one, closes.
pub async fn handshake(peer: &Peer) {
    let session = open(peer).await;
    assert!(
        !session.server_info().server_info.name.is_empty(),
        "{}: the server has no name",
        peer.name
    );
    let tools = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: tools/list failed: {e}", peer.name));
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for tool in [
        "echo",
        "slow",
        "slow_stats",
        "large",
        "crash",
        "ask_elicitation",
    ] {
        assert!(
            names.contains(&tool),
            "{}: no `{tool}` in {names:?}",
            peer.name
        );
    }
    assert_eq!(
        echo(&session, "hello").await.unwrap(),
        "hello",
        "{}",
        peer.name
    );
    session.close().await;
}

/// 100 calls in flight at once on one session: the server has more than one running at a time
/// (its own count says so), and each caller gets its own answer.
pub async fn calls_in_flight(peer: &Peer) {
    const CALLS: u64 = 100;
    let session = open(peer).await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..CALLS {
        let session = session.clone();
        calls.spawn(async move {
            // `slow` stays on the server a while, so calls that travel together overlap there;
            // a transport that sent them one at a time would show one running at most.
            let waited = session
                .call_tool(
                    "slow",
                    Some(json!({ "duration_ms": 300, "steps": 0 })),
                    RequestOptions::new(),
                )
                .await
                .map(|result| result.text());
            (i, waited, echo(&session, &format!("call-{i}")).await)
        });
    }
    let mut answered = 0;
    while let Some(joined) = calls.join_next().await {
        let (i, waited, answer) = joined.expect("the call task");
        let waited = waited.unwrap_or_else(|e| panic!("{}: slow call {i} failed: {e}", peer.name));
        assert_eq!(waited, "done after 0 steps", "{}", peer.name);
        let answer = answer.unwrap_or_else(|e| panic!("{}: call {i} failed: {e}", peer.name));
        assert_eq!(answer, format!("call-{i}"), "{}", peer.name);
        answered += 1;
    }
    assert_eq!(answered, CALLS);
    let stats = slow_stats(peer, &session).await;
    assert_eq!(stats.started, CALLS, "{}: {stats:?}", peer.name);
    assert!(
        stats.max_running > 1,
        "{}: the server never had two calls running at once: {stats:?}",
        peer.name
    );
    session.close().await;
}

/// An 8 MiB answer arrives whole.
pub async fn large_message(peer: &Peer) {
    const BYTES: usize = 8 * 1024 * 1024;
    assert!(
        peer.message_cap > BYTES + 4096,
        "{}: the cap is too small for 8 MiB",
        peer.name
    );
    let session = open(peer).await;
    let result = session
        .call_tool(
            "large",
            Some(json!({ "bytes": BYTES })),
            within(Duration::from_secs(30)),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: 8 MiB failed: {e}", peer.name));
    let text = result.text();
    assert_eq!(text.len(), BYTES, "{}", peer.name);
    assert!(text.bytes().all(|b| b == b'x'), "{}", peer.name);
    session.close().await;
}

/// An answer over the connector's cap is an error (never a hang, never a partial answer), and
/// the session then either goes on or has ended cleanly.
pub async fn message_over_the_cap(peer: &Peer) {
    let session = open(peer).await;
    let bytes = peer.message_cap + 1024;
    let outcome = session
        .call_tool(
            "large",
            Some(json!({ "bytes": bytes })),
            within(Duration::from_secs(30)),
        )
        .await;
    let error = match outcome {
        Ok(result) => panic!(
            "{}: an answer of {} bytes passed a cap of {}",
            peer.name,
            result.text().len(),
            peer.message_cap
        ),
        Err(e) => e,
    };
    assert_ne!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);
    // Either the connection survived the refused message, or it failed and says so at once.
    match tokio::time::timeout(PROMPTLY, echo(&session, "after")).await {
        Ok(Ok(text)) => assert_eq!(text, "after", "{}", peer.name),
        Ok(Err(e)) => assert!(
            session.is_closed() || e.kind() != ErrorKind::Timeout,
            "{}: {e}",
            peer.name
        ),
        Err(_) => panic!(
            "{}: the session hangs after a message over the cap",
            peer.name
        ),
    }
    session.close().await;
}

/// A call the caller gives up on (its deadline) is cancelled on the server, and the session goes
/// on.
pub async fn cancellation_reaches_the_server(peer: &Peer) {
    let session = open(peer).await;
    let before = peer.cancellations_seen();
    let error = session
        .call_tool(
            "slow",
            Some(json!({ "duration_ms": 30_000, "steps": 0 })),
            within(Duration::from_millis(300)),
        )
        .await
        .expect_err("a 30 s call under a 300 ms deadline");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);
    let what = format!("{}: the server hearing of the cancellation", peer.name);
    mcp_testkit::wait::until(&what, PROMPTLY, || peer.cancellations_seen() > before).await;
    assert_eq!(echo(&session, "still here").await.unwrap(), "still here");
    session.close().await;
}

/// Progress notifications reach the caller, in order, before the result.
pub async fn progress(peer: &Peer) {
    let session = open(peer).await;
    // Recorded, not asserted, in the callback: a panic there would hit whichever task delivers
    // progress, not this test.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| {
        record
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p.progress);
    });
    session
        .call_tool(
            "slow",
            Some(json!({ "duration_ms": 300, "steps": 3 })),
            options,
        )
        .await
        .unwrap_or_else(|e| panic!("{}: slow failed: {e}", peer.name));
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(
        seen,
        [1.0, 2.0, 3.0],
        "{}: the progress notifications before the result",
        peer.name
    );
    session.close().await;
}

/// A notification the server sends reaches subscribers.
pub async fn notifications(peer: &Peer) {
    let session = open(peer).await;
    let mut stream = session.subscribe();
    session
        .call_tool(
            "trigger_list_changed",
            Some(json!({})),
            RequestOptions::new(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: trigger_list_changed failed: {e}", peer.name));
    let arrived = tokio::time::timeout(PROMPTLY, async {
        while let Some(notification) = stream.next().await {
            if matches!(notification, ServerNotification::ToolListChanged) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(arrived, Ok(true), "{}: no tools/list_changed", peer.name);
    session.close().await;
}

/// The server asks the client (elicitation) in the middle of a call; the handler's answer
/// reaches it.
pub async fn server_to_client_request(peer: &Peer) {
    let session = open(peer).await;
    let result = session
        .call_tool(
            "ask_elicitation",
            Some(json!({ "message": "who are you?" })),
            RequestOptions::new(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: ask_elicitation failed: {e}", peer.name));
    let text = result.text();
    assert!(text.contains(ELICITED_NAME), "{}: {text}", peer.name);
    session.close().await;
}

/// A call the server does not answer in time (a 60 s `slow` under a 500 ms deadline) fails with
/// `Timeout` at its deadline, not at the server's leisure. The server is alive and reading all
/// along: a peer that stops reading altogether is not something every fixture behind the suite
/// can be made to do.
pub async fn deadline_holds_without_an_answer(peer: &Peer) {
    let session = open(peer).await;
    let call = session.call_tool(
        "slow",
        Some(json!({ "duration_ms": 60_000, "steps": 0 })),
        within(Duration::from_millis(500)),
    );
    let outcome = tokio::time::timeout(PROMPTLY, call).await;
    let error = outcome
        .unwrap_or_else(|_| panic!("{}: a 500 ms deadline did not hold", peer.name))
        .expect_err("no answer within the deadline");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);
    session.close().await;
}

/// When the peer dies, the calls in flight fail at once (not at their deadline).
pub async fn peer_dying_mid_call(peer: &Peer) {
    let session = open(peer).await;
    let pending = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool(
                    "slow",
                    Some(json!({ "duration_ms": 30_000, "steps": 0 })),
                    within(Duration::from_secs(30)),
                )
                .await
        })
    };
    eventually_slow_stats("the slow call reaching the server", peer, &session, |s| {
        s.running >= 1
    })
    .await;
    // The crash request never gets an answer: the server dies handling it.
    let crash = session
        .call_tool("crash", Some(json!({})), within(Duration::from_secs(30)))
        .await;
    assert!(crash.is_err(), "{}: crash answered", peer.name);
    let outcome = tokio::time::timeout(PROMPTLY, pending)
        .await
        .unwrap_or_else(|_| panic!("{}: a call outlived its dead peer", peer.name))
        .expect("the call task");
    let error = outcome.expect_err("the peer died");
    assert_ne!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);
    session.close().await;
}

/// `close` twice is fine; afterwards calls fail at once; a bare connection closes cleanly.
pub async fn close_is_idempotent(peer: &Peer) {
    let session = open(peer).await;
    assert_eq!(echo(&session, "once").await.unwrap(), "once");
    session.close().await;
    session.close().await;
    assert!(session.is_closed(), "{}", peer.name);
    let error = tokio::time::timeout(PROMPTLY, echo(&session, "after close"))
        .await
        .unwrap_or_else(|_| panic!("{}: a call after close hangs", peer.name))
        .expect_err("closed");
    assert_ne!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);

    // The transport itself: two closes, then the receiver ends.
    let transport = peer
        .connector
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{}: connecting failed: {e}", peer.name));
    let (sender, mut receiver) = mcp_core::Transport::split(transport);
    tokio::time::timeout(PROMPTLY, sender.close())
        .await
        .unwrap_or_else(|_| panic!("{}: close is not bounded", peer.name))
        .unwrap_or_else(|e| panic!("{}: close failed: {e}", peer.name));
    tokio::time::timeout(PROMPTLY, sender.close())
        .await
        .unwrap_or_else(|_| panic!("{}: a second close is not bounded", peer.name))
        .unwrap_or_else(|e| panic!("{}: a second close failed: {e}", peer.name));
    // The receiver ends cleanly (`None`): closing is not a failure, so no error may come.
    tokio::time::timeout(PROMPTLY, async {
        loop {
            match receiver.receive().await {
                None => return,
                Some(Ok(_)) => continue,
                Some(Err(e)) => panic!(
                    "{}: the receiver failed after close instead of ending cleanly: {e}",
                    peer.name
                ),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{}: the receiver did not end after close", peer.name));
    assert!(
        sender
            .send(mcp_core::Message::Notification(
                mcp_core::Notification::new("notifications/initialized", None,)
            ))
            .await
            .is_err(),
        "{}: sending after close succeeded",
        peer.name
    );
}

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
        session_connector(peer),
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
