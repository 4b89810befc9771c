//! Wire compatibility with the npm package `mcp-grpc-transport` (0.2.0): its
//! `mcp.transport.v1.Mcp/Session` server, on the official TypeScript SDK, answered by this
//! crate's client — handshake, tools, a call, an 8 MiB answer, half-close.
//!
//! Needs the package installed by `cargo xtask interop-setup` in `$MCP_INTEROP_DIR/grpc`
//! (`mcp-grpc-transport@0.2.0` with `@modelcontextprotocol/sdk@1.32.2` and `zod@3`; pinned in
//! `xtask/src/interop.rs`).

mod common;

use std::path::PathBuf;
use std::process::Stdio;

use common::DEADLINE;
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_grpc::{GrpcServerConfig, GrpcTransport};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Where `cargo xtask interop-setup` installs the package.
fn npm_grpc_dir() -> PathBuf {
    let dir = std::env::var_os("MCP_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.interop"))
        .join("grpc");
    assert!(
        dir.join("node_modules/mcp-grpc-transport/package.json")
            .is_file(),
        "mcp-grpc-transport is not installed in {}: run `cargo xtask interop-setup`",
        dir.display()
    );
    dir
}

#[tokio::test]
async fn the_npm_packages_session_server_answers_our_client() {
    let dir = npm_grpc_dir();
    let mut server = Command::new("node")
        .arg("--input-type=module")
        .arg("-e")
        .arg(include_str!("interop/npm_grpc_server.mjs"))
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let address = tokio::time::timeout(DEADLINE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(address) = line.strip_prefix("listening ") {
                return address.to_owned();
            }
        }
        panic!("the npm server exited before listening");
    })
    .await
    .expect("the npm server listens in time");
    assert!(address.starts_with("127.0.0.1:"), "{address}");

    let transport = GrpcTransport::connect(GrpcServerConfig::new(format!("grpc://{address}")))
        .await
        .unwrap();
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(session.server_info().server_info.name, "npm-grpc-server");
    let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "large"]);
    let echo = session
        .call_tool(
            "echo",
            Some(json!({"text": "over grpc-js"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(echo.text(), "over grpc-js");
    let large = session
        .call_tool(
            "large",
            Some(json!({"bytes": 8_388_608})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(large.text().len(), 8_388_608);
    // Half-closing ends the session on the server; the server itself stops with its stdin.
    tokio::time::timeout(DEADLINE, session.close())
        .await
        .expect("close is bounded");
    drop(server.stdin.take());
    let status = tokio::time::timeout(DEADLINE, server.wait())
        .await
        .expect("the npm server stops")
        .unwrap();
    assert!(status.success(), "{status}");
}
