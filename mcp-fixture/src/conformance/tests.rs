//! `--conformance-content` end to end through the fixture core, one message at a time.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::options::ServerOptions;
use crate::server::{FixtureServer, OutgoingReceiver};

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn server_with(options: ServerOptions) -> (FixtureServer, OutgoingReceiver) {
    FixtureServer::new(options)
}

fn server() -> (FixtureServer, OutgoingReceiver) {
    server_with(ServerOptions {
        conformance_content: true,
        ..ServerOptions::default()
    })
}

async fn next(rx: &mut OutgoingReceiver) -> Value {
    let out = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("timely message")
        .expect("channel open");
    serde_json::from_str(&out.json).expect("valid json")
}

/// Sends one request and returns the next message out.
async fn request(
    server: &FixtureServer,
    rx: &mut OutgoingReceiver,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    server.handle_line(line.to_string().as_bytes());
    next(rx).await
}

async fn call(server: &FixtureServer, rx: &mut OutgoingReceiver, name: &str, args: Value) -> Value {
    request(
        server,
        rx,
        1,
        "tools/call",
        json!({ "name": name, "arguments": args }),
    )
    .await
}

async fn initialize(server: &FixtureServer, rx: &mut OutgoingReceiver, capabilities: Value) {
    let v = request(
        server,
        rx,
        0,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": { "name": "t", "version": "0" }
        }),
    )
    .await;
    assert!(v["result"]["protocolVersion"].is_string(), "{v}");
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|item| item["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn content_is_listed_only_with_the_flag() {
    let (plain, mut plain_rx) = server_with(ServerOptions::default());
    let tools = request(&plain, &mut plain_rx, 1, "tools/list", json!({})).await;
    assert!(!names(&tools["result"], "tools").iter().any(|n| is_tool(n)));
    let missing = call(&plain, &mut plain_rx, "test_simple_text", json!({})).await;
    assert_eq!(missing["error"]["code"], crate::jsonrpc::INVALID_PARAMS);

    let (server, mut rx) = server();
    let tools = request(&server, &mut rx, 1, "tools/list", json!({})).await;
    let listed = names(&tools["result"], "tools");
    for name in TOOL_NAMES {
        assert!(listed.iter().any(|n| n == name), "{name} not listed");
    }
    for tool in tools["result"]["tools"].as_array().expect("tools") {
        assert!(tool["description"].is_string(), "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let schema_tool = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "json_schema_2020_12_tool"))
        .expect("listed");
    let schema = &schema_tool["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema["allOf"].is_array() && schema["if"].is_object());

    let prompts = request(&server, &mut rx, 2, "prompts/list", json!({})).await;
    let listed = names(&prompts["result"], "prompts");
    for name in PROMPT_NAMES.iter().chain(&["greeting"]) {
        assert!(listed.iter().any(|n| n == name), "{name} not listed");
    }
    let resources = request(&server, &mut rx, 3, "resources/list", json!({})).await;
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    for uri in [
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
        crate::resources::COUNTER_URI,
    ] {
        assert!(uris.contains(&uri), "{uri} not in {uris:?}");
    }
    let templates = request(&server, &mut rx, 4, "resources/templates/list", json!({})).await;
    let templates = templates["result"]["resourceTemplates"].to_string();
    assert!(
        templates.contains("test://template/{id}/data"),
        "{templates}"
    );
    assert!(templates.contains(crate::resources::ITEM_TEMPLATE));
}

#[tokio::test]
async fn content_tools_answer_what_the_scenarios_expect() {
    let (server, mut rx) = server();
    let v = call(&server, &mut rx, "test_simple_text", json!({})).await;
    assert_eq!(
        v["result"]["content"],
        json!([{ "type": "text", "text": "This is a simple text response for testing." }])
    );
    let v = call(&server, &mut rx, "test_image_content", json!({})).await;
    assert_eq!(v["result"]["content"][0]["type"], "image");
    assert_eq!(v["result"]["content"][0]["mimeType"], "image/png");
    assert!(v["result"]["content"][0]["data"]
        .as_str()
        .is_some_and(|d| d.starts_with("iVBORw0KGgo")));
    let v = call(&server, &mut rx, "test_audio_content", json!({})).await;
    assert_eq!(v["result"]["content"][0]["mimeType"], "audio/wav");
    assert!(v["result"]["content"][0]["data"]
        .as_str()
        .is_some_and(|d| d.starts_with("UklGR")));
    let v = call(&server, &mut rx, "test_embedded_resource", json!({})).await;
    assert_eq!(
        v["result"]["content"][0]["resource"]["uri"],
        "test://embedded-resource"
    );
    let v = call(&server, &mut rx, "test_multiple_content_types", json!({})).await;
    let kinds: Vec<&str> = v["result"]["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    let embedded: Value = serde_json::from_str(
        v["result"]["content"][2]["resource"]["text"]
            .as_str()
            .expect("text"),
    )
    .expect("json text");
    assert_eq!(embedded, json!({ "test": "data", "value": 123 }));
    let v = call(&server, &mut rx, "test_error_handling", json!({})).await;
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(
        v["result"]["content"][0]["text"],
        "This tool intentionally returns an error for testing"
    );
    let v = call(
        &server,
        &mut rx,
        "json_schema_2020_12_tool",
        json!({ "name": "Ada" }),
    )
    .await;
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("Ada")));
    let v = call(&server, &mut rx, "test_reconnection", json!({})).await;
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("reconnected")));
    // Bad input is an error, never a panic.
    let v = call(&server, &mut rx, "test_sampling", json!({ "prompt": 7 })).await;
    assert_eq!(v["error"]["code"], crate::jsonrpc::INVALID_PARAMS);
}

#[tokio::test]
async fn logging_tool_sends_three_messages_the_level_lets_through() {
    let (server, mut rx) = server();
    let v = call(&server, &mut rx, "test_tool_with_logging", json!({})).await;
    assert_eq!(v["method"], "notifications/message");
    assert_eq!(v["params"]["level"], "info");
    assert_eq!(v["params"]["data"], "Tool execution started");
    for expected in ["Tool processing data", "Tool execution completed"] {
        let v = next(&mut rx).await;
        assert_eq!(v["params"]["data"], expected);
    }
    assert!(next(&mut rx).await["result"]["content"].is_array());

    let v = request(
        &server,
        &mut rx,
        2,
        "logging/setLevel",
        json!({ "level": "warning" }),
    )
    .await;
    assert_eq!(v["result"], json!({}));
    let v = call(&server, &mut rx, "test_tool_with_logging", json!({})).await;
    assert!(v["result"]["content"].is_array(), "no log message: {v}");
}

#[tokio::test]
async fn progress_tool_reports_0_50_100_with_the_token() {
    let (server, mut rx) = server();
    let v = request(
        &server,
        &mut rx,
        1,
        "tools/call",
        json!({ "name": "test_tool_with_progress", "arguments": {}, "_meta": { "progressToken": "p-1" } }),
    )
    .await;
    let mut progress = vec![v];
    for _ in 0..2 {
        progress.push(next(&mut rx).await);
    }
    for (v, expected) in progress.iter().zip([0, 50, 100]) {
        assert_eq!(v["method"], "notifications/progress");
        assert_eq!(v["params"]["progressToken"], "p-1");
        assert_eq!(v["params"]["progress"], expected);
        assert_eq!(v["params"]["total"], 100);
    }
    assert!(next(&mut rx).await["result"]["content"].is_array());
    // Without a token: no notification, just the answer.
    let v = call(&server, &mut rx, "test_tool_with_progress", json!({})).await;
    assert!(v["result"]["content"].is_array(), "{v}");
}

#[tokio::test]
async fn asking_tools_send_the_client_a_request_and_report_its_answer() {
    let (server, mut rx) = server();
    initialize(
        &server,
        &mut rx,
        json!({ "sampling": {}, "elicitation": {} }),
    )
    .await;

    let ask = call(
        &server,
        &mut rx,
        "test_sampling",
        json!({ "prompt": "Hi?" }),
    )
    .await;
    assert_eq!(ask["method"], "sampling/createMessage");
    assert_eq!(ask["params"]["messages"][0]["content"]["text"], "Hi?");
    assert_eq!(ask["params"]["maxTokens"], 100);
    let answer = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": {
        "role": "assistant", "content": { "type": "text", "text": "Hello" }, "model": "m"
    }});
    server.handle_line(answer.to_string().as_bytes());
    let v = next(&mut rx).await;
    assert_eq!(v["result"]["content"][0]["text"], "LLM response: Hello");

    let ask = call(
        &server,
        &mut rx,
        "test_elicitation_sep1034_defaults",
        json!({}),
    )
    .await;
    assert_eq!(ask["method"], "elicitation/create");
    let properties = &ask["params"]["requestedSchema"]["properties"];
    assert_eq!(properties["name"]["default"], "John Doe");
    assert_eq!(properties["age"]["default"], 30);
    assert_eq!(properties["score"]["default"], 95.5);
    assert_eq!(properties["status"]["default"], "active");
    assert_eq!(properties["verified"]["default"], true);
    let answer = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": {
        "action": "accept", "content": { "name": "Ada" }
    }});
    server.handle_line(answer.to_string().as_bytes());
    let v = next(&mut rx).await;
    assert_eq!(
        v["result"]["content"][0]["text"],
        r#"Elicitation completed: action=accept, content={"name":"Ada"}"#
    );

    let ask = call(
        &server,
        &mut rx,
        "test_elicitation_sep1330_enums",
        json!({}),
    )
    .await;
    let properties = &ask["params"]["requestedSchema"]["properties"];
    assert!(properties["titledSingle"]["oneOf"].is_array());
    assert_eq!(
        properties["legacyEnum"]["enumNames"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    assert!(properties["titledMulti"]["items"]["anyOf"].is_array());
    let error =
        json!({ "jsonrpc": "2.0", "id": ask["id"], "error": { "code": -1, "message": "no" } });
    server.handle_line(error.to_string().as_bytes());
    assert_eq!(next(&mut rx).await["result"]["isError"], true);

    assert!(asks_client("test_elicitation") && asks_client("ask_roots"));
    assert!(!asks_client("test_simple_text"));
}

#[tokio::test]
async fn asking_tools_refuse_a_client_without_the_capability() {
    let (server, mut rx) = server();
    initialize(&server, &mut rx, json!({})).await;
    let v = call(&server, &mut rx, "test_sampling", json!({ "prompt": "x" })).await;
    assert_eq!(v["result"]["isError"], true, "{v}");
    let v = call(
        &server,
        &mut rx,
        "test_elicitation",
        json!({ "message": "x" }),
    )
    .await;
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(server.pending_client_requests(), 0);
}

#[tokio::test]
async fn resources_and_template_read_and_subscribe() {
    let (server, mut rx) = server();
    let read = |uri: &str| json!({ "uri": uri });
    let v = request(
        &server,
        &mut rx,
        1,
        "resources/read",
        read("test://static-text"),
    )
    .await;
    assert_eq!(
        v["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    let v = request(
        &server,
        &mut rx,
        2,
        "resources/read",
        read("test://static-binary"),
    )
    .await;
    assert_eq!(v["result"]["contents"][0]["mimeType"], "image/png");
    assert!(v["result"]["contents"][0]["blob"].is_string());
    let v = request(
        &server,
        &mut rx,
        3,
        "resources/read",
        read("test://template/123/data"),
    )
    .await;
    assert_eq!(
        v["result"]["contents"][0]["uri"],
        "test://template/123/data"
    );
    let data: Value =
        serde_json::from_str(v["result"]["contents"][0]["text"].as_str().expect("text"))
            .expect("json");
    assert_eq!(
        data,
        json!({ "id": "123", "templateTest": true, "data": "Data for ID: 123" })
    );
    for bad in [
        "test://template//data",
        "test://template/1/2/data",
        "test://nope",
    ] {
        let v = request(&server, &mut rx, 4, "resources/read", read(bad)).await;
        assert_eq!(
            v["error"]["code"],
            crate::jsonrpc::RESOURCE_NOT_FOUND,
            "{bad}"
        );
    }
    let v = request(
        &server,
        &mut rx,
        5,
        "resources/subscribe",
        read("test://watched-resource"),
    )
    .await;
    assert_eq!(v["result"], json!({}));
    assert!(server.is_subscribed("test://watched-resource"));
    let v = request(
        &server,
        &mut rx,
        6,
        "resources/unsubscribe",
        read("test://watched-resource"),
    )
    .await;
    assert_eq!(v["result"], json!({}));
    assert!(!server.is_subscribed("test://watched-resource"));
}

#[tokio::test]
async fn modern_unknown_resource_is_invalid_params_with_the_uri() {
    let (server, mut rx) = server_with(ServerOptions {
        conformance_content: true,
        era: crate::modern::EraMode::Dual,
        ..ServerOptions::default()
    });
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{{"uri":"test://nope",{MODERN_META}}}}}"#
    );
    server.handle_line(line.as_bytes());
    let v = next(&mut rx).await;
    assert_eq!(v["error"]["code"], crate::jsonrpc::INVALID_PARAMS);
    assert_eq!(v["error"]["data"]["uri"], "test://nope");
}

#[tokio::test]
async fn prompts_and_completion() {
    let (server, mut rx) = server();
    let get = |name: &str, args: Value| json!({ "name": name, "arguments": args });
    let v = request(
        &server,
        &mut rx,
        1,
        "prompts/get",
        get("test_simple_prompt", json!({})),
    )
    .await;
    assert_eq!(
        v["result"]["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );
    let v = request(
        &server,
        &mut rx,
        2,
        "prompts/get",
        get(
            "test_prompt_with_arguments",
            json!({ "arg1": "hello", "arg2": "world" }),
        ),
    )
    .await;
    assert_eq!(
        v["result"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='hello', arg2='world'"
    );
    let v = request(
        &server,
        &mut rx,
        3,
        "prompts/get",
        get("test_prompt_with_arguments", json!({ "arg1": "x" })),
    )
    .await;
    assert_eq!(v["error"]["code"], crate::jsonrpc::INVALID_PARAMS);
    let v = request(
        &server,
        &mut rx,
        4,
        "prompts/get",
        get(
            "test_prompt_with_embedded_resource",
            json!({ "resourceUri": "test://x" }),
        ),
    )
    .await;
    assert_eq!(
        v["result"]["messages"][0]["content"]["resource"]["uri"],
        "test://x"
    );
    assert_eq!(v["result"]["messages"][1]["content"]["type"], "text");
    let v = request(
        &server,
        &mut rx,
        5,
        "prompts/get",
        get("test_prompt_with_image", json!({})),
    )
    .await;
    assert_eq!(v["result"]["messages"][0]["content"]["type"], "image");
    let v = request(
        &server,
        &mut rx,
        6,
        "prompts/get",
        get("greeting", json!({ "name": "A" })),
    )
    .await;
    assert!(
        v["result"]["messages"].is_array(),
        "the fixture's own prompt still works"
    );

    let complete = |value: &str| {
        json!({
            "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
            "argument": { "name": "arg1", "value": value }
        })
    };
    let v = request(&server, &mut rx, 7, "completion/complete", complete("par")).await;
    assert_eq!(
        v["result"]["completion"]["values"],
        json!(["paris", "park", "party"])
    );
    let v = request(&server, &mut rx, 8, "completion/complete", complete("test")).await;
    assert_eq!(v["result"]["completion"]["values"], json!([]));
}

/// One modern `tools/call` (or `prompts/get`) with extra parameters.
async fn modern(
    server: &FixtureServer,
    rx: &mut OutgoingReceiver,
    method: &str,
    name: &str,
    extra: Value,
) -> Value {
    let mut params = json!({
        "name": name,
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    });
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    request(server, rx, 1, method, params).await
}

fn dual() -> (FixtureServer, OutgoingReceiver) {
    server_with(ServerOptions {
        conformance_content: true,
        era: crate::modern::EraMode::Dual,
        ..ServerOptions::default()
    })
}

#[tokio::test]
async fn input_required_round_trip_completes_with_the_responses() {
    let (server, mut rx) = dual();
    let tool = "test_input_required_result_elicitation";
    let v = modern(&server, &mut rx, "tools/call", tool, json!({})).await;
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    assert_eq!(
        v["result"]["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let v = modern(
        &server,
        &mut rx,
        "tools/call",
        tool,
        json!({ "inputResponses": {
            "user_name": { "action": "accept", "content": { "name": "Ada" } },
            "unexpected": { "ignored": true }
        }}),
    )
    .await;
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["content"][0]["text"], "Hello, Ada!");
    // A missing key asks again; a broken structure is an error.
    let v = modern(
        &server,
        &mut rx,
        "tools/call",
        tool,
        json!({ "inputResponses": { "wrong_key": {} } }),
    )
    .await;
    assert_eq!(v["result"]["resultType"], "input_required");
    for broken in [
        json!("nope"),
        json!({ "user_name": 3 }),
        json!({ "user_name": {} }),
    ] {
        let v = modern(
            &server,
            &mut rx,
            "tools/call",
            tool,
            json!({ "inputResponses": broken }),
        )
        .await;
        assert_eq!(v["error"]["code"], crate::jsonrpc::INVALID_PARAMS, "{v}");
    }

    let v = modern(
        &server,
        &mut rx,
        "prompts/get",
        input_required::PROMPT,
        json!({}),
    )
    .await;
    assert_eq!(v["result"]["resultType"], "input_required");
    let v = modern(
        &server,
        &mut rx,
        "prompts/get",
        input_required::PROMPT,
        json!({ "inputResponses": { "user_context": { "action": "accept", "content": { "context": "tests" } } } }),
    )
    .await;
    assert_eq!(
        v["result"]["messages"][0]["content"]["text"],
        "Context: tests"
    );
}

#[tokio::test]
async fn request_state_is_checked_and_evolves_over_rounds() {
    let (server, mut rx) = dual();
    let tool = "test_input_required_result_tampered_state";
    let v = modern(&server, &mut rx, "tools/call", tool, json!({})).await;
    let state = v["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_owned();
    let confirm = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    let v = modern(
        &server,
        &mut rx,
        "tools/call",
        tool,
        json!({ "inputResponses": confirm, "requestState": state }),
    )
    .await;
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("state-ok")));
    let tampered = format!("{state}x");
    for bad in [
        tampered.as_str(),
        "test_input_required_result_tampered_state.1.0",
        "",
    ] {
        let v = modern(
            &server,
            &mut rx,
            "tools/call",
            tool,
            json!({ "inputResponses": confirm, "requestState": bad }),
        )
        .await;
        assert_eq!(v["error"]["code"], crate::jsonrpc::INVALID_PARAMS, "{bad}");
    }
    // A state issued for another tool is refused too.
    let other = modern(
        &server,
        &mut rx,
        "tools/call",
        "test_input_required_result_request_state",
        json!({}),
    )
    .await;
    let v = modern(
        &server,
        &mut rx,
        "tools/call",
        tool,
        json!({ "inputResponses": confirm, "requestState": other["result"]["requestState"] }),
    )
    .await;
    assert_eq!(v["error"]["code"], crate::jsonrpc::INVALID_PARAMS);

    let tool = "test_input_required_result_multi_round";
    let v = modern(&server, &mut rx, "tools/call", tool, json!({})).await;
    assert!(v["result"]["inputRequests"]["step1"].is_object());
    let v = modern(
        &server,
        &mut rx,
        "tools/call",
        tool,
        json!({
            "inputResponses": { "step1": { "action": "accept", "content": { "name": "Ada" } } },
            "requestState": v["result"]["requestState"]
        }),
    )
    .await;
    assert!(v["result"]["inputRequests"]["step2"].is_object(), "{v}");
    let v = modern(
        &server,
        &mut rx,
        "tools/call",
        tool,
        json!({
            "inputResponses": { "step2": { "action": "accept", "content": { "color": "blue" } } },
            "requestState": v["result"]["requestState"]
        }),
    )
    .await;
    assert_eq!(v["result"]["resultType"], "complete");
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("blue")));

    let tool = "test_input_required_result_capabilities";
    let sampling_only = json!({ "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "sampling": {} }
    }});
    let v = modern(&server, &mut rx, "tools/call", tool, sampling_only).await;
    let requests = v["result"]["inputRequests"].as_object().expect("requests");
    let methods: Vec<&str> = requests
        .values()
        .filter_map(|r| r["method"].as_str())
        .collect();
    assert_eq!(methods, ["sampling/createMessage"]);
    let v = modern(&server, &mut rx, "tools/call", tool, json!({})).await;
    assert_eq!(
        v["result"]["resultType"], "complete",
        "no capability, nothing to ask"
    );

    let tool = "test_input_required_result_multiple_inputs";
    let v = modern(&server, &mut rx, "tools/call", tool, json!({})).await;
    let requests = v["result"]["inputRequests"].as_object().expect("requests");
    assert_eq!(requests.len(), 3);
    let v = modern(
        &server,
        &mut rx,
        "tools/call",
        tool,
        json!({
            "inputResponses": {
                "user_name": { "action": "accept", "content": { "name": "Ada" } },
                "greeting": { "role": "assistant", "content": { "type": "text", "text": "Hi" }, "model": "m" },
                "client_roots": { "roots": [{ "uri": "file:///r", "name": "r" }] }
            },
            "requestState": v["result"]["requestState"]
        }),
    )
    .await;
    assert_eq!(
        v["result"]["content"][0]["text"],
        "state-ok: name=Ada, greeting=Hi, roots=file:///r"
    );
}
