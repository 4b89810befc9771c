//! Each server's resources: reads, resources resubscribed on every new session, and — with the
//! `resources` feature (`professional` and up) — [`mcp_resources::ResourceManager`]: the
//! per-URI state machine (UNKNOWN → SUBSCRIBED → CACHED → STALE …), contents cached within
//! their TTL in a byte-bounded cache, update observers.
//!
//! Wiring (the manager owns no task and no session):
//! - reads go through the server's call stack (timeout, retry, breaker, pool);
//! - subscriptions go to the supervised session, where the server sends its updates: on every
//!   new session the supervisor calls [`Resubscriber::resubscribe`] before the session is ready,
//!   which hands the manager the new session and its capabilities (cached contents go STALE,
//!   subscriptions are made again);
//! - the server's notifications reach the manager through the [`NotificationRelay`] in the
//!   session's handler;
//! - stopping the server closes the manager (everything UNSUBSCRIBED, bounded).
//!
//! Without the feature (`minimal`), reads go through the stack uncached and the subscribed URIs
//! are a set, subscribed again on every new session.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_core::types::ReadResourceResult;
use mcp_core::{BoxService, Error};
#[cfg(not(feature = "resources"))]
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::ClientSession;
use tokio::time::Instant;

use crate::config::ServerConfig;

#[cfg(feature = "resources")]
pub use mcp_resources::NotificationRelay;

/// What a supervisor resubscribes on every new session before it is ready.
#[async_trait]
pub(crate) trait Resubscriber: Send + Sync {
    /// Resubscribes what the previous session had subscribed (within `deadline`; failures
    /// are logged).
    async fn resubscribe(&self, session: &ClientSession, deadline: Instant);
}

/// One server's resources.
pub(crate) struct ServerResources {
    server: String,
    /// Where cache hits and misses of resource contents are counted.
    #[cfg(feature = "resources")]
    metrics: mcp_metrics::ServerHandle,
    /// The server's call stack: reads go through it.
    #[cfg(not(feature = "resources"))]
    reads: BoxService,
    #[cfg(not(feature = "resources"))]
    request_timeout: std::time::Duration,
    #[cfg(feature = "resources")]
    manager: mcp_resources::ResourceManager,
    #[cfg(not(feature = "resources"))]
    subscriptions: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl ServerResources {
    /// Resources of `config`'s server, read through `reads`; with the `resources` feature the
    /// manager is attached to `relay` (the server's notifications).
    pub(crate) fn new(
        config: &ServerConfig,
        reads: BoxService,
        metrics: mcp_metrics::ServerHandle,
        #[cfg(feature = "resources")] relay: &NotificationRelay,
    ) -> ServerResources {
        #[cfg(not(feature = "resources"))]
        let _ = metrics;
        #[cfg(feature = "resources")]
        let manager = {
            let resource_config =
                mcp_resources::ResourceConfig::default().with_request_timeout(config.tool_timeout);
            // Subscriptions are offered (or not) by each session: `resubscribe` says.
            let manager = mcp_resources::ResourceManager::new(
                reads.clone(),
                &mcp_core::types::ServerCapabilities::default(),
                resource_config,
            );
            relay.attach(&manager);
            manager
        };
        ServerResources {
            server: config.name.clone(),
            #[cfg(feature = "resources")]
            metrics,
            #[cfg(not(feature = "resources"))]
            reads,
            #[cfg(not(feature = "resources"))]
            request_timeout: config.tool_timeout,
            #[cfg(feature = "resources")]
            manager,
            #[cfg(not(feature = "resources"))]
            subscriptions: std::sync::Mutex::new(std::collections::BTreeSet::new()),
        }
    }

    /// The manager (feature `resources`).
    #[cfg(feature = "resources")]
    pub(crate) fn manager(&self) -> &mcp_resources::ResourceManager {
        &self.manager
    }

    /// Reads `uri`: from the manager's cache while it is fresh (feature `resources`), through
    /// the call stack otherwise.
    pub(crate) async fn read(&self, uri: &str) -> Result<Arc<ReadResourceResult>, Error> {
        #[cfg(feature = "resources")]
        {
            let (result, source) = self.manager.read_with_source(uri).await?;
            let hit = source == mcp_resources::ReadSource::Cache;
            self.metrics
                .cache(mcp_metrics::CacheKind::ResourceContents, hit);
            Ok(result)
        }
        #[cfg(not(feature = "resources"))]
        {
            // No cache here: nothing to count.
            self.reads
                .read_resource(uri, RequestOptions::new())
                .await
                .map(Arc::new)
        }
    }

    /// Subscribes to `uri` on `session` (the supervised one) and keeps the subscription across
    /// sessions.
    pub(crate) async fn subscribe(&self, session: &ClientSession, uri: &str) -> Result<(), Error> {
        #[cfg(feature = "resources")]
        {
            let _ = session;
            self.manager.subscribe(uri).await
        }
        #[cfg(not(feature = "resources"))]
        {
            let options = RequestOptions::new().with_timeout(self.request_timeout);
            session.subscribe_resource(uri, options).await?;
            mcp_core::sync::lock(&self.subscriptions).insert(uri.to_owned());
            Ok(())
        }
    }

    /// Ends the subscription to `uri`.
    pub(crate) async fn unsubscribe(
        &self,
        session: &ClientSession,
        uri: &str,
    ) -> Result<(), Error> {
        #[cfg(feature = "resources")]
        {
            let _ = session;
            self.manager.unsubscribe(uri).await
        }
        #[cfg(not(feature = "resources"))]
        {
            mcp_core::sync::lock(&self.subscriptions).remove(uri);
            let options = RequestOptions::new().with_timeout(self.request_timeout);
            session.unsubscribe_resource(uri, options).await
        }
    }

    /// The server is going away for good: subscriptions end (bounded), contents are dropped.
    pub(crate) async fn close(&self) {
        #[cfg(feature = "resources")]
        self.manager.close().await;
        #[cfg(not(feature = "resources"))]
        mcp_core::sync::lock(&self.subscriptions).clear();
    }
}

#[async_trait]
impl Resubscriber for ServerResources {
    async fn resubscribe(&self, session: &ClientSession, deadline: Instant) {
        // At most half the time left: a slow server (or many subscriptions) must not cost the
        // session itself, which still has its tools to list; what is not resubscribed in time is
        // logged, and its cached contents are stale anyway.
        let now = Instant::now();
        let deadline = now + deadline.saturating_duration_since(now) / 2;
        #[cfg(feature = "resources")]
        {
            let resubscriber = mcp_resources::NewSession::new()
                .subscription_service(Arc::new(session.clone()))
                .capabilities(&session.server_info().capabilities);
            match tokio::time::timeout_at(deadline, self.manager.reconnected(resubscriber)).await {
                Ok(Ok(report)) => {
                    for (uri, e) in report.failed {
                        tracing::warn!(server = %self.server, uri, error = %e, "could not subscribe to a resource again");
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!(server = %self.server, error = %e, "could not subscribe to the resources again")
                }
                Err(_) => {
                    tracing::warn!(server = %self.server, "subscribing to the resources again ran out of time")
                }
            }
        }
        #[cfg(not(feature = "resources"))]
        {
            let uris: Vec<String> = mcp_core::sync::lock(&self.subscriptions)
                .iter()
                .cloned()
                .collect();
            for uri in uris {
                let options = RequestOptions::new()
                    .with_timeout(self.request_timeout)
                    .with_deadline(deadline);
                if let Err(e) = session.subscribe_resource(&uri, options).await {
                    tracing::warn!(server = %self.server, uri, error = %e, "could not subscribe to a resource again");
                }
            }
        }
    }
}
