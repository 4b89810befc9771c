//! The session over the transport's life: the modern metadata headers, the protocol version,
//! the session id the server may forget, answers in place, close.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use http::header::HeaderMap;
use http::Method;
use mcp_core::sync::lock;
use mcp_core::types::methods;
use mcp_core::{
    InPlaceAnswer, Message, ProtocolVersion, Request, TransportError, TransportErrorKind,
};

use super::{AnswerTo, PostError, StreamableState, POST_ACCEPT};

impl StreamableState {
    /// The modern request metadata headers of one request; a parameter a header cannot carry
    /// refuses the request before it is sent.
    pub(super) fn metadata_headers(
        &self,
        request: &mcp_core::Request,
    ) -> Result<HeaderMap, PostError> {
        crate::headers::request_headers(
            &request.method,
            request.params.as_ref(),
            &self.config.tool_headers,
        )
        .map_err(|why| {
            PostError::from(
                TransportError::recoverable(
                    TransportErrorKind::InvalidMessage,
                    format!("{} was not sent: {why}", request.method),
                )
                .for_request(Some(request.id.clone()))
                .never_sent(),
            )
        })
    }
}

impl StreamableState {
    /// Ends the session: stops the streams, DELETEs the session, ends the receiver.
    pub(crate) async fn close(&self) {
        let shared = self;
        if shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        shared.abort_tasks();
        let session = lock(&shared.session_id).clone();
        if session.is_some() {
            let headers = shared.request_headers(POST_ACCEPT);
            let delete = shared.execute(Method::DELETE, &headers, None);
            match tokio::time::timeout(Duration::from_secs(5), delete).await {
                Ok(Ok(r)) => tracing::debug!(status = %r.status(), "session ended (DELETE)"),
                Ok(Err(e)) => tracing::debug!(error = %e, "DELETE of the session failed"),
                Err(_) => tracing::debug!("DELETE of the session timed out"),
            }
        }
        lock(&shared.incoming).take();
    }

    /// Stops delivering to the receiver without a DELETE (no session was made: another
    /// transport flavor took over).
    pub(crate) fn abandon(&self) {
        self.closed.store(true, Ordering::Release);
        self.abort_tasks();
        lock(&self.incoming).take();
    }

    /// Whether the server gave this client a session (which it may forget), or forgot the one
    /// it gave and a new one is being made.
    pub(crate) fn has_session(&self) -> bool {
        self.session_lost.load(Ordering::Acquire) || lock(&self.session_id).is_some()
    }

    pub(crate) fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        *lock(&self.protocol_version) = version;
    }

    /// The answer to `request` in the caller's task (see
    /// [`TransportSender::answer_in_place`]): the POST is made and its stream read (and
    /// resumed, in the legacy era) in the caller's future, with no reader-task hop for the
    /// answer. Everything else the stream carries still goes to the reader, and the answer
    /// resolves only once the reader has dispatched it (progress comes before the result, as
    /// on the ordinary path). Dropped before it resolves, the future closes the stream (the
    /// cancellation in the modern era; in the legacy era the session also sends
    /// `notifications/cancelled`, through `send`). Closing the transport ends it at once.
    /// A session the server forgot is reported as [`TransportErrorKind::SessionExpired`], for
    /// the session to make a new one and send the request again. The handshakes (`initialize`,
    /// the `server/discover` probe) and the long-lived `subscriptions/listen` take the
    /// ordinary path.
    pub(crate) fn answer_in_place(
        self: &Arc<Self>,
        request: Request,
    ) -> Result<InPlaceAnswer, Request> {
        if self.closed.load(Ordering::Acquire)
            || matches!(
                request.method.as_str(),
                methods::INITIALIZE | methods::SERVER_DISCOVER | methods::SUBSCRIPTIONS_LISTEN
            )
        {
            return Err(request);
        }
        let shared = self.clone();
        Ok(Box::pin(async move {
            let id = request.id.clone();
            // Closing the transport ends the call at once, as it ends the reader.
            let mut closing = shared.closing.subscribe();
            let posted = tokio::select! {
                biased;
                _ = closing.wait_for(|closed| *closed) => {
                    return Err(TransportError::fatal(
                        TransportErrorKind::Io,
                        format!(
                            "the connection to {} was closed while the request was in flight",
                            shared.display_url
                        ),
                    ));
                }
                posted = shared.post_routed(Message::Request(request), AnswerTo::Caller) => {
                    posted.map_err(|e| e.error)?
                }
            };
            if let (Some(ticket), Some(incoming)) = (posted.forwarded, shared.incoming()) {
                incoming.dispatched(ticket).await;
            }
            match posted.answer {
                Some(Ok(Message::Response(response))) => Ok(response.outcome),
                Some(Ok(_)) => Err(TransportError::recoverable(
                    TransportErrorKind::InvalidMessage,
                    format!(
                        "{} answered with a message that is not a response",
                        shared.display_url
                    ),
                )),
                Some(Err(e)) => Err(e),
                None if shared.incoming().is_none_or(|i| i.is_closed()) => {
                    Err(TransportError::fatal(
                        TransportErrorKind::PeerGone,
                        "the transport was closed while the answer was being read",
                    ))
                }
                None => Err(shared.response_missing(&id)),
            }
        }))
    }
}
