//! Knobs of a session (a request's own are [`RequestOptions`](mcp_core::RequestOptions)).

use std::time::Duration;

use crate::ErrorCodeTable;
use mcp_core::types::Implementation;
use mcp_core::version::{Era, ProtocolVersion};

use super::EraMemo;

/// The Tasks extension's identifier, which every modern request declares in its
/// `clientCapabilities.extensions` unless [`SessionOptions::tasks`] is off (its types and
/// follower are the `mcp-tasks` crate).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How a [`ClientSession`](super::ClientSession) behaves. `Default` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Who the client says it is. Default: `mcp-core` (the name servers have always seen from
    /// this client layer) and the workspace's version.
    pub client_info: Implementation,
    /// The version the client prefers. A legacy version is the one offered in `initialize`;
    /// with the modern one (the default, [`ProtocolVersion::LATEST`]) a legacy server is
    /// offered [`ProtocolVersion::LATEST_LEGACY`].
    pub protocol_version: ProtocolVersion,
    /// The era to speak: `None` (the default) detects it per server (the `server/discover`
    /// probe, then `initialize` for a legacy server); `Some` skips detection and fails clearly
    /// when the server does not speak that era.
    pub era: Option<Era>,
    /// Shared by the connections to one server: the era the first one found, so later ones
    /// (reconnects, pooled sessions) skip the probe of a legacy server. Default: none.
    pub era_memo: Option<EraMemo>,
    /// How long the `server/discover` probe waits before deciding the server is legacy (some
    /// legacy servers do not answer unknown requests before `initialize`). Default: 5 s.
    pub discover_timeout: Duration,
    /// How many times one modern request is re-issued with answers to the server's input
    /// requests before it fails. Default: 8.
    pub max_input_rounds: u32,
    /// Deadline for `initialize` (connect + handshake). Default: 30 s.
    pub initialize_timeout: Duration,
    /// Deadline of every request unless overridden. Default: 30 s.
    pub request_timeout: Duration,
    /// Whether a progress notification restarts a request's deadline. Default: false.
    pub reset_timeout_on_progress: bool,
    /// With reset-on-progress, the hard cap on a request's total time. Default: 10 min.
    pub max_request_time: Duration,
    /// How many notifications a slow subscriber may fall behind before it misses some.
    /// Default: 1024.
    pub notification_buffer: usize,
    /// Maps server error codes to error kinds. Default: [`ErrorCodeTable::default`].
    pub error_codes: ErrorCodeTable,
    /// How long [`close`](super::ClientSession::close) lets the transport end the connection
    /// gracefully before the session drops it (which releases everything at once). Default: 10 s.
    pub close_timeout: Duration,
    /// Server→client requests (sampling, elicitation, roots) handled at once, until the
    /// transport took each one's answer; past it the server gets a JSON-RPC error instead of
    /// another task. Default: 32.
    pub max_concurrent_server_requests: usize,
    /// How long the handler may take to answer one server→client request (a human answering
    /// an elicitation included); past it the server gets an error. Default: 10 min.
    pub server_request_timeout: Duration,
    /// Declares the Tasks extension ([`TASKS_EXTENSION`]) on every modern request, so that a
    /// server may run a `tools/call` as a task; the call is then answered with the task's
    /// handle (`resultType: "task"`), which the session does not follow: turn it on together
    /// with `mcp-tasks`' follower layer, as the facade does. Default: false.
    pub tasks: bool,
    /// How often a task is polled when the server suggests no `pollIntervalMs`. Not read by
    /// the session: the `mcp-tasks` follower built from these options uses it (as the facade
    /// builds it). Default: 500 ms.
    pub task_poll_interval: Duration,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            client_info: Implementation::new("mcp-core", env!("CARGO_PKG_VERSION")),
            protocol_version: ProtocolVersion::LATEST,
            era: None,
            era_memo: None,
            discover_timeout: Duration::from_secs(5),
            max_input_rounds: 8,
            initialize_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            reset_timeout_on_progress: false,
            max_request_time: Duration::from_secs(600),
            notification_buffer: 1024,
            error_codes: ErrorCodeTable::default(),
            close_timeout: Duration::from_secs(10),
            max_concurrent_server_requests: 32,
            server_request_timeout: Duration::from_secs(600),
            tasks: false,
            task_poll_interval: Duration::from_millis(500),
        }
    }
}

impl SessionOptions {
    /// Sets the client name and version sent in `initialize`.
    pub fn with_client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_info = Implementation::new(name, version);
        self
    }

    /// Speaks exactly `version`: pins its era (no detection), and for a legacy version
    /// offers it in `initialize`.
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.protocol_version = version;
        self.era = Some(version.era());
        self
    }

    /// Pins the era (no detection).
    pub fn with_era(mut self, era: Era) -> Self {
        self.era = Some(era);
        self
    }

    /// Sets how long the `server/discover` probe waits.
    pub fn with_discover_timeout(mut self, timeout: Duration) -> Self {
        self.discover_timeout = timeout;
        self
    }

    /// Shares an era memo with the other connections to the same server.
    pub fn with_era_memo(mut self, memo: EraMemo) -> Self {
        self.era_memo = Some(memo);
        self
    }

    /// Sets the default request deadline.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the handshake deadline.
    pub fn with_initialize_timeout(mut self, timeout: Duration) -> Self {
        self.initialize_timeout = timeout;
        self
    }

    /// Makes progress restart request deadlines, never beyond `max_total`.
    pub fn with_reset_timeout_on_progress(mut self, max_total: Duration) -> Self {
        self.reset_timeout_on_progress = true;
        self.max_request_time = max_total;
        self
    }

    /// Replaces the error-code table.
    pub fn with_error_codes(mut self, table: ErrorCodeTable) -> Self {
        self.error_codes = table;
        self
    }

    /// Declares the Tasks extension or not (see [`tasks`](Self::tasks)).
    pub fn with_tasks(mut self, tasks: bool) -> Self {
        self.tasks = tasks;
        self
    }
}
