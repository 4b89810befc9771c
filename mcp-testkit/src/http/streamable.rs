//! The Streamable HTTP endpoint (`/mcp`): POST, GET, DELETE. See [`crate::http`] for the rules.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::session::{primes, PostRequest, Session, STANDALONE};
use super::{
    accepts, empty_response, error_response, header_str, is_json_content, json_response, lock,
    method_not_allowed, random_hex, read_body, sse_response, HttpFixtureState, HttpResponse,
    Reject, PROTOCOL_VERSION_HEADER, SESSION_HEADER,
};
use crate::jsonrpc::{self, RpcError, INVALID_REQUEST, PARSE_ERROR};
use crate::stdio::handle_line_captured;
use crate::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};

const ALLOW: &str = "GET, POST, DELETE";

pub(crate) async fn handle(
    shared: &Arc<HttpFixtureState>,
    request: Request<Incoming>,
) -> HttpResponse {
    match *request.method() {
        Method::POST => post(shared, request).await,
        Method::GET => get(shared, request.headers()),
        Method::DELETE => delete(shared, request.headers()),
        _ => method_not_allowed(ALLOW),
    }
}

/// Deserialises a present field (even `null`) as `Some`.
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// The parts of an incoming message the transport looks at (borrowed from the body).
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    error: Option<serde::de::IgnoredAny>,
}

/// The parameters the transport looks at; the rest (a tool's arguments) is only skipped over
/// here, not built into values: the fixture server parses the message itself.
#[derive(Default, Deserialize)]
struct Params {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default, rename = "protocolVersion")]
    protocol_version: Option<Value>,
    #[serde(default, rename = "requestId")]
    request_id: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<MetaFields>,
}

/// What the transport reads of `_meta`; the rest (a modern request's client capabilities and
/// info) is skipped, not built into values.
#[derive(Default, Deserialize)]
struct MetaFields {
    #[serde(default, rename = "progressToken")]
    progress_token: Option<Value>,
}

impl Params {
    /// The fields of `raw` (empty when it is not an object).
    fn of(raw: &RawValue) -> Params {
        let text = raw.get();
        if !text.starts_with('{') {
            return Params::default();
        }
        serde_json::from_str(text).unwrap_or_else(|_| {
            // A repeated field (valid JSON, the last one counts): read it as a value.
            let value: Value = serde_json::from_str(text).unwrap_or_default();
            let field = |name: &str| value.get(name).cloned();
            Params {
                name: field("name"),
                protocol_version: field("protocolVersion"),
                request_id: field("requestId"),
                meta: value.get("_meta").map(|meta| MetaFields {
                    progress_token: meta.get("progressToken").cloned(),
                }),
            }
        })
    }

    /// The tool a `tools/call` calls, if it is named by a string.
    fn tool(&self) -> Option<&str> {
        self.name.as_ref().and_then(Value::as_str)
    }
}

enum Kind {
    Request { id: Value, method: String },
    Notification { method: String },
    Response,
}

/// Classifies a POST body; the error is the 400 to answer.
fn classify(body: &[u8]) -> Result<(Kind, Params), Reject> {
    let trimmed = body.trim_ascii();
    if trimmed.first() == Some(&b'[') {
        return Err(Reject::rpc(
            StatusCode::BAD_REQUEST,
            RpcError::new(
                INVALID_REQUEST,
                "Invalid Request: batches are not supported; POST one JSON-RPC message",
            ),
        ));
    }
    let message: Message = match serde_json::from_slice(trimmed) {
        Ok(message) if trimmed.first() == Some(&b'{') => message,
        Ok(_) => {
            return Err(Reject::rpc(
                StatusCode::BAD_REQUEST,
                RpcError::new(INVALID_REQUEST, "Invalid Request: not a JSON object"),
            ))
        }
        Err(e) => {
            let code = match e.classify() {
                serde_json::error::Category::Data => INVALID_REQUEST,
                _ => PARSE_ERROR,
            };
            return Err(Reject::rpc(
                StatusCode::BAD_REQUEST,
                RpcError::new(code, format!("Parse error: {e}")),
            ));
        }
    };
    let invalid = |why: &str| {
        Err(Reject::rpc(
            StatusCode::BAD_REQUEST,
            RpcError::new(INVALID_REQUEST, format!("Invalid Request: {why}")),
        ))
    };
    if message.jsonrpc.as_deref() != Some("2.0") {
        return invalid("`jsonrpc` must be \"2.0\"");
    }
    let kind = match (message.method, message.id) {
        (Some(method), Some(id @ (Value::String(_) | Value::Number(_)))) => {
            Kind::Request { id, method }
        }
        (Some(_), Some(_)) => return invalid("`id` must be a string or a number"),
        (Some(method), None) => Kind::Notification { method },
        (None, Some(_)) if message.result.is_some() || message.error.is_some() => Kind::Response,
        _ => return invalid("neither a request, a notification nor a response"),
    };
    Ok((kind, message.params.map(Params::of).unwrap_or_default()))
}

/// The session a request belongs to, or the HTTP error to answer.
fn find_session(shared: &HttpFixtureState, headers: &HeaderMap) -> Result<Arc<Session>, Reject> {
    if let Some(session) = &shared.stateless {
        return Ok(Arc::clone(session));
    }
    let Some(id) = header_str(headers, SESSION_HEADER) else {
        if let Some(modern) = &shared.modern {
            if header_str(headers, PROTOCOL_VERSION_HEADER) == Some(crate::modern::MODERN_VERSION) {
                return Ok(Arc::clone(modern));
            }
        }
        return Err(Reject::new(
            StatusCode::BAD_REQUEST,
            "Bad Request: missing Mcp-Session-Id header",
        ));
    };
    let mut sessions = lock(&shared.sessions);
    let Some(session) = sessions.get(id).cloned() else {
        return Err(Reject::new(StatusCode::NOT_FOUND, "Session not found"));
    };
    if let Some(limit) = shared.options.http_expire_session_after {
        if session.requests() >= limit {
            tracing::debug!(session = id, "--http-expire-session-after: session expired");
            sessions.remove(id);
            drop(sessions);
            session.close();
            return Err(Reject::new(
                StatusCode::NOT_FOUND,
                "Session not found (expired by --http-expire-session-after)",
            ));
        }
    }
    Ok(session)
}

/// Checks `MCP-Protocol-Version` (absent is fine: the server then assumes 2025-03-26; 2026-07-28
/// only when the fixture serves that era).
fn check_protocol_version(shared: &HttpFixtureState, headers: &HeaderMap) -> Result<(), Reject> {
    match headers.get(PROTOCOL_VERSION_HEADER) {
        None => Ok(()),
        Some(value) => match value.to_str() {
            Ok(v) if SUPPORTED_PROTOCOL_VERSIONS.contains(&v) => Ok(()),
            Ok(v) if v == crate::modern::MODERN_VERSION && shared.options.era.serves_modern() => {
                Ok(())
            }
            _ => Err(Reject::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "Bad Request: unsupported MCP-Protocol-Version {value:?} (supported: {})",
                    SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                ),
            )),
        },
    }
}

fn session_header(response: &mut HttpResponse, session: &Session) {
    if let Some(id) = &session.id {
        if let Ok(value) = HeaderValue::from_str(id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
    }
}

async fn post(shared: &Arc<HttpFixtureState>, request: Request<Incoming>) -> HttpResponse {
    let headers = request.headers();
    // What clients send is usually exactly this: no need to take it apart.
    let usual_accept = headers
        .get(hyper::header::ACCEPT)
        .is_some_and(|v| v.as_bytes() == b"application/json, text/event-stream");
    if !usual_accept
        && (!accepts(headers, "application/json") || !accepts(headers, "text/event-stream"))
    {
        return error_response(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Accept must include application/json and text/event-stream",
        );
    }
    if !is_json_content(headers) {
        return error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let body = match read_body(body).await {
        Ok(body) => body,
        Err(reject) => return reject.response(),
    };
    let (kind, params) = match classify(&body) {
        Ok(classified) => classified,
        Err(reject) => return reject.response(),
    };
    let is_initialize = matches!(&kind, Kind::Request { method, .. } if method == "initialize");
    let new_session = is_initialize
        && shared.stateless.is_none()
        && header_str(&headers, SESSION_HEADER).is_none();
    let session = if new_session {
        let id = random_hex();
        let session = Session::new(Some(id.clone()), &shared.options);
        lock(&shared.sessions).insert(id, Arc::clone(&session));
        session
    } else {
        match find_session(shared, &headers) {
            Ok(session) => session,
            Err(reject) => return reject.response(),
        }
    };
    if !is_initialize {
        if let Err(reject) = check_protocol_version(shared, &headers) {
            return reject.response();
        }
    }
    match kind {
        Kind::Request { id, method } => {
            session.count_request();
            if method == "tools/call" && params.tool() == Some("crash") {
                return shared.crash().await;
            }
            if method == "tools/call" {
                if let Some(fault) = shared.call_faults.next(&shared.options) {
                    tracing::debug!(?fault, "injecting a fault into a tools/call POST");
                    session.server.record_event(&serde_json::json!({
                        "event": "fault",
                        "fault": fault.name(),
                        "id": id,
                    }));
                    return super::faults::respond(fault, shared.options.http_json).await;
                }
            }
            let mut response = if shared.options.http_json {
                json_request(&session, &body, &id).await
            } else {
                sse_request(shared, &session, &body, &id, &method, &params)
            };
            if is_initialize {
                session_header(&mut response, &session);
            }
            response
        }
        Kind::Notification { method } => {
            let cancelled = (method == "notifications/cancelled")
                .then(|| params.request_id.as_ref().map(jsonrpc::id_key))
                .flatten();
            let mut streams = lock(&session.streams);
            for message in handle_line_captured(&session.server, &body) {
                streams.route(message);
            }
            if let Some(key) = cancelled {
                streams.cancelled(&key);
            }
            empty_response(StatusCode::ACCEPTED)
        }
        Kind::Response => {
            let mut streams = lock(&session.streams);
            for message in handle_line_captured(&session.server, &body) {
                streams.route(message);
            }
            empty_response(StatusCode::ACCEPTED)
        }
    }
}

/// A request answered with an SSE stream.
fn sse_request(
    shared: &HttpFixtureState,
    session: &Session,
    body: &Bytes,
    id: &Value,
    method: &str,
    params: &Params,
) -> HttpResponse {
    let token_key = params
        .meta
        .as_ref()
        .and_then(|meta| meta.progress_token.as_ref())
        .filter(|token| token.is_string() || token.is_number())
        .map(jsonrpc::id_key);
    let tool = if method == "tools/call" {
        params.tool()
    } else {
        None
    };
    let asks_client = tool.is_some_and(mcp_fixture::conformance::asks_client);
    let close_after_priming = shared.options.conformance_content
        && tool == Some(mcp_fixture::conformance::RECONNECTION_TOOL);
    let version = if method == "initialize" {
        shared.options.protocol_version.clone().or_else(|| {
            let requested = params.protocol_version.as_ref()?.as_str()?;
            Some(if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested) {
                requested.to_owned()
            } else {
                LATEST_PROTOCOL_VERSION.to_owned()
            })
        })
    } else {
        session.server.negotiated_version()
    };
    let mut streams = lock(&session.streams);
    let (stream, rx) = streams.open_post_stream(PostRequest {
        request_key: jsonrpc::id_key(id),
        token_key,
        asks_client,
        prime: primes(version.as_deref()),
        close_after_priming,
    });
    for message in handle_line_captured(&session.server, body) {
        streams.push_inline(stream, message);
    }
    drop(streams);
    sse_response(rx)
}

/// A request answered with one `application/json` response (`--http-json`).
async fn json_request(session: &Session, body: &Bytes, id: &Value) -> HttpResponse {
    let key = jsonrpc::id_key(id);
    let waiter = {
        let mut streams = lock(&session.streams);
        let waiter = streams.wait_json(key);
        for message in handle_line_captured(&session.server, body) {
            // The response goes to the waiter; anything else to the standalone stream.
            streams.route(message);
        }
        waiter
    };
    match waiter.await {
        Ok(json) => json_response(StatusCode::OK, json),
        Err(_) => error_response(
            StatusCode::NOT_FOUND,
            "Session not found (ended before the response)",
        ),
    }
}

fn get(shared: &HttpFixtureState, headers: &HeaderMap) -> HttpResponse {
    if shared.options.http_no_get {
        return method_not_allowed("POST, DELETE");
    }
    if !accepts(headers, "text/event-stream") {
        return error_response(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Accept must include text/event-stream",
        );
    }
    let session = match find_session(shared, headers) {
        Ok(session) => session,
        Err(reject) => return reject.response(),
    };
    if let Err(reject) = check_protocol_version(shared, headers) {
        return reject.response();
    }
    let rx = match header_str(headers, "last-event-id") {
        Some(last) => {
            let parsed = last
                .split_once('-')
                .and_then(|(s, n)| Some((s.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
            let resumed = parsed.and_then(|(stream, seq)| {
                tracing::debug!(stream, seq, "resuming stream");
                lock(&session.streams).resume(stream, seq)
            });
            match resumed {
                Some(rx) => rx,
                None => {
                    return error_response(
                        StatusCode::BAD_REQUEST,
                        &format!("Bad Request: unknown Last-Event-ID {last:?}"),
                    )
                }
            }
        }
        None => {
            let prime = primes(session.server.negotiated_version().as_deref());
            tracing::debug!(stream = STANDALONE, "standalone stream opened");
            lock(&session.streams).open_standalone(prime)
        }
    };
    sse_response(rx)
}

fn delete(shared: &HttpFixtureState, headers: &HeaderMap) -> HttpResponse {
    if shared.stateless.is_some() {
        return method_not_allowed("GET, POST");
    }
    let session = match find_session(shared, headers) {
        Ok(session) => session,
        Err(reject) => return reject.response(),
    };
    if let Some(id) = &session.id {
        lock(&shared.sessions).remove(id);
    }
    session.close();
    empty_response(StatusCode::OK)
}
