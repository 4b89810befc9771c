//! Helpers that spawn the built `mcp-fixture-server` and talk raw JSON lines.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// Deadline for any single expected message or event.
pub const DEADLINE: Duration = Duration::from_secs(10);

pub const BIN: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// A running fixture server; killed when dropped.
pub struct Fixture {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    pub stderr: Option<Lines<BufReader<ChildStderr>>>,
    /// Messages received while waiting for something else.
    stash: VecDeque<Value>,
    next_id: i64,
}

impl Fixture {
    pub async fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn mcp-fixture-server");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let stderr = child.stderr.take().map(|e| BufReader::new(e).lines());
        Self {
            child,
            stdin,
            stdout,
            stderr,
            stash: VecDeque::new(),
            next_id: 1,
        }
    }

    /// Spawns and performs the initialize handshake.
    pub async fn initialized(args: &[&str]) -> Self {
        let mut fixture = Self::spawn(args).await;
        let response = fixture.initialize("2025-11-25").await;
        assert!(response.get("result").is_some(), "{response}");
        fixture.notify("notifications/initialized", json!({})).await;
        fixture
    }

    pub async fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write newline");
        stdin.flush().await.expect("flush");
    }

    pub async fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string()).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Sends a request and returns its id without waiting.
    pub async fn start_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Sends a request and waits for its response (other messages are stashed).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_request(method, params).await;
        self.response(id).await
    }

    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    pub async fn initialize(&mut self, version: &str) -> Value {
        self.request(
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}},
                "clientInfo": {"name": "mcp-testkit-tests", "version": "0.0.0"}
            }),
        )
        .await
    }

    /// Next raw stdout line, within the deadline; `None` at EOF.
    pub async fn recv_line(&mut self) -> Option<String> {
        tokio::time::timeout(DEADLINE, self.stdout.next_line())
            .await
            .expect("timed out waiting for a line from the server")
            .expect("read stdout")
    }

    /// Next JSON message (stash first).
    pub async fn recv(&mut self) -> Value {
        if let Some(v) = self.stash.pop_front() {
            return v;
        }
        self.recv_fresh().await
    }

    async fn recv_fresh(&mut self) -> Value {
        let line = self.recv_line().await.expect("server closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("non-JSON line {line:?}: {e}"))
    }

    /// Waits for the first message matching `pred`; others are stashed.
    pub async fn wait_for(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Value {
        if let Some(pos) = self.stash.iter().position(&mut pred) {
            return self.stash.remove(pos).expect("stashed");
        }
        loop {
            let v = self.recv_fresh().await;
            if pred(&v) {
                return v;
            }
            self.stash.push_back(v);
        }
    }

    /// Waits for the response with `id` (a response has no `method`).
    pub async fn response(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        self.wait_for(|v| v.get("method").is_none() && v["id"] == id)
            .await
    }

    /// Removes and returns every stashed message matching `pred`.
    pub fn take_stashed(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let (taken, kept): (Vec<Value>, Vec<Value>) = self.stash.drain(..).partition(|v| pred(v));
        self.stash = kept.into();
        taken
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Next stderr line within the deadline.
    pub async fn stderr_line(&mut self) -> Option<String> {
        let stderr = self.stderr.as_mut().expect("stderr piped");
        tokio::time::timeout(DEADLINE, stderr.next_line())
            .await
            .expect("timed out waiting for stderr")
            .expect("read stderr")
    }

    /// Waits for the process to exit within the deadline.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .expect("server did not exit in time")
            .expect("wait")
    }

    /// True if the process is still running after `grace`.
    pub async fn still_running_after(&mut self, grace: Duration) -> bool {
        tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
    }

    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(DEADLINE, self.child.wait()).await;
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// Text of the first content item of a tools/call response.
pub fn tool_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {response}"))
}
