//! TLS (rustls): the bridge served with a certificate of a private CA, a client that trusts
//! the CA reaching it by IP and by name, and one that does not trust it refused clearly.

mod common;

use std::time::Duration;

use common::*;
use mcp_core::{McpServiceExt, RequestOptions, TransportErrorKind};
use mcp_session::SessionOptions;
use mcp_transport_grpc::{GrpcServerConfig, GrpcTransport};
use serde_json::json;

const CA: &str = include_str!("tls/ca.pem");
const CERT: &str = include_str!("tls/server.pem");
const KEY: &str = include_str!("tls/server.key");

#[tokio::test]
async fn a_client_trusting_the_ca_talks_to_a_tls_bridge() {
    let bridged = Bridged::start_with(&[], |bridge| bridge.tls(CERT, KEY)).await;
    let url = bridged.bridge.url();
    assert!(url.starts_with("grpcs://127.0.0.1:"), "{url}");
    let by_name = format!("https://localhost:{}", bridged.bridge.local_addr().port());
    for endpoint in [url, by_name] {
        let config = GrpcServerConfig::new(&endpoint).root_certificate_pem(CA);
        let session = bridged
            .session_with(config, (), SessionOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{endpoint}: {e}"));
        let r = session
            .call_tool(
                "echo",
                Some(json!({"text": "sealed"})),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(r.text(), "sealed");
        session.close().await;
    }
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_is_refused_clearly() {
    let bridged = Bridged::start_with(&[], |bridge| bridge.tls(CERT, KEY)).await;
    let config =
        GrpcServerConfig::new(bridged.bridge.url()).connect_timeout(Duration::from_secs(5));
    let err = match GrpcTransport::connect(config).await {
        Ok(_) => panic!("an unknown CA is not trusted"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), TransportErrorKind::Connect, "{err}");
    assert!(
        err.message().to_lowercase().contains("certificate"),
        "{err}"
    );
    assert!(bridged.backend.pids().is_empty());
}

#[tokio::test]
async fn a_plaintext_client_cannot_talk_to_a_tls_bridge() {
    let bridged = Bridged::start_with(&[], |bridge| bridge.tls(CERT, KEY)).await;
    let plaintext = format!("grpc://{}", bridged.bridge.local_addr());
    let plaintext_shown = plaintext.clone();
    let config = GrpcServerConfig::new(plaintext).connect_timeout(Duration::from_secs(5));
    // The HTTP/2 handshake never completes over a TLS socket: connecting or the first call
    // fails, within the deadlines.
    let outcome = tokio::time::timeout(
        DEADLINE,
        bridged.session_with(config, (), SessionOptions::default()),
    )
    .await
    .expect("fails within its deadlines");
    let err = outcome.unwrap_err();
    assert_eq!(err.kind(), mcp_core::ErrorKind::Network, "{err}");
    assert!(err.message().contains(&plaintext_shown), "{err}");
}
