//! The request paths behind [`ResourceManager`](crate::ResourceManager): a read's fetch (with
//! its automatic subscription), one subscribe at a time per URI, the listing — each bounded by
//! its deadline, with the state table told before and after.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::jsonrpc::codes;
use mcp_core::sync::lock;
use mcp_core::types::ReadResourceResult;
use mcp_core::{Error, McpServiceExt, RequestOptions};
use tokio::time::Instant;

use crate::error::{about, closed, waited_too_long};
use crate::eviction::SubscriptionChange;
use crate::flight::OnClaimed;
use crate::listing::ResourceListing;
use crate::manager::{Inner, Services};
use crate::stats::Counters;
use crate::table::{Kept, Lookup};

/// Awaits a request to a service, but never past `deadline`, whatever the service does with
/// the deadline its options carry (a layer might not honour it).
pub(crate) async fn bounded<T>(
    deadline: Instant,
    subject: &str,
    what: &str,
    request: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    match tokio::time::timeout_at(deadline, request).await {
        Ok(result) => result.map_err(|e| about(e, subject)),
        Err(_) => Err(Error::timeout(format!("{what} got no answer in time"))
            .with_delivery(mcp_core::Delivery::Sent)
            .with_subject(subject)),
    }
}

impl Inner {
    pub(crate) fn services(&self) -> Services {
        lock(&self.services).clone()
    }

    /// A request's options: the configured timeout, and never past `deadline`.
    pub(crate) fn options(&self, deadline: Instant) -> RequestOptions {
        RequestOptions::new()
            .with_timeout(self.config.request_timeout)
            .with_deadline(deadline)
    }

    /// The fetch a read leads: subscribe first when wanted (not while an eviction's
    /// unsubscribe of `uri` is under way: see [`subscribe_once`](Self::subscribe_once)), then
    /// `resources/read`, then keep.
    pub(crate) async fn fetch(
        &self,
        uri: &str,
        deadline: Instant,
    ) -> Result<Arc<ReadResourceResult>, Error> {
        // A fetch that finished just before this one was started may have kept it.
        match self.table.lookup(uri, Instant::now()) {
            Lookup::Hit(result) => return Ok(result),
            Lookup::Closed => return Err(closed(uri)),
            Lookup::Miss => {}
        }
        let services = self.services();
        if self.config.auto_subscribe
            && services.can_subscribe
            && self.table.wants_subscription(uri)
        {
            if let Err(e) = self.subscribe_once(uri, deadline, &services, true).await {
                if self.table.is_closed() {
                    return Err(closed(uri));
                }
                tracing::warn!(uri, error = %e, "could not subscribe to a resource; it stays fresh by the TTL only");
            }
        }
        let generation = self.table.begin_read(uri).map_err(|_| closed(uri))?;
        Counters::add(&self.counters.fetches);
        let read = services.read.read_resource(uri, self.options(deadline));
        let result = match bounded(deadline, uri, "resources/read", read).await {
            Ok(result) => Arc::new(result),
            Err(e) => {
                // A subscribe under way for this URI still needs its entry (an eviction's
                // unsubscribe does not).
                if !self.subscriptions.is_run_by_a_caller(uri) {
                    self.table.read_failed(uri);
                }
                return Err(e);
            }
        };
        let ttl = self.ttl_of(&result);
        let kept = self
            .table
            .keep(uri, generation, &result, ttl, Instant::now());
        if kept != Kept::Cached {
            tracing::debug!(uri, ?kept, "a read result was returned but not cached");
        }
        Ok(result)
    }

    /// The configured TTL, shortened by the result's own `ttlMs` hint (zero or less: not
    /// fresh at all).
    fn ttl_of(&self, result: &ReadResourceResult) -> Duration {
        match result.cache.ttl_ms {
            Some(_) => self.config.ttl.min(result.cache.fresh_for()),
            None => self.config.ttl,
        }
    }

    /// One `resources/subscribe` for `uri` at a time, recorded unless the subscription was
    /// reset meanwhile. A refusal by the server stops automatic attempts until a reconnect.
    /// An `automatic` one (a read's) may push the least recently read automatic subscription
    /// out: its `resources/unsubscribe` is sent in the background (`eviction.rs`), not
    /// awaited here.
    ///
    /// An eviction's unsubscribe of `uri` under way holds `uri`'s flight, so the server never
    /// sees a subscribe followed by that stale unsubscribe. An explicit caller waits for it,
    /// then subscribes. An `automatic` one (a read, whose deadline is the read's own) does not
    /// wait: it subscribes nothing this time and returns `Ok` at once — the read goes on
    /// without a subscription, fresh by the TTL only, and a later fetch subscribes.
    pub(crate) async fn subscribe_once(
        &self,
        uri: &str,
        deadline: Instant,
        services: &Services,
        automatic: bool,
    ) -> Result<(), Error> {
        let timeout = self.config.request_timeout;
        let on_eviction = if automatic {
            OnClaimed::Skip
        } else {
            OnClaimed::Wait
        };
        loop {
            let ran = self
                .subscriptions
                .run_unless_claimed(
                    uri,
                    deadline,
                    on_eviction,
                    || self.subscribe_now(uri, deadline, services, automatic),
                    || waited_too_long(uri, "the subscription another caller started", timeout),
                )
                .await;
            match ran.map(|(result, _)| result) {
                Some(Ok(SubscriptionChange::Subscribed)) => return Ok(()),
                // The flight was an eviction's unsubscribe, now over: subscribe afresh.
                Some(Ok(SubscriptionChange::Unsubscribed)) if !automatic => continue,
                Some(Ok(SubscriptionChange::Unsubscribed)) | None => {
                    tracing::debug!(
                        uri,
                        "the unsubscribe of an evicted subscription of this resource is under way; read without subscribing (fresh by the TTL only)"
                    );
                    return Ok(());
                }
                Some(Err(e)) => return Err(e),
            }
        }
    }

    /// The `resources/subscribe` of [`subscribe_once`](Self::subscribe_once), in `uri`'s
    /// flight.
    async fn subscribe_now(
        &self,
        uri: &str,
        deadline: Instant,
        services: &Services,
        automatic: bool,
    ) -> Result<SubscriptionChange, Error> {
        let Some(epoch) = self
            .table
            .begin_subscribe(uri, automatic)
            .map_err(|_| closed(uri))?
        else {
            return Ok(SubscriptionChange::Subscribed);
        };
        let request = services
            .subscription
            .subscribe_resource(uri, self.options(deadline));
        match bounded(deadline, uri, "resources/subscribe", request).await {
            Ok(()) => {
                let evicted = self.table.subscribed(uri, epoch, automatic);
                self.unsubscribe_evicted(evicted.unwrap_or_default(), services);
                Ok(SubscriptionChange::Subscribed)
            }
            Err(e) => {
                if e.delivery() == Some(mcp_core::Delivery::Answered) {
                    self.table.subscribe_refused(uri, epoch);
                }
                Err(e)
            }
        }
    }

    /// The listing a discovery leads: both lists at once, kept unless invalidated meanwhile.
    pub(crate) async fn list(&self, deadline: Instant) -> Result<Arc<ResourceListing>, Error> {
        let fetched = self
            .listing
            .get_or_fetch(async {
                Counters::add(&self.counters.list_fetches);
                let service = self.services().read;
                let (resources, templates) = tokio::join!(
                    bounded(
                        deadline,
                        "resources/list",
                        "resources/list",
                        service.list_all_resources(self.options(deadline))
                    ),
                    bounded(
                        deadline,
                        "resources/templates/list",
                        "resources/templates/list",
                        service.list_all_resource_templates(self.options(deadline))
                    ),
                );
                let resources = resources?;
                let templates = match templates {
                    Ok(templates) => templates,
                    Err(e) if e.code() == Some(codes::METHOD_NOT_FOUND) => Vec::new(),
                    Err(e) => return Err(e),
                };
                Ok(ResourceListing::new(resources, templates))
            })
            .await?;
        if self.table.is_closed() {
            // Closed meanwhile: nothing is kept for a manager that is gone.
            self.listing.clear();
        } else if !fetched.kept {
            tracing::debug!("a resource listing raced a list change; returned but not kept");
        }
        Ok(fetched.list)
    }
}
