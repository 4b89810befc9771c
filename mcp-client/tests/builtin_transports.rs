//! The facade's built-in WebSocket and gRPC factories against live servers: a configuration
//! entry (by `type`, or a bare URL whose scheme chooses the factory) reaches the fixture over
//! its own transport, and a call goes through.
#![cfg(all(feature = "stdio", feature = "ws", feature = "grpc"))]

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_client::config::{ServerConfig, TransportConfig};
use mcp_testkit::ServerOptions;
use mcp_transport_grpc::GrpcBridge;
use mcp_transport_stdio::{StdioConnector, StdioServerConfig};
use serde_json::json;

mod common;

use common::*;

fn remote(name: &str, kind: &str, url: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Remote {
            kind: kind.into(),
            url: url.into(),
            headers: BTreeMap::new(),
        },
    )
}

fn bare_url(name: &str, url: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Url {
            url: url.into(),
            headers: BTreeMap::new(),
        },
    )
}

#[tokio::test]
async fn websocket_and_grpc_entries_reach_their_servers() {
    let ws = mcp_testkit::serve_ws(ServerOptions::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the WebSocket fixture listens");
    let backend = StdioConnector::new(StdioServerConfig::new(mcp_testkit::fixture_server_bin()));
    let bridge = GrpcBridge::new(Arc::new(backend))
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("the gRPC bridge listens");
    let grpc_url = format!("grpc://{}", bridge.local_addr());
    let client = start(vec![
        remote("wstype", "ws", &ws.url()),
        bare_url("wsurl", &ws.url()),
        remote("grpctype", "grpc", &grpc_url),
        bare_url("grpcurl", &grpc_url),
    ])
    .await;
    for name in ["wstype", "wsurl", "grpctype", "grpcurl"] {
        let report = client
            .servers()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap();
        assert!(report.status.is_ready(), "{report:?}");
        let answer = client
            .call_tool(&format!("{name}__echo"), Some(json!({"text": name})))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(answer.text(), name);
    }
    client.shutdown().await;
    bridge.shutdown().await;
    ws.shutdown().await;
}
