//! [`McpClient`]: many servers, one catalog, partial availability.

use mcp_core::McpServiceExt;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use mcp_core::types::{
    CallToolResult, GetPromptResult, Implementation, Prompt, ReadResourceResult, Resource, Tool,
};
use mcp_core::{
    ClientHandler, ClientSession, Error, ErrorKind, RequestOptions, ServerNotification,
    SessionOptions,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tracing::Instrument;

use crate::catalog::{Catalog, CatalogPrompt, CatalogTool};
use crate::config::{ClientConfig, ServerConfig};
use crate::connect::connect;
use crate::status::{ServerReport, ServerStatus};

/// How the client presents itself and treats its servers.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Sent as `clientInfo` in every `initialize`. Default: `mcp-client` and this crate's version.
    pub client_info: Implementation,
    /// How long `close` may take per server in [`McpClient::shutdown`]. Default: 5 s.
    pub shutdown_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: Implementation::new("mcp-client", env!("CARGO_PKG_VERSION")),
            shutdown_timeout: Duration::from_secs(5),
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
/// Every enabled server is started in parallel under its own startup timeout; a server that
/// fails to start, or dies later, is marked failed with the reason and drops out of the catalog,
/// and the others go on. Dropping the client ends every session and child process;
/// [`shutdown`](McpClient::shutdown) does it gracefully.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Vec<Arc<ManagedServer>>,
    tools: RwLock<Arc<Catalog<CatalogTool>>>,
    monitors: Mutex<Vec<AbortHandle>>,
    options: ClientOptions,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for monitor in lock(&self.monitors).drain(..) {
            monitor.abort();
        }
    }
}

struct ManagedServer {
    config: ServerConfig,
    state: Mutex<ServerState>,
    http_memo: crate::connect::HttpMemo,
}

struct ServerState {
    status: ServerStatus,
    session: Option<ClientSession>,
    tools: Vec<Tool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Forwards list-change notifications to the server's monitor task, from the handshake on.
struct FacadeHandler {
    changes: mpsc::UnboundedSender<ServerNotification>,
}

impl ClientHandler for FacadeHandler {
    fn on_notification(&self, notification: &ServerNotification) {
        if matches!(notification, ServerNotification::ToolListChanged) {
            let _ = self.changes.send(notification.clone());
        }
    }
}

impl McpClient {
    /// Starts every enabled server in parallel and returns once each is ready or has failed
    /// (each bounded by its `startup_timeout`). Never fails as a whole: check
    /// [`servers`](McpClient::servers) for each server's status.
    pub async fn start(config: ClientConfig, options: ClientOptions) -> McpClient {
        let servers: Vec<Arc<ManagedServer>> = config
            .servers
            .into_iter()
            .map(|config| {
                let status = if config.enabled {
                    ServerStatus::Starting
                } else {
                    ServerStatus::Disabled
                };
                Arc::new(ManagedServer {
                    http_memo: Default::default(),
                    config,
                    state: Mutex::new(ServerState {
                        status,
                        session: None,
                        tools: Vec::new(),
                    }),
                })
            })
            .collect();
        let inner = Arc::new(Inner {
            servers,
            tools: RwLock::new(Arc::new(Catalog::default())),
            monitors: Mutex::new(Vec::new()),
            options,
        });
        let mut starting = JoinSet::new();
        for server in inner.servers.iter().filter(|s| s.config.enabled) {
            let server = server.clone();
            let client_info = inner.options.client_info.clone();
            let weak = Arc::downgrade(&inner);
            starting.spawn(async move { start_server(server, client_info, weak).await });
        }
        while let Some(started) = starting.join_next().await {
            if let Ok(Some(monitor)) = started {
                lock(&inner.monitors).push(monitor);
            }
        }
        inner.rebuild_tools();
        McpClient { inner }
    }

    /// Every configured server with its status, in configuration order.
    pub fn servers(&self) -> Vec<ServerReport> {
        let catalog = self.tools();
        self.inner
            .servers
            .iter()
            .map(|s| {
                let state = lock(&s.state);
                let session = state.session.as_ref();
                ServerReport {
                    name: s.config.name.clone(),
                    status: state.status.clone(),
                    transport: s.config.transport.kind(),
                    tools: catalog
                        .entries()
                        .iter()
                        .filter(|t| t.server == s.config.name)
                        .count(),
                    server_info: session.map(|x| x.server_info().server_info.clone()),
                    protocol_version: session.map(ClientSession::protocol_version),
                }
            })
            .collect()
    }

    /// The tool catalog: every ready server's tools (after allow/deny lists) under qualified
    /// names, in stable order. Refreshed when a server announces `tools/list_changed` or fails.
    pub fn tools(&self) -> Arc<Catalog<CatalogTool>> {
        self.inner
            .tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The session of a ready server, for anything the facade does not wrap.
    pub fn session(&self, server: &str) -> Option<ClientSession> {
        self.inner
            .server(server)
            .and_then(|s| lock(&s.state).session.clone())
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
    /// an explicit deadline the server's `tool_timeout` applies.
    pub async fn call_tool_with(
        &self,
        qualified_name: &str,
        arguments: Option<Value>,
        mut options: RequestOptions,
    ) -> Result<CallToolResult, Error> {
        let entry = self.tools().get(qualified_name).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::ToolNotFound,
                format!("no tool named {qualified_name:?} in the catalog"),
            )
            .with_subject(qualified_name)
        })?;
        let server = self.inner.catalog_server(&entry.server)?;
        let session = server
            .ready_session()
            .map_err(|e| e.with_subject(qualified_name))?;
        options.timeout.get_or_insert(server.config.tool_timeout);
        let span = tracing::info_span!(
            "mcp.client.operation",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = %entry.tool.name,
            mcp.server.name = %entry.server,
            network.transport = session.transport_name(),
            mcp.outcome = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let started = Instant::now();
        let result = session
            .call_tool(&entry.tool.name, arguments, options)
            .instrument(span.clone())
            .await
            .map_err(|e| e.with_subject(qualified_name));
        let outcome = match &result {
            Ok(r) if r.is_error() => "tool_error",
            Ok(_) => "success",
            Err(e) if e.kind() == ErrorKind::Timeout => "timeout",
            Err(_) => "error",
        };
        span.record("mcp.outcome", outcome);
        match &result {
            Ok(r) if r.is_error() => {
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
        result
    }

    /// Resources of every ready server, in configuration order.
    pub async fn resources(&self) -> Gathered<Vec<CatalogResource>> {
        let gathered = self
            .gather("resources/list", |session| async move {
                session.list_all_resources(RequestOptions::new()).await
            })
            .await;
        Gathered {
            items: gathered
                .items
                .into_iter()
                .flat_map(|(server, resources)| {
                    resources.into_iter().map(move |resource| CatalogResource {
                        server: server.clone(),
                        resource,
                    })
                })
                .collect(),
            errors: gathered.errors,
        }
    }

    /// Reads a resource. With `server`, from that server; without, from the one ready server
    /// that lists `uri` (or whose resource template's fixed prefix matches it).
    pub async fn read_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<ReadResourceResult, Error> {
        let name = match server {
            Some(name) => name.to_owned(),
            None => self.find_resource_server(uri).await?,
        };
        let server = self.inner.server(&name).ok_or_else(|| {
            Error::new(
                ErrorKind::Resource,
                format!("no server named {name:?} is configured"),
            )
            .with_subject(uri)
        })?;
        let session = server.ready_session().map_err(|e| e.with_subject(uri))?;
        session.read_resource(uri, RequestOptions::new()).await
    }

    async fn find_resource_server(&self, uri: &str) -> Result<String, Error> {
        let listed = self
            .gather("resources/list", |session| async move {
                let resources = session.list_all_resources(RequestOptions::new()).await?;
                let templates = session
                    .list_all_resource_templates(RequestOptions::new())
                    .await
                    .unwrap_or_default();
                Ok((resources, templates))
            })
            .await;
        let mut exact = Vec::new();
        let mut by_template = Vec::new();
        for (server, (resources, templates)) in listed.items {
            if resources.iter().any(|r| r.uri == uri) {
                exact.push(server);
            } else if templates.iter().any(|t| {
                let prefix = t.uri_template.split('{').next().unwrap_or("");
                !prefix.is_empty() && uri.starts_with(prefix)
            }) {
                by_template.push(server);
            }
        }
        let candidates = if exact.is_empty() { by_template } else { exact };
        match candidates.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(
                Error::new(ErrorKind::Resource, format!("no ready server offers {uri}"))
                    .with_subject(uri),
            ),
            many => Err(Error::new(
                ErrorKind::Resource,
                format!(
                    "several servers offer {uri} ({}); name the server",
                    many.join(", ")
                ),
            )
            .with_subject(uri)),
        }
    }

    /// Prompts of every ready server under qualified names (`server__prompt`).
    pub async fn prompts(&self) -> Gathered<Catalog<CatalogPrompt>> {
        let gathered = self
            .gather("prompts/list", |session| async move {
                session.list_all_prompts(RequestOptions::new()).await
            })
            .await;
        let entries = gathered
            .items
            .into_iter()
            .flat_map(|(server, prompts): (String, Vec<Prompt>)| {
                prompts.into_iter().map(move |prompt| CatalogPrompt {
                    qualified_name: String::new(),
                    server: server.clone(),
                    prompt,
                })
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
        })?;
        let server = self.inner.catalog_server(&entry.server)?;
        let session = server.ready_session()?;
        session
            .get_prompt(&entry.prompt.name, arguments, RequestOptions::new())
            .await
            .map_err(|e| e.with_subject(qualified_name))
    }

    /// Closes every session gracefully (in parallel, each bounded), then stops monitoring.
    pub async fn shutdown(&self) {
        for monitor in lock(&self.inner.monitors).drain(..) {
            monitor.abort();
        }
        let mut closing = JoinSet::new();
        for server in &self.inner.servers {
            let session = lock(&server.state).session.take();
            if let Some(session) = session {
                let limit = self.inner.options.shutdown_timeout;
                closing.spawn(async move {
                    let _ = tokio::time::timeout(limit, session.close()).await;
                });
            }
        }
        while closing.join_next().await.is_some() {}
        self.inner.rebuild_tools();
    }

    /// Runs `f` on every ready server concurrently, keeping per-server failures apart.
    async fn gather<T, F, Fut>(&self, what: &str, f: F) -> Gathered<Vec<(String, T)>>
    where
        T: Send + 'static,
        F: Fn(ClientSession) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>> + Send + 'static,
    {
        let mut tasks = JoinSet::new();
        for (index, server) in self.inner.servers.iter().enumerate() {
            if let Some(session) = server.session_if_ready() {
                let name = server.config.name.clone();
                let limit = server.config.tool_timeout;
                let fut = f(session);
                tasks.spawn(async move {
                    let result = match tokio::time::timeout(limit, fut).await {
                        Ok(r) => r,
                        Err(_) => Err(Error::timeout(format!("no answer within {limit:?}"))),
                    };
                    (index, name, result)
                });
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

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("servers", &self.servers())
            .finish()
    }
}

impl Inner {
    fn server(&self, name: &str) -> Option<&Arc<ManagedServer>> {
        self.servers.iter().find(|s| s.config.name == name)
    }

    /// The server a catalog entry came from (always configured: catalogs are built from them).
    fn catalog_server(&self, name: &str) -> Result<&Arc<ManagedServer>, Error> {
        self.server(name).ok_or_else(|| {
            Error::new(
                ErrorKind::ServerUnavailable,
                format!("no server named {name:?} is configured"),
            )
        })
    }

    /// Rebuilds the catalog from every ready server's tools (stable order).
    fn rebuild_tools(&self) {
        let mut entries = Vec::new();
        for server in &self.servers {
            let state = lock(&server.state);
            if !state.status.is_ready() {
                continue;
            }
            let config = &server.config;
            for tool in &state.tools {
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
        *self.tools.write().unwrap_or_else(|p| p.into_inner()) = catalog;
    }
}

impl ManagedServer {
    fn session_if_ready(&self) -> Option<ClientSession> {
        let state = lock(&self.state);
        state
            .status
            .is_ready()
            .then(|| state.session.clone())
            .flatten()
    }

    fn ready_session(&self) -> Result<ClientSession, Error> {
        let state = lock(&self.state);
        match (&state.status, &state.session) {
            (ServerStatus::Ready, Some(session)) => Ok(session.clone()),
            (status, _) => {
                let why = match status {
                    ServerStatus::Failed { reason } => format!("failed: {reason}"),
                    other => other.label().to_owned(),
                };
                Err(Error::new(
                    ErrorKind::ServerUnavailable,
                    format!("server \"{}\" is {why}", self.config.name),
                ))
            }
        }
    }

    fn fail(&self, reason: String) {
        let mut state = lock(&self.state);
        state.status = ServerStatus::Failed { reason };
        state.session = None;
        state.tools.clear();
    }
}

/// Connects one server and lists its tools; on success returns its monitor task.
async fn start_server(
    server: Arc<ManagedServer>,
    client_info: Implementation,
    client: Weak<Inner>,
) -> Option<AbortHandle> {
    let config = &server.config;
    let (changes_tx, changes) = mpsc::unbounded_channel();
    let options = SessionOptions {
        client_info,
        initialize_timeout: config.startup_timeout,
        request_timeout: config.tool_timeout,
        ..SessionOptions::default()
    };
    let started = async {
        let session = connect(
            config,
            FacadeHandler {
                changes: changes_tx,
            },
            options,
            &server.http_memo,
        )
        .await?;
        let tools = match tokio::time::timeout(
            config.startup_timeout,
            session.list_all_tools(RequestOptions::new()),
        )
        .await
        {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                session.close().await;
                return Err(e);
            }
            Err(_) => {
                session.close().await;
                return Err(Error::timeout(format!(
                    "tools/list got no answer within the startup timeout ({:?})",
                    config.startup_timeout
                )));
            }
        };
        Ok::<_, Error>((session, tools))
    };
    match started.await {
        Ok((session, tools)) => {
            tracing::info!(server = %config.name, tools = tools.len(), "MCP server ready");
            {
                let mut state = lock(&server.state);
                state.status = ServerStatus::Ready;
                state.tools = tools;
                state.session = Some(session.clone());
            }
            let monitor = tokio::spawn(monitor_server(server.clone(), session, changes, client));
            Some(monitor.abort_handle())
        }
        Err(e) => {
            tracing::warn!(server = %config.name, error = %e, "MCP server failed to start");
            server.fail(e.message().to_owned());
            None
        }
    }
}

/// Follows one ready server: refreshes its tools on `tools/list_changed`, marks it failed when
/// its session ends.
async fn monitor_server(
    server: Arc<ManagedServer>,
    session: ClientSession,
    mut changes: mpsc::UnboundedReceiver<ServerNotification>,
    client: Weak<Inner>,
) {
    loop {
        tokio::select! {
            reason = session.closed() => {
                // A shutdown took the session first: nothing failed.
                if lock(&server.state).session.is_some() {
                    tracing::warn!(server = %server.config.name, reason = %reason, "MCP server session ended");
                    server.fail(reason.message().to_owned());
                }
                if let Some(client) = client.upgrade() {
                    client.rebuild_tools();
                }
                return;
            }
            Some(_) = changes.recv() => {
                // Coalesce a burst of notifications into one refresh.
                while changes.try_recv().is_ok() {}
                let limit = server.config.tool_timeout;
                match tokio::time::timeout(limit, session.list_all_tools(RequestOptions::new())).await {
                    Ok(Ok(tools)) => {
                        tracing::debug!(server = %server.config.name, tools = tools.len(), "tool list refreshed");
                        lock(&server.state).tools = tools;
                        if let Some(client) = client.upgrade() {
                            client.rebuild_tools();
                        }
                    }
                    Ok(Err(e)) => tracing::warn!(server = %server.config.name, error = %e, "refreshing tools failed"),
                    Err(_) => tracing::warn!(server = %server.config.name, "refreshing tools timed out"),
                }
            }
        }
    }
}
