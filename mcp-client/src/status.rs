//! What state each configured server is in.

use mcp_core::types::Implementation;
use mcp_core::ProtocolVersion;

/// The visible state of one server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Connecting and initializing.
    Starting,
    /// Initialized; its tools are in the catalog.
    Ready,
    /// Could not start, or died; `reason` says why (exit status, stderr tail, timeout, …).
    Failed {
        /// What happened.
        reason: String,
    },
    /// Turned off in the configuration.
    Disabled,
}

impl ServerStatus {
    /// A one-word label: `starting`, `ready`, `failed`, `disabled`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerStatus::Starting => "starting",
            ServerStatus::Ready => "ready",
            ServerStatus::Failed { .. } => "failed",
            ServerStatus::Disabled => "disabled",
        }
    }

    /// True when the server can take calls.
    pub fn is_ready(&self) -> bool {
        matches!(self, ServerStatus::Ready)
    }
}

/// A snapshot of one server for status displays.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    /// The configured name.
    pub name: String,
    /// Its state.
    pub status: ServerStatus,
    /// `stdio`, `http`, `sse` or `url`.
    pub transport: &'static str,
    /// Tools it contributes to the catalog (after allow/deny lists).
    pub tools: usize,
    /// What the server said about itself in `initialize`.
    pub server_info: Option<Implementation>,
    /// The negotiated protocol version.
    pub protocol_version: Option<ProtocolVersion>,
}
