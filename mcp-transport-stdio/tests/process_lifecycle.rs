//! R-T-STDIO: the child process's life — spawning, its process group, stderr, death and shutdown.

mod common;

use mcp_core::McpServiceExt;
use mcp_core::RequestOptions;
use std::time::Duration;

use common::*;
use mcp_core::{ErrorKind, Message, Transport, TransportErrorKind, TransportReceiver};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
use serde_json::json;

#[tokio::test]
async fn command_args_env_and_cwd_are_honoured() {
    let dir = std::env::temp_dir().join(format!("mcp-stdio-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = r#"printf '{"jsonrpc":"2.0","method":"report","params":{"arg":"%s","env":"%s","home":"%s","cwd":"%s"}}\n' "$1" "$MCP_TEST_VAR" "${HOME:-unset}" "$(pwd)""#;
    let config = StdioServerConfig::new("/bin/sh")
        .args(["-c", script, "sh", "first arg"])
        .env("MCP_TEST_VAR", "value with spaces")
        .clear_env()
        .cwd(&dir);
    let transport = StdioTransport::spawn(config).unwrap();
    let (_sender, mut receiver) = transport.split();
    let message = tokio::time::timeout(DEADLINE, receiver.receive())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let Message::Notification(n) = message else {
        panic!("expected a notification")
    };
    let params = n.params.unwrap().into_value().unwrap();
    assert_eq!(params["arg"], json!("first arg"));
    assert_eq!(params["env"], json!("value with spaces"));
    assert_eq!(
        params["home"],
        json!("unset"),
        "clear_env drops inherited variables"
    );
    assert_eq!(
        params["cwd"],
        json!(dir.canonicalize().unwrap().to_str().unwrap())
    );
    // The script then exits: a clean exit after output is reported with its status.
    let end = tokio::time::timeout(DEADLINE, receiver.receive())
        .await
        .unwrap();
    let err = end.unwrap().unwrap_err();
    assert!(err.is_fatal());
    assert!(err.message().contains("exited with status 0"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_missing_program_is_a_clear_connect_error() {
    let err = StdioTransport::spawn(StdioServerConfig::new("/nonexistent/mcp-server"))
        .err()
        .unwrap();
    assert_eq!(err.kind(), TransportErrorKind::Connect);
    assert!(err.message().contains("/nonexistent/mcp-server"), "{err}");
    assert!(err.message().contains("not found"), "{err}");
    let err = StdioTransport::spawn(StdioServerConfig::new("/bin/sh").cwd("/nonexistent-dir"))
        .err()
        .unwrap();
    assert!(err.message().contains("working directory"), "{err}");
}

#[tokio::test]
async fn the_child_leads_its_own_process_group() {
    let (session, pid) = connect(&[]).await;
    // SAFETY: getpgid/getpgrp only read process attributes.
    let (child_group, our_group) = unsafe { (libc::getpgid(pid as i32), libc::getpgrp()) };
    assert_eq!(child_group, pid as i32);
    assert_ne!(child_group, our_group);
    session.close().await;
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn close_ends_a_server_that_ignores_stdin_eof() {
    let (session, pid) = connect(&["--ignore-stdin-eof"]).await;
    assert!(process_exists(pid));
    tokio::time::timeout(DEADLINE, session.close())
        .await
        .expect("close is bounded");
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn close_kills_a_server_that_ignores_sigterm() {
    let (session, pid) = connect(&["--ignore-stdin-eof", "--ignore-sigterm"]).await;
    tokio::time::timeout(DEADLINE, session.close())
        .await
        .expect("close is bounded");
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn no_zombie_or_orphan_is_left_after_close() {
    let (session, pid) = connect(&["--spawn-grandchild"]).await;
    // The grandchild shows up in the server's group.
    mcp_testkit::wait::until("the grandchild to appear", DEADLINE, || {
        group_members(pid).0.len() >= 2
    })
    .await;
    session.close().await;
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn dropping_the_session_without_close_kills_the_group() {
    let (session, pid) = connect(&[
        "--spawn-grandchild",
        "--ignore-stdin-eof",
        "--ignore-sigterm",
    ])
    .await;
    mcp_testkit::wait::until("the grandchild to appear", DEADLINE, || {
        group_members(pid).0.len() >= 2
    })
    .await;
    drop(session);
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn a_crash_mid_call_fails_every_pending_request_with_status_and_stderr() {
    let options = SessionOptions::default().with_request_timeout(Duration::from_secs(120));
    let (session, pid) = connect_with(fixture(&["--stderr-noise", "3"]), (), options).await;
    let slow: Vec<_> = (0..3)
        .map(|_| {
            let s = session.clone();
            tokio::spawn(async move {
                s.call_tool(
                    "slow",
                    Some(json!({"duration_ms": 600_000, "steps": 1})),
                    RequestOptions::new(),
                )
                .await
            })
        })
        .collect();
    let crash = session.call_tool(
        "crash",
        Some(json!({"exit_code": 3})),
        RequestOptions::new(),
    );
    let crash_err = tokio::time::timeout(DEADLINE, crash)
        .await
        .expect("fails long before the 120 s timeout")
        .unwrap_err();
    for call in slow {
        let err = tokio::time::timeout(DEADLINE, call)
            .await
            .expect("pending calls fail at once")
            .unwrap()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Network);
        assert_eq!(err.message(), crash_err.message());
    }
    assert_eq!(crash_err.kind(), ErrorKind::Network);
    let message = crash_err.message();
    assert!(message.contains("exited with status 3"), "{message}");
    assert!(message.contains("stderr tail"), "{message}");
    assert!(message.contains("crashing on purpose"), "{message}");
    assert!(message.contains("stderr noise line"), "{message}");
    assert_eq!(
        crash_err.agent_message(),
        "tool crash is unavailable: server not responding"
    );
    assert!(session.is_closed());
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn the_stderr_ring_buffer_is_bounded() {
    let config = fixture(&["--stderr-noise", "5000"]).stderr_buffer(2048);
    let (session, pid) = connect_with(config, (), SessionOptions::default()).await;
    let err = session
        .call_tool("crash", None, RequestOptions::new())
        .await
        .unwrap_err();
    let message = err.message();
    let tail = &message[message.find("stderr tail").expect("has a tail")..];
    assert!(tail.len() < 2048 + 100, "tail of {} bytes", tail.len());
    assert!(tail.contains("crashing on purpose"), "{tail}");
    assert!(
        !tail.contains("stderr noise line 1\n"),
        "the oldest lines were dropped"
    );
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn a_server_that_exits_at_start_reports_status_and_stderr() {
    let transport = StdioTransport::spawn(fixture(&["--exit-on-start", "7"])).unwrap();
    let err = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert!(err.message().contains("exited with status 7"), "{err}");
    assert!(err.message().contains("refusing to start"), "{err}");
}

#[tokio::test]
async fn a_server_that_hangs_at_initialize_times_out_and_is_stopped() {
    let transport = StdioTransport::spawn(fixture(&["--hang-on-initialize"])).unwrap();
    let pid = transport.pid();
    let options = SessionOptions::default().with_initialize_timeout(Duration::from_millis(500));
    let err = ClientSession::connect(transport, (), options)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.message().contains("initialize"), "{err}");
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn a_refused_handshake_leaves_no_process() {
    // The server answers `initialize` with a version the client does not speak.
    let transport = StdioTransport::spawn(fixture(&["--protocol-version", "1999-01-01"])).unwrap();
    let pid = transport.pid();
    let err = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(err.message().contains("1999-01-01"), "{err}");
    wait_group_gone(pid).await;
}
