//! How calls and connections end: a call given up on is cancelled on the server, a deadline
//! holds without an answer, the peer dying fails what is in flight at once, and closing is
//! idempotent, bounded and leaves nothing running.

use std::time::Duration;

use mcp_core::{
    ErrorKind, McpServiceExt, Message, Request, RequestId, Transport, TransportErrorKind,
    TransportReceiver, TransportSender,
};
use serde_json::json;

use super::{echo, open, within, PROMPTLY};
use crate::peer::Peer;
use crate::slow_stats::eventually_slow_stats;

/// A call the caller gives up on (its deadline) is cancelled on the server — the server hears
/// of it, naming the call it ran — and the session goes on.
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
    if let Some(before) = before {
        let what = format!("{}: the server hearing of the cancellation", peer.name);
        mcp_testkit::wait::until(&what, PROMPTLY, || {
            peer.cancellations_seen().unwrap_or_default() > before
        })
        .await;
    }
    assert_eq!(echo(&session, "still here").await.unwrap(), "still here");
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

/// When the peer dies, the calls in flight fail at once (not at their deadline) as network
/// failures, and later calls fail the same way. (Whether the session is then closed is the
/// transport's: a connection is lost with its peer, Streamable HTTP has none to lose.)
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
    let crash = tokio::time::timeout(
        PROMPTLY,
        session.call_tool("crash", Some(json!({})), within(Duration::from_secs(30))),
    )
    .await
    .unwrap_or_else(|_| panic!("{}: the crash call outlived its dead peer", peer.name))
    .expect_err("the server dies instead of answering");
    assert_eq!(crash.kind(), ErrorKind::Network, "{}: {crash}", peer.name);
    let outcome = tokio::time::timeout(PROMPTLY, pending)
        .await
        .unwrap_or_else(|_| panic!("{}: a call outlived its dead peer", peer.name))
        .expect("the call task");
    let error = outcome.expect_err("the peer died");
    assert_eq!(error.kind(), ErrorKind::Network, "{}: {error}", peer.name);
    let later = tokio::time::timeout(PROMPTLY, echo(&session, "after the crash"))
        .await
        .unwrap_or_else(|_| panic!("{}: a call after the crash hangs", peer.name))
        .expect_err("the peer is gone");
    assert_eq!(later.kind(), ErrorKind::Network, "{}: {later}", peer.name);
    session.close().await;
}

/// The transport closed: three closes at once and a fourth all return, the receiver ends
/// cleanly (and stays ended), sending after close is refused as never sent, and every task
/// the connection started has ended. The session: `close` twice is fine, and afterwards calls
/// fail at once.
pub async fn close_is_idempotent(peer: &Peer) {
    let runtime = tokio::runtime::Handle::current();
    let baseline = runtime.metrics().num_alive_tasks();
    let transport = peer
        .connector
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{}: connecting failed: {e}", peer.name));
    let (sender, mut receiver) = Transport::split(transport);
    // The handshake's first request (refused by a modern server: an answer all the same).
    sender
        .send(Message::Request(initialize(1)))
        .await
        .unwrap_or_else(|e| panic!("{}: sending initialize failed: {e}", peer.name));
    match tokio::time::timeout(PROMPTLY, receiver.receive()).await {
        Ok(Some(Ok(Message::Response(answer)))) => {
            assert_eq!(answer.id, Some(RequestId::Number(1)), "{}", peer.name)
        }
        other => panic!("{}: the answer to initialize: {other:?}", peer.name),
    }
    let (a, b, c) = tokio::time::timeout(PROMPTLY, async {
        tokio::join!(sender.close(), sender.close(), sender.close())
    })
    .await
    .unwrap_or_else(|_| panic!("{}: three closes at once are not bounded", peer.name));
    for closed in [a, b, c] {
        closed.unwrap_or_else(|e| panic!("{}: close failed: {e}", peer.name));
    }
    tokio::time::timeout(PROMPTLY, sender.close())
        .await
        .unwrap_or_else(|_| panic!("{}: a fourth close is not bounded", peer.name))
        .unwrap_or_else(|e| panic!("{}: a fourth close failed: {e}", peer.name));
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
        receiver.receive().await.is_none(),
        "{}: the receiver came back",
        peer.name
    );
    let refused = sender
        .send(Message::Request(initialize(2)))
        .await
        .expect_err("sending after close");
    assert_eq!(
        refused.kind(),
        TransportErrorKind::Closed,
        "{}: {refused}",
        peer.name
    );
    assert!(
        !refused.may_have_been_delivered(),
        "{}: {refused}",
        peer.name
    );
    drop((sender, receiver));
    let what = format!("{}: every task of the connection ended", peer.name);
    mcp_testkit::wait::until(&what, PROMPTLY, || {
        let alive = runtime.metrics().num_alive_tasks();
        if alive == baseline {
            Ok(())
        } else {
            Err(format!("{alive} tasks alive, {baseline} before connecting"))
        }
    })
    .await;

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
}

/// A legacy `initialize` request (a modern server refuses it with an error answer).
fn initialize(id: i64) -> Request {
    let params = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "mcp-transport-contract", "version": "0"}
    });
    Request::new(id, "initialize", Some(mcp_core::Payload::Value(params)))
}
