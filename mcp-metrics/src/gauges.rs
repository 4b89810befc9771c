//! What the facade knows and the layer cannot see — breaker state, pool occupancy, each
//! endpoint's routing state — read at snapshot time through a [`GaugeSource`] registered per
//! server.

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
/// use mcp_metrics::{EndpointGauges, EndpointInfo, Metrics, PoolGauges, ServerGauges};
///
/// let metrics = Metrics::new();
/// metrics.set_gauges(
///     "github",
///     Arc::new(|| ServerGauges {
///         breaker: Some("closed".into()),
///         pool: Some(PoolGauges { connections: 2, in_use: 1, idle: 1, ..Default::default() }),
///         ..Default::default()
///     }),
/// );
/// let snapshot = metrics.snapshot();
/// assert_eq!(snapshot.servers[0].breaker.as_deref(), Some("closed"));
///
/// // A routed server's endpoints: their gauges are matched to their records by URL.
/// let eu = "https://eu.api.example.com/mcp";
/// metrics.server("routed").endpoint(EndpointInfo { url: eu.into(), ..Default::default() });
/// metrics.set_gauges(
///     "routed",
///     Arc::new(move || ServerGauges {
///         endpoints: vec![EndpointGauges {
///             url: eu.into(),
///             state: "active".into(),
///             active: true,
///             breaker: Some("closed".into()),
///         }],
///         ..Default::default()
///     }),
/// );
/// let routed = metrics.server_snapshot("routed").unwrap();
/// assert_eq!(routed.endpoints[0].state.as_deref(), Some("active"));
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
    /// Each endpoint's routing state, when the server has several (matched to the records
    /// [`ServerHandle::endpoint`](crate::ServerHandle::endpoint) made by `url`; one whose URL
    /// was never registered is left out).
    pub endpoints: Vec<EndpointGauges>,
}

/// One endpoint's routing state at one moment (the facade fills it from its router).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EndpointGauges {
    /// The endpoint's URL, as registered in its [`EndpointInfo`](crate::EndpointInfo).
    pub url: String,
    /// The router's name for its state: `active`, `standby`, `probing`, `down` (empty:
    /// unknown).
    pub state: Cow<'static, str>,
    /// Whether it serves the server's calls now.
    pub active: bool,
    /// Its circuit breaker's state (`closed`, `open`, `half_open`), when it has one.
    pub breaker: Option<Cow<'static, str>>,
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
