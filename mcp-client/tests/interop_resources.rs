//! Resources kept fresh and the discovery cache through the facade, against real servers:
//!
//! - `@modelcontextprotocol/server-everything` over stdio, Streamable HTTP and HTTP+SSE: the
//!   first read of `demo://resource/dynamic/text/1` subscribes and keeps the contents; its
//!   `toggle-subscriber-updates` tool makes the server send `notifications/resources/updated`,
//!   which reaches the observer and makes the contents STALE, and the next read fetches again;
//!   tool calls never list tools.
//! - `@modelcontextprotocol/server-memory` over stdio: `create_entities` updates the subscribed
//!   `memory://knowledge-graph`, and the next read shows the new entity.
//! - The official Python SDK server (`interop/python_server.py`) over stdio: its `add_tool`
//!   tool adds exactly one tool to the catalog, and the model's tool list gets it last with
//!   every byte before it unchanged.
//! - The fixture over WebSocket (`mcp-fixture-server --ws`) and over gRPC (`mcph bridge
//!   --grpc`): `bump_resource` updates `fixture://counter`, `trigger_list_changed` adds
//!   `dynamic_tool` to the catalog (and in the 2026-07-28 era, which the fixture serves without
//!   `subscriptions/listen`, only the catalog part).
//!
//! Servers with per-session state: subscriptions and reads always use the supervised session
//! (pooled or not), and the per-session tools that make updates (`toggle-subscriber-updates`,
//! the fixture's `bump_resource`) are called on it; the Streamable HTTP and WebSocket tests run
//! both with and without the profile's pools.
//!
//! The third-party servers are installed by `cargo xtask interop-setup` into
//! `$MCP_INTEROP_DIR` (default `<workspace>/.interop`); the tests fail with that hint when they
//! are missing. Every server listens on 127.0.0.1 only and is stopped when its test ends
//! (also when it fails); the tests wait on conditions under deadlines, never for fixed times.

#![cfg(feature = "enterprise")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
use mcp_client::mcp_resources::{ResourceManager, ResourceState, Transition, Trigger};
use mcp_client::{CatalogChange, LlmToolFormat, McpClient, StackPolicy};
use mcp_testkit::process::{free_port, interop_component, workspace_root, ChildProcess};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};

/// server-everything's text resource (from its template `demo://resource/dynamic/text/{id}`).
const DYNAMIC_TEXT: &str = "demo://resource/dynamic/text/1";
/// server-memory's one resource.
const KNOWLEDGE_GRAPH: &str = "memory://knowledge-graph";
/// The fixture's subscribable counter.
const COUNTER: &str = "fixture://counter";
/// How long an update may take to reach the observer: the servers send one at once (the
/// fixture and server-memory before the tool's result, server-everything at once and then
/// every 5 s).
const UPDATE_WAIT: Duration = Duration::from_secs(8);
/// How long a process we started may take to listen.
const LISTEN_DEADLINE: Duration = Duration::from_secs(20);

// ------------------------------------------------------------------ where the servers are

fn everything_bin() -> PathBuf {
    interop_component("node").join("node_modules/.bin/mcp-server-everything")
}

/// `NODE_OPTIONS` that keep a Node server on 127.0.0.1 (and on the port in `PORT`).
fn node_loopback_options() -> String {
    format!(
        "--require {}",
        workspace_root().join("interop/loopback.cjs").display()
    )
}

/// A stdio server entry whose processes carry `marker` (see `processes_with`).
fn stdio_server(
    name: &str,
    command: &Path,
    args: &[String],
    env: &[(&str, &str)],
    marker: &str,
) -> ServerConfig {
    let mut vars = BTreeMap::from([("MCP_FACADE_TEST_MARKER".to_owned(), marker.to_owned())]);
    for (k, v) in env {
        vars.insert((*k).to_owned(), (*v).to_owned());
    }
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: command.to_string_lossy().into_owned(),
            args: args.to_vec(),
            env: vars,
            cwd: None,
        },
    )
}

fn remote_server(name: &str, kind: &str, url: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Remote {
            kind: kind.into(),
            url: url.into(),
            headers: BTreeMap::new(),
        },
    )
}

// ------------------------------------------------------------------ processes we start
//
// Each is a `ChildProcess`: its process group is killed and reaped when it is dropped (also
// when the test panics).

/// `mcp-server-everything <mode>` (`streamableHttp` or `sse`) on a free loopback port, its
/// output in a log; returns it once it accepts TCP connections (a fresh port is tried when the
/// process exits early or does not listen in time).
async fn start_everything_http(mode: &str) -> (ChildProcess, u16) {
    let mut failures = Vec::new();
    for _ in 0..3 {
        let port = free_port();
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "interop-resources-everything-{mode}-{port}-{}.log",
            std::process::id()
        ));
        let mut server = ChildProcess::spawn_logged(
            format!("server-everything {mode} on port {port}"),
            Command::new(everything_bin())
                .arg(mode)
                .env("PORT", port.to_string())
                .env("NODE_OPTIONS", node_loopback_options()),
            &log,
        )
        .unwrap_or_else(|e| panic!("{e} (is `node` on PATH?)"));
        let listening = server
            .wait_ready_async(
                &format!("listening on port {port}"),
                LISTEN_DEADLINE,
                || async move {
                    tokio::net::TcpStream::connect(("127.0.0.1", port))
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                },
            )
            .await;
        match listening {
            Ok(()) => return (server, port),
            Err(e) => failures.push(e),
        }
    }
    panic!(
        "server-everything {mode} did not start:\n{}",
        failures.join("\n---\n")
    );
}

/// Starts `command` and reads its stdout (under [`LISTEN_DEADLINE`]) until `pick` accepts a
/// line: the process and what `pick` made of the line.
fn spawn_and_read(
    what: &str,
    command: &mut Command,
    pick: fn(&str) -> Option<String>,
) -> (ChildProcess, String) {
    ChildProcess::spawn_until_line(what, command, None, LISTEN_DEADLINE, pick)
        .unwrap_or_else(|e| panic!("{what} did not print its address: {e}"))
}

/// The fixture over WebSocket on 127.0.0.1 (`--ws 127.0.0.1:0`), with `args`; its URL.
fn start_fixture_ws(args: &[&str], marker: &str) -> (ChildProcess, String) {
    let mut command = Command::new(mcp_testkit::fixture_server_bin());
    command
        .args(["--ws", "127.0.0.1:0"])
        .args(args)
        .env("MCP_FACADE_TEST_MARKER", marker);
    spawn_and_read("the WebSocket fixture", &mut command, |line| {
        line.strip_prefix("listening on ")
            .filter(|url| url.starts_with("ws://127.0.0.1:"))
            .map(str::to_owned)
    })
}

/// The `mcph` binary of this build profile (`target/<profile>/mcph`), built when missing.
fn mcph_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test has a path");
    let mut dir = exe.parent().expect("in a directory").to_path_buf();
    if dir.file_name().and_then(|n| n.to_str()) == Some("deps") {
        dir.pop();
    }
    let mcph = dir.join("mcph");
    if !mcph.is_file() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build.args([
            "build", "--quiet", "-j", "2", "-p", "mcp-cli", "--bin", "mcph",
        ]);
        if dir.file_name().and_then(|n| n.to_str()) == Some("release") {
            build.arg("--release");
        }
        if let Some(target) = dir.parent() {
            build.arg("--target-dir").arg(target);
        }
        let output = build.output().expect("cargo runs");
        assert!(
            output.status.success(),
            "building mcph (for `mcph bridge --grpc`) failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert!(mcph.is_file(), "{} is missing", mcph.display());
    mcph
}

/// `mcph bridge --grpc 127.0.0.1:0 fx`, where `fx` is the fixture with `args` (its processes
/// carry `marker`), configured in `dir/.mcp.json`; the bridge's URL.
fn start_grpc_bridge(dir: &Path, args: &[&str], marker: &str) -> (ChildProcess, String) {
    let config = json!({
        "mcpServers": {
            "fx": {
                "command": mcp_testkit::fixture_server_bin(),
                "args": args,
                "env": {"MCP_FACADE_TEST_MARKER": marker},
            }
        }
    });
    let path = dir.join(".mcp.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let mut command = Command::new(mcph_bin());
    command
        .arg("--config")
        .arg(&path)
        .args(["bridge", "--grpc", "127.0.0.1:0", "fx"])
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir)
        .env_remove("RUST_LOG");
    spawn_and_read("mcph bridge --grpc", &mut command, |line| {
        line.starts_with("grpc://127.0.0.1:")
            .then(|| line.to_owned())
    })
}

// ------------------------------------------------------------------ what the tests share

/// The next transition of `uri` (transitions of other URIs are skipped), as
/// `(from, to, trigger)`.
async fn next_transition(
    transitions: &mut broadcast::Receiver<Transition>,
    uri: &str,
) -> (ResourceState, ResourceState, Trigger) {
    loop {
        let t = tokio::time::timeout(DEADLINE, transitions.recv())
            .await
            .unwrap_or_else(|_| panic!("no transition of {uri} within {DEADLINE:?}"))
            .expect("the manager lives");
        if t.uri == uri {
            return (t.from, t.to, t.trigger);
        }
    }
}

/// An observer of `uri`'s updates (through the facade): the URIs it was called with arrive on
/// the receiver; keep the guard.
async fn observe(
    client: &McpClient,
    server: &str,
    uri: &str,
) -> (
    mpsc::UnboundedReceiver<String>,
    mcp_client::mcp_resources::UpdateGuard,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (owner, guard) = client
        .on_resource_update(Some(server), uri, move |update| {
            let _ = tx.send(update.uri.clone());
        })
        .await
        .unwrap_or_else(|e| panic!("observing {uri} on {server}: {e}"));
    assert_eq!(owner, server);
    (rx, guard)
}

async fn next_update(updates: &mut mpsc::UnboundedReceiver<String>, within: Duration) -> String {
    tokio::time::timeout(within, updates.recv())
        .await
        .unwrap_or_else(|_| panic!("no resource update reached the observer within {within:?}"))
        .expect("the observer lives")
}

fn text_of(result: &mcp_core::types::ReadResourceResult) -> &str {
    result
        .contents
        .first()
        .and_then(|c| c.text.as_deref())
        .unwrap_or_else(|| panic!("a text content: {result:?}"))
}

/// Nothing has arrived on `changes`: the catalog did not change.
fn assert_no_catalog_change(changes: &mut broadcast::Receiver<CatalogChange>) {
    match changes.try_recv() {
        Err(broadcast::error::TryRecvError::Empty) => {}
        other => panic!("the catalog changed: {other:?}"),
    }
}

async fn next_catalog_change(changes: &mut broadcast::Receiver<CatalogChange>) -> CatalogChange {
    tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("the catalog changes in time")
        .expect("the client lives")
}

fn assert_ready(client: &McpClient) {
    for report in client.servers() {
        assert!(report.status.is_ready(), "{report:?}");
    }
}

/// After `shutdown`, no process carrying `marker` is left.
async fn assert_no_processes(marker: &str) {
    mcp_testkit::wait::until(
        "every server process carrying the marker is gone",
        DEADLINE,
        || processes_with(marker).is_empty(),
    )
    .await;
}

/// The `enterprise` stack without connection pools: every call of a remote server goes to
/// its supervised session, where the resource subscriptions are.
fn without_pools() -> StackPolicy {
    StackPolicy {
        pools: false,
        ..StackPolicy::enterprise()
    }
}

/// Like `common::start`, with a stack policy.
async fn start_with(servers: Vec<ServerConfig>, policy: StackPolicy) -> McpClient {
    let config = ClientConfig {
        servers,
        source: None,
        region: None,
        store: None,
    };
    tokio::time::timeout(
        DEADLINE,
        McpClient::builder(config).stack_policy(policy).start(),
    )
    .await
    .expect("start is bounded by the startup timeouts")
}

// ------------------------------------------------------------------ server-everything

/// The scenario every transport of server-everything runs: read (subscribe + keep), read from
/// the cache, N tool calls that list nothing, an update through `toggle-subscriber-updates`
/// that reaches the observer and makes the contents STALE, and a read that fetches again.
async fn everything_updates_reach_the_observer(client: &McpClient, server: &str) {
    use ResourceState::*;
    assert_ready(client);
    let manager: ResourceManager = client.resource_manager(server).expect("a resource manager");
    let mut transitions = manager.transitions();

    // First read: subscribes (the server offers resources.subscribe), fetches, keeps.
    let first = client
        .read_resource(Some(server), DYNAMIC_TEXT)
        .await
        .expect("the dynamic text resource reads");
    assert!(
        text_of(&first).starts_with("Resource 1: This is a plaintext resource created at"),
        "{first:?}"
    );
    assert_eq!(
        next_transition(&mut transitions, DYNAMIC_TEXT).await,
        (Unknown, Subscribed, Trigger::Subscribe)
    );
    assert_eq!(
        next_transition(&mut transitions, DYNAMIC_TEXT).await,
        (Subscribed, Cached, Trigger::Read)
    );
    assert_eq!(manager.state(DYNAMIC_TEXT), Cached);
    // Again: the same contents, from the cache.
    let again = client
        .read_resource(Some(server), DYNAMIC_TEXT)
        .await
        .unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "the second read is a cache hit"
    );
    let stats = manager.stats();
    assert_eq!(
        (stats.hits, stats.misses, stats.fetches),
        (1, 1, 1),
        "{stats:?}"
    );

    // The server says it changed: the observer hears it, the contents go STALE.
    let (mut updates, _guard) = observe(client, server, DYNAMIC_TEXT).await;
    let toggle = format!("{server}__toggle-subscriber-updates");
    // The toggle is per session (updates for what the calling session subscribed to): it is
    // called on the supervised session, which holds the subscriptions, even when the server is
    // pooled.
    let started = on_the_session(client, server, "toggle-subscriber-updates", None).await;
    assert!(
        started
            .text()
            .starts_with("Started simulated resource updated notifications for session"),
        "{started:?}"
    );
    assert_eq!(next_update(&mut updates, UPDATE_WAIT).await, DYNAMIC_TEXT);
    assert_eq!(
        next_transition(&mut transitions, DYNAMIC_TEXT).await,
        (Cached, Stale, Trigger::Updated)
    );
    // The next read fetches again.
    let fresh = client
        .read_resource(Some(server), DYNAMIC_TEXT)
        .await
        .unwrap();
    assert!(!Arc::ptr_eq(&first, &fresh), "fetched again");
    assert!(text_of(&fresh).starts_with("Resource 1: "), "{fresh:?}");
    assert_eq!(
        next_transition(&mut transitions, DYNAMIC_TEXT).await,
        (Stale, Cached, Trigger::Read)
    );
    let stats = manager.stats();
    assert_eq!(stats.fetches, 2, "{stats:?}");
    assert!(stats.updates >= 1, "{stats:?}");
    let _ = &toggle;
    let stopped = on_the_session(client, server, "toggle-subscriber-updates", None).await;
    assert!(
        stopped
            .text()
            .starts_with("Stopped simulated resource updates for session"),
        "{stopped:?}"
    );

    // Tool calls never list tools: no catalog change is reported, and the catalog and the
    // model's list keep their contents and bytes. (Not the same `Arc`s: server-everything
    // sends `tools/list_changed` right after `initialized`, and the listing that follows it
    // ~50 ms after ready replaces the catalog with an equal one; on a loaded machine the
    // steps above take less than that.)
    let catalog = client.tools();
    let llm = client.llm_tools(LlmToolFormat::Anthropic).to_json();
    let mut changes = client.catalog_changes();
    let echo = format!("{server}__echo");
    for i in 0..10 {
        let r = client
            .call_tool(&echo, Some(json!({"message": format!("call {i}")})))
            .await
            .expect("echo");
        assert_eq!(r.text(), format!("Echo: call {i}"));
        assert!(client.tools().get(&echo).is_some());
        let _ = client.llm_tools(LlmToolFormat::Anthropic);
    }
    assert_eq!(catalog.entries(), client.tools().entries());
    assert_eq!(llm, client.llm_tools(LlmToolFormat::Anthropic).to_json());
    assert_no_catalog_change(&mut changes);
}

#[tokio::test]
async fn everything_over_stdio_updates_make_the_dynamic_text_stale() {
    let marker = unique_marker("interop-res-everything-stdio");
    let client = start(vec![stdio_server(
        "everything",
        &everything_bin(),
        &["stdio".into()],
        &[],
        &marker,
    )])
    .await;
    everything_updates_reach_the_observer(&client, "everything").await;
    client.shutdown().await;
    assert_no_processes(&marker).await;
}

fn everything_http_entry(port: u16) -> ServerConfig {
    ServerConfig::new(
        "everything",
        TransportConfig::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::new(),
        },
    )
}

/// Without pools every call goes to the supervised session, the one that subscribed, which is
/// the session server-everything sends that session's updates to.
#[tokio::test]
async fn everything_over_streamable_http_without_pools_updates_make_the_dynamic_text_stale() {
    let (server, port) = start_everything_http("streamableHttp").await;
    let client = start_with(vec![everything_http_entry(port)], without_pools()).await;
    assert_eq!(client.servers()[0].pool, None);
    everything_updates_reach_the_observer(&client, "everything").await;
    client.shutdown().await;
    drop(server);
}

/// With the profile's pools: subscriptions and reads stay on the supervised session (the gate
/// sends resource methods there), and the per-session toggle is called there too, so the
/// updates reach the observer while other calls may use pooled sessions.
#[tokio::test]
async fn everything_over_streamable_http_pooled_updates_make_the_dynamic_text_stale() {
    let (server, port) = start_everything_http("streamableHttp").await;
    let client = start(vec![everything_http_entry(port)]).await;
    everything_updates_reach_the_observer(&client, "everything").await;
    client.shutdown().await;
    drop(server);
}

#[tokio::test]
async fn everything_over_http_sse_updates_make_the_dynamic_text_stale() {
    let (server, port) = start_everything_http("sse").await;
    let client = start(vec![ServerConfig::new(
        "everything",
        TransportConfig::Sse {
            url: format!("http://127.0.0.1:{port}/sse"),
            headers: BTreeMap::new(),
        },
    )])
    .await;
    everything_updates_reach_the_observer(&client, "everything").await;
    client.shutdown().await;
    drop(server);
}

// ------------------------------------------------------------------ server-memory

#[tokio::test]
async fn memory_create_entities_updates_the_subscribed_knowledge_graph() {
    use ResourceState::*;
    let marker = unique_marker("interop-res-memory");
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let memory_file = dir.join("memory.jsonl");
    let bin = interop_component("memory").join("node_modules/.bin/mcp-server-memory");
    let client = start(vec![stdio_server(
        "memory",
        &bin,
        &[],
        &[("MEMORY_FILE_PATH", memory_file.to_str().unwrap())],
        &marker,
    )])
    .await;
    assert_ready(&client);
    let manager = client.resource_manager("memory").unwrap();
    let mut transitions = manager.transitions();

    // An empty graph; the read subscribed.
    let first = client.read_resource(None, KNOWLEDGE_GRAPH).await.unwrap();
    assert_eq!(
        first.contents[0].mime_type.as_deref(),
        Some("application/json")
    );
    let graph: Value = serde_json::from_str(text_of(&first)).unwrap();
    assert_eq!(graph, json!({"entities": [], "relations": []}));
    assert_eq!(
        next_transition(&mut transitions, KNOWLEDGE_GRAPH).await,
        (Unknown, Subscribed, Trigger::Subscribe)
    );
    assert_eq!(
        next_transition(&mut transitions, KNOWLEDGE_GRAPH).await,
        (Subscribed, Cached, Trigger::Read)
    );

    // What create_entities takes, as the catalog describes it.
    let catalog = client.tools();
    let tool = catalog
        .get("memory__create_entities")
        .expect("memory__create_entities is in the catalog");
    let entity = &tool.tool.input_schema["properties"]["entities"]["items"];
    let mut required: Vec<&str> = entity["required"]
        .as_array()
        .expect("required fields")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["entityType", "name", "observations"], "{entity}");

    let (mut updates, _guard) = observe(&client, "memory", KNOWLEDGE_GRAPH).await;
    let name = format!("interop-{}", std::process::id());
    let created = client
        .call_tool(
            "memory__create_entities",
            Some(json!({"entities": [
                {"name": name, "entityType": "test", "observations": ["seen by the facade"]}
            ]})),
        )
        .await
        .expect("create_entities");
    assert!(!created.is_error.unwrap_or(false), "{created:?}");
    assert_eq!(
        next_update(&mut updates, UPDATE_WAIT).await,
        KNOWLEDGE_GRAPH
    );
    assert_eq!(
        next_transition(&mut transitions, KNOWLEDGE_GRAPH).await,
        (Cached, Stale, Trigger::Updated)
    );
    let after = client.read_resource(None, KNOWLEDGE_GRAPH).await.unwrap();
    let graph: Value = serde_json::from_str(text_of(&after)).unwrap();
    assert_eq!(
        graph["entities"],
        json!([{"name": name, "entityType": "test", "observations": ["seen by the facade"]}]),
        "{graph}"
    );
    assert_eq!(
        next_transition(&mut transitions, KNOWLEDGE_GRAPH).await,
        (Stale, Cached, Trigger::Read)
    );
    assert_eq!(manager.stats().fetches, 2);

    client.shutdown().await;
    assert_no_processes(&marker).await;
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------ the Python SDK server

#[tokio::test]
async fn python_add_tool_appends_exactly_one_tool_to_the_model_list() {
    let marker = unique_marker("interop-res-python");
    let python = interop_component("py").join("bin/python");
    let script = workspace_root().join("interop/python_server.py");
    let client = start(vec![stdio_server(
        "py",
        &python,
        &[script.to_string_lossy().into_owned()],
        &[],
        &marker,
    )])
    .await;
    assert_ready(&client);
    let own = [
        json!({"name": "bash", "description": "Run a command", "input_schema": {"type": "object"}}),
    ];
    let before = client.llm_tools(LlmToolFormat::Anthropic);
    let names = before.names().to_vec();
    assert_eq!(
        names,
        [
            "py__add",
            "py__echo",
            "py__long_task",
            "py__list_roots",
            "py__add_tool",
            "py__greet"
        ]
    );
    let with_own_before = before.after_harness_tools(&own);

    let mut changes = client.catalog_changes();
    let added = client.call_tool("py__add_tool", None).await.unwrap();
    assert_eq!(added.text(), "added tool dynamic");
    assert_eq!(
        next_catalog_change(&mut changes).await,
        CatalogChange {
            added: vec!["py__dynamic".into()],
            removed: vec![],
            changed: vec![],
        }
    );
    let after = client.llm_tools(LlmToolFormat::Anthropic);
    assert_eq!(
        after.names().last().map(String::as_str),
        Some("py__dynamic")
    );
    assert_eq!(&after.names()[..names.len()], &names[..]);
    assert_eq!(after.len(), names.len() + 1);
    // Every byte before the new tool is unchanged (a prompt cache keeps its prefix).
    let old = before.to_json();
    let new = after.to_json();
    assert!(
        new.starts_with(&old[..old.len() - 1]) && new[old.len() - 1..].starts_with(",{"),
        "old:\n{old}\nnew:\n{new}"
    );
    let with_own_after = after.after_harness_tools(&own);
    assert!(with_own_after.starts_with(&with_own_before[..with_own_before.len() - 1]));
    // The new tool answers, and the change was reported once.
    let dynamic = client.call_tool("py__dynamic", None).await.unwrap();
    assert_eq!(dynamic.text(), "dynamic tool called");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), changes.recv())
            .await
            .is_err(),
        "one change only"
    );
    client.shutdown().await;
    assert_no_processes(&marker).await;
}

// ------------------------------------------------------------------ the fixture over ws / grpc

/// `bump_resource` → the update reaches the observer, the counter goes STALE, the next read
/// fetches the new value.
/// A tool call on the server's supervised session (the one that holds its subscriptions),
/// whatever the pool.
async fn on_the_session(
    client: &McpClient,
    server: &str,
    tool: &str,
    arguments: Option<serde_json::Value>,
) -> mcp_core::types::CallToolResult {
    use mcp_core::McpServiceExt;
    let session = client.session(server).expect("the server is ready");
    session
        .call_tool(tool, arguments, mcp_core::RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{tool} on {server}'s session: {e}"))
}

async fn fixture_counter_updates(client: &McpClient, server: &str, log: &Path) {
    use ResourceState::*;
    assert_ready(client);
    let manager = client.resource_manager(server).unwrap();
    let mut transitions = manager.transitions();
    let first = client.read_resource(Some(server), COUNTER).await.unwrap();
    assert_eq!(text_of(&first), "counter = 0");
    assert_eq!(
        next_transition(&mut transitions, COUNTER).await,
        (Unknown, Subscribed, Trigger::Subscribe)
    );
    assert_eq!(
        next_transition(&mut transitions, COUNTER).await,
        (Subscribed, Cached, Trigger::Read)
    );
    let again = client.read_resource(Some(server), COUNTER).await.unwrap();
    assert!(Arc::ptr_eq(&first, &again), "a cache hit");

    let (mut updates, _guard) = observe(client, server, COUNTER).await;
    // The fixture keeps its counter and subscriptions per connection: bumped on the supervised
    // session, which subscribed (a pooled call would bump another connection's counter).
    let bumped = on_the_session(client, server, "bump_resource", None).await;
    assert_eq!(bumped.text(), "1");
    assert_eq!(next_update(&mut updates, UPDATE_WAIT).await, COUNTER);
    assert_eq!(
        next_transition(&mut transitions, COUNTER).await,
        (Cached, Stale, Trigger::Updated)
    );
    let fresh = client.read_resource(Some(server), COUNTER).await.unwrap();
    assert_eq!(text_of(&fresh), "counter = 1");
    assert_eq!(
        next_transition(&mut transitions, COUNTER).await,
        (Stale, Cached, Trigger::Read)
    );
    let stats = manager.stats();
    assert_eq!(
        (stats.hits, stats.fetches, stats.updates),
        (1, 2, 1),
        "{stats:?}"
    );
    assert_eq!(requests(log, "resources/read"), 2);
}

/// Tool calls list nothing (one listing at start); `trigger_list_changed` → exactly one
/// catalog change adding `<server>__dynamic_tool`, last in the model's list, after one more
/// listing.
async fn fixture_catalog_change(client: &McpClient, server: &str, log: &Path) {
    assert_ready(client);
    let before = client.llm_tools(LlmToolFormat::Anthropic);
    let mut changes = client.catalog_changes();
    for i in 0..10 {
        let r = client
            .call_tool(
                &format!("{server}__echo"),
                Some(json!({"text": i.to_string()})),
            )
            .await
            .unwrap();
        assert_eq!(r.text(), i.to_string());
    }
    assert_eq!(requests(log, "tools/list"), 1, "tool calls list nothing");
    assert!(Arc::ptr_eq(
        &before,
        &client.llm_tools(LlmToolFormat::Anthropic)
    ));
    assert_no_catalog_change(&mut changes);
    // The fixture's tool list is per connection too: changed on the supervised session, whose
    // list the catalog shows.
    on_the_session(client, server, "trigger_list_changed", None).await;
    assert_eq!(
        next_catalog_change(&mut changes).await,
        CatalogChange {
            added: vec![format!("{server}__dynamic_tool")],
            removed: vec![],
            changed: vec![],
        }
    );
    let after = client.llm_tools(LlmToolFormat::Anthropic);
    assert_eq!(
        after.names().last().cloned(),
        Some(format!("{server}__dynamic_tool"))
    );
    assert_eq!(&after.names()[..before.len()], before.names());
    let (old, new) = (before.to_json(), after.to_json());
    assert!(
        new.starts_with(&old[..old.len() - 1]),
        "the old list is a prefix"
    );
    assert_eq!(requests(log, "tools/list"), 2, "one listing for the change");
}

fn requests(log: &Path, method: &str) -> usize {
    mcp_testkit::event_log::read_events(log)
        .iter()
        .filter(|e| e["event"] == "request" && e["method"] == method)
        .count()
}

/// What a fixture test runs.
#[derive(Clone, Copy, PartialEq)]
enum Scenario {
    /// The counter's update, then the catalog change.
    Both,
    /// Only the catalog change.
    Catalog,
}

async fn fixture_scenario(client: &McpClient, server: &str, log: &Path, scenario: Scenario) {
    if scenario == Scenario::Both {
        fixture_counter_updates(client, server, log).await;
    }
    fixture_catalog_change(client, server, log).await;
}

/// The fixture over WebSocket (`mcp-fixture-server --ws 127.0.0.1:0`) serving `era`
/// (`legacy`: the handshake era; `dual`: the client settles on 2026-07-28) under `policy`.
async fn fixture_over_websocket(era: &str, policy: StackPolicy, scenario: Scenario) {
    let marker = unique_marker(&format!("interop-res-ws-{era}"));
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let (fixture, url) = start_fixture_ws(
        &["--era", era, "--event-log", log.to_str().unwrap()],
        &marker,
    );
    let client = start_with(vec![remote_server("fxws", "ws", &url)], policy).await;
    fixture_scenario(&client, "fxws", &log, scenario).await;
    client.shutdown().await;
    drop(fixture);
    assert_no_processes(&marker).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fixture behind `mcph bridge --grpc 127.0.0.1:0` (every gRPC call gets a fixture
/// process of its own) serving `era`, under `policy`.
async fn fixture_over_grpc(era: &str, policy: StackPolicy, scenario: Scenario) {
    let marker = unique_marker(&format!("interop-res-grpc-{era}"));
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let (mut bridge, url) = start_grpc_bridge(
        &dir,
        &["--era", era, "--event-log", log.to_str().unwrap()],
        &marker,
    );
    let client = start_with(vec![remote_server("fxgrpc", "grpc", &url)], policy).await;
    fixture_scenario(&client, "fxgrpc", &log, scenario).await;
    client.shutdown().await;
    let status = bridge.interrupt(DEADLINE);
    drop(bridge);
    assert!(
        status.is_some_and(|s| s.success()),
        "the bridge ends on Ctrl-C: {status:?}"
    );
    assert_no_processes(&marker).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without pools every call goes to the supervised connection, which subscribed.
#[tokio::test]
async fn fixture_over_websocket_bump_and_list_changed() {
    fixture_over_websocket("legacy", without_pools(), Scenario::Both).await;
}

/// A 2026-07-28 session keeps no per-session state, so the profile's pool stays empty and
/// every call goes to the supervised session; the catalog change arrives. (Resource updates
/// are not tested here: the fixture's 2026-07-28 era has no `subscriptions/listen`.)
#[tokio::test]
async fn fixture_over_websocket_modern_era_list_changed() {
    fixture_over_websocket("dual", StackPolicy::enterprise(), Scenario::Catalog).await;
}

/// With the profile's pools (the fixture keeps its counter and subscriptions per connection):
/// the subscription and the reads stay on the supervised connection, the bump is made there,
/// and the update reaches the observer; the catalog part runs its calls through the pool.
#[tokio::test]
async fn fixture_over_websocket_pooled_bump_and_list_changed() {
    fixture_over_websocket("legacy", StackPolicy::enterprise(), Scenario::Both).await;
}

#[tokio::test]
async fn fixture_over_grpc_bump_and_list_changed() {
    fixture_over_grpc("legacy", without_pools(), Scenario::Both).await;
}

#[tokio::test]
async fn fixture_over_grpc_modern_era_list_changed() {
    fixture_over_grpc("dual", StackPolicy::enterprise(), Scenario::Catalog).await;
}
