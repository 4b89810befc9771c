//! What the facade's integration tests share: fixture server entries, markers to find their
//! processes, and waiting on a condition with a deadline.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
use mcp_client::{ClientOptions, McpClient};

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

pub async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn start(servers: Vec<ServerConfig>) -> McpClient {
    let config = ClientConfig {
        servers,
        source: None,
        region: None,
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
