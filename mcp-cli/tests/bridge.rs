//! `mcph bridge --grpc`: the built-in fixture (a stdio server) served over gRPC, reached by the
//! gRPC transport, its cap on calls at once, TLS, the refusal to listen beyond loopback without
//! a token over TLS, and mcph itself reaching servers by `type: "ws"` / `"grpc"` and by `ws://`
//! URL.

mod common;

use std::process::Command;

use common::{Env, RunningProcess, Stream, DEADLINE};
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::process::ChildProcess;
use mcp_transport_grpc::{GrpcServerConfig, GrpcTransport};
use serde_json::json;

/// Starts `command` (an `mcph bridge`) and reads the first line it prints: the URL it serves.
fn spawn_bridge(command: &mut Command) -> (RunningProcess, String) {
    let mut bridge = RunningProcess::spawn("mcph bridge", command);
    let url = bridge.wait_for_line(Stream::Stdout, DEADLINE, |line| {
        Some(line.trim().to_owned())
    });
    (bridge, url)
}

/// Starts `mcph bridge --grpc 127.0.0.1:0 fixture` (the built-in configuration) and reads the
/// URL it prints.
fn start_bridge(env: &Env, extra: &[&str]) -> (RunningProcess, String) {
    let mut args = vec!["bridge", "--grpc", "127.0.0.1:0", "fixture"];
    args.extend_from_slice(extra);
    let (bridge, url) = spawn_bridge(&mut env.command(&args));
    assert!(url.starts_with("grpc://127.0.0.1:"), "{url:?}");
    (bridge, url)
}

#[tokio::test]
async fn a_stdio_server_is_served_over_grpc_until_ctrl_c() {
    let env = Env::new();
    let (bridge, url) = start_bridge(&env, &[]);
    let transport = GrpcTransport::connect(GrpcServerConfig::new(&url))
        .await
        .expect("the gRPC client connects");
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("in time")
    .expect("the bridged server answers");
    let result = session
        .call_tool(
            "echo",
            Some(json!({"text": "over grpc"})),
            RequestOptions::new(),
        )
        .await
        .expect("echo through the bridge");
    assert_eq!(result.text(), "over grpc");
    session.close().await;
    let run = bridge.interrupt_leader(DEADLINE);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("serving \"fixture\" over gRPC"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_bridge_with_a_token_refuses_callers_without_it() {
    let env = Env::new();
    let mut command = env.command(&[
        "bridge",
        "--grpc",
        "127.0.0.1:0",
        "fixture",
        "--token-env",
        "BRIDGE_TOKEN",
    ]);
    command.env("BRIDGE_TOKEN", "s3cret-bridge");
    let (bridge, url) = spawn_bridge(&mut command);
    let refused = ClientSession::connect(
        GrpcTransport::connect(GrpcServerConfig::new(&url))
            .await
            .expect("connects"),
        (),
        SessionOptions::default(),
    )
    .await
    .expect_err("no token");
    assert_eq!(refused.kind(), mcp_core::ErrorKind::Auth, "{refused}");
    let config = GrpcServerConfig::new(&url).header("authorization", "Bearer s3cret-bridge");
    let session = ClientSession::connect(
        GrpcTransport::connect(config).await.expect("connects"),
        (),
        SessionOptions::default(),
    )
    .await
    .expect("the token is accepted");
    session.close().await;
    let run = bridge.interrupt_leader(DEADLINE);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(!run.stderr.contains("s3cret-bridge"), "{}", run.stderr);
}

#[test]
fn a_missing_token_variable_or_server_is_a_clear_error() {
    let env = Env::new();
    let run = env.run(&[
        "bridge",
        "--grpc",
        "127.0.0.1:0",
        "fixture",
        "--token-env",
        "MCPH_UNSET_TOKEN_VAR",
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("MCPH_UNSET_TOKEN_VAR is not set"),
        "{}",
        run.stderr
    );
    let run = env.run(&["bridge", "--grpc", "127.0.0.1:0", "nonexistent"]);
    assert_eq!(run.code, Some(5), "{}", run.stderr);
}

/// Test-only TLS material of the gRPC transport's tests (a leaf for 127.0.0.1 and its CA).
fn tls_file(name: &str) -> String {
    format!(
        "{}/../mcp-transport-grpc/tests/tls/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn an_address_beyond_loopback_is_refused_without_a_token_and_tls() {
    let env = Env::new();
    let run = env.run(&["bridge", "--grpc", "0.0.0.0:0", "fixture"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "nothing was served: {}", run.stdout);
    for expected in ["0.0.0.0:0", "beyond loopback", "--token-env", "--tls-cert"] {
        assert!(run.stderr.contains(expected), "{expected}: {}", run.stderr);
    }
    // A token alone is not enough: it would travel in cleartext.
    let mut command = env.command(&[
        "bridge",
        "--grpc",
        "0.0.0.0:0",
        "fixture",
        "--token-env",
        "BRIDGE_TOKEN",
    ]);
    command.env("BRIDGE_TOKEN", "s3cret-bridge");
    let run = RunningProcess::spawn("mcph bridge", &mut command).finish(DEADLINE);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "nothing was served: {}", run.stdout);
    assert!(
        run.stderr.contains("--tls-cert PATH --tls-key PATH"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("--token-env VAR"), "{}", run.stderr);
    assert!(!run.stderr.contains("s3cret-bridge"), "{}", run.stderr);
}

#[tokio::test]
async fn max_calls_refuses_a_call_past_the_cap() {
    let env = Env::new();
    let (bridge, url) = start_bridge(&env, &["--max-calls", "1"]);
    let connect = || async {
        tokio::time::timeout(DEADLINE, async {
            let transport = GrpcTransport::connect(GrpcServerConfig::new(&url)).await?;
            ClientSession::connect(transport, (), SessionOptions::default()).await
        })
        .await
        .expect("connect finished in time")
    };
    let first = connect().await.expect("the first call is served");
    let refused = connect()
        .await
        .expect_err("the second is past --max-calls 1");
    assert!(
        refused.message().contains("RESOURCE_EXHAUSTED"),
        "{refused}"
    );
    assert!(refused.message().contains("max_calls is 1"), "{refused}");
    first.close().await;
    let run = bridge.interrupt_leader(DEADLINE);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
}

#[tokio::test]
async fn a_bridge_with_tls_serves_grpcs() {
    let env = Env::new();
    let (cert, key) = (tls_file("server.pem"), tls_file("server.key"));
    let (bridge, url) = spawn_bridge(&mut env.command(&[
        "bridge",
        "--grpc",
        "127.0.0.1:0",
        "fixture",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]));
    assert!(url.starts_with("grpcs://127.0.0.1:"), "{url:?}");
    let ca = std::fs::read(tls_file("ca.pem")).expect("the test CA");
    let config = GrpcServerConfig::new(&url).root_certificate_pem(ca);
    let session = tokio::time::timeout(DEADLINE, async {
        let transport = GrpcTransport::connect(config).await?;
        ClientSession::connect(transport, (), SessionOptions::default()).await
    })
    .await
    .expect("in time")
    .expect("the bridged server answers over TLS");
    let result = session
        .call_tool(
            "echo",
            Some(json!({"text": "over tls"})),
            RequestOptions::new(),
        )
        .await
        .expect("echo through the TLS bridge");
    assert_eq!(result.text(), "over tls");
    session.close().await;
    let run = bridge.interrupt_leader(DEADLINE);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
}

/// mcph reaches servers through the bridge (`type: "grpc"`) and the WebSocket fixture
/// (`type: "ws"`, and a bare `ws://` URL).
#[test]
fn mcph_reaches_grpc_and_websocket_servers() {
    let env = Env::new();
    let (bridge, grpc_url) = start_bridge(&env, &[]);
    let (ws, ws_url) = ChildProcess::spawn_until_line(
        "the WebSocket fixture",
        Command::new(mcp_testkit::fixture_server_bin()).args(["--ws", "127.0.0.1:0"]),
        None,
        DEADLINE,
        |line| Some(line.trim_start_matches("listening on ").to_owned()),
    )
    .unwrap_or_else(|e| panic!("the fixture prints its URL: {e}"));
    assert!(ws_url.starts_with("ws://127.0.0.1:"), "{ws_url:?}");
    let config = env.cwd.write(
        "mcp.json",
        &json!({ "mcpServers": {
            "g": { "type": "grpc", "url": grpc_url },
            "w": { "type": "ws", "url": ws_url },
            "u": { "url": ws_url }
        }})
        .to_string(),
    );
    let run = env.run(&["--config", config.to_str().unwrap(), "--json", "servers"]);
    run.assert_code(0);
    let servers = run.json();
    for (name, transport) in [("g", "grpc"), ("w", "ws"), ("u", "url")] {
        let server = servers
            .as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name))
            .unwrap_or_else(|| panic!("{name} in {servers}"));
        assert_eq!(server["status"], "ready", "{server}");
        assert_eq!(server["transport"], transport, "{server}");
    }
    let run = env.run(&[
        "--config",
        config.to_str().unwrap(),
        "call",
        "w__echo",
        "--arg",
        "text=by ws",
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "by ws");
    drop(ws);
    let run = bridge.interrupt_leader(DEADLINE);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}
