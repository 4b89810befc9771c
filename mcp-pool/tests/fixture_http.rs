//! The pool over Streamable HTTP against the fixture server on 127.0.0.1: a real
//! `mcp-fixture-server --http` process, and the fixture served in-process (which can count its
//! sessions, to show that closing the pool ends them on the server).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_core::{McpServiceExt, RequestOptions};
use mcp_pool::{PoolConfig, SessionPool};
use mcp_session::{session_connector_fn, ClientSession, SessionConnector, SessionOptions};
use mcp_testkit::http::serve_http;
use mcp_testkit::ServerOptions;
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::timeout;

const DEADLINE: Duration = Duration::from_secs(20);

/// A connector to the Streamable HTTP endpoint `url` that counts the sessions it opens.
fn counting_connector(url: String, opened: Arc<AtomicUsize>) -> impl SessionConnector {
    session_connector_fn(move || {
        let url = url.clone();
        let opened = opened.clone();
        Box::pin(async move {
            let transport = StreamableHttpTransport::new(HttpServerConfig::new(url))?;
            let session = ClientSession::connect(transport, (), SessionOptions::default()).await?;
            opened.fetch_add(1, Ordering::SeqCst);
            Ok(session)
        })
    })
}

/// Starts `mcp-fixture-server --http 127.0.0.1:0` (killed when dropped) and returns it with
/// its `/mcp` URL, read from the first line of its output.
async fn start_fixture_process() -> (Child, String) {
    let mut child = Command::new(mcp_testkit::fixture_server_bin())
        .args(["--http", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the fixture server starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let first = timeout(DEADLINE, lines.next_line())
        .await
        .expect("the fixture announces its address in time")
        .expect("its stdout is readable")
        .expect("it prints a line");
    let base = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"));
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    (child, format!("{base}/mcp"))
}

#[tokio::test]
async fn sixteen_concurrent_echoes_over_http_share_at_most_four_sessions() {
    let (mut child, url) = start_fixture_process().await;
    let opened = Arc::new(AtomicUsize::new(0));
    let pool = SessionPool::new(
        counting_connector(url, opened.clone()),
        PoolConfig::default().with_max_size(4),
    );
    let calls: Vec<_> = (0..16)
        .map(|i| {
            let pool = pool.clone();
            tokio::spawn(async move {
                pool.call_tool(
                    "echo",
                    Some(json!({ "text": format!("echo {i}") })),
                    RequestOptions::new(),
                )
                .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let result = timeout(DEADLINE, call)
            .await
            .expect("the call ends in time")
            .expect("the task ends")
            .expect("the echo succeeds");
        assert_eq!(result.text(), format!("echo {i}"));
    }
    let stats = pool.stats();
    let sessions = opened.load(Ordering::SeqCst);
    assert!(sessions <= 4, "{sessions} sessions opened");
    assert!(stats.connections <= 4, "{stats:?}");
    assert_eq!(stats.in_use, 0);
    println!("16 echoes over HTTP: {sessions} sessions opened, {stats:?}");
    pool.close().await;
    child.kill().await.expect("the fixture is killed");
    let status = timeout(DEADLINE, child.wait())
        .await
        .expect("the fixture exits in time")
        .expect("its status is known");
    assert!(!status.success(), "killed, not exited by itself: {status}");
}

#[tokio::test]
async fn closing_the_pool_ends_its_sessions_on_the_http_server() {
    let fixture = serve_http(ServerOptions::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the fixture listens");
    let opened = Arc::new(AtomicUsize::new(0));
    let pool = SessionPool::new(
        counting_connector(fixture.url(), opened.clone()),
        PoolConfig::default().with_max_size(4),
    );
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let pool = pool.clone();
            tokio::spawn(async move {
                pool.call_tool(
                    "echo",
                    Some(json!({ "text": i.to_string() })),
                    RequestOptions::new(),
                )
                .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let result = timeout(DEADLINE, call).await.unwrap().unwrap().unwrap();
        assert_eq!(result.text(), i.to_string());
    }
    mcp_testkit::wait::until(
        "the server holds exactly the pool's sessions",
        DEADLINE,
        || {
            fixture.session_count() == opened.load(Ordering::SeqCst)
                && fixture.session_count() == pool.stats().connections as usize
        },
    )
    .await;
    assert!(fixture.session_count() <= 4);
    let before = fixture.session_count();
    pool.close().await;
    mcp_testkit::wait::until(
        "every session ended on the server (DELETE)",
        DEADLINE,
        || fixture.session_count() == 0,
    )
    .await;
    println!("closed {before} HTTP sessions gracefully");
    fixture.shutdown().await;
}
