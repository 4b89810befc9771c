//! Interop with the official Python SDK's WebSocket server transport (PyPI `mcp==1.30.0`: 2.0
//! removed it; + `websockets` under uvicorn): interop/py_ws_server.py, installed
//! by `cargo xtask interop-setup` into `$MCP_INTEROP_DIR/py-ws`. Skipped (with a message)
//! when `MCP_INTEROP_DIR` is not set; when it is, a missing install is a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{config, connect_with, within, DEADLINE};
use mcp_core::{Era, McpServiceExt, ProtocolVersion, RequestOptions};
use mcp_session::SessionOptions;
use serde_json::json;

/// Attempts at starting the server (another process may take the free port in between).
const START_ATTEMPTS: usize = 3;

/// The venv's python, or `None` (the test is skipped) when `MCP_INTEROP_DIR` is unset.
fn python() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("MCP_INTEROP_DIR") else {
        eprintln!("skipped: MCP_INTEROP_DIR is not set (run `cargo xtask interop-setup` and set it to <workspace>/.interop)");
        return None;
    };
    let venv = Path::new(&dir).join("py-ws");
    assert!(
        venv.join(".xtask-stamp").is_file(),
        "the interop component `py-ws` is not installed in {}: run `cargo xtask interop-setup`",
        Path::new(&dir).display()
    );
    Some(venv.join("bin/python"))
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives in the workspace")
        .join("interop/py_ws_server.py")
}

/// The Python server on a loopback port; killed and reaped on drop.
struct PythonServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PythonServer {
    async fn start(python: &Path) -> PythonServer {
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
            match PythonServer::try_start(python, port).await {
                Ok(server) => return server,
                Err(e) => failures.push(e),
            }
        }
        panic!(
            "py_ws_server.py did not start:\n{}",
            failures.join("\n---\n")
        );
    }

    async fn try_start(python: &Path, port: u16) -> Result<PythonServer, String> {
        let log =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("interop-py-ws-{port}.log"));
        let out = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(python)
            .arg(script())
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", python.display()))?;
        let mut server = PythonServer { child, port, log };
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "exited with {status} on port {port}:\n{}",
                    server.log_text()
                ));
            }
            if let Ok(Ok(_)) = tokio::time::timeout(
                Duration::from_millis(500),
                tokio::net::TcpStream::connect(("127.0.0.1", port)),
            )
            .await
            {
                return Ok(server);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "no connection on port {port} within {DEADLINE:?}:\n{}",
                    server.log_text()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/mcp", self.port)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

#[tokio::test]
async fn the_python_sdk_websocket_server_lists_calls_and_reports_progress() {
    let Some(python) = python() else {
        return;
    };
    let server = PythonServer::start(&python).await;
    let session = connect_with(config(&server.url()), (), SessionOptions::default()).await;
    // The 1.x SDK knows no 2026-07-28: the probe falls back to initialize.
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(
        session.server_info().server_info.name,
        "python-ws-interop-server"
    );
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["add", "echo", "long_task"]);
    let sum = session
        .call_tool("add", Some(json!({"a": 1, "b": 2})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(sum.text(), "3");
    assert!(!sum.is_error());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| seen.lock().unwrap().push((p.progress, p.total))
    });
    let done = session
        .call_tool("long_task", Some(json!({"steps": 3})), options)
        .await
        .unwrap();
    assert_eq!(done.text(), "finished 3 steps");
    assert_eq!(
        *seen.lock().unwrap(),
        (1..=3).map(|i| (i as f64, Some(3.0))).collect::<Vec<_>>()
    );
    let calls: Vec<_> = (0..50)
        .map(|i| {
            let s = session.clone();
            tokio::spawn(async move {
                s.call_tool(
                    "echo",
                    Some(json!({"text": format!("m{i}")})),
                    RequestOptions::new(),
                )
                .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap().text(), format!("m{i}"));
    }
    within("close", session.close()).await;
    mcp_testkit::wait::until(
        "the server's session saw the connection end",
        DEADLINE,
        || server.log_text().contains("mcp websocket session ended"),
    )
    .await;
    let pid = server.pid();
    drop(server);
    mcp_testkit::wait::until("the server process is gone", DEADLINE, || {
        !Path::new(&format!("/proc/{pid}")).exists()
    })
    .await;
}
