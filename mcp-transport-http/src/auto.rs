//! Streamable HTTP with automatic fallback to the HTTP+SSE transport, as the
//! specification describes for clients: the first POST (the session's `server/discover` probe,
//! or `initialize`) answered 400, 404 or 405 without a modern JSON-RPC error → GET the same URL
//! expecting the HTTP+SSE `endpoint` event. What worked can be remembered per server
//! ([`HttpFlavorMemo`]) so later connections skip the probe.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use http::StatusCode;
use mcp_core::{
    InPlaceAnswer, Message, ProtocolVersion, Request, RequestMeta, Transport,
    TransportCapabilities, TransportError, TransportSender,
};

use crate::config::HttpServerConfig;
use crate::http_sse::HttpSseState;
use crate::streamable::{
    incoming_channel, HttpReceiver, Incoming, StreamableState, INCOMING_QUEUE,
};

/// Which HTTP transport a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpFlavor {
    /// Streamable HTTP (2025-03-26 and later).
    Streamable,
    /// HTTP+SSE (2024-11-05).
    HttpSse,
}

/// Remembers the flavor a server was found to speak; share one per server across connections.
#[derive(Debug, Clone, Default)]
pub struct HttpFlavorMemo(Arc<Mutex<Option<HttpFlavor>>>);

impl HttpFlavorMemo {
    /// What was detected, if anything yet.
    pub fn get(&self) -> Option<HttpFlavor> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, flavor: HttpFlavor) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(flavor);
    }
}

/// An MCP server over HTTP, Streamable HTTP or HTTP+SSE, detected on the first message.
pub struct HttpTransport {
    sender: AutoSender,
    receiver: HttpReceiver,
}

impl HttpTransport {
    /// Prepares the transport; `memo` carries what earlier connections to the server found.
    pub fn new(
        config: HttpServerConfig,
        memo: HttpFlavorMemo,
    ) -> Result<HttpTransport, TransportError> {
        let (incoming, receiver) = incoming_channel(INCOMING_QUEUE);
        let streamable = StreamableState::new(config.clone(), incoming.clone())?;
        Ok(HttpTransport {
            sender: AutoSender {
                config,
                memo,
                incoming: Mutex::new(Some(incoming)),
                streamable,
                http_sse: tokio::sync::OnceCell::new(),
                state: Mutex::new(State::Undecided),
            },
            receiver,
        })
    }
}

impl Transport for HttpTransport {
    type Sender = AutoSender;
    type Receiver = HttpReceiver;

    fn split(self) -> (AutoSender, HttpReceiver) {
        (self.sender, self.receiver)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Undecided,
    Decided(HttpFlavor),
}

/// The sending half of an [`HttpTransport`].
pub struct AutoSender {
    config: HttpServerConfig,
    memo: HttpFlavorMemo,
    /// Handed to the HTTP+SSE transport if the server turns out to speak it.
    incoming: Mutex<Option<Incoming>>,
    streamable: Arc<StreamableState>,
    http_sse: tokio::sync::OnceCell<Arc<HttpSseState>>,
    state: Mutex<State>,
}

impl AutoSender {
    fn state(&self) -> State {
        *self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn decide(&self, flavor: HttpFlavor) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = State::Decided(flavor);
        self.memo.set(flavor);
        // Only the chosen flavor may deliver to the receiver (so it ends when that one ends).
        self.incoming
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if flavor == HttpFlavor::HttpSse {
            self.streamable.abandon();
        }
    }

    async fn use_http_sse(&self, message: Message) -> Result<(), TransportError> {
        let incoming = self
            .incoming
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let http_sse = self
            .http_sse
            .get_or_try_init(|| async {
                let incoming = incoming.ok_or_else(|| {
                    TransportError::fatal(
                        mcp_core::TransportErrorKind::Closed,
                        "the transport is closed",
                    )
                })?;
                HttpSseState::connect(self.config.clone(), incoming).await
            })
            .await?;
        self.decide(HttpFlavor::HttpSse);
        http_sse.post(message).await.map_err(|e| e.error)
    }
}

impl Drop for AutoSender {
    fn drop(&mut self) {
        self.streamable.abandon();
        if let Some(http_sse) = self.http_sse.get() {
            http_sse.close();
        }
    }
}

#[async_trait]
impl TransportSender for AutoSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        match self.state() {
            State::Decided(HttpFlavor::Streamable) => {
                self.streamable.post(message).await.map_err(|e| e.error)
            }
            State::Decided(HttpFlavor::HttpSse) => match self.http_sse.get() {
                Some(http_sse) => http_sse.post(message).await.map_err(|e| e.error),
                None => self.use_http_sse(message).await,
            },
            State::Undecided => {
                if self.memo.get() == Some(HttpFlavor::HttpSse) {
                    return self.use_http_sse(message).await;
                }
                match self.streamable.post(message.clone()).await {
                    Ok(()) => {
                        self.decide(HttpFlavor::Streamable);
                        Ok(())
                    }
                    Err(e)
                        if matches!(
                            e.status,
                            Some(
                                StatusCode::BAD_REQUEST
                                    | StatusCode::NOT_FOUND
                                    | StatusCode::METHOD_NOT_ALLOWED
                            )
                        ) =>
                    {
                        tracing::debug!(error = %e.error, "Streamable HTTP refused; trying HTTP+SSE");
                        // Neither flavor took it: the server did answer (the POST's status),
                        // so the error says both and keeps the POST's delivery stage — the
                        // session's era probe reads such a refusal as "not a modern server".
                        self.use_http_sse(message).await.map_err(|http_sse| {
                            TransportError::recoverable(
                                e.error.kind(),
                                format!(
                                    "{}; as HTTP+SSE: {}",
                                    e.error.message(),
                                    http_sse.message()
                                ),
                            )
                        })
                    }
                    Err(e) => Err(e.error),
                }
            }
        }
    }

    fn answer_in_place(
        &self,
        request: Request,
        meta: RequestMeta<'_>,
    ) -> Result<InPlaceAnswer, Request> {
        let _ = meta;
        match self.state() {
            State::Decided(HttpFlavor::Streamable) => self.streamable.answer_in_place(request),
            _ => Err(request),
        }
    }

    async fn close(&self) -> Result<(), TransportError> {
        match self.http_sse.get() {
            Some(http_sse) => http_sse.close(),
            None => self.streamable.close().await,
        }
        self.incoming
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        let state = self.state();
        let can_expire = match state {
            State::Decided(HttpFlavor::Streamable) => self.streamable.has_session(),
            _ => true,
        };
        // Known to be HTTP+SSE (from an earlier connection): the legacy era only.
        let era_legacy_only = state == State::Decided(HttpFlavor::HttpSse)
            || (state == State::Undecided && self.memo.get() == Some(HttpFlavor::HttpSse));
        TransportCapabilities::new("tcp")
            .with_expiring_sessions(can_expire)
            .with_modern_era(!era_legacy_only)
    }

    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        self.streamable.set_protocol_version(version);
    }
}
