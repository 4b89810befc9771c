//! The tools that ask the client: `ask_roots`, `ask_sampling` and `ask_elicitation` send a
//! server→client request and answer with the client's result.

use serde_json::{json, Map, Value};

use super::{text_result, tool_error};
use crate::jsonrpc::{req_str, RpcError};
use crate::server::{ClientRequestError, Dispatch, FixtureServer, Reply};

/// Sends a server→client request in a spawned task and turns the client's
/// answer into a tool result.
pub(super) fn ask(server: &FixtureServer, method: &'static str, params: Value) -> Dispatch {
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

pub(super) fn ask_sampling(
    server: &FixtureServer,
    args: &Map<String, Value>,
) -> Result<Dispatch, RpcError> {
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

pub(super) fn ask_elicitation(
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
