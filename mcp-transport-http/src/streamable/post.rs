//! POSTing one message: what the message asks of the POST (the modern headers, a
//! cancellation, the session it needs), what the HTTP answer says about the session (an id
//! handed out, a session forgotten, a refusal), and reading the answer — an SSE stream or a
//! JSON body — for the reader or for the caller waiting in place.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderMap, CONTENT_TYPE};
use http::{Method, StatusCode};
use mcp_core::sync::lock;
use mcp_core::types::{methods, CancelledNotificationParams};
use mcp_core::{Message, RequestId, TransportError, TransportErrorKind};

use super::body::{check_session_id, is_event_stream, is_json_or_untyped, parse_json_body};
use super::{
    answers, AnswerTo, PostError, Posted, StreamEnd, StreamableState, GET_STREAM_OPEN_WAIT,
    POST_ACCEPT, SESSION_ID,
};
use crate::client::HttpResponse;
use crate::exchange::{
    message_body, read_limited, status_answer, status_error, unexpected_content_error,
    unexpected_encoding,
};
use crate::sse::SseParser;

/// What one outgoing message asks of its POST, read off it before it is sent.
struct Outgoing {
    modern: bool,
    is_initialize: bool,
    /// The request's id; none for notifications and responses (nothing to read back).
    request_id: Option<RequestId>,
    /// A modern `tools/list`: its answer teaches the tools' header annotations.
    lists_tools: bool,
    /// The `server/discover` probe.
    probing: bool,
    /// The modern request metadata headers.
    metadata: Option<HeaderMap>,
    /// `notifications/initialized`: the standalone stream opens after it.
    opens_session: bool,
    /// `notifications/cancelled`: the request it cancels.
    cancels: Option<RequestId>,
    body: Bytes,
}

impl StreamableState {
    /// POSTs one message and routes what comes back.
    pub(crate) async fn post(self: &Arc<Self>, message: Message) -> Result<(), PostError> {
        self.post_routed(message, AnswerTo::Reader).await.map(drop)
    }

    /// POSTs one message; the answer to a request goes to `answer_to`, everything else the
    /// server sends to the reader.
    pub(super) async fn post_routed(
        self: &Arc<Self>,
        message: Message,
        answer_to: AnswerTo,
    ) -> Result<Posted, PostError> {
        let posted = Posted {
            answer: None,
            forwarded: None,
        };
        if self.closed.load(Ordering::Acquire) {
            return Err(PostError::from(TransportError::fatal(
                TransportErrorKind::Closed,
                format!("the connection to {} is closed", self.display_url),
            )));
        }
        let mut out = self.outgoing(&message)?;
        drop(message);
        if let Some(cancelled) = &out.cancels {
            self.stop_following(cancelled);
            if out.modern {
                // Closing the request's stream was the cancellation.
                return Ok(posted);
            }
        }
        // (After the cancellation's bookkeeping: a request cancelled meanwhile stops being
        // followed all the same.)
        if !out.is_initialize && self.session_lost.load(Ordering::Acquire) {
            return Err(PostError::from(
                TransportError::recoverable(
                    TransportErrorKind::SessionExpired,
                    format!(
                        "{} forgot this session; a new one is being made",
                        self.display_url
                    ),
                )
                .never_sent(),
            ));
        }
        let had_session = lock(&self.session_id).is_some();
        let mut headers = self.request_headers(POST_ACCEPT);
        headers.metadata = out.metadata.take();
        let body = std::mem::take(&mut out.body);
        let response = self.execute(Method::POST, &headers, Some(body)).await?;
        let status = response.status();
        self.note_session(&response, &out, had_session)?;
        if !status.is_success() {
            return self.refused(response, &out, answer_to, posted).await;
        }
        if out.opens_session {
            self.open_get_stream().await;
        }
        let Some(id) = out.request_id else {
            // Notifications and responses: 202 Accepted, nothing to read.
            return Ok(posted);
        };
        if let Some(error) = unexpected_encoding(response.headers(), &self.display_url) {
            return Err(PostError {
                status: Some(status),
                error: error.for_request(Some(id)),
            });
        }
        if is_event_stream(response.headers()) {
            let answer = (answer_to, posted);
            return Ok(self
                .read_event_stream(response, id, out.lists_tools, answer)
                .await);
        }
        if status == StatusCode::ACCEPTED {
            return Err(PostError::from(TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!(
                    "{} accepted a request without answering it (HTTP 202)",
                    self.display_url
                ),
            )));
        }
        self.read_json_answer(response, id, out.lists_tools, (answer_to, posted))
            .await
    }

    /// Reads what `message` asks of its POST, and encodes it.
    fn outgoing(&self, message: &Message) -> Result<Outgoing, PostError> {
        let modern = self.is_modern();
        let (request, notification) = match message {
            Message::Request(r) => (Some(r), None),
            Message::Notification(n) => (None, Some(n.method.as_str())),
            Message::Response(_) => (None, None),
        };
        let method = request.map(|r| r.method.as_str());
        let cancels = match message {
            Message::Notification(n) if n.method == methods::NOTIFICATION_CANCELLED => n
                .params
                .as_ref()
                .and_then(|p| p.deserialize::<CancelledNotificationParams>().ok())
                .map(|p| p.request_id),
            _ => None,
        };
        Ok(Outgoing {
            modern,
            is_initialize: method == Some(methods::INITIALIZE),
            request_id: request.map(|r| r.id.clone()),
            lists_tools: modern && method == Some(methods::TOOLS_LIST),
            probing: method == Some(methods::SERVER_DISCOVER),
            metadata: match request {
                Some(r) if modern => Some(self.metadata_headers(r)?),
                _ => None,
            },
            opens_session: notification == Some(methods::NOTIFICATION_INITIALIZED),
            cancels,
            body: message_body(message)?,
        })
    }

    /// Nobody waits for anything more of `cancelled`: stops following its stream now,
    /// whether or not the cancellation's own POST gets through (a stalled server may take it
    /// and never answer).
    fn stop_following(&self, cancelled: &RequestId) {
        let mut streams = lock(&self.post_streams);
        if let Some(at) = streams.iter().position(|(id, _)| id == cancelled) {
            streams.swap_remove(at).1.abort();
        }
    }

    /// What the answer's status and headers say about the session: the id the server hands
    /// out (legacy era; checked), a new session after `initialize`, or a session the server
    /// forgot (HTTP 404 with an id).
    fn note_session(
        &self,
        response: &HttpResponse,
        out: &Outgoing,
        had_session: bool,
    ) -> Result<(), PostError> {
        let status = response.status();
        if let Some(id) = response.headers().get(SESSION_ID).filter(|_| !out.modern) {
            let mut session = lock(&self.session_id);
            if session.is_none() {
                if let Err(why) = check_session_id(id) {
                    drop(session);
                    return Err(PostError {
                        status: Some(status),
                        error: TransportError::recoverable(
                            TransportErrorKind::InvalidMessage,
                            format!(
                                "{} sent an unusable Mcp-Session-Id: {why}",
                                self.display_url
                            ),
                        )
                        .for_request(out.request_id.clone()),
                    });
                }
                *session = Some(id.clone());
            }
        }
        if out.is_initialize && status.is_success() {
            // A new session (a server may also go on without session ids).
            self.session_lost.store(false, Ordering::Release);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            // The session is gone: the next initialize starts a new one, and the standalone
            // stream is reopened after it. Until then other requests are refused here.
            if lock(&self.session_id).take().is_some() {
                self.session_lost.store(true, Ordering::Release);
            }
            if let Some(get) = lock(&self.get_task).take() {
                get.abort();
            }
            self.get_stream_started.store(false, Ordering::Release);
            return Err(PostError::from(TransportError::recoverable(
                TransportErrorKind::SessionExpired,
                format!(
                    "{} no longer knows this session (HTTP 404)",
                    self.display_url
                ),
            )));
        }
        Ok(())
    }

    /// A POST the server refused (not 2xx). A modern server explains a 4xx with a JSON-RPC
    /// error (unsupported version, header mismatch, unknown method): that is the request's
    /// answer. Anything else is an HTTP failure.
    async fn refused(
        &self,
        response: HttpResponse,
        out: &Outgoing,
        answer_to: AnswerTo,
        mut posted: Posted,
    ) -> Result<Posted, PostError> {
        let status = response.status();
        if !out.modern {
            return Err(PostError {
                status: Some(status),
                error: status_error(response, &self.display_url, TransportErrorKind::Io).await,
            });
        }
        let (error, answer) =
            status_answer(response, &self.display_url, TransportErrorKind::Io).await;
        // While probing, only an error of the MCP-reserved range proves a modern server:
        // anything else (a legacy server's -32000) stays an HTTP failure, so the flavor
        // detection can still try HTTP+SSE.
        let answer = answer.filter(|a| {
            !out.probing
                || a.outcome
                    .as_ref()
                    .err()
                    .is_some_and(|e| mcp_core::types::error_codes::is_modern(e.code))
        });
        if let (Some(mut answer), Some(id)) = (answer, out.request_id.clone()) {
            answer.id = Some(id);
            if answer_to == AnswerTo::Caller {
                posted.answer = Some(Ok(Message::Response(answer)));
                return Ok(posted);
            }
            if let Some(incoming) = self.incoming() {
                let _ = incoming.send(Ok(Message::Response(answer))).await;
                return Ok(posted);
            }
        }
        Err(PostError {
            status: Some(status),
            error,
        })
    }

    /// Opens the standalone stream (once per session) before the session goes on: servers send
    /// server-initiated requests (elicitation, sampling) there and may drop them while no
    /// stream is open. Bounded: a slow or silent server only delays the start a little.
    async fn open_get_stream(self: &Arc<Self>) {
        if self.get_stream_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let (opened_tx, opened) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(self.clone().run_get_stream(opened_tx)).abort_handle();
        *lock(&self.get_task) = Some(task.clone());
        lock(&self.tasks).push(task);
        let _ = tokio::time::timeout(GET_STREAM_OPEN_WAIT, opened).await;
    }

    /// The answer to request `id` is an SSE stream. The answer has usually arrived with the
    /// headers: what is in here is read at once, and the stream followed further (in a task
    /// for the reader, in the caller's future for [`AnswerTo::Caller`]) only when more is to
    /// come.
    async fn read_event_stream(
        self: &Arc<Self>,
        mut response: HttpResponse,
        id: RequestId,
        lists_tools: bool,
        (answer_to, mut posted): (AnswerTo, Posted),
    ) -> Posted {
        let mut parser = SseParser::new(self.config.max_message_size);
        let mut end = StreamEnd::Waiting;
        for pass in 0..2 {
            if pass > 0 {
                // hyper hands the body over one piece at a time, and most servers send a
                // priming event before the answer: let the connection's task run once
                // more. (`yield_now` defers this task until the scheduler has run every
                // ready task, a `LocalSet`'s included; waking itself would not, there.)
                tokio::task::yield_now().await;
            }
            let to = (answer_to, &mut posted.forwarded);
            end = self
                .pump_sse(
                    &mut response,
                    &mut parser,
                    Some(&id),
                    lists_tools,
                    false,
                    to,
                )
                .await;
            if !matches!(end, StreamEnd::Waiting) {
                break;
            }
        }
        if answer_to == AnswerTo::Caller {
            // The stream is followed here, in the caller's future: dropping it closes the
            // stream (the cancellation, in the modern era).
            let to = (answer_to, &mut posted.forwarded);
            let following = self.follow(response, parser, &id, lists_tools, end, to);
            posted.answer = Box::pin(following).await;
            return posted;
        }
        if matches!(
            end,
            StreamEnd::Answered | StreamEnd::Closed | StreamEnd::Kept(_)
        ) {
            return posted;
        }
        // Boxed: the follower's future is about 2 KiB, which spawning would copy around
        // several times.
        let task = tokio::spawn(Box::pin(self.clone().follow_post_stream(
            response,
            parser,
            id.clone(),
            lists_tools,
            end,
        )))
        .abort_handle();
        let mut streams = lock(&self.post_streams);
        streams.retain(|(_, t)| !t.is_finished());
        streams.push((id, task));
        posted
    }

    /// The answer to request `id` is a plain JSON body: read here (bounded) and handed to the
    /// reader, or kept for the caller. Read as JSON whatever its `Content-Type` says (servers
    /// label JSON `text/plain` or `text/json` too); only a body that is not JSON is the label's
    /// fault: something else answered (a login page, a proxy), and the request fails now,
    /// naming what came back, instead of waiting for an answer that cannot come.
    async fn read_json_answer(
        &self,
        response: HttpResponse,
        id: RequestId,
        lists_tools: bool,
        (answer_to, mut posted): (AnswerTo, Posted),
    ) -> Result<Posted, PostError> {
        let status = response.status();
        let content_type = (!is_json_or_untyped(response.headers()))
            .then(|| response.headers().get(CONTENT_TYPE).cloned())
            .flatten();
        let limit = self.config.max_message_size;
        let bytes = read_limited(response, limit)
            .await
            .map_err(|e| PostError::from(e.for_request(Some(id.clone()))))?;
        let parsed = match parse_json_body(&bytes, &self.display_url) {
            Ok(parsed) => parsed,
            Err(why) => {
                let error = match &content_type {
                    Some(content_type) => unexpected_content_error(
                        &self.display_url,
                        status,
                        content_type,
                        &bytes,
                        "application/json or text/event-stream",
                    ),
                    None => TransportError::recoverable(
                        TransportErrorKind::InvalidMessage,
                        format!("{} sent {why}", self.display_url),
                    ),
                };
                // The body was the answer to request `id`: its failure.
                vec![Err(error.for_request(Some(id.clone())))]
            }
        };
        let mut answered = false;
        let Some(incoming) = self.incoming() else {
            // The server answered, so it handled the request: not `Closed` (never sent).
            return Err(PostError::from(TransportError::fatal(
                TransportErrorKind::PeerGone,
                "the transport was closed while the answer was being read",
            )));
        };
        for item in parsed {
            let item = if lists_tools {
                self.learn_tool_headers(item)
            } else {
                item
            };
            let is_answer = match &item {
                Ok(Message::Response(r)) => answers(r, &id),
                Err(e) => e.request_id().is_some_and(|r| r.answers(&id)),
                Ok(_) => false,
            };
            answered |= is_answer;
            if is_answer && answer_to == AnswerTo::Caller {
                posted.answer = Some(item);
                continue;
            }
            match incoming.send(item).await {
                // Only what came before the answer must be dispatched before it.
                Ok(ticket) if posted.answer.is_none() => posted.forwarded = Some(ticket),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if !answered && answer_to == AnswerTo::Reader {
            // A JSON answer is the whole answer: without the response (another id, only
            // notifications), nothing more can come for the request.
            self.send_failure(self.response_missing(&id)).await;
        }
        Ok(posted)
    }
}
