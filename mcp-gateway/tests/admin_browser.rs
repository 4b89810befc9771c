//! The operations panel in a real browser: headless Chromium (Debian's `chromium`, installed
//! by `cargo xtask interop-setup`; the test fails naming that command when it is missing)
//! loads the page from a panel over real fixture servers — one over stdio, one over
//! Streamable HTTP — after a few tool calls, and the DOM it dumps must show what the panel's
//! JSON says: the servers' names and states and the calls of each tool. The static page holds
//! none of them, so they prove its script ran, read the snapshot and rendered it. A
//! screenshot goes to `<target>/admin-panel.png` for CI to keep.
//!
//! The page is loaded as `/?live=poll`: Chromium's virtual time (`--virtual-time-budget`,
//! which lets the script run its timers without the test waiting for them) stands still while
//! a request is open, and the event stream the page follows by default never ends; polling
//! runs the same rendering from `/api/snapshot`. The stream itself is tested over HTTP
//! (tests/admin.rs).
//!
//! Every Chromium run has a deadline, after which its process group is killed.

mod admin_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use admin_support::*;
use mcp_client::metrics::{EndpointInfo, Metrics, MetricsSnapshot};
use mcp_client::{BreakerStatus, EndpointReport, EndpointState, ServerReport, ServerStatus};
use mcp_gateway::admin::{AdminOptions, AdminPanel, PanelSource};
use mcp_testkit::process::{find_program, workspace_root, ChildProcess};
use serde_json::{json, Value};

/// How long one Chromium run may take (start, load, script, dump).
const CHROMIUM_DEADLINE: Duration = Duration::from_secs(90);
/// The virtual time Chromium gives the page's script before it dumps the DOM.
const VIRTUAL_TIME_BUDGET_MS: u32 = 5_000;

/// The secret the HTTP server's configuration carries in a header.
const SECRET: &str = "sk-panel-secret-4242";

fn chromium() -> PathBuf {
    find_program("chromium", "chromium").unwrap_or_else(|e| panic!("{e}"))
}

/// The cargo target directory, where CI keeps artifacts.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// Runs headless Chromium on `url` with `args`, its stdout to `out`, within the deadline;
/// kills its process group when the deadline passes. Its stdout on success.
fn run_chromium(url: &str, args: &[String], work: &Path, label: &str) -> String {
    let profile = work.join(format!("profile-{label}"));
    let out_path = work.join(format!("{label}.out"));
    let err_path = work.join(format!("{label}.err"));
    let out = std::fs::File::create(&out_path).expect("the output file");
    let err = std::fs::File::create(&err_path).expect("the log file");
    let mut command = Command::new(chromium());
    command
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-sync",
            "--mute-audio",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}"))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let mut browser = ChildProcess::spawn(format!("chromium ({label})"), &mut command)
        .unwrap_or_else(|e| panic!("{e}"));
    let status = browser.wait_within(CHROMIUM_DEADLINE);
    let log = || std::fs::read_to_string(&err_path).unwrap_or_default();
    let Some(status) = status else {
        let _ = browser.kill();
        panic!(
            "chromium ({label}) did not finish within {CHROMIUM_DEADLINE:?}; killed. Its log:\n{}",
            log()
        );
    };
    // What it left in its group (a zygote, a GPU process) goes too.
    let _ = browser.kill();
    assert!(
        status.success(),
        "chromium ({label}) failed ({status}):\n{}",
        log()
    );
    std::fs::read_to_string(&out_path).unwrap_or_default()
}

/// The part of `dom` inside the element that starts with `start` (up to `end`).
fn section<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    let from = dom
        .find(start)
        .unwrap_or_else(|| panic!("the rendered page has no {start}:\n{dom}"));
    let rest = &dom[from..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The text of the first `<… data-field="field">TEXT<` after the start of `part`.
fn field<'a>(part: &'a str, field: &str) -> &'a str {
    let marker = format!("data-field=\"{field}\">");
    let from = part
        .find(&marker)
        .unwrap_or_else(|| panic!("no {field} field in:\n{part}"))
        + marker.len();
    let rest = &part[from..];
    &rest[..rest.find('<').unwrap_or(rest.len())]
}

fn operation_calls(snapshot: &Value, server: &str, tool: &str) -> u64 {
    snapshot["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["name"] == server)
        .flat_map(|s| s["operations"].as_array().cloned().unwrap_or_default())
        .find(|op| op["method"] == "tools/call" && op["tool"] == tool)
        .and_then(|op| op["calls"].as_u64())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_the_live_panel_with_the_snapshots_servers_states_and_calls() {
    // Before anything starts: a missing browser fails the test at once, saying what to run.
    let _ = chromium();
    let http = http_fixture().await;
    let client = ready_client(vec![
        stdio_fixture("alpha"),
        http_entry("beta", &http, SECRET),
    ])
    .await;

    for i in 0..3 {
        client
            .call_tool("alpha__echo", Some(json!({ "text": format!("hello {i}") })))
            .await
            .expect("alpha's echo answers");
    }
    for i in 0..2 {
        client
            .call_tool("beta__add", Some(json!({ "a": i, "b": 2 })))
            .await
            .expect("beta's add answers");
    }
    // A tool error, for the list of the last errors.
    let _ = client.call_tool("beta__fail", None).await;

    let panel = AdminPanel::bind(
        "127.0.0.1:0".parse().expect("an address"),
        client.clone(),
        AdminOptions::default().with_interval(Duration::from_millis(200)),
    )
    .await
    .expect("the panel binds");
    let url = format!("{}?live=poll", panel.url());
    // A few samples, so the charts have points.
    mcp_testkit::wait::until_async("three samples", DEADLINE, || async {
        get(panel.local_addr(), "/api/snapshot").await.json()["seq"]
            .as_u64()
            .is_some_and(|seq| seq >= 3)
    })
    .await;

    let work = tempdir();
    let dom = tokio::task::spawn_blocking({
        let url = url.clone();
        let work = work.clone();
        move || run_chromium(&url, &["--dump-dom".to_owned()], &work, "dom")
    })
    .await
    .expect("the chromium thread");
    let snapshot = get(panel.local_addr(), "/api/snapshot").await.json();

    // The script ran: it stamped the sample it rendered, and replaced the placeholder.
    let seq: u64 = section(&dom, "<body data-seq=\"", ">")
        .trim_start_matches("<body data-seq=\"")
        .trim_end_matches('"')
        .parse()
        .unwrap_or_else(|e| panic!("data-seq is not a number ({e}):\n{dom}"));
    assert!(seq >= 1, "the page rendered no sample:\n{dom}");
    assert!(!dom.contains("Waiting for the first snapshot"), "{dom}");
    assert!(
        dom.contains("id=\"conn\" data-state=\"polling\""),
        "the page is not following the panel:\n{dom}"
    );

    for (server, tool, calls) in [
        ("alpha", "echo", 3),
        ("beta", "add", 2),
        ("beta", "fail", 1),
    ] {
        assert_eq!(
            operation_calls(&snapshot, server, tool),
            calls,
            "{snapshot:#}"
        );
        let article = section(&dom, &format!("data-server=\"{server}\""), "</article>");
        assert!(
            article.starts_with(&format!("data-server=\"{server}\" data-state=\"ready\"")),
            "{server} is not shown ready:\n{article}"
        );
        assert_eq!(field(article, "state"), "ready", "{article}");
        let row = section(article, &format!("data-op=\"tools/call {tool}\""), "</tr>");
        assert_eq!(field(row, "calls"), calls.to_string(), "{row}");
        // The server's total as the page shows it is the snapshot's or one the servers'
        // health checks have since raised.
        let shown: u64 = field(article, "calls").parse().expect("a count");
        let total = snapshot["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == server)
            .and_then(|s| s["calls"].as_u64())
            .expect("the server in the snapshot");
        assert!(
            shown >= calls && shown <= total,
            "{server}: {shown} shown, {total} in the snapshot"
        );
        // Its charts were drawn, with points.
        assert!(article.contains("data-chart=\"QPS\""), "{article}");
        assert!(article.contains("<path d=\"M"), "no chart line:\n{article}");
    }
    assert!(
        dom.contains("tool_error"),
        "the tool error is not listed:\n{dom}"
    );
    assert!(!dom.contains(SECRET) && !snapshot.to_string().contains(SECRET));

    // The screenshot CI keeps.
    let png = target_dir().join("admin-panel.png");
    let _ = std::fs::remove_file(&png);
    tokio::task::spawn_blocking({
        let png = png.clone();
        move || {
            run_chromium(
                &url,
                &[
                    format!("--screenshot={}", png.display()),
                    "--window-size=1280,900".to_owned(),
                    "--hide-scrollbars".to_owned(),
                ],
                &work,
                "screenshot",
            );
            let _ = std::fs::remove_dir_all(&work);
        }
    })
    .await
    .expect("the chromium thread");
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", png.display()));
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        png.display()
    );

    panel.shutdown().await;
    client.shutdown().await;
    http.shutdown().await;
}

/// A source with fixed status reports over a registry.
struct Fixed {
    reports: Vec<ServerReport>,
    metrics: Metrics,
}

impl PanelSource for Fixed {
    fn servers(&self) -> Vec<ServerReport> {
        self.reports.clone()
    }

    fn metrics(&self) -> MetricsSnapshot {
        self.metrics.snapshot()
    }

    fn prometheus(&self) -> String {
        self.metrics.render_prometheus()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_shows_names_and_messages_as_text_and_draws_each_endpoint() {
    let _ = chromium();
    let name = "<img src=x onerror=document.title='pwned'>";
    let metrics = Metrics::new();
    let server = metrics.server(name);
    for (url, region, ok) in [
        ("https://eu.example.com/mcp", "eu", false),
        ("https://us.example.com/mcp", "us", true),
    ] {
        let endpoint = server.endpoint(EndpointInfo {
            url: url.into(),
            address: None,
            port: None,
            region: Some(region.into()),
        });
        for _ in 0..4 {
            endpoint.record_call(Duration::from_millis(2), ok);
        }
    }
    let endpoint = |url: &str, state, active, down_reason: Option<&str>| EndpointReport {
        url: url.into(),
        region: None,
        state,
        active,
        latency: Some(Duration::from_millis(3)),
        breaker: Some(BreakerStatus::Closed),
        down_reason: down_reason.map(str::to_owned),
    };
    let report = ServerReport {
        name: name.into(),
        status: ServerStatus::Unavailable {
            reason: "<b>bold</b> refused Bearer sk-browser-secret".into(),
            kind: mcp_core::ErrorKind::Network,
        },
        transport: "http".into(),
        tools: 0,
        server_info: None,
        protocol_version: None,
        breaker: Some(BreakerStatus::Open {
            retry_in: Duration::from_secs(20),
        }),
        reconnects: 2,
        last_error: None,
        pool: None,
        endpoints: vec![
            endpoint(
                "https://eu.example.com/mcp",
                EndpointState::Down,
                false,
                Some("<script>alert(1)</script>"),
            ),
            endpoint(
                "https://us.example.com/mcp",
                EndpointState::Active,
                true,
                None,
            ),
        ],
    };
    let panel = AdminPanel::bind(
        "127.0.0.1:0".parse().expect("an address"),
        Fixed {
            reports: vec![report],
            metrics,
        },
        AdminOptions::default().with_interval(Duration::from_millis(200)),
    )
    .await
    .expect("the panel binds");
    let url = format!("{}?live=poll", panel.url());
    let work = tempdir();
    let dom = tokio::task::spawn_blocking({
        let work = work.clone();
        move || run_chromium(&url, &["--dump-dom".to_owned()], &work, "odd")
    })
    .await
    .expect("the chromium thread");
    let _ = std::fs::remove_dir_all(&work);

    // Shown as text, never made into elements.
    assert!(
        dom.contains(">&lt;img src=x onerror=document.title='pwned'&gt;<"),
        "{dom}"
    );
    assert!(!dom.contains("<img src=\"x\""), "{dom}");
    assert!(
        dom.contains("&lt;b&gt;bold&lt;/b&gt;") && !dom.contains("<b>bold"),
        "{dom}"
    );
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{dom}"
    );
    assert!(!dom.contains("sk-browser-secret"), "{dom}");
    assert!(!dom.contains("<title>pwned</title>"), "{dom}");
    let article = section(&dom, "data-state=\"unavailable\"", "</article>");
    assert_eq!(field(article, "breaker"), "open");
    assert_eq!(field(article, "reconnects"), "2");
    for (url, state, calls) in [
        ("https://eu.example.com/mcp", "down", "4"),
        ("https://us.example.com/mcp", "active", "4"),
    ] {
        let row = section(article, &format!("data-endpoint=\"{url}\""), "</tr>");
        assert_eq!(field(row, "state"), state, "{row}");
        assert_eq!(field(row, "calls"), calls, "{row}");
        assert!(row.contains("class=\"spark\""), "{row}");
    }

    panel.shutdown().await;
}

/// A fresh directory for the browser's profile and output.
fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mcp-admin-browser-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}
