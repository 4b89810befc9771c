//! How to open one more initialized session to a server: the seam through which the pool, the
//! supervisor and the facade connect, whatever the transport.
//!
//! - [`SessionConnector`]: opens one more initialized [`ClientSession`] — what pools and supervisors
//!   call. Reconnecting a server and growing a pool are the same call.
//! - [`HandshakeConnector`]: a [`TransportConnector`] (one more connection, from any transport
//!   crate) plus the handler and session options.
//! - [`session_connector_fn`]: a connector from a closure.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_core::{Error, TransportConnector};

use crate::session::{ClientHandler, ClientSession, SessionOptions};

/// Opens new sessions to one server.
#[async_trait]
pub trait SessionConnector: Send + Sync + 'static {
    /// Connects and completes the handshake (bounded by the session options' initialize
    /// timeout). Every call opens a new connection: a new child process over stdio, a new
    /// session over HTTP.
    async fn connect(&self) -> Result<ClientSession, Error>;
}

/// A connector from a closure that returns the connecting future.
pub struct SessionConnectorFn<F>(pub F);

type Connecting = Pin<Box<dyn Future<Output = Result<ClientSession, Error>> + Send>>;

#[async_trait]
impl<F> SessionConnector for SessionConnectorFn<F>
where
    F: Fn() -> Connecting + Send + Sync + 'static,
{
    async fn connect(&self) -> Result<ClientSession, Error> {
        (self.0)().await
    }
}

/// Wraps `f` (which returns a boxed connecting future) as a [`SessionConnector`].
pub fn session_connector_fn<F>(f: F) -> SessionConnectorFn<F>
where
    F: Fn() -> Connecting + Send + Sync + 'static,
{
    SessionConnectorFn(f)
}

/// A [`TransportConnector`] plus what every session of the server shares (the handler, the
/// session options): a [`SessionConnector`] of initialized sessions.
pub struct HandshakeConnector {
    transport: Arc<dyn TransportConnector>,
    handler: Arc<dyn ClientHandler>,
    options: SessionOptions,
}

impl HandshakeConnector {
    /// Sessions over `transport`'s connections.
    pub fn new(
        transport: Arc<dyn TransportConnector>,
        handler: Arc<dyn ClientHandler>,
        options: SessionOptions,
    ) -> HandshakeConnector {
        HandshakeConnector {
            transport,
            handler,
            options,
        }
    }

    /// The transport connector.
    pub fn transport(&self) -> &Arc<dyn TransportConnector> {
        &self.transport
    }
}

impl std::fmt::Debug for HandshakeConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandshakeConnector")
            .field("transport", &self.transport.transport_name())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl SessionConnector for HandshakeConnector {
    async fn connect(&self) -> Result<ClientSession, Error> {
        let transport = self.transport.connect().await?;
        ClientSession::connect_shared(transport, self.handler.clone(), self.options.clone()).await
    }
}
