//! Hostile HTTP peers: a raw-TCP HTTP/1.1 server written here (so every status line, header,
//! chunk, delay and byte is the test's to choose) answers the transports with what a broken or
//! malicious server could send. For each case: the call ends with a clearly classified error
//! (or the documented result) no later than its deadline, and the client's memory stays under
//! a stated bound (counted by [`PeakAlloc`], so the bound does not depend on machine load).
//!
//! Each case prints one line (`hostile: case … → outcome, time, peak`), the rows of the
//! hostile matrix.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::{Era, Error, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::peak_alloc::{Measure, PeakAlloc};
use mcp_transport_http::{HttpServerConfig, HttpSseTransport, StreamableHttpTransport};
use mcp_wire::StaticBearer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc::new();

/// The client's `max_message_size` in these tests.
const MESSAGE_LIMIT: usize = 1024 * 1024;
/// Memory a case may add at its worst: a few times the message limit (hyper's buffers, the
/// parser's event, the session's queues).
const MEMORY_BOUND: usize = 16 * 1024 * 1024;
/// Each hostile call's deadline.
const CALL_TIMEOUT: Duration = Duration::from_millis(2000);
/// How late a call may end after its deadline on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(1500);
/// Deadline of anything else a test waits for.
const DEADLINE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// The hostile server.

/// One request as the hostile server read it.
#[derive(Debug, Clone)]
struct Req {
    method: String,
    path: String,
    /// Names lowercased.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    fn rpc_method(&self) -> String {
        self.json()["method"].as_str().unwrap_or("").to_owned()
    }

    fn id(&self) -> Value {
        self.json()["id"].clone()
    }
}

type BoxFuture = Pin<Box<dyn Future<Output = Option<OwnedWriteHalf>> + Send>>;
/// Answers one request on the connection's write half; gives it back to keep the connection
/// open for the next request, or `None` to close it.
type Respond = Arc<dyn Fn(Req, OwnedWriteHalf) -> BoxFuture + Send + Sync>;

/// A raw HTTP/1.1 server on a loopback port; every task it runs ends when it is dropped.
struct Hostile {
    port: u16,
    seen: Arc<Mutex<Vec<Req>>>,
    _tasks: JoinSet<()>,
}

impl Hostile {
    async fn start(respond: Respond) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = JoinSet::new();
        let seen_by_server = seen.clone();
        tasks.spawn(async move {
            // Connections end with the accept loop (the set is dropped with it).
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                connections.spawn(serve(stream, respond.clone(), seen_by_server.clone()));
            }
        });
        Hostile {
            port,
            seen,
            _tasks: tasks,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn seen(&self) -> Vec<Req> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(stream: TcpStream, respond: Respond, seen: Arc<Mutex<Vec<Req>>>) {
    let (read, write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut write = Some(write);
    while let Some(writer) = write.take() {
        let Some(req) = read_request(&mut read).await else {
            return;
        };
        seen.lock().unwrap().push(req.clone());
        write = respond(req, writer).await;
    }
}

async fn read_request(read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> Option<Req> {
    let mut line = String::new();
    read.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if read.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    read.read_exact(&mut body).await.ok()?;
    Some(Req {
        method,
        path,
        headers,
        body,
    })
}

/// A complete response with a `Content-Length`.
fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// The head of a chunked response.
fn chunked_head(content_type: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n")
        .into_bytes()
}

fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

fn sse_event(data: &[u8]) -> Vec<u8> {
    let mut out = b"event: message\ndata: ".to_vec();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    out
}

fn result_json(id: &Value, text: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": text}]
    }}))
    .unwrap()
}

/// What a well-behaved server answers to everything but `tools/call`: the handshake, 202 to
/// notifications, 405 to the standalone GET stream, 200 to DELETE.
fn standard(req: &Req, session_id: Option<&str>) -> Vec<u8> {
    match (req.method.as_str(), req.rpc_method().as_str()) {
        ("POST", "initialize") => {
            let version = req.json()["params"]["protocolVersion"].clone();
            let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": req.id(), "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"}
            }}))
            .unwrap();
            let mut headers = vec![("Content-Type", "application/json")];
            if let Some(id) = session_id {
                headers.push(("Mcp-Session-Id", id));
            }
            response("200 OK", &headers, &body)
        }
        ("POST", "tools/call") => response(
            "200 OK",
            &[("Content-Type", "application/json")],
            &result_json(&req.id(), "ok"),
        ),
        ("POST", _) => response("202 Accepted", &[], b""),
        ("GET", _) => response("405 Method Not Allowed", &[], b""),
        _ => response("200 OK", &[], b""),
    }
}

/// A server that answers `tools/call` with `call` and everything else as [`standard`].
fn on_call<F, Fut>(call: F) -> Respond
where
    F: Fn(Req, OwnedWriteHalf) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<OwnedWriteHalf>> + Send + 'static,
{
    let call = Arc::new(call);
    Arc::new(move |req: Req, mut writer: OwnedWriteHalf| {
        let call = call.clone();
        Box::pin(async move {
            if req.method == "POST" && req.rpc_method() == "tools/call" {
                return call(req, writer).await;
            }
            writer.write_all(&standard(&req, None)).await.ok()?;
            Some(writer)
        }) as BoxFuture
    })
}

/// Answers with fixed bytes, then keeps the connection open.
fn reply(bytes: Vec<u8>) -> Respond {
    let bytes = Arc::new(bytes);
    on_call(move |_, mut writer| {
        let bytes = bytes.clone();
        async move {
            writer.write_all(&bytes).await.ok()?;
            Some(writer)
        }
    })
}

/// Writes `head`, then `piece` over and over (at most `total` bytes) until the client goes.
async fn endless(mut writer: OwnedWriteHalf, head: Vec<u8>, piece: Vec<u8>, total: usize) {
    if writer.write_all(&head).await.is_err() {
        return;
    }
    let mut sent = 0;
    while sent < total {
        if writer.write_all(&piece).await.is_err() {
            return;
        }
        sent += piece.len();
    }
}

/// Writes `bytes` one at a time, `every` apart, until the client goes.
async fn dribble(mut writer: OwnedWriteHalf, bytes: Vec<u8>, every: Duration) {
    for byte in bytes {
        if writer.write_all(&[byte]).await.is_err() {
            return;
        }
        tokio::time::sleep(every).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The client side.

fn options() -> SessionOptions {
    SessionOptions {
        era: Some(Era::Legacy),
        initialize_timeout: Duration::from_secs(10),
        ..SessionOptions::default()
    }
}

fn config(url: &str) -> HttpServerConfig {
    HttpServerConfig::new(url).max_message_size(MESSAGE_LIMIT)
}

async fn connect(server: &Hostile) -> ClientSession {
    let transport = StreamableHttpTransport::new(config(&server.url("/mcp"))).unwrap();
    tokio::time::timeout(DEADLINE, ClientSession::connect(transport, (), options()))
        .await
        .expect("connects in time")
        .expect("connects")
}

/// What one case came to.
struct Measured {
    result: Result<String, Error>,
    took: Duration,
    peak: usize,
}

impl Measured {
    fn error(&self) -> &Error {
        match &self.result {
            Ok(text) => panic!("the call succeeded with {text:?}"),
            Err(e) => e,
        }
    }

    /// Checks the bounds every case shares, and prints the matrix row.
    fn report(&self, case: &str, deadline: Duration) -> &Self {
        let shown = match &self.result {
            Ok(text) => format!("ok {text:?}"),
            Err(e) => format!("{:?}: {}", e.kind(), e.message()),
        };
        eprintln!(
            "hostile: {case} → {shown}; {} ms; peak {} KiB",
            self.took.as_millis(),
            self.peak / 1024
        );
        assert!(
            self.took <= deadline + SLACK,
            "{case}: took {:?}, past the deadline {deadline:?}",
            self.took
        );
        assert!(
            self.peak < MEMORY_BOUND,
            "{case}: peak {} bytes over the bound {MEMORY_BOUND}",
            self.peak
        );
        self
    }
}

/// One `tools/call` with [`CALL_TIMEOUT`], measured.
async fn call(session: &ClientSession) -> Measured {
    let measure = Measure::start(&ALLOC);
    let started = Instant::now();
    let options = RequestOptions::new().with_timeout(CALL_TIMEOUT);
    let result = tokio::time::timeout(
        CALL_TIMEOUT + DEADLINE,
        session.call_tool("echo", Some(json!({"text": "hi"})), options),
    )
    .await
    .expect("the call ends")
    .map(|r| r.text());
    Measured {
        result,
        took: started.elapsed(),
        peak: measure.peak(),
    }
}

/// Runs `case` against a server answering `tools/call` with `respond`; the session is closed
/// afterwards.
async fn hostile_call(case: &str, respond: Respond) -> Measured {
    let server = Hostile::start(respond).await;
    let session = connect(&server).await;
    let outcome = call(&session).await;
    outcome.report(case, CALL_TIMEOUT);
    let _ = tokio::time::timeout(DEADLINE, session.close()).await;
    outcome
}

// ---------------------------------------------------------------------------------------------
// Findings fixed.

#[tokio::test]
async fn a_200_answer_of_another_content_type_is_a_protocol_error_naming_it() {
    let page = b"<html><body>Sign in. Your header was Authorization: Bearer \
                 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl</body></html>";
    let outcome = hostile_call(
        "wrong content type (text/html) × streamable",
        reply(response(
            "200 OK",
            &[("Content-Type", "text/html; charset=utf-8")],
            page,
        )),
    )
    .await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("text/html"), "{e}");
    assert!(e.message().contains("<html><body>Sign in."), "{e}");
    assert!(!e.message().contains("eyJ"), "the token leaked: {e}");
    assert!(
        outcome.took < CALL_TIMEOUT,
        "not at once: {:?}",
        outcome.took
    );
}

#[tokio::test]
async fn initialize_answered_with_another_content_type_fails_at_once_as_a_protocol_error() {
    let server = Hostile::start(Arc::new(|_req: Req, mut writer: OwnedWriteHalf| {
        Box::pin(async move {
            let page = response(
                "200 OK",
                &[("Content-Type", "text/html")],
                b"<h1>proxy</h1>",
            );
            writer.write_all(&page).await.ok()?;
            Some(writer)
        }) as BoxFuture
    }))
    .await;
    let started = Instant::now();
    let transport = StreamableHttpTransport::new(config(&server.url("/mcp"))).unwrap();
    let result = tokio::time::timeout(DEADLINE, ClientSession::connect(transport, (), options()))
        .await
        .expect("ends in time");
    let e = result.expect_err("initialize fails");
    eprintln!(
        "hostile: wrong content type on initialize × streamable → {:?}: {}; {} ms",
        e.kind(),
        e.message(),
        started.elapsed().as_millis()
    );
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("text/html"), "{e}");
    assert!(started.elapsed() < options().initialize_timeout);
}

async fn initialize_with_session_id(id: String) -> Result<ClientSession, Error> {
    let id = Arc::new(id);
    let server = Hostile::start(Arc::new(move |req: Req, mut writer: OwnedWriteHalf| {
        let id = id.clone();
        Box::pin(async move {
            writer.write_all(&standard(&req, Some(&id))).await.ok()?;
            Some(writer)
        }) as BoxFuture
    }))
    .await;
    let transport = StreamableHttpTransport::new(config(&server.url("/mcp"))).unwrap();
    tokio::time::timeout(DEADLINE, ClientSession::connect(transport, (), options()))
        .await
        .expect("ends in time")
}

#[tokio::test]
async fn an_over_long_session_id_is_refused_at_initialize() {
    let measure = Measure::start(&ALLOC);
    let e = initialize_with_session_id("s".repeat(300 * 1024))
        .await
        .expect_err("a 300 KB session id is refused");
    eprintln!(
        "hostile: 300 KB Mcp-Session-Id × streamable → {:?}: {}; peak {} KiB",
        e.kind(),
        e.message(),
        measure.peak() / 1024
    );
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("Mcp-Session-Id"), "{e}");
    assert!(
        e.message().contains(&format!("{} bytes long", 300 * 1024)),
        "{e}"
    );
    // At the cap it is accepted.
    let session = initialize_with_session_id("s".repeat(mcp_transport_http::MAX_SESSION_ID_LEN))
        .await
        .expect("an id at the cap is accepted");
    session.close().await;
}

#[tokio::test]
async fn a_session_id_that_is_not_visible_ascii_is_refused_at_initialize() {
    let e = initialize_with_session_id("abc def".to_owned())
        .await
        .expect_err("a space is refused");
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("byte 3 is 0x20"), "{e}");
    assert!(!e.message().contains("abc"), "the id is not shown: {e}");
}

#[tokio::test]
async fn an_error_body_echoing_credentials_is_redacted_in_the_message() {
    let body = br#"{"error":"denied","access_token":"SECRET-ACCESS-1","you_sent":"Authorization: Bearer SECRET-BEARER-2"}"#;
    let outcome = hostile_call(
        "credential echoed in a 500 body × streamable",
        reply(response(
            "500 Internal Server Error",
            &[("Content-Type", "application/json")],
            body,
        )),
    )
    .await;
    let e = outcome.error();
    assert!(e.message().contains("HTTP 500"), "{e}");
    assert!(e.message().contains("denied"), "{e}");
    assert!(!e.message().contains("SECRET"), "a credential leaked: {e}");
    assert!(e.message().contains("[redacted]"), "{e}");
}

#[tokio::test]
async fn a_challenge_echoing_credentials_is_redacted_and_capped_in_the_message() {
    // The provider (a static token) gives up; the refusal quotes the server's challenge.
    let challenge = format!(
        "Bearer error_description=\"you sent Bearer SECRET-token-42\", padding=\"{}\"",
        "p".repeat(5000)
    );
    let challenge = Arc::new(challenge);
    let server = Hostile::start(on_call(move |_, mut writer| {
        let challenge = challenge.clone();
        async move {
            let refusal = response(
                "401 Unauthorized",
                &[("WWW-Authenticate", challenge.as_str())],
                b"",
            );
            writer.write_all(&refusal).await.ok()?;
            Some(writer)
        }
    }))
    .await;
    let config = config(&server.url("/mcp")).auth(Arc::new(StaticBearer::new("SECRET-token-42")));
    let transport = StreamableHttpTransport::new(config).unwrap();
    let session = tokio::time::timeout(DEADLINE, ClientSession::connect(transport, (), options()))
        .await
        .unwrap()
        .unwrap();
    let outcome = call(&session).await;
    outcome.report("401 challenge echoing the token × streamable", CALL_TIMEOUT);
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert!(
        e.message()
            .contains("WWW-Authenticate: Bearer error_description="),
        "{e}"
    );
    assert!(!e.message().contains("SECRET"), "the token leaked: {e}");
    assert!(e.message().contains('…'), "not cut: {e}");
    assert!(
        e.message().len() < 1000,
        "not capped: {} bytes",
        e.message().len()
    );
    session.close().await;
}

#[tokio::test]
async fn json_labelled_as_plain_text_is_read_as_json() {
    let outcome = hostile_call(
        "JSON answer labelled text/plain × streamable",
        on_call(|req, mut writer| async move {
            let answer = response(
                "200 OK",
                &[("Content-Type", "text/plain; charset=utf-8")],
                &result_json(&req.id(), "plain but JSON"),
            );
            writer.write_all(&answer).await.ok()?;
            Some(writer)
        }),
    )
    .await;
    assert_eq!(outcome.result.as_deref().ok(), Some("plain but JSON"));
}

#[tokio::test]
async fn a_json_answer_without_the_response_is_a_protocol_error() {
    let outcome = hostile_call(
        "JSON answer to the POST holding another id × streamable",
        on_call(|_, mut writer| async move {
            let answer = response(
                "200 OK",
                &[("Content-Type", "application/json")],
                &result_json(&json!(987654), "not yours"),
            );
            writer.write_all(&answer).await.ok()?;
            Some(writer)
        }),
    )
    .await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("did not include the response"), "{e}");
    assert!(
        outcome.took < CALL_TIMEOUT,
        "not at once: {:?}",
        outcome.took
    );
}

#[tokio::test]
async fn a_head_over_hypers_limits_is_a_protocol_error() {
    let mut head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n".to_vec();
    let pad = format!("X-Pad: {}\r\n", "a".repeat(8 * 1024));
    for _ in 0..75 {
        head.extend_from_slice(pad.as_bytes());
    }
    head.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
    let outcome = hostile_call("600 KiB of response headers × streamable", reply(head)).await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
}

#[tokio::test]
async fn a_compressed_bomb_is_refused_never_inflated() {
    let outcome = hostile_call(
        "gzip bomb (1 GiB of zeros) × streamable",
        on_call(|_, writer| async move {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n\
                 Content-Length: {}\r\n\r\n",
                GzipZeros::ENCODED_LEN
            );
            let mut writer = writer;
            writer.write_all(head.as_bytes()).await.ok()?;
            for piece in GzipZeros::new() {
                writer.write_all(&piece).await.ok()?;
            }
            Some(writer)
        }),
    )
    .await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("Content-Encoding \"gzip\""), "{e}");
}

/// A gzip member inflating to 1 GiB of zeros, produced piece by piece: one fixed-Huffman
/// block of a literal zero and back-references of 258 bytes at distance 1 (13 bits each).
struct GzipZeros {
    references_left: usize,
    bits: u64,
    nbits: u32,
    header_sent: bool,
    done: bool,
}

impl GzipZeros {
    const INFLATED: usize = 1 << 30;
    const REFERENCES: usize = (Self::INFLATED - 1) / 258;
    /// 10 header bytes, 3 + 8 + 13 per reference + 7 end-of-block bits (rounded up), and the
    /// 8-byte trailer (its CRC is not the real one: the client must never get that far).
    const ENCODED_LEN: usize = 10 + (3 + 8 + 13 * Self::REFERENCES + 7).div_ceil(8) + 8;

    fn new() -> GzipZeros {
        GzipZeros {
            references_left: Self::REFERENCES,
            bits: 0,
            nbits: 0,
            header_sent: false,
            done: false,
        }
    }

    /// Appends a Huffman code (most significant bit first, as deflate sends codes).
    fn code(&mut self, code: u32, len: u32, out: &mut Vec<u8>) {
        for i in (0..len).rev() {
            self.bit((code >> i) & 1, out);
        }
    }

    fn bit(&mut self, bit: u32, out: &mut Vec<u8>) {
        self.bits |= u64::from(bit) << self.nbits;
        self.nbits += 1;
        if self.nbits == 8 {
            out.push(self.bits as u8);
            self.bits = 0;
            self.nbits = 0;
        }
    }
}

impl Iterator for GzipZeros {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        let mut out = Vec::with_capacity(64 * 1024 + 16);
        if !self.header_sent {
            self.header_sent = true;
            out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
            self.bit(1, &mut out); // BFINAL
            self.bit(1, &mut out); // BTYPE = 01 (fixed Huffman), low bit first
            self.bit(0, &mut out);
            self.code(0b0011_0000, 8, &mut out); // literal 0
        }
        while out.len() < 64 * 1024 && self.references_left > 0 {
            self.references_left -= 1;
            self.code(0b1100_0101, 8, &mut out); // length 258 (code 285)
            self.code(0, 5, &mut out); // distance 1 (code 0)
        }
        if self.references_left == 0 {
            self.code(0, 7, &mut out); // end of block (code 256)
            if self.nbits > 0 {
                out.push(self.bits as u8);
                self.nbits = 0;
            }
            out.extend_from_slice(&[0; 4]); // CRC-32 (not computed)
            out.extend_from_slice(&(Self::INFLATED as u32).to_le_bytes());
            self.done = true;
        }
        Some(out)
    }
}

#[tokio::test]
async fn invalid_utf8_in_a_json_answer_fails_the_call_at_once() {
    let outcome = hostile_call(
        "invalid UTF-8 in a JSON answer × streamable",
        on_call(|req, mut writer| async move {
            let mut body = br#"{"jsonrpc":"2.0","id":"#.to_vec();
            body.extend_from_slice(req.id().to_string().as_bytes());
            body.extend_from_slice(
                b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe\"}]}}",
            );
            let answer = response("200 OK", &[("Content-Type", "application/json")], &body);
            writer.write_all(&answer).await.ok()?;
            Some(writer)
        }),
    )
    .await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(
        e.message().contains("UTF-8") || e.message().contains("unicode"),
        "{e}"
    );
    assert!(
        outcome.took < CALL_TIMEOUT,
        "not at once: {:?}",
        outcome.took
    );
}

/// An SSE answer whose only event is `data` (raw bytes), the stream then kept open.
fn sse_answer_then_silence(data: impl Fn(&Value) -> Vec<u8> + Send + Sync + 'static) -> Respond {
    let data = Arc::new(data);
    on_call(move |req, mut writer| {
        let data = data.clone();
        async move {
            writer
                .write_all(&chunked_head("text/event-stream"))
                .await
                .ok()?;
            writer
                .write_all(&chunk(&sse_event(&data(&req.id()))))
                .await
                .ok()?;
            // Kept open: only the event can end the call before its deadline.
            std::future::pending::<()>().await;
            None
        }
    })
}

#[tokio::test]
async fn an_sse_event_of_invalid_utf8_that_is_no_message_fails_its_request_at_once() {
    let outcome = hostile_call(
        "invalid UTF-8 breaking an SSE event's JSON × streamable",
        sse_answer_then_silence(|id| {
            let mut data = format!(r#"{{"jsonrpc":"2.0","id":{id},"#).into_bytes();
            data.extend_from_slice(b"\xff\"result\":{}}");
            data
        }),
    )
    .await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("not a message"), "{e}");
    assert!(
        outcome.took < CALL_TIMEOUT,
        "not at once: {:?}",
        outcome.took
    );
}

#[tokio::test]
async fn invalid_utf8_inside_an_sse_events_string_is_replaced_as_sse_decodes_it() {
    let outcome = hostile_call(
        "invalid UTF-8 inside an SSE event's string × streamable",
        sse_answer_then_silence(|id| {
            let mut data = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"a"#
            )
            .into_bytes();
            data.extend_from_slice(b"\xffb\"}]}}");
            data
        }),
    )
    .await;
    assert_eq!(outcome.result.as_deref().ok(), Some("a\u{fffd}b"));
}

// ---------------------------------------------------------------------------------------------
// Bounds that held before (covered so they keep holding).

#[tokio::test]
async fn an_endless_sse_event_of_many_data_lines_is_cut_at_the_limit() {
    let mut line = b"data: ".to_vec();
    line.extend_from_slice(&[b'x'; 8 * 1024]);
    line.push(b'\n');
    let piece = chunk(&line.repeat(8));
    let outcome = hostile_call(
        "endless SSE event (data lines, no blank line) × streamable",
        on_call(move |_, writer| {
            let piece = piece.clone();
            async move {
                let head = chunked_head("text/event-stream");
                endless(writer, head, piece, 1 << 30).await;
                None
            }
        }),
    )
    .await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("exceeds the limit"), "{e}");
}

#[tokio::test]
async fn an_endless_sse_data_line_is_cut_at_the_limit() {
    let piece = chunk(&[b'x'; 64 * 1024]);
    let outcome = hostile_call(
        "endless SSE data line × streamable",
        on_call(move |_, writer| {
            let piece = piece.clone();
            async move {
                let mut head = chunked_head("text/event-stream");
                head.extend_from_slice(&chunk(b"data: "));
                endless(writer, head, piece, 1 << 30).await;
                None
            }
        }),
    )
    .await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
}

#[tokio::test]
async fn an_endless_json_body_is_cut_at_the_limit() {
    let piece = chunk(&[b' '; 64 * 1024]);
    let outcome = hostile_call(
        "endless JSON body × streamable",
        on_call(move |_, writer| {
            let piece = piece.clone();
            async move {
                let mut head = chunked_head("application/json");
                head.extend_from_slice(&chunk(b"{\"jsonrpc\":\"2.0\","));
                endless(writer, head, piece, 1 << 30).await;
                None
            }
        }),
    )
    .await;
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("max_message_size"), "{e}");
}

#[tokio::test]
async fn a_slow_loris_head_ends_at_the_calls_deadline() {
    let outcome = hostile_call(
        "slow-loris head (a byte per 100 ms) × streamable",
        on_call(|_, writer| async move {
            let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
            head.extend_from_slice(&b"X-Slow: yes\r\n".repeat(1000));
            dribble(writer, head, Duration::from_millis(100)).await;
            None
        }),
    )
    .await;
    assert_eq!(outcome.error().kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn a_slow_loris_body_ends_at_the_calls_deadline() {
    let outcome = hostile_call(
        "slow-loris body (a byte per 100 ms) × streamable",
        on_call(|req, mut writer| async move {
            let body = result_json(&req.id(), &"x".repeat(1000));
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            writer.write_all(head.as_bytes()).await.ok()?;
            dribble(writer, body, Duration::from_millis(100)).await;
            None
        }),
    )
    .await;
    assert_eq!(outcome.error().kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn unknown_and_duplicate_response_ids_leave_the_first_answer_and_the_session() {
    let server = Hostile::start(on_call(|req, mut writer| async move {
        let id = req.id();
        let mut events = sse_event(&result_json(&json!(987_654), "unknown"));
        events.extend(sse_event(&result_json(&json!("not-ours"), "unknown")));
        events.extend(sse_event(&result_json(&id, "first")));
        events.extend(sse_event(&result_json(&id, "duplicate")));
        let mut answer = chunked_head("text/event-stream");
        answer.extend(chunk(&events));
        answer.extend_from_slice(b"0\r\n\r\n");
        writer.write_all(&answer).await.ok()?;
        Some(writer)
    }))
    .await;
    let session = connect(&server).await;
    let first = call(&session).await;
    first.report(
        "unknown and duplicate response ids × streamable",
        CALL_TIMEOUT,
    );
    assert_eq!(first.result.as_deref().ok(), Some("first"));
    let second = call(&session).await;
    assert_eq!(
        second.result.as_deref().ok(),
        Some("first"),
        "the session goes on"
    );
    session.close().await;
}

#[tokio::test]
async fn a_flood_of_notifications_before_the_answer_stays_bounded() {
    const FLOOD: usize = 50_000;
    let server = Hostile::start(on_call(|req, writer| async move {
        let note = sse_event(
            br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}"#,
        );
        let mut writer = writer;
        writer
            .write_all(&chunked_head("text/event-stream"))
            .await
            .ok()?;
        let batch = chunk(&note.repeat(500));
        for _ in 0..FLOOD / 500 {
            writer.write_all(&batch).await.ok()?;
        }
        writer
            .write_all(&chunk(&sse_event(&result_json(&req.id(), "after the flood"))))
            .await
            .ok()?;
        writer.write_all(b"0\r\n\r\n").await.ok()?;
        Some(writer)
    }))
    .await;
    let session = connect(&server).await;
    let measure = Measure::start(&ALLOC);
    let started = Instant::now();
    let options = RequestOptions::new().with_timeout(DEADLINE);
    let result = session
        .call_tool("echo", None, options)
        .await
        .map(|r| r.text());
    let outcome = Measured {
        result,
        took: started.elapsed(),
        peak: measure.peak(),
    };
    outcome.report(
        &format!("flood of {FLOOD} notifications on the SSE answer × streamable"),
        DEADLINE,
    );
    assert_eq!(outcome.result.as_deref().ok(), Some("after the flood"));
    session.close().await;
}

#[tokio::test]
async fn a_redirect_to_another_origin_carries_no_credentials() {
    let elsewhere = Hostile::start(on_call(|req, mut writer| async move {
        let answer = response(
            "200 OK",
            &[("Content-Type", "application/json")],
            &result_json(&req.id(), "from elsewhere"),
        );
        writer.write_all(&answer).await.ok()?;
        Some(writer)
    }))
    .await;
    let location = Arc::new(elsewhere.url("/mcp"));
    let origin = Hostile::start(on_call(move |_, mut writer| {
        let location = location.clone();
        async move {
            let redirect = response("307 Temporary Redirect", &[("Location", &location)], b"");
            writer.write_all(&redirect).await.ok()?;
            Some(writer)
        }
    }))
    .await;
    let config = config(&origin.url("/mcp"))
        .header("X-Api-Key", "configured-secret")
        .auth(Arc::new(StaticBearer::new("bearer-secret")));
    let transport = StreamableHttpTransport::new(config).unwrap();
    let session = tokio::time::timeout(DEADLINE, ClientSession::connect(transport, (), options()))
        .await
        .unwrap()
        .unwrap();
    let outcome = call(&session).await;
    outcome.report("307 to another origin × streamable", CALL_TIMEOUT);
    // As documented in `redirect.rs`: a 307 is followed, with nothing the origin was
    // trusted with.
    assert_eq!(outcome.result.as_deref().ok(), Some("from elsewhere"));
    let seen = elsewhere.seen();
    let followed = seen
        .iter()
        .find(|r| r.rpc_method() == "tools/call")
        .unwrap();
    assert_eq!(followed.header("authorization"), None);
    assert_eq!(followed.header("x-api-key"), None);
    let at_origin = origin.seen();
    let sent = at_origin
        .iter()
        .find(|r| r.rpc_method() == "tools/call")
        .unwrap();
    assert_eq!(sent.header("authorization"), Some("Bearer bearer-secret"));
    session.close().await;
}

// ---------------------------------------------------------------------------------------------
// The HTTP+SSE transport.

/// An HTTP+SSE server: `GET /sse` opens the session's stream with the `endpoint` event
/// (`endpoint`), and every POST to it is accepted (202) and answered on the stream with what
/// `answer` makes of the request (`None`: as a well-behaved server).
fn http_sse_server(
    endpoint: String,
    answer: impl Fn(&Req) -> Option<Vec<u8>> + Send + Sync + 'static,
) -> Respond {
    let stream: Arc<Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>> = Arc::default();
    let answer = Arc::new(answer);
    Arc::new(move |req: Req, mut writer: OwnedWriteHalf| {
        let stream = stream.clone();
        let answer = answer.clone();
        let endpoint = endpoint.clone();
        Box::pin(async move {
            if req.method == "GET" {
                let (tx, mut rx) = mpsc::unbounded_channel();
                *stream.lock().unwrap() = Some(tx);
                writer
                    .write_all(&chunked_head("text/event-stream"))
                    .await
                    .ok()?;
                let first = format!("event: endpoint\ndata: {endpoint}\n\n");
                writer.write_all(&chunk(first.as_bytes())).await.ok()?;
                while let Some(bytes) = rx.recv().await {
                    writer.write_all(&chunk(&bytes)).await.ok()?;
                }
                return None;
            }
            writer
                .write_all(&response("202 Accepted", &[], b""))
                .await
                .ok()?;
            let on_stream = match req.rpc_method().as_str() {
                "initialize" | "tools/call" => {
                    let standard = standard(&req, None);
                    let body_at = standard
                        .windows(4)
                        .position(|w| w == b"\r\n\r\n")
                        .map(|at| at + 4)
                        .unwrap_or(0);
                    let fallback = sse_event(&standard[body_at..]);
                    Some(answer(&req).unwrap_or(fallback))
                }
                _ => None,
            };
            if let Some(bytes) = on_stream {
                let tx = stream.lock().unwrap().clone();
                if let Some(tx) = tx {
                    let _ = tx.send(bytes);
                }
            }
            Some(writer)
        }) as BoxFuture
    })
}

async fn http_sse_session(server: &Hostile) -> ClientSession {
    let transport = tokio::time::timeout(
        DEADLINE,
        HttpSseTransport::connect(config(&server.url("/sse"))),
    )
    .await
    .unwrap()
    .expect("the HTTP+SSE transport connects");
    tokio::time::timeout(DEADLINE, ClientSession::connect(transport, (), options()))
        .await
        .unwrap()
        .expect("connects")
}

#[tokio::test]
async fn an_http_sse_endpoint_on_another_origin_is_refused() {
    let server = Hostile::start(http_sse_server(
        "http://127.0.0.1:9/messages".into(),
        |_| None,
    ))
    .await;
    let e = tokio::time::timeout(
        DEADLINE,
        HttpSseTransport::connect(config(&server.url("/sse"))),
    )
    .await
    .unwrap()
    .err()
    .expect("refused");
    eprintln!("hostile: endpoint event to another origin × HTTP+SSE → {e}");
    assert!(e.message().contains("another origin"), "{e}");
    assert!(
        server.seen().iter().all(|r| r.method == "GET"),
        "nothing POSTed"
    );
}

#[tokio::test]
async fn an_http_sse_event_of_invalid_utf8_fails_its_request_at_once() {
    let server = Hostile::start(http_sse_server("/messages".into(), |req| {
        (req.rpc_method() == "tools/call").then(|| {
            let mut data = format!(r#"{{"jsonrpc":"2.0","id":{},"#, req.id()).into_bytes();
            data.extend_from_slice(b"\xfe\"result\":{}}");
            sse_event(&data)
        })
    }))
    .await;
    let session = http_sse_session(&server).await;
    let outcome = call(&session).await;
    outcome.report(
        "invalid UTF-8 breaking an event's JSON × HTTP+SSE",
        CALL_TIMEOUT,
    );
    let posts = server.seen();
    assert!(posts
        .iter()
        .any(|r| r.method == "POST" && r.path == "/messages"));
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(
        outcome.took < CALL_TIMEOUT,
        "not at once: {:?}",
        outcome.took
    );
    session.close().await;
}

#[tokio::test]
async fn an_http_sse_event_over_the_limit_fails_its_request_at_once() {
    let server = Hostile::start(http_sse_server("/messages".into(), |req| {
        (req.rpc_method() == "tools/call").then(|| {
            let text = "x".repeat(2 * MESSAGE_LIMIT);
            sse_event(&result_json(&req.id(), &text))
        })
    }))
    .await;
    let session = http_sse_session(&server).await;
    let outcome = call(&session).await;
    outcome.report("event over max_message_size × HTTP+SSE", CALL_TIMEOUT);
    let e = outcome.error();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(
        outcome.took < CALL_TIMEOUT,
        "not at once: {:?}",
        outcome.took
    );
    session.close().await;
}
