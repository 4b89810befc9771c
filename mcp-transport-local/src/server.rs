//! [`LocalServer`]: an MCP server in this process — its catalog, its open connections, and
//! what it has run — and the connections to it ([`LocalServer::connect`],
//! [`LocalServer::connector`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, Weak};
use std::time::Duration;

use mcp_core::sync::lock;
use mcp_core::types::{methods, Implementation, NotificationFilter, ServerCapabilities};
use mcp_core::{TransportConnector, TransportError, TransportErrorKind};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::builder::LocalServerBuilder;
use crate::catalog::Catalog;
use crate::connection::{Connection, Ending};
use crate::connector::LocalConnector;
use crate::context::RequestContext;
use crate::era::Eras;
use crate::error::BuildError;
use crate::prompt::LocalPrompt;
use crate::resource::{LocalResource, LocalResourceTemplate, ReadHandler};
use crate::tool::{LocalTool, Started};
use crate::transport::LocalTransport;

/// An MCP server whose tools, resources and prompts are async Rust functions in this process.
/// Cheap to clone; clones are the same server.
///
/// Every [`connect`](LocalServer::connect) opens a new connection to the same server (same
/// catalog, same state); the [`connector`](LocalServer::connector) does that for pools,
/// supervisors and the facade (`McpClientBuilder::local_server`). Requests are answered in
/// the caller's task: no channel, no reader task, no serialization.
///
/// ```
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_core::{McpServiceExt, RequestOptions};
/// use mcp_session::{ClientSession, SessionOptions};
/// use mcp_transport_local::{LocalServer, LocalTool, RequestContext};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct EchoArgs {
///     text: String,
/// }
///
/// let server = LocalServer::builder("demo", "1.0.0")
///     .tool(LocalTool::new("echo", |_ctx: RequestContext, args: EchoArgs| async move { args.text }))
///     .build()?;
/// let session = ClientSession::connect(server.connect()?, (), SessionOptions::default()).await?;
/// let result = session
///     .call_tool("echo", Some(serde_json::json!({"text": "hi"})), RequestOptions::new())
///     .await?;
/// assert_eq!(result.text(), "hi");
/// session.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LocalServer {
    shared: Arc<ServerShared>,
}

/// What the server's handles, connections and calls share.
pub(crate) struct ServerShared {
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) eras: Eras,
    pub(crate) settings: Settings,
    catalog: RwLock<Catalog>,
    pub(crate) extensions: Extensions,
    connections: Mutex<Connections>,
    pub(crate) stats: Stats,
}

/// A request handler of a method the server does not answer itself.
pub(crate) type MethodHandler = Arc<dyn Fn(RequestContext, Option<Value>) -> Started + Send + Sync>;

/// A change to the capabilities the server announces.
pub(crate) type AmendCapabilities = Arc<dyn Fn(&mut ServerCapabilities) + Send + Sync>;

/// Who hears a URI's first subscriber (`true`) and its last gone (`false`).
pub(crate) type SubscriptionHook = Arc<dyn Fn(&str, bool) + Send + Sync>;

/// Resource subscriptions across every connection: how many subscribers each URI has, and who
/// is told when a URI gets its first or loses its last.
pub(crate) struct Subscriptions {
    counts: Mutex<HashMap<String, usize>>,
    on_change: SubscriptionHook,
}

impl Subscriptions {
    pub(crate) fn new(on_change: SubscriptionHook) -> Subscriptions {
        Subscriptions {
            counts: Mutex::new(HashMap::new()),
            on_change,
        }
    }

    /// One more subscriber of `uri`. The hook is told under the count's lock, so the first
    /// and last of a URI are heard in the order they happened.
    pub(crate) fn retain(&self, uri: &str) {
        let mut counts = lock(&self.counts);
        let count = counts.entry(uri.to_owned()).or_default();
        *count += 1;
        if *count == 1 {
            (self.on_change)(uri, true);
        }
    }

    /// One subscriber of `uri` fewer.
    pub(crate) fn release(&self, uri: &str) {
        let mut counts = lock(&self.counts);
        let last = match counts.get_mut(uri) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                counts.remove(uri);
                true
            }
            None => false,
        };
        if last {
            (self.on_change)(uri, false);
        }
    }
}

/// What a server adds to the built-in protocol (see [`LocalServerBuilder::method`],
/// [`LocalServerBuilder::read_fallback`], [`LocalServerBuilder::capabilities`]).
#[derive(Default)]
pub(crate) struct Extensions {
    pub(crate) methods: HashMap<String, MethodHandler>,
    pub(crate) read_fallback: Option<ReadHandler>,
    pub(crate) amend_capabilities: Option<AmendCapabilities>,
    /// Set when the server takes resource subscriptions.
    pub(crate) subscriptions: Option<Subscriptions>,
}

/// The server's knobs (see [`LocalServerBuilder`]).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) answer_in_place: bool,
    pub(crate) queue_capacity: usize,
    pub(crate) client_request_timeout: Duration,
    pub(crate) input_timeout: Duration,
    /// Modern answers get what 2026-07-28 requires of them on the wire (see
    /// [`LocalServerBuilder::served_on_a_wire`]).
    pub(crate) served_on_a_wire: bool,
}

#[derive(Default)]
struct Connections {
    next_id: u64,
    open: HashMap<u64, Weak<Connection>>,
    shut_down: bool,
}

/// What the server counts.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) running_calls: AtomicUsize,
    pub(crate) cancellations: AtomicU64,
}

impl LocalServer {
    /// A server called `name` at `version`; register its tools, resources and prompts on the
    /// builder.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> LocalServerBuilder {
        LocalServerBuilder::new(name, version)
    }

    pub(crate) fn from_parts(
        info: Implementation,
        instructions: Option<String>,
        eras: Eras,
        settings: Settings,
        catalog: Catalog,
        extensions: Extensions,
    ) -> LocalServer {
        LocalServer {
            shared: Arc::new(ServerShared {
                info,
                instructions,
                eras,
                settings,
                catalog: RwLock::new(catalog),
                extensions,
                connections: Mutex::new(Connections::default()),
                stats: Stats::default(),
            }),
        }
    }

    pub(crate) fn from_shared(shared: Arc<ServerShared>) -> LocalServer {
        LocalServer { shared }
    }

    /// The server's name and version.
    pub fn info(&self) -> &Implementation {
        &self.shared.info
    }

    /// Opens a new connection (its task runs on the current tokio runtime). Fails after
    /// [`shutdown`](LocalServer::shutdown), or outside a runtime.
    pub fn connect(&self) -> Result<LocalTransport, TransportError> {
        let name = &self.shared.info.name;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            TransportError::fatal(
                TransportErrorKind::Connect,
                format!("connecting to the in-process server `{name}` needs a tokio runtime"),
            )
        })?;
        let capacity = self.shared.settings.queue_capacity;
        let (to_server, incoming) = mpsc::channel(capacity);
        let (outbound, from_server) = mpsc::channel(capacity);
        let connection = {
            let mut connections = lock(&self.shared.connections);
            if connections.shut_down {
                return Err(TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!("the in-process server `{name}` was shut down"),
                ));
            }
            connections.next_id += 1;
            let id = connections.next_id;
            let connection = Arc::new(Connection::new(self.shared.clone(), id, outbound));
            connections.open.insert(id, Arc::downgrade(&connection));
            connection
        };
        let task = runtime.spawn(connection.clone().serve(incoming));
        tracing::debug!(server = %name, connection = connection.id, "in-process connection opened");
        Ok(LocalTransport::new(
            connection,
            to_server,
            from_server,
            task,
            self.shared.settings.answer_in_place,
        ))
    }

    /// A connector that opens a new connection to this server each time (for
    /// `HandshakeConnector`, pools, supervisors, and the facade's
    /// `McpClientBuilder::local_server`).
    pub fn connector(&self) -> Arc<dyn TransportConnector> {
        Arc::new(LocalConnector::new(self.clone()))
    }

    /// Adds a tool while the server runs, and tells every connected client the tool list
    /// changed.
    pub fn add_tool(&self, tool: LocalTool) -> Result<(), BuildError> {
        self.shared.catalog_mut().add_tool(tool)?;
        self.notify_tools_list_changed();
        Ok(())
    }

    /// Removes a tool (false when there is none of that name), and tells every connected
    /// client the tool list changed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.shared.catalog_mut().remove_tool(name);
        if removed {
            self.notify_tools_list_changed();
        }
        removed
    }

    /// Replaces every tool at once (a gateway mirroring what its servers offer): all are checked
    /// first, and on an error nothing changes. Connected clients are told the list changed
    /// when it did (one notification, however many tools changed); the answer says whether it
    /// did.
    pub fn set_tools(&self, tools: Vec<LocalTool>) -> Result<bool, BuildError> {
        let changed = self.shared.catalog_mut().set_tools(tools)?;
        if changed {
            self.notify_tools_list_changed();
        }
        Ok(changed)
    }

    /// Replaces every prompt at once, as [`set_tools`](Self::set_tools) does tools
    /// (`notifications/prompts/list_changed`).
    pub fn set_prompts(&self, prompts: Vec<LocalPrompt>) -> Result<bool, BuildError> {
        let changed = self.shared.catalog_mut().set_prompts(prompts)?;
        if changed {
            self.notify_list_changed(methods::NOTIFICATION_PROMPTS_LIST_CHANGED, |f| {
                f.prompts_list_changed
            });
        }
        Ok(changed)
    }

    /// Replaces every resource and resource template at once, as
    /// [`set_tools`](Self::set_tools) does tools (`notifications/resources/list_changed`).
    pub fn set_resources(
        &self,
        resources: Vec<LocalResource>,
        templates: Vec<LocalResourceTemplate>,
    ) -> Result<bool, BuildError> {
        let changed = self
            .shared
            .catalog_mut()
            .set_resources(resources, templates)?;
        if changed {
            self.notify_list_changed(methods::NOTIFICATION_RESOURCES_LIST_CHANGED, |f| {
                f.resources_list_changed
            });
        }
        Ok(changed)
    }

    /// Tells every client subscribed to `uri` that it changed
    /// (`notifications/resources/updated`): a legacy client that subscribed with
    /// `resources/subscribe`, a modern one whose `subscriptions/listen` stream names it. Needs
    /// [`LocalServerBuilder::resource_subscriptions`](crate::LocalServerBuilder::resource_subscriptions).
    pub fn notify_resource_updated(&self, uri: &str) {
        for connection in self.shared.open_connections() {
            connection.resource_updated(uri);
        }
    }

    /// Whether a tool of that name is registered.
    pub fn has_tool(&self, name: &str) -> bool {
        self.shared.catalog().has_tool(name)
    }

    /// Sends `notifications/tools/list_changed` to every connected client (a modern one on
    /// its `subscriptions/listen` stream).
    pub fn notify_tools_list_changed(&self) {
        self.notify_list_changed(methods::NOTIFICATION_TOOLS_LIST_CHANGED, |f| {
            f.tools_list_changed
        });
    }

    fn notify_list_changed(&self, method: &'static str, wanted: fn(&NotificationFilter) -> bool) {
        for connection in self.shared.open_connections() {
            connection.list_changed(method, wanted);
        }
    }

    /// Makes the server die as a process would: every open connection ends at once, the calls
    /// in flight fail with a "peer gone" error, and the clients' receivers report the crash.
    /// Later connections are served again (like a restarted process, with the same catalog).
    pub fn crash(&self) {
        tracing::debug!(server = %self.shared.info.name, "in-process server crashing on purpose");
        for connection in self.shared.open_connections() {
            connection.end(Ending::Crashed);
        }
    }

    /// Stops the server: every open connection ends (cleanly: the clients see the server close
    /// the connection) and new connections are refused. Idempotent.
    pub fn shutdown(&self) {
        lock(&self.shared.connections).shut_down = true;
        for connection in self.shared.open_connections() {
            connection.end(Ending::ShutDown);
        }
    }

    /// How many connections are open.
    pub fn open_connections(&self) -> usize {
        self.shared.open_connections().len()
    }

    /// How many handlers are running (calls in flight, and calls waiting for the client's
    /// input in the modern era).
    pub fn running_calls(&self) -> usize {
        self.shared.stats.running_calls.load(Ordering::Relaxed)
    }

    /// How many calls the clients cancelled so far: a `notifications/cancelled` that reached
    /// a running call, or a caller that gave up on a call answered in its task (its deadline
    /// passed, or it dropped the call).
    pub fn cancellations(&self) -> u64 {
        self.shared.stats.cancellations.load(Ordering::Relaxed)
    }
}

impl ServerShared {
    /// What the server announces: what its catalog holds, then the builder's amendments.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let mut capabilities = self.catalog().capabilities();
        if self.extensions.subscriptions.is_some() {
            let resources = capabilities.resources.get_or_insert_with(Default::default);
            resources.subscribe = Some(true);
        }
        if let Some(amend) = &self.extensions.amend_capabilities {
            amend(&mut capabilities);
        }
        capabilities
    }

    pub(crate) fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|p| p.into_inner())
    }

    fn catalog_mut(&self) -> std::sync::RwLockWriteGuard<'_, Catalog> {
        self.catalog.write().unwrap_or_else(|p| p.into_inner())
    }

    fn open_connections(&self) -> Vec<Arc<Connection>> {
        lock(&self.connections)
            .open
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Forgets an ended connection.
    pub(crate) fn forget(&self, id: u64) {
        lock(&self.connections).open.remove(&id);
    }
}

impl std::fmt::Debug for LocalServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalServer")
            .field("name", &self.shared.info.name)
            .field("version", &self.shared.info.version)
            .field("eras", &self.shared.eras)
            .field("open_connections", &self.open_connections())
            .field("running_calls", &self.running_calls())
            .finish()
    }
}
