//! The discovery cache (R-CACHE) against the fixture server: tool calls never list tools, a burst
//! of `list_changed` costs one listing, the model's tool list keeps its order and bytes (new
//! tools last), and changes of tools, prompts and resources arrive as diffs.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use mcp_client::{CatalogChange, ListKind, LlmToolFormat, McpClient};
use serde_json::json;

/// A fixture server that logs every request to a file in a fresh directory.
fn logged_fixture(test: &str) -> (mcp_client::ServerConfig, PathBuf, String) {
    let marker = unique_marker(test);
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let config = fixture("fx", &["--event-log", log.to_str().unwrap()], &marker);
    (config, log, marker)
}

fn requests(log: &Path, method: &str) -> usize {
    mcp_testkit::event_log::read_events(log)
        .iter()
        .filter(|e| e["event"] == "request" && e["method"] == method)
        .count()
}

/// A client whose debounce (500 ms) comfortably holds a burst of notifications even on a
/// loaded machine: the tests count listings exactly.
async fn start_with_wide_debounce(config: mcp_client::ServerConfig) -> McpClient {
    let config = mcp_client::ClientConfig {
        servers: vec![config],
        source: None,
        region: None,
        store: None,
    };
    let policy = mcp_client::SupervisionPolicy {
        list_changed_debounce: std::time::Duration::from_millis(500),
        ..Default::default()
    };
    tokio::time::timeout(
        DEADLINE,
        McpClient::builder(config).supervision(policy).start(),
    )
    .await
    .expect("start is bounded by the startup timeout")
}

async fn cleanup(client: McpClient, log: &Path) {
    client.shutdown().await;
    if let Some(dir) = log.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test]
async fn tool_calls_never_list_tools() {
    let (config, log, _) = logged_fixture("no-list-per-call");
    let client = start(vec![config]).await;
    for i in 0..40 {
        let r = client
            .call_tool("fx__add", Some(json!({"a": i, "b": 1})))
            .await
            .unwrap();
        assert_eq!(r.text(), (i + 1).to_string());
        // What a harness does every turn: look at the catalog and the model's list.
        assert!(client.tools().get("fx__add").is_some());
        let _ = client.llm_tools(LlmToolFormat::Anthropic);
    }
    assert_eq!(requests(&log, "tools/call"), 40);
    assert_eq!(
        requests(&log, "tools/list"),
        1,
        "one listing at start, none per call"
    );
    cleanup(client, &log).await;
}

#[tokio::test]
async fn a_burst_of_list_changed_costs_one_listing() {
    let (config, log, _) = logged_fixture("burst");
    let client = start_with_wide_debounce(config).await;
    let mut changes = client.catalog_changes();
    client
        .call_tool("fx__trigger_list_changed", Some(json!({"times": 25})))
        .await
        .unwrap();
    let change = tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("the catalog changes")
        .unwrap();
    assert_eq!(
        change,
        CatalogChange {
            added: vec!["fx__dynamic_tool".into()],
            removed: vec![],
            changed: vec![],
        }
    );
    assert_eq!(
        requests(&log, "tools/list"),
        2,
        "25 notifications, one listing after the first"
    );
    // Removing it again is the opposite diff.
    client
        .call_tool("fx__trigger_list_changed", None)
        .await
        .unwrap();
    let change = tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("the catalog changes")
        .unwrap();
    assert_eq!(change.removed, ["fx__dynamic_tool"]);
    assert!(change.added.is_empty() && change.changed.is_empty());
    assert_eq!(requests(&log, "tools/list"), 3);
    cleanup(client, &log).await;
}

#[tokio::test]
async fn the_model_tool_list_keeps_its_bytes_and_puts_new_tools_last() {
    let marker = unique_marker("llm-list");
    let servers = || {
        let mut two = fixture("two", &[], &marker);
        two.enabled_tools = Some(vec!["add".into(), "echo".into()]);
        vec![fixture("one", &[], &marker), two]
    };
    let first = start(servers()).await;
    let second = start(servers()).await;
    let own = [
        json!({"name": "bash", "description": "Run a command", "input_schema": {"type": "object"}}),
    ];
    for format in [
        LlmToolFormat::Anthropic,
        LlmToolFormat::OpenAi,
        LlmToolFormat::Mcp,
    ] {
        let a = first.llm_tools(format);
        let b = second.llm_tools(format);
        assert_eq!(
            a.to_json(),
            b.to_json(),
            "two clients, the same bytes ({format:?})"
        );
        assert_eq!(a.after_harness_tools(&own), b.after_harness_tools(&own));
        // Asked again (the next agent turn): the same list, not a rebuilt one.
        assert!(std::sync::Arc::ptr_eq(&a, &first.llm_tools(format)));
    }
    let before = first.llm_tools(LlmToolFormat::Anthropic);
    let with_own = before.after_harness_tools(&own);
    assert!(with_own.starts_with(
        r#"[{"description":"Run a command","input_schema":{"type":"object"},"name":"bash"},"#
    ));
    // Catalog order at start: server one's tools, then server two's.
    let names = before.names();
    let first_two = names.iter().position(|n| n.starts_with("two__")).unwrap();
    assert!(names[..first_two].iter().all(|n| n.starts_with("one__")));
    assert!(names[first_two..].iter().all(|n| n.starts_with("two__")));

    // Server one gains a tool: it goes last, and everything before it keeps its bytes.
    let mut changes = first.catalog_changes();
    first
        .call_tool("one__trigger_list_changed", None)
        .await
        .unwrap();
    tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("the catalog changes")
        .unwrap();
    let after = first.llm_tools(LlmToolFormat::Anthropic);
    assert_eq!(after.names().last().unwrap(), "one__dynamic_tool");
    assert_eq!(&after.names()[..names.len()], names);
    let old = before.to_json();
    let new = after.to_json();
    assert!(
        new.starts_with(&old[..old.len() - 1]),
        "the old list is a prefix of the new one"
    );
    assert!(new.len() > old.len());
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test]
async fn resource_list_changes_are_reported_as_diffs() {
    let (config, log, _) = logged_fixture("resource-diff");
    let client = start_with_wide_debounce(config).await;
    // Routing the read lists the server's resources once, and keeps the list.
    client
        .read_resource(None, "fixture://static/hello")
        .await
        .unwrap();
    assert_eq!(requests(&log, "resources/list"), 1);
    let mut changes = client.list_changes();
    client
        .call_tool(
            "fx__trigger_list_changed",
            Some(json!({"list": "resources", "times": 10})),
        )
        .await
        .unwrap();
    let change = tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("the resource list is listed again and its change reported")
        .unwrap();
    assert_eq!(change.server, "fx");
    assert_eq!(change.kind, ListKind::Resources);
    assert_eq!(change.added, ["fixture://dynamic"]);
    assert!(change.removed.is_empty() && change.changed.is_empty());
    assert_eq!(
        requests(&log, "resources/list"),
        2,
        "ten notifications, one listing"
    );
    // The new list is the kept one: reading the new resource lists nothing more.
    let r = client
        .read_resource(None, "fixture://dynamic")
        .await
        .unwrap();
    assert_eq!(r.contents.len(), 1);
    assert_eq!(requests(&log, "resources/list"), 2);
    cleanup(client, &log).await;
}
