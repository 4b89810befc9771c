//! Fault-injection flags and process-level behaviour of the fixture server.

mod common;

use std::time::{Duration, Instant};

use common::{tool_text, Fixture};
use serde_json::json;

#[tokio::test]
async fn crash_exits_with_code() {
    let mut f = Fixture::initialized(&[]).await;
    f.start_request(
        "tools/call",
        json!({"name": "crash", "arguments": {"exit_code": 3}}),
    )
    .await;
    let status = f.wait_exit().await;
    assert_eq!(status.code(), Some(3));
    assert_eq!(f.recv_line().await, None, "crash must not answer");
    let mut lines = Vec::new();
    while let Some(line) = f.stderr_line().await {
        lines.push(line);
    }
    assert!(
        lines
            .iter()
            .any(|l| l == "fixture server crashing on purpose"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn crash_defaults_to_code_one() {
    let mut f = Fixture::initialized(&[]).await;
    f.start_request("tools/call", json!({"name": "crash", "arguments": {}}))
        .await;
    assert_eq!(f.wait_exit().await.code(), Some(1));
}

#[tokio::test]
async fn garbage_lines_precede_every_response() {
    let mut f = Fixture::spawn(&["--garbage-lines"]).await;
    f.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(f.recv_line().await.as_deref(), Some("this is not json"));
    let line = f.recv_line().await.expect("response line");
    let v: serde_json::Value = serde_json::from_str(&line).expect("json");
    assert_eq!(v["id"], 1);
    f.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    assert_eq!(f.recv_line().await.as_deref(), Some("this is not json"));
    let line = f.recv_line().await.expect("response line");
    assert!(line.contains("\"id\":2"), "{line}");
}

#[tokio::test]
async fn ignore_stdin_eof_keeps_running() {
    let mut f = Fixture::spawn(&["--ignore-stdin-eof"]).await;
    assert!(f.request("ping", json!({})).await["result"].is_object());
    f.close_stdin();
    assert!(
        f.still_running_after(Duration::from_millis(500)).await,
        "server exited on EOF despite --ignore-stdin-eof"
    );
    f.kill().await;
}

#[tokio::test]
async fn ignore_sigterm_survives_sigterm() {
    let mut f = Fixture::spawn(&["--ignore-sigterm"]).await;
    // The flag is applied before the first request is served.
    assert!(f.request("ping", json!({})).await["result"].is_object());
    let pid = f.child.id().expect("pid");
    let pid = libc::pid_t::try_from(pid).expect("pid fits");
    // SAFETY: plain kill(2) on our own child.
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(rc, 0);
    assert!(f.still_running_after(Duration::from_millis(300)).await);
    assert!(f.request("ping", json!({})).await["result"].is_object());
    f.kill().await;
}

#[tokio::test]
async fn sigterm_ends_server_by_default() {
    let mut f = Fixture::spawn(&[]).await;
    assert!(f.request("ping", json!({})).await["result"].is_object());
    let pid = libc::pid_t::try_from(f.child.id().expect("pid")).expect("pid fits");
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = f.wait_exit().await;
    assert!(!status.success());
}

#[tokio::test]
async fn stderr_noise_lines() {
    let mut f = Fixture::spawn(&["--stderr-noise", "3"]).await;
    for k in 1..=3 {
        assert_eq!(
            f.stderr_line().await,
            Some(format!("stderr noise line {k}"))
        );
    }
    assert!(f.request("ping", json!({})).await["result"].is_object());
}

#[tokio::test]
async fn exit_on_start() {
    let mut f = Fixture::spawn(&["--exit-on-start", "4"]).await;
    assert_eq!(f.wait_exit().await.code(), Some(4));
    assert_eq!(
        f.stderr_line().await.as_deref(),
        Some("fixture server refusing to start")
    );
}

#[tokio::test]
async fn hang_on_initialize_answers_nothing_but_pings() {
    let mut f = Fixture::spawn(&["--hang-on-initialize"]).await;
    let init = f
        .start_request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}),
        )
        .await;
    // Ping is answered; the initialize (sent first) never is.
    assert!(f.request("ping", json!({})).await["result"].is_object());
    assert!(f.take_stashed(|v| v["id"] == init).is_empty());
}

#[tokio::test]
async fn delay_ms_delays_responses() {
    let mut f = Fixture::spawn(&["--delay-ms", "300"]).await;
    let started = Instant::now();
    assert!(f.request("ping", json!({})).await["result"].is_object());
    assert!(started.elapsed() >= Duration::from_millis(300));
    let started = Instant::now();
    let r = f.call_tool("echo", json!({"text": "late"})).await;
    assert_eq!(tool_text(&r), "late");
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn spawn_grandchild_reports_pid() {
    let mut f = Fixture::spawn(&["--spawn-grandchild"]).await;
    let line = f.stderr_line().await.expect("grandchild line");
    let pid: libc::pid_t = line
        .strip_prefix("grandchild pid ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected stderr line {line:?}"));
    // SAFETY: signal 0 only checks that the process exists.
    assert_eq!(unsafe { libc::kill(pid, 0) }, 0, "grandchild not running");
    let server_pid = libc::pid_t::try_from(f.child.id().expect("pid")).expect("pid fits");
    // SAFETY: getpgid has no memory-safety preconditions.
    let (pg_child, pg_server) = unsafe { (libc::getpgid(pid), libc::getpgid(server_pid)) };
    assert_eq!(
        pg_child, pg_server,
        "grandchild must share the server's process group"
    );
    assert!(f.request("ping", json!({})).await["result"].is_object());
    // SAFETY: killing the grandchild we were told about.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    f.kill().await;
}

#[tokio::test]
async fn help_lists_flags() {
    let out = tokio::time::timeout(
        common::DEADLINE,
        tokio::process::Command::new(common::BIN)
            .arg("--help")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("help in time")
    .expect("run --help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--delay-ms",
        "--garbage-lines",
        "--ignore-stdin-eof",
        "--ignore-sigterm",
        "--stderr-noise",
        "--hang-on-initialize",
        "--exit-on-start",
        "--spawn-grandchild",
        "--fail-first",
        "--page-size",
        "--protocol-version",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}
