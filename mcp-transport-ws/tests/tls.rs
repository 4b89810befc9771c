//! `wss://` against a rustls WebSocket server on 127.0.0.1 whose certificate (for `localhost`)
//! is issued by a test CA made with rcgen: trusted when the CA is configured as an extra root,
//! refused clearly when it is not.

mod common;

use std::sync::Arc;

use common::*;
use futures_util::{SinkExt, StreamExt};
use mcp_core::{
    Message, Request, RequestId, Transport, TransportErrorKind, TransportReceiver, TransportSender,
};
use mcp_transport_ws::WebSocketTransport;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::tungstenite::Message as WsMessage;

/// A test CA (its certificate, DER) and a server configuration for `localhost` issued by it.
fn test_ca() -> (Vec<u8>, Arc<ServerConfig>) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("a CA key"))
        .expect("the CA certificate");
    let leaf_key = KeyPair::generate().expect("a server key");
    let leaf = CertificateParams::new(vec!["localhost".to_owned()])
        .expect("server parameters")
        .signed_by(&leaf_key, &*ca)
        .expect("the server certificate");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .expect("the server configuration");
    (ca.der().to_vec(), Arc::new(config))
}

/// TLS, then the upgrade selecting `mcp`, then an empty result for every request.
async fn tls_server(config: Arc<ServerConfig>) -> RawServer {
    RawServer::start_tcp(move |tcp| {
        let acceptor = TlsAcceptor::from(config.clone());
        async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let Ok(mut socket) =
                tokio_tungstenite::accept_hdr_async(tls, Selects(Some("mcp"))).await
            else {
                return;
            };
            while let Some(Ok(frame)) = socket.next().await {
                if let WsMessage::Text(text) = frame {
                    let request: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                    let answer =
                        serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": {}});
                    let _ = socket.send(WsMessage::text(answer.to_string())).await;
                }
            }
        }
    })
    .await
}

#[tokio::test]
async fn wss_with_a_trusted_root_carries_messages() {
    let (root, server_config) = test_ca();
    let server = tls_server(server_config).await;
    let url = format!("wss://localhost:{}/mcp", server.addr.port());
    let transport = within(
        "the TLS connection",
        WebSocketTransport::connect(config(&url).root_certificate(root)),
    )
    .await
    .expect("connects over TLS");
    let (sender, mut receiver) = transport.split();
    sender
        .send(Request::new(3, "ping", None).into())
        .await
        .unwrap();
    match within("the answer", receiver.receive()).await {
        Some(Ok(Message::Response(r))) => assert_eq!(r.id, Some(RequestId::Number(3))),
        other => panic!("{other:?}"),
    }
    within("close", sender.close()).await.unwrap();
    assert!(within("the end", receiver.receive()).await.is_none());
}

#[tokio::test]
async fn wss_with_an_unknown_issuer_is_refused_clearly() {
    let (_root, server_config) = test_ca();
    let server = tls_server(server_config).await;
    let url = format!("wss://localhost:{}/mcp", server.addr.port());
    let e = within("the refusal", WebSocketTransport::connect(config(&url)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::Connect);
    assert!(e.message().contains("TLS handshake"), "{e}");
    assert!(e.message().to_lowercase().contains("certificate"), "{e}");
}
