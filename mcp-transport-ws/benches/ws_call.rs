//! `ws_call`: what a `tools/call` over the WebSocket transport costs beyond the WebSocket
//! round trip itself.
//!
//! Rows (all sequential calls on one connection on a current-thread runtime, each awaited
//! before the next; the server runs on 127.0.0.1 in the same process and on the same thread):
//! - `floor/ws_echo`: the floor — a raw tokio-tungstenite client sends one text frame holding
//!   the bytes of a `tools/call` of `echo {"text":"hi"}` (~100 bytes) to a raw
//!   tokio-tungstenite server that sends each text frame back; one round trip per call.
//! - `ws/echo`: `ClientSession` over `WebSocketTransport` calling the fixture server's `echo`
//!   (mcp-testkit's `serve_ws`, which speaks the legacy era: the session falls back to
//!   `initialize`) with `{"text":"hi"}`; the answer's text is checked.
//! - `floor/ws_echo_256k`: the same raw pair, the server answering every frame with the
//!   fixture's answer to `large {"bytes": 262144}` (a 256 KiB text, built once).
//! - `ws/echo_256k`: `ClientSession` calling the fixture's `large {"bytes": 262144}`; the
//!   answer's length is checked.
//!
//! ```text
//! cargo bench -p mcp-transport-ws --bench ws_call
//! ```
//!
//! After the criterion group it times plain loops (the median of five runs) and prints one
//! line per row with the overhead and ratio against its floor: `ws_call: ws/echo … µs/call,
//! overhead … µs, ratio …x`. `WS_CALL_SUMMARY=0` skips them; `WS_CALL_SUMMARY_CALLS=<n>` sets
//! the calls per run of the small rows (default 20 000; the 256 KiB rows make a tenth).
//!
//! Client and server share one thread, so the figures are the software's own cost with no
//! cross-core wake-ups (the `taskset -c 0` case of /work/shared/benchmarking.md); to keep the
//! scheduler out entirely, run it under `taskset -c 0`.
//!
//! Instruction counts (client and server together): with `WS_CALL_COUNT=<row>:<calls>` the
//! bench makes only that many calls of that row and exits, e.g.
//!
//! ```text
//! BIN=$(ls -t target/release/deps/ws_call-* | grep -v '\.d$' | head -1)
//! for n in 1000 11000; do
//!   WS_CALL_COUNT=ws/echo:$n valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n $BIN
//! done
//! ```
//!
//! and the difference of the two totals over 10 000 calls is the per-call count.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mcp_core::{Era, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::{ServerOptions, WsFixture};
use mcp_transport_contract::bench::BenchRow;
use mcp_transport_ws::{WebSocketServerConfig, WebSocketTransport};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

/// The bytes a session sends for `tools/call echo {"text":"hi"}` (legacy era, as the
/// fixture speaks it).
const ECHO_REQUEST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
/// The bytes a session sends for `tools/call large {"bytes":262144}`.
const LARGE_REQUEST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"large","arguments":{"bytes":262144}}}"#;
/// The size of the large rows' text.
const LARGE_BYTES: usize = 256 * 1024;
/// Deadline for setting a row up and tearing it down (the calls themselves have none: a timer
/// per call would be part of the floor, and both peers are ours and answer or hang up).
const SETUP_DEADLINE: Duration = Duration::from_secs(20);

/// The fixture's answer to `large {"bytes":262144}`: what the 256 KiB floor sends back.
fn large_answer() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
        "x".repeat(LARGE_BYTES)
    )
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Row {
    FloorEcho,
    Echo,
    FloorLarge,
    Large,
}

impl BenchRow for Row {
    type Connected = Connected;

    const ALL: &'static [Row] = &[Row::FloorEcho, Row::Echo, Row::FloorLarge, Row::Large];

    fn name(self) -> &'static str {
        match self {
            Row::FloorEcho => "floor/ws_echo",
            Row::Echo => "ws/echo",
            Row::FloorLarge => "floor/ws_echo_256k",
            Row::Large => "ws/echo_256k",
        }
    }

    /// The floor a row is compared with (a floor is its own).
    fn floor(self) -> Row {
        match self {
            Row::FloorEcho | Row::Echo => Row::FloorEcho,
            Row::FloorLarge | Row::Large => Row::FloorLarge,
        }
    }

    fn is_large(self) -> bool {
        matches!(self, Row::FloorLarge | Row::Large)
    }

    /// The row's connection, with its server.
    async fn connect(self) -> Connected {
        tokio::time::timeout(SETUP_DEADLINE, async {
            match self {
                Row::FloorEcho | Row::FloorLarge => {
                    let request = if self == Row::FloorLarge {
                        LARGE_REQUEST
                    } else {
                        ECHO_REQUEST
                    };
                    let reply = (self == Row::FloorLarge).then(|| Utf8Bytes::from(large_answer()));
                    let answer_len = reply.as_ref().map_or(request.len(), |r| r.len());
                    let server = RawEchoServer::start(reply).await;
                    let (socket, _) = tokio_tungstenite::client_async(
                        format!("ws://{}/", server.addr),
                        connect_tcp(server.addr).await,
                    )
                    .await
                    .expect("the raw server upgrades");
                    Connected::Floor {
                        socket,
                        request: Utf8Bytes::from_static(request),
                        answer_len,
                        server,
                    }
                }
                Row::Echo | Row::Large => {
                    let fixture = mcp_testkit::serve_ws(
                        ServerOptions::default(),
                        "127.0.0.1:0".parse().expect("an address"),
                    )
                    .await
                    .expect("the WebSocket fixture starts");
                    let transport =
                        WebSocketTransport::connect(WebSocketServerConfig::new(fixture.url()))
                            .await
                            .expect("connects to the fixture");
                    let session = ClientSession::connect(transport, (), SessionOptions::default())
                        .await
                        .expect("a session");
                    assert_eq!(session.era(), Era::Legacy, "{}", self.name());
                    Connected::Session { session, fixture }
                }
            }
        })
        .await
        .expect("the row was set up in time")
    }

    async fn call(self, connected: &mut Connected) -> usize {
        connected.call(self).await
    }

    async fn close(connected: Connected) {
        connected.close().await
    }
}

async fn connect_tcp(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).await.expect("connects");
    stream.set_nodelay(true).expect("TCP_NODELAY");
    stream
}

/// A raw WebSocket server on 127.0.0.1 that answers every text frame with the same frame (or
/// with `reply`, when given). Its connections end with it; aborted when dropped.
struct RawEchoServer {
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl RawEchoServer {
    async fn start(reply: Option<Utf8Bytes>) -> RawEchoServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        let accept = tokio::spawn(async move {
            // Owned by the accept task: aborting it aborts every connection.
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let _ = stream.set_nodelay(true);
                            connections.spawn(echo_frames(stream, reply.clone()));
                        }
                        Err(_) => return,
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        RawEchoServer { addr, accept }
    }
}

impl RawEchoServer {
    /// Stops accepting and ends every connection; returns once they are gone.
    async fn shutdown(mut self) {
        self.accept.abort();
        // The accept task owns the connection tasks: once it is gone, so are they.
        let _ = (&mut self.accept).await;
    }
}

impl Drop for RawEchoServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn echo_frames(stream: TcpStream, reply: Option<Utf8Bytes>) {
    let Ok(mut socket) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    while let Some(Ok(frame)) = socket.next().await {
        let answer = match frame {
            Message::Text(text) => Message::Text(reply.clone().unwrap_or(text)),
            Message::Close(_) => return,
            // Pings are answered by tungstenite; nothing else is sent here.
            _ => continue,
        };
        if socket.send(answer).await.is_err() {
            return;
        }
    }
}

/// A row's open connection.
// One per row, made once and never moved in the timed loop: boxing would only add a pointer
// to follow on the floor's path.
#[allow(clippy::large_enum_variant)]
enum Connected {
    Floor {
        socket: WebSocketStream<TcpStream>,
        request: Utf8Bytes,
        /// The length of the answer the raw server sends back.
        answer_len: usize,
        server: RawEchoServer,
    },
    Session {
        session: ClientSession,
        fixture: WsFixture,
    },
}

impl Connected {
    /// One call; returns the answer's text length (kept from being optimized away).
    async fn call(&mut self, row: Row) -> usize {
        match self {
            Connected::Floor {
                socket,
                request,
                answer_len,
                ..
            } => {
                socket
                    .send(Message::Text(request.clone()))
                    .await
                    .expect("the frame goes out");
                match socket.next().await {
                    Some(Ok(Message::Text(answer))) => {
                        assert_eq!(answer.len(), *answer_len, "{}", row.name());
                        answer.len()
                    }
                    other => panic!("{}: the raw server answered {other:?}", row.name()),
                }
            }
            Connected::Session { session, .. } => {
                let (tool, arguments) = if row.is_large() {
                    ("large", json!({"bytes": LARGE_BYTES}))
                } else {
                    ("echo", json!({"text": "hi"}))
                };
                let result = session
                    .call_tool(tool, Some(arguments), RequestOptions::new())
                    .await
                    .unwrap_or_else(|e| panic!("{}: {tool} failed: {e}", row.name()));
                let text = match result.content.first().and_then(|c| c.as_text()) {
                    Some(text) => text,
                    None => panic!("{}: {tool} answered without text: {result:?}", row.name()),
                };
                if row.is_large() {
                    assert_eq!(text.len(), LARGE_BYTES, "{}", row.name());
                } else {
                    assert_eq!(text, "hi", "{}", row.name());
                }
                text.len()
            }
        }
    }

    /// Closes the connection and stops its server (bounded).
    async fn close(self) {
        tokio::time::timeout(SETUP_DEADLINE, async {
            match self {
                Connected::Floor {
                    mut socket, server, ..
                } => {
                    let _ = socket.close(None).await;
                    server.shutdown().await;
                }
                Connected::Session { session, fixture } => {
                    session.close().await;
                    fixture.shutdown().await;
                }
            }
        })
        .await
        .expect("the row was torn down in time");
    }
}

fn main() {
    mcp_transport_contract::bench::run::<Row>("ws_call");
}
