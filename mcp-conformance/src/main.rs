//! `mcp-conformance-client`: the client under test for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, run by `cargo xtask conformance`).
//!
//! The suite starts a mock server per scenario and runs
//! `mcp-conformance-client <server URL>` with `MCP_CONFORMANCE_SCENARIO` set. This binary drives
//! the real client library (`mcp_session::ClientSession` over
//! `mcp_transport_http::StreamableHttpTransport`, behind `mcp_tasks`' task follower as in the
//! facade) through what the scenario expects, closes the session (DELETE) and exits 0. On error it prints one line to stderr and exits 1; an unknown
//! scenario is an error too, so it shows up as a failure instead of passing silently.

mod auth;
mod skills;

use mcp_core::RequestOptions;
use mcp_core::{Layer, McpService, McpServiceExt};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::types::{
    CallToolResult, ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult,
};
use mcp_core::ErrorObject;
use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use mcp_tasks::FollowTasksLayer;
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use serde_json::{json, Value};

/// The client scenarios this binary implements (suite 0.2.0-alpha.12 names), besides every
/// `auth/…` scenario (see [`auth`]). The client detects each mock server's era itself.
const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
];

/// Every request gets this long; the suite kills the client after 30 s anyway.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Accepts every form elicitation with the schema's defaults (SEP-1034), as a user pressing
/// "submit" on an untouched form would.
struct AcceptDefaults;

#[async_trait]
impl ClientHandler for AcceptDefaults {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({ "form": {} })),
            ..Default::default()
        }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        if params.mode.as_deref().is_some_and(|m| m != "form") {
            return Ok(ElicitResult {
                action: ElicitAction::Decline,
                content: None,
            });
        }
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(params.schema_defaults()),
        })
    }
}

fn main() -> ExitCode {
    #[cfg(feature = "logging")]
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();

    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    // The suite appends the server URL as the last argument.
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("mcp-conformance-client: usage: mcp-conformance-client <server URL>");
        return ExitCode::FAILURE;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-conformance-client: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&scenario, &url)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-conformance-client: scenario {scenario:?}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str) -> Result<(), String> {
    let is_auth = scenario.starts_with("auth/");
    if scenario.starts_with("sep-2640-") {
        return skills_host(scenario, url).await;
    }
    if !SCENARIOS.contains(&scenario) && !is_auth {
        return Err(format!(
            "unsupported scenario (MCP_CONFORMANCE_SCENARIO); supported: {}, auth/*",
            SCENARIOS.join(", ")
        ));
    }
    let mut config = HttpServerConfig::new(url);
    if is_auth {
        let context = std::env::var("MCP_CONFORMANCE_CONTEXT").unwrap_or_default();
        config = config.auth(auth::provider(scenario, url, &context)?);
    }
    let transport = StreamableHttpTransport::new(config).map_err(|e| format!("transport: {e}"))?;
    let handler: Arc<dyn ClientHandler> = Arc::new(AcceptDefaults);
    let options = session_options();
    let session = ClientSession::connect_shared(transport, handler.clone(), options.clone())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    println!("era: {} ({})", session.era(), session.protocol_version());
    // A tool call a server runs as a task is followed to its end, as the facade does.
    let service = FollowTasksLayer::new(handler, &options).layer(session.clone());
    let outcome = drive(scenario, &service).await;
    // Close (DELETE) whatever happened, then report.
    session.close().await;
    outcome
}

async fn skills_host(scenario: &str, url: &str) -> Result<(), String> {
    let transport = StreamableHttpTransport::new(HttpServerConfig::new(url))
        .map_err(|e| format!("transport: {e}"))?;
    let session = ClientSession::connect(transport, AcceptDefaults, session_options())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let outcome = skills::drive(scenario, &session).await;
    session.close().await;
    outcome
}

fn session_options() -> SessionOptions {
    SessionOptions::default()
        .with_tasks(true)
        .with_client_info("mcp-conformance-client", env!("CARGO_PKG_VERSION"))
        .with_request_timeout(REQUEST_TIMEOUT)
        .with_initialize_timeout(REQUEST_TIMEOUT)
}

/// What each scenario's mock server waits for after the session is open.
async fn drive(scenario: &str, session: &impl McpService) -> Result<(), String> {
    let tools = session
        .list_all_tools(RequestOptions::new())
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("tools: {}", names.join(", "));
    let calls: Vec<(String, Option<Value>)> = match scenario {
        // The handshake (or the metadata of the requests) is the whole test.
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => return Ok(()),
        // The protected server's one tool; the call is what triggers a step-up.
        s if s.starts_with("auth/") => vec![("test-tool".into(), Some(json!({})))],
        "tools_call" => vec![("add_numbers".into(), Some(json!({ "a": 5, "b": 3 })))],
        // The server elicits during the call; `AcceptDefaults` answers.
        "elicitation-sep1034-client-defaults" => {
            vec![("test_client_elicitation_defaults".into(), None)]
        }
        // The server closes the call's SSE stream after a priming event with `retry: 500`; the
        // transport must wait 500 ms and resume with a GET carrying `Last-Event-ID`, where the
        // result arrives.
        "sse-retry" => vec![("test_reconnection".into(), None)],
        // Input-required results: the session answers and re-issues; every tool, in order.
        "sep-2322-client-request-state" => names.iter().map(|n| (n.to_string(), None)).collect(),
        "http-standard-headers" => return standard_headers(session, &names).await,
        // The context names the calls and their arguments.
        "http-custom-headers" => context_tool_calls()?,
        // Every tool the client kept (the invalid ones are gone from the list).
        "http-invalid-tool-headers" => names
            .iter()
            .map(|n| (n.to_string(), Some(json!({ "region": "us-west1" }))))
            .collect(),
        // Echo the schema exactly as received.
        "json-schema-2020-12-preservation" => {
            let schema = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .map(|t| t.input_schema.clone())
                .ok_or("the server does not list json_schema_2020_12_tool")?;
            vec![("json_schema_echo".into(), Some(json!({ "schema": schema })))]
        }
        other => return Err(format!("unsupported scenario {other:?}")),
    };
    for (tool, arguments) in calls {
        if !names.contains(&tool.as_str()) {
            return Err(format!("the server does not list the tool {tool:?}"));
        }
        let result = session
            .call_tool(&tool, arguments, RequestOptions::new())
            .await
            .map_err(|e| format!("tools/call {tool}: {e}"))?;
        let text = result_text(&result);
        println!("{tool}: {text}");
        if result.is_error == Some(true) {
            return Err(format!(
                "tools/call {tool} returned an error result: {text}"
            ));
        }
    }
    Ok(())
}

/// One request of every kind that carries the standard headers.
async fn standard_headers(session: &impl McpService, tools: &[&str]) -> Result<(), String> {
    if let Some(tool) = tools
        .iter()
        .find(|t| **t == "my-hyphenated-tool")
        .or(tools.first())
    {
        session
            .call_tool(tool, Some(json!({})), RequestOptions::new())
            .await
            .map_err(|e| format!("tools/call {tool}: {e}"))?;
    }
    let resources = session
        .list_all_resources(RequestOptions::new())
        .await
        .map_err(|e| format!("resources/list: {e}"))?;
    for resource in &resources {
        session
            .read_resource(&resource.uri, RequestOptions::new())
            .await
            .map_err(|e| format!("resources/read {}: {e}", resource.uri))?;
    }
    let prompts = session
        .list_all_prompts(RequestOptions::new())
        .await
        .map_err(|e| format!("prompts/list: {e}"))?;
    for prompt in &prompts {
        session
            .get_prompt(&prompt.name, None, RequestOptions::new())
            .await
            .map_err(|e| format!("prompts/get {}: {e}", prompt.name))?;
    }
    Ok(())
}

/// `toolCalls` of `MCP_CONFORMANCE_CONTEXT`: `[{name, arguments}]`.
fn context_tool_calls() -> Result<Vec<(String, Option<Value>)>, String> {
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").unwrap_or_default();
    let context: Value =
        serde_json::from_str(&context).map_err(|e| format!("MCP_CONFORMANCE_CONTEXT: {e}"))?;
    let calls = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .ok_or("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
    calls
        .iter()
        .map(|call| {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a toolCalls entry has no name")?;
            Ok((name.to_owned(), call.get("arguments").cloned()))
        })
        .collect()
}

/// The text blocks of a tool result, joined (other blocks as JSON).
fn result_text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    value
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .map(|b| match b.get("text").and_then(Value::as_str) {
                    Some(t) => t.to_owned(),
                    None => b.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}
