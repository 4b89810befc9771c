//! What state each configured server is in, as the harness (and `mcph servers`) sees it.

use std::time::Duration;

use mcp_core::types::Implementation;
use mcp_core::{ErrorKind, ProtocolVersion};

/// The visible state of one server: where its supervisor is in its life cycle.
///
/// ```text
/// Starting ──▶ Ready ──(session lost)──▶ Reconnecting{1..5} ──▶ Ready
///    │                                        │
///    └──(start failed)──▶ Unavailable ◀───────┘ (last attempt failed)
///                          │    ▲
///                          ▼    │ (probe failed)
///                          Probing ──▶ Ready
/// any attempt refused for credentials ──▶ NeedsCredentials (never retried)
/// shutdown / remove ──▶ Stopped
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Connecting and initializing for the first time.
    Starting,
    /// Initialized; its tools are in the catalog.
    Ready,
    /// The session was lost; attempt `attempt` (from 1) of re-establishing it is under way or
    /// waiting for its turn in the backoff schedule.
    Reconnecting {
        /// Which attempt, from 1.
        attempt: u32,
    },
    /// Every attempt failed: calls fail at once until a probe brings the server back.
    Unavailable {
        /// The last failure (exit status, stderr tail, timeout, …).
        reason: String,
        /// What kind of failure it was: [`ErrorKind::Protocol`] when the server answered but
        /// not as MCP (a web page, an unusable session id, bytes that are not UTF-8);
        /// [`ErrorKind::Network`], [`ErrorKind::Timeout`] or [`ErrorKind::ServerUnavailable`]
        /// when it did not answer.
        kind: ErrorKind,
    },
    /// An unavailable server is being tried again.
    Probing,
    /// The server refused the credentials; it is not retried until they change.
    NeedsCredentials {
        /// What the server said.
        reason: String,
    },
    /// Shut down or removed.
    Stopped,
    /// Turned off in the configuration.
    Disabled,
}

impl ServerStatus {
    /// A one-word label: `starting`, `ready`, `reconnecting`, `unavailable`, `probing`,
    /// `needs-auth`, `stopped`, `disabled`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerStatus::Starting => "starting",
            ServerStatus::Ready => "ready",
            ServerStatus::Reconnecting { .. } => "reconnecting",
            ServerStatus::Unavailable { .. } => "unavailable",
            ServerStatus::Probing => "probing",
            ServerStatus::NeedsCredentials { .. } => "needs-auth",
            ServerStatus::Stopped => "stopped",
            ServerStatus::Disabled => "disabled",
        }
    }

    /// True when the server can take calls right now.
    pub fn is_ready(&self) -> bool {
        matches!(self, ServerStatus::Ready)
    }

    /// True while the supervisor is working on a connection (a call waits for it within its
    /// deadline).
    pub fn is_connecting(&self) -> bool {
        matches!(
            self,
            ServerStatus::Starting | ServerStatus::Reconnecting { .. } | ServerStatus::Probing
        )
    }

    /// The reason, for the states that have one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            ServerStatus::Unavailable { reason, .. }
            | ServerStatus::NeedsCredentials { reason } => Some(reason),
            _ => None,
        }
    }
}

impl std::fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerStatus::Reconnecting { attempt } => write!(f, "reconnecting (attempt {attempt})"),
            other => f.write_str(other.label()),
        }
    }
}

/// A circuit breaker's state, for status displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerStatus {
    /// Calls go through.
    Closed,
    /// Calls fail at once for `retry_in` more.
    Open {
        /// Time left before probes are admitted.
        retry_in: Duration,
    },
    /// A few probe calls are admitted.
    HalfOpen,
}

impl BreakerStatus {
    /// The display of a breaker's state.
    pub(crate) fn of(state: mcp_resilience::BreakerState) -> BreakerStatus {
        match state {
            mcp_resilience::BreakerState::Closed => BreakerStatus::Closed,
            mcp_resilience::BreakerState::Open { remaining } => BreakerStatus::Open {
                retry_in: remaining,
            },
            mcp_resilience::BreakerState::HalfOpen => BreakerStatus::HalfOpen,
        }
    }

    /// `closed`, `open` or `half-open`.
    pub fn label(&self) -> &'static str {
        match self {
            BreakerStatus::Closed => "closed",
            BreakerStatus::Open { .. } => "open",
            BreakerStatus::HalfOpen => "half-open",
        }
    }
}

/// A server's connection pool, for status displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolReport {
    /// Connections open.
    pub connections: u32,
    /// Of which bound to a call.
    pub in_use: u32,
    /// Of which idle.
    pub idle: u32,
    /// Calls that had to wait for a connection, since the start.
    pub waits: u64,
}

/// A snapshot of one server for status displays.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    /// The configured name.
    pub name: String,
    /// Its state.
    pub status: ServerStatus,
    /// `stdio`, `http`, `sse` or `url`.
    pub transport: String,
    /// Tools it contributes to the catalog (after allow/deny lists).
    pub tools: usize,
    /// What the server said about itself in `initialize`.
    pub server_info: Option<Implementation>,
    /// The negotiated protocol version.
    pub protocol_version: Option<ProtocolVersion>,
    /// The server's circuit breaker, when the profile has one.
    pub breaker: Option<BreakerStatus>,
    /// Sessions re-established after one was lost (restarted children, reconnected servers).
    pub reconnects: u64,
    /// The last failure seen (start-up, connection, health check), if any.
    pub last_error: Option<String>,
    /// The server's connection pool, when it has one (a routed server's: the active
    /// endpoint's).
    pub pool: Option<PoolReport>,
    /// A server with several endpoints: each one, in configuration order (empty otherwise).
    /// Its `breaker` above is the active endpoint's.
    pub endpoints: Vec<EndpointReport>,
}

/// Where one endpoint of a routed server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointState {
    /// It carries the server's calls.
    Active,
    /// Healthy, ready to take over.
    Standby,
    /// Not yet probed, or answering its probes again after a failure but not yet for the
    /// failback period.
    Probing,
    /// It failed (a connect, a probe, a call that never reached it) or its breaker is open.
    Down,
}

impl EndpointState {
    /// `active`, `standby`, `probing` or `down`.
    pub fn label(&self) -> &'static str {
        match self {
            EndpointState::Active => "active",
            EndpointState::Standby => "standby",
            EndpointState::Probing => "probing",
            EndpointState::Down => "down",
        }
    }
}

impl std::fmt::Display for EndpointState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One endpoint of a routed server, for status displays.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointReport {
    /// Its URL without user info, query or fragment.
    pub url: String,
    /// Its region label.
    pub region: Option<String>,
    /// Where it stands.
    pub state: EndpointState,
    /// Whether it carries the server's calls (its state is `active` unless it was just found
    /// down and the calls are moving).
    pub active: bool,
    /// Its smoothed probe round trip (what endpoints are compared by), once probed.
    pub latency: Option<Duration>,
    /// Its circuit breaker, when the profile has one.
    pub breaker: Option<BreakerStatus>,
    /// Why it is down, when it is.
    pub down_reason: Option<String>,
}
