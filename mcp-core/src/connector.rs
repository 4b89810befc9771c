//! How to open one more connection or session to a server: the seam through which the pool,
//! the supervisor and the facade connect, whatever the transport.
//!
//! - [`TransportConnector`]: opens one more *connection* (a [`BoxTransport`]); every transport
//!   crate has one.
//! - [`Connector`]: opens one more initialized [`ClientSession`] — what pools and supervisors
//!   call. [`SessionConnector`] is a transport connector plus the handler and session options.
//!   Reconnecting a server and growing a pool are the same call.
//! - [`TransportFactory`]: makes transport connectors from a configured server
//!   ([`TransportSpec`]), so a registry (the facade's, keyed by the configuration's `type`) can
//!   hold transports it does not know.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;

use crate::auth::AuthProvider;
use crate::error::{Error, ErrorKind};
use crate::session::{ClientHandler, ClientSession, SessionOptions};
use crate::transport::BoxTransport;

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

/// How to open one more *connection* to a server, whatever the transport: a new child process,
/// a new WebSocket, a new gRPC stream, a new in-process channel. Every transport crate offers
/// one; [`SessionConnector`] turns it into a [`Connector`] of initialized sessions.
#[async_trait]
pub trait TransportConnector: Send + Sync + 'static {
    /// Opens a connection, ready for a session (not yet initialized). Bounded by the
    /// transport's own connect timeout.
    async fn connect(&self) -> Result<BoxTransport, Error>;

    /// The transport's name, as in OpenTelemetry's `network.transport` (`"pipe"`, `"tcp"`, …),
    /// known before connecting.
    fn transport_name(&self) -> &'static str;
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

/// Where a configured server is, as any configuration format says it, transport-neutral.
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A program to start (stdio).
    Command {
        /// The program (looked up on `PATH` when not a path).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (secret: never shown).
        env: BTreeMap<String, String>,
        /// The working directory.
        cwd: Option<PathBuf>,
    },
    /// A network address.
    Url {
        /// The URL (`https://…`, `wss://…`, …).
        url: String,
        /// Extra headers or metadata (secret: never shown).
        headers: BTreeMap<String, String>,
    },
}

/// Shows names and keys, never environment or header values, and URLs redacted.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Command {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Command")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Endpoint::Url { url, headers } => f
                .debug_struct("Url")
                .field("url", &crate::auth::redact_url(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// One configured server as a [`TransportFactory`] sees it.
#[derive(Clone)]
pub struct TransportSpec {
    /// The server's name (for errors and logs).
    pub server: String,
    /// The configuration's transport `type` (`"stdio"`, `"http"`, `"ws"`, `"grpc"`, …).
    pub kind: String,
    /// Where the server is.
    pub endpoint: Endpoint,
    /// Credentials for transports that send them (HTTP, WebSocket, gRPC).
    pub auth: Option<Arc<dyn AuthProvider>>,
}

impl std::fmt::Debug for TransportSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportSpec")
            .field("server", &self.server)
            .field("kind", &self.kind)
            .field("endpoint", &self.endpoint)
            .field("auth", &self.auth.is_some())
            .finish()
    }
}

impl TransportSpec {
    /// The endpoint's URL, or an error naming the server and kind for a transport that needs
    /// one.
    pub fn url(&self) -> Result<(&str, &BTreeMap<String, String>), Error> {
        match &self.endpoint {
            Endpoint::Url { url, headers } => Ok((url, headers)),
            Endpoint::Command { .. } => Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "server \"{}\": the `{}` transport needs a `url`, not a `command`",
                    self.server, self.kind
                ),
            )),
        }
    }
}

/// Makes [`TransportConnector`]s for the configured servers of the kinds it serves: how a
/// transport crate plugs into a registry (the facade's) without the registry knowing it.
pub trait TransportFactory: Send + Sync + 'static {
    /// The configuration `type`s it serves (`["ws", "websocket"]`).
    fn kinds(&self) -> &'static [&'static str];

    /// The URL schemes that select it for an entry with a `url` and no `type`
    /// (`["ws", "wss"]`); none by default.
    fn url_schemes(&self) -> &'static [&'static str] {
        &[]
    }

    /// A connector for one server. Fails (with a clear error naming the server) when the
    /// entry cannot describe a server of this kind.
    fn connector(&self, spec: &TransportSpec) -> Result<Arc<dyn TransportConnector>, Error>;
}
