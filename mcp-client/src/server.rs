//! One configured server inside the client: its supervisor, its call stack, and what is kept of
//! its lists.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::sync::lock;
use mcp_core::types::Prompt;
use mcp_core::{Error, McpServiceExt, RequestOptions};
use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use tokio::sync::{broadcast, mpsc};

use crate::config::ServerConfig;
use crate::connect::{ServerConnector, SessionSetup};
use crate::handler::{ClientNotification, FacadeHandler};
use crate::resources::{Resubscriber, ServerResources};
use crate::router::{Endpoint, EndpointParts, Failover, Router, RouterParts, RoutingPolicy};
use crate::stack::{self, ServerStack, StackPolicy};
use crate::status::{ServerReport, ServerStatus};
use crate::supervisor::{
    Lists, SupervisionPolicy, Supervisor, SupervisorListener, SupervisorParts,
};
use crate::transports::TransportRegistry;
use mcp_resources::ResourceListing;
use mcp_session::{Fetched, ListCache};

/// How long stopping a server waits for the `tasks/cancel` of tasks its follower gave up on
/// (as closing a session waits for its queued cancellations).
const TASK_CANCEL_FLUSH: Duration = Duration::from_secs(1);

/// Everything the client keeps per server.
pub(crate) struct ManagedServer {
    pub(crate) config: ServerConfig,
    pub(crate) supervisor: Arc<Supervisor>,
    pub(crate) stack: ServerStack,
    transport_name: &'static str,
    pub(crate) prompts: ListCache<Vec<Prompt>>,
    pub(crate) resource_listing: ListCache<ResourceListing>,
    pub(crate) setup: Arc<Mutex<SessionSetup>>,
    /// Reads, resources resubscribed on every new session, and (feature `resources`) the
    /// resource manager.
    pub(crate) resources: Arc<ServerResources>,
    /// Where this server's calls, caches, sessions and reconnects are counted.
    pub(crate) metrics: mcp_metrics::ServerHandle,
    /// A server with several endpoints: where its sessions are opened and its calls go.
    router: Option<Arc<Router>>,
    /// The pending re-listing of kept prompt and resource lists after a change.
    list_refresh: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What building a server needs from the client.
pub(crate) struct ServerContext<'a> {
    pub(crate) harness: Arc<dyn ClientHandler>,
    pub(crate) session_options: SessionOptions,
    pub(crate) stack: &'a StackPolicy,
    pub(crate) supervision: &'a SupervisionPolicy,
    pub(crate) transports: &'a TransportRegistry,
    pub(crate) notifications: broadcast::Sender<ClientNotification>,
    pub(crate) metrics: &'a mcp_metrics::Metrics,
    #[cfg(feature = "oauth")]
    pub(crate) oauth: &'a crate::auth::OAuthPolicy,
    /// The client's own region (servers with endpoints prefer its endpoints).
    pub(crate) region: Option<&'a str>,
    pub(crate) routing: &'a RoutingPolicy,
    pub(crate) failovers: broadcast::Sender<Failover>,
    /// The fleet's shared store (fleet-wide rate limits), when there is one.
    #[cfg(feature = "fleet")]
    pub(crate) fleet: Option<&'a Arc<mcp_fleet::Fleet>>,
}

/// The fleet's permits for a server whose rate limit is `scope: "fleet"`; `None` (the local
/// limit, with a warning) when no fleet store is configured.
#[cfg(feature = "rate-limit")]
fn shared_permits(
    config: &ServerConfig,
    context: &ServerContext<'_>,
) -> Option<Arc<dyn mcp_resilience::SharedPermits>> {
    let limit = config.settings.rate_limit.as_ref()?;
    if limit.scope != crate::config::RateLimitScope::Fleet {
        return None;
    }
    #[cfg(feature = "fleet")]
    if let Some(fleet) = context.fleet {
        return Some(fleet.permits(&config.name));
    }
    let _ = context;
    tracing::warn!(
        server = %config.name,
        "rate_limit.scope is \"fleet\" but no fleet store is configured (top-level `store` or \
         MCPH_STORE): the limit holds for this process only"
    );
    None
}

impl ManagedServer {
    /// Builds the server (nothing is started yet).
    pub(crate) fn new(config: ServerConfig, context: ServerContext<'_>) -> Arc<ManagedServer> {
        let (events_tx, events_rx) = mpsc::channel(crate::supervisor::EVENT_QUEUE);
        #[cfg(feature = "resources")]
        let relay = crate::resources::NotificationRelay::new();
        let handler = Arc::new(FacadeHandler {
            server: config.name.clone(),
            harness: context.harness.clone(),
            supervisor: events_tx.clone(),
            notifications: context.notifications.clone(),
            #[cfg(feature = "resources")]
            resources: relay.clone(),
        });
        let setup = Arc::new(Mutex::new(SessionSetup::default()));
        let metrics = context.metrics.server(&config.name);
        if let Some((host, port)) = config.transport.url().and_then(host_and_port) {
            metrics.set_server_address(Some(host), port);
        }
        #[cfg(feature = "oauth")]
        let auth = context.oauth.provider_for(&config);
        #[cfg(feature = "oauth")]
        if let Some(provider) = &auth {
            let metrics = metrics.clone();
            provider
                .client()
                .on_refresh(move || metrics.token_refreshed());
        }
        #[cfg(not(feature = "oauth"))]
        let auth: crate::connect::ServerAuth = ();
        // A routed server's own connector is its first endpoint's (the router opens its
        // sessions; this one names the transport).
        let first = config.at_endpoint(0).unwrap_or_else(|| config.clone());
        let server_connector = ServerConnector::new(
            first,
            context.transports,
            handler.clone(),
            context.session_options.clone(),
            setup.clone(),
            auth.clone(),
        );
        let endpoints = (config.is_routed() && context.stack.routing).then(|| {
            endpoints(
                &config,
                &context,
                &metrics,
                |endpoint_config: ServerConfig| {
                    Arc::new(ServerConnector::new(
                        endpoint_config,
                        context.transports,
                        handler.clone(),
                        context.session_options.clone(),
                        setup.clone(),
                        auth.clone(),
                    ))
                },
            )
        });
        let unreachable = match &endpoints {
            // Unreachable only when no endpoint can be reached at all.
            Some(endpoints) => endpoints
                .iter()
                .all(|e| e.connector.unreachable().is_some())
                .then(|| endpoints.first().and_then(|e| e.connector.unreachable()))
                .flatten()
                .map(str::to_owned),
            None if config.is_routed() => Some(format!(
                "server \"{}\" lists {} endpoints: routing across endpoints is in the \
                 `enterprise` profile (this client's stack policy does not route; features: {})",
                config.name,
                config.endpoints.len(),
                crate::PROFILE
            )),
            None => server_connector.unreachable().map(str::to_owned),
        };
        let initial = if !config.enabled {
            ServerStatus::Disabled
        } else if let Some(reason) = unreachable {
            ServerStatus::Unavailable {
                reason,
                kind: mcp_core::ErrorKind::ServerUnavailable,
            }
        } else {
            ServerStatus::Starting
        };
        let transport_name = server_connector.transport_name();
        metrics.set_network_transport(transport_name);
        let connector: Arc<dyn mcp_session::SessionConnector> = Arc::new(server_connector);
        let router = endpoints.map(|endpoints| {
            Router::new(RouterParts {
                server: config.name.clone(),
                endpoints,
                policy: context.routing.clone(),
                failback_after: config.settings.failback_after,
                probe_interval: config.settings.probe_interval,
                connect_timeout: config.startup_timeout,
                ping_timeout: context.supervision.health_check_timeout,
                drain_limit: config.tool_timeout,
                supervisor: events_tx.clone(),
                failovers: context.failovers.clone(),
                metrics: metrics.clone(),
            })
        });
        let supervisor = Supervisor::new(
            SupervisorParts {
                name: config.name.clone(),
                connector: connector.clone(),
                router: router.clone(),
                policy: context.supervision.clone(),
                connect_timeout: config.startup_timeout,
                request_timeout: config.tool_timeout,
                probe_interval: config.settings.probe_interval,
                events: (events_tx, events_rx),
                metrics: metrics.clone(),
            },
            initial,
        );
        let stack = stack::build(
            &config,
            context.stack,
            handler.clone(),
            &context.session_options,
            stack::Upstream {
                supervisor: supervisor.clone(),
                connector,
                router: router.clone(),
            },
            &metrics,
            #[cfg(feature = "rate-limit")]
            shared_permits(&config, &context),
        );
        let resources = Arc::new(ServerResources::new(
            &config,
            stack.service(),
            metrics.clone(),
            #[cfg(feature = "resources")]
            &relay,
        ));
        let resubscriber: Arc<dyn Resubscriber> = resources.clone();
        supervisor.resubscribe_with(&resubscriber);
        Arc::new(ManagedServer {
            config,
            resources,
            metrics,
            router,
            supervisor,
            stack,
            transport_name,
            prompts: ListCache::default(),
            resource_listing: ListCache::default(),
            setup,
            list_refresh: Mutex::new(None),
        })
    }

    /// Starts the supervisor (unless the server is disabled or cannot be reached in this
    /// profile) and waits until its start-up attempt is over.
    pub(crate) async fn start(&self, listener: Arc<dyn SupervisorListener>) {
        if !matches!(self.supervisor.snapshot().status, ServerStatus::Starting) {
            return;
        }
        self.supervisor.start(listener);
        // Start-up is bounded by one startup_timeout; the margin covers the handover.
        self.supervisor
            .started(self.config.startup_timeout + Duration::from_secs(1))
            .await;
        if let Some(router) = &self.router {
            // Not for a server stopped meanwhile (its prober would end at once anyway).
            if self.supervisor.snapshot().status != ServerStatus::Stopped {
                router.start_probing(&self.supervisor);
            }
        }
    }

    /// The primary session, when the server is ready.
    pub(crate) fn ready_session(&self) -> Option<ClientSession> {
        let snapshot = self.supervisor.snapshot();
        snapshot
            .status
            .is_ready()
            .then_some(snapshot.session)
            .flatten()
    }

    /// Whether the server can take calls now.
    pub(crate) fn is_ready(&self) -> bool {
        self.supervisor.snapshot().status.is_ready()
    }

    /// Forgets the `which` lists; returns those in use (worth listing again at once).
    pub(crate) fn lists_changed(&self, which: Lists) -> Lists {
        Lists {
            prompts: which.prompts && self.prompts.invalidate(),
            resources: which.resources && self.resource_listing.invalidate(),
        }
    }

    /// The prompt list, kept or fetched through the call stack.
    pub(crate) async fn prompt_list(&self) -> Result<Fetched<Vec<Prompt>>, Error> {
        let service = self.stack.service();
        self.prompts
            .get_or_fetch(async move { service.list_all_prompts(RequestOptions::new()).await })
            .await
    }

    /// The resources and templates, kept or fetched through the call stack (a server that
    /// cannot list templates has none).
    pub(crate) async fn resource_listing(&self) -> Result<Fetched<ResourceListing>, Error> {
        let service = self.stack.service();
        self.resource_listing
            .get_or_fetch(async move {
                let resources = service.list_all_resources(RequestOptions::new()).await?;
                // A server without templates answers "method not found"; any other failure
                // is not an empty list.
                let templates = match service
                    .list_all_resource_templates(RequestOptions::new())
                    .await
                {
                    Ok(templates) => templates,
                    Err(e) if e.code() == Some(mcp_core::jsonrpc::codes::METHOD_NOT_FOUND) => {
                        Vec::new()
                    }
                    Err(e) => return Err(e),
                };
                Ok(ResourceListing::new(resources, templates))
            })
            .await
    }

    /// Runs `refresh` as this server's one pending list refresh (none while one is pending),
    /// owned by the server: stopped with it.
    pub(crate) fn refresh_lists_with(
        &self,
        refresh: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let mut pending = lock(&self.list_refresh);
        if pending.as_ref().is_some_and(|task| !task.is_finished()) {
            return;
        }
        *pending = Some(tokio::spawn(refresh));
    }

    /// Stops the supervisor and the pool, closing every session (each close bounded).
    pub(crate) async fn stop(&self, limit: Duration) {
        if let Some(task) = lock(&self.list_refresh).take() {
            task.abort();
        }
        // While the session is there: subscriptions end on the server too (bounded).
        let _ = tokio::time::timeout(limit, self.resources.close()).await;
        self.metrics.clear_gauges();
        if let Some(router) = &self.router {
            router.stop_probing();
        }
        // The cancellations of tasks given up on go out before the sessions close.
        self.stack
            .tasks
            .flush_cancels(limit.min(TASK_CANCEL_FLUSH))
            .await;
        self.supervisor.stop(limit).await;
        if let Some(router) = &self.router {
            router.stop(limit).await;
        }
        #[cfg(feature = "pool")]
        if let Some(pool) = &self.stack.pool {
            let _ = tokio::time::timeout(limit, pool.close()).await;
        }
        self.prompts.clear();
        self.resource_listing.clear();
    }

    /// The status display of this server; `tools` is its count in the catalog.
    pub(crate) fn report(&self, tools: usize) -> ServerReport {
        let snapshot = self.supervisor.snapshot();
        let session = snapshot.session.as_ref();
        ServerReport {
            name: self.config.name.clone(),
            status: snapshot.status.clone(),
            transport: self.config.transport.kind().to_owned(),
            tools,
            server_info: session.map(|s| s.server_info().server_info.clone()),
            protocol_version: session.map(ClientSession::protocol_version),
            breaker: self.stack.gauges.breaker_status(),
            reconnects: self.supervisor.reconnects(),
            last_error: self.supervisor.last_error(),
            pool: self.stack.gauges.pool_report(),
            endpoints: self.stack.gauges.endpoint_reports(),
        }
    }

    /// The transport's name as in OpenTelemetry's `network.transport` (`pipe`, `tcp`, …).
    pub(crate) fn network_transport(&self) -> &'static str {
        self.transport_name
    }
}

impl Drop for ManagedServer {
    /// The supervisor's task holds the supervisor while it runs; the server's owner ends it.
    fn drop(&mut self) {
        if let Some(task) = lock(&self.list_refresh).take() {
            task.abort();
        }
        if let Some(router) = &self.router {
            router.stop_probing();
        }
        self.supervisor.abort();
    }
}

/// The endpoints of a routed server, each with its own connector (from `connector`, given
/// the endpoint's own entry), breakers and metrics.
fn endpoints(
    config: &ServerConfig,
    context: &ServerContext<'_>,
    metrics: &mcp_metrics::ServerHandle,
    connector: impl Fn(ServerConfig) -> Arc<ServerConnector>,
) -> Vec<Endpoint> {
    let mut shown: Vec<String> = Vec::new();
    config
        .endpoints
        .iter()
        .enumerate()
        .filter_map(|(index, endpoint)| {
            let own = config.at_endpoint(index)?;
            let (address, port) = host_and_port(&endpoint.url).unzip();
            // The URL as shown (and as metrics key it): without user info or query, so two
            // endpoints that differ only there get their place in the list added.
            let mut url = mcp_wire::redact::redact_url(&endpoint.url);
            if shown.contains(&url) {
                url = format!("{url} (endpoint {index})");
            }
            shown.push(url.clone());
            let label = match &endpoint.region {
                Some(region) => format!("{} [{region}]", config.name),
                None => format!("{} [{url}]", config.name),
            };
            Some(Endpoint::new(EndpointParts {
                index,
                url: url.clone(),
                region: endpoint.region.clone(),
                local: context.region.is_none() || endpoint.region.as_deref() == context.region,
                breakers: stack::breakers_for(config, context.stack, label),
                metrics: metrics.endpoint(mcp_metrics::EndpointInfo {
                    url,
                    address: address.map(str::to_owned),
                    port: port.flatten(),
                    region: endpoint.region.clone(),
                }),
                #[cfg(feature = "pool")]
                pooled: stack::wants_pool(&own, context.stack),
                connector: connector(own.clone()),
                config: own,
            }))
        })
        .collect()
}

/// The host and port of a server URL (`scheme://[user@]host[:port]/…`), for the
/// `server.address` and `server.port` attributes.
pub(crate) fn host_and_port(url: &str) -> Option<(&str, Option<u16>)> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = host_port.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return Some((host, port));
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) => Some((host, port.parse().ok())),
        None => Some((host_port, None)).filter(|(h, _)| !h.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::host_and_port;

    #[test]
    fn server_addresses_come_from_the_url() {
        assert_eq!(
            host_and_port("https://user:pw@api.example.com:8443/mcp?x=1"),
            Some(("api.example.com", Some(8443)))
        );
        assert_eq!(
            host_and_port("http://127.0.0.1/mcp"),
            Some(("127.0.0.1", None))
        );
        assert_eq!(host_and_port("ws://[::1]:9000"), Some(("::1", Some(9000))));
        assert_eq!(host_and_port("not a url"), None);
    }
}
