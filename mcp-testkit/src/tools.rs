//! The tool catalog (`tools/list`) and the tool implementations (`tools/call`).
//!
//! `echo` is the benchmark tool: its arguments are deserialised borrowed from
//! the input line and the response line is written in one allocation.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::jsonrpc::{
    self, opt_str, opt_u64, params_object, req_number, req_str, req_u64, RpcError, INTERNAL_ERROR,
};
use crate::pagination::{page_result, paginate};
use crate::server::{ClientRequestError, Dispatch, FixtureServer, LogLevel, Reply};

/// Largest output of the `large` tool: 64 MiB.
pub const MAX_LARGE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest `duration_ms` accepted by `slow` (one hour).
pub const MAX_SLOW_DURATION_MS: u64 = 3_600_000;
/// Largest `steps` accepted by `slow`.
pub const MAX_SLOW_STEPS: u64 = 10_000;

/// Names of the always-present tools, in `tools/list` order.
pub const TOOL_NAMES: &[&str] = &[
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

/// Name of the tool toggled by `trigger_list_changed`.
pub const DYNAMIC_TOOL: &str = "dynamic_tool";

/// Name of the tool listed with `--instance LABEL` (answers LABEL).
pub const INSTANCE_TOOL: &str = "instance";

/// Whether `name` is a built-in tool's: always present, toggled, or listed with `--instance`.
pub fn is_built_in(name: &str) -> bool {
    TOOL_NAMES.contains(&name) || name == DYNAMIC_TOOL || name == INSTANCE_TOOL
}

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
/// (while toggled on) and the `--extra-tool`s in order.
pub(crate) fn list(server: &FixtureServer, params: Option<&RawValue>) -> Result<Value, RpcError> {
    let params = params_object(params)?;
    let options = server.options();
    let page_size = options.page_size;
    let dynamic = server.dynamic_tool_present();
    if !dynamic && options.instance.is_none() && options.extra_tools.is_empty() {
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
    let (page, next) = paginate(&all, page_size, &params)?;
    Ok(page_result("tools", page, next))
}

/// `tools/call` params, borrowed from the input line.
#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "jsonrpc::present")]
    arguments: Option<&'a RawValue>,
    #[serde(
        rename = "_meta",
        default,
        borrow,
        deserialize_with = "jsonrpc::present"
    )]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// A successful tool result with one text item.
pub(crate) fn text_result(text: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": text.into() }] })
}

/// A tool-level error result (`isError: true`) with one text item.
pub(crate) fn tool_error(text: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": text.into() }], "isError": true })
}

/// Explains why `tools/call` params failed to deserialise, naming the field.
fn explain_call_params(params: Option<&RawValue>) -> RpcError {
    let map = match params_object(params) {
        Ok(map) => map,
        Err(e) => return e,
    };
    if let Err(e) = req_str(&map, "name") {
        return e;
    }
    match map.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return RpcError::bad_field("arguments", "an object"),
    }
    match map.get("_meta") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return RpcError::bad_field("_meta", "an object"),
    }
    RpcError::invalid_params("Invalid params for tools/call")
}

fn parse_arguments(raw: Option<&RawValue>) -> Result<Map<String, Value>, RpcError> {
    let Some(raw) = raw else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        _ => Err(RpcError::bad_field("arguments", "an object")),
    }
}

/// `tools/call`.
///
/// `tasks`: the request declares the Tasks extension (then `job` runs as a task).
pub(crate) fn call(
    server: &FixtureServer,
    id: &RawValue,
    params: Option<&RawValue>,
    tasks: bool,
) -> Dispatch {
    let parsed = params.and_then(|raw| serde_json::from_str::<CallParams>(raw.get()).ok());
    let Some(call) = parsed else {
        return Dispatch::error(explain_call_params(params));
    };
    if call.name == "echo" {
        return echo(id, call.arguments);
    }
    let args = match parse_arguments(call.arguments) {
        Ok(args) => args,
        Err(e) => return Dispatch::error(e),
    };
    let outcome = match &*call.name {
        "add" => add(&args),
        "slow" => slow(server, &args, call.meta),
        "fail" => fail(server, &args),
        "record" => record(&args),
        "crash" => crash(&args),
        "trigger_list_changed" => trigger_list_changed(server, &args),
        "bump_resource" => Ok(bump_resource(server)),
        "large" => large(id, &args),
        "ask_roots" => Ok(ask(server, "roots/list", json!({}))),
        "ask_sampling" => ask_sampling(server, &args),
        "ask_elicitation" => ask_elicitation(server, &args),
        "log" => log(server, &args),
        "slow_stats" => Ok(Dispatch::result(text_result(
            server.slow_calls().snapshot().to_string(),
        ))),
        "job" => crate::tasks::JobSpec::parse(&args).map(|spec| {
            if tasks {
                Dispatch::result(server.tasks().create(spec))
            } else {
                crate::tasks::run_inline(spec)
            }
        }),
        DYNAMIC_TOOL if server.dynamic_tool_present() => {
            Ok(Dispatch::result(text_result("dynamic")))
        }
        INSTANCE_TOOL if server.options().instance.is_some() => Ok(Dispatch::result(text_result(
            server.options().instance.as_deref().unwrap_or_default(),
        ))),
        name if server.options().extra_tools.iter().any(|t| t == name) => {
            extra_tool_call(name, &args)
        }
        other => Err(RpcError::invalid_params(format!("Unknown tool: {other}"))),
    };
    outcome.unwrap_or_else(Dispatch::error)
}

fn echo(id: &RawValue, arguments: Option<&RawValue>) -> Dispatch {
    match arguments.and_then(|raw| serde_json::from_str::<EchoArgs>(raw.get()).ok()) {
        Some(args) => Dispatch::Now(Reply::Line(jsonrpc::text_result_line(id, &args.text))),
        None => {
            let error = match parse_arguments(arguments)
                .and_then(|args| req_str(&args, "text").map(drop))
            {
                Err(e) => e,
                Ok(()) => RpcError::bad_field("text", "a string"),
            };
            Dispatch::error(error)
        }
    }
}

/// An `--extra-tool NAME` call: `NAME: <text>` (no `text`: empty).
fn extra_tool_call(name: &str, args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let text = opt_str(args, "text")?.unwrap_or_default();
    Ok(Dispatch::result(text_result(format!("{name}: {text}"))))
}

fn add(args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let a = req_number(args, "a")?;
    let b = req_number(args, "b")?;
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => a.checked_add(b).map(Value::from),
        _ => None,
    };
    let sum = match sum {
        Some(sum) => sum,
        None => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            match serde_json::Number::from_f64(a + b) {
                Some(n) => Value::Number(n),
                None => {
                    return Ok(Dispatch::result(tool_error(
                        "the sum is not a finite number",
                    )))
                }
            }
        }
    };
    Ok(Dispatch::result(json!({
        "content": [{ "type": "text", "text": sum.to_string() }],
        "structuredContent": { "sum": sum }
    })))
}

fn slow(
    server: &FixtureServer,
    args: &Map<String, Value>,
    meta: Option<&RawValue>,
) -> Result<Dispatch, RpcError> {
    let duration_ms = opt_u64(args, "duration_ms", 1000, MAX_SLOW_DURATION_MS)?;
    let steps = opt_u64(args, "steps", 5, MAX_SLOW_STEPS)?;
    let token = match meta {
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(mut meta)) => match meta.remove("progressToken") {
                None | Some(Value::Null) => None,
                Some(token @ (Value::String(_) | Value::Number(_))) => Some(token),
                Some(_) => {
                    return Err(RpcError::bad_field(
                        "_meta.progressToken",
                        "a string or an integer",
                    ))
                }
            },
            Ok(Value::Null) => None,
            _ => return Err(RpcError::bad_field("_meta", "an object")),
        },
        None => None,
    };
    let server = server.clone();
    let total = Duration::from_millis(duration_ms);
    // Counted from the moment the request is handled until the call ends or is cancelled
    // (the future, and the guard with it, is dropped).
    let running = server.slow_calls().start(server.clone());
    Ok(Dispatch::Later(Box::pin(async move {
        let _running = running;
        // `steps` is at most MAX_SLOW_STEPS, so it fits in u32.
        let step_count = u32::try_from(steps).unwrap_or(u32::MAX);
        if step_count == 0 {
            tokio::time::sleep(total).await;
        }
        let per_step = total.checked_div(step_count).unwrap_or(total);
        for i in 1..=steps {
            tokio::time::sleep(per_step).await;
            if let Some(token) = &token {
                server.notify(
                    "notifications/progress",
                    &json!({
                        "progressToken": token,
                        "progress": i,
                        "total": steps,
                        "message": format!("step {i} of {steps}")
                    }),
                );
            }
        }
        Reply::Result(text_result(format!("done after {steps} steps")))
    })))
}

/// The server's count of its `slow` calls, which the `slow_stats` tool answers.
#[derive(Debug, Default)]
pub(crate) struct SlowCalls {
    started: AtomicU64,
    running: AtomicU64,
    max_running: AtomicU64,
}

impl SlowCalls {
    /// Counts one more call, running until the returned guard is dropped.
    fn start(&self, server: FixtureServer) -> RunningSlowCall {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        RunningSlowCall(server)
    }

    /// `{started, running, max_running}`.
    fn snapshot(&self) -> Value {
        json!({
            "started": self.started.load(Ordering::SeqCst),
            "running": self.running.load(Ordering::SeqCst),
            "max_running": self.max_running.load(Ordering::SeqCst),
        })
    }
}

/// One running `slow` call; no longer running when dropped.
struct RunningSlowCall(FixtureServer);

impl Drop for RunningSlowCall {
    fn drop(&mut self) {
        self.0.slow_calls().running.fetch_sub(1, Ordering::SeqCst);
    }
}

fn record(args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let call_id = match args.get("call_id") {
        Some(Value::String(id)) => id.clone(),
        _ => return Err(RpcError::bad_field("call_id", "a string")),
    };
    let delay_ms = opt_u64(args, "delay_ms", 0, MAX_SLOW_DURATION_MS)?;
    let reply = text_result(format!("recorded {call_id}"));
    if delay_ms == 0 {
        return Ok(Dispatch::result(reply));
    }
    Ok(Dispatch::Later(Box::pin(async move {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        Reply::Result(reply)
    })))
}

fn fail(server: &FixtureServer, args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let protocol = match opt_str(args, "mode")? {
        None | Some("tool") => false,
        Some("protocol") => true,
        Some(_) => return Err(RpcError::bad_field("mode", "\"tool\" or \"protocol\"")),
    };
    let n = server.options().fail_first;
    let k = server.next_fail_call();
    if k > n {
        return Ok(Dispatch::result(text_result(format!(
            "ok after {n} failures"
        ))));
    }
    let message = format!("failure {k} of {n}");
    Ok(if protocol {
        Dispatch::error(RpcError::new(INTERNAL_ERROR, message))
    } else {
        Dispatch::result(tool_error(message))
    })
}

fn crash(args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let code = match args.get("exit_code") {
        None | Some(Value::Null) => 1,
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())
            .ok_or_else(|| RpcError::bad_field("exit_code", "a 32-bit integer"))?,
        Some(_) => return Err(RpcError::bad_field("exit_code", "an integer")),
    };
    eprintln!("fixture server crashing on purpose");
    std::process::exit(code);
}

fn trigger_list_changed(
    server: &FixtureServer,
    args: &Map<String, Value>,
) -> Result<Dispatch, RpcError> {
    let times = opt_u64(args, "times", 1, 100)?.max(1);
    let (present, notification, what) = match opt_str(args, "list")?.unwrap_or("tools") {
        "tools" => (
            server.toggle_dynamic_tool(),
            "notifications/tools/list_changed",
            "tools changed; dynamic_tool",
        ),
        "resources" => (
            server.toggle_dynamic_resource(),
            "notifications/resources/list_changed",
            "resources changed; fixture://dynamic",
        ),
        _ => return Err(RpcError::bad_field("list", "\"tools\" or \"resources\"")),
    };
    for _ in 0..times {
        server.notify(notification, &json!({}));
    }
    Ok(Dispatch::result(text_result(format!(
        "{what} present: {present}"
    ))))
}

/// One `--churn-every-ms` tick: the tool list changes and the counter is bumped.
pub(crate) fn churn(server: &FixtureServer) {
    server.toggle_dynamic_tool();
    server.notify("notifications/tools/list_changed", &json!({}));
    bump_resource(server);
}

fn bump_resource(server: &FixtureServer) -> Dispatch {
    let value = server.bump_counter();
    if server.is_subscribed(crate::resources::COUNTER_URI) {
        server.notify(
            "notifications/resources/updated",
            &json!({ "uri": crate::resources::COUNTER_URI }),
        );
    }
    Dispatch::result(text_result(value.to_string()))
}

fn large(id: &RawValue, args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let bytes = req_u64(args, "bytes", MAX_LARGE_BYTES)?;
    let bytes = usize::try_from(bytes).map_err(|_| RpcError::bad_field("bytes", "addressable"))?;
    Ok(Dispatch::Now(Reply::Line(jsonrpc::repeated_x_result_line(
        id, bytes,
    ))))
}

/// Sends a server→client request in a spawned task and turns the client's
/// answer into a tool result.
fn ask(server: &FixtureServer, method: &'static str, params: Value) -> Dispatch {
    let server = server.clone();
    Dispatch::Later(Box::pin(async move {
        let result = match server.request_client(method, params).await {
            Ok(result) => text_result(result.to_string()),
            Err(ClientRequestError::ClientError(error)) => {
                tool_error(format!("client returned an error for {method}: {error}"))
            }
            Err(ClientRequestError::TimedOut(after)) => tool_error(format!(
                "timed out after {} ms waiting for the client's {method} response",
                after.as_millis()
            )),
        };
        Reply::Result(result)
    }))
}

fn ask_sampling(server: &FixtureServer, args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let prompt = req_str(args, "prompt")?;
    Ok(ask(
        server,
        "sampling/createMessage",
        json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": 100
        }),
    ))
}

fn ask_elicitation(
    server: &FixtureServer,
    args: &Map<String, Value>,
) -> Result<Dispatch, RpcError> {
    let message = req_str(args, "message")?;
    Ok(ask(
        server,
        "elicitation/create",
        json!({
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": { "type": "string", "title": "Name", "description": "Your name" },
                    "age": { "type": "integer", "title": "Age", "minimum": 0, "default": 30 }
                },
                "required": ["name"]
            }
        }),
    ))
}

fn log(server: &FixtureServer, args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let level_name = req_str(args, "level")?;
    let level = LogLevel::parse(level_name).ok_or_else(|| {
        RpcError::bad_field(
            "level",
            "one of debug, info, notice, warning, error, critical, alert, emergency",
        )
    })?;
    let message = req_str(args, "message")?;
    if server.log_enabled(level) {
        server.notify(
            "notifications/message",
            &json!({ "level": level.as_str(), "logger": "fixture", "data": message }),
        );
    }
    Ok(Dispatch::result(text_result("logged")))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn add_sums_integers_and_floats() {
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let check = |d: Dispatch, text: &str| match d {
            Dispatch::Now(Reply::Result(v)) => {
                assert_eq!(v["content"][0]["text"], text);
                assert_eq!(v["structuredContent"]["sum"].to_string(), text);
            }
            _ => panic!("unexpected dispatch"),
        };
        check(add(&args(json!({"a": 1, "b": 2}))).expect("ok"), "3");
        check(add(&args(json!({"a": 1.5, "b": 2}))).expect("ok"), "3.5");
        check(
            add(&args(json!({"a": i64::MAX, "b": 1}))).expect("ok"),
            "9.223372036854776e+18",
        );
        let err = add(&args(json!({"a": "x", "b": 2}))).err().expect("error");
        assert!(err.message.contains("`a`"));
    }
}
