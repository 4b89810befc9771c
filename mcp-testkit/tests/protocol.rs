//! Protocol behaviour of the stdio fixture server, spoken as raw JSON lines.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{tool_text, Fixture};
use serde_json::{json, Value};

#[tokio::test]
async fn initialize_negotiates_version() {
    let mut f = Fixture::spawn(&[]).await;
    let r = f.initialize("2025-06-18").await;
    let result = &r["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["serverInfo"]["name"], "mcp-fixture-server");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(result["capabilities"]["resources"]["listChanged"], true);
    assert_eq!(result["capabilities"]["prompts"]["listChanged"], true);
    assert!(result["capabilities"]["logging"].is_object());
    assert!(result["capabilities"]["completions"].is_object());
    assert!(result["instructions"].is_string());

    for supported in ["2025-11-25", "2025-03-26", "2024-11-05"] {
        assert_eq!(
            f.initialize(supported).await["result"]["protocolVersion"],
            supported
        );
    }
    let r = f.initialize("1999-01-01").await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");

    f.notify("notifications/initialized", json!({})).await;
    assert_eq!(f.request("ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn forced_protocol_version() {
    let mut f = Fixture::spawn(&["--protocol-version", "1999-01-01"]).await;
    let r = f.initialize("2025-11-25").await;
    assert_eq!(r["result"]["protocolVersion"], "1999-01-01");
}

#[tokio::test]
async fn tools_list_pagination() {
    let mut f = Fixture::initialized(&["--page-size", "5"]).await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let r = f.request("tools/list", params).await;
        let tools = r["result"]["tools"].as_array().expect("tools array");
        assert!(tools.len() <= 5);
        for tool in tools {
            assert_eq!(tool["inputSchema"]["type"], "object");
            names.push(tool["name"].as_str().expect("name").to_owned());
        }
        pages += 1;
        match r["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let expected = [
        "echo",
        "add",
        "slow",
        "fail",
        "crash",
        "trigger_list_changed",
        "bump_resource",
        "large",
        "ask_roots",
        "ask_sampling",
        "ask_elicitation",
        "log",
        "record",
        "job",
        "slow_stats",
    ];
    assert_eq!(names, expected);

    let r = f.request("tools/list", json!({"cursor": "garbage"})).await;
    assert_eq!(r["error"]["code"], -32602);

    let r = f.request("resources/list", json!({})).await;
    assert_eq!(r["result"]["resources"].as_array().map(Vec::len), Some(2));
    assert!(r["result"].get("nextCursor").is_none());
}

#[tokio::test]
async fn unpaginated_lists_have_no_cursor() {
    let mut f = Fixture::initialized(&[]).await;
    let r = f.request("tools/list", json!({})).await;
    assert_eq!(r["result"]["tools"].as_array().map(Vec::len), Some(15));
    assert!(r["result"].get("nextCursor").is_none());
    let add = r["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "add"))
        .expect("add tool");
    assert!(add["outputSchema"].is_object());
    assert_eq!(add["annotations"]["readOnlyHint"], true);
}

#[tokio::test]
async fn echo_and_add() {
    let mut f = Fixture::initialized(&[]).await;
    let r = f
        .call_tool("echo", json!({"text": "hello \"world\"\n✓"}))
        .await;
    assert_eq!(
        r["result"],
        json!({"content": [{"type": "text", "text": "hello \"world\"\n✓"}]})
    );

    let r = f.call_tool("add", json!({"a": 2, "b": 40})).await;
    assert_eq!(tool_text(&r), "42");
    assert_eq!(r["result"]["structuredContent"], json!({"sum": 42}));
    let r = f.call_tool("add", json!({"a": 0.5, "b": 0.25})).await;
    assert_eq!(tool_text(&r), "0.75");

    // String ids are echoed verbatim.
    f.send(
        &json!({"jsonrpc": "2.0", "id": "req-x", "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "s"}}}),
    )
    .await;
    let r = f.response("req-x").await;
    assert_eq!(tool_text(&r), "s");
}

#[tokio::test]
async fn errors_name_the_problem_and_serving_continues() {
    let mut f = Fixture::initialized(&[]).await;
    let r = f.call_tool("nope", json!({})).await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["message"], "Unknown tool: nope");

    let r = f.call_tool("echo", json!({})).await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("text")),
        "{r}"
    );
    let r = f.call_tool("echo", json!({"text": 5})).await;
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("text")),
        "{r}"
    );
    let r = f.call_tool("add", json!({"a": 1})).await;
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains('b')),
        "{r}"
    );
    let r = f.request("tools/call", json!({"arguments": {}})).await;
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("name")),
        "{r}"
    );

    let r = f.request("no/such/method", json!({})).await;
    assert_eq!(r["error"]["code"], -32601);

    f.send_raw("{this is not json").await;
    let r = f.wait_for(|v| v.get("error").is_some()).await;
    assert_eq!(r["error"]["code"], -32700);
    assert_eq!(r["id"], Value::Null);

    let r = f.call_tool("echo", json!({"text": "still alive"})).await;
    assert_eq!(tool_text(&r), "still alive");
}

#[tokio::test]
async fn slow_reports_progress() {
    let mut f = Fixture::initialized(&[]).await;
    let id = 77;
    f.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "slow", "arguments": {"duration_ms": 200, "steps": 4},
        "_meta": {"progressToken": "tok-1"}}}),
    )
    .await;
    let r = f.response(id).await;
    assert_eq!(tool_text(&r), "done after 4 steps");
    let progress = f.take_stashed(|v| v["method"] == "notifications/progress");
    assert_eq!(progress.len(), 4);
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["params"]["progressToken"], "tok-1");
        assert_eq!(p["params"]["progress"], i + 1);
        assert_eq!(p["params"]["total"], 4);
        assert!(p["params"]["message"].is_string());
    }

    // Without a token: no progress notifications.
    let r = f
        .call_tool("slow", json!({"duration_ms": 20, "steps": 2}))
        .await;
    assert_eq!(tool_text(&r), "done after 2 steps");
    assert!(f
        .take_stashed(|v| v["method"] == "notifications/progress")
        .is_empty());
}

#[tokio::test]
async fn slow_does_not_block_echo() {
    let mut f = Fixture::initialized(&[]).await;
    let slow = f
        .start_request(
            "tools/call",
            json!({"name": "slow", "arguments": {"duration_ms": 3000, "steps": 1}}),
        )
        .await;
    let started = Instant::now();
    let r = f.call_tool("echo", json!({"text": "fast"})).await;
    assert_eq!(tool_text(&r), "fast");
    assert!(started.elapsed() < Duration::from_millis(2500));
    // The slow response has not arrived yet.
    assert!(f.take_stashed(|v| v["id"] == slow).is_empty());
}

#[tokio::test]
async fn slow_cancellation_suppresses_response() {
    let mut f = Fixture::initialized(&[]).await;
    let slow = f
        .start_request(
            "tools/call",
            json!({"name": "slow", "arguments": {"duration_ms": 300, "steps": 3}}),
        )
        .await;
    f.notify(
        "notifications/cancelled",
        json!({"requestId": slow, "reason": "test"}),
    )
    .await;
    // A later, longer request acts as a barrier: once it has answered, the
    // cancelled one would have answered too.
    let r = f
        .call_tool("slow", json!({"duration_ms": 600, "steps": 1}))
        .await;
    assert_eq!(tool_text(&r), "done after 1 steps");
    assert!(
        f.take_stashed(|v| v["id"] == slow).is_empty(),
        "cancelled request answered"
    );
}

#[tokio::test]
async fn fail_counts_server_wide() {
    let mut f = Fixture::initialized(&["--fail-first", "3"]).await;
    for k in 1..=2 {
        let r = f.call_tool("fail", json!({})).await;
        assert_eq!(r["result"]["isError"], true);
        assert_eq!(tool_text(&r), format!("failure {k} of 3"));
    }
    let r = f.call_tool("fail", json!({"mode": "protocol"})).await;
    assert_eq!(r["error"]["code"], -32603);
    assert_eq!(r["error"]["message"], "failure 3 of 3");
    let r = f.call_tool("fail", json!({})).await;
    assert_eq!(tool_text(&r), "ok after 3 failures");
    assert!(r["result"].get("isError").is_none_or(|e| e == false));
    let r = f.call_tool("fail", json!({"mode": "protocol"})).await;
    assert_eq!(tool_text(&r), "ok after 3 failures");
}

#[tokio::test]
async fn fail_defaults_to_two() {
    let mut f = Fixture::initialized(&[]).await;
    assert_eq!(
        tool_text(&f.call_tool("fail", json!({})).await),
        "failure 1 of 2"
    );
    assert_eq!(
        tool_text(&f.call_tool("fail", json!({})).await),
        "failure 2 of 2"
    );
    assert_eq!(
        tool_text(&f.call_tool("fail", json!({})).await),
        "ok after 2 failures"
    );
}

#[tokio::test]
async fn list_changed_toggles_dynamic_tool() {
    let mut f = Fixture::initialized(&[]).await;
    let r = f.call_tool("trigger_list_changed", json!({})).await;
    assert_eq!(tool_text(&r), "tools changed; dynamic_tool present: true");
    let n = f.take_stashed(|v| v["method"] == "notifications/tools/list_changed");
    assert_eq!(n.len(), 1);

    let r = f.request("tools/list", json!({})).await;
    let names: BTreeSet<&str> = r["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains("dynamic_tool"));
    assert_eq!(
        tool_text(&f.call_tool("dynamic_tool", json!({})).await),
        "dynamic"
    );

    let r = f.call_tool("trigger_list_changed", json!({})).await;
    assert_eq!(tool_text(&r), "tools changed; dynamic_tool present: false");
    let r = f.call_tool("dynamic_tool", json!({})).await;
    assert_eq!(r["error"]["message"], "Unknown tool: dynamic_tool");
}

#[tokio::test]
async fn resources_subscribe_and_update() {
    let mut f = Fixture::initialized(&[]).await;
    let r = f.request("resources/list", json!({})).await;
    let uris: Vec<&str> = r["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|res| res["uri"].as_str())
        .collect();
    assert_eq!(uris, ["fixture://counter", "fixture://static/hello"]);
    let r = f.request("resources/templates/list", json!({})).await;
    assert_eq!(
        r["result"]["resourceTemplates"][0]["uriTemplate"],
        "fixture://items/{id}"
    );

    let read = |r: &Value| {
        r["result"]["contents"][0]["text"]
            .as_str()
            .map(str::to_owned)
    };
    let r = f
        .request("resources/read", json!({"uri": "fixture://static/hello"}))
        .await;
    assert_eq!(read(&r).as_deref(), Some("Hello, fixture!"));
    let r = f
        .request("resources/read", json!({"uri": "fixture://items/abc"}))
        .await;
    assert_eq!(read(&r).as_deref(), Some("item abc"));
    let r = f
        .request("resources/read", json!({"uri": "fixture://missing"}))
        .await;
    assert_eq!(r["error"]["code"], -32002);
    assert_eq!(r["error"]["message"], "Resource not found");

    let r = f
        .request("resources/subscribe", json!({"uri": "fixture://counter"}))
        .await;
    assert_eq!(r["result"], json!({}));
    let r = f.call_tool("bump_resource", json!({})).await;
    assert_eq!(tool_text(&r), "1");
    let updated = f.take_stashed(|v| v["method"] == "notifications/resources/updated");
    assert_eq!(updated.len(), 1);
    assert_eq!(updated[0]["params"]["uri"], "fixture://counter");
    let r = f
        .request("resources/read", json!({"uri": "fixture://counter"}))
        .await;
    assert_eq!(read(&r).as_deref(), Some("counter = 1"));

    f.request("resources/unsubscribe", json!({"uri": "fixture://counter"}))
        .await;
    let r = f.call_tool("bump_resource", json!({})).await;
    assert_eq!(tool_text(&r), "2");
    assert!(f
        .take_stashed(|v| v["method"] == "notifications/resources/updated")
        .is_empty());
}

#[tokio::test]
async fn prompts_and_completion() {
    let mut f = Fixture::initialized(&[]).await;
    let r = f.request("prompts/list", json!({})).await;
    assert_eq!(r["result"]["prompts"][0]["name"], "greeting");
    let r = f
        .request(
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": "Ada", "style": "formal"}}),
        )
        .await;
    assert_eq!(r["result"]["messages"][0]["role"], "user");
    assert_eq!(
        r["result"]["messages"][0]["content"],
        json!({"type": "text", "text": "Please greet Ada in a formal way."})
    );
    assert!(r["result"]["description"].is_string());

    let r = f
        .request("prompts/get", json!({"name": "greeting", "arguments": {}}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("name")));

    let r = f
        .request(
            "completion/complete",
            json!({
            "ref": {"type": "ref/prompt", "name": "greeting"},
            "argument": {"name": "style", "value": "ca"}}),
        )
        .await;
    assert_eq!(r["result"]["completion"]["values"], json!(["casual"]));
}

#[tokio::test]
async fn logging_respects_level() {
    let mut f = Fixture::initialized(&[]).await;
    let r = f
        .call_tool("log", json!({"level": "debug", "message": "d1"}))
        .await;
    assert_eq!(tool_text(&r), "logged");
    let logs = f.take_stashed(|v| v["method"] == "notifications/message");
    assert_eq!(logs.len(), 1);
    assert_eq!(
        logs[0]["params"],
        json!({"level": "debug", "logger": "fixture", "data": "d1"})
    );

    assert_eq!(
        f.request("logging/setLevel", json!({"level": "warning"}))
            .await["result"],
        json!({})
    );
    f.call_tool("log", json!({"level": "info", "message": "hidden"}))
        .await;
    f.call_tool("log", json!({"level": "error", "message": "shown"}))
        .await;
    let logs = f.take_stashed(|v| v["method"] == "notifications/message");
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0]["params"]["data"], "shown");

    let r = f
        .request("logging/setLevel", json!({"level": "loud"}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
}

#[tokio::test]
async fn large_output_exact_size() {
    let mut f = Fixture::initialized(&[]).await;
    let r = f.call_tool("large", json!({"bytes": 1_000_000})).await;
    let text = tool_text(&r);
    assert_eq!(text.len(), 1_000_000);
    assert!(text.bytes().all(|b| b == b'x'));
    let r = f
        .call_tool("large", json!({"bytes": 64 * 1024 * 1024 + 1}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
}

#[tokio::test]
async fn roots_round_trip() {
    let mut f = Fixture::initialized(&[]).await;
    let call = f
        .start_request("tools/call", json!({"name": "ask_roots", "arguments": {}}))
        .await;
    let request = f.wait_for(|v| v["method"] == "roots/list").await;
    let server_id = request["id"].clone();
    assert!(
        server_id.as_str().is_some_and(|id| id.starts_with("srv-")),
        "{request}"
    );
    let roots = json!({"roots": [{"uri": "file:///tmp/project", "name": "project"}]});
    f.send(&json!({"jsonrpc": "2.0", "id": server_id, "result": roots}))
        .await;
    let r = f.response(call).await;
    let returned: Value = serde_json::from_str(tool_text(&r)).expect("roots json");
    assert_eq!(returned, roots);

    // A client error becomes an isError tool result.
    let call = f
        .start_request("tools/call", json!({"name": "ask_roots", "arguments": {}}))
        .await;
    let request = f.wait_for(|v| v["method"] == "roots/list").await;
    assert_ne!(request["id"], server_id);
    f.send(&json!({"jsonrpc": "2.0", "id": request["id"],
        "error": {"code": -32601, "message": "roots not supported"}}))
        .await;
    let r = f.response(call).await;
    assert_eq!(r["result"]["isError"], true);
    assert!(tool_text(&r).contains("roots not supported"));
}

#[tokio::test]
async fn sampling_and_elicitation_round_trips() {
    let mut f = Fixture::initialized(&[]).await;
    let call = f
        .start_request(
            "tools/call",
            json!({"name": "ask_sampling", "arguments": {"prompt": "hi?"}}),
        )
        .await;
    let request = f
        .wait_for(|v| v["method"] == "sampling/createMessage")
        .await;
    assert_eq!(request["params"]["maxTokens"], 100);
    assert_eq!(request["params"]["messages"][0]["content"]["text"], "hi?");
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"});
    f.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": answer}))
        .await;
    let r = f.response(call).await;
    assert_eq!(
        serde_json::from_str::<Value>(tool_text(&r)).expect("json"),
        answer
    );

    let call = f
        .start_request(
            "tools/call",
            json!({"name": "ask_elicitation", "arguments": {"message": "who?"}}),
        )
        .await;
    let request = f.wait_for(|v| v["method"] == "elicitation/create").await;
    assert_eq!(request["params"]["message"], "who?");
    assert_eq!(request["params"]["requestedSchema"]["type"], "object");
    let answer = json!({"action": "accept", "content": {"name": "Ada", "age": 36}});
    f.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": answer}))
        .await;
    let r = f.response(call).await;
    assert_eq!(
        serde_json::from_str::<Value>(tool_text(&r)).expect("json"),
        answer
    );
}

#[tokio::test]
async fn stdin_eof_exits_zero_after_flushing() {
    let mut f = Fixture::spawn(&[]).await;
    // Several requests in one go, then EOF right away: every answer must arrive.
    for id in 1..=50 {
        f.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await;
    }
    f.close_stdin();
    for id in 1..=50 {
        assert_eq!(f.response(id).await["result"], json!({}));
    }
    assert_eq!(f.recv_line().await, None);
    let status = f.wait_exit().await;
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn stdin_eof_does_not_wait_for_slow_tools() {
    let mut f = Fixture::initialized(&[]).await;
    f.start_request(
        "tools/call",
        json!({"name": "slow", "arguments": {"duration_ms": 60000, "steps": 1}}),
    )
    .await;
    assert!(f.request("ping", json!({})).await["result"].is_object());
    let started = Instant::now();
    f.close_stdin();
    assert_eq!(f.wait_exit().await.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn cancelling_ask_roots_cancels_towards_client() {
    let mut f = Fixture::initialized(&[]).await;
    let call = f
        .start_request("tools/call", json!({"name": "ask_roots", "arguments": {}}))
        .await;
    let request = f.wait_for(|v| v["method"] == "roots/list").await;
    f.notify("notifications/cancelled", json!({"requestId": call}))
        .await;
    let cancelled = f
        .wait_for(|v| v["method"] == "notifications/cancelled")
        .await;
    assert_eq!(cancelled["params"]["requestId"], request["id"]);
    // A late answer from the client is ignored, and the tool never answers.
    f.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}}))
        .await;
    assert!(f.request("ping", json!({})).await["result"].is_object());
    assert!(f.take_stashed(|v| v["id"] == call).is_empty());
}

/// The tool names of a `tools/list` response, in order.
fn tool_names(response: &Value) -> Vec<&str> {
    response["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {response}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

/// The tool named `name` in a `tools/list` response.
fn listed<'a>(response: &'a Value, name: &str) -> &'a Value {
    response["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no tool {name} in {response}"))
}

#[tokio::test]
async fn instance_and_extra_tools_appear_only_with_their_flags() {
    let mut plain = Fixture::initialized(&[]).await;
    let names = tool_names(&plain.request("tools/list", json!({})).await).len();
    assert_eq!(names, 15);
    let r = plain.call_tool("instance", json!({})).await;
    assert_eq!(r["error"]["message"], "Unknown tool: instance");

    let mut f = Fixture::initialized(&[
        "--instance",
        "eu-west-1 (primary)",
        "--extra-tool",
        "beta",
        "--extra-tool=alpha",
    ])
    .await;
    let r = f.request("tools/list", json!({})).await;
    let names = tool_names(&r);
    assert_eq!(names.len(), 18, "{names:?}");
    assert_eq!(names[15..], ["instance", "beta", "alpha"]);
    let instance = listed(&r, "instance");
    assert_eq!(
        instance["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true})
    );
    assert_eq!(instance["inputSchema"]["type"], "object");
    assert_eq!(
        listed(&r, "beta")["inputSchema"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    );

    let r = f.call_tool("instance", json!({})).await;
    assert_eq!(
        r["result"],
        json!({"content": [{"type": "text", "text": "eu-west-1 (primary)"}]})
    );
    let r = f.call_tool("beta", json!({"text": "hi \"there\""})).await;
    assert_eq!(
        r["result"],
        json!({"content": [{"type": "text", "text": "beta: hi \"there\""}]})
    );
    assert_eq!(
        tool_text(&f.call_tool("alpha", json!({"text": "x"})).await),
        "alpha: x"
    );
    let r = f.call_tool("alpha", json!({"text": 1})).await;
    assert_eq!(r["error"]["code"], -32602);

    // The extra tools stay last when dynamic_tool comes and goes.
    f.call_tool("trigger_list_changed", json!({})).await;
    let r = f.request("tools/list", json!({})).await;
    assert_eq!(
        tool_names(&r)[15..],
        ["instance", "dynamic_tool", "beta", "alpha"]
    );

    // Each flag on its own.
    let mut only_extra = Fixture::initialized(&["--extra-tool", "gamma"]).await;
    let r = only_extra.request("tools/list", json!({})).await;
    assert_eq!(tool_names(&r)[15..], ["gamma"]);
    let r = only_extra.call_tool("instance", json!({})).await;
    assert_eq!(r["error"]["message"], "Unknown tool: instance");
    let mut only_instance = Fixture::initialized(&["--instance=b"]).await;
    let r = only_instance.request("tools/list", json!({})).await;
    assert_eq!(tool_names(&r)[15..], ["instance"]);
    let r = only_instance.call_tool("gamma", json!({"text": "x"})).await;
    assert_eq!(r["error"]["message"], "Unknown tool: gamma");
}

#[tokio::test]
async fn instance_and_extra_tools_in_the_modern_era() {
    let mut f = Fixture::spawn(&[
        "--era",
        "modern",
        "--instance",
        "m1",
        "--extra-tool",
        "beta",
    ])
    .await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let r = f.request("tools/list", json!({"_meta": meta})).await;
    assert_eq!(tool_names(&r)[15..], ["instance", "beta"], "{r}");
    let r = f
        .request(
            "tools/call",
            json!({"name": "instance", "arguments": {}, "_meta": meta}),
        )
        .await;
    assert_eq!(tool_text(&r), "m1");
    let r = f
        .request(
            "tools/call",
            json!({"name": "beta", "arguments": {"text": "now"}, "_meta": meta}),
        )
        .await;
    assert_eq!(tool_text(&r), "beta: now");
}

#[tokio::test]
async fn bad_instance_and_extra_tool_values_are_refused() {
    let long = "n".repeat(65);
    for (args, flag) in [
        (vec!["--instance", ""], "--instance"),
        (vec!["--instance="], "--instance"),
        (vec!["--extra-tool", ""], "--extra-tool"),
        (vec!["--extra-tool", long.as_str()], "--extra-tool"),
        (vec!["--extra-tool", "has space"], "--extra-tool"),
        (vec!["--extra-tool=a.b"], "--extra-tool"),
        (vec!["--extra-tool", "echo"], "--extra-tool"),
        (vec!["--extra-tool", "instance"], "--extra-tool"),
        (vec!["--extra-tool", "dynamic_tool"], "--extra-tool"),
    ] {
        let message =
            mcp_testkit::parse_args(args.iter().copied()).expect_err(&format!("{args:?} refused"));
        assert!(message.contains(flag), "{args:?}: {message}");
        let value = args
            .last()
            .map(|a| a.split_once('=').map_or(*a, |(_, v)| v))
            .expect("a value");
        assert!(
            message.contains(&format!("{value:?}")),
            "{args:?}: {message}"
        );
    }
    assert!(mcp_testkit::parse_args(["--extra-tool", "ok-name_1"]).is_ok());
    assert!(mcp_testkit::parse_args(["--extra-tool", &"n".repeat(64)]).is_ok());

    // The binary refuses them before serving: exit code 2, the message on stderr.
    let mut f = Fixture::spawn(&["--extra-tool", "echo"]).await;
    assert_eq!(f.wait_exit().await.code(), Some(2));
    let line = f.stderr_line().await.expect("a message");
    assert!(
        line.contains("--extra-tool") && line.contains("\"echo\""),
        "{line}"
    );
}
