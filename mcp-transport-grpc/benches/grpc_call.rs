//! `grpc_call`: what a `tools/call` over the gRPC transport costs beyond the gRPC round trip
//! itself.
//!
//! Rows (all sequential calls on one connection on a current-thread runtime, each awaited
//! before the next; the servers run on 127.0.0.1 in the same process and on the same thread):
//! - `floor/grpc_echo`: the floor — a raw tonic client on the crate's generated
//!   `mcp.transport.v1.Mcp/Session` service sends one `JsonRpcLine` holding the bytes of a
//!   `tools/call` of `echo {"text":"hi"}` (~100 bytes) down one bidirectional stream and awaits
//!   the answer from a raw tonic server that streams every line back as it comes.
//! - `grpc/echo`: `ClientSession` over `GrpcTransport` calling `echo {"text":"hi"}` on the
//!   fixture server through a `GrpcBridge` (feature `server`). The bridge's backend is the
//!   fixture in process (mcp-transport-local's `fixture_server()`, the fixture's tools as a
//!   `LocalServer`, through its `LocalConnector`): no child process, so the row measures the
//!   gRPC hop, the bridge and the session, not a pipe to another process. The session
//!   negotiates the era the local fixture offers (the 2026-07-28 era); the answer's text is
//!   checked.
//! - `floor/grpc_echo_256k`: the same raw pair, the server answering every line with the
//!   fixture's answer to `large {"bytes": 262144}` (a 256 KiB text, built once, copied per
//!   answer as prost wants an owned message).
//! - `grpc/echo_256k`: `ClientSession` calling the fixture's `large {"bytes": 262144}` through
//!   the bridge; the answer's length is checked.
//!
//! ```text
//! cargo bench -p mcp-transport-grpc --bench grpc_call
//! ```
//!
//! After the criterion group it times plain loops (the median of five runs) and prints one
//! line per row with the overhead and ratio against its floor: `grpc_call: grpc/echo …
//! µs/call, overhead … µs, ratio …x`. `GRPC_CALL_SUMMARY=0` skips them;
//! `GRPC_CALL_SUMMARY_CALLS=<n>` sets the calls per run of the small rows (default 20 000; the
//! 256 KiB rows make a tenth).
//!
//! Client, bridge and backend share one thread, so the figures are the software's own cost
//! with no cross-core wake-ups (the `taskset -c 0` case of /work/shared/benchmarking.md); to
//! keep the scheduler out entirely, run it under `taskset -c 0`.
//!
//! Instruction counts (client and server together): with `GRPC_CALL_COUNT=<row>:<calls>` the
//! bench makes only that many calls of that row and exits, e.g.
//!
//! ```text
//! BIN=$(ls -t target/release/deps/grpc_call-* | grep -v '\.d$' | head -1)
//! for n in 1000 11000; do
//!   GRPC_CALL_COUNT=grpc/echo:$n valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n $BIN
//! done
//! ```
//!
//! and the difference of the two totals over 10 000 calls is the per-call count.

use std::pin::Pin;
use std::time::Duration;

use mcp_core::{Era, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_contract::bench::BenchRow;
use mcp_transport_grpc::proto::mcp_client::McpClient;
use mcp_transport_grpc::proto::mcp_server::{Mcp, McpServer};
use mcp_transport_grpc::proto::JsonRpcLine;
use mcp_transport_grpc::{GrpcBridge, GrpcBridgeHandle, GrpcServerConfig, GrpcTransport};
use mcp_transport_local::LocalServer;
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status, Streaming};

/// The bytes a session sends for `tools/call echo {"text":"hi"}` (without the 2026-07-28
/// era's `_meta`, as the WebSocket bench's floor, for one floor size across transports).
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
            Row::FloorEcho => "floor/grpc_echo",
            Row::Echo => "grpc/echo",
            Row::FloorLarge => "floor/grpc_echo_256k",
            Row::Large => "grpc/echo_256k",
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
                    let reply = (self == Row::FloorLarge).then(large_answer);
                    let answer_len = reply.as_ref().map_or(request.len(), String::len);
                    let server = RawEchoServer::start(reply).await;
                    let channel: Channel = Endpoint::from_shared(server.url())
                        .expect("a valid endpoint")
                        .tcp_nodelay(true)
                        .connect()
                        .await
                        .expect("connects to the raw server");
                    let (lines, outgoing) = mpsc::channel(16);
                    let answers = McpClient::new(channel)
                        .session(ReceiverStream::new(outgoing))
                        .await
                        .expect("the raw server takes the call")
                        .into_inner();
                    Connected::Floor {
                        lines,
                        answers,
                        request,
                        answer_len,
                        server,
                    }
                }
                Row::Echo | Row::Large => {
                    let backend = mcp_transport_local::fixture::fixture_server();
                    let bridge = GrpcBridge::new(backend.connector())
                        .serve("127.0.0.1:0".parse().expect("an address"))
                        .await
                        .expect("the bridge binds 127.0.0.1");
                    let transport = GrpcTransport::connect(GrpcServerConfig::new(bridge.url()))
                        .await
                        .expect("connects to the bridge");
                    let session = ClientSession::connect(transport, (), SessionOptions::default())
                        .await
                        .expect("a session");
                    assert_eq!(session.era(), Era::Modern, "{}", self.name());
                    Connected::Session {
                        session,
                        bridge,
                        backend,
                    }
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

/// The raw peer: streams every line back as it comes (or answers each with `reply`).
struct EchoPeer {
    reply: Option<String>,
}

type Answers = Pin<Box<dyn Stream<Item = Result<JsonRpcLine, Status>> + Send>>;

#[tonic::async_trait]
impl Mcp for EchoPeer {
    type SessionStream = Answers;

    async fn session(
        &self,
        request: Request<Streaming<JsonRpcLine>>,
    ) -> Result<Response<Answers>, Status> {
        let lines = request.into_inner();
        // The incoming stream is the outgoing one: no task, no queue between them.
        let answers: Answers = match self.reply.clone() {
            None => Box::pin(lines),
            Some(reply) => Box::pin(lines.map(move |line| {
                line.map(|_| JsonRpcLine {
                    line: reply.clone(),
                    ..JsonRpcLine::default()
                })
            })),
        };
        Ok(Response::new(answers))
    }
}

/// A raw tonic server on 127.0.0.1 serving [`EchoPeer`]. Aborted when dropped.
struct RawEchoServer {
    url: String,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
}

impl RawEchoServer {
    async fn start(reply: Option<String>) -> RawEchoServer {
        let incoming = TcpIncoming::bind("127.0.0.1:0".parse().expect("an address"))
            .expect("binds")
            .with_nodelay(Some(true));
        let url = format!("http://{}", incoming.local_addr().expect("an address"));
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .serve_with_incoming_shutdown(McpServer::new(EchoPeer { reply }), incoming, async {
                    let _ = stopped.await;
                })
                .await;
        });
        RawEchoServer {
            url,
            stop: Some(stop),
            server,
        }
    }

    fn url(&self) -> String {
        self.url.clone()
    }

    /// Stops serving; what is still running after the deadline is aborted.
    async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(SETUP_DEADLINE, &mut self.server)
            .await
            .is_err()
        {
            self.server.abort();
        }
    }
}

impl Drop for RawEchoServer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// A row's open connection.
// One per row, made once and never moved in the timed loop: boxing would only add a pointer
// to follow on the floor's path.
#[allow(clippy::large_enum_variant)]
enum Connected {
    Floor {
        /// The call's request stream.
        lines: mpsc::Sender<JsonRpcLine>,
        /// The call's response stream.
        answers: Streaming<JsonRpcLine>,
        request: &'static str,
        /// The length of the answer the raw server sends back.
        answer_len: usize,
        server: RawEchoServer,
    },
    Session {
        session: ClientSession,
        bridge: GrpcBridgeHandle,
        backend: LocalServer,
    },
}

impl Connected {
    /// One call; returns the answer's text length (kept from being optimized away).
    async fn call(&mut self, row: Row) -> usize {
        match self {
            Connected::Floor {
                lines,
                answers,
                request,
                answer_len,
                ..
            } => {
                let line = JsonRpcLine {
                    line: (*request).to_owned(),
                    ..JsonRpcLine::default()
                };
                lines.send(line).await.expect("the call is open");
                match answers.message().await {
                    Ok(Some(answer)) => {
                        assert_eq!(answer.line.len(), *answer_len, "{}", row.name());
                        answer.line.len()
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

    /// Ends the call or session and stops its servers (bounded).
    async fn close(self) {
        tokio::time::timeout(SETUP_DEADLINE, async {
            match self {
                Connected::Floor {
                    lines,
                    mut answers,
                    server,
                    ..
                } => {
                    // Half-close, then read to the end: the call ends with the server's status.
                    drop(lines);
                    while let Ok(Some(_)) = answers.message().await {}
                    server.shutdown().await;
                }
                Connected::Session {
                    session,
                    bridge,
                    backend,
                } => {
                    session.close().await;
                    bridge.shutdown().await;
                    backend.shutdown();
                }
            }
        })
        .await
        .expect("the row was torn down in time");
    }
}

fn main() {
    mcp_transport_contract::bench::run::<Row>("grpc_call");
}
