//! Deadlines hold against a real server process that stops reading: the fixture frozen with
//! SIGSTOP while 100 calls are queued behind a small outgoing queue (so most of them wait inside
//! `send`). Every call ends with `Timeout` at its deadline, the server hears a
//! `notifications/cancelled` for every request it received once it is thawed, and the session
//! goes on working.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use mcp_core::{ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::SessionOptions;
use mcp_testkit::event_log::wait_for_events;
use serde_json::json;
use tokio::time::Instant;

use common::{connect_with, fixture, DEADLINE};

/// How late a call may end after its deadline on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(400);

fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a pid this test spawned; no memory is involved.
    let rc = unsafe { libc::kill(pid as i32, signal) };
    assert_eq!(rc, 0, "kill({pid}, {signal})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_to_a_frozen_stdio_server_end_at_their_deadline_and_are_cancelled() {
    let dir = tempdir();
    let log = dir.join("events.jsonl");
    let config = fixture(&["--event-log", log.to_str().unwrap()]).outgoing_queue(8);
    let (session, pid) = connect_with(config, (), SessionOptions::default()).await;
    signal(pid, libc::SIGSTOP);

    // 100 calls with 32 KiB of arguments each: the pipe and the 8-slot queue fill, and the rest
    // of the calls wait inside `send`.
    let timeout = Duration::from_millis(1500);
    let padding = "p".repeat(32 * 1024);
    let started = Instant::now();
    let calls: Vec<_> = (0..100)
        .map(|i| {
            let session = session.clone();
            let arguments = json!({"call_id": format!("c{i}"), "padding": padding});
            tokio::spawn(async move {
                let options = RequestOptions::new().with_timeout(timeout);
                let outcome = session.call_tool("record", Some(arguments), options).await;
                (outcome, Instant::now())
            })
        })
        .collect();
    for call in calls {
        let (outcome, ended) = call.await.unwrap();
        let err = outcome.expect_err("a frozen server answers nothing");
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        let took = ended - started;
        assert!(
            took >= timeout && took < timeout + SLACK,
            "ended after {took:?}, deadline {timeout:?}"
        );
    }
    assert_eq!(session.pending_requests(), 0);

    // Thawed, the server reads what was queued, then the cancellations.
    signal(pid, libc::SIGCONT);
    wait_for_events(
        &log,
        DEADLINE,
        "every executed call is followed by its cancellation",
        |events| {
            let calls: HashSet<_> = events
                .iter()
                .filter(|e| e["event"] == "call")
                .map(|e| e["id"].clone())
                .collect();
            let cancelled: HashSet<_> = events
                .iter()
                .filter(|e| e["event"] == "cancelled")
                .map(|e| e["id"].clone())
                .collect();
            !calls.is_empty() && calls.is_subset(&cancelled)
        },
    )
    .await;
    let result = session
        .call_tool(
            "echo",
            Some(json!({"text": "back"})),
            RequestOptions::new().with_timeout(DEADLINE),
        )
        .await
        .expect("the session is usable once the server runs again");
    assert_eq!(result.text(), "back");
    session.close().await;
    common::wait_group_gone(pid).await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mcp-stdio-deadlines-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
