//! Streamable HTTP against the fixture server served over HTTP on 127.0.0.1: plain JSON
//! answers, the standalone GET stream, resumption after a dropped stream, session expiry (and a
//! caller giving up during the new handshake), DELETE on close, an unreachable server, calls in
//! flight ended by close, and detection falling back to HTTP+SSE. Calls, SSE answers with
//! their progress and both transports' sessions are the contract suite's
//! (`tests/contract.rs`).

use mcp_core::McpServiceExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::{ErrorKind, RequestOptions};
use mcp_session::{ClientSession, ServerNotification, SessionOptions};
use mcp_testkit::http::{serve_http, HttpFixture};
use mcp_testkit::options::{parse_args, CliCommand};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

async fn fixture(flags: &[&str]) -> HttpFixture {
    let options = match parse_args(flags.iter().map(|f| f.to_string())) {
        Ok(CliCommand::Run(options)) => options,
        _ => panic!("bad fixture flags {flags:?}"),
    };
    serve_http(options, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the fixture listens")
}

async fn connect(server: &HttpFixture) -> ClientSession {
    let transport =
        StreamableHttpTransport::new(HttpServerConfig::new(server.url())).expect("valid config");
    tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("connects in time")
    .expect("connects")
}

#[tokio::test]
async fn plain_json_answers_work_too() {
    let server = fixture(&["--http-json"]).await;
    let session = connect(&server).await;
    let r = session
        .call_tool("add", Some(json!({"a": 2, "b": 3})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"sum": 5})));
    session.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn server_initiated_messages_arrive_on_the_get_stream() {
    let server = fixture(&[]).await;
    let session = connect(&server).await;
    let mut notes = session.subscribe();
    session
        .subscribe_resource("fixture://counter", RequestOptions::new())
        .await
        .unwrap();
    // The GET stream opens after initialized; bump until its update is seen (bounded).
    let update = tokio::time::timeout(DEADLINE, async {
        loop {
            session
                .call_tool("bump_resource", None, RequestOptions::new())
                .await
                .unwrap();
            let got = tokio::time::timeout(Duration::from_millis(500), notes.next()).await;
            if let Ok(Some(ServerNotification::ResourceUpdated(p))) = got {
                break p;
            }
        }
    })
    .await
    .expect("a resource update arrives on the standalone stream");
    assert_eq!(update.uri, "fixture://counter");
    session.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_dropped_response_stream_is_resumed_with_last_event_id() {
    let server = fixture(&["--http-drop-sse-after", "1"]).await;
    let session = connect(&server).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| seen.lock().unwrap().push(p.progress)
    });
    let r = tokio::time::timeout(
        DEADLINE,
        session.call_tool(
            "slow",
            Some(json!({"duration_ms": 200, "steps": 4})),
            options,
        ),
    )
    .await
    .expect("answered after resumption")
    .unwrap();
    assert_eq!(r.text(), "done after 4 steps");
    assert_eq!(
        seen.lock().unwrap().last(),
        Some(&4.0),
        "no progress lost across the resumption"
    );
    session.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn an_expired_session_is_reinitialized_and_the_refused_request_replayed() {
    // The fixture forgets a session after 6 requests (initialize counts).
    let server = fixture(&["--http-expire-session-after", "6"]).await;
    let session = connect(&server).await;
    for i in 0..10 {
        let r = session
            .call_tool(
                "echo",
                Some(json!({"text": i.to_string()})),
                RequestOptions::new(),
            )
            .await;
        assert_eq!(r.expect("replayed on a new session").text(), i.to_string());
    }
    // Concurrent requests that all hit the expiry share one new handshake.
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let s = session.clone();
            tokio::spawn(async move {
                s.call_tool(
                    "echo",
                    Some(json!({"text": i.to_string()})),
                    RequestOptions::new(),
                )
                .await
            })
        })
        .collect();
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.await.unwrap().unwrap().text(), i.to_string());
    }
    session.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn close_ends_the_server_session_with_delete() {
    let server = fixture(&[]).await;
    let session = connect(&server).await;
    assert_eq!(server.session_count(), 1);
    session.close().await;
    mcp_testkit::wait::until("the session to be deleted", DEADLINE, || {
        server.session_count() == 0
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_server_fails_the_handshake_clearly() {
    let transport =
        StreamableHttpTransport::new(HttpServerConfig::new("http://127.0.0.1:9/mcp?key=s3cret"))
            .unwrap();
    let err = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert!(err.message().contains("127.0.0.1:9"), "{err}");
    assert!(
        !err.message().contains("s3cret"),
        "the query string is not shown: {err}"
    );
    assert!(StreamableHttpTransport::new(HttpServerConfig::new("ftp://x")).is_err());
}

#[tokio::test]
async fn auto_detection_falls_back_to_http_sse_and_remembers() {
    use mcp_transport_http::{HttpFlavor, HttpFlavorMemo, HttpTransport};
    let server = fixture(&[]).await;
    // Streamable endpoint: detected as Streamable HTTP.
    let memo = HttpFlavorMemo::default();
    let transport = HttpTransport::new(HttpServerConfig::new(server.url()), memo.clone()).unwrap();
    let session = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .expect("connects");
    assert_eq!(memo.get(), Some(HttpFlavor::Streamable));
    assert_eq!(
        session
            .call_tool("echo", Some(json!({"text": "a"})), RequestOptions::new())
            .await
            .unwrap()
            .text(),
        "a"
    );
    session.close().await;
    // The HTTP+SSE URL: the POST is refused, the GET yields the endpoint event.
    let memo = HttpFlavorMemo::default();
    let transport =
        HttpTransport::new(HttpServerConfig::new(server.sse_url()), memo.clone()).unwrap();
    let session = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .expect("falls back");
    assert_eq!(memo.get(), Some(HttpFlavor::HttpSse));
    assert_eq!(
        session
            .call_tool("echo", Some(json!({"text": "b"})), RequestOptions::new())
            .await
            .unwrap()
            .text(),
        "b"
    );
    session.close().await;
    // Remembered: the next connection goes straight to HTTP+SSE.
    let transport =
        HttpTransport::new(HttpServerConfig::new(server.sse_url()), memo.clone()).unwrap();
    let session = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .expect("connects");
    assert_eq!(
        session
            .call_tool("echo", Some(json!({"text": "c"})), RequestOptions::new())
            .await
            .unwrap()
            .text(),
        "c"
    );
    session.close().await;
    server.shutdown().await;
}

/// A call answered in place (read off its own POST in the caller's task) ends when the
/// session closes, and does not hold the close up.
#[tokio::test]
async fn closing_ends_a_call_in_flight_at_once() {
    for flags in [&[][..], &["--era", "modern"][..]] {
        let server = fixture(flags).await;
        let session = connect(&server).await;
        let running = Arc::new(tokio::sync::Notify::new());
        let call = tokio::spawn({
            let session = session.clone();
            let running = running.clone();
            async move {
                let options = RequestOptions::new()
                    .with_timeout(DEADLINE)
                    .on_progress(move |_| running.notify_one());
                session
                    .call_tool(
                        "slow",
                        Some(json!({"duration_ms": 15000, "steps": 1500})),
                        options,
                    )
                    .await
            }
        });
        // The call is running on the server: its first progress arrived.
        tokio::time::timeout(DEADLINE, running.notified())
            .await
            .expect("the call reports progress");
        let started = tokio::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(4), session.close())
            .await
            .expect("close does not wait for the call");
        let outcome = tokio::time::timeout(Duration::from_secs(2), call)
            .await
            .expect("the call ends with the session")
            .unwrap();
        let err = outcome.expect_err("no answer after close");
        assert_eq!(err.kind(), ErrorKind::Network, "{flags:?}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{flags:?}: took {:?}",
            started.elapsed()
        );
        server.shutdown().await;
    }
}

/// A caller that gives up while the new handshake after an expired session is under way does
/// not cut it short: the session gets its new id, and the next calls work.
#[tokio::test]
async fn a_caller_giving_up_during_the_new_handshake_leaves_a_working_session() {
    // Every answer takes 300 ms; the session is forgotten after 3 requests.
    let server = fixture(&["--http-expire-session-after", "3", "--http-delay-ms", "300"]).await;
    let session = connect(&server).await;
    let echo = |text: &str, timeout: Duration| {
        let session = session.clone();
        let text = text.to_owned();
        async move {
            session
                .call_tool(
                    "echo",
                    Some(json!({ "text": text })),
                    RequestOptions::new().with_timeout(timeout),
                )
                .await
        }
    };
    // Two calls (with initialize, the 3 requests the server keeps the session for), then one
    // that gives up while the new handshake runs: the refusal and the handshake together take
    // at least 600 ms, longer than its 450.
    for i in 0..2 {
        let r = echo(&i.to_string(), DEADLINE)
            .await
            .expect("before the expiry");
        assert_eq!(r.text(), i.to_string());
    }
    let err = echo("cut short", Duration::from_millis(450))
        .await
        .expect_err("the expiry outlasts the call");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let after = echo("after", DEADLINE)
        .await
        .expect("the session works again");
    assert_eq!(after.text(), "after");
    session.close().await;
    server.shutdown().await;
}
