//! Hostile WebSocket servers: each accepts the upgrade (subprotocol `mcp`), answers the
//! `initialize` handshake, then misbehaves on the call under test. For every case the call ends
//! with a clear, correctly classified error no later than its deadline, the client's memory
//! stays under the stated bound (counted by [`PeakAlloc`], deterministic), and the session is
//! left as the crate documents: a fatal transport error ends the connection (the session is
//! closed); a bad message, an unknown or duplicate answer leaves it open with nothing pending.
//!
//! The misbehaviour is written as raw frames on the TCP socket from a static buffer, so the
//! hostile server itself allocates next to nothing while the client is measured.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures_util::{SinkExt, StreamExt};
use mcp_core::{Era, Error, ErrorKind, Operation, Payload, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::peak_alloc::{one_case_at_a_time, Measure, PeakAlloc};
use mcp_transport_ws::WebSocketTransport;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc::new();

/// The client's `max_message_size` in these tests.
const CAP: usize = 1 << 20;
/// The deadline of the call under test.
const CALL_DEADLINE: Duration = Duration::from_secs(3);
/// What a hostile peer may make the client hold at once, on top of what it held before: a
/// message at the cap, tungstenite's read buffer, the inbound queue of parsed messages.
const BOUND: usize = 4 * CAP;

/// The frame opcodes written raw.
const TEXT: u8 = 0x1;
const CONTINUATION: u8 = 0x0;
const BINARY: u8 = 0x2;
const CLOSE: u8 = 0x8;

/// The head of an unmasked (server) frame of `len` bytes.
fn frame_head(opcode: u8, fin: bool, len: u64) -> Vec<u8> {
    let mut head = vec![if fin { 0x80 } else { 0 } | opcode];
    match len {
        0..=125 => head.push(len as u8),
        126..=0xFFFF => {
            head.push(126);
            head.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            head.push(127);
            head.extend_from_slice(&len.to_be_bytes());
        }
    }
    head
}

/// A whole unmasked frame.
fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = frame_head(opcode, true, payload.len() as u64);
    out.extend_from_slice(payload);
    out
}

/// 64 KiB of filler, written again and again without allocating.
static FILLER: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// The hostile server's side of one connection.
struct Peer {
    socket: WebSocketStream<TcpStream>,
}

impl Peer {
    /// The next JSON message from the client (pings are answered by tungstenite meanwhile).
    async fn next_message(&mut self) -> Option<Value> {
        while let Some(Ok(frame)) = self.socket.next().await {
            if let WsMessage::Text(text) = frame {
                return serde_json::from_str(text.as_str()).ok();
            }
        }
        None
    }

    /// Answers `initialize` and waits for `notifications/initialized`.
    async fn handshake(&mut self) -> Option<()> {
        let initialize = self.next_message().await?;
        let version = initialize["params"]["protocolVersion"].clone();
        let result = json!({
            "protocolVersion": version,
            "capabilities": {},
            "serverInfo": {"name": "hostile", "version": "0"},
        });
        self.send(json!({"jsonrpc": "2.0", "id": initialize["id"], "result": result}))
            .await;
        while self.next_message().await?["method"] != "notifications/initialized" {}
        Some(())
    }

    /// The next request from the client (its id and method).
    async fn next_request(&mut self) -> Option<Value> {
        loop {
            let message = self.next_message().await?;
            if message.get("method").is_some() && message.get("id").is_some() {
                return Some(message);
            }
        }
    }

    async fn send(&mut self, message: Value) {
        self.send_text(message.to_string()).await;
    }

    async fn send_text(&mut self, text: String) {
        let _ = self.socket.send(WsMessage::text(text)).await;
    }

    /// Writes bytes straight to the TCP socket (after anything tungstenite wrote).
    async fn raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.socket.get_mut().write_all(bytes).await
    }

    /// Writes filler until the client hangs up (an endless frame or message).
    async fn endless_filler(&mut self) {
        while self.raw(&FILLER).await.is_ok() {}
    }

    /// Writes `frames` (already encoded) `times` times.
    async fn repeat(&mut self, frames: &[u8], times: usize) -> std::io::Result<()> {
        for _ in 0..times {
            self.raw(frames).await?;
        }
        Ok(())
    }

    /// Keeps the connection open, answering pings, until the client goes away.
    async fn hold(mut self) {
        while let Some(Ok(_)) = self.socket.next().await {}
    }
}

/// A hostile server: every connection is upgraded and initialized, then `script` gets the peer
/// and the request under test.
async fn hostile<F, Fut>(script: F) -> RawServer
where
    F: Fn(Peer, Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let script = Arc::new(script);
    RawServer::start(Some("mcp"), move |socket| {
        let script = script.clone();
        async move {
            let mut peer = Peer { socket };
            if peer.handshake().await.is_none() {
                return;
            }
            if let Some(request) = peer.next_request().await {
                script(peer, request).await;
            }
        }
    })
    .await
}

async fn session_to(server: &RawServer) -> ClientSession {
    let options = SessionOptions {
        era: Some(Era::Legacy),
        request_timeout: CALL_DEADLINE,
        ..SessionOptions::default()
    };
    connect_with(config(&server.url()).max_message_size(CAP), (), options).await
}

/// What one measured call came to.
struct Measured {
    result: Result<Payload, Error>,
    elapsed: Duration,
    peak: usize,
    deadline: Duration,
}

impl Measured {
    fn error(&self) -> &Error {
        match &self.result {
            Ok(payload) => panic!("expected an error, got {payload:?}"),
            Err(e) => e,
        }
    }

    /// Asserts the error's kind and that its message says `says`; prints the case's figures.
    fn expect_error(&self, case: &str, kind: ErrorKind, says: &str) -> &Error {
        let e = self.error();
        println!(
            "case {case}: {:?} after {:?}, peak {} KiB: {}",
            e.kind(),
            self.elapsed,
            self.peak / 1024,
            e.message()
        );
        assert_eq!(e.kind(), kind, "{case}: {e}");
        assert!(e.message().contains(says), "{case}: {says:?} in {e}");
        assert!(
            !e.message().chars().any(|c| c.is_control()),
            "{case}: control characters in {e:?}"
        );
        self.within_bound(case);
        e
    }

    fn within_bound(&self, case: &str) {
        assert!(
            self.peak < BOUND,
            "{case}: the client held {} bytes at its peak, over the bound of {BOUND}",
            self.peak
        );
        // The session's own deadline ends every call; this only catches a hang.
        assert!(
            self.elapsed < self.deadline + DEADLINE,
            "{case}: {:?}",
            self.elapsed
        );
    }
}

/// Calls `method` on `session` with the call deadline, measuring the client's memory.
async fn measured_call(session: &ClientSession, method: &str) -> Measured {
    measured_call_within(session, method, CALL_DEADLINE).await
}

/// [`measured_call`] with another deadline (a flood takes a while to read on a busy machine).
async fn measured_call_within(
    session: &ClientSession,
    method: &str,
    deadline: Duration,
) -> Measured {
    let measure = Measure::start(&ALLOC);
    let started = Instant::now();
    let operation = Operation::new(method.to_owned(), None)
        .with_options(RequestOptions::new().with_timeout(deadline));
    let result = tokio::time::timeout(
        deadline + DEADLINE,
        mcp_core::McpService::call(session, operation),
    )
    .await
    .unwrap_or_else(|_| panic!("{method} outlived its deadline"));
    Measured {
        result,
        elapsed: started.elapsed(),
        peak: measure.peak(),
        deadline,
    }
}

/// The session ended because of the connection's failure, as documented for fatal errors.
async fn assert_session_ended(session: &ClientSession) {
    let reason = within("the session ends", session.closed()).await;
    assert!(session.is_closed(), "{reason}");
    assert_eq!(session.pending_requests(), 0);
    let later = measured_call(session, "ping").await;
    assert!(later.result.is_err(), "a call after the end must fail");
    session.close().await;
}

/// The session goes on: nothing left pending, and a later call is answered.
async fn assert_session_goes_on(session: &ClientSession) {
    assert!(!session.is_closed());
    assert_eq!(session.pending_requests(), 0, "a pending entry leaked");
    let later = measured_call_within(session, "ping", FLOOD_DEADLINE).await;
    assert!(later.result.is_ok(), "{:?}", later.result.err());
    session.close().await;
}

/// Answers every later request of the connection with `{}` (for sessions that go on).
async fn answer_the_rest(mut peer: Peer) {
    while let Some(request) = peer.next_request().await {
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
            .await;
    }
}

#[tokio::test]
async fn an_endless_frame_over_the_cap_fails_the_call_from_its_head() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, _request| async move {
        // A text frame that says it is 1 GiB long, then filler for as long as the client reads.
        if peer.raw(&frame_head(TEXT, true, 1 << 30)).await.is_ok() {
            peer.endless_filler().await;
        }
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.expect_error(
        "ws endless frame",
        ErrorKind::Protocol,
        "over the limit of 1048576 bytes (max_message_size)",
    );
    assert_session_ended(&session).await;
}

#[tokio::test]
async fn an_endless_fragmented_message_fails_the_call_at_the_cap() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, _request| async move {
        // A text message in 64 KiB fragments that never ends.
        let mut first = frame_head(TEXT, false, FILLER.len() as u64);
        first.extend_from_slice(&FILLER);
        let mut next = frame_head(CONTINUATION, false, FILLER.len() as u64);
        next.extend_from_slice(&FILLER);
        if peer.raw(&first).await.is_ok() {
            while peer.raw(&next).await.is_ok() {}
        }
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.expect_error(
        "ws endless fragmented message",
        ErrorKind::Protocol,
        "over the limit of 1048576 bytes",
    );
    assert_session_ended(&session).await;
}

#[tokio::test]
async fn a_text_frame_of_invalid_utf8_fails_the_call_at_once() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, request| async move {
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"text":"caf"#,
            request["id"]
        );
        let mut payload = answer.into_bytes();
        payload.extend_from_slice(b"\xc3\x28\xff\"}}");
        if peer.raw(&frame(TEXT, &payload)).await.is_ok() {
            peer.hold().await;
        }
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.expect_error(
        "ws invalid UTF-8 text frame",
        ErrorKind::Protocol,
        "sent text that is not UTF-8 (a text frame or a close frame's reason); the connection was closed (1007)",
    );
    assert_session_ended(&session).await;
}

#[tokio::test]
async fn a_binary_answer_fails_the_call_at_once() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, request| async move {
        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}).to_string();
        if peer.raw(&frame(BINARY, answer.as_bytes())).await.is_ok() {
            peer.hold().await;
        }
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.expect_error("ws binary frame", ErrorKind::Protocol, "binary frame");
    assert_session_ended(&session).await;
}

#[tokio::test]
async fn answers_with_unknown_ids_are_ignored_and_the_real_one_completes_the_call() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, request| async move {
        for id in [
            json!(987_654_321),
            json!("no-such-request"),
            json!(-1),
            json!(1.5),
        ] {
            peer.send(json!({"jsonrpc": "2.0", "id": id, "result": {"stray": true}}))
                .await;
        }
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": 1}}))
            .await;
        answer_the_rest(peer).await;
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.within_bound("ws unknown ids");
    let result = outcome.result.expect("the real answer completes the call");
    assert_eq!(result.to_json_string(), r#"{"ok":1}"#);
    println!(
        "case ws unknown ids: answered after {:?}, peak {} KiB",
        outcome.elapsed,
        outcome.peak / 1024
    );
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn only_unknown_ids_end_the_call_at_its_deadline_with_nothing_leaked() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, _request| async move {
        peer.send(json!({"jsonrpc": "2.0", "id": 424_242, "result": {}}))
            .await;
        answer_the_rest(peer).await;
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.expect_error("ws only unknown ids", ErrorKind::Timeout, "");
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_duplicate_answer_is_dropped_and_never_answers_a_later_call() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, request| async move {
        let id = request["id"].clone();
        peer.send(json!({"jsonrpc": "2.0", "id": id, "result": {"first": true}}))
            .await;
        peer.send(json!({"jsonrpc": "2.0", "id": id, "result": {"second": true}}))
            .await;
        peer.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": "dup"}}))
            .await;
        answer_the_rest(peer).await;
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.within_bound("ws duplicate id");
    let result = outcome.result.expect("the first answer completes the call");
    assert_eq!(result.to_json_string(), r#"{"first":true}"#);
    println!(
        "case ws duplicate id: answered after {:?}, peak {} KiB",
        outcome.elapsed,
        outcome.peak / 1024
    );
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn deeply_nested_json_is_a_protocol_error_not_a_stack_overflow() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, request| async move {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{}"#,
            request["id"],
            "[".repeat(100_000)
        );
        peer.send_text(text).await;
        answer_the_rest(peer).await;
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.expect_error(
        "ws deep nesting",
        ErrorKind::Protocol,
        "invalid JSON-RPC message",
    );
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_deeply_nested_but_balanced_result_is_kept_raw_or_refused_never_overflowing() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, request| async move {
        let depth = 50_000;
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{}{}}}"#,
            request["id"],
            "[".repeat(depth),
            "]".repeat(depth)
        );
        peer.send_text(text).await;
        answer_the_rest(peer).await;
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.within_bound("ws deep balanced nesting");
    match &outcome.result {
        // The result stays raw text; parsing it into a tree is where the depth limit applies.
        Ok(payload) => {
            assert!(payload.deserialize::<serde_json::Value>().is_err());
            println!(
                "case ws deep balanced nesting: kept raw after {:?}, peak {} KiB",
                outcome.elapsed,
                outcome.peak / 1024
            );
        }
        Err(_) => {
            outcome.expect_error("ws deep balanced nesting", ErrorKind::Protocol, "");
        }
    }
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_huge_id_under_the_cap_is_an_unknown_answer() {
    let _serial = one_case_at_a_time().await;
    // Built before the call is measured: the server's own copies are not the client's.
    let digits = "7".repeat(CAP / 2);
    let text = "i".repeat(CAP / 2);
    let huge_ids = Arc::new(
        [
            frame(
                TEXT,
                format!(r#"{{"jsonrpc":"2.0","id":{digits},"result":{{}}}}"#).as_bytes(),
            ),
            frame(
                TEXT,
                format!(r#"{{"jsonrpc":"2.0","id":"{text}","result":{{}}}}"#).as_bytes(),
            ),
        ]
        .concat(),
    );
    drop((digits, text));
    let server = hostile(move |mut peer, request| {
        let huge_ids = huge_ids.clone();
        async move {
            if peer.raw(&huge_ids).await.is_ok() {
                peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": 1}}))
                    .await;
                answer_the_rest(peer).await;
            }
        }
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.within_bound("ws huge id");
    let result = outcome.result.expect("the real answer completes the call");
    assert_eq!(result.to_json_string(), r#"{"ok":1}"#);
    println!(
        "case ws huge id: answered after {:?}, peak {} KiB",
        outcome.elapsed,
        outcome.peak / 1024
    );
    assert_session_goes_on(&session).await;
}

/// How many messages a flood sends.
const FLOOD: usize = 100_000;
/// The deadline of a call answered after a flood.
const FLOOD_DEADLINE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_flood_of_notifications_stays_bounded_and_the_call_is_answered() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, request| async move {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "x".repeat(200)}})
        .to_string();
        let batch = frame(TEXT, note.as_bytes()).repeat(100);
        if peer.repeat(&batch, FLOOD / 100).await.is_ok() {
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": 1}}))
                .await;
            answer_the_rest(peer).await;
        }
    })
    .await;
    let session = session_to(&server).await;
    // A subscriber that never reads: it holds at most `notification_buffer` of them.
    let _lagging = session.subscribe();
    let outcome = measured_call_within(&session, "tools/list", FLOOD_DEADLINE).await;
    outcome.within_bound("ws notification flood");
    assert!(outcome.result.is_ok(), "{:?}", outcome.result.err());
    println!(
        "case ws notification flood: answered after {:?}, peak {} KiB",
        outcome.elapsed,
        outcome.peak / 1024
    );
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_flood_of_server_requests_stays_bounded_and_the_call_is_answered() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|mut peer, request| async move {
        // A few pings (answered at once from the session's outbox), mostly requests the
        // client has no handler for (each a task, up to the concurrency cap; past it a busy
        // answer). The server reads none of the answers, so the client's outgoing side backs
        // up: the tasks waiting to send their answers must stay within the cap.
        let mut batch = Vec::new();
        for i in 0..100 {
            let method = if i % 10 == 0 {
                "ping"
            } else {
                "sampling/createMessage"
            };
            let request = json!({"jsonrpc": "2.0", "id": format!("s{i}"), "method": method,
                "params": {"messages": [], "maxTokens": 1}});
            batch.extend_from_slice(&frame(TEXT, request.to_string().as_bytes()));
        }
        if peer.repeat(&batch, FLOOD / 100).await.is_ok() {
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": 1}}))
                .await;
            answer_the_rest(peer).await;
        }
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call_within(&session, "tools/list", FLOOD_DEADLINE).await;
    outcome.within_bound("ws server request flood");
    assert!(outcome.result.is_ok(), "{:?}", outcome.result.err());
    println!(
        "case ws server request flood: answered after {:?}, peak {} KiB",
        outcome.elapsed,
        outcome.peak / 1024
    );
    assert!(
        session.server_requests_in_flight() <= session.options().max_concurrent_server_requests
    );
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_server_that_never_answers_ends_the_call_at_its_deadline() {
    let _serial = one_case_at_a_time().await;
    let server = hostile(|peer, _request| peer.hold()).await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    let e = outcome.expect_error("ws silent server", ErrorKind::Timeout, "");
    assert!(
        outcome.elapsed >= CALL_DEADLINE,
        "{e}: {:?}",
        outcome.elapsed
    );
    // A timeout is the call's, not the connection's: the session stays open, nothing pending.
    assert!(!session.is_closed());
    assert_eq!(session.pending_requests(), 0, "a pending entry leaked");
    session.close().await;
}

#[tokio::test]
async fn a_slow_loris_upgrade_answer_ends_at_the_connect_deadline() {
    let _serial = one_case_at_a_time().await;
    // Reads the upgrade request, then answers one byte of a header at a time, forever.
    let server = RawServer::start_tcp(|mut stream| async move {
        let mut request = [0u8; 4096];
        if stream.read(&mut request).await.is_err() {
            return;
        }
        let mut head = b"HTTP/1.1 101 Switching Protocols\r\nX-Slow: "
            .iter()
            .copied();
        loop {
            let byte = head.next().unwrap_or(b'a');
            if stream.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let connect_timeout = Duration::from_secs(1);
    let measure = Measure::start(&ALLOC);
    let started = Instant::now();
    let e = within(
        "connect",
        WebSocketTransport::connect(config(&server.url()).connect_timeout(connect_timeout)),
    )
    .await
    .unwrap_err();
    let (elapsed, peak) = (started.elapsed(), measure.peak());
    println!(
        "case ws slow-loris upgrade: {:?} after {elapsed:?}, peak {} KiB: {e}",
        e.kind(),
        peak / 1024
    );
    assert_eq!(e.kind(), mcp_core::TransportErrorKind::Connect);
    assert!(e.message().contains("within 1s (connect_timeout)"), "{e}");
    assert!(elapsed >= connect_timeout);
    assert!(peak < BOUND, "{peak}");
}

#[tokio::test]
async fn an_endless_upgrade_answer_is_refused_at_the_head_cap() {
    let _serial = one_case_at_a_time().await;
    let server = RawServer::start_tcp(|mut stream| async move {
        let mut request = [0u8; 4096];
        if stream.read(&mut request).await.is_err() {
            return;
        }
        if stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nX-Endless: ")
            .await
            .is_ok()
        {
            while stream.write_all(&FILLER).await.is_ok() {}
        }
    })
    .await;
    let measure = Measure::start(&ALLOC);
    let started = Instant::now();
    let e = within(
        "connect",
        WebSocketTransport::connect(config(&server.url())),
    )
    .await
    .unwrap_err();
    let (elapsed, peak) = (started.elapsed(), measure.peak());
    println!(
        "case ws endless upgrade head: {:?} after {elapsed:?}, peak {} KiB: {e}",
        e.kind(),
        peak / 1024
    );
    assert_eq!(e.kind(), mcp_core::TransportErrorKind::Connect);
    assert!(e.message().contains("bytes of headers"), "{e}");
    assert!(peak < BOUND, "{peak}");
}

/// Close frames a server may send mid-call: (payload, expected kind, expected text).
fn weird_closes() -> Vec<(&'static str, Vec<u8>, ErrorKind, &'static str)> {
    let code = |code: u16, reason: &[u8]| {
        let mut payload = code.to_be_bytes().to_vec();
        payload.extend_from_slice(reason);
        payload
    };
    // 123 bytes of reason (the most a close frame holds) full of terminal escapes.
    let escapes = "\u{1b}[31m\r\n\u{7}".repeat(123 / 9);
    vec![
        (
            "private code 4999 with escapes",
            code(4999, escapes.as_bytes()),
            ErrorKind::Network,
            "(close code 4999): [31m[31m",
        ),
        (
            "reserved code 1006 on the wire",
            code(1006, b"abnormal"),
            ErrorKind::Network,
            "protocol violation (the server's, when its own close code was not a valid one",
        ),
        (
            "code 999 out of range",
            code(999, b""),
            ErrorKind::Network,
            "protocol violation (the server's, when its own close code was not a valid one",
        ),
        (
            "reason of invalid UTF-8",
            code(1000, b"\xff\xfe"),
            ErrorKind::Protocol,
            "not UTF-8",
        ),
        (
            "a one-byte payload",
            vec![0x03],
            ErrorKind::Protocol,
            "broke the WebSocket protocol",
        ),
        (
            "policy 1008 is a refusal",
            code(1008, b"token revoked"),
            ErrorKind::Auth,
            "(close code 1008): token revoked",
        ),
    ]
}

#[tokio::test]
async fn weird_close_frames_end_the_call_with_a_classified_clean_error() {
    let _serial = one_case_at_a_time().await;
    for (case, payload, kind, says) in weird_closes() {
        let frame_bytes = Arc::new(frame(CLOSE, &payload));
        let server = hostile(move |mut peer, _request| {
            let frame_bytes = frame_bytes.clone();
            async move {
                if peer.raw(&frame_bytes).await.is_ok() {
                    peer.hold().await;
                }
            }
        })
        .await;
        let session = session_to(&server).await;
        let outcome = measured_call(&session, "tools/list").await;
        outcome.expect_error(&format!("ws close: {case}"), kind, says);
        assert_session_ended(&session).await;
    }
}

#[tokio::test]
async fn an_oversized_close_frame_is_a_protocol_error() {
    let _serial = one_case_at_a_time().await;
    // A control frame may hold 125 bytes at most; this one says 64 KiB.
    let server = hostile(|mut peer, _request| async move {
        let mut close = frame_head(CLOSE, true, FILLER.len() as u64);
        close.extend_from_slice(&[0x03, 0xe8]);
        close.extend_from_slice(&FILLER[2..]);
        if peer.raw(&close).await.is_ok() {
            peer.hold().await;
        }
    })
    .await;
    let session = session_to(&server).await;
    let outcome = measured_call(&session, "tools/list").await;
    outcome.expect_error(
        "ws close: oversized control frame",
        ErrorKind::Protocol,
        "broke the WebSocket protocol",
    );
    assert_session_ended(&session).await;
}
