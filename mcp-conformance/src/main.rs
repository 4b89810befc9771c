//! `mcp-conformance-client`: the client under test for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, run by `cargo xtask conformance`).
//!
//! The suite starts a mock server per scenario and runs
//! `mcp-conformance-client <server URL>` with `MCP_CONFORMANCE_SCENARIO` set. This binary drives
//! the real client library (`mcp_core::ClientSession` over
//! `mcp_transport_http::StreamableHttpTransport`) through what the scenario expects, closes the
//! session (DELETE) and exits 0. On error it prints one line to stderr and exits 1; an unknown
//! scenario is an error too, so it shows up as a failure instead of passing silently.

mod auth;

use mcp_core::McpServiceExt;
use mcp_core::RequestOptions;
use std::process::ExitCode;
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::types::{
    CallToolResult, ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult,
};
use mcp_core::{ClientHandler, ClientSession, ErrorObject, SessionOptions};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use serde_json::{json, Value};

/// The client scenarios this binary implements (suite 0.1.16 names), besides every `auth/…`
/// scenario (see [`auth`]).
const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
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
    let options = SessionOptions::default()
        .with_client_info("mcp-conformance-client", env!("CARGO_PKG_VERSION"))
        .with_request_timeout(REQUEST_TIMEOUT)
        .with_initialize_timeout(REQUEST_TIMEOUT);
    let session = ClientSession::connect(transport, AcceptDefaults, options)
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    let outcome = drive(scenario, &session).await;
    // Close (DELETE) whatever happened, then report.
    session.close().await;
    outcome
}

/// What each scenario's mock server waits for after the handshake.
async fn drive(scenario: &str, session: &ClientSession) -> Result<(), String> {
    let tools = session
        .list_all_tools(RequestOptions::new())
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("tools: {}", names.join(", "));
    let (tool, arguments) = match scenario {
        // The handshake is the whole test; the server lists no tools.
        "initialize" => return Ok(()),
        // The protected server's one tool; the call is what triggers a step-up.
        s if s.starts_with("auth/") => ("test-tool", Some(json!({}))),
        "tools_call" => ("add_numbers", Some(json!({ "a": 5, "b": 3 }))),
        // The server elicits during the call; `AcceptDefaults` answers.
        "elicitation-sep1034-client-defaults" => ("test_client_elicitation_defaults", None),
        // The server closes the call's SSE stream after a priming event with `retry: 500`; the
        // transport must wait 500 ms and resume with a GET carrying `Last-Event-ID`, where the
        // result arrives.
        "sse-retry" => ("test_reconnection", None),
        other => return Err(format!("unsupported scenario {other:?}")),
    };
    if !names.contains(&tool) {
        return Err(format!("the server does not list the tool {tool:?}"));
    }
    let result = session
        .call_tool(tool, arguments, RequestOptions::new())
        .await
        .map_err(|e| format!("tools/call {tool}: {e}"))?;
    let text = result_text(&result);
    println!("{tool}: {text}");
    if result.is_error == Some(true) {
        return Err(format!(
            "tools/call {tool} returned an error result: {text}"
        ));
    }
    Ok(())
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
