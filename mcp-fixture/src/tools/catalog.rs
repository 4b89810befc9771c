//! The tool catalog: every tool's definition (name, title, description, input schema,
//! annotations), built once, and `tools/list` over it.

use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{DYNAMIC_TOOL, INSTANCE_TOOL, MAX_LARGE_BYTES, MAX_SLOW_DURATION_MS, MAX_SLOW_STEPS};
use crate::jsonrpc::{params_object, RpcError};
use crate::pagination::{page_result, paginate};
use crate::server::FixtureServer;

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

fn tool(name: &str, title: &str, description: &str, input_schema: Value) -> Value {
    json!({
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": input_schema,
    })
}

fn with(mut tool: Value, key: &str, value: Value) -> Value {
    if let Value::Object(map) = &mut tool {
        map.insert(key.to_owned(), value);
    }
    tool
}

/// Definitions of the always-present tools, built once.
fn base_tools() -> &'static [Value] {
    static TOOLS: OnceLock<Vec<Value>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let read_only = json!({ "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false });
        vec![
            with(
                tool(
                    "echo",
                    "Echo",
                    "Returns the given text unchanged as text content.",
                    schema(json!({ "text": { "type": "string", "description": "Text to echo back" } }), &["text"]),
                ),
                "annotations",
                read_only.clone(),
            ),
            with(
                with(
                    tool(
                        "add",
                        "Add",
                        "Adds two numbers; returns the sum as text and as structuredContent {sum}.",
                        schema(
                            json!({
                                "a": { "type": "number", "description": "First addend" },
                                "b": { "type": "number", "description": "Second addend" }
                            }),
                            &["a", "b"],
                        ),
                    ),
                    "outputSchema",
                    schema(json!({ "sum": { "type": "number" } }), &["sum"]),
                ),
                "annotations",
                read_only.clone(),
            ),
            with(
                tool(
                    "slow",
                    "Slow",
                    "Waits duration_ms, reporting progress in `steps` steps when the request carries a progressToken. Cancellable.",
                    schema(
                        json!({
                            "duration_ms": { "type": "integer", "minimum": 0, "maximum": MAX_SLOW_DURATION_MS, "default": 1000 },
                            "steps": { "type": "integer", "minimum": 0, "maximum": MAX_SLOW_STEPS, "default": 5 }
                        }),
                        &[],
                    ),
                ),
                "annotations",
                json!({ "readOnlyHint": true, "openWorldHint": false }),
            ),
            tool(
                "fail",
                "Fail",
                "Fails for the first N calls (server-wide, N from --fail-first) with an isError result, or with a JSON-RPC -32603 error when mode is \"protocol\"; then succeeds.",
                schema(
                    json!({ "mode": { "type": "string", "enum": ["tool", "protocol"], "default": "tool" } }),
                    &[],
                ),
            ),
            with(
                tool(
                    "crash",
                    "Crash",
                    "Writes a line to stderr and exits the server process immediately with exit_code, without answering.",
                    schema(json!({ "exit_code": { "type": "integer", "default": 1 } }), &[]),
                ),
                "annotations",
                json!({ "destructiveHint": true, "openWorldHint": false }),
            ),
            tool(
                "trigger_list_changed",
                "Trigger list_changed",
                "Toggles the presence of `dynamic_tool` (or, with list \"resources\", of fixture://dynamic) and sends notifications/tools/list_changed (notifications/resources/list_changed) `times` times.",
                schema(
                    json!({
                        "list": { "type": "string", "enum": ["tools", "resources"], "default": "tools" },
                        "times": { "type": "integer", "minimum": 1, "maximum": 100, "default": 1 }
                    }),
                    &[],
                ),
            ),
            tool(
                "bump_resource",
                "Bump resource",
                "Increments fixture://counter, notifies subscribers with notifications/resources/updated and returns the new value.",
                schema(json!({}), &[]),
            ),
            with(
                tool(
                    "large",
                    "Large",
                    "Returns text content of exactly `bytes` ASCII 'x' characters (at most 64 MiB).",
                    schema(
                        json!({ "bytes": { "type": "integer", "minimum": 0, "maximum": MAX_LARGE_BYTES } }),
                        &["bytes"],
                    ),
                ),
                "annotations",
                read_only.clone(),
            ),
            tool(
                "ask_roots",
                "Ask roots",
                "Sends roots/list to the client and returns the client's result as JSON text.",
                schema(json!({}), &[]),
            ),
            tool(
                "ask_sampling",
                "Ask sampling",
                "Sends sampling/createMessage with the prompt to the client and returns the client's result as JSON text.",
                schema(json!({ "prompt": { "type": "string" } }), &["prompt"]),
            ),
            tool(
                "ask_elicitation",
                "Ask elicitation",
                "Sends elicitation/create with the message to the client and returns the client's result as JSON text.",
                schema(json!({ "message": { "type": "string" } }), &["message"]),
            ),
            tool(
                "log",
                "Log",
                "Sends notifications/message at the given level (if enabled by logging/setLevel) and answers \"logged\".",
                schema(
                    json!({
                        "level": {
                            "type": "string",
                            "enum": ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
                        },
                        "message": { "type": "string" }
                    }),
                    &["level", "message"],
                ),
            ),
            tool(
                "record",
                "Record",
                "A tool with a side effect: records call_id as executed (in the --event-log) and answers \"recorded <call_id>\" after delay_ms (cancellable). Not idempotent: running it twice for one call_id is a duplicate execution.",
                schema(
                    json!({
                        "call_id": { "type": "string", "description": "Identifies one logical call" },
                        "delay_ms": { "type": "integer", "minimum": 0, "maximum": MAX_SLOW_DURATION_MS, "default": 0 }
                    }),
                    &["call_id"],
                ),
            ),
            tool(
                "job",
                "Job",
                "A long-running job: runs as a task (Tasks extension) for a 2026-07-28 client that declares it, else inline. Works duration_ms; with confirm, asks for confirmation half way (input_required); with fail, ends with a JSON-RPC error; poll_interval_ms is the task's suggested polling interval.",
                schema(
                    json!({
                        "duration_ms": { "type": "integer", "minimum": 0, "maximum": crate::tasks::MAX_JOB_MS, "default": 300 },
                        "confirm": { "type": "boolean", "default": false },
                        "fail": { "type": "boolean", "default": false },
                        "poll_interval_ms": { "type": "integer", "minimum": 0, "maximum": 60000, "default": crate::tasks::DEFAULT_POLL_INTERVAL_MS }
                    }),
                    &[],
                ),
            ),
            with(
                tool(
                    "slow_stats",
                    "Slow stats",
                    "Counts this server's `slow` calls: how many started, how many are running now and the most that ran at once, as JSON text {started, running, max_running}. A test's view of the server's side: whether a call reached it, whether calls overlapped.",
                    schema(json!({}), &[]),
                ),
                "annotations",
                read_only.clone(),
            ),
        ]
    })
}

fn dynamic_tool() -> &'static Value {
    static TOOL: OnceLock<Value> = OnceLock::new();
    TOOL.get_or_init(|| {
        with(
            tool(
                DYNAMIC_TOOL,
                "Dynamic tool",
                "Present only while toggled on by trigger_list_changed; answers \"dynamic\".",
                schema(json!({}), &[]),
            ),
            "annotations",
            json!({ "readOnlyHint": true }),
        )
    })
}

/// The `instance` tool of `--instance`.
fn instance_tool() -> &'static Value {
    static TOOL: OnceLock<Value> = OnceLock::new();
    TOOL.get_or_init(|| {
        with(
            tool(
                INSTANCE_TOOL,
                "Instance",
                "Answers this server's --instance label, to tell which of several servers answered.",
                schema(json!({}), &[]),
            ),
            "annotations",
            json!({ "readOnlyHint": true, "idempotentHint": true }),
        )
    })
}

/// An `--extra-tool NAME`: echo-like, answers `NAME: <text>`.
fn extra_tool(name: &str) -> Value {
    tool(
        name,
        name,
        &format!("An extra tool (--extra-tool): answers \"{name}: <text>\"."),
        json!({ "type": "object", "properties": { "text": { "type": "string" } } }),
    )
}

/// `tools/list`: the always-present tools, then `instance` (`--instance`), `dynamic_tool`
/// (while toggled on), the `--extra-tool`s in order and the `--conformance-content` tools.
pub(crate) fn list(server: &FixtureServer, params: Option<&RawValue>) -> Result<Value, RpcError> {
    let params = params_object(params)?;
    let options = server.options();
    let page_size = options.page_size;
    let dynamic = server.dynamic_tool_present();
    if !dynamic
        && options.instance.is_none()
        && options.extra_tools.is_empty()
        && !options.conformance_content
    {
        let (page, next) = paginate(base_tools(), page_size, &params)?;
        return Ok(page_result("tools", page, next));
    }
    let mut all: Vec<Value> = base_tools().to_vec();
    if options.instance.is_some() {
        all.push(instance_tool().clone());
    }
    if dynamic {
        all.push(dynamic_tool().clone());
    }
    all.extend(options.extra_tools.iter().map(|name| extra_tool(name)));
    if options.conformance_content {
        all.extend(crate::conformance::tool_list().iter().cloned());
    }
    let (page, next) = paginate(&all, page_size, &params)?;
    Ok(page_result("tools", page, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{Dispatch, Reply};
    use crate::tools::plain::extra_tool_call;
    use crate::tools::{is_built_in, TOOL_NAMES};

    #[test]
    fn catalog_matches_names_and_has_schemas() {
        let names: Vec<&str> = base_tools()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, TOOL_NAMES);
        for tool in base_tools().iter().chain(std::iter::once(dynamic_tool())) {
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
            assert!(tool["description"].is_string());
        }
        assert!(base_tools()[1]["outputSchema"].is_object());
        for name in TOOL_NAMES.iter().chain(&[DYNAMIC_TOOL, INSTANCE_TOOL]) {
            assert!(is_built_in(name), "{name}");
        }
        assert!(!is_built_in("eu-west"));
    }

    #[test]
    fn instance_and_extra_tool_definitions() {
        let instance = instance_tool();
        assert_eq!(instance["name"], INSTANCE_TOOL);
        assert_eq!(instance["inputSchema"]["type"], "object");
        assert_eq!(
            instance["annotations"],
            json!({ "readOnlyHint": true, "idempotentHint": true })
        );
        let extra = extra_tool("eu_tool");
        assert_eq!(extra["name"], "eu_tool");
        assert_eq!(
            extra["inputSchema"],
            json!({ "type": "object", "properties": { "text": { "type": "string" } } })
        );
        assert!(extra["description"].is_string());
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let text = |d: Dispatch| match d {
            Dispatch::Now(Reply::Result(v)) => v["content"][0]["text"].clone(),
            _ => panic!("unexpected dispatch"),
        };
        let answer = extra_tool_call("eu_tool", &args(json!({"text": "hi"}))).expect("ok");
        assert_eq!(text(answer), "eu_tool: hi");
        let answer = extra_tool_call("eu_tool", &args(json!({}))).expect("ok");
        assert_eq!(text(answer), "eu_tool: ");
        let err = extra_tool_call("eu_tool", &args(json!({"text": 1})))
            .err()
            .expect("error");
        assert!(err.message.contains("`text`"), "{}", err.message);
    }
}
