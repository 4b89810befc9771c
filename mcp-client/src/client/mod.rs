//! [`McpClient`]: many servers, one catalog, partial availability — the facade's public API.
//! Here the client itself, its options, and its accessors; next door: `calls.rs` (a tool call
//! or prompt routed to its server), `resources.rs` (reads and subscriptions), `lists.rs` (the
//! tool catalog and the prompt and resource lists gathered from every server), `lifecycle.rs`
//! (starting, adding, removing and stopping servers). The per-server machinery lives in
//! `server.rs` (one server), `supervisor/` (its life cycle), `stack.rs` (its call stack),
//! `routing.rs` (finding resources and prompts), `catalog.rs` (qualified names and diffs).

mod calls;
mod lifecycle;
mod lists;
mod resources;

use std::sync::{Arc, Mutex, RwLock};

use mcp_core::types::{Implementation, Resource, ResourceTemplate};
use mcp_core::{BoxService, Delivery, Error, ErrorKind};
use mcp_session::ClientSession;
use tokio::sync::broadcast;

use crate::builder::{McpClientBuilder, SessionOptionsHook};
use crate::catalog::{Catalog, CatalogChange, CatalogTool, ListChange};
use crate::config::ClientConfig;
use crate::handler::ClientNotification;
use crate::llm::{LlmLists, LlmToolFormat, LlmToolList};
use crate::router::Failover;
use crate::server::ManagedServer;
use crate::stack::StackPolicy;
use crate::status::ServerReport;
use crate::supervisor::SupervisionPolicy;

/// The environment variable naming the client's region when neither the builder nor the
/// configuration does.
pub const REGION_VARIABLE: &str = "MCPH_REGION";

/// How the client presents itself and treats its servers.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Sent as `clientInfo` in every `initialize`. Default: `mcp-client` and this crate's version.
    pub client_info: Implementation,
    /// How long closing may take per server in [`McpClient::shutdown`]. Default: 5 s.
    pub shutdown_timeout: std::time::Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: Implementation::new("mcp-client", env!("CARGO_PKG_VERSION")),
            shutdown_timeout: std::time::Duration::from_secs(5),
        }
    }
}

/// A resource and the server that offers it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogResource {
    /// The configured server name.
    pub server: String,
    /// The resource.
    pub resource: Resource,
}

/// A resource template with the server that offers it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogResourceTemplate {
    /// The configured server name.
    pub server: String,
    /// The template.
    pub template: ResourceTemplate,
}

/// Items gathered from every ready server, and the servers that failed to answer.
#[derive(Debug, Clone)]
pub struct FromAllServers<T> {
    /// What the servers answered, in configuration order.
    pub items: T,
    /// Servers that did not answer, with the error.
    pub errors: Vec<(String, Error)>,
}

/// The name [`FromAllServers`] had before.
#[deprecated(since = "0.1.0", note = "renamed `FromAllServers`")]
pub type Gathered<T> = FromAllServers<T>;

/// A harness's connection to all its MCP servers.
///
/// Every enabled server is started in parallel under its own startup timeout, and from then on
/// supervised: a server that dies is restarted (stdio) or reconnected (remote) on a backoff
/// schedule, an unavailable one is probed until it is back, and the catalog follows. Every call
/// goes through the server's call stack (timeout, retry, rate limit, breaker, pool — as the
/// profile and the configuration say).
///
/// **Callers.** One `McpClient` is one caller — one harness, one agent conversation: its
/// sessions and pools are its own and are never shared with another client, and the calls made
/// through it share them. A harness that serves unrelated users (a gateway) makes one client per
/// user, so that a server that keeps state per session never mixes two users' state.
///
/// Dropping the last clone ends every session, pool and child process;
/// [`shutdown`](McpClient::shutdown) does it gracefully.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    servers: RwLock<Vec<Arc<ManagedServer>>>,
    tools: RwLock<Arc<Catalog<CatalogTool>>>,
    /// Serializes catalog rebuilds, so every change is reported once and in order.
    rebuilding: Mutex<()>,
    catalog_changes: broadcast::Sender<CatalogChange>,
    /// The lists handed to models, per format, and the tools' places in them.
    llm: Mutex<LlmLists>,
    list_changes: broadcast::Sender<ListChange>,
    notifications: broadcast::Sender<ClientNotification>,
    options: ClientOptions,
    handler: crate::builder::HandlerFor,
    session_options: Option<SessionOptionsHook>,
    stack: StackPolicy,
    supervision: SupervisionPolicy,
    transports: crate::transports::TransportRegistry,
    metrics: mcp_metrics::Metrics,
    #[cfg(feature = "oauth")]
    oauth: crate::auth::OAuthPolicy,
    /// The client's own region: the builder's, else the configuration's, else `MCPH_REGION`.
    region: Option<String>,
    routing: crate::router::RoutingPolicy,
    failovers: broadcast::Sender<Failover>,
    /// The fleet's shared store, when there is one.
    #[cfg(feature = "fleet")]
    fleet: Option<Arc<mcp_fleet::Fleet>>,
}

use mcp_core::sync::lock;

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

impl McpClient {
    /// Starts every enabled server with default settings; see [`McpClient::builder`] for the
    /// harness's own handler, session options and policies.
    pub async fn start(config: ClientConfig, options: ClientOptions) -> McpClient {
        McpClient::builder(config).options(options).start().await
    }

    /// A builder for a client over `config`.
    pub fn builder(config: ClientConfig) -> McpClientBuilder {
        McpClientBuilder::new(config)
    }

    /// Every configured server with its status, in configuration order.
    pub fn servers(&self) -> Vec<ServerReport> {
        let catalog = self.tools();
        read(&self.inner.servers)
            .iter()
            .map(|s| {
                let tools = catalog
                    .entries()
                    .iter()
                    .filter(|t| t.server == s.config.name)
                    .count();
                s.report(tools)
            })
            .collect()
    }

    /// The tool catalog: every server's tools (after allow/deny lists) under qualified names,
    /// in stable order. A server that is away (reconnecting, unavailable) keeps its last known
    /// tools, so calling one tells the agent it is unavailable rather than unknown; a stopped
    /// server has none. Refreshed on `tools/list_changed` and after every reconnect.
    pub fn tools(&self) -> Arc<Catalog<CatalogTool>> {
        read(&self.inner.tools).clone()
    }

    /// Every change of the tool catalog from now on (added / removed / changed tools).
    pub fn catalog_changes(&self) -> broadcast::Receiver<CatalogChange> {
        self.inner.catalog_changes.subscribe()
    }

    /// The catalog's tools as one JSON array for a model, in a stable order with stable bytes
    /// (see [`LlmToolList`]): built once per catalog and format, and the same list (the same
    /// `Arc`) until the catalog changes — so asking on every agent turn costs a lock and a
    /// clone. [`LlmToolList::after_harness_tools`] puts the harness's own tools first.
    pub fn llm_tools(&self, format: LlmToolFormat) -> Arc<LlmToolList> {
        let mut lists = lock(&self.inner.llm);
        let catalog = self.tools();
        lists.get(&catalog, format)
    }

    /// Every change of a server's prompt or resource list from now on. Kept lists are listed
    /// again soon after the server announces a change (or after a reconnect), and the
    /// difference is reported here; tool changes are [`catalog_changes`](Self::catalog_changes).
    pub fn list_changes(&self) -> broadcast::Receiver<ListChange> {
        self.inner.list_changes.subscribe()
    }

    /// What every server's calls did so far: per server and per method and tool, calls,
    /// errors by kind, latency quantiles, QPS over the last window; per server the breaker,
    /// the pool, cache hits, reconnects, token refreshes and sessions. The same data the
    /// OpenTelemetry and Prometheus exports read ([`metrics_registry`](Self::metrics_registry)).
    pub fn metrics(&self) -> mcp_metrics::MetricsSnapshot {
        self.inner.metrics.snapshot()
    }

    /// The metrics registry itself: for [`PrometheusEndpoint`](mcp_metrics::PrometheusEndpoint)
    /// (feature `prometheus`), `render_prometheus`, or one server's snapshot. Give the builder
    /// your own ([`McpClientBuilder::metrics`]) to export to OpenTelemetry.
    pub fn metrics_registry(&self) -> &mcp_metrics::Metrics {
        &self.inner.metrics
    }

    /// Every move of a server's calls from one endpoint to another from now on (servers with
    /// several `endpoints`): where from, where to, and why. Counted in the metrics too
    /// (`failovers` of the server's snapshot).
    pub fn failovers(&self) -> broadcast::Receiver<Failover> {
        self.inner.failovers.subscribe()
    }

    /// The client's own region, which servers with several endpoints prefer: the builder's
    /// [`region`](McpClientBuilder::region), else the configuration's top-level `"region"`,
    /// else the `MCPH_REGION` environment variable; `None` when none says (no preference).
    pub fn region(&self) -> Option<&str> {
        self.inner.region.as_deref()
    }

    /// Every notification of every server from now on, tagged with the server's name (across
    /// reconnects: the subscriber never has to subscribe again).
    pub fn notifications(&self) -> broadcast::Receiver<ClientNotification> {
        self.inner.notifications.subscribe()
    }

    /// The primary session of a ready server, for anything the facade does not wrap. Calls on
    /// it bypass the server's call stack (no retry, breaker or pool, and no task following: a
    /// tool call the server runs as a task answers with the task's handle).
    pub fn session(&self, server: &str) -> Option<ClientSession> {
        self.inner.server(server).and_then(|s| s.ready_session())
    }

    /// The server's whole call stack (timeout, retry, breaker, pool …) as a service, for
    /// requests the facade does not wrap: [`McpServiceExt`](mcp_core::McpServiceExt) works on it.
    pub fn service(&self, server: &str) -> Option<BoxService> {
        self.inner.server(server).map(|s| s.stack.service())
    }
}

fn server_not_ready(name: &str) -> Error {
    Error::new(
        ErrorKind::ServerUnavailable,
        format!("server \"{name}\" is not ready"),
    )
    .with_delivery(Delivery::NotSent)
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("servers", &self.servers())
            .finish()
    }
}

impl Inner {
    fn server(&self, name: &str) -> Option<Arc<ManagedServer>> {
        read(&self.servers)
            .iter()
            .find(|s| s.config.name == name)
            .cloned()
    }

    /// The server a catalog entry came from (it may have been removed since).
    fn catalog_server(&self, name: &str) -> Result<Arc<ManagedServer>, Error> {
        self.server(name).ok_or_else(|| {
            Error::new(
                ErrorKind::ServerUnavailable,
                format!("no server named {name:?} is configured"),
            )
            .with_delivery(Delivery::NotSent)
        })
    }
}
