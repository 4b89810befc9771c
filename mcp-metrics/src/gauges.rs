//! What the facade knows and the layer cannot see — breaker state, pool occupancy — read at
//! snapshot time through a [`GaugeSource`] registered per server.

use std::borrow::Cow;

use serde::Serialize;

/// Gives a server's gauges when a snapshot is taken (by [`Metrics::snapshot`], the Prometheus
/// rendering). Called without any lock of this crate held, on the snapshot's thread: keep it
/// quick and never block on I/O.
///
/// A closure returning [`ServerGauges`] is one:
///
/// ```
/// use std::sync::Arc;
/// use mcp_metrics::{Metrics, PoolGauges, ServerGauges};
///
/// let metrics = Metrics::new();
/// metrics.set_gauges(
///     "github",
///     Arc::new(|| ServerGauges {
///         breaker: Some("closed".into()),
///         pool: Some(PoolGauges { connections: 2, in_use: 1, idle: 1, ..Default::default() }),
///     }),
/// );
/// let snapshot = metrics.snapshot();
/// assert_eq!(snapshot.servers[0].breaker.as_deref(), Some("closed"));
/// ```
///
/// [`Metrics::snapshot`]: crate::Metrics::snapshot
pub trait GaugeSource: Send + Sync {
    /// The server's gauges now.
    fn gauges(&self) -> ServerGauges;
}

impl<F> GaugeSource for F
where
    F: Fn() -> ServerGauges + Send + Sync,
{
    fn gauges(&self) -> ServerGauges {
        self()
    }
}

/// A server's gauges at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ServerGauges {
    /// The circuit breaker's state (`closed`, `open`, `half_open`: the breaker's own names),
    /// when the server has one.
    pub breaker: Option<Cow<'static, str>>,
    /// The session pool's occupancy, when the server is pooled.
    pub pool: Option<PoolGauges>,
}

/// A session pool's occupancy (the facade fills it from the pool's own statistics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PoolGauges {
    /// Sessions open, in use or idle.
    pub connections: u64,
    /// Sessions bound to a call now.
    pub in_use: u64,
    /// Sessions waiting in the pool for a call.
    pub idle: u64,
    /// Callers waiting for a session now.
    pub waiting: u64,
    /// Checkouts that had to wait, since the pool started (a counter).
    pub waits: u64,
}
