//! WebSocket protocol behaviour against raw test servers on 127.0.0.1: the subprotocol, binary
//! frames, close codes, pings both ways, a dead peer, connect failures.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use futures_util::{SinkExt, StreamExt};
use mcp_core::{
    Message, Request, Transport, TransportErrorKind, TransportReceiver, TransportSender,
};
use mcp_transport_ws::WebSocketTransport;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Bytes, Message as WsMessage};
use tokio_tungstenite::WebSocketStream;

type Seen<T> = Arc<Mutex<Vec<T>>>;

fn seen<T>() -> Seen<T> {
    Arc::new(Mutex::new(Vec::new()))
}

async fn open(
    url: &str,
) -> (
    mcp_transport_ws::WebSocketSender,
    mcp_transport_ws::WebSocketReceiver,
) {
    within("connect", WebSocketTransport::connect(config(url)))
        .await
        .expect("connects")
        .split()
}

#[tokio::test]
async fn a_server_that_does_not_select_mcp_is_refused_clearly() {
    let server = RawServer::start(None, drain).await;
    let e = WebSocketTransport::connect(config(&server.url()))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::Connect);
    assert!(
        e.message()
            .contains("without selecting the `mcp` subprotocol"),
        "{e}"
    );
    let other = RawServer::start(Some("graphql-ws"), drain).await;
    let e = WebSocketTransport::connect(config(&other.url()))
        .await
        .unwrap_err();
    assert!(e.message().contains("\"graphql-ws\""), "{e}");
}

#[tokio::test]
async fn a_binary_frame_closes_with_1003_and_a_fatal_error() {
    let closes = seen::<Option<CloseFrame>>();
    let server = RawServer::start(Some("mcp"), {
        let closes = closes.clone();
        move |mut socket: WebSocketStream<TcpStream>| {
            let closes = closes.clone();
            async move {
                let _ = socket
                    .send(WsMessage::Binary(Bytes::from_static(b"\x00\x01")))
                    .await;
                while let Some(Ok(frame)) = socket.next().await {
                    if let WsMessage::Close(frame) = frame {
                        closes.lock().unwrap().push(frame);
                    }
                }
            }
        }
    })
    .await;
    let (sender, mut receiver) = open(&server.url()).await;
    let e = within("the error", receiver.receive())
        .await
        .unwrap()
        .unwrap_err();
    assert!(e.is_fatal());
    assert_eq!(e.kind(), TransportErrorKind::InvalidMessage);
    assert!(e.message().contains("binary frame (2 bytes)"), "{e}");
    assert!(within("the end", receiver.receive()).await.is_none());
    mcp_testkit::wait::until("the server saw close 1003", DEADLINE, || {
        closes
            .lock()
            .unwrap()
            .iter()
            .any(|f| f.as_ref().is_some_and(|f| f.code == CloseCode::Unsupported))
    })
    .await;
    // Sending fails with the reason, and says the message never went out.
    let refused = sender
        .send(Request::new(1, "ping", None).into())
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), TransportErrorKind::Closed);
    assert!(refused.message().contains("binary frame"), "{refused}");
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_frame_that_is_not_json_rpc_is_reported_and_the_connection_goes_on() {
    let server = RawServer::start(Some("mcp"), |mut socket| async move {
        for frame in [
            "this is not json",
            r#"{"jsonrpc":"2.0","id":4,"result":1,"error":{"code":1,"message":"both"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
        ] {
            let _ = socket.send(WsMessage::text(frame)).await;
        }
        drain(socket).await;
    })
    .await;
    let (sender, mut receiver) = open(&server.url()).await;
    let not_json = within("a frame", receiver.receive())
        .await
        .unwrap()
        .unwrap_err();
    assert!(!not_json.is_fatal());
    assert_eq!(not_json.kind(), TransportErrorKind::InvalidMessage);
    assert!(
        not_json
            .message()
            .contains("not JSON: \"this is not json\""),
        "{not_json}"
    );
    let invalid = within("a frame", receiver.receive())
        .await
        .unwrap()
        .unwrap_err();
    assert!(!invalid.is_fatal());
    assert_eq!(invalid.request_id(), Some(&mcp_core::RequestId::Number(4)));
    match within("a frame", receiver.receive()).await {
        Some(Ok(Message::Response(r))) => assert_eq!(r.id, Some(mcp_core::RequestId::Number(5))),
        other => panic!("{other:?}"),
    }
    sender.close().await.unwrap();
}

#[tokio::test]
async fn close_sends_what_was_queued_then_1000() {
    let frames = seen::<String>();
    let server = RawServer::start(Some("mcp"), {
        let frames = frames.clone();
        move |mut socket| {
            let frames = frames.clone();
            async move {
                while let Some(Ok(frame)) = socket.next().await {
                    let seen = match frame {
                        WsMessage::Text(text) => text.to_string(),
                        WsMessage::Close(Some(frame)) => format!("close {}", u16::from(frame.code)),
                        _ => continue,
                    };
                    frames.lock().unwrap().push(seen);
                }
            }
        }
    })
    .await;
    let (sender, mut receiver) = open(&server.url()).await;
    for id in 1..=3 {
        sender
            .send(Request::new(id, "ping", None).into())
            .await
            .unwrap();
    }
    within("close", sender.close()).await.unwrap();
    assert!(within("the end", receiver.receive()).await.is_none());
    mcp_testkit::wait::until("the server saw everything", DEADLINE, || {
        frames.lock().unwrap().len() == 4
    })
    .await;
    let frames = frames.lock().unwrap().clone();
    for (i, frame) in frames[..3].iter().enumerate() {
        assert!(frame.contains(&format!("\"id\":{}", i + 1)), "{frame}");
    }
    assert_eq!(frames[3], "close 1000");
}

#[tokio::test]
async fn server_close_codes_become_errors_with_code_and_reason() {
    for (code, reason, kind, text) in [
        (
            1008,
            "token expired",
            TransportErrorKind::Unauthorized,
            "policy violation",
        ),
        (1011, "boom", TransportErrorKind::PeerGone, "server error"),
        (
            1001,
            "restarting",
            TransportErrorKind::PeerGone,
            "going away",
        ),
        (1000, "done", TransportErrorKind::PeerGone, "normal closure"),
    ] {
        let server = RawServer::start(Some("mcp"), move |mut socket| async move {
            let frame = CloseFrame {
                code: CloseCode::from(code),
                reason: reason.into(),
            };
            let _ = socket.send(WsMessage::Close(Some(frame))).await;
            drain(socket).await;
        })
        .await;
        let (sender, mut receiver) = open(&server.url()).await;
        let e = within("the error", receiver.receive())
            .await
            .unwrap()
            .unwrap_err();
        assert!(e.is_fatal());
        assert_eq!(e.kind(), kind, "{code}");
        assert!(e.message().contains(text), "{e}");
        assert!(
            e.message()
                .contains(&format!("(close code {code}): {reason}")),
            "{e}"
        );
        assert!(within("the end", receiver.receive()).await.is_none());
        sender.close().await.unwrap();
    }
}

#[tokio::test]
async fn the_servers_pings_are_answered() {
    let pongs = seen::<Bytes>();
    let server = RawServer::start(Some("mcp"), {
        let pongs = pongs.clone();
        move |mut socket| {
            let pongs = pongs.clone();
            async move {
                let _ = socket
                    .send(WsMessage::Ping(Bytes::from_static(b"are you there")))
                    .await;
                while let Some(Ok(frame)) = socket.next().await {
                    if let WsMessage::Pong(payload) = frame {
                        pongs.lock().unwrap().push(payload);
                    }
                }
            }
        }
    })
    .await;
    let (sender, _receiver) = open(&server.url()).await;
    mcp_testkit::wait::until("the pong", DEADLINE, || {
        pongs
            .lock()
            .unwrap()
            .iter()
            .any(|p| &p[..] == b"are you there")
    })
    .await;
    sender.close().await.unwrap();
}

/// Counts the client's pings and answers JSON-RPC requests with an empty result.
async fn answering_server(pings: Seen<()>) -> RawServer {
    RawServer::start(Some("mcp"), move |mut socket| {
        let pings = pings.clone();
        async move {
            while let Some(Ok(frame)) = socket.next().await {
                match frame {
                    WsMessage::Ping(_) => pings.lock().unwrap().push(()),
                    WsMessage::Text(text) => {
                        let request: serde_json::Value = serde_json::from_str(&text).unwrap();
                        let answer = serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": {}});
                        let _ = socket.send(WsMessage::text(answer.to_string())).await;
                    }
                    _ => {}
                }
            }
        }
    })
    .await
}

#[tokio::test]
async fn an_idle_connection_is_kept_alive_with_pings() {
    let pings = seen::<()>();
    let server = answering_server(pings.clone()).await;
    let config = config(&server.url())
        .ping_interval(Duration::from_millis(50))
        .dead_peer_timeout(Duration::from_millis(500));
    let (sender, mut receiver) = WebSocketTransport::connect(config).await.unwrap().split();
    mcp_testkit::wait::until("three pings", DEADLINE, || pings.lock().unwrap().len() >= 3).await;
    // Answered pings keep it alive: a request still gets its answer.
    sender
        .send(Request::new(7, "ping", None).into())
        .await
        .unwrap();
    match within("the answer", receiver.receive()).await {
        Some(Ok(Message::Response(r))) => assert_eq!(r.id, Some(mcp_core::RequestId::Number(7))),
        other => panic!("{other:?}"),
    }
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_server_that_stops_answering_is_declared_dead() {
    // Upgrades, then never reads again: pings go unanswered.
    let server = RawServer::start(Some("mcp"), |socket| async move {
        let _held = socket;
        std::future::pending::<()>().await;
    })
    .await;
    let config = config(&server.url())
        .ping_interval(Duration::from_millis(50))
        .dead_peer_timeout(Duration::from_millis(200));
    let (sender, mut receiver) = WebSocketTransport::connect(config).await.unwrap().split();
    let e = within("the dead peer is noticed", receiver.receive())
        .await
        .unwrap()
        .unwrap_err();
    assert!(e.is_fatal());
    assert_eq!(e.kind(), TransportErrorKind::PeerGone);
    assert!(e.message().contains("dead_peer_timeout"), "{e}");
    within("close after a dead peer", sender.close())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_server_that_hangs_up_mid_stream_is_peer_gone() {
    let server = RawServer::start(Some("mcp"), |socket| async move {
        // Drop the TCP connection without a close frame.
        drop(socket.into_inner());
    })
    .await;
    let (sender, mut receiver) = open(&server.url()).await;
    let e = within("the error", receiver.receive())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::PeerGone);
    assert!(
        e.message().contains("without a WebSocket close frame"),
        "{e}"
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn connect_failures_are_clear() {
    // Nobody listens on a port that was just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = WebSocketTransport::connect(config(&format!("ws://127.0.0.1:{port}/mcp")))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::Connect);
    assert!(
        e.message().contains("could not connect to ws://127.0.0.1"),
        "{e}"
    );

    // Accepts TCP, never answers the upgrade.
    let silent = RawServer::start_tcp(|stream| async move {
        let _held = stream;
        std::future::pending::<()>().await;
    })
    .await;
    let e = WebSocketTransport::connect(
        config(&silent.url()).connect_timeout(Duration::from_millis(200)),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::Connect);
    assert!(e.message().contains("connect_timeout"), "{e}");

    // The fixture has one endpoint.
    let fixture = fixture(&[]).await;
    let wrong = fixture.url().replace("/mcp", "/nope");
    let e = WebSocketTransport::connect(config(&wrong))
        .await
        .unwrap_err();
    assert!(e.message().contains("HTTP 404"), "{e}");

    let e = WebSocketTransport::connect(config("http://127.0.0.1/mcp"))
        .await
        .unwrap_err();
    assert!(e.message().contains("scheme must be ws or wss"), "{e}");
}
