//! The HTTP+SSE transport (2024-11-05): GET `/sse` + POST `/message?sessionId=`.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use tokio::task::AbortHandle;

use super::session::EventSender;
use super::{
    empty_response, error_response, lock, method_not_allowed, random_hex, read_body, sse_response,
    HttpFixtureState, HttpResponse, MESSAGE_PATH,
};
use crate::server::FixtureServer;

/// One HTTP+SSE session: the SSE connection and its server.
pub(crate) struct HttpSseSession {
    server: FixtureServer,
    events: EventSender,
    router: AbortHandle,
}

impl HttpSseSession {
    /// Stops the router; the stream ends once the session is dropped.
    pub(crate) fn close(&self) {
        self.router.abort();
    }
}

impl Drop for HttpSseSession {
    fn drop(&mut self) {
        self.router.abort();
    }
}

fn message_event(json: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {json}\n\n"))
}

/// GET `/sse`: a new session; the first event names the POST endpoint.
pub(crate) fn handle_sse(
    shared: &Arc<HttpFixtureState>,
    request: &Request<Incoming>,
) -> HttpResponse {
    if request.method() != Method::GET {
        return method_not_allowed("GET");
    }
    let id = random_hex();
    let (events, rx) = tokio::sync::mpsc::unbounded_channel();
    let endpoint = format!("event: endpoint\ndata: {MESSAGE_PATH}?sessionId={id}\n\n");
    // The receiver is alive: this cannot fail.
    let _ = events.send(Bytes::from(endpoint));
    let (server, mut outgoing) = FixtureServer::new(shared.options.clone());
    let routed = events.clone();
    let weak: Weak<HttpFixtureState> = Arc::downgrade(shared);
    let key = id.clone();
    let router = tokio::spawn(async move {
        loop {
            tokio::select! {
                message = outgoing.recv() => match message {
                    Some(message) => {
                        if routed.send(message_event(&message.json)).is_err() {
                            break;
                        }
                    }
                    None => break,
                },
                () = routed.closed() => break,
            }
        }
        tracing::debug!(session = %key, "HTTP+SSE stream closed; session ended");
        drop(routed);
        if let Some(shared) = weak.upgrade() {
            let removed = lock(&shared.http_sse_sessions).remove(&key);
            drop(removed);
        }
    })
    .abort_handle();
    let session = Arc::new(HttpSseSession {
        server,
        events,
        router,
    });
    lock(&shared.http_sse_sessions).insert(id, session);
    sse_response(rx)
}

/// POST `/message?sessionId=ID`: hand the message to the session's server; 202.
pub(crate) async fn handle_message(
    shared: &Arc<HttpFixtureState>,
    request: Request<Incoming>,
) -> HttpResponse {
    if request.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let id = request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("sessionId="))
            .map(str::to_owned)
    });
    let Some(id) = id else {
        return error_response(StatusCode::BAD_REQUEST, "missing sessionId");
    };
    let session = lock(&shared.http_sse_sessions).get(&id).cloned();
    let Some(session) = session.filter(|s| !s.events.is_closed()) else {
        return error_response(StatusCode::NOT_FOUND, "Session not found");
    };
    let body = match read_body(request.into_body()).await {
        Ok(body) => body,
        Err(reject) => return reject.response(),
    };
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return error_response(StatusCode::BAD_REQUEST, "invalid JSON");
    };
    if message.get("method").and_then(|m| m.as_str()) == Some("tools/call")
        && super::calls_tool(message.get("params"), "crash")
    {
        return shared.crash().await;
    }
    session.server.handle_line(&body);
    empty_response(StatusCode::ACCEPTED)
}
