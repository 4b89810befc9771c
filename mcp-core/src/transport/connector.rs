//! [`TransportConnector`]: how to open one more connection to a server, whatever the transport.

use async_trait::async_trait;

use super::BoxTransport;
use crate::error::Error;

/// How to open one more *connection* to a server, whatever the transport: a new child process,
/// a new WebSocket, a new gRPC stream, a new in-process channel. Every transport crate offers
/// one; `mcp-session`'s `HandshakeConnector` turns it into a connector of initialized sessions,
/// and the facade's registry makes them from configured servers.
#[async_trait]
pub trait TransportConnector: Send + Sync + 'static {
    /// Opens a connection for a session to initialize, bounded by the transport's connect timeout.
    async fn connect(&self) -> Result<BoxTransport, Error>;

    /// Its OpenTelemetry `network.transport` name (`"pipe"`, `"tcp"`, …), known before connecting.
    fn transport_name(&self) -> &'static str;
}
