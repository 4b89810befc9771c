//! [`Gateway`]: the facade's catalog served as one MCP server. An in-process
//! [`LocalServer`] holds a mirror of every upstream's tools, prompts, resources and templates
//! under the names downstream clients see; its handlers forward through the facade. The
//! mirror follows the facade: when a server's lists change (or it connects, or is gone), the
//! mirror is rebuilt once the changes settle, and downstream clients get one `list_changed`
//! per list that changed.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::ClientNotification;
use mcp_client::McpClient;
use mcp_core::types::{ListChangedCapability, ResourcesCapability};
use mcp_session::ServerNotification;
use mcp_transport_local::{
    Eras, LocalPrompt, LocalResource, LocalResourceTemplate, LocalServer, LocalTool, RequestContext,
};
use serde_json::{Map, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::names::{check_separator, exposed_names, Prefixing, DEFAULT_SEPARATOR};
use crate::relay::Relay;
use crate::upstream::{PromptRoute, Routes, Upstream};

/// How a [`Gateway`] serves.
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// The name the gateway gives itself in `initialize` and `server/discover`.
    pub name: String,
    /// Its version.
    pub version: String,
    /// When names carry their server's name.
    pub prefixing: Prefixing,
    /// Between the server's name and the tool's or prompt's (`__` by default).
    pub separator: String,
    /// How long the mirror waits, after a change upstream, for more before it is rebuilt (and
    /// downstream clients told): a server that reconnects changes several lists at once.
    pub settle: Duration,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            name: "mcph-gateway".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            prefixing: Prefixing::Auto,
            separator: DEFAULT_SEPARATOR.to_owned(),
            settle: Duration::from_millis(50),
        }
    }
}

/// Why a gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// An option is not usable.
    #[error("{0}")]
    Options(String),
    /// The in-process server could not be built.
    #[error("cannot build the gateway's server: {0}")]
    Server(#[from] mcp_transport_local::BuildError),
}

/// The facade's catalog served as one MCP server: connect downstream clients with
/// [`server`](Gateway::server) (`LocalServer::connect`), or serve it over stdio
/// ([`serve_stdio`](crate::serve_stdio)). Cheap to clone; clones are the same gateway. The
/// mirror's task ends with [`shutdown`](Gateway::shutdown), or when the last clone is dropped.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    server: LocalServer,
    upstream: Arc<Upstream>,
    options: GatewayOptions,
    /// The tasks that follow the facade (`follow`) and make subscriptions upstream
    /// (`subscribe_upstream`); aborted when the gateway stops.
    mirror: std::sync::Mutex<Vec<JoinHandle<()>>>,
    /// One rebuild at a time, so an older reading never replaces a newer one.
    rebuilding: tokio::sync::Mutex<()>,
}

impl Inner {
    /// The mirror's tasks aborted, every downstream connection ended.
    fn stop(&self) {
        for task in mcp_core::sync::lock(&self.mirror).drain(..) {
            task.abort();
        }
        self.server.shutdown();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Gateway {
    /// Serves `client`'s catalog: mirrors it now and follows its changes from then on.
    /// `relay` passes the servers' requests and logs to the downstream calls they serve: the
    /// relay whose [`handler_for`](Relay::handler_for) the facade gave each server (with a
    /// fresh [`Relay`] the servers' requests never reach downstream clients).
    pub async fn start(
        client: McpClient,
        relay: Relay,
        options: GatewayOptions,
    ) -> Result<Gateway, GatewayError> {
        check_separator(&options.separator).map_err(GatewayError::Options)?;
        let upstream = Arc::new(Upstream::new(client, relay));
        let (subscriptions, subscription_changes) = mpsc::unbounded_channel();
        let server = build_server(&options, &upstream, subscriptions)?;
        // Listening before the first reading: a change while it runs is not missed.
        let changes = Changes {
            tools: upstream.client.catalog_changes(),
            lists: upstream.client.list_changes(),
            notifications: upstream.client.notifications(),
        };
        let gateway = Gateway {
            inner: Arc::new(Inner {
                server,
                upstream,
                options,
                mirror: std::sync::Mutex::new(Vec::new()),
                rebuilding: tokio::sync::Mutex::new(()),
            }),
        };
        gateway.refresh().await;
        let follower = tokio::spawn(follow(Arc::downgrade(&gateway.inner), changes));
        let subscriber = tokio::spawn(subscribe_upstream(
            Arc::downgrade(&gateway.inner.upstream),
            subscription_changes,
        ));
        mcp_core::sync::lock(&gateway.inner.mirror).extend([follower, subscriber]);
        Ok(gateway)
    }

    /// The in-process server downstream clients connect to.
    pub fn server(&self) -> &LocalServer {
        &self.inner.server
    }

    /// The facade behind it.
    pub fn client(&self) -> &McpClient {
        &self.inner.upstream.client
    }

    /// Rebuilds the mirror from the facade now (it also follows changes on its own).
    pub async fn refresh(&self) {
        self.inner.refresh().await;
    }

    /// Stops serving: the mirror stops following, and every downstream connection ends. The
    /// facade is the caller's to shut down.
    pub fn shutdown(&self) {
        self.inner.stop();
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("server", &self.inner.server)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// A resource's first downstream subscriber (`true`) or its last gone (`false`).
type SubscriptionChange = (String, bool);

/// The in-process server, with what the gateway answers beyond the lists and calls; the
/// subscription changes it reports arrive on `subscriptions`.
fn build_server(
    options: &GatewayOptions,
    upstream: &Arc<Upstream>,
    subscriptions: mpsc::UnboundedSender<SubscriptionChange>,
) -> Result<LocalServer, GatewayError> {
    let completing = upstream.clone();
    let reading = upstream.clone();
    let server = LocalServer::builder(options.name.clone(), options.version.clone())
        .eras(Eras::Both)
        // A downstream client's calls run on their connection's tasks (the wire transports
        // feed the connection; nothing answers in a caller's task).
        .answer_in_place(false)
        // Its answers are read as JSON by downstream clients.
        .served_on_a_wire(true)
        .method(
            "completion/complete",
            move |_context: RequestContext, params| {
                let upstream = completing.clone();
                async move { upstream.complete(params).await }
            },
        )
        .read_fallback(move |_context, request| {
            let upstream = reading.clone();
            async move { upstream.read_resource(None, request).await }
        })
        // Downstream subscriptions, counted across clients: upstream, a URI is subscribed
        // while anyone downstream is.
        .resource_subscriptions(move |uri, subscribed| {
            let _ = subscriptions.send((uri.to_owned(), subscribed));
        })
        // Every list may change while the gateway runs, and may be empty when it starts.
        .capabilities(|capabilities| {
            capabilities.prompts = Some(ListChangedCapability {
                list_changed: Some(true),
                extra: Map::new(),
            });
            let resources = capabilities
                .resources
                .get_or_insert_with(ResourcesCapability::default);
            resources.list_changed = Some(true);
            capabilities.completions = Some(Value::Object(Map::new()));
        })
        .build()?;
    Ok(server)
}

impl Inner {
    /// Rebuilds the mirror: tools from the facade's catalog, prompts and resources from its
    /// kept lists (listed again only where a server said they changed).
    async fn refresh(&self) {
        let _one_at_a_time = self.rebuilding.lock().await;
        let client = &self.upstream.client;
        let prefixing = self.options.prefixing;
        let separator = self.options.separator.as_str();

        let catalog = client.tools();
        let entries = catalog.entries();
        let pairs: Vec<(&str, &str)> = entries
            .iter()
            .map(|e| (e.server.as_str(), e.tool.name.as_str()))
            .collect();
        let names = exposed_names(&pairs, prefixing, separator);
        let mut kept = Servable::default();
        let tools = entries
            .iter()
            .zip(names)
            .filter(|(entry, name)| kept.first(&entry.server, "tool", name))
            .map(|(entry, name)| {
                let mut definition = entry.tool.clone();
                definition.name = name;
                let upstream = self.upstream.clone();
                let qualified: Arc<str> = Arc::from(entry.qualified_name.as_str());
                let server: Arc<str> = Arc::from(entry.server.as_str());
                LocalTool::from_definition(definition, move |context, arguments| {
                    let upstream = upstream.clone();
                    let qualified = qualified.clone();
                    let server = server.clone();
                    async move {
                        upstream
                            .call_tool(context, &server, &qualified, arguments)
                            .await
                    }
                })
            })
            .collect();
        if let Err(e) = self.server.set_tools(tools) {
            tracing::warn!(error = %e, "the gateway's tool list was not updated");
        }

        let prompts = client.prompts().await.items;
        let entries = prompts.entries();
        let pairs: Vec<(&str, &str)> = entries
            .iter()
            .map(|e| (e.server.as_str(), e.prompt.name.as_str()))
            .collect();
        let names = exposed_names(&pairs, prefixing, separator);
        let mut prompt_routes = std::collections::HashMap::new();
        let mut kept = Servable::default();
        let prompts = entries
            .iter()
            .zip(names)
            .filter(|(entry, name)| kept.first(&entry.server, "prompt", name))
            .map(|(entry, name)| {
                prompt_routes.insert(
                    name.clone(),
                    PromptRoute {
                        server: entry.server.clone(),
                        qualified: entry.qualified_name.clone(),
                        original: entry.prompt.name.clone(),
                    },
                );
                let mut definition = entry.prompt.clone();
                definition.name = name.clone();
                let upstream = self.upstream.clone();
                let name: Arc<str> = Arc::from(name);
                LocalPrompt::from_definition(definition, move |context, arguments| {
                    let upstream = upstream.clone();
                    let name = name.clone();
                    async move { upstream.get_prompt(context, &name, arguments).await }
                })
            })
            .collect();

        let listed = client.resources().await.items;
        let templates = client.resource_templates().await.items;
        let mut routes = Routes {
            prompts: prompt_routes,
            ..Routes::default()
        };
        let mut resources = Vec::with_capacity(listed.len());
        for entry in listed {
            // The first server to list a URI serves it (a URI means one thing).
            if entry.resource.uri.is_empty() || routes.resources.contains_key(&entry.resource.uri) {
                continue;
            }
            routes
                .resources
                .insert(entry.resource.uri.clone(), entry.server.clone());
            let upstream = self.upstream.clone();
            let server: Arc<str> = Arc::from(entry.server.as_str());
            resources.push(LocalResource::from_definition(
                entry.resource,
                move |_context, request| {
                    let upstream = upstream.clone();
                    let server = server.clone();
                    async move { upstream.read_resource(Some(&server), request).await }
                },
            ));
        }
        let mut served_templates = Vec::with_capacity(templates.len());
        for entry in templates {
            if entry.template.uri_template.is_empty()
                || routes.templates.contains_key(&entry.template.uri_template)
            {
                continue;
            }
            routes
                .templates
                .insert(entry.template.uri_template.clone(), entry.server.clone());
            let upstream = self.upstream.clone();
            let server: Arc<str> = Arc::from(entry.server.as_str());
            served_templates.push(LocalResourceTemplate::from_definition(
                entry.template,
                move |_context, request| {
                    let upstream = upstream.clone();
                    let server = server.clone();
                    async move { upstream.read_resource(Some(&server), request).await }
                },
            ));
        }
        // Routes first: a client told of a new prompt may ask for it at once.
        *self
            .upstream
            .routes
            .write()
            .unwrap_or_else(|p| p.into_inner()) = routes;
        if let Err(e) = self.server.set_prompts(prompts) {
            tracing::warn!(error = %e, "the gateway's prompt list was not updated");
        }
        if let Err(e) = self.server.set_resources(resources, served_templates) {
            tracing::warn!(error = %e, "the gateway's resource list was not updated");
        }
    }
}

/// The names a list serves so far: an entry a server got wrong (no name, or one served
/// already — a server listing a name twice) is left out, with a warning, so the rest of the
/// list is served.
#[derive(Default)]
struct Servable {
    names: std::collections::HashSet<String>,
}

impl Servable {
    /// Whether `name` is the first servable entry of that name.
    fn first(&mut self, server: &str, what: &str, name: &str) -> bool {
        if name.is_empty() {
            tracing::warn!(server, "a {what} without a name is not served");
            return false;
        }
        if !self.names.insert(name.to_owned()) {
            tracing::warn!(server, name, "a {what} listed twice is served once");
            return false;
        }
        true
    }
}

/// What the facade reports that the gateway follows.
struct Changes {
    tools: tokio::sync::broadcast::Receiver<mcp_client::CatalogChange>,
    lists: tokio::sync::broadcast::Receiver<mcp_client::ListChange>,
    notifications: tokio::sync::broadcast::Receiver<ClientNotification>,
}

/// Follows the facade until the gateway is gone: each burst of list changes (tools, prompts,
/// resources of any server) rebuilds the mirror once, `settle` after it began; a resource's
/// updates reach its downstream subscribers.
async fn follow(gateway: std::sync::Weak<Inner>, mut changes: Changes) {
    let mut rebuild_at: Option<tokio::time::Instant> = None;
    loop {
        let rebuild = async {
            match rebuild_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let changed = tokio::select! {
            change = changes.tools.recv() => Some(!matches!(change, Err(RecvError::Closed))),
            change = changes.lists.recv() => Some(!matches!(change, Err(RecvError::Closed))),
            notification = changes.notifications.recv() => match notification {
                Ok(ClientNotification {
                    notification: ServerNotification::ResourceUpdated(updated),
                    ..
                }) => {
                    let Some(gateway) = gateway.upgrade() else { return };
                    gateway.server.notify_resource_updated(&updated.uri);
                    None
                }
                Err(RecvError::Closed) => Some(false),
                _ => None,
            },
            () = rebuild => {
                rebuild_at = None;
                let Some(gateway) = gateway.upgrade() else { return };
                gateway.refresh().await;
                None
            }
        };
        match changed {
            Some(false) => return,
            Some(true) if rebuild_at.is_none() => {
                let Some(settle) = gateway.upgrade().map(|g| g.options.settle) else {
                    return;
                };
                rebuild_at = Some(tokio::time::Instant::now() + settle);
            }
            _ => {}
        }
    }
}

/// Makes (and ends) downstream subscriptions upstream, one at a time in the order they came,
/// each within [`SUBSCRIPTION_TIMEOUT`]; apart from `follow`, so a slow server holds up
/// nothing else.
async fn subscribe_upstream(
    upstream: std::sync::Weak<Upstream>,
    mut changes: mpsc::UnboundedReceiver<SubscriptionChange>,
) {
    while let Some((uri, subscribe)) = changes.recv().await {
        let Some(upstream) = upstream.upgrade() else {
            return;
        };
        let made =
            tokio::time::timeout(SUBSCRIPTION_TIMEOUT, upstream.subscription(&uri, subscribe));
        if made.await.is_err() {
            tracing::warn!(uri, subscribe, "an upstream subscription change timed out");
        }
    }
}

/// How long one upstream subscription change may take.
const SUBSCRIPTION_TIMEOUT: Duration = Duration::from_secs(30);
