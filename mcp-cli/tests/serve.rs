//! `mcph serve` seen by real downstream clients nobody here wrote: the official TypeScript SDK
//! client and the official Python SDK client start `mcph serve` over stdio, list the tools of
//! two upstreams (a stdio server and a Streamable HTTP server) and call one of each.
//!
//! Needs what `cargo xtask interop-setup` installs (the TS SDK, the Python SDK's venv).

mod common;

use std::process::Command;

use common::{Env, HttpFixtureProcess, RunningProcess, DEADLINE, MCPH};
use mcp_testkit::process::{find_program, interop_component, workspace_root};
use serde_json::{json, Value};

/// The gateway's configuration (a stdio fixture and an HTTP fixture) and the plan both
/// clients follow.
fn plan(env: &Env, http: &HttpFixtureProcess) -> std::path::PathBuf {
    let fixture = mcp_testkit::fixture_server_bin()
        .to_string_lossy()
        .into_owned();
    let config = json!({
        "mcpServers": {
            "files": { "command": fixture, "args": [] },
            "web": { "type": "http", "url": format!("{}/mcp", http.url) }
        }
    });
    let config = env.cwd.write("gateway.json", &config.to_string());
    let plan = json!({
        "command": MCPH,
        "args": ["serve", "--config", config],
        "env": {
            "HOME": env.home.path(),
            "XDG_CONFIG_HOME": env.home.path(),
        },
        "calls": [
            { "name": "files__echo", "arguments": { "text": "from stdio" } },
            { "name": "web__echo", "arguments": { "text": "from http" } },
            { "name": "web__add", "arguments": { "a": 2, "b": 3 } }
        ]
    });
    env.cwd.write("plan.json", &plan.to_string())
}

/// What a client printed: the server's name, the tools listed, each call's outcome.
fn check(run: &common::Run, client: &str) {
    assert_eq!(
        run.code,
        Some(0),
        "{client}: {}\n{}",
        run.stdout,
        run.stderr
    );
    let seen: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("{client} printed no JSON ({e}): {}", run.stdout));
    assert_eq!(seen["server"], "mcph-gateway", "{client}: {seen}");
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for expected in ["files__echo", "files__add", "web__echo", "web__add"] {
        assert!(
            tools.contains(&expected),
            "{client}: {expected} in {tools:?}"
        );
    }
    let calls = seen["calls"].as_array().expect("calls");
    let texts: Vec<(&str, bool)> = calls
        .iter()
        .map(|c| (c["text"].as_str().unwrap_or(""), c["isError"] == true))
        .collect();
    assert_eq!(
        texts,
        [("from stdio", false), ("from http", false), ("5", false)],
        "{client}: {seen}"
    );
}

#[test]
fn the_typescript_sdk_client_uses_two_upstreams_through_mcph_serve() {
    let env = Env::new();
    let http = HttpFixtureProcess::start(&[]);
    let plan = plan(&env, &http);
    let node = find_program("node", "nodejs").unwrap_or_else(|e| panic!("{e}"));
    let sdk = interop_component("tssdk").join("node_modules/@modelcontextprotocol/sdk");
    let script = workspace_root().join("interop/gateway_client.mjs");
    let run = RunningProcess::spawn(
        "the TypeScript SDK client",
        Command::new(node).arg(script).arg(sdk).arg(plan),
    )
    .finish(DEADLINE);
    check(&run, "the TypeScript SDK client");
}

#[test]
fn the_python_sdk_client_uses_two_upstreams_through_mcph_serve() {
    let env = Env::new();
    let http = HttpFixtureProcess::start(&[]);
    let plan = plan(&env, &http);
    let python = interop_component("py").join("bin/python");
    let script = workspace_root().join("interop/gateway_client.py");
    let run = RunningProcess::spawn(
        "the Python SDK client",
        Command::new(python).arg(script).arg(plan),
    )
    .finish(DEADLINE);
    check(&run, "the Python SDK client");
}
