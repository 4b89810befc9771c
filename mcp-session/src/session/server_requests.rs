//! Requests the server sends the client (ping, roots, sampling, elicitation): answered by the
//! session's [`ClientHandler`](super::ClientHandler), each on its own task, at most
//! [`SessionOptions::max_concurrent_server_requests`](super::SessionOptions) at once.

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;

use super::reader::OutboxItem;
use super::{lock, ClientHandler, SessionShared};
use mcp_core::jsonrpc::{codes, ErrorObject, Payload, Request, RequestId, Response};
use mcp_core::types::methods;

/// The JSON-RPC error code of the answer to a server request past the concurrency cap
/// (implementation-defined range).
pub(crate) const BUSY_ERROR_CODE: i64 = -32000;
/// How long a reply may wait for the transport.
const REPLY_SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest string id of a server request the client answers. Every answer echoes its id
/// and may wait in the session's outbox and the transport's send queue (each bounded by count),
/// so a server that sends megabyte ids and reads no answers could otherwise make the client hold
/// a megabyte per queued answer. Real servers use numbers or UUID-sized strings.
pub const MAX_SERVER_REQUEST_ID_BYTES: usize = 1024;

/// Answers one server→client request: `ping` at once; anything else on its own task (it may
/// wait on a human or a model), unless the cap is reached, when the server is told the client
/// is busy.
pub(super) fn handle_server_request(shared: &Arc<SessionShared>, request: Request) {
    if let RequestId::String(id) = &request.id {
        if id.len() > MAX_SERVER_REQUEST_ID_BYTES {
            tracing::warn!(
                method = %request.method,
                id = %request.id,
                "not answering a server request whose id is over {MAX_SERVER_REQUEST_ID_BYTES} bytes"
            );
            return;
        }
    }
    if request.method == methods::PING {
        let reply = Response::success(request.id, Payload::Value(json!({})));
        shared.queue(OutboxItem::Send(reply.into()));
        return;
    }
    let mut tasks = lock(&shared.handler_tasks);
    tasks.retain(|_, task| !task.is_finished());
    if tasks.contains_key(&request.id) {
        drop(tasks);
        let error = ErrorObject::new(
            codes::INVALID_REQUEST,
            format!("a request with id {} is already being handled", request.id),
        );
        shared.queue(OutboxItem::Send(
            Response::error(Some(request.id), error).into(),
        ));
        return;
    }
    let cap = shared.options.max_concurrent_server_requests;
    if tasks.len() >= cap {
        drop(tasks);
        tracing::warn!(
            method = %request.method,
            cap,
            "refusing a server request: too many are being handled already"
        );
        let error = ErrorObject::new(
            BUSY_ERROR_CODE,
            format!(
                "the client is busy: it is already handling {cap} requests from this server; try again later"
            ),
        );
        shared.queue(OutboxItem::Send(
            Response::error(Some(request.id), error).into(),
        ));
        return;
    }
    let id = request.id.clone();
    let task_shared = shared.clone();
    let task = tokio::spawn(async move {
        let id = request.id.clone();
        let limit = task_shared.options.server_request_timeout;
        let method = request.method.clone();
        let answering = answer_server_request(&*task_shared.handler, request);
        let outcome = match tokio::time::timeout(limit, answering).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "the client did not answer {method} within {}",
                    mcp_core::time::human_duration(limit)
                ),
            )),
        };
        let response = match outcome {
            Ok(result) => Response::success(id.clone(), result),
            Err(error) => Response::error(Some(id.clone()), error),
        };
        let send = task_shared.sender.send(response.into());
        match tokio::time::timeout(REPLY_SEND_TIMEOUT, send).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(error = %e, "could not answer a server request"),
            Err(_) => {
                tracing::debug!("the transport did not take the answer to a server request in time")
            }
        }
        // Counted against the cap until the transport took the reply: a server that floods
        // requests and reads no replies must not grow one waiting task per request.
        lock(&task_shared.handler_tasks).remove(&id);
    });
    tasks.insert(id, task.abort_handle());
}

/// Answers one server→client request (or an input request) through `handler`: a method goes
/// to it only when its capability is declared.
pub(super) async fn answer_server_request(
    handler: &dyn ClientHandler,
    request: Request,
) -> Result<Payload, ErrorObject> {
    fn params<T: DeserializeOwned>(request: &Request) -> Result<T, ErrorObject> {
        match &request.params {
            Some(p) => p.deserialize().map_err(|e| {
                ErrorObject::invalid_params(format!("invalid {} params: {e}", request.method))
            }),
            None => Err(ErrorObject::invalid_params(format!(
                "{} needs params",
                request.method
            ))),
        }
    }
    fn encode<T: Serialize>(value: T) -> Result<Payload, ErrorObject> {
        Payload::from_serialize(&value).map_err(|e| ErrorObject::internal(e.to_string()))
    }
    let capabilities = handler.capabilities();
    match request.method.as_str() {
        methods::ROOTS_LIST if capabilities.roots.is_some() => encode(handler.list_roots().await?),
        methods::SAMPLING_CREATE_MESSAGE if capabilities.sampling.is_some() => {
            encode(handler.create_message(params(&request)?).await?)
        }
        methods::ELICITATION_CREATE if capabilities.elicitation.is_some() => {
            encode(handler.elicit(params(&request)?).await?)
        }
        methods::ROOTS_LIST | methods::SAMPLING_CREATE_MESSAGE | methods::ELICITATION_CREATE => {
            Err(ErrorObject::method_not_found(&request.method))
        }
        _ => handler.handle_other(request).await,
    }
}
