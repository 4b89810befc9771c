//! The gateway in front of real fixture server processes, seen by a downstream client session:
//! one catalog under the names it chooses, calls forwarded with progress, prompts, resources
//! and completions routed to their server, a server that is down failing only its own tools,
//! list changes followed — and the wire: newline-delimited JSON-RPC over a byte stream.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
use mcp_client::{ClientOptions, McpClient};
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_gateway::{Gateway, GatewayOptions, Prefixing, Relay};
use mcp_session::{ClientSession, SessionOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const DEADLINE: Duration = Duration::from_secs(20);

fn fixture(name: &str, args: &[&str]) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: mcp_testkit::fixture_server_bin()
                .to_string_lossy()
                .into_owned(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        },
    )
}

/// A facade whose servers' requests the gateway relays, and the gateway in front of it.
async fn gateway(servers: Vec<ServerConfig>, options: GatewayOptions) -> Gateway {
    let config = ClientConfig {
        servers,
        ..ClientConfig::default()
    };
    let relay = Relay::new();
    let handlers = relay.clone();
    let client = McpClient::builder(config)
        .options(ClientOptions::default())
        .handler_per_server(move |server| handlers.handler_for(server))
        .start()
        .await;
    Gateway::start(client, relay, options)
        .await
        .expect("the gateway starts")
}

async fn downstream(gateway: &Gateway) -> ClientSession {
    let transport = gateway.server().connect().expect("a downstream connection");
    tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("in time")
    .expect("the downstream session opens")
}

fn names(tools: &[mcp_core::types::Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test]
async fn one_server_is_fronted_under_its_own_names() {
    let gateway = gateway(vec![fixture("files", &[])], GatewayOptions::default()).await;
    let session = downstream(&gateway).await;
    let tools = session
        .list_all_tools(RequestOptions::new())
        .await
        .expect("tools/list");
    let listed = names(&tools);
    assert!(
        listed.contains(&"echo") && listed.contains(&"add"),
        "{listed:?}"
    );
    assert!(listed.iter().all(|n| !n.contains("__")), "{listed:?}");
    // The definition is the server's own: same schema, same annotations.
    let upstream = gateway.client().tools();
    let add = upstream.get("files__add").expect("the facade has add");
    let served = tools.iter().find(|t| t.name == "add").expect("served add");
    assert_eq!(served.input_schema, add.tool.input_schema);
    assert_eq!(served.annotations, add.tool.annotations);

    let sum = session
        .call_tool("add", Some(json!({"a": 2, "b": 3})), RequestOptions::new())
        .await
        .expect("tools/call");
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    let metrics = gateway.client().metrics();
    let files = metrics.server("files").expect("the server's metrics");
    let add_calls = files
        .operations
        .iter()
        .find(|o| o.method == "tools/call" && o.tool.as_deref() == Some("add"))
        .map(|o| o.calls);
    assert_eq!(add_calls, Some(1), "through the facade's stack");

    session.close().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

#[tokio::test]
async fn colliding_names_are_qualified_with_the_chosen_separator() {
    let options = GatewayOptions {
        separator: "-".to_owned(),
        ..GatewayOptions::default()
    };
    let gateway = gateway(vec![fixture("alpha", &[]), fixture("beta", &[])], options).await;
    let session = downstream(&gateway).await;
    let tools = session
        .list_all_tools(RequestOptions::new())
        .await
        .expect("tools/list");
    let listed = names(&tools);
    assert!(
        listed.contains(&"alpha-echo") && listed.contains(&"beta-echo"),
        "{listed:?}"
    );
    let echoed = session
        .call_tool(
            "beta-echo",
            Some(json!({"text": "routed"})),
            RequestOptions::new(),
        )
        .await
        .expect("tools/call");
    assert_eq!(echoed.text(), "routed");

    let prompts = session
        .list_all_prompts(RequestOptions::new())
        .await
        .expect("prompts/list");
    let prompt_names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(prompt_names, ["alpha-greeting", "beta-greeting"]);
    let greeting = session
        .get_prompt(
            "beta-greeting",
            Some(BTreeMap::from([("name".to_owned(), "Ada".to_owned())])),
            RequestOptions::new(),
        )
        .await
        .expect("prompts/get");
    let text = serde_json::to_string(&greeting.messages).expect("json");
    assert!(text.contains("Ada"), "{text}");

    session.close().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

#[tokio::test]
async fn always_prefixing_qualifies_even_one_server() {
    let options = GatewayOptions {
        prefixing: Prefixing::Always,
        ..GatewayOptions::default()
    };
    let gateway = gateway(vec![fixture("files", &[])], options).await;
    let session = downstream(&gateway).await;
    let tools = session
        .list_all_tools(RequestOptions::new())
        .await
        .expect("tools/list");
    assert!(
        names(&tools).contains(&"files__echo"),
        "{:?}",
        names(&tools)
    );
    session.close().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

#[tokio::test]
async fn progress_is_relayed_and_resources_and_completions_are_routed() {
    let gateway = gateway(vec![fixture("files", &[])], GatewayOptions::default()).await;
    let session = downstream(&gateway).await;

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| {
        sink.lock().unwrap().push(p.progress);
    });
    let slow = session
        .call_tool(
            "slow",
            Some(json!({"duration_ms": 50, "steps": 3})),
            options,
        )
        .await
        .expect("tools/call");
    assert_ne!(slow.is_error, Some(true), "{slow:?}");
    assert_eq!(seen.lock().unwrap().len(), 3, "every step relayed");

    let resources = session
        .list_all_resources(RequestOptions::new())
        .await
        .expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&"fixture://static/hello"), "{uris:?}");
    let hello = session
        .read_resource("fixture://static/hello", RequestOptions::new())
        .await
        .expect("resources/read");
    assert!(!hello.contents.is_empty());
    let templates = session
        .list_all_resource_templates(RequestOptions::new())
        .await
        .expect("resources/templates/list");
    assert_eq!(templates[0].uri_template, "fixture://items/{id}");
    // A URI of a template: routed to the server whose template matches.
    let item = session
        .read_resource("fixture://items/42", RequestOptions::new())
        .await
        .expect("a templated read");
    assert!(serde_json::to_string(&item).unwrap().contains("42"));

    let completed = session
        .request(
            "completion/complete",
            Some(mcp_core::Payload::Value(json!({
                "ref": {"type": "ref/prompt", "name": "greeting"},
                "argument": {"name": "name", "value": ""}
            }))),
            RequestOptions::new(),
        )
        .await
        .expect("completion/complete");
    let completed: Value = completed.deserialize().expect("json");
    assert!(
        completed["completion"]["values"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "{completed}"
    );

    session.close().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

#[tokio::test]
async fn a_server_that_is_down_fails_only_its_own_tools() {
    // alpha cannot start again once `refuse` exists: its crash leaves it down.
    let dir = std::env::temp_dir().join(format!("mcp-gateway-down-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let refuse = dir.join("refuse");
    let refuse_arg = refuse.to_string_lossy().into_owned();
    let gateway = gateway(
        vec![
            fixture("alpha", &["--refuse-start-while", &refuse_arg]),
            fixture("beta", &[]),
        ],
        GatewayOptions::default(),
    )
    .await;
    let session = downstream(&gateway).await;
    std::fs::write(&refuse, b"").unwrap();
    // The `crash` tool ends alpha's process.
    let _ = session
        .call_tool("alpha__crash", None, RequestOptions::new())
        .await;
    let failed = session
        .call_tool(
            "alpha__echo",
            Some(json!({"text": "x"})),
            RequestOptions::new(),
        )
        .await
        .expect("a tool error, not a protocol error");
    assert_eq!(failed.is_error, Some(true), "{failed:?}");
    assert_eq!(
        failed.text(),
        "tool alpha__echo is unavailable: server not responding"
    );
    let fine = session
        .call_tool(
            "beta__echo",
            Some(json!({"text": "still here"})),
            RequestOptions::new(),
        )
        .await
        .expect("tools/call");
    assert_eq!(fine.text(), "still here");
    session.close().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn tool_list_changes_upstream_reach_downstream_clients() {
    let gateway = gateway(vec![fixture("files", &[])], GatewayOptions::default()).await;
    let (changed, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let handler = ListChanged(changed);
    let transport = gateway.server().connect().expect("a connection");
    let session = ClientSession::connect(transport, handler, SessionOptions::default())
        .await
        .expect("session");
    let before = session
        .list_all_tools(RequestOptions::new())
        .await
        .expect("tools/list");
    session
        .call_tool("trigger_list_changed", None, RequestOptions::new())
        .await
        .expect("tools/call");
    tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("a tools/list_changed in time")
        .expect("the handler is alive");
    let after = session
        .list_all_tools(RequestOptions::new())
        .await
        .expect("tools/list");
    assert_ne!(names(&before), names(&after), "the new list is served");
    session.close().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

async fn next(
    lines: &mut tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
) -> Value {
    let line = tokio::time::timeout(DEADLINE, lines.next_line())
        .await
        .expect("an answer in time")
        .expect("readable")
        .expect("a line");
    serde_json::from_str::<Value>(&line).expect("a JSON line")
}

struct ListChanged(tokio::sync::mpsc::UnboundedSender<()>);

#[async_trait::async_trait]
impl mcp_session::ClientHandler for ListChanged {
    fn on_notification(&self, notification: &mcp_session::ServerNotification) {
        if matches!(
            notification,
            mcp_session::ServerNotification::ToolListChanged
        ) {
            let _ = self.0.send(());
        }
    }
}

#[tokio::test]
async fn the_stream_wire_speaks_newline_delimited_json_rpc() {
    let gateway = gateway(vec![fixture("files", &[])], GatewayOptions::default()).await;
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let server = gateway.server().clone();
    let serving =
        tokio::spawn(
            async move { mcp_gateway::serve_stream(&server, server_read, server_write).await },
        );
    let (client_read, mut client_write) = tokio::io::split(client_end);
    let mut lines = BufReader::new(client_read).lines();

    client_write.write_all(b"this is not json\n").await.unwrap();
    let parse_error = next(&mut lines).await;
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    assert_eq!(parse_error["id"], Value::Null);

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    client_write
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .unwrap();
    let answer = next(&mut lines).await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["serverInfo"]["name"], "mcph-gateway");
    assert_eq!(
        answer["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    client_write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let call = json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "over the wire"}}});
    client_write
        .write_all(format!("{call}\n").as_bytes())
        .await
        .unwrap();
    let answer = next(&mut lines).await;
    assert_eq!(answer["id"], "c");
    assert_eq!(answer["result"]["content"][0]["text"], "over the wire");

    // A call still running when the client closes its end is answered all the same.
    let slow = json!({"jsonrpc": "2.0", "id": "late", "method": "tools/call",
        "params": {"name": "slow", "arguments": {"duration_ms": 200, "steps": 0}}});
    client_write
        .write_all(format!("{slow}\n").as_bytes())
        .await
        .unwrap();
    client_write
        .shutdown()
        .await
        .expect("the client's end closes");
    let answer = next(&mut lines).await;
    assert_eq!(answer["id"], "late", "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");
    tokio::time::timeout(DEADLINE, serving)
        .await
        .expect("the stream ends with its reader")
        .expect("joined")
        .expect("served");
    gateway.shutdown();
    gateway.client().shutdown().await;
}
