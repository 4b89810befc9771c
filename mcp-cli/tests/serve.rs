//! `mcph serve` seen by real downstream clients nobody here wrote: the official TypeScript SDK
//! client and the official Python SDK client, over stdio (the client starts `mcph serve`) and
//! over Streamable HTTP (`mcph serve --http`; the Python client in both eras: a 2025-11-25
//! session and 2026-07-28), list the tools of three upstreams — a stdio server, a Streamable
//! HTTP server and an OAuth-protected server mcph is logged in to — and call each.
//!
//! The login's tokens stay in mcph: none appears in anything a client received (every JSON-RPC
//! message, and over HTTP every response's headers and body) or printed.
//!
//! Needs what `cargo xtask interop-setup` installs (the TS SDK, the Python SDK's venv,
//! dbus-daemon and gnome-keyring for the Secret Service).

#![cfg(target_os = "linux")]

mod common;
mod serve_support;

use std::path::Path;
use std::process::Command;

use common::{RunningProcess, DEADLINE};
use mcp_testkit::process::{find_program, interop_component, workspace_root};
use serde_json::Value;
use serve_support::{check_client, client_output, Upstreams};

/// Runs the TypeScript SDK client on `plan`: what it printed, checked.
fn typescript_client(upstreams: &Upstreams, plan: &Path) -> Value {
    let node = find_program("node", "nodejs").unwrap_or_else(|e| panic!("{e}"));
    let sdk = interop_component("tssdk").join("node_modules/@modelcontextprotocol/sdk");
    let script = workspace_root().join("interop/gateway_client.mjs");
    let run = RunningProcess::spawn(
        "the TypeScript SDK client",
        Command::new(node).arg(script).arg(sdk).arg(plan),
    )
    .finish(DEADLINE);
    upstreams.assert_no_credential(&run.stdout, "the TypeScript SDK client's output");
    upstreams.assert_no_credential(&run.stderr, "the TypeScript SDK client's stderr");
    client_output(&run, "the TypeScript SDK client")
}

/// Runs the Python SDK client on `plan`: what it printed, checked.
fn python_client(upstreams: &Upstreams, plan: &Path) -> Value {
    let python = interop_component("py").join("bin/python");
    let script = workspace_root().join("interop/gateway_client.py");
    let run = RunningProcess::spawn(
        "the Python SDK client",
        Command::new(python).arg(script).arg(plan),
    )
    .finish(DEADLINE);
    upstreams.assert_no_credential(&run.stdout, "the Python SDK client's output");
    upstreams.assert_no_credential(&run.stderr, "the Python SDK client's stderr");
    client_output(&run, "the Python SDK client")
}

#[test]
fn the_typescript_sdk_client_uses_three_upstreams_through_mcph_serve_over_stdio() {
    let upstreams = Upstreams::start();
    let plan = upstreams.write_plan("plan.json", &upstreams.stdio_plan());
    let seen = typescript_client(&upstreams, &plan);
    check_client(&seen, "the TypeScript SDK client");
}

#[test]
fn the_python_sdk_client_uses_three_upstreams_through_mcph_serve_over_stdio() {
    let upstreams = Upstreams::start();
    let plan = upstreams.write_plan("plan.json", &upstreams.stdio_plan());
    let seen = python_client(&upstreams, &plan);
    check_client(&seen, "the Python SDK client");
    assert_eq!(seen["protocolVersion"], "2025-11-25", "{seen}");
}

#[test]
fn the_typescript_sdk_client_uses_three_upstreams_through_mcph_serve_over_streamable_http() {
    let upstreams = Upstreams::start();
    let (gateway, url) = upstreams.serve_http();
    let plan = upstreams.write_plan("plan.json", &upstreams.http_plan(&url));
    let seen = typescript_client(&upstreams, &plan);
    check_client(&seen, "the TypeScript SDK client");
    assert_eq!(seen["protocolVersion"], "2025-11-25", "{seen}");
    // Over HTTP the client also recorded every response as it came: headers and bodies.
    let wire = seen["wire"].as_array().expect("the responses");
    assert!(
        wire.iter()
            .any(|r| r["headers"]["mcp-session-id"].is_string()),
        "a 2025-11-25 session: {seen}"
    );
    drop(gateway);
}

#[test]
fn the_python_sdk_client_uses_three_upstreams_through_mcph_serve_over_streamable_http_in_both_eras()
{
    let upstreams = Upstreams::start();
    let (gateway, url) = upstreams.serve_http();
    let mut plan = upstreams.http_plan(&url);
    // The initialize handshake: a 2025-11-25 session.
    plan["mode"] = "legacy".into();
    let legacy = upstreams.write_plan("legacy.json", &plan);
    let seen = python_client(&upstreams, &legacy);
    check_client(&seen, "the Python SDK client (legacy)");
    assert_eq!(seen["protocolVersion"], "2025-11-25", "{seen}");
    // The SDK's default: server/discover first, so 2026-07-28, stateless, where served.
    plan["mode"] = "auto".into();
    let auto = upstreams.write_plan("auto.json", &plan);
    let seen = python_client(&upstreams, &auto);
    check_client(&seen, "the Python SDK client (auto)");
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
    drop(gateway);
}
