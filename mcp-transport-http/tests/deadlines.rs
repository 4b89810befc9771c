//! Deadlines hold against a real HTTP server process that misbehaves: the fixture binary
//! (`mcp-fixture-server --http`) accepting `tools/call` POSTs and then never sending headers,
//! sending headers and trickling a body that never ends (JSON and SSE answers), or answering
//! 500 with an endless body. Every call ends by its deadline, the server hears a
//! `notifications/cancelled` for every request it swallowed, and the session works again once
//! the faults are over.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mcp_core::{ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::event_log::{read_events, wait_for_events};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use serde_json::{json, Value};
use tokio::time::Instant;

const DEADLINE: Duration = Duration::from_secs(20);
/// Each faulty call's own deadline.
const CALL_TIMEOUT: Duration = Duration::from_millis(1500);
/// How late a call may end after its deadline on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(400);
/// Faulty calls per test (the fixture's `--http-*-first` count).
const FAULTY_CALLS: usize = 5;

/// The fixture binary serving HTTP on a loopback port; killed and reaped on drop.
struct FixtureProcess {
    child: Child,
    url: String,
    log: PathBuf,
    dir: PathBuf,
}

impl Drop for FixtureProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl FixtureProcess {
    fn start(flags: &[&str]) -> FixtureProcess {
        let dir = std::env::temp_dir().join(format!(
            "mcp-http-deadlines-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let log = dir.join("events.jsonl");
        let mut child = Command::new(mcp_testkit::fixture_server_bin())
            .args(["--http", "127.0.0.1:0", "--event-log"])
            .arg(&log)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the fixture starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("the fixture prints its address");
        let base = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        FixtureProcess {
            child,
            url: format!("{base}/mcp"),
            log,
            dir,
        }
    }

    async fn connect(&self) -> ClientSession {
        let transport =
            StreamableHttpTransport::new(HttpServerConfig::new(&self.url)).expect("valid config");
        tokio::time::timeout(
            DEADLINE,
            ClientSession::connect(transport, (), SessionOptions::default()),
        )
        .await
        .expect("connects in time")
        .expect("connects")
    }
}

fn ids(events: &[Value], kind: &str) -> HashSet<Value> {
    events
        .iter()
        .filter(|e| e["event"] == kind)
        .map(|e| e["id"].clone())
        .collect()
}

/// What a faulty call must end with.
enum Expect {
    /// `Timeout`, at its deadline.
    TimeoutAtDeadline,
    /// A clear error naming the status, before the deadline (the body is read under a cap).
    StatusErrorBeforeDeadline(&'static str),
}

async fn deadlines_hold(flags: &[&str], expect: Expect) {
    let fixture = FixtureProcess::start(flags);
    let session = fixture.connect().await;
    let started = Instant::now();
    let calls: Vec<_> = (0..FAULTY_CALLS)
        .map(|i| {
            let session = session.clone();
            tokio::spawn(async move {
                let options = RequestOptions::new().with_timeout(CALL_TIMEOUT);
                let arguments = json!({"call_id": format!("c{i}")});
                let outcome = session.call_tool("record", Some(arguments), options).await;
                (outcome, Instant::now())
            })
        })
        .collect();
    for call in calls {
        let (outcome, ended) = call.await.unwrap();
        let err = outcome.expect_err("a faulty answer is no result");
        let took = ended - started;
        match expect {
            Expect::TimeoutAtDeadline => {
                assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
                assert!(
                    took >= CALL_TIMEOUT && took < CALL_TIMEOUT + SLACK,
                    "ended after {took:?}, deadline {CALL_TIMEOUT:?}"
                );
            }
            Expect::StatusErrorBeforeDeadline(status) => {
                assert_eq!(err.kind(), ErrorKind::Network, "{err}");
                assert!(err.message().contains(status), "{err}");
                assert!(took < CALL_TIMEOUT, "ended after {took:?}");
            }
        }
    }
    assert_eq!(session.pending_requests(), 0);
    wait_for_events(
        &fixture.log,
        DEADLINE,
        "every swallowed request is followed by its cancellation",
        |events| {
            let faulted = ids(events, "fault");
            faulted.len() == FAULTY_CALLS && faulted.is_subset(&ids(events, "cancelled"))
        },
    )
    .await;
    assert!(
        ids(&read_events(&fixture.log), "call").is_empty(),
        "no faulty request was handled"
    );
    // The faults are used up: the same session works.
    let result = session
        .call_tool(
            "record",
            Some(json!({"call_id": "after"})),
            RequestOptions::new().with_timeout(DEADLINE),
        )
        .await
        .expect("the session is usable once the server behaves");
    assert_eq!(result.text(), "recorded after");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_sends_headers_cannot_hold_a_call_past_its_deadline() {
    deadlines_hold(&["--http-stall-first", "5"], Expect::TimeoutAtDeadline).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_that_trickles_forever_cannot_hold_a_call_past_its_deadline() {
    deadlines_hold(
        &["--http-json", "--http-trickle-first", "5"],
        Expect::TimeoutAtDeadline,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_stream_that_trickles_forever_cannot_hold_a_call_past_its_deadline() {
    deadlines_hold(&["--http-trickle-first", "5"], Expect::TimeoutAtDeadline).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_error_body_is_read_under_a_cap_and_fails_at_once() {
    deadlines_hold(
        &["--http-endless-error-first", "5"],
        Expect::StatusErrorBeforeDeadline("HTTP 500"),
    )
    .await;
}
