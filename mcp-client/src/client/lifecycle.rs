//! The servers' life cycle under one client: starting them all, adding and removing one at run
//! time, the logging level every session gets, and shutting down.

use std::sync::{Arc, Mutex, RwLock, Weak};

use mcp_core::sync::lock;
use mcp_core::types::LoggingLevel;
use mcp_core::{Error, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::SessionOptions;
use tokio::sync::{broadcast, Semaphore};
use tokio::task::JoinSet;

use super::{read, server_not_ready, write, Inner, McpClient, REGION_VARIABLE};
use crate::builder::McpClientBuilder;
use crate::catalog::Catalog;
use crate::config::ServerConfig;
use crate::llm::LlmLists;
use crate::server::{ManagedServer, ServerContext};
use crate::status::ServerReport;
use crate::supervisor::{Lists, SupervisorListener};

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
}

impl Inner {
    fn build_server(&self, config: ServerConfig) -> Arc<ManagedServer> {
        let mut options = SessionOptions {
            client_info: self.options.client_info.clone(),
            initialize_timeout: config.startup_timeout,
            request_timeout: config.tool_timeout,
            // Every stack follows tasks (mcp-tasks' layer), so every session declares them.
            tasks: true,
            ..SessionOptions::default()
        };
        if let Some(hook) = &self.session_options {
            options = hook(&config, options);
        }
        let harness = (self.handler)(&config.name);
        ManagedServer::new(
            config,
            ServerContext {
                harness,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClientConfig;

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
