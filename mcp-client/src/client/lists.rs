//! What the client gathers from every server: the tool catalog (rebuilt when a server's tools
//! change), prompts, and the prompt and resource lists listed again when they change.

use std::sync::Arc;

use mcp_core::sync::lock;
use mcp_core::types::Prompt;
use mcp_core::Error;
use tokio::task::JoinSet;

use super::{read, write, FromAllServers, Inner, McpClient};
use crate::catalog::{Catalog, CatalogChange, CatalogPrompt, CatalogTool, ListChange, ListKind};
use crate::server::ManagedServer;
use crate::status::ServerStatus;
use crate::supervisor::Lists;
use mcp_resources::ResourceListing;
use mcp_session::Fetched;

impl McpClient {
    /// Prompts of every ready server under qualified names (`server__prompt`). Each server's
    /// list is fetched once and kept until it announces a change or reconnects.
    pub async fn prompts(&self) -> FromAllServers<Catalog<CatalogPrompt>> {
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
        FromAllServers {
            items: Catalog::build(entries),
            errors: gathered.errors,
        }
    }

    /// Runs `f` on every ready server concurrently, keeping per-server failures apart.
    pub(super) async fn gather<T, F, Fut>(
        &self,
        what: &str,
        f: F,
    ) -> FromAllServers<Vec<(String, T)>>
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
        FromAllServers {
            items: answers.into_iter().map(|(_, n, t)| (n, t)).collect(),
            errors: errors.into_iter().map(|(_, n, e)| (n, e)).collect(),
        }
    }
}

impl Inner {
    /// A server's prompts or resources may have changed: the lists are forgotten, and those
    /// that were kept (someone uses them) are listed again after a short pause (a burst of
    /// notifications costs one listing), their differences reported on `list_changes`.
    pub(super) fn lists_changed(inner: &Arc<Inner>, name: &str, which: Lists) {
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
                    match server.resource_listing().await {
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
    pub(super) fn noted_prompts(
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
    pub(super) fn noted_resources(
        &self,
        server: &ManagedServer,
        fetched: Fetched<ResourceListing>,
    ) -> Arc<ResourceListing> {
        server
            .metrics
            .cache(mcp_metrics::CacheKind::Resources, fetched.hit);
        let server = server.config.name.as_str();
        if let Some(before) = &fetched.replaced {
            self.report_list_change(ListChange::between(
                server,
                ListKind::Resources,
                before.resources(),
                fetched.list.resources(),
                |r| r.uri.clone(),
            ));
            self.report_list_change(ListChange::between(
                server,
                ListKind::ResourceTemplates,
                before.templates(),
                fetched.list.templates(),
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
    pub(super) fn rebuild_tools(&self) {
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
