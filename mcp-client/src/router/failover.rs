//! [`Failover`]: the event a harness receives when a server's traffic moves to another endpoint
//! ([`McpClient::failovers`](crate::McpClient::failovers)).

/// One endpoint of a server, as events and status displays name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRef {
    /// Its place in the server's `endpoints` list (from 0).
    pub index: usize,
    /// Its URL without user info, query or fragment.
    pub url: String,
    /// Its region label.
    pub region: Option<String>,
}

/// Why a server's traffic moved to another endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailoverReason {
    /// The endpoint serving the calls stopped answering (its session was lost, a connection
    /// was refused, a probe failed).
    EndpointDown,
    /// The circuit breaker of the endpoint serving the calls opened.
    BreakerOpen,
    /// An endpoint in the client's region is back (it has answered its probes for the failback
    /// period): traffic returned to it.
    Preferred,
    /// Another endpoint of the same region tier answered its probes clearly faster.
    Faster,
}

impl FailoverReason {
    /// `endpoint_down`, `breaker_open`, `preferred` or `faster`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailoverReason::EndpointDown => "endpoint_down",
            FailoverReason::BreakerOpen => "breaker_open",
            FailoverReason::Preferred => "preferred",
            FailoverReason::Faster => "faster",
        }
    }
}

impl std::fmt::Display for FailoverReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A server's calls moved from one endpoint to another: new calls go to a new session on `to`;
/// calls in flight on `from` finish there, and its sessions are closed after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failover {
    /// The configured server.
    pub server: String,
    /// The endpoint left.
    pub from: EndpointRef,
    /// The endpoint now serving the calls.
    pub to: EndpointRef,
    /// Why.
    pub reason: FailoverReason,
}
