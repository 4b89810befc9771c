//! The HTTP+SSE transport of protocol 2024-11-05: a GET opens an SSE stream whose first event,
//! `endpoint`, names the URL to POST every client message to; every server message — responses
//! included — arrives as a `message` event on that stream. The stream is the session: when it
//! ends, the session is over (no resumption in this protocol revision).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use http::header::{HeaderMap, HeaderValue, ACCEPT};
use http::{Method, StatusCode};
use mcp_core::{
    Message, Transport, TransportCapabilities, TransportError, TransportErrorKind, TransportSender,
};
use tokio::task::AbortHandle;

use crate::client::{HttpResponse, Target};
use crate::config::HttpServerConfig;
use crate::exchange::{message_body, status_error, unexpected_encoding, Exchange};
use crate::sse::SseParser;
use crate::streamable::{
    event_message, incoming_channel, HttpReceiver, Incoming, PostError, INCOMING_QUEUE,
};

/// An MCP server reached over the 2024-11-05 HTTP+SSE transport.
pub struct HttpSseTransport {
    sender: HttpSseSender,
    receiver: HttpReceiver,
}

impl HttpSseTransport {
    /// Opens the SSE stream at `config.url` and waits (up to the connect timeout) for the
    /// `endpoint` event; the endpoint must have the same origin as the stream.
    pub async fn connect(config: HttpServerConfig) -> Result<HttpSseTransport, TransportError> {
        let (incoming, receiver) = incoming_channel(INCOMING_QUEUE);
        let shared = HttpSseState::connect(config, incoming).await?;
        Ok(HttpSseTransport {
            sender: HttpSseSender { shared },
            receiver,
        })
    }
}

impl Transport for HttpSseTransport {
    type Sender = HttpSseSender;
    type Receiver = HttpReceiver;

    fn split(self) -> (HttpSseSender, HttpReceiver) {
        (self.sender, self.receiver)
    }
}

use mcp_core::sync::lock;

pub(crate) struct HttpSseState {
    exchange: Exchange,
    display_url: String,
    endpoint: Target,
    stream: Mutex<Option<AbortHandle>>,
    closed: AtomicBool,
}

impl Drop for HttpSseState {
    fn drop(&mut self) {
        if let Some(stream) = lock(&self.stream).take() {
            stream.abort();
        }
    }
}

fn connect_error(url: &str, why: impl std::fmt::Display) -> TransportError {
    TransportError::fatal(
        TransportErrorKind::Connect,
        format!("HTTP+SSE at {url}: {why}"),
    )
}

impl HttpSseState {
    pub(crate) async fn connect(
        config: HttpServerConfig,
        incoming: Incoming,
    ) -> Result<Arc<HttpSseState>, TransportError> {
        let stream_target = config.target()?;
        let exchange = Exchange::new(&config)?;
        let display_url = exchange.display_url.clone();
        let sse_url = stream_target.url().clone();
        let accept_events = |headers: &mut HeaderMap| {
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        };
        let open = async {
            let mut response = exchange
                .send(Method::GET, &stream_target, &accept_events, None)
                .await
                .map_err(|e| match e.kind() {
                    TransportErrorKind::Unauthorized => TransportError::fatal(
                        TransportErrorKind::Unauthorized,
                        format!("HTTP+SSE: {}", e.message()),
                    ),
                    _ => connect_error(&display_url, e.message()),
                })?;
            let status = response.status();
            if !status.is_success() {
                return Err(connect_error(
                    &display_url,
                    format!("HTTP {}", status.as_u16()),
                ));
            }
            if let Some(encoded) = unexpected_encoding(response.headers(), &display_url) {
                return Err(TransportError::fatal(encoded.kind(), encoded.message()));
            }
            // One stream answers every request: a discarded answer must still fail its request.
            let mut parser = SseParser::new(config.max_message_size).keeping_discarded();
            loop {
                while let Some(event) = parser.next_event() {
                    if event.event_type() == "endpoint" {
                        let endpoint = sse_url.join(event.data.trim()).map_err(|e| {
                            connect_error(&display_url, format!("invalid endpoint: {e}"))
                        })?;
                        if endpoint.origin() != sse_url.origin() {
                            return Err(connect_error(
                                &display_url,
                                "the endpoint event names another origin; refusing to send messages there",
                            ));
                        }
                        let endpoint = Target::new(endpoint).map_err(|why| {
                            connect_error(&display_url, format!("invalid endpoint: {why}"))
                        })?;
                        return Ok((response, parser, endpoint));
                    }
                }
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        let _ = parser.feed(&chunk);
                    }
                    Ok(None) => {
                        return Err(connect_error(
                            &display_url,
                            "the stream ended before the endpoint event",
                        ))
                    }
                    Err(e) => return Err(connect_error(&display_url, e)),
                }
            }
        };
        let (response, parser, endpoint) = tokio::time::timeout(config.connect_timeout, open)
            .await
            .map_err(|_| {
                connect_error(&display_url, "no endpoint event within the connect timeout")
            })??;
        let shared = Arc::new(HttpSseState {
            exchange,
            display_url,
            endpoint,
            stream: Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        let task = tokio::spawn(read_stream(
            shared.display_url.clone(),
            response,
            parser,
            incoming,
        ));
        *lock(&shared.stream) = Some(task.abort_handle());
        Ok(shared)
    }

    /// POSTs one message to the endpoint; the answer comes on the stream.
    pub(crate) async fn post(&self, message: Message) -> Result<(), PostError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(TransportError::fatal(
                TransportErrorKind::Closed,
                format!("the connection to {} is closed", self.display_url),
            )
            .into());
        }
        let body = message_body(&message)?;
        let response = self
            .exchange
            .send(
                Method::POST,
                &self.endpoint,
                &|_: &mut HeaderMap| {},
                Some(body),
            )
            .await?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let kind = match status {
            // The stream is the session: a forgotten one cannot be re-initialized here.
            StatusCode::NOT_FOUND => TransportErrorKind::PeerGone,
            _ => TransportErrorKind::Io,
        };
        Err(PostError {
            status: Some(status),
            error: status_error(response, &self.display_url, kind).await,
        })
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(stream) = lock(&self.stream).take() {
            stream.abort();
        }
    }
}

/// Forwards every `message` event of the session's stream; when the stream ends, the session
/// is over and the reader is told (a fatal error).
async fn read_stream(
    display_url: String,
    mut response: HttpResponse,
    mut parser: SseParser,
    incoming: Incoming,
) {
    let why = loop {
        while let Some(event) = parser.next_event() {
            if event.event_type() != "message" || event.data.is_empty() {
                continue;
            }
            let item = event_message(event.data, &display_url);
            if incoming.send(item).await.is_err() {
                return;
            }
        }
        match response.chunk().await {
            Ok(Some(chunk)) => {
                // An oversized event is reported once its end is seen, for the request named
                // at either end of it (the feed error itself names no request).
                let _too_large = parser.feed(&chunk);
                while let Some(discarded) = parser.next_discarded() {
                    let error = discarded.error(parser.max_event_bytes());
                    if incoming.send(Err(error)).await.is_err() {
                        return;
                    }
                }
            }
            Ok(None) => break "the server ended the SSE stream".to_owned(),
            Err(e) => break format!("the SSE stream failed: {e}"),
        }
    };
    let _ = incoming
        .send(Err(TransportError::fatal(
            TransportErrorKind::PeerGone,
            format!("{display_url}: {why}"),
        )))
        .await;
}

/// The sending half of a [`HttpSseTransport`].
pub struct HttpSseSender {
    shared: Arc<HttpSseState>,
}

impl Drop for HttpSseSender {
    fn drop(&mut self) {
        self.shared.close();
    }
}

#[async_trait]
impl TransportSender for HttpSseSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.shared.post(message).await.map_err(|e| e.error)
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.shared.close();
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("tcp").with_modern_era(false)
    }
}
