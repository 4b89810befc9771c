//! The fixture over WebSocket (`--ws ADDR`), bound to loopback only, in the shape the
//! official SDKs' former WebSocket transports used: one endpoint, `/mcp`; the upgrade must
//! offer the subprotocol `mcp` (400 otherwise) and the server selects it; one JSON-RPC
//! message per UTF-8 text frame, both ways; every connection is one fixture session (its own
//! [`FixtureServer`]), the socket being the session (no session id, no resumption).
//!
//! - A binary frame from the client is answered with close 1003, a text frame over
//!   [`MAX_LINE_BYTES`] with close 1009; a close frame is answered with one (tungstenite).
//! - Pings are answered (tungstenite); the fixture sends none.
//! - `--http-bearer TOKEN`: the upgrade needs `Authorization: Bearer TOKEN`, else HTTP 401
//!   with `WWW-Authenticate: Bearer realm="fixture"`.
//! - `--garbage-lines`: a text frame `this is not json` before every response.
//! - The `crash` tool makes the **peer** die: the connection is dropped without a close frame
//!   and without an answer (the process goes on: tests run the fixture in-process).
//! - When a connection ends, its requests still running (`slow`, `ask_*`) are cancelled.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::handshake::server::{
    Callback, ErrorResponse, Request, Response,
};
use tokio_tungstenite::tungstenite::http::{header, HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::http::{lock, MCP_PATH};
use crate::jsonrpc;
use crate::options::ServerOptions;
use crate::server::{FixtureServer, Outgoing, OutgoingKind, OutgoingReceiver};
use crate::stdio::{GARBAGE_LINE, MAX_LINE_BYTES};

/// The subprotocol the upgrade must offer and the fixture selects.
pub const SUBPROTOCOL: &str = "mcp";

/// How long a client has to complete the upgrade.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a close frame may take to go out.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// Bytes of queued messages written before one flush.
const MAX_BATCH: usize = 1 << 20;

/// A running WebSocket fixture. Dropping it (or [`shutdown`](Self::shutdown)) stops the
/// listener and every connection.
pub struct WsFixture {
    local_addr: SocketAddr,
    live: Arc<AtomicUsize>,
    accept: Option<JoinHandle<()>>,
}

impl WsFixture {
    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint, `ws://IP:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("ws://{}{MCP_PATH}", self.local_addr)
    }

    /// WebSocket connections open right now (upgraded and not yet ended).
    pub fn connection_count(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Stops the server and waits until the listener is closed and every connection aborted.
    pub async fn shutdown(mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
            // The accept task owns the connection tasks: once it is gone, so are they.
            let _ = accept.await;
        }
    }
}

impl Drop for WsFixture {
    fn drop(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
        }
    }
}

impl std::fmt::Debug for WsFixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsFixture")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

/// Serves the fixture over WebSocket on `addr`, which must be a loopback address (port 0 picks
/// a free port). Must be called within a tokio runtime; the server runs in spawned tasks until
/// the returned handle is shut down or dropped.
pub async fn serve_ws(options: ServerOptions, addr: SocketAddr) -> io::Result<WsFixture> {
    if !addr.ip().is_loopback() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to serve WebSocket on {addr}: only loopback addresses are allowed"),
        ));
    }
    let listener = TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    let live = Arc::new(AtomicUsize::new(0));
    let accept = tokio::spawn(accept_loop(listener, Arc::new(options), live.clone()));
    Ok(WsFixture {
        local_addr,
        live,
        accept: Some(accept),
    })
}

async fn accept_loop(listener: TcpListener, options: Arc<ServerOptions>, live: Arc<AtomicUsize>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve_connection(stream, options.clone(), live.clone()));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Counts a live connection for as long as it lives (also when its task is aborted).
struct Live(Arc<AtomicUsize>);

impl Live {
    fn new(live: Arc<AtomicUsize>) -> Live {
        live.fetch_add(1, Ordering::AcqRel);
        Live(live)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Checks the upgrade request: the path, the bearer token (`--http-bearer`), the subprotocol.
struct UpgradeCheck<'a>(&'a ServerOptions);

impl Callback for UpgradeCheck<'_> {
    fn on_request(self, request: &Request, response: Response) -> Result<Response, ErrorResponse> {
        check_upgrade(self.0, request, response)
    }
}

// The refusal is tungstenite's `ErrorResponse` (an HTTP response), as its `Callback` wants.
#[allow(clippy::result_large_err)]
fn check_upgrade(
    options: &ServerOptions,
    request: &Request,
    mut response: Response,
) -> Result<Response, ErrorResponse> {
    if request.uri().path() != MCP_PATH {
        return Err(refusal(StatusCode::NOT_FOUND, "not found"));
    }
    if let Some(token) = &options.http_bearer {
        let expected = format!("Bearer {token}");
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if presented != Some(expected.as_str()) {
            let mut refused = refusal(StatusCode::UNAUTHORIZED, "Unauthorized");
            refused.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"fixture\""),
            );
            return Err(refused);
        }
    }
    let offered = request
        .headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == SUBPROTOCOL);
    if !offered {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            "the `mcp` subprotocol is required (Sec-WebSocket-Protocol: mcp)",
        ));
    }
    response.headers_mut().insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(SUBPROTOCOL),
    );
    Ok(response)
}

fn refusal(status: StatusCode, message: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(message.to_owned()));
    *response.status_mut() = status;
    response
}

/// How a connection's read loop ended.
enum End {
    /// The client closed it (or the connection dropped).
    Closed,
    /// `crash`: drop the connection without a close frame.
    Crash,
    /// Close with this frame.
    Refuse(CloseFrame),
}

async fn serve_connection(stream: TcpStream, options: Arc<ServerOptions>, live: Arc<AtomicUsize>) {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_LINE_BYTES))
        .max_frame_size(Some(MAX_LINE_BYTES));
    let upgrade = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        UpgradeCheck(&options),
        Some(config),
    );
    let socket = match tokio::time::timeout(HANDSHAKE_TIMEOUT, upgrade).await {
        Ok(Ok(socket)) => socket,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "WebSocket upgrade refused or failed");
            return;
        }
        Err(_) => return,
    };
    let _live = Live::new(live);
    let (sink, mut frames) = socket.split();
    let (server, outgoing) = FixtureServer::new((*options).clone());
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let _cancel = CancelOnEnd {
        server: server.clone(),
        in_flight: in_flight.clone(),
    };
    let (close_tx, close_rx) = oneshot::channel();
    let writer = tokio::spawn(write_frames(
        sink,
        outgoing,
        close_rx,
        in_flight.clone(),
        options.garbage_lines,
    ));
    let writer = AbortOnDrop(writer);
    let end = loop {
        match frames.next().await {
            Some(Ok(Message::Text(text))) => match peek(text.as_bytes()) {
                Peeked::Crash => break End::Crash,
                Peeked::Request(key) => {
                    lock(&in_flight).insert(key);
                    server.handle_line(text.as_bytes());
                }
                Peeked::Other => server.handle_line(text.as_bytes()),
            },
            Some(Ok(Message::Binary(_))) => {
                break End::Refuse(close_frame(
                    CloseCode::Unsupported,
                    "MCP messages are text frames",
                ))
            }
            Some(Ok(Message::Close(_))) => {
                // Reading on sends tungstenite's answer and ends when the client hangs up.
                let _ = tokio::time::timeout(CLOSE_GRACE, async {
                    while frames.next().await.is_some() {}
                })
                .await;
                break End::Closed;
            }
            Some(Ok(_)) => {}
            Some(Err(WsError::Capacity(CapacityError::MessageTooLong { .. }))) => {
                break End::Refuse(close_frame(CloseCode::Size, "message too large"))
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, "WebSocket connection failed");
                break End::Closed;
            }
            None => break End::Closed,
        }
    };
    match end {
        End::Closed => {}
        End::Crash => {
            tracing::debug!("crash tool: dropping the WebSocket connection without a close frame");
            // Both halves gone, the socket is closed without another byte.
            let mut writer = writer;
            writer.0.abort();
            let _ = (&mut writer.0).await;
            drop(frames);
        }
        End::Refuse(frame) => {
            let _ = close_tx.send(frame);
            let mut writer = writer;
            let _ = tokio::time::timeout(CLOSE_GRACE, &mut writer.0).await;
        }
    }
}

fn close_frame(code: CloseCode, reason: &'static str) -> CloseFrame {
    CloseFrame {
        code,
        reason: reason.into(),
    }
}

/// What the fixture needs to know of an incoming message before handling it.
enum Peeked {
    /// A `tools/call` of `crash`.
    Crash,
    /// A request (its id key, to cancel it if the connection ends first).
    Request(String),
    /// Anything else (handled as is; bad JSON is answered by the core).
    Other,
}

fn peek(text: &[u8]) -> Peeked {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
    }
    let Ok(envelope) = serde_json::from_slice::<Envelope>(text) else {
        return Peeked::Other;
    };
    let (Some(id), Some(method)) = (envelope.id, envelope.method) else {
        return Peeked::Other;
    };
    if method == "tools/call" {
        let call = envelope
            .params
            .and_then(|p| serde_json::from_str::<Call>(p.get()).ok());
        if call.is_some_and(|c| c.name == "crash") {
            return Peeked::Crash;
        }
    }
    Peeked::Request(jsonrpc::id_key_raw(id))
}

/// The id key of a response line, if it has one.
fn response_key(json: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
    }
    serde_json::from_str::<Envelope>(json)
        .ok()?
        .id
        .map(jsonrpc::id_key_raw)
}

/// Cancels the connection's unanswered requests when it ends, however it ends.
struct CancelOnEnd {
    server: FixtureServer,
    in_flight: Arc<Mutex<HashSet<String>>>,
}

impl Drop for CancelOnEnd {
    fn drop(&mut self) {
        let keys: Vec<String> = lock(&self.in_flight).drain().collect();
        for key in keys {
            // `key` is the request id as JSON text.
            let cancel = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{key},"reason":"connection closed"}}}}"#
            );
            self.server.handle_line(cancel.as_bytes());
        }
    }
}

/// A task that is aborted when its handle is dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

type Sink = SplitSink<WebSocketStream<TcpStream>, Message>;

/// The connection's one writer: everything the fixture emits, as text frames, batched into one
/// flush; a close frame when the read loop asks for one.
async fn write_frames(
    mut sink: Sink,
    mut outgoing: OutgoingReceiver,
    mut close: oneshot::Receiver<CloseFrame>,
    in_flight: Arc<Mutex<HashSet<String>>>,
    garbage: bool,
) {
    loop {
        let first = tokio::select! {
            biased;
            frame = &mut close => {
                if let Ok(frame) = frame {
                    let _ = tokio::time::timeout(CLOSE_GRACE, sink.send(Message::Close(Some(frame)))).await;
                }
                return;
            }
            message = outgoing.recv() => message,
        };
        let Some(first) = first else {
            return;
        };
        let mut bytes = 0;
        let mut next = Some(first);
        while let Some(message) = next {
            bytes += message.json.len();
            if let Err(e) = feed(&mut sink, message, &in_flight, garbage).await {
                tracing::debug!(error = %e, "WebSocket write failed");
                return;
            }
            next = if bytes < MAX_BATCH {
                outgoing.try_recv().ok()
            } else {
                None
            };
        }
        if let Err(e) = sink.flush().await {
            tracing::debug!(error = %e, "WebSocket write failed");
            return;
        }
    }
}

async fn feed(
    sink: &mut Sink,
    message: Outgoing,
    in_flight: &Mutex<HashSet<String>>,
    garbage: bool,
) -> Result<(), WsError> {
    if message.kind == OutgoingKind::Response {
        if let Some(key) = response_key(&message.json) {
            lock(in_flight).remove(&key);
        }
        if garbage {
            sink.feed(Message::text(GARBAGE_LINE)).await?;
        }
    }
    sink.feed(Message::text(message.json)).await
}

#[cfg(test)]
mod tests;
