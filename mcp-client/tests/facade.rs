//! The multi-server facade against fixture servers: partial availability, the catalog, routing,
//! refresh, failure, and clean shutdown.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
use mcp_client::{McpClient, ServerStatus, SupervisionPolicy};
use mcp_core::jsonrpc::ErrorObject;
use mcp_core::types::{ClientCapabilities, CreateMessageRequestParams, CreateMessageResult};
use mcp_core::ErrorKind;
use mcp_session::ClientHandler;
use serde_json::json;

mod common;

use common::*;

#[tokio::test]
async fn a_broken_server_does_not_stop_the_others() {
    let marker = unique_marker("broken");
    let client = start(vec![
        fixture("alpha", &[], &marker),
        broken("broken"),
        fixture("beta", &[], &marker),
    ])
    .await;
    let servers = client.servers();
    let statuses: Vec<(&str, &str)> = servers
        .iter()
        .map(|s| (s.name.as_str(), s.status.label()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("alpha", "ready"),
            ("broken", "unavailable"),
            ("beta", "ready")
        ]
    );
    match &servers[1].status {
        ServerStatus::Unavailable { reason, .. } => {
            assert!(reason.contains("not found"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        servers[0].server_info.as_ref().unwrap().name,
        "mcp-fixture-server"
    );
    assert!(servers[0].tools > 5);

    let catalog = client.tools();
    let names: Vec<&str> = catalog
        .entries()
        .iter()
        .map(|t| t.qualified_name.as_str())
        .collect();
    assert!(
        names.contains(&"alpha__echo") && names.contains(&"beta__echo"),
        "{names:?}"
    );
    assert!(names.iter().all(|n| !n.starts_with("broken__")));
    let first_beta = names.iter().position(|n| n.starts_with("beta__")).unwrap();
    assert!(
        names[..first_beta].iter().all(|n| n.starts_with("alpha__")),
        "servers keep config order"
    );

    let r = client
        .call_tool("beta__echo", Some(json!({"text": "routed"})))
        .await
        .unwrap();
    assert_eq!(r.text(), "routed");
    let err = client.call_tool("broken__echo", None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolNotFound);
    assert_eq!(
        err.agent_message(),
        "tool broken__echo does not exist: check the tool name and server configuration"
    );
    client.shutdown().await;
    mcp_testkit::wait::until("every fixture process is gone", DEADLINE, || {
        processes_with(&marker).is_empty()
    })
    .await;
}

#[tokio::test]
async fn tool_allow_and_deny_lists_shape_the_catalog() {
    let marker = unique_marker("lists");
    let mut only = fixture("only", &[], &marker);
    only.enabled_tools = Some(vec!["echo".into(), "add".into()]);
    let mut without = fixture("without", &[], &marker);
    without.disabled_tools = vec!["crash".into()];
    let mut off = fixture("off", &[], &marker);
    off.enabled = false;
    let client = start(vec![only, without, off]).await;
    let names: Vec<String> = client
        .tools()
        .entries()
        .iter()
        .map(|t| t.qualified_name.clone())
        .collect();
    assert!(names.contains(&"only__echo".to_owned()) && names.contains(&"only__add".to_owned()));
    assert_eq!(names.iter().filter(|n| n.starts_with("only__")).count(), 2);
    assert!(!names.contains(&"without__crash".to_owned()));
    assert!(names.contains(&"without__slow".to_owned()));
    assert_eq!(client.servers()[2].status, ServerStatus::Disabled);
    assert_eq!(
        processes_with(&marker).len(),
        2,
        "the disabled server was never started"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn a_server_that_dies_is_restarted_and_callers_see_it_again() {
    let marker = unique_marker("dies");
    let client = start(vec![
        fixture("fragile", &[], &marker),
        fixture("steady", &[], &marker),
    ])
    .await;
    let first_pid = processes_with(&marker);
    let err = client
        .call_tool("fragile__crash", Some(json!({"exit_code": 9})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    mcp_testkit::wait::until("fragile is back", DEADLINE, || {
        let fragile = &client.servers()[0];
        fragile.status.is_ready() && fragile.reconnects == 1
    })
    .await;
    let fragile = &client.servers()[0];
    assert!(
        fragile
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("exited with status 9")),
        "{fragile:?}"
    );
    assert_ne!(processes_with(&marker), first_pid, "a new child runs");
    // Nothing to do for the caller: the same tool name works again.
    let r = client
        .call_tool("fragile__echo", Some(json!({"text": "back"})))
        .await
        .unwrap();
    assert_eq!(r.text(), "back");
    client.shutdown().await;
    mcp_testkit::wait::until("every fixture process is gone", DEADLINE, || {
        processes_with(&marker).is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_server_that_cannot_restart_is_unavailable_until_a_probe_brings_it_back() {
    let marker = unique_marker("unavailable");
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let refuse = dir.join("refuse");
    let mut fragile = fixture(
        "fragile",
        &["--refuse-start-while", refuse.to_str().unwrap()],
        &marker,
    );
    fragile.settings.probe_interval = Duration::from_millis(300);
    let client = McpClient::builder(ClientConfig {
        servers: vec![fragile],
        source: None,
        region: None,
        store: None,
    })
    .supervision(SupervisionPolicy {
        reconnect_delays: vec![Duration::ZERO, Duration::from_millis(50)],
        ..SupervisionPolicy::default()
    })
    .start()
    .await;
    let mut changes = client.catalog_changes();
    std::fs::write(&refuse, b"").unwrap();
    let _ = client
        .call_tool("fragile__crash", Some(json!({"exit_code": 9})))
        .await;
    mcp_testkit::wait::until("fragile is unavailable", DEADLINE, || {
        matches!(client.servers()[0].status, ServerStatus::Unavailable { .. })
    })
    .await;
    // Its tools stay in the catalog; calling one fails at once with the seed's message.
    let started = std::time::Instant::now();
    let err = client
        .call_tool("fragile__echo", Some(json!({"text": "x"})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ServerUnavailable);
    assert!(
        started.elapsed() < Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err.agent_message(),
        "tool fragile__echo is unavailable: server not responding"
    );
    assert!(client.servers()[0]
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("refusing to start")));
    // The server can start again: the next probe brings it back.
    std::fs::remove_file(&refuse).unwrap();
    mcp_testkit::wait::until("fragile is back", DEADLINE, || {
        client.servers()[0].status.is_ready()
    })
    .await;
    let r = client
        .call_tool("fragile__echo", Some(json!({"text": "back"})))
        .await
        .unwrap();
    assert_eq!(r.text(), "back");
    assert_eq!(client.servers()[0].reconnects, 1);
    assert!(
        changes.try_recv().is_err(),
        "the same tools came back: no catalog change"
    );
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn after_shutdown_no_server_is_ready_or_lists_tools() {
    let marker = unique_marker("shutdown");
    let client = start(vec![fixture("a", &[], &marker), fixture("b", &[], &marker)]).await;
    assert!(!client.tools().is_empty());
    client.shutdown().await;
    assert!(client.tools().is_empty());
    for server in client.servers() {
        assert_eq!(server.status, ServerStatus::Stopped, "{server:?}");
        assert_eq!(server.tools, 0);
    }
    let err = client
        .call_tool("a__echo", Some(json!({"text": "x"})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolNotFound);
    mcp_testkit::wait::until("every fixture process is gone", DEADLINE, || {
        processes_with(&marker).is_empty()
    })
    .await;
}

#[tokio::test]
async fn servers_can_be_added_and_removed_at_run_time() {
    let marker = unique_marker("runtime");
    let client = start(vec![fixture("first", &[], &marker)]).await;
    let mut changes = client.catalog_changes();
    let report = client
        .add_server(fixture("second", &[], &marker))
        .await
        .unwrap();
    assert!(report.status.is_ready(), "{report:?}");
    let added = changes.recv().await.unwrap();
    assert!(
        added.added.contains(&"second__echo".to_owned()),
        "{added:?}"
    );
    assert!(added.removed.is_empty());
    let r = client
        .call_tool("second__echo", Some(json!({"text": "new"})))
        .await
        .unwrap();
    assert_eq!(r.text(), "new");
    let err = client
        .add_server(fixture("second", &[], &marker))
        .await
        .unwrap_err();
    assert!(err.message().contains("already exists"), "{err}");
    assert_eq!(processes_with(&marker).len(), 2);

    client.remove_server("first").await.unwrap();
    let removed = changes.recv().await.unwrap();
    assert!(
        removed.removed.contains(&"first__echo".to_owned()),
        "{removed:?}"
    );
    assert!(client.tools().get("first__echo").is_none());
    assert_eq!(client.servers().len(), 1);
    mcp_testkit::wait::until("the removed server's process is gone", DEADLINE, || {
        processes_with(&marker).len() == 1
    })
    .await;
    assert!(client.remove_server("first").await.is_err());
    client.shutdown().await;
}

/// A harness handler that answers sampling.
struct Sampler;

#[async_trait::async_trait]
impl ClientHandler for Sampler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: Some(json!({})),
            ..ClientCapabilities::default()
        }
    }
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Ok(serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "sampled by the harness"},
            "model": "test-model"
        }))
        .unwrap())
    }
}

#[tokio::test]
async fn the_harness_handler_and_session_options_reach_every_session() {
    let marker = unique_marker("handler");
    let hooked = Arc::new(Mutex::new(Vec::new()));
    let seen = hooked.clone();
    let client = McpClient::builder(ClientConfig {
        servers: vec![fixture("asks", &[], &marker)],
        source: None,
        region: None,
        store: None,
    })
    .handler(Sampler)
    .session_options(move |server, options| {
        seen.lock().unwrap().push(server.name.clone());
        options.with_client_info("my-harness", "9.9")
    })
    .start()
    .await;
    let r = client
        .call_tool("asks__ask_sampling", Some(json!({"prompt": "hi"})))
        .await
        .unwrap();
    assert!(r.text().contains("sampled by the harness"), "{}", r.text());
    assert_eq!(*hooked.lock().unwrap(), ["asks"]);
    client.shutdown().await;
}

#[tokio::test]
async fn prompts_and_resources_are_not_listed_again_on_every_call() {
    let marker = unique_marker("listed");
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let client = start(vec![fixture(
        "one",
        &["--event-log", log.to_str().unwrap()],
        &marker,
    )])
    .await;
    for _ in 0..3 {
        let args = BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
        client
            .get_prompt("one__greeting", Some(args))
            .await
            .unwrap();
        client
            .read_resource(None, "fixture://static/hello")
            .await
            .unwrap();
    }
    let count = |method: &str| {
        mcp_testkit::event_log::read_events(&log)
            .iter()
            .filter(|e| e["event"] == "request" && e["method"] == method)
            .count()
    };
    assert_eq!(count("prompts/get"), 3);
    // With the resource manager (`resources`, professional and up) the contents are kept
    // until the server says they changed: the first read subscribes, then reads once.
    if cfg!(feature = "resources") {
        assert_eq!(count("resources/read"), 1);
        assert_eq!(count("resources/subscribe"), 1);
    } else {
        assert_eq!(count("resources/read"), 3);
    }
    assert_eq!(count("prompts/list"), 1);
    assert_eq!(count("resources/list"), 1);
    assert_eq!(
        count("tools/list"),
        1,
        "tools/list never runs per tool call"
    );
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn list_changed_refreshes_the_catalog() {
    let marker = unique_marker("changed");
    let client = start(vec![fixture("dyn", &[], &marker)]).await;
    assert!(client.tools().get("dyn__dynamic_tool").is_none());
    client
        .call_tool("dyn__trigger_list_changed", None)
        .await
        .unwrap();
    mcp_testkit::wait::until("dynamic_tool appears", DEADLINE, || {
        client.tools().get("dyn__dynamic_tool").is_some()
    })
    .await;
    let r = client.call_tool("dyn__dynamic_tool", None).await.unwrap();
    assert_eq!(r.text(), "dynamic");
    client.shutdown().await;
}

#[tokio::test]
async fn startup_timeout_and_exit_at_start_are_reported() {
    let marker = unique_marker("startup");
    let mut hangs = fixture("hangs", &["--hang-on-initialize"], &marker);
    hangs.startup_timeout = Duration::from_millis(500);
    let exits = fixture("exits", &["--exit-on-start", "3"], &marker);
    let client = start(vec![hangs, exits, fixture("fine", &[], &marker)]).await;
    let servers = client.servers();
    match &servers[0].status {
        ServerStatus::Unavailable { reason, .. } => {
            assert!(reason.contains("initialize"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    match &servers[1].status {
        ServerStatus::Unavailable { reason, .. } => {
            assert!(reason.contains("exited with status 3"), "{reason}");
            assert!(reason.contains("refusing to start"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(servers[2].status.is_ready());
    mcp_testkit::wait::until("the hanging server was stopped", DEADLINE, || {
        processes_with(&marker).len() == 1
    })
    .await;
    client.shutdown().await;
}

#[tokio::test]
async fn resources_and_prompts_across_servers() {
    let marker = unique_marker("resources");
    let client = start(vec![
        fixture("one", &[], &marker),
        fixture("two", &[], &marker),
    ])
    .await;
    let resources = client.resources().await;
    assert!(resources.errors.is_empty());
    let servers: Vec<&str> = resources
        .items
        .iter()
        .filter(|r| r.resource.uri == "fixture://static/hello")
        .map(|r| r.server.as_str())
        .collect();
    assert_eq!(servers, ["one", "two"]);
    let err = client
        .read_resource(None, "fixture://static/hello")
        .await
        .unwrap_err();
    assert!(err.message().contains("several servers"), "{err}");
    let r = client
        .read_resource(Some("two"), "fixture://static/hello")
        .await
        .unwrap();
    assert_eq!(r.contents[0].text.as_deref(), Some("Hello, fixture!"));
    let prompts = client.prompts().await.items;
    assert!(prompts.get("one__greeting").is_some() && prompts.get("two__greeting").is_some());
    let args = BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
    let p = client
        .get_prompt("two__greeting", Some(args))
        .await
        .unwrap();
    assert_eq!(
        p.messages[0].content.as_text(),
        Some("Please greet Ada in a casual way.")
    );
    client.shutdown().await;
}

#[tokio::test]
async fn dropping_the_client_stops_every_server() {
    let marker = unique_marker("drop");
    let client = start(vec![
        fixture("a", &["--ignore-stdin-eof"], &marker),
        fixture("b", &[], &marker),
    ])
    .await;
    assert_eq!(processes_with(&marker).len(), 2);
    drop(client);
    mcp_testkit::wait::until("every fixture process is gone", DEADLINE, || {
        processes_with(&marker).is_empty()
    })
    .await;
}

/// Collects what the fmt subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn every_call_is_traced_with_the_opentelemetry_mcp_names() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let marker = unique_marker("trace");
    let client = start(vec![fixture("traced", &["--fail-first", "1"], &marker)]).await;
    client
        .call_tool("traced__echo", Some(json!({"text": "x"})))
        .await
        .unwrap();
    let failed = client.call_tool("traced__fail", None).await.unwrap();
    assert!(failed.is_error());
    let options = mcp_core::RequestOptions::new().with_timeout(Duration::from_millis(100));
    let err = client
        .call_tool_with(
            "traced__slow",
            Some(json!({"duration_ms": 10_000})),
            options,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    client.shutdown().await;
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let finished: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("tool call finished"))
        .collect();
    assert_eq!(finished.len(), 3, "{log}");
    for line in &finished {
        assert!(line.contains("mcp.method.name=\"tools/call\""), "{line}");
        assert!(line.contains("mcp.server.name=traced"), "{line}");
        assert!(line.contains("network.transport=\"pipe\""), "{line}");
        assert!(line.contains("duration_ms="), "{line}");
    }
    assert!(
        finished[0].contains("gen_ai.tool.name=echo")
            && finished[0].contains("outcome=\"success\""),
        "{}",
        finished[0]
    );
    assert!(
        finished[1].contains("gen_ai.tool.name=fail")
            && finished[1].contains("error.type=\"tool_error\""),
        "{}",
        finished[1]
    );
    assert!(
        finished[2].contains("gen_ai.tool.name=slow")
            && finished[2].contains("error.type=\"timeout\""),
        "{}",
        finished[2]
    );
}

#[cfg(not(feature = "http"))]
#[tokio::test]
async fn a_remote_server_without_its_transport_is_a_clear_failure() {
    let marker = unique_marker("remote");
    let remote = ServerConfig::new(
        "remote",
        TransportConfig::Http {
            url: "https://127.0.0.1:9/mcp".into(),
            headers: BTreeMap::new(),
        },
    );
    let client = start(vec![remote, fixture("local", &[], &marker)]).await;
    let servers = client.servers();
    match &servers[0].status {
        ServerStatus::Unavailable { reason, .. } => {
            assert!(
                reason.contains("`http` transport is not built into this profile"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(servers[1].status.is_ready());
    client.shutdown().await;
}

#[cfg(feature = "http")]
#[tokio::test]
async fn http_sse_and_bare_url_servers_are_reached() {
    use mcp_testkit::options::{parse_args, CliCommand};
    let Ok(CliCommand::Run(options)) = parse_args(Vec::<String>::new()) else {
        panic!("default fixture options")
    };
    let http = mcp_testkit::http::serve_http(options, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the HTTP fixture listens");
    let remote = |name: &str, transport| ServerConfig::new(name, transport);
    let servers = vec![
        remote(
            "streamable",
            TransportConfig::Http {
                url: http.url(),
                headers: BTreeMap::new(),
            },
        ),
        remote(
            "legacy",
            TransportConfig::Sse {
                url: http.sse_url(),
                headers: BTreeMap::new(),
            },
        ),
        remote(
            "detected",
            TransportConfig::Url {
                url: http.sse_url(),
                headers: BTreeMap::new(),
            },
        ),
        remote(
            "refused",
            TransportConfig::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: BTreeMap::new(),
            },
        ),
    ];
    let client = start(servers).await;
    let statuses: Vec<(String, &str)> = client
        .servers()
        .iter()
        .map(|s| (s.name.clone(), s.status.label()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("streamable".to_owned(), "ready"),
            ("legacy".to_owned(), "ready"),
            ("detected".to_owned(), "ready"),
            ("refused".to_owned(), "unavailable")
        ]
    );
    assert_eq!(client.servers()[0].transport, "http");
    for name in ["streamable__echo", "legacy__echo", "detected__echo"] {
        let r = client
            .call_tool(name, Some(json!({"text": name})))
            .await
            .unwrap();
        assert_eq!(r.text(), name);
    }
    client.shutdown().await;
    http.shutdown().await;
}

#[tokio::test]
async fn progress_keeps_a_long_call_alive_when_the_server_resets_on_progress() {
    let marker = unique_marker("progress");
    let mut slowish = fixture("slowish", &[], &marker);
    slowish.tool_timeout = Duration::from_millis(800);
    let client = McpClient::builder(ClientConfig {
        servers: vec![slowish],
        source: None,
        region: None,
        store: None,
    })
    .session_options(|_, options| options.with_reset_timeout_on_progress(Duration::from_secs(20)))
    .start()
    .await;
    // 2.4 s in all, progress every 200 ms: past the 0.8 s tool timeout, within the cap.
    let r = client
        .call_tool(
            "slowish__slow",
            Some(json!({"duration_ms": 2400, "steps": 12})),
        )
        .await
        .expect("progress resets the deadline");
    assert!(r.text().contains("done after 12 steps"), "{}", r.text());
    client.shutdown().await;
}

#[tokio::test]
async fn the_logging_level_is_set_again_after_a_restart() {
    use mcp_client::ClientNotification;
    use mcp_core::types::LoggingLevel;
    use mcp_session::ServerNotification;
    let marker = unique_marker("logging");
    let client = start(vec![fixture("chatty", &[], &marker)]).await;
    assert!(client
        .set_logging_level(LoggingLevel::Error)
        .await
        .is_empty());
    let _ = client
        .call_tool("chatty__crash", Some(json!({"exit_code": 4})))
        .await;
    mcp_testkit::wait::until("chatty is back", DEADLINE, || {
        let s = &client.servers()[0];
        s.status.is_ready() && s.reconnects == 1
    })
    .await;
    let mut notifications = client.notifications();
    for (level, message) in [("info", "too quiet to be heard"), ("error", "heard")] {
        client
            .call_tool(
                "chatty__log",
                Some(json!({"level": level, "message": message})),
            )
            .await
            .unwrap();
    }
    let heard = loop {
        let note = tokio::time::timeout(DEADLINE, notifications.recv())
            .await
            .expect("a log message arrives")
            .unwrap();
        if let ClientNotification {
            notification: ServerNotification::LoggingMessage(message),
            ..
        } = note
        {
            break message;
        }
    };
    assert_eq!(
        heard.data,
        json!("heard"),
        "the info message was filtered by the restored level"
    );
    client.shutdown().await;
}

/// A pooled legacy server lends each call a session of its own; a 2026-07-28 server (the
/// fixture with `--era dual`, detected as modern) keeps no session state, so its calls share
/// the supervised session and its pool stays empty. Concurrent calls on both.
#[cfg(feature = "pool")]
#[tokio::test]
async fn a_modern_server_shares_its_session_and_a_legacy_one_is_pooled() {
    let marker = unique_marker("era_pool");
    let pooled = |name: &str, args: &[&str]| {
        let mut server = fixture(name, args, &marker);
        server.settings.pool.configured = true;
        server.settings.pool.min = 1;
        server.settings.pool.max = 4;
        server
    };
    let config = ClientConfig {
        servers: vec![pooled("old", &[]), pooled("new", &["--era", "dual"])],
        source: None,
        region: None,
        store: None,
    };
    let client = tokio::time::timeout(
        DEADLINE,
        McpClient::builder(config)
            .stack_policy(mcp_client::StackPolicy::professional())
            .start(),
    )
    .await
    .expect("starts in time");
    for server in ["old", "new"] {
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..8 {
            let client = client.clone();
            let tool = format!("{server}__echo");
            calls.spawn(async move {
                client
                    .call_tool(&tool, Some(json!({"text": format!("call {i}")})))
                    .await
            });
        }
        while let Some(result) = calls.join_next().await {
            result.unwrap().unwrap();
        }
    }
    let report = |name: &str| {
        client
            .servers()
            .into_iter()
            .find(|s| s.name == name)
            .expect("listed")
    };
    assert_eq!(
        client.session("new").map(|s| s.era()),
        Some(mcp_core::Era::Modern)
    );
    assert_eq!(
        client.session("old").map(|s| s.era()),
        Some(mcp_core::Era::Legacy)
    );
    let old_pool = report("old").pool.expect("the legacy server is pooled");
    assert!(old_pool.connections >= 1, "{old_pool:?}");
    let new_pool = report("new").pool.expect("the pool exists");
    assert_eq!(new_pool.connections, 0, "{new_pool:?}");
    client.shutdown().await;
}

/// A 2026-07-28 server that runs a tool call as a task (the fixture's `job`): the server's stack
/// follows it to its result, hands the task back when asked and waits for it through the
/// server's service, and cancels on the server a task past the call's deadline.
#[tokio::test]
async fn a_tool_call_run_as_a_task_is_followed_by_the_stack() {
    use mcp_client::tasks::{TaskStatus, TasksExt, ToolCallOutcome};
    use mcp_core::RequestOptions;
    let marker = unique_marker("tasks");
    let client = start(vec![fixture("modern", &["--era", "dual"], &marker)]).await;
    let result = client
        .call_tool("modern__job", Some(json!({"duration_ms": 100})))
        .await
        .unwrap();
    assert_eq!(result.text(), "job done after 100 ms");

    let outcome = client
        .call_tool_as_task(
            "modern__job",
            Some(json!({"duration_ms": 100})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    let ToolCallOutcome::Task(task) = outcome else {
        panic!("expected a task, got {outcome:?}");
    };
    let service = client.service("modern").expect("configured");
    let ended = service
        .wait_for_task(&task.task_id, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(ended.status, TaskStatus::Completed);
    assert_eq!(
        ended.into_tool_result().unwrap().text(),
        "job done after 100 ms"
    );

    let err = client
        .call_tool_with(
            "modern__job",
            Some(json!({"duration_ms": 60_000})),
            RequestOptions::new().with_timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    // The fixture numbers its tasks; the cancellation goes out from the follower's own task.
    mcp_testkit::wait::until_async("task-3 is cancelled", DEADLINE, || async {
        match service
            .get_task("task-3", RequestOptions::new())
            .await
            .unwrap()
            .status
        {
            TaskStatus::Cancelled => Ok(()),
            status => Err(format!("task-3 is still {status}")),
        }
    })
    .await;
    client.shutdown().await;
}

/// A downstream crate's transport: `type: "fixture-pipe"` (and `fixture://` URLs) reach the
/// fixture over a pipe — registered in the builder, the facade untouched.
#[cfg(feature = "stdio")]
struct FixturePipe {
    marker: String,
}

#[cfg(feature = "stdio")]
impl mcp_client::TransportFactory for FixturePipe {
    fn kinds(&self) -> &'static [&'static str] {
        &["fixture-pipe"]
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["fixture"]
    }

    fn connector(
        &self,
        spec: &mcp_client::TransportSpec,
    ) -> Result<Arc<dyn mcp_core::TransportConnector>, mcp_core::Error> {
        let (url, _) = spec.url()?;
        assert!(url.starts_with("fixture://"), "{url}");
        let config = mcp_transport_stdio::StdioServerConfig::new(mcp_testkit::fixture_server_bin())
            .env("MCP_FACADE_TEST_MARKER", &self.marker)
            .name(&spec.server);
        Ok(Arc::new(mcp_transport_stdio::StdioConnector::new(config)))
    }
}

#[cfg(feature = "stdio")]
#[tokio::test]
async fn a_registered_transport_serves_its_type_and_scheme() {
    let marker = unique_marker("registered");
    let remote = |name: &str, transport| ServerConfig::new(name, transport);
    let config = ClientConfig {
        servers: vec![
            remote(
                "by-type",
                TransportConfig::Remote {
                    kind: "fixture-pipe".into(),
                    url: "fixture://one".into(),
                    headers: BTreeMap::new(),
                },
            ),
            remote(
                "by-scheme",
                TransportConfig::Url {
                    url: "fixture://two".into(),
                    headers: BTreeMap::new(),
                },
            ),
            remote(
                "unknown",
                TransportConfig::Remote {
                    kind: "carrier-pigeon".into(),
                    url: "coop://loft".into(),
                    headers: BTreeMap::new(),
                },
            ),
        ],
        source: None,
        region: None,
        store: None,
    };
    let client = tokio::time::timeout(
        DEADLINE,
        McpClient::builder(config)
            .transport(Arc::new(FixturePipe {
                marker: marker.clone(),
            }))
            .start(),
    )
    .await
    .expect("starts in time");
    let servers = client.servers();
    for name in ["by-type", "by-scheme"] {
        let report = servers.iter().find(|s| s.name == name).unwrap();
        assert!(report.status.is_ready(), "{report:?}");
        assert_eq!(
            report.transport,
            if name == "by-type" {
                "fixture-pipe"
            } else {
                "url"
            }
        );
    }
    let result = client
        .call_tool(
            "by-scheme__echo",
            Some(json!({"text": "through the registry"})),
        )
        .await
        .unwrap();
    assert_eq!(result.text(), "through the registry");
    let unknown = servers.iter().find(|s| s.name == "unknown").unwrap();
    match &unknown.status {
        ServerStatus::Unavailable { reason, .. } => {
            assert!(
                reason.contains(r#"no transport for `type: "carrier-pigeon"`"#)
                    && reason.contains("fixture-pipe")
                    && reason.contains("stdio"),
                "{reason}"
            );
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    client.shutdown().await;
    mcp_testkit::wait::until("every fixture process is gone", DEADLINE, || {
        processes_with(&marker).is_empty()
    })
    .await;
}

/// A server registered in code joins the catalog, the stack and supervision like any other.
#[cfg(feature = "stdio")]
#[tokio::test]
async fn a_server_registered_in_code_is_served_like_a_configured_one() {
    let marker = unique_marker("in-code");
    let connector = mcp_transport_stdio::StdioConnector::new(
        mcp_transport_stdio::StdioServerConfig::new(mcp_testkit::fixture_server_bin())
            .env("MCP_FACADE_TEST_MARKER", &marker),
    );
    let client = tokio::time::timeout(
        DEADLINE,
        McpClient::builder(ClientConfig::default())
            .local_server("builtin", Arc::new(connector))
            .start(),
    )
    .await
    .expect("starts in time");
    let report = &client.servers()[0];
    assert_eq!(report.name, "builtin");
    assert!(report.status.is_ready(), "{report:?}");
    assert_eq!(report.transport, "in-process");
    let result = client
        .call_tool("builtin__echo", Some(json!({"text": "in code"})))
        .await
        .unwrap();
    assert_eq!(result.text(), "in code");
    client.shutdown().await;
    mcp_testkit::wait::until("every fixture process is gone", DEADLINE, || {
        processes_with(&marker).is_empty()
    })
    .await;
}

/// How many stdio connects ([`CountedStdio`]) are under way, the most there ever were, and how
/// many have begun.
#[cfg(feature = "stdio")]
#[derive(Default)]
struct StartCounts {
    in_flight: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    begun: std::sync::atomic::AtomicUsize,
}

/// The built-in stdio transport in place of itself, counting its connects in flight. Each connect
/// holds until every server's has begun (so an unbounded start would have them all in flight at
/// once), or at most [`CountedStdio::HOLD`] when the client lets fewer begin.
#[cfg(feature = "stdio")]
struct CountedStdio {
    counts: Arc<StartCounts>,
    begun: tokio::sync::watch::Sender<usize>,
    total: usize,
}

#[cfg(feature = "stdio")]
impl CountedStdio {
    /// The longest a connect holds; the outcome never depends on it (a bounded start waits it
    /// out in every wave but the last, an unbounded one never).
    const HOLD: Duration = Duration::from_millis(250);
}

#[cfg(feature = "stdio")]
impl mcp_client::TransportFactory for CountedStdio {
    fn kinds(&self) -> &'static [&'static str] {
        &["stdio"]
    }

    fn connector(
        &self,
        spec: &mcp_client::TransportSpec,
    ) -> Result<Arc<dyn mcp_core::TransportConnector>, mcp_core::Error> {
        Ok(Arc::new(CountedConnector {
            inner: mcp_client::TransportFactory::connector(
                &mcp_client::transports::StdioFactory,
                spec,
            )?,
            counts: self.counts.clone(),
            begun: self.begun.clone(),
            total: self.total,
        }))
    }
}

#[cfg(feature = "stdio")]
struct CountedConnector {
    inner: Arc<dyn mcp_core::TransportConnector>,
    counts: Arc<StartCounts>,
    begun: tokio::sync::watch::Sender<usize>,
    total: usize,
}

#[cfg(feature = "stdio")]
#[async_trait::async_trait]
impl mcp_core::TransportConnector for CountedConnector {
    async fn connect(&self) -> Result<mcp_core::BoxTransport, mcp_core::Error> {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.counts.in_flight.fetch_add(1, SeqCst) + 1;
        self.counts.most.fetch_max(now, SeqCst);
        self.counts.begun.fetch_add(1, SeqCst);
        self.begun.send_modify(|n| *n += 1);
        let mut begun = self.begun.subscribe();
        let total = self.total;
        let _ = tokio::time::timeout(CountedStdio::HOLD, begun.wait_for(|n| *n >= total)).await;
        let result = self.inner.connect().await;
        self.counts.in_flight.fetch_sub(1, SeqCst);
        result
    }

    fn transport_name(&self) -> &'static str {
        self.inner.transport_name()
    }
}

/// Forty configured stdio servers start at most `max_concurrent_starts` at once, and all start.
#[cfg(feature = "stdio")]
#[tokio::test]
async fn many_servers_start_with_bounded_parallelism() {
    const SERVERS: usize = 40;
    const LIMIT: usize = 4;
    let marker = unique_marker("bounded-start");
    let counts = Arc::new(StartCounts::default());
    let config = ClientConfig {
        servers: (0..SERVERS)
            .map(|i| fixture(&format!("s{i}"), &[], &marker))
            .collect(),
        source: None,
        region: None,
        store: None,
    };
    let client = tokio::time::timeout(
        Duration::from_secs(120),
        McpClient::builder(config)
            .transport(Arc::new(CountedStdio {
                counts: counts.clone(),
                begun: tokio::sync::watch::channel(0).0,
                total: SERVERS,
            }))
            .max_concurrent_starts(LIMIT)
            .start(),
    )
    .await
    .expect("start is bounded by the startup timeouts");
    use std::sync::atomic::Ordering::SeqCst;
    let most = counts.most.load(SeqCst);
    assert!(
        most <= LIMIT,
        "{most} servers started at once, the limit is {LIMIT}"
    );
    assert_eq!(counts.begun.load(SeqCst), SERVERS);
    let ready = client
        .servers()
        .iter()
        .filter(|s| s.status.is_ready())
        .count();
    assert_eq!(ready, SERVERS);
    client.shutdown().await;
    mcp_testkit::wait::until("every fixture process is gone", DEADLINE, || {
        processes_with(&marker).is_empty()
    })
    .await;
}
