//! [`McpClient`]: many servers, one catalog, partial availability — the facade's public API.
//! The per-server machinery lives next door: `server.rs` (one server), `supervisor.rs` (its
//! life cycle), `stack.rs` (its call stack), `routing.rs` (finding resources and prompts),
//! `catalog.rs` (qualified names and diffs).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Instant;

use mcp_core::types::{
    CallToolResult, GetPromptResult, Implementation, LoggingLevel, Prompt, ReadResourceResult,
    Resource,
};
use mcp_core::{
    BoxService, Delivery, Error, ErrorKind, McpService, McpServiceExt, Operation, Payload,
    RequestOptions,
};
use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use mcp_tasks::{TaskOptionsExt, ToolCallOutcome};
use serde_json::Value;
use tokio::sync::{broadcast, Semaphore};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::builder::{McpClientBuilder, SessionOptionsHook};
use crate::catalog::{Catalog, CatalogChange, CatalogPrompt, CatalogTool, ListChange, ListKind};
use crate::config::{ClientConfig, ServerConfig};
use crate::handler::ClientNotification;
use crate::llm::{LlmLists, LlmToolFormat, LlmToolList};
use crate::router::Failover;
use crate::routing::{pick_resource_server, Fetched, ResourceIndex};
use crate::server::{ManagedServer, ServerContext};
use crate::stack::StackPolicy;
use crate::status::{ServerReport, ServerStatus};
use crate::supervisor::{Lists, SupervisionPolicy, SupervisorListener};

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

/// Items gathered from every ready server, and the servers that failed to answer.
#[derive(Debug, Clone)]
pub struct Gathered<T> {
    /// What the servers answered, in configuration order.
    pub items: T,
    /// Servers that did not answer, with the error.
    pub errors: Vec<(String, Error)>,
}

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
    handler: Arc<dyn ClientHandler>,
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

/// How supervisors reach the client (weakly: the client owns them).
struct Listener(Weak<Inner>);

impl SupervisorListener for Listener {
    fn tools_changed(&self, _server: &str) {
        if let Some(inner) = self.0.upgrade() {
            inner.rebuild_tools();
        }
    }

    fn lists_changed(&self, server: &str, which: Lists) {
        if let Some(inner) = self.0.upgrade() {
            Inner::lists_changed(&inner, server, which);
        }
    }
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

    pub(crate) async fn from_builder(builder: McpClientBuilder) -> McpClient {
        let (catalog_changes, _) = broadcast::channel(64);
        let (notifications, _) = broadcast::channel(1024);
        let (list_changes, _) = broadcast::channel(64);
        let (failovers, _) = broadcast::channel(64);
        // The fleet's store: the builder's, else the configuration's; its token store serves
        // OAuth unless the harness chose one.
        #[cfg(feature = "fleet")]
        let (builder, fleet) = {
            let mut builder = builder;
            let fleet = match builder.fleet.take() {
                Some(chosen) => chosen,
                None => crate::fleet::open(&builder.config).unwrap_or_else(|e| {
                    tracing::error!("the fleet store is not used: {e}");
                    None
                }),
            };
            if let Some(fleet) = &fleet {
                builder.oauth = builder
                    .oauth
                    .clone()
                    .with_store_unless_set(fleet.token_store());
            }
            (builder, fleet)
        };
        let region = builder
            .region
            .or_else(|| builder.config.region.clone())
            .or_else(|| std::env::var(REGION_VARIABLE).ok())
            .filter(|r| !r.trim().is_empty());
        let inner = Arc::new(Inner {
            servers: RwLock::new(Vec::new()),
            tools: RwLock::new(Arc::new(Catalog::default())),
            rebuilding: Mutex::new(()),
            catalog_changes,
            llm: Mutex::new(LlmLists::default()),
            list_changes,
            notifications,
            options: builder.options,
            handler: builder.handler,
            session_options: builder.session_options,
            stack: builder.stack,
            supervision: builder.supervision,
            transports: builder.transports,
            metrics: builder.metrics,
            #[cfg(feature = "oauth")]
            oauth: builder.oauth,
            region,
            routing: builder.routing,
            failovers,
            #[cfg(feature = "fleet")]
            fleet,
        });
        let servers: Vec<Arc<ManagedServer>> = builder
            .config
            .servers
            .into_iter()
            .map(|config| inner.build_server(config))
            .collect();
        *write(&inner.servers) = servers.clone();
        let listener: Arc<dyn SupervisorListener> = Arc::new(Listener(Arc::downgrade(&inner)));
        // Bounded parallelism: a file of many servers starts in waves, not all at once.
        // Past tokio's cap a semaphore panics; no file holds that many servers anyway.
        let limit = builder
            .max_concurrent_starts
            .clamp(1, Semaphore::MAX_PERMITS);
        let permits = Arc::new(Semaphore::new(limit));
        let mut starting = JoinSet::new();
        for server in servers {
            let listener = listener.clone();
            // Taken here, so servers start in configuration order. The semaphore is never
            // closed; if it were, the server would start unbounded rather than not at all.
            let permit = permits.clone().acquire_owned().await.ok();
            starting.spawn(async move {
                server.start(listener).await;
                drop(permit);
            });
        }
        while starting.join_next().await.is_some() {}
        // The model's list starts in catalog order, whichever server was ready first.
        lock(&inner.llm).reset();
        inner.rebuild_tools();
        McpClient { inner }
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
    /// requests the facade does not wrap: [`McpServiceExt`] works on it.
    pub fn service(&self, server: &str) -> Option<BoxService> {
        self.inner.server(server).map(|s| s.stack.service.clone())
    }

    /// Calls a tool by its qualified name (`server__tool`) with the server's tool timeout.
    pub async fn call_tool(
        &self,
        qualified_name: &str,
        arguments: Option<Value>,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_with(qualified_name, arguments, RequestOptions::new())
            .await
    }

    /// Calls a tool by its qualified name with per-call options (progress, deadline). Without
    /// an explicit timeout the server's `tool_timeout` applies. The call is retried only when
    /// that is safe: the tool is annotated read-only or idempotent, or the failure proves the
    /// server never received it. A call a 2026-07-28 server runs as a task (Tasks extension)
    /// is followed to its end within the same deadline.
    pub async fn call_tool_with(
        &self,
        qualified_name: &str,
        arguments: Option<Value>,
        options: RequestOptions,
    ) -> Result<CallToolResult, Error> {
        self.traced_tool_call(qualified_name, arguments, options, |payload| {
            let result = payload.into_typed::<CallToolResult>().map_err(|e| {
                Error::protocol(format!("invalid tools/call result: {e}"))
                    .with_delivery(Delivery::Answered)
            })?;
            let is_error = result.is_error();
            Ok((result, is_error))
        })
        .await
    }

    /// Calls a tool by its qualified name, handing back the task when the server runs the call
    /// as one (Tasks extension) instead of following it: poll, wait for or cancel it through
    /// [`service`](Self::service) and [`TasksExt`](crate::tasks::TasksExt).
    pub async fn call_tool_as_task(
        &self,
        qualified_name: &str,
        arguments: Option<Value>,
        options: RequestOptions,
    ) -> Result<ToolCallOutcome, Error> {
        self.traced_tool_call(
            qualified_name,
            arguments,
            options.returning_task(),
            |payload| {
                let outcome = ToolCallOutcome::from_answer(payload, qualified_name)?;
                let is_error = outcome.is_tool_error();
                Ok((outcome, is_error))
            },
        )
        .await
    }

    /// One `tools/call` through the server's stack, in a span with the outcome recorded;
    /// `parse` reads the answer and says whether it is a tool error.
    async fn traced_tool_call<T>(
        &self,
        qualified_name: &str,
        arguments: Option<Value>,
        options: RequestOptions,
        parse: impl FnOnce(Payload) -> Result<(T, bool), Error>,
    ) -> Result<T, Error> {
        // Borrowed from the catalog snapshot (held for the call): a definition can be large.
        let catalog = self.tools();
        let entry = catalog.get(qualified_name).ok_or_else(|| {
            Error::new(
                ErrorKind::ToolNotFound,
                format!("no tool named {qualified_name:?} in the catalog"),
            )
            .with_subject(qualified_name)
            .with_delivery(Delivery::NotSent)
        })?;
        let server = self.inner.catalog_server(&entry.server)?;
        // Found without listing: the tool catalog served it.
        server.metrics.cache(mcp_metrics::CacheKind::Tools, true);
        let operation = Operation::call_tool(&entry.tool.name, arguments)
            .with_idempotent(entry.tool.is_replay_safe())
            .with_options(options);
        let span = tracing::info_span!(
            "mcp.client.operation",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = %entry.tool.name,
            mcp.server.name = %entry.server,
            network.transport = server.network_transport(),
            mcp.outcome = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let started = Instant::now();
        let result = server
            .stack
            .service
            .call(operation)
            .instrument(span.clone())
            .await
            .and_then(parse)
            .map_err(|e| e.with_subject(qualified_name));
        let outcome = match &result {
            Ok((_, true)) => "tool_error",
            Ok(_) => "success",
            Err(e) if e.kind() == ErrorKind::Timeout => "timeout",
            Err(_) => "error",
        };
        span.record("mcp.outcome", outcome);
        match &result {
            Ok((_, true)) => {
                span.record("error.type", "tool_error");
            }
            Err(e) => {
                span.record("error.type", e.kind().as_str());
            }
            Ok(_) => {}
        }
        let _entered = span.enter();
        tracing::info!(
            duration_ms = started.elapsed().as_secs_f64() * 1000.0,
            outcome,
            "tool call finished"
        );
        result.map(|(value, _)| value)
    }

    /// Resources of every ready server, in configuration order. Each server's list is kept
    /// until it announces a change or reconnects (the same list `read_resource` routes by).
    pub async fn resources(&self) -> Gathered<Vec<CatalogResource>> {
        let gathered = self.resource_indexes().await;
        Gathered {
            items: gathered
                .items
                .into_iter()
                .flat_map(|(server, index)| {
                    index
                        .resources
                        .iter()
                        .map(|resource| CatalogResource {
                            server: server.clone(),
                            resource: resource.clone(),
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
            errors: gathered.errors,
        }
    }

    /// Every ready server's resource index, kept or listed.
    async fn resource_indexes(&self) -> Gathered<Vec<(String, Arc<ResourceIndex>)>> {
        let inner = self.inner.clone();
        self.gather("resources/list", move |server| {
            let inner = inner.clone();
            async move {
                let fetched = server.resource_index().await?;
                Ok(inner.noted_resources(&server, fetched))
            }
        })
        .await
    }

    /// Reads a resource. With `server`, from that server; without, from the one ready server
    /// that lists `uri` (or whose resource template's fixed prefix matches it). Each server's
    /// resource list is fetched once and kept until it announces a change.
    ///
    /// With the `resources` feature (`professional` and up) the read goes through the server's
    /// [`ResourceManager`](mcp_resources::ResourceManager): the first read subscribes to the
    /// URI (when the server offers subscriptions), the contents are kept until the server says
    /// they changed or their TTL runs out, and concurrent reads share one request. Without it,
    /// every read asks the server.
    pub async fn read_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<Arc<ReadResourceResult>, Error> {
        let server = self.resource_server(server, uri).await?;
        server.resources.read(uri).await
    }

    /// The resource manager of a server (feature `resources`): states, transitions, stats,
    /// observers, discovery and templates of its resources.
    #[cfg(feature = "resources")]
    pub fn resource_manager(&self, server: &str) -> Option<mcp_resources::ResourceManager> {
        self.inner
            .server(server)
            .map(|s| s.resources.manager().clone())
    }

    /// Subscribes to `uri` (on `server`, or the one server that offers it) and calls `callback`
    /// on every `notifications/resources/updated` for it, until the returned guard is dropped
    /// (feature `resources`). The subscription is renewed on every new session; the next
    /// [`read_resource`](Self::read_resource) fetches the new contents.
    #[cfg(feature = "resources")]
    pub async fn on_resource_update(
        &self,
        server: Option<&str>,
        uri: &str,
        callback: impl Fn(&mcp_core::types::ResourceUpdatedNotificationParams) + Send + Sync + 'static,
    ) -> Result<(String, mcp_resources::UpdateGuard), Error> {
        let server = self.resource_server(server, uri).await?;
        let guard = server.resources.manager().on_update(uri, callback);
        self.subscription_on(&server, uri, true).await?;
        Ok((server.config.name.clone(), guard))
    }

    /// Subscribes to a resource's updates (they arrive on [`notifications`](Self::notifications)).
    /// The subscription is renewed on every new session of the server.
    pub async fn subscribe_resource(&self, server: Option<&str>, uri: &str) -> Result<(), Error> {
        self.subscription(server, uri, true).await
    }

    /// Ends a resource subscription.
    pub async fn unsubscribe_resource(&self, server: Option<&str>, uri: &str) -> Result<(), Error> {
        self.subscription(server, uri, false).await
    }

    async fn subscription(
        &self,
        server: Option<&str>,
        uri: &str,
        subscribe: bool,
    ) -> Result<(), Error> {
        let server = self.resource_server(server, uri).await?;
        self.subscription_on(&server, uri, subscribe).await
    }

    async fn subscription_on(
        &self,
        server: &ManagedServer,
        uri: &str,
        subscribe: bool,
    ) -> Result<(), Error> {
        // On the primary session: that is where the server sends the updates.
        let session = server
            .ready_session()
            .ok_or_else(|| server_not_ready(&server.config.name).with_subject(uri))?;
        if subscribe {
            server.resources.subscribe(&session, uri).await
        } else {
            server.resources.unsubscribe(&session, uri).await
        }
    }

    /// Sets the servers' logging level (`logging/setLevel`), on every ready server that has
    /// logging, and again on every new session of any server. Returns the servers that refused.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Vec<(String, Error)> {
        let servers: Vec<_> = read(&self.inner.servers).clone();
        for server in &servers {
            lock(&server.setup).logging_level = Some(level);
        }
        let mut errors = Vec::new();
        for server in servers {
            let Some(session) = server.ready_session() else {
                continue;
            };
            if session.server_info().capabilities.logging.is_none() {
                continue;
            }
            let options = RequestOptions::new().with_timeout(server.config.tool_timeout);
            if let Err(e) = session.set_logging_level(level, options).await {
                errors.push((server.config.name.clone(), e));
            }
        }
        errors
    }

    async fn resource_server(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<Arc<ManagedServer>, Error> {
        let name = match server {
            Some(name) => name.to_owned(),
            None => self.find_resource_server(uri).await?,
        };
        self.inner.server(&name).ok_or_else(|| {
            Error::new(
                ErrorKind::Resource,
                format!("no server named {name:?} is configured"),
            )
            .with_subject(uri)
            .with_delivery(Delivery::NotSent)
        })
    }

    async fn find_resource_server(&self, uri: &str) -> Result<String, Error> {
        let indexes = self.resource_indexes().await;
        let offers: Vec<_> = indexes
            .items
            .iter()
            .map(|(server, index)| (server.clone(), index.offers(uri)))
            .collect();
        pick_resource_server(uri, &offers)
    }

    /// Prompts of every ready server under qualified names (`server__prompt`). Each server's
    /// list is fetched once and kept until it announces a change or reconnects.
    pub async fn prompts(&self) -> Gathered<Catalog<CatalogPrompt>> {
        let inner = self.inner.clone();
        let gathered = self
            .gather("prompts/list", move |server| {
                let inner = inner.clone();
                async move {
                    let fetched = server.prompt_list().await?;
                    Ok(inner.noted_prompts(&server, fetched))
                }
            })
            .await;
        let entries = gathered
            .items
            .into_iter()
            .flat_map(|(server, prompts): (String, Arc<Vec<Prompt>>)| {
                prompts
                    .iter()
                    .map(|prompt| CatalogPrompt {
                        qualified_name: String::new(),
                        server: server.clone(),
                        prompt: prompt.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        Gathered {
            items: Catalog::build(entries),
            errors: gathered.errors,
        }
    }

    /// Gets a prompt by qualified name.
    pub async fn get_prompt(
        &self,
        qualified_name: &str,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, Error> {
        let prompts = self.prompts().await.items;
        let entry = prompts.get(qualified_name).ok_or_else(|| {
            Error::new(
                ErrorKind::ToolNotFound,
                format!("no prompt named {qualified_name:?}"),
            )
            .with_subject(qualified_name)
            .with_delivery(Delivery::NotSent)
        })?;
        let server = self.inner.catalog_server(&entry.server)?;
        server
            .stack
            .service
            .get_prompt(&entry.prompt.name, arguments, RequestOptions::new())
            .await
            .map_err(|e| e.with_subject(qualified_name))
    }

    /// Adds a server at run time: starts it (bounded by its `startup_timeout`) and returns its
    /// report. Fails when a server of that name exists.
    pub async fn add_server(&self, config: ServerConfig) -> Result<ServerReport, Error> {
        let name = config.name.clone();
        let exists = |servers: &[Arc<ManagedServer>]| servers.iter().any(|s| s.config.name == name);
        // Checked before building too: building registers the server's metrics under its name.
        if exists(&read(&self.inner.servers)) {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!("a server named {name:?} already exists"),
            ));
        }
        let server = self.inner.build_server(config);
        {
            // Checked and added under one lock: two concurrent adds of a name cannot both win.
            let mut servers = write(&self.inner.servers);
            if exists(&servers) {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    format!("a server named {name:?} already exists"),
                ));
            }
            servers.push(server.clone());
        }
        let listener: Arc<dyn SupervisorListener> = Arc::new(Listener(Arc::downgrade(&self.inner)));
        server.start(listener).await;
        self.inner.rebuild_tools();
        self.servers()
            .into_iter()
            .find(|r| r.name == name)
            .ok_or_else(|| server_not_ready(&name))
    }

    /// Removes a server at run time: its tools leave the catalog, and its sessions, pool and
    /// process are closed (bounded by the shutdown timeout).
    pub async fn remove_server(&self, name: &str) -> Result<(), Error> {
        let removed = {
            let mut servers = write(&self.inner.servers);
            let index = servers
                .iter()
                .position(|s| s.config.name == name)
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidParams,
                        format!("no server named {name:?} is configured"),
                    )
                })?;
            // Under the same lock: a server added again by this name registers anew.
            self.inner.metrics.remove_server(name);
            servers.remove(index)
        };
        removed.stop(self.inner.options.shutdown_timeout).await;
        self.inner.rebuild_tools();
        Ok(())
    }

    /// Stops every server gracefully (in parallel, each bounded by the shutdown timeout): no
    /// server reports ready or lists tools afterwards.
    pub async fn shutdown(&self) {
        let servers: Vec<_> = read(&self.inner.servers).clone();
        let limit = self.inner.options.shutdown_timeout;
        let mut closing = JoinSet::new();
        for server in servers {
            closing.spawn(async move { server.stop(limit).await });
        }
        while closing.join_next().await.is_some() {}
        self.inner.rebuild_tools();
    }

    /// Runs `f` on every ready server concurrently, keeping per-server failures apart.
    async fn gather<T, F, Fut>(&self, what: &str, f: F) -> Gathered<Vec<(String, T)>>
    where
        T: Send + 'static,
        F: Fn(Arc<ManagedServer>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>> + Send + 'static,
    {
        let mut tasks = JoinSet::new();
        let servers: Vec<_> = read(&self.inner.servers).clone();
        for (index, server) in servers.into_iter().enumerate() {
            if server.is_ready() {
                let name = server.config.name.clone();
                let fut = f(server);
                tasks.spawn(async move { (index, name, fut.await) });
            }
        }
        let mut answers = Vec::new();
        let mut errors = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((index, name, Ok(items))) => answers.push((index, name, items)),
                Ok((index, name, Err(e))) => {
                    tracing::warn!(server = %name, error = %e, "{what} failed");
                    errors.push((index, name, e));
                }
                Err(e) => tracing::warn!(error = %e, "{what} task failed"),
            }
        }
        answers.sort_by_key(|(index, _, _)| *index);
        errors.sort_by_key(|(index, _, _)| *index);
        Gathered {
            items: answers.into_iter().map(|(_, n, t)| (n, t)).collect(),
            errors: errors.into_iter().map(|(_, n, e)| (n, e)).collect(),
        }
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

    fn build_server(&self, config: ServerConfig) -> Arc<ManagedServer> {
        let mut options = SessionOptions {
            client_info: self.options.client_info.clone(),
            initialize_timeout: config.startup_timeout,
            request_timeout: config.tool_timeout,
            ..SessionOptions::default()
        };
        if let Some(hook) = &self.session_options {
            options = hook(&config, options);
        }
        ManagedServer::new(
            config,
            ServerContext {
                harness: self.handler.clone(),
                session_options: options,
                stack: &self.stack,
                supervision: &self.supervision,
                transports: &self.transports,
                notifications: self.notifications.clone(),
                metrics: &self.metrics,
                #[cfg(feature = "oauth")]
                oauth: &self.oauth,
                region: self.region.as_deref(),
                routing: &self.routing,
                failovers: self.failovers.clone(),
                #[cfg(feature = "fleet")]
                fleet: self.fleet.as_ref(),
            },
        )
    }

    /// A server's prompts or resources may have changed: the lists are forgotten, and those
    /// that were kept (someone uses them) are listed again after a short pause (a burst of
    /// notifications costs one listing), their differences reported on `list_changes`.
    fn lists_changed(inner: &Arc<Inner>, name: &str, which: Lists) {
        let Some(server) = inner.server(name) else {
            return;
        };
        let kept = server.lists_changed(which);
        if kept.is_empty() {
            return;
        }
        let weak = Arc::downgrade(inner);
        let pause = inner.supervision.list_changed_debounce;
        let name = name.to_owned();
        server.refresh_lists_with(async move {
            // A listing that a newer change overtook is not kept: list again after another
            // pause (a few times at most; the next change starts over).
            for _ in 0..4 {
                tokio::time::sleep(pause).await;
                let Some((inner, server)) = weak
                    .upgrade()
                    .and_then(|inner| inner.server(&name).map(|server| (inner, server)))
                else {
                    return;
                };
                // Away: the new session's own change lists them again.
                if !server.is_ready() {
                    return;
                }
                let mut overtaken = false;
                if kept.prompts {
                    match server.prompt_list().await {
                        Ok(fetched) => {
                            overtaken |= !fetched.kept;
                            drop(inner.noted_prompts(&server, fetched));
                        }
                        Err(e) => tracing::debug!(server = %name, error = %e, "listing prompts again failed"),
                    }
                }
                if kept.resources {
                    match server.resource_index().await {
                        Ok(fetched) => {
                            overtaken |= !fetched.kept;
                            drop(inner.noted_resources(&server, fetched));
                        }
                        Err(e) => tracing::debug!(server = %name, error = %e, "listing resources again failed"),
                    }
                }
                if !overtaken {
                    return;
                }
            }
        });
    }

    /// Reports what a new prompt list changed.
    fn noted_prompts(
        &self,
        server: &ManagedServer,
        fetched: Fetched<Vec<Prompt>>,
    ) -> Arc<Vec<Prompt>> {
        server
            .metrics
            .cache(mcp_metrics::CacheKind::Prompts, fetched.hit);
        let server = server.config.name.as_str();
        if let Some(before) = &fetched.replaced {
            self.report_list_change(ListChange::between(
                server,
                ListKind::Prompts,
                before,
                &fetched.list,
                |p| crate::naming::qualify(server, &p.name),
            ));
        }
        fetched.list
    }

    /// Reports what a new resource list changed.
    fn noted_resources(
        &self,
        server: &ManagedServer,
        fetched: Fetched<ResourceIndex>,
    ) -> Arc<ResourceIndex> {
        server
            .metrics
            .cache(mcp_metrics::CacheKind::Resources, fetched.hit);
        let server = server.config.name.as_str();
        if let Some(before) = &fetched.replaced {
            self.report_list_change(ListChange::between(
                server,
                ListKind::Resources,
                &before.resources,
                &fetched.list.resources,
                |r| r.uri.clone(),
            ));
            self.report_list_change(ListChange::between(
                server,
                ListKind::ResourceTemplates,
                &before.templates,
                &fetched.list.templates,
                |t| t.uri_template.clone(),
            ));
        }
        fetched.list
    }

    fn report_list_change(&self, change: ListChange) {
        if !change.is_empty() {
            tracing::debug!(?change, "a server's list changed");
            let _ = self.list_changes.send(change);
        }
    }

    /// Rebuilds the catalog from every server's known tools (stable order) and reports what
    /// changed.
    fn rebuild_tools(&self) {
        let _one_at_a_time = lock(&self.rebuilding);
        let mut entries = Vec::new();
        for server in read(&self.servers).iter() {
            let snapshot = server.supervisor.snapshot();
            if matches!(
                snapshot.status,
                ServerStatus::Stopped | ServerStatus::Disabled
            ) {
                continue;
            }
            let Some(tools) = snapshot.tools else {
                continue;
            };
            let config = &server.config;
            for tool in tools.iter() {
                if config.allows_tool(&tool.name) {
                    entries.push(CatalogTool {
                        qualified_name: String::new(),
                        server: config.name.clone(),
                        tool: tool.clone(),
                    });
                }
            }
        }
        let catalog = Arc::new(Catalog::build(entries));
        let previous = std::mem::replace(&mut *write(&self.tools), catalog.clone());
        let change = CatalogChange::between(&previous, &catalog);
        let mut lists = lock(&self.llm);
        // The same tools again (a listing that changed nothing): the lists handed out stay.
        if !change.is_empty() || lists.is_empty() {
            lists.catalog_changed(&catalog);
        }
        drop(lists);
        if !change.is_empty() {
            tracing::debug!(?change, "tool catalog changed");
            let _ = self.catalog_changes.send(change);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unbounded_start_parallelism_is_taken_as_tokios_largest() {
        let config = ClientConfig {
            servers: vec![ServerConfig::new(
                "s",
                crate::config::TransportConfig::InProcess,
            )],
            ..ClientConfig::default()
        };
        let client = McpClient::builder(config)
            .max_concurrent_starts(usize::MAX)
            .start()
            .await;
        assert_eq!(client.servers().len(), 1);
        client.shutdown().await;
    }
}
