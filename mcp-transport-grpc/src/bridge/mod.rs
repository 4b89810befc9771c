//! [`GrpcBridge`] (feature `server`): serves `mcp.transport.v1.Mcp/Session` on an address and,
//! for every call, opens one connection to a backend through any
//! [`TransportConnector`](mcp_core::TransportConnector) — a stdio server's `StdioConnector`
//! puts that server on the network — and pipes raw JSON-RPC both ways, with no MCP logic.
//!
//! - `service`: who may call (an optional bearer token) and the backend connection per call.
//! - `pump`: one call's two directions, and how each side's end ends the other.
//!
//! At most [`max_calls`](GrpcBridge::max_calls) calls run at once (each may be a child
//! process); a call past that is answered RESOURCE_EXHAUSTED before any backend is opened.
//!
//! A call ends its backend connection when it ends (the client half-closed: gracefully; the
//! client went away: at once), and the backend's death ends the call with UNAVAILABLE naming
//! why. [`GrpcBridgeHandle::shutdown`] ends every call and backend within its timeout.

mod pump;
mod service;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::sync::lock;
use mcp_core::TransportConnector;
use tokio::sync::{watch, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tonic::transport::server::TcpIncoming;

use crate::config::{DEFAULT_MAX_MESSAGE_SIZE, FRAMING_ALLOWANCE};
use crate::proto::mcp_server::McpServer;
use service::BridgeService;

/// Calls served at once unless [`GrpcBridge::max_calls`] says otherwise.
const DEFAULT_MAX_CALLS: usize = 64;

/// Serves any MCP server over gRPC: configure, then [`serve`](GrpcBridge::serve).
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use std::sync::Arc;
/// use mcp_transport_grpc::GrpcBridge;
/// use mcp_transport_stdio::{StdioConnector, StdioServerConfig};
///
/// let backend = StdioConnector::new(StdioServerConfig::new("mcp-server-everything").arg("stdio"));
/// let bridge = GrpcBridge::new(Arc::new(backend))
///     .require_bearer("s3cret")
///     .serve("127.0.0.1:50051".parse().unwrap())
///     .await?;
/// println!("serving on grpc://{}", bridge.local_addr());
/// tokio::signal::ctrl_c().await?;
/// bridge.shutdown().await;
/// # Ok(()) }
/// ```
pub struct GrpcBridge {
    backend: Arc<dyn TransportConnector>,
    bearer: Option<String>,
    max_message_size: usize,
    max_calls: usize,
    backend_connect_timeout: Duration,
    backend_close_timeout: Duration,
    shutdown_timeout: Duration,
    keepalive_interval: Duration,
    keepalive_timeout: Duration,
    #[cfg(feature = "tls")]
    tls: Option<tonic::transport::ServerTlsConfig>,
}

impl std::fmt::Debug for GrpcBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcBridge")
            .field("backend", &self.backend.transport_name())
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .field("max_message_size", &self.max_message_size)
            .field("max_calls", &self.max_calls)
            .field("backend_connect_timeout", &self.backend_connect_timeout)
            .field("backend_close_timeout", &self.backend_close_timeout)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish_non_exhaustive()
    }
}

impl GrpcBridge {
    /// A bridge to `backend`: each call gets a new connection from it.
    pub fn new(backend: Arc<dyn TransportConnector>) -> GrpcBridge {
        GrpcBridge {
            backend,
            bearer: None,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_calls: DEFAULT_MAX_CALLS,
            backend_connect_timeout: Duration::from_secs(10),
            backend_close_timeout: Duration::from_secs(5),
            shutdown_timeout: Duration::from_secs(10),
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Calls must carry `authorization: Bearer <token>`; others are answered UNAUTHENTICATED.
    pub fn require_bearer(mut self, token: impl Into<String>) -> GrpcBridge {
        self.bearer = Some(token.into());
        self
    }

    /// The largest JSON-RPC message either way (default 16 MiB). A backend answer over it
    /// becomes a JSON-RPC error for its request.
    pub fn max_message_size(mut self, bytes: usize) -> GrpcBridge {
        self.max_message_size = bytes;
        self
    }

    /// How many calls may run at once (default 64; at least 1). Each call holds its own
    /// backend connection — a child process for a stdio backend — from before it connects until
    /// it ends, so this caps what callers can make the bridge start. A call past the cap is
    /// answered RESOURCE_EXHAUSTED and starts nothing; it may be retried once a call ends.
    pub fn max_calls(mut self, calls: usize) -> GrpcBridge {
        self.max_calls = calls.clamp(1, Semaphore::MAX_PERMITS);
        self
    }

    /// How long a call waits for its backend connection (default 10 s).
    pub fn backend_connect_timeout(mut self, timeout: Duration) -> GrpcBridge {
        self.backend_connect_timeout = timeout;
        self
    }

    /// How long a backend connection may take to close (default 5 s); then it is dropped
    /// (a stdio child is killed).
    pub fn backend_close_timeout(mut self, timeout: Duration) -> GrpcBridge {
        self.backend_close_timeout = timeout;
        self
    }

    /// How long [`GrpcBridgeHandle::shutdown`] waits for calls and backends to end before
    /// aborting them (default 10 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> GrpcBridge {
        self.shutdown_timeout = timeout;
        self
    }

    /// Serves TLS (clients use `grpcs://` or `https://`) with this certificate chain and
    /// private key (PEM; PKCS#8, PKCS#1 or SEC1).
    #[cfg(feature = "tls")]
    pub fn tls(
        mut self,
        cert_chain_pem: impl AsRef<[u8]>,
        key_pem: impl AsRef<[u8]>,
    ) -> GrpcBridge {
        let identity = tonic::transport::Identity::from_pem(cert_chain_pem, key_pem);
        self.tls = Some(tonic::transport::ServerTlsConfig::new().identity(identity));
        self
    }

    /// Binds `addr` (port 0 picks a free one) and serves until the handle is shut down or
    /// dropped. Fails when the address cannot be bound or the TLS identity is unusable.
    pub async fn serve(self, addr: SocketAddr) -> std::io::Result<GrpcBridgeHandle> {
        let incoming = TcpIncoming::bind(addr)?.with_nodelay(Some(true));
        let local_addr = incoming.local_addr()?;
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(BridgeShared {
            backend: self.backend,
            bearer: self.bearer.map(|token| format!("Bearer {token}")),
            max_message_size: self.max_message_size,
            max_calls: self.max_calls,
            call_slots: Arc::new(Semaphore::new(self.max_calls)),
            backend_connect_timeout: self.backend_connect_timeout,
            backend_close_timeout: self.backend_close_timeout,
            calls: Mutex::new(JoinSet::new()),
            active: Arc::new(AtomicUsize::new(0)),
            shutdown,
        });
        let limit = self.max_message_size.saturating_add(FRAMING_ALLOWANCE);
        let service = McpServer::new(BridgeService::new(shared.clone()))
            .max_decoding_message_size(limit)
            .max_encoding_message_size(limit);
        let mut stop = shared.shutdown.subscribe();
        let builder = tonic::transport::Server::builder();
        #[cfg(feature = "tls")]
        let secure = self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        let secure = false;
        #[cfg(feature = "tls")]
        let builder = match self.tls {
            Some(tls) => builder.tls_config(tls).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "the gRPC bridge's TLS certificate or key is not usable: {}",
                        crate::status::error_chain(&e)
                    ),
                )
            })?,
            None => builder,
        };
        let server = builder
            .http2_keepalive_interval(Some(self.keepalive_interval))
            .http2_keepalive_timeout(Some(self.keepalive_timeout))
            .serve_with_incoming_shutdown(service, incoming, async move {
                let _ = stop.wait_for(|stopping| *stopping).await;
            });
        let server = tokio::spawn(async move {
            if let Err(e) = server.await {
                tracing::warn!(error = %crate::status::error_chain(&e), "the gRPC bridge stopped serving");
            }
        });
        tracing::debug!(%local_addr, "gRPC bridge serving");
        Ok(GrpcBridgeHandle {
            local_addr,
            secure,
            shared,
            server: Mutex::new(Some(server)),
            shutdown_timeout: self.shutdown_timeout,
        })
    }
}

/// What the service and the handle share.
pub(crate) struct BridgeShared {
    pub(crate) backend: Arc<dyn TransportConnector>,
    /// The whole expected `authorization` value.
    pub(crate) bearer: Option<String>,
    pub(crate) max_message_size: usize,
    /// The cap on calls at once (named in the refusal).
    pub(crate) max_calls: usize,
    /// One permit per running call, held from before its backend connects until it ends.
    pub(crate) call_slots: Arc<Semaphore>,
    pub(crate) backend_connect_timeout: Duration,
    pub(crate) backend_close_timeout: Duration,
    /// Every call's task (aborted when the bridge is dropped).
    pub(crate) calls: Mutex<JoinSet<()>>,
    /// Calls running now.
    pub(crate) active: Arc<AtomicUsize>,
    pub(crate) shutdown: watch::Sender<bool>,
}

impl BridgeShared {
    pub(crate) fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }
}

/// A running bridge. Dropping it stops everything at once; [`shutdown`](Self::shutdown) ends
/// calls with a status first.
pub struct GrpcBridgeHandle {
    local_addr: SocketAddr,
    /// Served with TLS.
    secure: bool,
    shared: Arc<BridgeShared>,
    server: Mutex<Option<JoinHandle<()>>>,
    shutdown_timeout: Duration,
}

impl std::fmt::Debug for GrpcBridgeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcBridgeHandle")
            .field("local_addr", &self.local_addr)
            .field("active_calls", &self.active_calls())
            .finish_non_exhaustive()
    }
}

impl GrpcBridgeHandle {
    /// The address the bridge listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The bridge's URL for clients (`grpc://ip:port`, or `grpcs://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.secure { "grpcs" } else { "grpc" };
        format!("{scheme}://{}", self.local_addr)
    }

    /// Calls running now (each with its backend connection).
    pub fn active_calls(&self) -> usize {
        self.shared.active.load(Ordering::Acquire)
    }

    /// Stops accepting, ends every call with UNAVAILABLE ("the bridge is shutting down") and
    /// closes its backend, then stops the server — within the shutdown timeout, after which
    /// what is left is aborted (backends dropped: a stdio child is killed). Idempotent.
    pub async fn shutdown(&self) {
        let deadline = tokio::time::Instant::now() + self.shutdown_timeout;
        self.shared.shutdown.send_replace(true);
        let mut calls = std::mem::take(&mut *lock(&self.shared.calls));
        let ended = tokio::time::timeout_at(deadline, async {
            while calls.join_next().await.is_some() {}
        })
        .await;
        if ended.is_err() {
            tracing::debug!("gRPC bridge calls did not end in time; aborting them");
        }
        calls.shutdown().await;
        // A call accepted while the shutdown began sees the signal at once; do not wait for it.
        lock(&self.shared.calls).abort_all();
        let server = lock(&self.server).take();
        if let Some(mut server) = server {
            if tokio::time::timeout_at(deadline, &mut server)
                .await
                .is_err()
            {
                server.abort();
            }
        }
    }
}

impl Drop for GrpcBridgeHandle {
    fn drop(&mut self) {
        self.shared.shutdown.send_replace(true);
        if let Some(server) = lock(&self.server).take() {
            server.abort();
        }
        lock(&self.shared.calls).abort_all();
    }
}
