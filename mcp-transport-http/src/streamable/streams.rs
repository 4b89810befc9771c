//! Reading SSE answers: a POST's stream (pumped, followed, resumed in the legacy era) and the
//! standalone GET stream of the legacy era.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use http::header::HeaderValue;
use http::{Method, StatusCode};
use mcp_core::{Message, RequestId, TransportError, TransportErrorKind};

use super::{
    answers, event_message, unresumable, AnswerTo, Item, StreamEnd, StreamableState, DEFAULT_RETRY,
    GET_ACCEPT, MAX_GET_RECONNECTS, MAX_RESUME_ATTEMPTS, MAX_RETRY,
};
use crate::client::HttpResponse;
use crate::exchange::status_error;
use crate::sse::SseParser;

impl StreamableState {
    /// Reads an SSE response, forwarding every message to the reader but the response to
    /// `awaiting`, where it stops (that one is kept for the caller with [`AnswerTo::Caller`]).
    /// Without `wait`, reads only what has arrived already and returns
    /// [`StreamEnd::Waiting`] when that is all.
    pub(super) async fn pump_sse(
        &self,
        response: &mut HttpResponse,
        parser: &mut SseParser,
        awaiting: Option<&RequestId>,
        lists_tools: bool,
        wait: bool,
        to: (AnswerTo, &mut Option<u64>),
    ) -> StreamEnd {
        let (answer_to, forwarded) = to;
        let Some(incoming) = self.incoming() else {
            return StreamEnd::Closed;
        };
        loop {
            while let Some(event) = parser.next_event() {
                // Other event types, and priming events (an id, empty data), carry no message.
                if event.event_type() != "message" || event.data.is_empty() {
                    continue;
                }
                let item = event_message(event.data, &self.display_url);
                // An event that is not a message answers the request its ends name.
                let answers = match (&item, awaiting) {
                    (Ok(Message::Response(r)), Some(id)) => answers(r, id),
                    (Err(e), Some(id)) => e.request_id().is_some_and(|r| r.answers(id)),
                    _ => false,
                };
                let item = if answers && lists_tools {
                    self.learn_tool_headers(item)
                } else {
                    item
                };
                if answers && answer_to == AnswerTo::Caller {
                    return StreamEnd::Kept(item);
                }
                match incoming.send(item).await {
                    Ok(ticket) => *forwarded = Some(ticket),
                    Err(_) => return StreamEnd::Closed,
                }
                if answers {
                    return StreamEnd::Answered;
                }
            }
            let dropped = |why: String, parser: &SseParser| StreamEnd::Dropped {
                last_event_id: parser.last_event_id().map(str::to_owned),
                retry: parser.retry(),
                why,
            };
            let next = if wait {
                response.chunk().await
            } else {
                match response.ready_chunk() {
                    Some(next) => next,
                    None => return StreamEnd::Waiting,
                }
            };
            match next {
                Ok(Some(chunk)) => {
                    if let Err(e) = parser.feed(&chunk) {
                        let error = TransportError::recoverable(
                            TransportErrorKind::MessageTooLarge,
                            format!("{e} (from {})", self.display_url),
                        )
                        .for_request(awaiting.cloned());
                        // As on the reader's side: the discarded event is taken for the
                        // awaited answer.
                        if answer_to == AnswerTo::Caller && awaiting.is_some() {
                            return StreamEnd::Kept(Err(error));
                        }
                        let _ = incoming.send(Err(error)).await;
                    }
                }
                Ok(None) => return dropped("the stream ended".into(), parser),
                Err(e) => return dropped(format!("the stream failed: {e}"), parser),
            }
        }
    }

    /// GET with `Last-Event-ID`: resumes a stream the server dropped.
    pub(super) async fn resume(&self, last_event_id: &str) -> Result<HttpResponse, TransportError> {
        let mut headers = self.request_headers(GET_ACCEPT);
        headers.last_event_id = HeaderValue::from_str(last_event_id).ok();
        let response = self.execute(Method::GET, &headers, None).await?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(status_error(response, &self.display_url, TransportErrorKind::Io).await)
        }
    }

    /// A modern `tools/list` answer: the tools' header annotations are learned, and tools with
    /// invalid ones removed (see [`crate::headers`]).
    pub(super) fn learn_tool_headers(
        &self,
        item: Result<Message, TransportError>,
    ) -> Result<Message, TransportError> {
        let Ok(Message::Response(mut response)) = item else {
            return item;
        };
        if let Ok(payload) = &response.outcome {
            if let Ok(mut value) = payload.clone().into_value() {
                if self.config.tool_headers.learn(&mut value) {
                    response.outcome = Ok(mcp_core::Payload::Value(value));
                }
            }
        }
        Ok(Message::Response(response))
    }

    /// Follows a POST's SSE stream to the response from where `end` left it, resuming it
    /// when it drops (legacy era; a modern stream is never resumed): the task that follows a
    /// stream for the reader.
    pub(super) async fn follow_post_stream(
        self: Arc<Self>,
        response: HttpResponse,
        parser: SseParser,
        id: RequestId,
        lists_tools: bool,
        end: StreamEnd,
    ) {
        let to = (AnswerTo::Reader, &mut None);
        self.follow(response, parser, &id, lists_tools, end, to)
            .await;
    }

    /// Follows a POST's SSE stream to the response from where `end` left it (see
    /// [`follow_post_stream`](StreamableState::follow_post_stream)); the answer, or the failure in its
    /// place, for [`AnswerTo::Caller`].
    pub(super) async fn follow(
        &self,
        mut response: HttpResponse,
        mut parser: SseParser,
        id: &RequestId,
        lists_tools: bool,
        mut end: StreamEnd,
        to: (AnswerTo, &mut Option<u64>),
    ) -> Option<Item> {
        let (answer_to, forwarded) = to;
        let mut attempts = 0;
        loop {
            match end {
                StreamEnd::Kept(item) => return Some(item),
                StreamEnd::Answered | StreamEnd::Closed => return None,
                StreamEnd::Waiting => {
                    end = self
                        .pump_sse(
                            &mut response,
                            &mut parser,
                            Some(id),
                            lists_tools,
                            true,
                            (answer_to, &mut *forwarded),
                        )
                        .await;
                }
                StreamEnd::Dropped {
                    last_event_id,
                    retry,
                    why,
                } => {
                    if self.is_modern() {
                        return self.failed(id, unresumable(&why), answer_to).await;
                    }
                    let Some(last_event_id) = last_event_id else {
                        let why = format!(
                            "{why} before the response, and cannot be resumed (no event id)"
                        );
                        return self.failed(id, why, answer_to).await;
                    };
                    attempts += 1;
                    if attempts > MAX_RESUME_ATTEMPTS || self.closed.load(Ordering::Acquire) {
                        let why = format!(
                            "{why} before the response; resuming failed {MAX_RESUME_ATTEMPTS} times"
                        );
                        return self.failed(id, why, answer_to).await;
                    }
                    tokio::time::sleep(retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
                    // Boxed: the task of every streamed answer is this big, and resuming is rare.
                    match Box::pin(self.resume(&last_event_id)).await {
                        Ok(resumed) => response = resumed,
                        Err(e) => {
                            tracing::debug!(error = %e, "resuming a response stream failed");
                            response =
                                match Box::pin(self.resume_later(&last_event_id, &mut attempts))
                                    .await
                                {
                                    Some(r) => r,
                                    None => {
                                        return self
                                            .failed(id, format!("{why}; {e}"), answer_to)
                                            .await
                                    }
                                };
                        }
                    }
                    parser.finish();
                    end = StreamEnd::Waiting;
                }
            }
        }
    }

    /// Request `id` failed (`why`): the failure for its caller, or sent to the reader.
    pub(super) async fn failed(
        &self,
        id: &RequestId,
        why: String,
        answer_to: AnswerTo,
    ) -> Option<Item> {
        match answer_to {
            AnswerTo::Caller => Some(Err(self.request_failure(id, why))),
            AnswerTo::Reader => {
                self.fail_request(id, why).await;
                None
            }
        }
    }

    /// Retries resumption with the default delay until it works or attempts run out.
    pub(super) async fn resume_later(
        &self,
        last_event_id: &str,
        attempts: &mut u32,
    ) -> Option<HttpResponse> {
        while *attempts < MAX_RESUME_ATTEMPTS && !self.closed.load(Ordering::Acquire) {
            *attempts += 1;
            tokio::time::sleep(DEFAULT_RETRY).await;
            if let Ok(response) = self.resume(last_event_id).await {
                return Some(response);
            }
        }
        None
    }

    pub(super) async fn fail_request(&self, id: &RequestId, why: String) {
        self.send_failure(self.request_failure(id, why)).await;
    }

    /// Hands the reader a request's failure (nothing to do once the transport is closed).
    pub(super) async fn send_failure(&self, error: TransportError) {
        if let Some(incoming) = self.incoming() {
            let _ = incoming.send(Err(error)).await;
        }
    }

    /// Request `id` failed: its stream ended before the answer (`why`).
    pub(super) fn request_failure(&self, id: &RequestId, why: String) -> TransportError {
        TransportError::recoverable(
            TransportErrorKind::PeerGone,
            format!("{}: {why}", self.display_url),
        )
        .for_request(Some(id.clone()))
    }

    /// Request `id` failed: the server answered its POST with JSON that holds no response to
    /// it (another id, only notifications). A JSON answer is the whole answer, so nothing
    /// more can come: a protocol error of the server's, not a lost connection.
    pub(super) fn response_missing(&self, id: &RequestId) -> TransportError {
        TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!(
                "{}: the server's answer to the POST did not include the response",
                self.display_url
            ),
        )
        .for_request(Some(id.clone()))
    }

    /// The standalone GET stream: server-initiated messages; reconnects when it drops; a 405
    /// means the server has none. Never affects the POST channel.
    pub(super) async fn run_get_stream(self: Arc<Self>, opened: tokio::sync::oneshot::Sender<()>) {
        let mut parser = SseParser::new(self.config.max_message_size);
        let mut failures = 0;
        let mut opened = Some(opened);
        loop {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            let mut headers = self.request_headers(GET_ACCEPT);
            headers.last_event_id = parser
                .last_event_id()
                .and_then(|id| HeaderValue::from_str(id).ok());
            let answer = self.execute(Method::GET, &headers, None).await;
            // The first answer (a stream, a 405, a failure) releases the `initialized` send.
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            let delay = match answer {
                Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!(url = %self.display_url, "the server offers no standalone stream (405)");
                    return;
                }
                Ok(mut response) if response.status().is_success() => {
                    failures = 0;
                    match self
                        .pump_sse(
                            &mut response,
                            &mut parser,
                            None,
                            false,
                            true,
                            (AnswerTo::Reader, &mut None),
                        )
                        .await
                    {
                        StreamEnd::Closed
                        | StreamEnd::Answered
                        | StreamEnd::Waiting
                        | StreamEnd::Kept(_) => return,
                        StreamEnd::Dropped { retry, why, .. } => {
                            tracing::debug!(why, "the standalone stream dropped; reconnecting");
                            parser.finish();
                            retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)
                        }
                    }
                }
                Ok(response) => {
                    failures += 1;
                    tracing::debug!(status = %response.status(), "opening the standalone stream failed");
                    DEFAULT_RETRY * failures
                }
                Err(e) => {
                    failures += 1;
                    tracing::debug!(error = %e, "opening the standalone stream failed");
                    DEFAULT_RETRY * failures
                }
            };
            if failures > MAX_GET_RECONNECTS {
                tracing::warn!(url = %self.display_url, "giving up on the standalone stream");
                return;
            }
            tokio::time::sleep(delay.min(MAX_RETRY)).await;
        }
    }
}
