//! Shared helpers: start the fixture server, inspect processes through /proc.

#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};

/// Generous deadline for anything a test waits on.
pub const DEADLINE: Duration = Duration::from_secs(20);

pub fn fixture(args: &[&str]) -> StdioServerConfig {
    StdioServerConfig::new(mcp_testkit::fixture_server_bin())
        .args(args)
        .shutdown_grace(Duration::from_millis(300))
}

pub async fn connect(args: &[&str]) -> (ClientSession, u32) {
    connect_with(fixture(args), (), SessionOptions::default()).await
}

pub async fn connect_with(
    config: StdioServerConfig,
    handler: impl ClientHandler,
    options: SessionOptions,
) -> (ClientSession, u32) {
    let transport = StdioTransport::spawn(config).expect("spawns");
    let pid = transport.pid();
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, handler, options),
    )
    .await
    .expect("connect finished in time")
    .expect("connects");
    (session, pid)
}

/// Pids of every live (non-zombie) process in process group `pgid`, and of zombies separately.
pub fn group_members(pgid: u32) -> (Vec<u32>, Vec<u32>) {
    let mut live = Vec::new();
    let mut zombies = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return (live, zombies);
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which is in parentheses and may contain spaces).
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] = state, fields[1] = ppid, fields[2] = pgrp
        if fields.len() > 2 && fields[2].parse::<u32>().ok() == Some(pgid) {
            if fields[0] == "Z" {
                zombies.push(pid);
            } else {
                live.push(pid);
            }
        }
    }
    (live, zombies)
}

/// Whether a process with this pid exists at all (live or zombie).
pub fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits (with a deadline) until the process group is empty and its leader fully reaped.
pub async fn wait_group_gone(pgid: u32) {
    let what = format!("process group {pgid} to be empty and its leader reaped");
    mcp_testkit::wait::until(&what, DEADLINE, || {
        let (live, zombies) = group_members(pgid);
        if live.is_empty() && zombies.is_empty() && !process_exists(pgid) {
            Ok(())
        } else {
            Err(format!("live {live:?} / zombie {zombies:?} members"))
        }
    })
    .await;
}

/// Where `cargo xtask interop-setup` installed the third-party servers.
pub fn interop_dir() -> std::path::PathBuf {
    let dir = std::env::var_os("MCP_INTEROP_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".interop"));
    assert!(
        dir.join("node/.xtask-stamp").is_file() && dir.join("py/.xtask-stamp").is_file(),
        "the interop servers are not installed in {}: run `cargo xtask interop-setup`",
        dir.display()
    );
    dir
}

pub fn workspace_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives in the workspace")
        .to_path_buf()
}

/// `mcp-server-everything stdio` from npm.
pub fn everything() -> StdioServerConfig {
    StdioServerConfig::new(interop_dir().join("node/node_modules/.bin/mcp-server-everything"))
        .arg("stdio")
        .name("server-everything")
        .shutdown_grace(Duration::from_secs(1))
}

/// `interop/python_server.py` on the official Python SDK.
pub fn python_server() -> StdioServerConfig {
    StdioServerConfig::new(interop_dir().join("py/bin/python"))
        .arg(workspace_root().join("interop/python_server.py"))
        .name("python-sdk-server")
        .shutdown_grace(Duration::from_secs(1))
}
