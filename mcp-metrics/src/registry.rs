//! [`Metrics`], the registry (one per client), and [`ServerHandle`], what the facade records
//! a server's events through.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::clock::Clock;
use crate::endpoint::{EndpointHandle, EndpointInfo};
use crate::gauges::GaugeSource;
use crate::layer::MetricsLayer;
use crate::server::{read, write, ServerMetrics};
use crate::snapshot::{MetricsSnapshot, ServerSnapshot};
use crate::{CacheKind, MetricsConfig};

/// The metrics of one client's calls, per server, method and tool (see the
/// [crate docs](crate)). A cheap handle: clones share the registry.
///
/// ```
/// # async fn run(session: mcp_session::ClientSession) -> Result<(), mcp_core::Error> {
/// use mcp_core::{Layer, McpServiceExt, RequestOptions};
/// use mcp_metrics::Metrics;
///
/// let metrics = Metrics::new();
/// let service = metrics.layer("github", "tcp").layer(session);
/// service.call_tool("search", None, RequestOptions::new()).await?;
///
/// let snapshot = metrics.snapshot();
/// let github = snapshot.server("github").expect("registered");
/// println!("{} calls, p99 {} µs", github.calls, github.latency.p99_us);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Metrics {
    pub(crate) registry: Arc<Registry>,
}

/// The registry behind every handle.
pub(crate) struct Registry {
    pub(crate) config: MetricsConfig,
    pub(crate) clock: Clock,
    /// In registration order (few servers: a scan finds one).
    servers: RwLock<Vec<Arc<ServerMetrics>>>,
    #[cfg(feature = "opentelemetry")]
    pub(crate) telemetry: Option<crate::otel::Telemetry>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry with the default configuration.
    pub fn new() -> Metrics {
        Metrics::with_config(MetricsConfig::default())
    }

    /// A registry configured by `config`. Its clock starts now: the CPU's counter, or — when
    /// tokio's clock is paused as the registry is made — tokio's clock, so a test drives
    /// latencies and the QPS window by advancing time (make the registry inside the runtime
    /// whose clock the test pauses, after pausing it: a `start_paused` test does both).
    pub fn with_config(config: MetricsConfig) -> Metrics {
        Metrics {
            registry: Arc::new(Registry {
                #[cfg(feature = "opentelemetry")]
                telemetry: crate::otel::Telemetry::new(&config.telemetry),
                config,
                clock: Clock::new(),
                servers: RwLock::default(),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &MetricsConfig {
        &self.registry.config
    }

    /// The layer that measures every call to server `server` (registering the server if it is
    /// new), whose OpenTelemetry `network.transport` is `network_transport` (`pipe` for a
    /// child process's stdio, `tcp` for HTTP, WebSocket and gRPC, `inproc` for an in-process
    /// server).
    pub fn layer(&self, server: &str, network_transport: &str) -> MetricsLayer {
        let handle = self.server(server);
        handle.set_network_transport(network_transport);
        handle.layer()
    }

    /// The handle of server `name`, registered on first use (after the servers already
    /// there).
    pub fn server(&self, name: &str) -> ServerHandle {
        if let Some(server) = self.find(name) {
            return self.handle(server);
        }
        let mut servers = write(&self.registry.servers);
        let server = match servers.iter().find(|s| &*s.name == name) {
            Some(server) => server.clone(),
            None => {
                let server = Arc::new(ServerMetrics::new(name, &self.registry.config));
                servers.push(server.clone());
                server
            }
        };
        drop(servers);
        self.handle(server)
    }

    /// Registers the source of server `server`'s gauges (replacing an earlier one), read at
    /// snapshot time.
    pub fn set_gauges(&self, server: &str, source: Arc<dyn GaugeSource>) {
        self.server(server).set_gauges(source);
    }

    /// Forgets server `name`: it leaves snapshots and the Prometheus output. Layers and
    /// handles still held keep working but record into nothing visible; a server added again
    /// under the name starts from zero. Whether it was registered.
    pub fn remove_server(&self, name: &str) -> bool {
        let mut servers = write(&self.registry.servers);
        let before = servers.len();
        servers.retain(|s| &*s.name != name);
        before != servers.len()
    }

    /// Every server's metrics now: servers in registration order, each server's operations
    /// sorted by method then tool. Gauge sources are read outside every lock of this crate.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let servers = read(&self.registry.servers).clone();
        let second = self.registry.clock.now_second();
        MetricsSnapshot {
            qps_window_seconds: self.registry.config.window_seconds(),
            servers: servers
                .iter()
                .map(|server| ServerSnapshot::of(server, second, &self.registry.config))
                .collect(),
        }
    }

    /// One server's metrics now (what a breaker or router asks about one server), or `None`
    /// when it is not registered.
    pub fn server_snapshot(&self, name: &str) -> Option<ServerSnapshot> {
        let server = self.find(name)?;
        Some(self.handle(server).snapshot())
    }

    fn find(&self, name: &str) -> Option<Arc<ServerMetrics>> {
        read(&self.registry.servers)
            .iter()
            .find(|s| &*s.name == name)
            .cloned()
    }

    fn handle(&self, server: Arc<ServerMetrics>) -> ServerHandle {
        ServerHandle {
            server,
            registry: self.registry.clone(),
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = read(&self.registry.servers)
            .iter()
            .map(|s| s.name.clone())
            .collect();
        f.debug_struct("Metrics")
            .field("servers", &names)
            .field("config", &self.registry.config)
            .finish()
    }
}

/// One server's part of a [`Metrics`] registry: what the facade tells it besides calls —
/// reconnects, token refreshes, failovers, cache lookups, ended sessions, the negotiated
/// protocol version, address and region — its [`layer`](Self::layer) and, for a server routed
/// over several endpoints, each [`endpoint`](Self::endpoint)'s record. Cheap to clone and
/// keep.
#[derive(Clone)]
pub struct ServerHandle {
    pub(crate) server: Arc<ServerMetrics>,
    pub(crate) registry: Arc<Registry>,
}

impl ServerHandle {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.server.name
    }

    /// The layer that measures calls to this server.
    pub fn layer(&self) -> MetricsLayer {
        MetricsLayer::new(self.server.clone(), self.registry.clone())
    }

    /// Counts a new session made after one was lost (not the first).
    pub fn reconnected(&self) {
        self.server.reconnected();
    }

    /// Counts a refreshed access token.
    pub fn token_refreshed(&self) {
        self.server.token_refreshed();
    }

    /// Counts a failover: the server's traffic moved from one endpoint to another.
    pub fn failover(&self) {
        self.server.failed_over();
    }

    /// The record of the server's endpoint at `info.url`, registered on first use (after the
    /// endpoints already there; the same URL again gives the same record, and the `info` it
    /// was first registered with). A server keeps 64 endpoints: one registered beyond them
    /// gets a handle that records into a record no snapshot or export shows.
    pub fn endpoint(&self, info: EndpointInfo) -> EndpointHandle {
        EndpointHandle::new(self.server.endpoint(info), self.registry.clone())
    }

    /// Counts a lookup in one of the facade's caches.
    pub fn cache(&self, cache: CacheKind, hit: bool) {
        self.server.caches.record(cache, hit);
    }

    /// Records a session that ended after `duration`; `error_type` names why when it ended
    /// in an error (an [`ErrorKind::as_str`](mcp_core::ErrorKind::as_str), say), `None` for
    /// a clean close. Recorded as `mcp.client.session.duration` too when OpenTelemetry is on.
    pub fn session_ended(&self, duration: Duration, error_type: Option<&str>) {
        self.server.session_ended(duration, error_type);
        #[cfg(feature = "opentelemetry")]
        if let Some(telemetry) = &self.registry.telemetry {
            telemetry.session_ended(&self.server, duration, error_type);
        }
    }

    /// Registers the source of the server's gauges (replacing an earlier one).
    pub fn set_gauges(&self, source: Arc<dyn GaugeSource>) {
        self.server.set_gauge_source(Some(source));
    }

    /// Forgets the gauge source.
    pub fn clear_gauges(&self) {
        self.server.set_gauge_source(None);
    }

    /// Sets the protocol version the server's sessions negotiated (`mcp.protocol.version`),
    /// or forgets it. The facade sets it after every new session.
    pub fn set_protocol_version(&self, version: Option<&str>) {
        let version = version.map(Arc::from);
        self.server
            .update_info(|info| info.protocol_version = version);
    }

    /// Sets the server's host and port (`server.address`, `server.port`), or forgets them
    /// (a child process has none).
    pub fn set_server_address(&self, address: Option<&str>, port: Option<u16>) {
        let address = address.map(Arc::from);
        self.server.update_info(|info| {
            info.address = address;
            info.port = port;
        });
    }

    /// Sets the region of the endpoint now serving the server's calls (`cloud.region` on its
    /// calls' metrics and spans), or forgets it. The facade sets it beside
    /// [`set_server_address`](Self::set_server_address) whenever the active endpoint changes.
    pub fn set_region(&self, region: Option<&str>) {
        let region = region.map(Arc::from);
        self.server.update_info(|info| info.region = region);
    }

    /// Sets the server's `network.transport`.
    pub fn set_network_transport(&self, network_transport: &str) {
        let unchanged =
            read(&self.server.info).network_transport.as_deref() == Some(network_transport);
        if !unchanged {
            let transport = Some(Arc::from(network_transport));
            self.server
                .update_info(|info| info.network_transport = transport);
        }
    }

    /// The server's metrics now.
    pub fn snapshot(&self) -> ServerSnapshot {
        ServerSnapshot::of(
            &self.server,
            self.registry.clock.now_second(),
            &self.registry.config,
        )
    }
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("name", &self.server.name)
            .finish()
    }
}
