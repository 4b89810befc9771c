//! What the facade's integration tests share: fixture server entries, markers to find their
//! processes, and fixture "regions" (processes started through `mcp_testkit::process`).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
use mcp_client::{ClientOptions, McpClient};
use mcp_testkit::process::{free_port, ChildProcess};

pub const DEADLINE: Duration = Duration::from_secs(20);

/// A fixture server entry; `marker` is put in its environment so the test can find its
/// processes in /proc.
pub fn fixture(name: &str, args: &[&str], marker: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: mcp_testkit::fixture_server_bin()
                .to_string_lossy()
                .into_owned(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::from([("MCP_FACADE_TEST_MARKER".to_owned(), marker.to_owned())]),
            cwd: None,
        },
    )
}

pub fn broken(name: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: "/nonexistent/mcp-server".into(),
            args: vec![],
            env: BTreeMap::new(),
            cwd: None,
        },
    )
}

pub fn unique_marker(test: &str) -> String {
    format!(
        "{test}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    )
}

/// Pids of live processes whose environment carries `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let needle = format!("MCP_FACADE_TEST_MARKER={marker}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = state
            .rfind(')')
            .map(|i| state[i + 1..].trim_start().starts_with('Z'))
            .unwrap_or(false);
        if !zombie
            && environ
                .split(|b| *b == 0)
                .any(|var| var == needle.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

pub async fn start(servers: Vec<ServerConfig>) -> McpClient {
    let config = ClientConfig {
        servers,
        source: None,
        region: None,
        store: None,
    };
    tokio::time::timeout(DEADLINE, McpClient::start(config, ClientOptions::default()))
        .await
        .expect("start is bounded by the startup timeouts")
}

/// Established TCP connections from this machine to loopback `port` (the client's side of
/// its connections to an endpoint), from /proc/net/tcp and /proc/net/tcp6.
pub fn established_to(port: u16) -> usize {
    let wanted = format!("{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .map(|text| {
            text.lines()
                .skip(1)
                .filter(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let remote_port = fields.get(2).and_then(|a| a.rsplit(':').next());
                    remote_port == Some(wanted.as_str()) && fields.get(3) == Some(&"01")
                })
                .count()
        })
        .sum()
}

/// Waits (within [`DEADLINE`]) until something accepts connections on loopback `port`;
/// fails at once when `process` exits.
pub async fn wait_for_port(process: &mut ChildProcess, port: u16) -> Result<(), String> {
    process
        .wait_ready_async(
            &format!("listening on port {port}"),
            DEADLINE,
            || async move {
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            },
        )
        .await
}

/// One "region" of a routed server: the fixture serving Streamable HTTP (or WebSocket) on a
/// loopback port of its own, with `--instance LABEL` and an event log, restarted on the same
/// port; its process group killed on drop.
pub struct FixtureRegion {
    pub label: String,
    pub port: u16,
    /// Served over WebSocket (`--ws`) rather than HTTP.
    websocket: bool,
    args: Vec<String>,
    pub log: std::path::PathBuf,
    /// Put in the process's environment (markers that find it in /proc).
    env: Vec<(String, String)>,
    child: Option<ChildProcess>,
}

impl FixtureRegion {
    /// A region called `label` over HTTP whose fixture gets `args` too, its processes marked
    /// with `MCP_FACADE_TEST_MARKER=marker`; started.
    pub async fn start(label: &str, dir: &std::path::Path, marker: &str, args: &[&str]) -> Self {
        Self::start_as(label, dir, marker, args, false).await
    }

    /// [`start`](Self::start), over WebSocket when `websocket`.
    pub async fn start_as(
        label: &str,
        dir: &std::path::Path,
        marker: &str,
        args: &[&str],
        websocket: bool,
    ) -> Self {
        let env = [("MCP_FACADE_TEST_MARKER", marker)];
        Self::start_with(label, dir, &env, args, websocket).await
    }

    /// A region with these environment variables (its markers).
    pub async fn start_with(
        label: &str,
        dir: &std::path::Path,
        env: &[(&str, &str)],
        args: &[&str],
        websocket: bool,
    ) -> Self {
        let mut region = FixtureRegion {
            label: label.to_owned(),
            port: free_port(),
            websocket,
            args: args.iter().map(|a| a.to_string()).collect(),
            log: dir.join(format!("{label}.jsonl")),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            child: None,
        };
        region.restart().await;
        region
    }

    /// Starts the fixture (again, on the same port) and waits until it accepts connections.
    pub async fn restart(&mut self) {
        self.kill();
        let mut child = ChildProcess::spawn(
            format!("the fixture of region {}", self.label),
            std::process::Command::new(mcp_testkit::fixture_server_bin())
                .args([
                    if self.websocket { "--ws" } else { "--http" },
                    &format!("127.0.0.1:{}", self.port),
                ])
                .args(["--instance", &self.label])
                .arg("--event-log")
                .arg(&self.log)
                .args(&self.args)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        wait_for_port(&mut child, self.port)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        self.child = Some(child);
    }

    /// SIGKILL, and reaped.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Err(e) = child.kill() {
                panic!("{e}");
            }
        }
    }

    /// The process, while it runs.
    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.pid() as i32)
    }

    pub fn url(&self) -> String {
        let scheme = if self.websocket { "ws" } else { "http" };
        format!("{scheme}://127.0.0.1:{}/mcp", self.port)
    }

    /// `call_id`s of the `record` executions this region logged.
    pub fn executions(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|event| event["event"] == "call" && event["tool"] == "record")
            .filter_map(|event| event["call_id"].as_str().map(str::to_owned))
            .collect()
    }
}
