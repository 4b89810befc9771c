//! [`TransportConnector`]: how to open one more connection to a server, whatever the transport.
//! Every transport crate has one; `mcp-session`'s `SessionConnector` turns it into a connector
//! of initialized sessions, and the facade's registry makes them from configured servers.

use async_trait::async_trait;

use super::BoxTransport;
use crate::error::Error;

/// How to open one more *connection* to a server, whatever the transport: a new child process,
/// a new WebSocket, a new gRPC stream, a new in-process channel. Every transport crate offers
/// one; `mcp-session`'s `SessionConnector` turns it into a connector of initialized sessions.
#[async_trait]
pub trait TransportConnector: Send + Sync + 'static {
    /// Opens a connection, ready for a session (not yet initialized). Bounded by the
    /// transport's own connect timeout.
    async fn connect(&self) -> Result<BoxTransport, Error>;

    /// The transport's name, as in OpenTelemetry's `network.transport` (`"pipe"`, `"tcp"`, …),
    /// known before connecting.
    fn transport_name(&self) -> &'static str;
}
