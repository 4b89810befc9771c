//! The client transport against raw tonic peers (the generated service, no bridge), for what a
//! well-behaved bridge never does: lines that are not JSON-RPC objects, compatibility fields,
//! refusals, a server that does not serve the method, a peer that vanishes mid-call. And a raw
//! tonic client against the bridge: the wire as any gRPC stack sees it.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use mcp_core::{
    Message, ProtocolVersion, Request as RpcRequest, Transport, TransportErrorKind,
    TransportReceiver, TransportSender,
};
use mcp_transport_grpc::proto::mcp_client::McpClient;
use mcp_transport_grpc::proto::mcp_server::{Mcp, McpServer};
use mcp_transport_grpc::proto::JsonRpcLine;
use mcp_transport_grpc::{GrpcServerConfig, GrpcTransport};
use mcp_wire::{
    AuthChallenge, AuthProvider, AuthTarget, ChallengeOutcome, Credentials, DpopProof, StaticBearer,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// What a scripted peer does with a call.
#[derive(Clone)]
enum Script {
    /// Answers every line it receives with these lines (then keeps reading).
    Reply(Vec<JsonRpcLine>),
    /// Refuses the call with this status.
    Refuse(Status),
    /// Accepts the call and answers nothing.
    Silent,
    /// Reads this many lines before answering anything (no response headers), then ends the
    /// call with the status — or, with none, waits until the peer is killed.
    ReadThen(usize, Option<Status>),
}

/// One call as the peer saw it.
#[derive(Clone, Debug)]
struct SeenCall {
    /// The call's metadata, (name, value).
    metadata: Vec<(String, String)>,
    /// The lines it received.
    lines: Vec<JsonRpcLine>,
}

#[derive(Clone)]
struct ScriptedPeer {
    /// The script of each call in turn; the last one goes on for any further calls.
    scripts: Arc<Vec<Script>>,
    calls: Arc<Mutex<Vec<SeenCall>>>,
}

#[tonic::async_trait]
impl Mcp for ScriptedPeer {
    type SessionStream = ReceiverStream<Result<JsonRpcLine, Status>>;

    async fn session(
        &self,
        request: Request<Streaming<JsonRpcLine>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let metadata: Vec<(String, String)> = request
            .metadata()
            .clone()
            .into_headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("<binary>").to_owned()))
            .collect();
        let index = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(SeenCall {
                metadata,
                lines: Vec::new(),
            });
            calls.len() - 1
        };
        let script = &self.scripts[index.min(self.scripts.len() - 1)];
        let mut inbound = request.into_inner();
        let replies = match script {
            Script::Refuse(status) => return Err(status.clone()),
            Script::Reply(lines) => lines.clone(),
            Script::Silent => Vec::new(),
            Script::ReadThen(count, end) => {
                for _ in 0..*count {
                    if let Ok(Some(line)) = inbound.message().await {
                        self.calls.lock().unwrap()[index].lines.push(line);
                    }
                }
                match end {
                    Some(status) => return Err(status.clone()),
                    None => std::future::pending().await,
                }
            }
        };
        let (tx, rx) = mpsc::channel(16);
        let calls = self.calls.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = inbound.message().await {
                calls.lock().unwrap()[index].lines.push(line);
                for reply in &replies {
                    if tx.send(Ok(reply.clone())).await.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

/// A scripted peer on 127.0.0.1, on a runtime of its own: dropping it kills the peer with
/// every connection at once, as a process that dies would.
struct RawPeer {
    addr: SocketAddr,
    peer: ScriptedPeer,
    runtime: Option<tokio::runtime::Runtime>,
}

impl RawPeer {
    fn start(script: Script) -> RawPeer {
        RawPeer::start_each(vec![script])
    }

    /// A peer that follows `scripts[0]` for the first call, `scripts[1]` for the second, ….
    fn start_each(scripts: Vec<Script>) -> RawPeer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let peer = ScriptedPeer {
            scripts: Arc::new(scripts),
            calls: Arc::default(),
        };
        let incoming = {
            // Sockets register with the runtime they are made in: the peer's own.
            let _inside = runtime.enter();
            tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().unwrap()).unwrap()
        };
        let addr = incoming.local_addr().unwrap();
        let service = McpServer::new(peer.clone());
        runtime.spawn(tonic::transport::Server::builder().serve_with_incoming(service, incoming));
        RawPeer {
            addr,
            peer,
            runtime: Some(runtime),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn calls(&self) -> Vec<SeenCall> {
        self.peer.calls.lock().unwrap().clone()
    }

    /// The peer dies: its runtime, tasks and sockets go at once.
    fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for RawPeer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn line(text: &str) -> JsonRpcLine {
    JsonRpcLine {
        line: text.into(),
        ..JsonRpcLine::default()
    }
}

fn ping(id: i64) -> Message {
    Message::Request(RpcRequest::new(id, "ping", None))
}

async fn receive(
    receiver: &mut impl TransportReceiver,
) -> Option<Result<Message, mcp_core::TransportError>> {
    tokio::time::timeout(DEADLINE, receiver.receive())
        .await
        .expect("the receiver yields in time")
}

#[tokio::test]
async fn the_call_carries_headers_protocol_version_and_credentials() {
    let peer = RawPeer::start(Script::Reply(vec![line(
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
    )]));
    let config = GrpcServerConfig::new(peer.url())
        .header("X-Tenant", "blue")
        .auth(Arc::new(StaticBearer::new("t0ken")));
    let (sender, mut receiver) = GrpcTransport::connect(config).await.unwrap().split();
    sender.set_protocol_version(Some(ProtocolVersion::V2025_11_25));
    sender.send(ping(1)).await.unwrap();
    let answer = receive(&mut receiver).await.unwrap().unwrap();
    assert!(
        matches!(answer, Message::Response(ref r) if r.outcome.is_ok()),
        "{answer:?}"
    );
    sender.close().await.unwrap();
    let calls = peer.calls();
    assert_eq!(calls.len(), 1);
    let SeenCall { metadata, lines } = &calls[0];
    let get = |name: &str| {
        metadata
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("x-tenant"), Some("blue"));
    assert_eq!(get("authorization"), Some("Bearer t0ken"));
    assert_eq!(get("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(get("content-type"), Some("application/grpc"));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].line, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(lines[0].related_request_id, "");
    assert_eq!(lines[0].resumption_token, "");
}

/// A provider of DPoP-bound credentials that records what it was asked.
#[derive(Default)]
struct DpopProvider {
    targets: Mutex<Vec<(String, String)>>,
}

#[async_trait::async_trait]
impl AuthProvider for DpopProvider {
    async fn authorization(
        &self,
        target: &AuthTarget<'_>,
    ) -> Result<Option<Credentials>, mcp_core::Error> {
        self.targets
            .lock()
            .unwrap()
            .push((target.method.to_owned(), target.url.to_owned()));
        Ok(Some(Credentials {
            authorization: mcp_wire::AuthorizationValue::new("DPoP bound-token"),
            dpop: Some(DpopProof::new("proof.jwt.sig")),
        }))
    }

    async fn on_challenge(
        &self,
        _challenge: &AuthChallenge,
    ) -> Result<ChallengeOutcome, mcp_core::Error> {
        Ok(ChallengeOutcome::GiveUp)
    }
}

#[tokio::test]
async fn dpop_credentials_are_asked_for_the_session_post_and_sent_as_metadata() {
    let peer = RawPeer::start(Script::Reply(vec![]));
    let provider = Arc::new(DpopProvider::default());
    let config = GrpcServerConfig::new(format!("grpc://{}", peer.addr)).auth(provider.clone());
    let (sender, _receiver) = GrpcTransport::connect(config).await.unwrap().split();
    sender.send(ping(1)).await.unwrap();
    mcp_testkit::wait::until("the peer to see the line", DEADLINE, || {
        peer.calls()
            .first()
            .is_some_and(|call| !call.lines.is_empty())
    })
    .await;
    sender.close().await.unwrap();
    let metadata = &peer.calls()[0].metadata;
    assert!(metadata.contains(&("authorization".into(), "DPoP bound-token".into())));
    assert!(metadata.contains(&("dpop".into(), "proof.jwt.sig".into())));
    assert!(
        !metadata.iter().any(|(k, _)| k == "mcp-protocol-version"),
        "no version was known when the call started"
    );
    assert_eq!(
        *provider.targets.lock().unwrap(),
        vec![(
            "POST".to_owned(),
            format!("http://{}/mcp.transport.v1.Mcp/Session", peer.addr)
        )]
    );
}

#[tokio::test]
async fn lines_that_are_not_json_rpc_objects_are_recoverable_errors() {
    let peer = RawPeer::start(Script::Reply(vec![
        line(r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#),
        line("42"),
        line(""),
        line(r#"{"jsonrpc":"2.0","id":7,"bogus":true}"#),
        line(r#"{"jsonrpc":"2.0","id":1,"res"#),
        JsonRpcLine {
            line: r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#.into(),
            related_request_id: "1".into(),
            resumption_token: "opaque".into(),
        },
    ]));
    let (sender, mut receiver) = GrpcTransport::connect(GrpcServerConfig::new(peer.url()))
        .await
        .unwrap()
        .split();
    sender.send(ping(1)).await.unwrap();
    let batch = receive(&mut receiver).await.unwrap().unwrap_err();
    assert_eq!(batch.kind(), TransportErrorKind::InvalidMessage);
    assert!(!batch.is_fatal());
    assert!(
        batch.message().contains("batches are not allowed"),
        "{batch}"
    );
    let number = receive(&mut receiver).await.unwrap().unwrap_err();
    assert!(!number.is_fatal());
    assert!(number.message().contains("not a JSON object"), "{number}");
    // The empty line is skipped.
    let bogus = receive(&mut receiver).await.unwrap().unwrap_err();
    assert_eq!(bogus.kind(), TransportErrorKind::InvalidMessage);
    assert!(!bogus.is_fatal());
    assert_eq!(bogus.request_id(), Some(&mcp_core::RequestId::Number(7)));
    // Torn after its id: the request it names fails at once (as on stdio).
    let torn = receive(&mut receiver).await.unwrap().unwrap_err();
    assert!(!torn.is_fatal());
    assert_eq!(torn.request_id(), Some(&mcp_core::RequestId::Number(1)));
    // The compatibility fields are ignored.
    let good = receive(&mut receiver).await.unwrap().unwrap();
    assert!(
        matches!(good, Message::Response(ref r) if r.outcome.is_ok()),
        "{good:?}"
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_refused_call_is_unauthorized_naming_the_code_and_message() {
    for (status, code) in [
        (Status::unauthenticated("token expired"), "UNAUTHENTICATED"),
        (
            Status::permission_denied("wrong tenant"),
            "PERMISSION_DENIED",
        ),
    ] {
        let message = status.message().to_owned();
        let peer = RawPeer::start(Script::Refuse(status));
        let (sender, mut receiver) = GrpcTransport::connect(GrpcServerConfig::new(peer.url()))
            .await
            .unwrap()
            .split();
        sender.send(ping(1)).await.unwrap();
        let err = receive(&mut receiver).await.unwrap().unwrap_err();
        assert_eq!(err.kind(), TransportErrorKind::Unauthorized, "{err}");
        assert!(err.is_fatal());
        assert!(err.message().contains(code), "{err}");
        assert!(err.message().contains(&message), "{err}");
        assert!(receive(&mut receiver).await.is_none());
        let later = sender.send(ping(2)).await.unwrap_err();
        assert_eq!(later.kind(), TransportErrorKind::Closed);
        assert!(later.message().contains(code), "{later}");
        sender.close().await.unwrap();
    }
}

#[tokio::test]
async fn other_statuses_are_fatal_errors_naming_the_code_and_message() {
    let peer = RawPeer::start(Script::Refuse(Status::internal("the server broke")));
    let (sender, mut receiver) = GrpcTransport::connect(GrpcServerConfig::new(peer.url()))
        .await
        .unwrap()
        .split();
    sender.send(ping(1)).await.unwrap();
    let err = receive(&mut receiver).await.unwrap().unwrap_err();
    assert!(err.is_fatal());
    assert!(
        err.message().contains("INTERNAL: the server broke"),
        "{err}"
    );
    // Nothing shows the handler did not read the ping first.
    assert_eq!(err.kind(), TransportErrorKind::PeerGone, "{err}");
    assert!(err.may_have_been_delivered(), "{err:?}");
    sender.close().await.unwrap();
}

#[tokio::test]
async fn the_bridge_answers_other_methods_unimplemented() {
    // What a server without `Session` answers our client (status.rs words it: "does not
    // serve /mcp.transport.v1.Mcp/Session").
    let bridged = Bridged::start(&[]).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", bridged.bridge.local_addr()))
            .unwrap()
            .connect()
            .await
            .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let err = grpc
        .unary::<JsonRpcLine, JsonRpcLine, _>(
            Request::new(line("{}")),
            tonic::codegen::http::uri::PathAndQuery::from_static("/mcp.transport.v1.Mcp/Other"),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unimplemented);
}

#[tokio::test]
async fn the_peer_vanishing_mid_call_fails_the_connection_at_once() {
    let mut peer = RawPeer::start(Script::Silent);
    let (sender, mut receiver) = GrpcTransport::connect(GrpcServerConfig::new(peer.url()))
        .await
        .unwrap()
        .split();
    sender.send(ping(1)).await.unwrap();
    mcp_testkit::wait::until("the peer to see the line", DEADLINE, || {
        peer.calls()
            .first()
            .is_some_and(|call| !call.lines.is_empty())
    })
    .await;
    peer.kill();
    let err = receive(&mut receiver).await.unwrap().unwrap_err();
    assert!(err.is_fatal(), "{err}");
    assert!(
        matches!(
            err.kind(),
            TransportErrorKind::PeerGone | TransportErrorKind::Connect
        ),
        "{err:?}"
    );
    assert!(err.message().contains(&peer.addr.to_string()), "{err}");
    assert!(receive(&mut receiver).await.is_none());
    let later = sender.send(ping(2)).await.unwrap_err();
    assert_eq!(later.kind(), TransportErrorKind::Closed, "{later}");
    tokio::time::timeout(DEADLINE, sender.close())
        .await
        .expect("close is bounded")
        .unwrap();
}

#[tokio::test]
async fn connecting_to_nothing_fails_clearly() {
    // A port that was just free: nothing listens there.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = match GrpcTransport::connect(
        GrpcServerConfig::new(format!("grpc://{addr}")).connect_timeout(Duration::from_secs(5)),
    )
    .await
    {
        Ok(_) => panic!("nothing listens on {addr}"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), TransportErrorKind::Connect);
    assert!(err.message().contains(&addr.to_string()), "{err}");
    assert!(err.message().contains("could not connect"), "{err}");
}

#[tokio::test]
async fn a_raw_tonic_client_speaks_to_the_bridge() {
    let bridged = Bridged::start(&[]).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", bridged.bridge.local_addr()))
            .unwrap()
            .connect()
            .await
            .unwrap();
    let mut client = McpClient::new(channel);
    let (tx, rx) = mpsc::channel(4);
    tx.send(line(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
    ))
    .await
    .unwrap();
    let mut answers = client
        .session(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let answer = tokio::time::timeout(DEADLINE, answers.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&answer.line).unwrap();
    assert_eq!(value["id"], 1);
    assert_eq!(value["result"]["serverInfo"]["name"], "mcp-fixture-server");
    assert_eq!(answer.related_request_id, "");
    // A line that is not JSON gets a JSON-RPC parse error, and the call goes on.
    tx.send(line("not json")).await.unwrap();
    let answer = answers.message().await.unwrap().unwrap();
    let value: serde_json::Value = serde_json::from_str(&answer.line).unwrap();
    assert_eq!(value["error"]["code"], -32700);
    assert_eq!(value["id"], serde_json::Value::Null);
    // Half-closing ends the call with OK and the backend with it.
    drop(tx);
    assert!(tokio::time::timeout(DEADLINE, answers.message())
        .await
        .unwrap()
        .unwrap()
        .is_none());
    bridged.wait_all_ended().await;
}

fn tool_call(id: i64) -> Message {
    Message::Request(RpcRequest::new(
        id,
        "tools/call",
        Some(mcp_core::Payload::from_json_str(r#"{"name":"charge","arguments":{}}"#).unwrap()),
    ))
}

#[tokio::test]
async fn a_call_that_fails_after_reading_but_before_answering_may_have_been_handled() {
    // grpc-js and grpc-go send response headers only with the first message: a slow handler
    // that read the request and then failed never sent any.
    for status in [
        Status::internal("the handler crashed"),
        Status::unavailable("the backend went away"),
    ] {
        let expected = status.message().to_owned();
        let peer = RawPeer::start(Script::ReadThen(1, Some(status)));
        let (sender, mut receiver) = GrpcTransport::connect(GrpcServerConfig::new(peer.url()))
            .await
            .unwrap()
            .split();
        sender.send(tool_call(1)).await.unwrap();
        let err = receive(&mut receiver).await.unwrap().unwrap_err();
        assert!(err.is_fatal(), "{err}");
        assert_eq!(err.kind(), TransportErrorKind::PeerGone, "{err}");
        assert!(err.may_have_been_delivered(), "{err:?}");
        assert!(err.message().contains(&expected), "{err}");
        assert_eq!(peer.calls()[0].lines.len(), 1);
        sender.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_peer_that_dies_after_reading_but_before_answering_may_have_handled_the_call() {
    let mut peer = RawPeer::start(Script::ReadThen(1, None));
    let (sender, mut receiver) = GrpcTransport::connect(GrpcServerConfig::new(peer.url()))
        .await
        .unwrap()
        .split();
    sender.send(tool_call(1)).await.unwrap();
    mcp_testkit::wait::until("the peer to read the call", DEADLINE, || {
        peer.calls()
            .first()
            .is_some_and(|call| !call.lines.is_empty())
    })
    .await;
    peer.kill();
    let err = receive(&mut receiver).await.unwrap().unwrap_err();
    assert!(err.is_fatal(), "{err}");
    assert_eq!(err.kind(), TransportErrorKind::PeerGone, "{err}");
    assert!(err.may_have_been_delivered(), "{err:?}");
    assert!(err.message().contains(&peer.addr.to_string()), "{err}");
    tokio::time::timeout(DEADLINE, sender.close())
        .await
        .expect("close is bounded")
        .unwrap();
}

#[tokio::test]
async fn a_server_without_the_method_fails_as_never_sent() {
    let peer = RawPeer::start(Script::Refuse(Status::unimplemented("")));
    let (sender, mut receiver) = GrpcTransport::connect(GrpcServerConfig::new(peer.url()))
        .await
        .unwrap()
        .split();
    sender.send(tool_call(1)).await.unwrap();
    let err = receive(&mut receiver).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), TransportErrorKind::Connect, "{err}");
    assert!(!err.may_have_been_delivered(), "{err:?}");
    assert!(err.message().contains("does not serve"), "{err}");
    sender.close().await.unwrap();
}

/// Hands out `token-1`, `token-2`, … and answers every challenge with `Retry`.
#[derive(Default)]
struct Refreshing {
    issued: Mutex<usize>,
    challenges: Mutex<Vec<AuthChallenge>>,
}

#[async_trait::async_trait]
impl AuthProvider for Refreshing {
    async fn authorization(
        &self,
        _target: &AuthTarget<'_>,
    ) -> Result<Option<Credentials>, mcp_core::Error> {
        let mut issued = self.issued.lock().unwrap();
        *issued += 1;
        Ok(Some(Credentials {
            authorization: mcp_wire::AuthorizationValue::bearer(&format!("token-{issued}")),
            dpop: None,
        }))
    }

    async fn on_challenge(
        &self,
        challenge: &AuthChallenge,
    ) -> Result<ChallengeOutcome, mcp_core::Error> {
        self.challenges.lock().unwrap().push(challenge.clone());
        Ok(ChallengeOutcome::Retry)
    }
}

fn authorization_of(call: &SeenCall) -> Option<&str> {
    call.metadata
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn a_refusal_after_reading_only_safe_messages_is_retried_with_them() {
    let peer = RawPeer::start_each(vec![
        Script::ReadThen(2, Some(Status::unauthenticated("token expired"))),
        Script::Reply(vec![line(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)]),
    ]);
    let provider = Arc::new(Refreshing::default());
    let config = GrpcServerConfig::new(peer.url()).auth(provider.clone());
    let (sender, mut receiver) = GrpcTransport::connect(config).await.unwrap().split();
    sender.send(ping(1)).await.unwrap();
    sender
        .send(Message::Notification(mcp_core::Notification::new(
            "notifications/initialized",
            None,
        )))
        .await
        .unwrap();
    let answer = receive(&mut receiver).await.unwrap().unwrap();
    assert!(
        matches!(answer, Message::Response(ref r) if r.outcome.is_ok()),
        "{answer:?}"
    );
    mcp_testkit::wait::until(
        "the retried call to see both messages again",
        DEADLINE,
        || {
            peer.calls()
                .get(1)
                .is_some_and(|call| call.lines.len() == 2)
        },
    )
    .await;
    sender.close().await.unwrap();
    let calls = peer.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(authorization_of(&calls[0]), Some("Bearer token-1"));
    assert_eq!(authorization_of(&calls[1]), Some("Bearer token-2"));
    assert_eq!(
        calls[0].lines, calls[1].lines,
        "the retry sends the same messages"
    );
    assert_eq!(provider.challenges.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_refusal_after_reading_a_side_effecting_request_is_not_retried() {
    // A per-tool scope check: the handler read the call, then refused it.
    let peer = RawPeer::start(Script::ReadThen(
        2,
        Some(Status::permission_denied("insufficient scope for charge")),
    ));
    let provider = Arc::new(Refreshing::default());
    let config = GrpcServerConfig::new(peer.url()).auth(provider.clone());
    let (sender, mut receiver) = GrpcTransport::connect(config).await.unwrap().split();
    sender.send(ping(1)).await.unwrap();
    sender.send(tool_call(2)).await.unwrap();
    let err = receive(&mut receiver).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), TransportErrorKind::Unauthorized, "{err}");
    assert!(err.is_fatal());
    assert!(
        err.message()
            .contains("PERMISSION_DENIED: insufficient scope for charge"),
        "{err}"
    );
    assert!(err.message().contains("may have handled"), "{err}");
    assert!(receive(&mut receiver).await.is_none());
    sender.close().await.unwrap();
    let calls = peer.calls();
    assert_eq!(calls.len(), 1, "the tools/call was not sent again");
    assert_eq!(calls[0].lines.len(), 2);
    assert!(
        provider.challenges.lock().unwrap().is_empty(),
        "no new credentials are fetched for a retry that cannot happen"
    );
}

#[tokio::test]
async fn a_line_over_the_cap_is_a_recoverable_error_naming_its_request() {
    const MAX: usize = 1024;
    let head = r#"{"jsonrpc":"2.0","id":1,"result":{"text":""#;
    let tail = r#""}}"#;
    let filler = "x".repeat(MAX + 10 - head.len() - tail.len());
    let oversized = format!("{head}{filler}{tail}");
    assert_eq!(oversized.len(), MAX + 10);
    let peer = RawPeer::start(Script::Reply(vec![
        line(&oversized),
        line(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
    ]));
    let config = GrpcServerConfig::new(peer.url()).max_message_size(MAX);
    let (sender, mut receiver) = GrpcTransport::connect(config).await.unwrap().split();
    sender.send(ping(1)).await.unwrap();
    let err = receive(&mut receiver).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), TransportErrorKind::MessageTooLarge, "{err}");
    assert!(!err.is_fatal(), "{err}");
    assert_eq!(err.request_id(), Some(&mcp_core::RequestId::Number(1)));
    assert!(err.message().contains("1034 bytes"), "{err}");
    assert!(err.message().contains("1024-byte limit"), "{err}");
    // The call goes on.
    let next = receive(&mut receiver).await.unwrap().unwrap();
    assert!(
        matches!(next, Message::Response(ref r) if r.id == Some(mcp_core::RequestId::Number(2))),
        "{next:?}"
    );
    sender.close().await.unwrap();
}
