//! `mcph serve` seen by the MCP Inspector's CLI mode (`mcp-inspector --cli`), a client nobody
//! here wrote: over stdio (the Inspector starts `mcph serve`) and over Streamable HTTP
//! (`mcph serve --http`), it lists the tools of the three upstreams (stdio, Streamable HTTP,
//! OAuth-protected and logged in) and calls the OAuth-protected server's own tool. No token of the
//! login appears in what it printed.
//!
//! Needs what `cargo xtask interop-setup` installs (the Inspector with its Node 22, dbus-daemon
//! and gnome-keyring for the Secret Service).

#![cfg(target_os = "linux")]

mod common;
mod serve_support;

use std::process::Command;

use common::{Run, RunningProcess, TempDir, DEADLINE, MCPH};
use mcp_testkit::process::interop_component;
use serde_json::Value;
use serve_support::{Upstreams, SERVED_TOOLS};

/// How the Inspector reaches the gateway.
enum Target<'a> {
    /// It starts `mcph serve --config CONFIG` itself.
    Stdio,
    /// `mcph serve --http` at this URL.
    Http(&'a str),
}

/// Runs `mcp-inspector --cli METHOD-ARGS … TARGET` (the pinned Inspector on its own Node) in
/// an empty HOME of its own; checks it exited 0 and printed no credential: its stdout as JSON.
fn inspector(upstreams: &Upstreams, target: &Target, method: &[&str]) -> Value {
    let dir = interop_component("inspector");
    let node = dir.join("node_modules/.bin/node");
    let cli = dir.join("node_modules/.bin/mcp-inspector");
    let home = TempDir::new("inspector-home");
    let mut command = Command::new(node);
    command
        .arg(cli)
        .arg("--cli")
        .current_dir(upstreams.cwd.path())
        .env_clear()
        .env(
            "PATH",
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        )
        .env("HOME", home.path())
        .env("MCP_CATALOG_PATH", home.path().join("catalog.json"));
    // The URL before the method's options (`--tool-arg` takes every word after it); the
    // command after them, behind `--`.
    match target {
        Target::Stdio => {
            command.args(method);
            // The Inspector passes a server only the environment it is given (and a few
            // variables of its own, HOME among them): mcph's Secret Service and HOME.
            for (key, value) in upstreams.envs() {
                command.arg("-e").arg(format!("{key}={value}"));
            }
            command
                .arg("--")
                .arg(MCPH)
                .args(["serve", "--config"])
                .arg(&upstreams.config);
        }
        Target::Http(url) => {
            command.arg(url).args(method);
        }
    }
    let run = RunningProcess::spawn("the MCP Inspector CLI", &mut command).finish(DEADLINE);
    check_run(upstreams, &run)
}

fn check_run(upstreams: &Upstreams, run: &Run) -> Value {
    upstreams.assert_no_credential(&run.stdout, "the Inspector's output");
    upstreams.assert_no_credential(&run.stderr, "the Inspector's stderr");
    assert_eq!(
        run.code,
        Some(0),
        "the Inspector:\n--- stdout\n{}\n--- stderr\n{}",
        run.stdout,
        run.stderr
    );
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the Inspector printed no JSON ({e}):\n{}\n{}",
            run.stdout, run.stderr
        )
    })
}

/// `tools/list` lists every tool of the three upstreams; `tools/call secure__vault` reaches the
/// OAuth-protected server with mcph's token.
fn list_and_call(upstreams: &Upstreams, target: &Target) {
    let listed = inspector(upstreams, target, &["--method", "tools/list"]);
    let tools: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list: {listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for expected in SERVED_TOOLS {
        assert!(tools.contains(expected), "{expected} in {tools:?}");
    }
    let called = inspector(
        upstreams,
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "secure__vault",
            "--tool-arg",
            "text=through the inspector",
        ],
    );
    assert_ne!(called["isError"], true, "{called}");
    assert_eq!(
        called["content"][0]["text"], "vault: through the inspector",
        "{called}"
    );
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls_tools_through_mcph_serve_over_stdio() {
    let upstreams = Upstreams::start();
    list_and_call(&upstreams, &Target::Stdio);
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls_tools_through_mcph_serve_over_streamable_http() {
    let upstreams = Upstreams::start();
    let (gateway, url) = upstreams.serve_http();
    list_and_call(&upstreams, &Target::Http(&url));
    drop(gateway);
}
