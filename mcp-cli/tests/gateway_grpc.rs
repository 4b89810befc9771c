//! `mcph serve --grpc`: the gateway (every configured server as one) served over the gRPC
//! tunnel of `mcph bridge`, reached by the gRPC transport; the refusal to listen beyond
//! loopback without a token over TLS.

mod common;

use common::{Env, RunningProcess, Stream, DEADLINE};
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_grpc::{GrpcServerConfig, GrpcTransport};
use serde_json::json;

#[tokio::test]
async fn the_gateway_is_served_over_grpc() {
    let env = Env::new();
    // The built-in configuration: the fixture alone, so its names pass through unchanged.
    let mut gateway = RunningProcess::spawn(
        "mcph serve --grpc",
        &mut env.command(&["serve", "--grpc", "127.0.0.1:0"]),
    );
    let url = gateway.wait_for_line(Stream::Stdout, DEADLINE, |line| {
        Some(line.trim().to_owned())
    });
    assert!(url.starts_with("grpc://127.0.0.1:"), "{url:?}");
    let transport = GrpcTransport::connect(GrpcServerConfig::new(&url))
        .await
        .expect("the gRPC client connects");
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("in time")
    .expect("the gateway answers");
    assert_eq!(session.server_info().server_info.name, "mcph-gateway");
    let result = session
        .call_tool(
            "echo",
            Some(json!({"text": "through the gateway"})),
            RequestOptions::new(),
        )
        .await
        .expect("echo through the gateway");
    assert_eq!(result.text(), "through the gateway");
    session.close().await;
    let run = gateway.interrupt_leader(DEADLINE);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
}

#[test]
fn beyond_loopback_the_gateway_needs_a_token_over_tls() {
    let env = Env::new();
    for transport in ["--grpc", "--http"] {
        let run = env.run(&["serve", transport, "192.0.2.1:0"]);
        assert_ne!(run.code, Some(0), "{transport}: {}", run.stderr);
        assert!(
            run.stderr.contains("beyond loopback")
                && run.stderr.contains("--token-env")
                && run.stderr.contains("--tls-cert"),
            "{transport}: {}",
            run.stderr
        );
    }
}
