//! The fixture server (mcp-testkit's) as a [`LocalServer`]: the same tools with the same
//! arguments and results, so the transport contract suite runs against an in-process server
//! next to the real fixture over the other transports. Feature `fixture`.
//!
//! Tools: `echo {text}`, `add {a, b}` (text and `structuredContent {sum}`), `slow
//! {duration_ms, steps}` (progress when asked for; cancellable), `fail {mode}` (fails the
//! first [`FAIL_FIRST`] calls), `crash` (the server dies: every connection ends at once and the
//! calls in flight fail), `trigger_list_changed` (toggles [`DYNAMIC_TOOL`]), `large {bytes}`
//! (at most [`MAX_LARGE_BYTES`]: the in-process message cap, for the contract suite), `ask_roots`,
//! `ask_sampling {prompt}`, `ask_elicitation {message}`, `log {level, message}`, `slow_stats`
//! (how many `slow` calls started, are running, and the most that ran at once). Resources:
//! `fixture://static/hello` and the template `fixture://items/{id}`; prompt: `greeting`.
//!
//! [`LocalServer::cancellations`] counts the cancellations that reached it (the suite's
//! `Cancellations::Counter`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_core::jsonrpc::ErrorObject;
use mcp_core::types::{
    CreateMessageRequestParams, ElicitRequestParams, LoggingLevel, SamplingMessage, ToolAnnotations,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::{
    ClientRequestError, Json, LocalPrompt, LocalResource, LocalResourceTemplate, LocalServer,
    LocalServerBuilder, LocalTool, NoArguments, ReadRequest, RequestContext, ToolError,
};

/// The server's name (as the fixture's).
pub const SERVER_NAME: &str = "mcp-fixture-server";
/// Largest output of `large`: 64 MiB (a larger request is an invalid-params error).
pub const MAX_LARGE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest `duration_ms` of `slow` (one hour).
pub const MAX_SLOW_DURATION_MS: u64 = 3_600_000;
/// Largest `steps` of `slow`.
pub const MAX_SLOW_STEPS: u64 = 10_000;
/// How many `fail` calls fail before they succeed (the fixture's `--fail-first` default).
pub const FAIL_FIRST: u64 = 2;
/// The tool `trigger_list_changed` adds and removes.
pub const DYNAMIC_TOOL: &str = "dynamic_tool";
/// The static resource: "Hello, fixture!".
pub const HELLO_URI: &str = "fixture://static/hello";
/// The resource template: reading `fixture://items/ID` gives "item ID".
pub const ITEM_TEMPLATE: &str = "fixture://items/{id}";

/// The fixture server, ready to connect to.
pub fn fixture_server() -> LocalServer {
    fixture_builder()
        .build()
        .unwrap_or_else(|e| unreachable!("the fixture's registrations are valid: {e}"))
}

/// The fixture server's builder, to change its eras or limits before building.
pub fn fixture_builder() -> LocalServerBuilder {
    let failures = Arc::new(AtomicU64::new(0));
    let slow_calls = Arc::new(SlowCalls::default());
    let counted_slow_calls = slow_calls.clone();
    let read_only = ToolAnnotations {
        read_only_hint: Some(true),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    };
    LocalServer::builder(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .title("MCP fixture server (in process)")
        .instructions(
            "Fixture MCP server for client tests, in process. Tools: echo, add, slow, fail, crash, \
             trigger_list_changed, large, ask_roots, ask_sampling, ask_elicitation, log, slow_stats.",
        )
        .tool(
            LocalTool::new("echo", |_ctx: RequestContext, args: EchoArgs| async move {
                args.text
            })
            .title("Echo")
            .description("Returns the given text unchanged as text content.")
            .annotations(read_only.clone()),
        )
        .tool(
            LocalTool::new("add", |_ctx: RequestContext, args: AddArgs| async move { add(args) })
                .title("Add")
                .description(
                    "Adds two numbers; returns the sum as text and as structuredContent {sum}.",
                )
                .annotations(read_only.clone()),
        )
        .tool(
            LocalTool::new("slow", move |ctx: RequestContext, args: SlowArgs| {
                slow(ctx, args, slow_calls.clone())
            })
                .title("Slow")
                .description(
                    "Waits duration_ms, reporting progress in `steps` steps when the request carries a progressToken. Cancellable.",
                )
                .annotations(ToolAnnotations {
                    read_only_hint: Some(true),
                    open_world_hint: Some(false),
                    ..ToolAnnotations::default()
                }),
        )
        .tool(
            LocalTool::new("fail", move |_ctx: RequestContext, args: FailArgs| {
                let call = failures.fetch_add(1, Ordering::Relaxed) + 1;
                async move { fail(args, call) }
            })
            .title("Fail")
            .description(
                "Fails for the first 2 calls (server-wide) with an isError result, or with a JSON-RPC -32603 error when mode is \"protocol\"; then succeeds.",
            ),
        )
        .tool(
            LocalTool::new("crash", |ctx: RequestContext, _args: CrashArgs| async move {
                // Like a process that exits without answering: every connection ends at once.
                ctx.server().crash();
                std::future::pending::<String>().await
            })
            .title("Crash")
            .description("The server dies at once, without answering: every connection ends.")
            .annotations(ToolAnnotations {
                destructive_hint: Some(true),
                open_world_hint: Some(false),
                ..ToolAnnotations::default()
            }),
        )
        .tool(
            LocalTool::new("trigger_list_changed", |ctx: RequestContext, _args: NoArguments| async move {
                trigger_list_changed(&ctx.server())
            })
            .title("Trigger list_changed")
            .description(
                "Toggles the presence of `dynamic_tool` and sends notifications/tools/list_changed.",
            ),
        )
        .tool(
            LocalTool::new("large", |_ctx: RequestContext, args: LargeArgs| async move { large(args) })
                .title("Large")
                .description(
                    "Returns text content of exactly `bytes` ASCII 'x' characters (at most 64 MiB).",
                )
                .annotations(read_only),
        )
        .tool(
            LocalTool::new("ask_roots", |ctx: RequestContext, _args: NoArguments| async move {
                let answer = ctx.list_roots().await.map(|r| json!(r));
                client_answer("roots/list", answer)
            })
            .title("Ask roots")
            .description("Asks the client for its roots and returns the client's result as JSON text."),
        )
        .tool(
            LocalTool::new("ask_sampling", |ctx: RequestContext, args: SamplingArgs| async move {
                let answer = ctx.create_message(sampling_params(args.prompt)).await.map(|r| json!(r));
                client_answer("sampling/createMessage", answer)
            })
            .title("Ask sampling")
            .description(
                "Sends sampling/createMessage with the prompt to the client and returns the client's result as JSON text.",
            ),
        )
        .tool(
            LocalTool::new("ask_elicitation", |ctx: RequestContext, args: ElicitationArgs| async move {
                let answer = ctx.elicit(elicitation_params(args.message)).await.map(|r| json!(r));
                client_answer("elicitation/create", answer)
            })
            .title("Ask elicitation")
            .description(
                "Sends elicitation/create with the message to the client and returns the client's result as JSON text.",
            ),
        )
        .tool(
            LocalTool::new("log", |ctx: RequestContext, args: LogArgs| async move {
                ctx.log(args.level, Some("fixture"), args.message).await;
                "logged"
            })
            .title("Log")
            .description(
                "Sends notifications/message at the given level (if enabled by logging/setLevel) and answers \"logged\".",
            ),
        )
        .tool(
            LocalTool::new("slow_stats", move |_ctx: RequestContext, _args: NoArguments| {
                let stats = counted_slow_calls.snapshot();
                async move { stats.to_string() }
            })
            .title("Slow stats")
            .description(
                "Counts this server's `slow` calls: how many started, how many are running now and the most that ran at once, as JSON text {started, running, max_running}. A test's view of the server's side: whether a call reached it, whether calls overlapped.",
            )
            .annotations(ToolAnnotations {
                read_only_hint: Some(true),
                idempotent_hint: Some(true),
                open_world_hint: Some(false),
                ..ToolAnnotations::default()
            }),
        )
        .resource(
            LocalResource::new(HELLO_URI, "hello", |_ctx: RequestContext, _read: ReadRequest| async move {
                "Hello, fixture!".to_owned()
            })
            .description("A static greeting.")
            .mime_type("text/plain"),
        )
        .resource_template(
            LocalResourceTemplate::new(ITEM_TEMPLATE, "item", |_ctx: RequestContext, read: ReadRequest| async move {
                format!("item {}", read.variable("id").unwrap_or_default())
            })
            .description("Reading fixture://items/ID returns the text \"item ID\".")
            .mime_type("text/plain"),
        )
        .prompt(
            LocalPrompt::new("greeting", |_ctx: RequestContext, args: GreetingArgs| async move {
                greeting(args)
            })
            .description("Asks the model to greet someone in a given style."),
        )
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to echo back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First addend.
    a: serde_json::Number,
    /// Second addend.
    b: serde_json::Number,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: serde_json::Number,
}

/// Integers add exactly (falling back to floating point on overflow), as the fixture does.
fn add(args: AddArgs) -> Result<Json<Sum>, ToolError> {
    let exact = match (args.a.as_i64(), args.b.as_i64()) {
        (Some(a), Some(b)) => a.checked_add(b).map(serde_json::Number::from),
        _ => None,
    };
    let sum = match exact {
        Some(sum) => sum,
        None => {
            let (a, b) = (
                args.a.as_f64().unwrap_or(f64::NAN),
                args.b.as_f64().unwrap_or(f64::NAN),
            );
            serde_json::Number::from_f64(a + b)
                .ok_or_else(|| ToolError::failed("the sum is not a finite number"))?
        }
    };
    Ok(Json(Sum { sum }))
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long to take, in milliseconds (default 1000, at most an hour).
    duration_ms: Option<u64>,
    /// How many progress steps (default 5, at most 10 000).
    steps: Option<u64>,
}

async fn slow(
    ctx: RequestContext,
    args: SlowArgs,
    calls: Arc<SlowCalls>,
) -> Result<String, ToolError> {
    let duration_ms = args.duration_ms.unwrap_or(1000);
    let steps = args.steps.unwrap_or(5);
    if duration_ms > MAX_SLOW_DURATION_MS {
        return Err(ToolError::invalid_params(
            "duration_ms",
            format!("`duration_ms` must be at most {MAX_SLOW_DURATION_MS}"),
        ));
    }
    if steps > MAX_SLOW_STEPS {
        return Err(ToolError::invalid_params(
            "steps",
            format!("`steps` must be at most {MAX_SLOW_STEPS}"),
        ));
    }
    // Running until the call ends or is cancelled (the future, and the guard with it, is
    // dropped).
    let _running = SlowCalls::start(&calls);
    let total = Duration::from_millis(duration_ms);
    if steps == 0 {
        tokio::time::sleep(total).await;
    }
    // `steps` is at most MAX_SLOW_STEPS, so it fits in u32.
    let per_step = total
        .checked_div(u32::try_from(steps).unwrap_or(u32::MAX))
        .unwrap_or(total);
    for i in 1..=steps {
        tokio::time::sleep(per_step).await;
        let message = format!("step {i} of {steps}");
        ctx.progress(i as f64, Some(steps as f64), Some(&message))
            .await;
    }
    Ok(format!("done after {steps} steps"))
}

/// The server's count of its `slow` calls, which `slow_stats` answers.
#[derive(Debug, Default)]
struct SlowCalls {
    started: AtomicU64,
    running: AtomicU64,
    max_running: AtomicU64,
}

impl SlowCalls {
    /// Counts one more call, running until the returned guard is dropped.
    fn start(calls: &Arc<SlowCalls>) -> RunningSlowCall {
        calls.started.fetch_add(1, Ordering::SeqCst);
        let now = calls.running.fetch_add(1, Ordering::SeqCst) + 1;
        calls.max_running.fetch_max(now, Ordering::SeqCst);
        RunningSlowCall(calls.clone())
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
struct RunningSlowCall(Arc<SlowCalls>);

impl Drop for RunningSlowCall {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum FailMode {
    /// An `isError` result.
    Tool,
    /// A JSON-RPC `-32603` error.
    Protocol,
}

#[derive(Deserialize, JsonSchema)]
struct FailArgs {
    /// How to fail (default `tool`).
    mode: Option<FailMode>,
}

fn fail(args: FailArgs, call: u64) -> Result<String, ToolError> {
    if call > FAIL_FIRST {
        return Ok(format!("ok after {FAIL_FIRST} failures"));
    }
    let message = format!("failure {call} of {FAIL_FIRST}");
    Err(match args.mode {
        Some(FailMode::Protocol) => ToolError::rpc(ErrorObject::internal(message)),
        _ => ToolError::failed(message),
    })
}

#[derive(Deserialize, JsonSchema)]
struct CrashArgs {
    /// Ignored in process (the fixture process exits with it).
    #[allow(dead_code)]
    exit_code: Option<i32>,
}

fn trigger_list_changed(server: &LocalServer) -> String {
    let present = if server.remove_tool(DYNAMIC_TOOL) {
        false
    } else {
        let dynamic = LocalTool::new(
            DYNAMIC_TOOL,
            |_ctx: RequestContext, _args: NoArguments| async move { "dynamic" },
        )
        .title("Dynamic tool")
        .description("Present only while toggled on by trigger_list_changed; answers \"dynamic\".")
        .read_only();
        // Only a concurrent toggle can have added it meanwhile; then it is present anyway.
        let _ = server.add_tool(dynamic);
        true
    };
    format!("tools changed; dynamic_tool present: {present}")
}

#[derive(Deserialize, JsonSchema)]
struct LargeArgs {
    /// How many bytes of text (at most 64 MiB).
    bytes: u64,
}

fn large(args: LargeArgs) -> Result<String, ToolError> {
    if args.bytes > MAX_LARGE_BYTES {
        return Err(ToolError::invalid_params(
            "bytes",
            format!("`bytes` must be at most {MAX_LARGE_BYTES} (the in-process message cap)"),
        ));
    }
    let bytes = usize::try_from(args.bytes)
        .map_err(|_| ToolError::invalid_params("bytes", "`bytes` is not addressable here"))?;
    Ok("x".repeat(bytes))
}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// What to ask the client's model.
    prompt: String,
}

fn sampling_params(prompt: String) -> CreateMessageRequestParams {
    CreateMessageRequestParams {
        messages: vec![SamplingMessage {
            role: mcp_core::types::Role::User,
            content: json!({ "type": "text", "text": prompt }),
            extra: Map::new(),
        }],
        max_tokens: 100,
        system_prompt: None,
        temperature: None,
        extra: Map::new(),
    }
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// What to ask the user.
    message: String,
}

fn elicitation_params(message: String) -> ElicitRequestParams {
    ElicitRequestParams {
        mode: None,
        message,
        requested_schema: Some(json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "title": "Name", "description": "Your name" },
                "age": { "type": "integer", "title": "Age", "minimum": 0, "default": 30 }
            },
            "required": ["name"]
        })),
        url: None,
        elicitation_id: None,
        extra: Map::new(),
    }
}

/// The client's answer as JSON text, or a tool error saying why there is none.
fn level_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
    })
}

fn client_answer(
    method: &str,
    answer: Result<Value, ClientRequestError>,
) -> Result<String, ToolError> {
    match answer {
        Ok(result) => Ok(result.to_string()),
        Err(ClientRequestError::Refused(error)) => Err(ToolError::failed(format!(
            "client returned an error for {method}: {}",
            json!(error)
        ))),
        Err(other) => Err(ToolError::failed(format!("{method}: {other}"))),
    }
}

#[derive(Deserialize, JsonSchema)]
struct LogArgs {
    /// The level.
    #[schemars(schema_with = "level_schema")]
    level: LoggingLevel,
    /// The message.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct GreetingArgs {
    /// Who to greet
    name: String,
    /// "formal" or "casual" (default casual)
    style: Option<String>,
}

fn greeting(args: GreetingArgs) -> Result<mcp_core::types::GetPromptResult, ToolError> {
    let style = args.style.unwrap_or_else(|| "casual".to_owned());
    if style != "formal" && style != "casual" {
        return Err(ToolError::invalid_params(
            "style",
            "`style` must be \"formal\" or \"casual\"",
        ));
    }
    Ok(mcp_core::types::GetPromptResult {
        description: Some(format!("Greeting for {} ({style})", args.name)),
        messages: vec![mcp_core::types::PromptMessage {
            role: mcp_core::types::Role::User,
            content: mcp_core::types::Content::text(format!(
                "Please greet {} in a {style} way.",
                args.name
            )),
        }],
        extra: Map::new(),
    })
}
