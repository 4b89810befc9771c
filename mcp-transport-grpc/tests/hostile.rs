//! Hostile gRPC servers: each serves `mcp.transport.v1.Mcp/Session` as raw HTTP/2 response
//! bodies (so it can send what the generated code never would: endless messages, strings that
//! are not UTF-8, compressed frames), answers the `initialize` handshake, then misbehaves on
//! the call under test. For every case the call ends with a clear, correctly classified error
//! no later than its deadline, the client's memory stays under the stated bound (counted by
//! [`PeakAlloc`], deterministic), and the session is left as the crate documents: an error
//! that ends the gRPC call closes the session; a bad line, an unknown or duplicate answer
//! leaves it open with nothing pending.
//!
//! The hostile bytes come from static buffers or shared [`Bytes`], so the server itself
//! allocates next to nothing while the client is measured.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::Frame;
use mcp_core::{Era, Error, ErrorKind, Operation, Payload, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::peak_alloc::{one_case_at_a_time, Measure, PeakAlloc};
use mcp_transport_grpc::proto::JsonRpcLine;
use mcp_transport_grpc::{GrpcServerConfig, GrpcTransport};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tonic::codec::Codec;
use tonic::codegen::http;
use tonic::codegen::Bytes;
use tonic::server::NamedService;
use tonic::Streaming;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc::new();

/// Generous deadline for anything a test waits on besides the call under test.
const DEADLINE: Duration = Duration::from_secs(20);
/// The client's `max_message_size` in these tests.
const CAP: usize = 1 << 20;
/// The deadline of the call under test.
const CALL_DEADLINE: Duration = Duration::from_secs(3);
/// The deadline of a call answered after a flood (reading one takes a while on a busy machine).
const FLOOD_DEADLINE: Duration = Duration::from_secs(30);
/// The receive window of one HTTP/2 stream (hyper's default, which tonic keeps): what a server
/// may send that the client holds before reading it.
const STREAM_WINDOW: usize = 2 << 20;
/// What a hostile peer may make the client hold at once, on top of what it held before: the
/// stream window, tonic's buffer of a message at the cap and the line decoded from it, the
/// session's copy of what it parses.
const BOUND: usize = STREAM_WINDOW + 4 * CAP;
/// How many messages a flood sends.
const FLOOD: usize = 100_000;

/// 64 KiB of filler, sent again and again without allocating.
static FILLER: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// A gRPC message frame (uncompressed unless `compressed`) of `payload`.
fn grpc_frame(payload: &[u8], compressed: bool) -> Vec<u8> {
    // (`line_frame_head` writes the same header for an uncompressed line.)
    let mut out = vec![u8::from(compressed)];
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The head of a gRPC frame holding a `JsonRpcLine` whose `line` is `len` bytes: the frame
/// header, the field's tag and length; the line's bytes follow.
fn line_frame_head(len: usize) -> Vec<u8> {
    let mut field = vec![0x0a]; // field 1, length-delimited
    let mut rest = len;
    while rest >= 0x80 {
        field.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    field.push(rest as u8);
    let mut head = vec![0u8];
    head.extend_from_slice(&((field.len() + len) as u32).to_be_bytes());
    head.extend_from_slice(&field);
    head
}

/// A `JsonRpcLine` whose `line` holds `bytes` as they are (UTF-8 or not), as a gRPC frame.
fn line_frame(bytes: &[u8]) -> Vec<u8> {
    let mut frame = line_frame_head(bytes.len());
    frame.extend_from_slice(bytes);
    frame
}

/// The response body: whatever the script sends, as it sends it; it never ends on its own
/// while the script holds its sender (no trailers: a hostile server that never finishes).
struct ScriptedBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ScriptedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

/// The hostile server's side of one call.
struct Peer {
    inbox: Streaming<JsonRpcLine>,
    out: mpsc::Sender<Bytes>,
}

impl Peer {
    /// The next JSON message from the client.
    async fn next_message(&mut self) -> Option<Value> {
        let line = self.inbox.message().await.ok()??;
        serde_json::from_str(&line.line).ok()
    }

    /// Answers `initialize` and waits for `notifications/initialized`.
    async fn handshake(&mut self) -> Option<()> {
        let initialize = self.next_message().await?;
        let result = json!({
            "protocolVersion": initialize["params"]["protocolVersion"],
            "capabilities": {},
            "serverInfo": {"name": "hostile", "version": "0"},
        });
        self.send(json!({"jsonrpc": "2.0", "id": initialize["id"], "result": result}))
            .await?;
        while self.next_message().await?["method"] != "notifications/initialized" {}
        Some(())
    }

    /// The next request from the client.
    async fn next_request(&mut self) -> Option<Value> {
        loop {
            let message = self.next_message().await?;
            if message.get("method").is_some() && message.get("id").is_some() {
                return Some(message);
            }
        }
    }

    async fn send(&self, message: Value) -> Option<()> {
        self.send_text(&message.to_string()).await
    }

    async fn send_text(&self, text: &str) -> Option<()> {
        self.raw(Bytes::from(line_frame(text.as_bytes()))).await
    }

    async fn raw(&self, bytes: Bytes) -> Option<()> {
        self.out.send(bytes).await.ok()
    }

    /// Keeps the call open until the client ends it, answering nothing.
    async fn hold(mut self) {
        while self.inbox.message().await.ok().flatten().is_some() {}
    }

    /// Answers every later request with `{}`.
    async fn answer_the_rest(mut self) {
        while let Some(request) = self.next_request().await {
            let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {}});
            if self.send(answer).await.is_none() {
                return;
            }
        }
    }
}

type Script = Arc<dyn Fn(Peer, Value) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// `Session` as a raw tower service: each call's request stream is decoded with the generated
/// message type, its response body is whatever the script writes.
#[derive(Clone)]
struct RawSession(Script);

impl NamedService for RawSession {
    const NAME: &'static str = "mcp.transport.v1.Mcp";
}

impl tonic::codegen::Service<http::Request<tonic::body::Body>> for RawSession {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let mut codec = tonic_prost::ProstCodec::<JsonRpcLine, JsonRpcLine>::default();
        let inbox = Streaming::new_request(codec.decoder(), request.into_body(), None, None);
        let (out, body) = mpsc::channel(4);
        let script = self.0.clone();
        tokio::spawn(async move {
            let mut peer = Peer { inbox, out };
            if peer.handshake().await.is_none() {
                return;
            }
            if let Some(request) = peer.next_request().await {
                script(peer, request).await;
            }
        });
        let response = http::Response::builder()
            .header("content-type", "application/grpc")
            .body(tonic::body::Body::new(ScriptedBody(body)))
            .expect("a valid response head");
        std::future::ready(Ok(response))
    }
}

/// A hostile server on 127.0.0.1 on a runtime of its own: dropping it ends every call and task.
struct Hostile {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Hostile {
    fn start<F, Fut>(script: F) -> Hostile
    where
        F: Fn(Peer, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let script: Script = Arc::new(move |peer, request| Box::pin(script(peer, request)));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let incoming = {
            let _inside = runtime.enter();
            tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().unwrap()).unwrap()
        };
        let addr = incoming.local_addr().unwrap();
        runtime.spawn(
            tonic::transport::Server::builder().serve_with_incoming(RawSession(script), incoming),
        );
        Hostile {
            addr,
            runtime: Some(runtime),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn session_to(server: &Hostile) -> ClientSession {
    let options = SessionOptions {
        era: Some(Era::Legacy),
        request_timeout: CALL_DEADLINE,
        ..SessionOptions::default()
    };
    let config = GrpcServerConfig::new(server.url())
        .max_message_size(CAP)
        .close_timeout(Duration::from_millis(500));
    tokio::time::timeout(DEADLINE, async {
        let transport = GrpcTransport::connect(config).await.expect("connects");
        ClientSession::connect(transport, (), options)
            .await
            .expect("initializes")
    })
    .await
    .expect("connected in time")
}

/// What one measured call came to.
struct Measured {
    result: Result<Payload, Error>,
    elapsed: Duration,
    peak: usize,
    deadline: Duration,
}

impl Measured {
    /// Asserts the error's kind and that its message says `says`; prints the case's figures.
    fn expect_error(&self, case: &str, kind: ErrorKind, says: &str) -> &Error {
        let e = match &self.result {
            Ok(payload) => panic!("{case}: expected an error, got {payload:?}"),
            Err(e) => e,
        };
        println!(
            "case {case}: {:?} after {:?}, peak {} KiB: {}",
            e.kind(),
            self.elapsed,
            self.peak / 1024,
            e.message()
        );
        assert_eq!(e.kind(), kind, "{case}: {e}");
        assert!(e.message().contains(says), "{case}: {says:?} in {e}");
        self.within_bound(case);
        e
    }

    /// Asserts the call was answered with `expected`; prints the case's figures.
    fn expect_answer(&self, case: &str, expected: &str) {
        self.within_bound(case);
        match &self.result {
            Ok(payload) => assert_eq!(payload.to_json_string(), expected, "{case}"),
            Err(e) => panic!("{case}: {e}"),
        }
        println!(
            "case {case}: answered after {:?}, peak {} KiB",
            self.elapsed,
            self.peak / 1024
        );
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

async fn measured_call(session: &ClientSession, deadline: Duration) -> Measured {
    let measure = Measure::start(&ALLOC);
    let started = Instant::now();
    let operation = Operation::new("tools/list", None)
        .with_options(RequestOptions::new().with_timeout(deadline));
    let result = tokio::time::timeout(
        deadline + DEADLINE,
        mcp_core::McpService::call(session, operation),
    )
    .await
    .expect("the call outlived its deadline");
    Measured {
        result,
        elapsed: started.elapsed(),
        peak: measure.peak(),
        deadline,
    }
}

/// The session ended with the call, as documented for errors that end the gRPC call.
async fn assert_session_ended(session: &ClientSession) {
    let reason = tokio::time::timeout(DEADLINE, session.closed())
        .await
        .expect("the session ends");
    assert!(session.is_closed(), "{reason}");
    assert_eq!(session.pending_requests(), 0);
    assert!(measured_call(session, CALL_DEADLINE).await.result.is_err());
    session.close().await;
}

/// The session goes on: nothing left pending, and a later call is answered.
async fn assert_session_goes_on(session: &ClientSession) {
    assert!(!session.is_closed());
    assert_eq!(session.pending_requests(), 0, "a pending entry leaked");
    let later = measured_call(session, FLOOD_DEADLINE).await;
    assert!(later.result.is_ok(), "{:?}", later.result.err());
    session.close().await;
}

#[tokio::test]
async fn an_endless_message_fails_the_call_from_its_length_prefix() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, _request| async move {
        // A message that says it is 1 GiB, then filler for as long as the client reads.
        let mut head = vec![0u8];
        head.extend_from_slice(&(1u32 << 30).to_be_bytes());
        if peer.raw(Bytes::from(head)).await.is_some() {
            while peer.raw(Bytes::from_static(&FILLER)).await.is_some() {}
        }
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_error(
        "grpc endless message",
        ErrorKind::Protocol,
        "found 1073741824 bytes",
    );
    assert_session_ended(&session).await;
}

#[tokio::test]
async fn a_line_just_over_the_cap_fails_its_call_and_the_session_goes_on() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, request| async move {
        // Over the cap, within tonic's framing allowance: the transport's own check. Sent in
        // pieces, the filler from a static buffer.
        let prefix = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"text":""#,
            request["id"]
        );
        let suffix = r#""}}"#;
        let fillers = CAP / FILLER.len();
        let len = prefix.len() + fillers * FILLER.len() + suffix.len();
        let mut head = line_frame_head(len);
        head.extend_from_slice(prefix.as_bytes());
        let mut sent = peer.raw(Bytes::from(head)).await;
        for _ in 0..fillers {
            sent = sent.and(peer.raw(Bytes::from_static(&FILLER)).await);
        }
        if sent
            .and(peer.raw(Bytes::from_static(suffix.as_bytes())).await)
            .is_some()
        {
            peer.answer_the_rest().await;
        }
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_error(
        "grpc line over the cap",
        ErrorKind::Protocol,
        "over the 1048576-byte limit (max_message_size)",
    );
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_line_of_invalid_utf8_fails_the_call_as_a_protocol_error() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, request| async move {
        let mut bytes =
            format!(r#"{{"jsonrpc":"2.0","id":{},"result":"caf"#, request["id"]).into_bytes();
        bytes.extend_from_slice(b"\xc3\x28\xff\"}");
        if peer.raw(Bytes::from(line_frame(&bytes))).await.is_some() {
            peer.hold().await;
        }
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_error("grpc invalid UTF-8 line", ErrorKind::Protocol, "not UTF-8");
    assert_session_ended(&session).await;
}

#[tokio::test]
async fn a_compressed_message_nobody_negotiated_is_a_protocol_error() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, _request| async move {
        // A "gzip bomb" the client never agreed to: the compressed flag without grpc-encoding.
        if peer
            .raw(Bytes::from(grpc_frame(&FILLER[..1024], true)))
            .await
            .is_some()
        {
            peer.hold().await;
        }
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_error(
        "grpc unnegotiated compression",
        ErrorKind::Protocol,
        "compressed-flag",
    );
    assert_session_ended(&session).await;
}

#[tokio::test]
async fn answers_with_unknown_ids_are_ignored_and_the_real_one_completes_the_call() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, request| async move {
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
        peer.answer_the_rest().await;
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_answer("grpc unknown ids", r#"{"ok":1}"#);
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn only_unknown_ids_end_the_call_at_its_deadline_with_nothing_leaked() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, _request| async move {
        peer.send(json!({"jsonrpc": "2.0", "id": 424_242, "result": {}}))
            .await;
        peer.answer_the_rest().await;
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_error("grpc only unknown ids", ErrorKind::Timeout, "");
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_duplicate_answer_is_dropped_and_never_answers_a_later_call() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, request| async move {
        let id = request["id"].clone();
        peer.send(json!({"jsonrpc": "2.0", "id": id, "result": {"first": true}}))
            .await;
        peer.send(json!({"jsonrpc": "2.0", "id": id, "result": {"second": true}}))
            .await;
        peer.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": "dup"}}))
            .await;
        peer.answer_the_rest().await;
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_answer("grpc duplicate id", r#"{"first":true}"#);
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn deeply_nested_json_is_a_protocol_error_not_a_stack_overflow() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, request| async move {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{}"#,
            request["id"],
            "[".repeat(100_000)
        );
        peer.send_text(&text).await;
        peer.answer_the_rest().await;
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_error(
        "grpc deep nesting",
        ErrorKind::Protocol,
        "invalid JSON-RPC message",
    );
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_huge_id_under_the_cap_is_an_unknown_answer() {
    let _serial = one_case_at_a_time().await;
    // Built before the call is measured: the server's own copies are not the client's.
    let digits = "7".repeat(CAP / 2);
    let text = "i".repeat(CAP / 2);
    let huge_ids = Bytes::from(
        [
            line_frame(format!(r#"{{"jsonrpc":"2.0","id":{digits},"result":{{}}}}"#).as_bytes()),
            line_frame(format!(r#"{{"jsonrpc":"2.0","id":"{text}","result":{{}}}}"#).as_bytes()),
        ]
        .concat(),
    );
    drop((digits, text));
    let server = Hostile::start(move |peer, request| {
        let huge_ids = huge_ids.clone();
        async move {
            peer.raw(huge_ids).await;
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": 1}}))
                .await;
            peer.answer_the_rest().await;
        }
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    outcome.expect_answer("grpc huge id", r#"{"ok":1}"#);
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_flood_of_notifications_stays_bounded_and_the_call_is_answered() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, request| async move {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "x".repeat(200)}})
        .to_string();
        let batch = Bytes::from(line_frame(note.as_bytes()).repeat(100));
        for _ in 0..FLOOD / 100 {
            if peer.raw(batch.clone()).await.is_none() {
                return;
            }
        }
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": 1}}))
            .await;
        peer.answer_the_rest().await;
    });
    let session = session_to(&server).await;
    // A subscriber that never reads: it holds at most `notification_buffer` of them.
    let _lagging = session.subscribe();
    let outcome = measured_call(&session, FLOOD_DEADLINE).await;
    outcome.expect_answer("grpc notification flood", r#"{"ok":1}"#);
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_flood_of_server_requests_stays_bounded_and_the_call_is_answered() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, request| async move {
        // Mostly requests the client has no handler for (each a task, up to the concurrency
        // cap; past it a busy answer), a few pings. The server reads none of the answers
        // until the flood is over.
        let mut batch = Vec::new();
        for i in 0..100 {
            let method = if i % 10 == 0 {
                "ping"
            } else {
                "sampling/createMessage"
            };
            let request = json!({"jsonrpc": "2.0", "id": format!("s{i}"), "method": method,
                "params": {"messages": [], "maxTokens": 1}});
            batch.extend_from_slice(&line_frame(request.to_string().as_bytes()));
        }
        let batch = Bytes::from(batch);
        for _ in 0..FLOOD / 100 {
            if peer.raw(batch.clone()).await.is_none() {
                return;
            }
        }
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": 1}}))
            .await;
        peer.answer_the_rest().await;
    });
    let session = session_to(&server).await;
    let outcome = measured_call(&session, FLOOD_DEADLINE).await;
    outcome.expect_answer("grpc server request flood", r#"{"ok":1}"#);
    assert!(
        session.server_requests_in_flight() <= session.options().max_concurrent_server_requests
    );
    assert_session_goes_on(&session).await;
}

#[tokio::test]
async fn a_server_that_never_answers_ends_the_call_at_its_deadline() {
    let _serial = one_case_at_a_time().await;
    let server = Hostile::start(|peer, _request| peer.hold());
    let session = session_to(&server).await;
    let outcome = measured_call(&session, CALL_DEADLINE).await;
    let e = outcome.expect_error("grpc silent server", ErrorKind::Timeout, "");
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
