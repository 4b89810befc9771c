//! Resources across servers: every server's list, reads, subscriptions, and finding the server
//! that offers a URI.

use std::sync::Arc;

use mcp_core::types::ReadResourceResult;
use mcp_core::{Delivery, Error, ErrorKind};

use super::{
    server_not_ready, CatalogResource, CatalogResourceTemplate, FromAllServers, McpClient,
};
use crate::routing::{offer, pick_resource_server};
use crate::server::ManagedServer;
use mcp_resources::ResourceListing;

impl McpClient {
    /// Resources of every ready server, in configuration order. Each server's list is kept
    /// until it announces a change or reconnects (the same list `read_resource` routes by).
    pub async fn resources(&self) -> FromAllServers<Vec<CatalogResource>> {
        let listed = self.resource_listings().await;
        FromAllServers {
            items: listed
                .items
                .into_iter()
                .flat_map(|(server, listing)| {
                    listing
                        .resources()
                        .iter()
                        .map(|resource| CatalogResource {
                            server: server.clone(),
                            resource: resource.clone(),
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
            errors: listed.errors,
        }
    }

    /// Resource templates of every ready server, in configuration order, from the same kept
    /// listings as [`resources`](Self::resources).
    pub async fn resource_templates(&self) -> FromAllServers<Vec<CatalogResourceTemplate>> {
        let listed = self.resource_listings().await;
        FromAllServers {
            items: listed
                .items
                .into_iter()
                .flat_map(|(server, listing)| {
                    listing
                        .templates()
                        .iter()
                        .map(|template| CatalogResourceTemplate {
                            server: server.clone(),
                            template: template.clone(),
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
            errors: listed.errors,
        }
    }

    /// Every ready server's resource listing, kept or listed again.
    async fn resource_listings(&self) -> FromAllServers<Vec<(String, Arc<ResourceListing>)>> {
        let inner = self.inner.clone();
        self.gather("resources/list", move |server| {
            let inner = inner.clone();
            async move {
                let fetched = server.resource_listing().await?;
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
    /// (feature `resources`). It resubscribes on every new session; the next
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
    /// It resubscribes on every new session of the server.
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
        let listings = self.resource_listings().await;
        let offers: Vec<_> = listings
            .items
            .iter()
            .map(|(server, listing)| (server.clone(), offer(listing, uri)))
            .collect();
        pick_resource_server(uri, &offers)
    }
}
