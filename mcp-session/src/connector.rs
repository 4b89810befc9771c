//! How to open one more initialized session to a server: the seam through which the pool, the
//! supervisor and the facade connect, whatever the transport.
//!
//! - [`Connector`]: opens one more initialized [`ClientSession`] — what pools and supervisors
//!   call. Reconnecting a server and growing a pool are the same call.
//! - [`SessionConnector`]: a [`TransportConnector`] (one more connection, from any transport
//!   crate) plus the handler and session options.
//! - [`connector_fn`]: a connector from a closure.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_core::{Error, TransportConnector};

use crate::session::{ClientHandler, ClientSession, SessionOptions};

/// Opens new sessions to one server.
#[async_trait]
pub trait Connector: Send + Sync + 'static {
    /// Connects and completes the handshake (bounded by the session options' initialize
    /// timeout). Every call opens a new connection: a new child process over stdio, a new
    /// session over HTTP.
    async fn connect(&self) -> Result<ClientSession, Error>;
}

/// A connector from a closure that returns the connecting future.
pub struct ConnectorFn<F>(pub F);

type Connecting = Pin<Box<dyn Future<Output = Result<ClientSession, Error>> + Send>>;

#[async_trait]
impl<F> Connector for ConnectorFn<F>
where
    F: Fn() -> Connecting + Send + Sync + 'static,
{
    async fn connect(&self) -> Result<ClientSession, Error> {
        (self.0)().await
    }
}

/// Wraps `f` (which returns a boxed connecting future) as a [`Connector`].
pub fn connector_fn<F>(f: F) -> ConnectorFn<F>
where
    F: Fn() -> Connecting + Send + Sync + 'static,
{
    ConnectorFn(f)
}

/// A [`TransportConnector`] plus what every session of the server shares (the handler, the
/// session options): a [`Connector`] of initialized sessions.
pub struct SessionConnector {
    transport: Arc<dyn TransportConnector>,
    handler: Arc<dyn ClientHandler>,
    options: SessionOptions,
}

impl SessionConnector {
    /// Sessions over `transport`'s connections.
    pub fn new(
        transport: Arc<dyn TransportConnector>,
        handler: Arc<dyn ClientHandler>,
        options: SessionOptions,
    ) -> SessionConnector {
        SessionConnector {
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

impl std::fmt::Debug for SessionConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConnector")
            .field("transport", &self.transport.transport_name())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Connector for SessionConnector {
    async fn connect(&self) -> Result<ClientSession, Error> {
        let transport = self.transport.connect().await?;
        ClientSession::connect_shared(transport, self.handler.clone(), self.options.clone()).await
    }
}
