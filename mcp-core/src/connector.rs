//! How to open one more session to a server: the seam through which the pool, the supervisor
//! and the facade connect, whatever the transport.
//!
//! A [`Connector`] knows everything a connection needs — the transport's configuration, the
//! [`ClientHandler`](crate::ClientHandler), the [`SessionOptions`](crate::SessionOptions) — and
//! opens a new, initialized [`ClientSession`] each time it is asked. Reconnecting a server and
//! growing a pool are the same call.

use std::future::Future;
use std::pin::Pin;

use async_trait::async_trait;

use crate::error::Error;
use crate::session::ClientSession;

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
