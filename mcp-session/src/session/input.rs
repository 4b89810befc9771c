//! Input requests: what a server asks for inside a result — the `inputRequests` of a modern
//! `input_required` result, or of a task of the Tasks extension (`mcp-tasks`) — answered
//! through the [`ClientHandler`] exactly as a legacy server→client request would be.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use super::server_requests::answer_server_request;
use super::ClientHandler;
use mcp_core::error::{Delivery, Error, ErrorKind};
use mcp_core::jsonrpc::{ErrorObject, Payload, Request, RequestId};
use mcp_core::types::InputRequest;

/// Answers every input request of `requests` (by key) through `handler` — the whole round at
/// once when the handler takes it ([`ClientHandler::answer_input_round`], within `limit` per
/// request), else each within `limit`
/// (the session's [`server_request_timeout`](super::SessionOptions::server_request_timeout))
/// and all before `deadline`; `method` names the request they belong to, for errors. The
/// answers are keyed as the requests were, ready for `inputResponses`.
///
/// A handler that refuses or takes too long fails it, marked sent (the server asked, so it had
/// the request).
pub async fn answer_input_requests(
    handler: &dyn ClientHandler,
    method: &str,
    requests: &Map<String, Value>,
    limit: Duration,
    deadline: Option<Instant>,
) -> Result<Map<String, Value>, Error> {
    // A round answered whole gets the time its requests would get one by one.
    let rounds = u32::try_from(requests.len().max(1)).unwrap_or(u32::MAX);
    let mut until = mcp_core::time::deadline_after(Instant::now(), limit.saturating_mul(rounds));
    if let Some(deadline) = deadline {
        until = until.min(deadline);
    }
    let whole = tokio::time::timeout_at(until, handler.answer_input_round(method, requests))
        .await
        .map_err(|_| {
            Error::timeout(format!(
                "{method}: the client did not answer the server's input requests before the call's deadline"
            ))
            .with_delivery(Delivery::Sent)
        })?;
    if let Some(answered) = whole {
        return answered.map_err(|e| {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "{method}: the client could not answer the server's input requests: {}",
                    e.message
                ),
            )
            .with_delivery(Delivery::Sent)
        });
    }
    let mut responses = Map::new();
    for (key, request) in requests {
        let input: InputRequest = serde_json::from_value(request.clone()).map_err(|e| {
            Error::protocol(format!(
                "{method}: input request {key:?} is not a request: {e}"
            ))
        })?;
        let as_request = Request::new(
            RequestId::String(key.as_str().into()),
            input.method.clone(),
            input.params.map(Payload::Value),
        );
        // Within the call's deadline, and never longer than a server request may take.
        let mut until = mcp_core::time::deadline_after(Instant::now(), limit);
        if let Some(deadline) = deadline {
            until = until.min(deadline);
        }
        let answered = tokio::time::timeout_at(until, answer_server_request(handler, as_request))
            .await
            .map_err(|_| {
                Error::timeout(format!(
                    "{method}: the client did not answer input request {key:?} ({}) before the call's deadline",
                    input.method,
                ))
                .with_delivery(Delivery::Sent)
            })?;
        let value = answered
            .map_err(|e: ErrorObject| {
                Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "{method}: the client could not answer input request {key:?} ({}): {}",
                        input.method, e.message
                    ),
                )
                .with_delivery(Delivery::Sent)
            })?
            .into_value()
            .map_err(Error::unencodable)?;
        responses.insert(key.clone(), value);
    }
    Ok(responses)
}
