//! The conformance tools: their definitions and what each answers.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::media::{image_content, SILENT_WAV};
use super::{input_required, RECONNECTION_TOOL};
use crate::jsonrpc::{req_str, RpcError};
use crate::server::{ClientRequestError, Dispatch, FixtureServer, LogLevel, Reply};
use crate::tools::{text_result, tool_error};

/// The pause between the log messages of `test_tool_with_logging` and between the progress
/// notifications of `test_tool_with_progress`.
const STEP: Duration = Duration::from_millis(50);
/// How long `test_reconnection` works before it answers (the client reconnects meanwhile).
const RECONNECTION_DELAY: Duration = Duration::from_millis(100);

fn no_arguments() -> Value {
    json!({ "type": "object", "properties": {} })
}

fn string_argument(name: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": { name: { "type": "string", "description": description } },
        "required": [name]
    })
}

fn tool(name: &str, description: &str, input_schema: Value) -> Value {
    json!({ "name": name, "description": description, "inputSchema": input_schema })
}

/// The input schema of `json_schema_2020_12_tool`: `$schema`, `$defs` with an `$anchor`,
/// `$ref`, `allOf`/`anyOf`, `if`/`then`/`else` and `additionalProperties`, which a server
/// must list unchanged (SEP-1613, SEP-2106).
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"]
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}

/// The definitions of the conformance tools, built once, in [`super::TOOL_NAMES`] order.
pub(crate) fn list() -> &'static [Value] {
    static TOOLS: OnceLock<Vec<Value>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let mut tools = vec![
            tool("test_simple_text", "Returns one text item.", no_arguments()),
            tool("test_image_content", "Returns one image item (a 1x1 red PNG).", no_arguments()),
            tool("test_audio_content", "Returns one audio item (a short silent WAV).", no_arguments()),
            tool("test_embedded_resource", "Returns one embedded text resource.", no_arguments()),
            tool(
                "test_multiple_content_types",
                "Returns a text, an image and an embedded JSON resource.",
                no_arguments(),
            ),
            tool(
                "test_tool_with_logging",
                "Sends three info log messages, 50 ms apart, then answers.",
                no_arguments(),
            ),
            tool("test_error_handling", "Always answers with an isError result.", no_arguments()),
            tool(
                "test_tool_with_progress",
                "Reports progress 0, 50 and 100 of 100, 50 ms apart, when the request carries a progressToken.",
                no_arguments(),
            ),
            tool(
                "test_sampling",
                "Asks the client for sampling/createMessage with the prompt and answers with the model's text.",
                string_argument("prompt", "The prompt to send to the LLM"),
            ),
            tool(
                "test_elicitation",
                "Asks the client for elicitation/create (username, email) and answers with the user's response.",
                string_argument("message", "The message to show the user"),
            ),
            tool(
                "test_elicitation_sep1034_defaults",
                "Asks the client for elicitation/create with a default for every primitive type (SEP-1034).",
                no_arguments(),
            ),
            tool(
                "test_elicitation_sep1330_enums",
                "Asks the client for elicitation/create with the five enum schema variants (SEP-1330).",
                no_arguments(),
            ),
            tool(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                json_schema_2020_12(),
            ),
            tool(
                RECONNECTION_TOOL,
                "Answers after 100 ms; over Streamable HTTP its stream is closed after the priming event, so the client must reconnect to get the result (SEP-1699).",
                no_arguments(),
            ),
        ];
        tools.extend(input_required::tools());
        tools
    })
}

/// Calls the conformance tool `name`. `meta` is the request's `_meta` and `params` its whole
/// parameters (the input-required tools read `inputResponses` and `requestState` there).
pub(crate) fn call(
    server: &FixtureServer,
    name: &str,
    args: &Map<String, Value>,
    meta: Option<&RawValue>,
    params: Option<&RawValue>,
) -> Result<Dispatch, RpcError> {
    let now = |result: Value| Ok(Dispatch::result(result));
    match name {
        "test_simple_text" => now(text_result("This is a simple text response for testing.")),
        "test_image_content" => now(json!({ "content": [image_content()] })),
        "test_audio_content" => now(json!({
            "content": [{ "type": "audio", "data": SILENT_WAV, "mimeType": "audio/wav" }]
        })),
        "test_embedded_resource" => now(json!({
            "content": [{
                "type": "resource",
                "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content."
                }
            }]
        })),
        "test_multiple_content_types" => now(json!({
            "content": [
                { "type": "text", "text": "Multiple content types test:" },
                image_content(),
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": json!({ "test": "data", "value": 123 }).to_string()
                    }
                }
            ]
        })),
        "test_error_handling" => now(tool_error(
            "This tool intentionally returns an error for testing",
        )),
        "test_tool_with_logging" => Ok(with_logging(server)),
        "test_tool_with_progress" => Ok(with_progress(server, progress_token(meta)?)),
        "test_sampling" => {
            let prompt = req_str(args, "prompt")?;
            Ok(ask_client(
                server,
                meta,
                "sampling",
                "sampling/createMessage",
                json!({
                    "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
                    "maxTokens": 100
                }),
                |result| {
                    let text = result
                        .pointer("/content/text")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    format!("LLM response: {text}")
                },
            ))
        }
        "test_elicitation" => {
            let message = req_str(args, "message")?;
            Ok(elicit(
                server,
                meta,
                message,
                json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string", "description": "User's response" },
                        "email": { "type": "string", "description": "User's email address" }
                    },
                    "required": ["username", "email"]
                }),
                "User response",
            ))
        }
        "test_elicitation_sep1034_defaults" => Ok(elicit(
            server,
            meta,
            "Please review and update the form fields with defaults",
            sep1034_schema(),
            "Elicitation completed",
        )),
        "test_elicitation_sep1330_enums" => Ok(elicit(
            server,
            meta,
            "Please select options from the enum fields",
            sep1330_schema(),
            "Elicitation completed",
        )),
        "json_schema_2020_12_tool" => now(text_result(format!(
            "Received: {}",
            Value::Object(args.clone())
        ))),
        RECONNECTION_TOOL => Ok(Dispatch::Later(Box::pin(async {
            tokio::time::sleep(RECONNECTION_DELAY).await;
            Reply::Result(text_result(
                "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
            ))
        }))),
        other => input_required::call(other, params),
    }
}

/// Whether a 2026-07-28 request's `_meta` declares `capability` among the client's
/// capabilities (that era has no `initialize`).
fn modern_declares(meta: Option<&RawValue>, capability: &str) -> bool {
    meta.and_then(|meta| serde_json::from_str::<Value>(meta.get()).ok())
        .and_then(|meta| {
            meta.get("io.modelcontextprotocol/clientCapabilities")?
                .get(capability)
                .cloned()
        })
        .is_some_and(|c| !c.is_null())
}

/// `_meta.progressToken`, if the request carries one.
fn progress_token(meta: Option<&RawValue>) -> Result<Option<Value>, RpcError> {
    let Some(raw) = meta else {
        return Ok(None);
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(mut meta)) => match meta.remove("progressToken") {
            None | Some(Value::Null) => Ok(None),
            Some(token @ (Value::String(_) | Value::Number(_))) => Ok(Some(token)),
            Some(_) => Err(RpcError::bad_field(
                "_meta.progressToken",
                "a string or an integer",
            )),
        },
        Ok(Value::Null) => Ok(None),
        _ => Err(RpcError::bad_field("_meta", "an object")),
    }
}

/// `test_tool_with_logging`: three `info` messages (as far as `logging/setLevel` lets them
/// through), the first at once, then one every [`STEP`].
fn with_logging(server: &FixtureServer) -> Dispatch {
    let log = |server: &FixtureServer, text: &str| {
        if server.log_enabled(LogLevel::Info) {
            server.notify(
                "notifications/message",
                &json!({ "level": "info", "logger": "conformance", "data": text }),
            );
        }
    };
    log(server, "Tool execution started");
    let server = server.clone();
    Dispatch::Later(Box::pin(async move {
        tokio::time::sleep(STEP).await;
        log(&server, "Tool processing data");
        tokio::time::sleep(STEP).await;
        log(&server, "Tool execution completed");
        Reply::Result(text_result("Tool with logging executed successfully"))
    }))
}

/// `test_tool_with_progress`: progress 0, 50 and 100 of 100, [`STEP`] apart (the waits without
/// a token too).
fn with_progress(server: &FixtureServer, token: Option<Value>) -> Dispatch {
    let server = server.clone();
    Dispatch::Later(Box::pin(async move {
        for (i, progress) in [0, 50, 100].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            if let Some(token) = &token {
                server.notify(
                    "notifications/progress",
                    &json!({ "progressToken": token, "progress": progress, "total": 100 }),
                );
            }
        }
        Reply::Result(text_result("Tool with progress executed successfully"))
    }))
}

/// Sends the client `method` (if it declared `capability` at `initialize`; else answers an
/// `isError` result) and answers one text item made of the client's result by `describe`.
fn ask_client(
    server: &FixtureServer,
    meta: Option<&RawValue>,
    capability: &'static str,
    method: &'static str,
    params: Value,
    describe: impl FnOnce(&Value) -> String + Send + 'static,
) -> Dispatch {
    if !server.client_declares(capability) && !modern_declares(meta, capability) {
        return Dispatch::result(tool_error(format!(
            "the client did not declare the {capability} capability, so {method} cannot be sent"
        )));
    }
    let server = server.clone();
    Dispatch::Later(Box::pin(async move {
        let result = match server.request_client(method, params).await {
            Ok(result) => text_result(describe(&result)),
            Err(ClientRequestError::ClientError(error)) => tool_error(format!(
                "the client answered {method} with an error: {error}"
            )),
            Err(ClientRequestError::TimedOut(after)) => tool_error(format!(
                "timed out after {} ms waiting for the client's {method} response",
                after.as_millis()
            )),
        };
        Reply::Result(result)
    }))
}

/// An `elicitation/create` whose answer is described as `<prefix>: action=…, content=…`.
fn elicit(
    server: &FixtureServer,
    meta: Option<&RawValue>,
    message: &str,
    schema: Value,
    prefix: &'static str,
) -> Dispatch {
    let params = json!({ "message": message, "requestedSchema": schema });
    ask_client(
        server,
        meta,
        "elicitation",
        "elicitation/create",
        params,
        move |result| describe_elicitation(prefix, result),
    )
}

fn describe_elicitation(prefix: &str, result: &Value) -> String {
    let action = result
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let content = result.get("content").cloned().unwrap_or(Value::Null);
    format!("{prefix}: action={action}, content={content}")
}

/// SEP-1034: a default for every primitive type.
fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": { "type": "boolean", "description": "Verification status", "default": true }
        },
        "required": []
    })
}

/// SEP-1330: the five enum variants.
fn sep1330_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Untitled single-select",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Titled single-select",
                "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" }
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Legacy titled enum (enumNames, deprecated)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Untitled multi-select",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
            },
            "titledMulti": {
                "type": "array",
                "description": "Titled multi-select",
                "items": {
                    "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }
                    ]
                }
            }
        },
        "required": []
    })
}
