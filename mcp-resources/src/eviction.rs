//! Automatic subscriptions given up past
//! [`max_auto_subscriptions`](crate::ResourceConfig::max_auto_subscriptions): the server is
//! told `resources/unsubscribe` from a task the manager owns, never on the path of the read
//! whose subscription pushed the count past the limit (that read goes on to its own
//! `resources/read` at once).
//!
//! - An eviction claims the evicted URI's subscription flight (the single flight every
//!   subscribe goes through) before anything can await, so an explicit subscribe of that URI
//!   coming later waits for the unsubscribe to be over and then subscribes again: the server
//!   never sees a subscribe followed by a stale unsubscribe. A read of it meanwhile does not
//!   wait under its own deadline: it skips its automatic subscribe (the content is fresh by
//!   the TTL only) and the first fetch after the unsubscribe subscribes. When a flight of
//!   the URI is already under way (a subscribe that raced the eviction), the unsubscribe
//!   waits for it and is not sent when the URI ended up subscribed again.
//! - Each unsubscribe has its own deadline, [`request_timeout`](crate::ResourceConfig::request_timeout)
//!   from the eviction. A failure (no answer in time included) is logged and counted
//!   ([`evicted_unsubscribes_failed`](crate::ResourceStats::evicted_unsubscribes_failed)); the
//!   URI is no longer subscribed whatever the answer.
//! - At most [`MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT`] are under way at once; past it an
//!   eviction's unsubscribe is not sent (and counted as failed), so a server that answers
//!   none cannot make the client hold ever more requests.
//! - The tasks hold the manager weakly and the manager holds them (a `JoinSet`): when its
//!   last handle drops, the ones still waiting are aborted.

use std::sync::{Arc, Mutex, Weak};

use mcp_core::sync::lock;
use mcp_core::{BoxService, McpServiceExt, RequestOptions};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::flight::{Leading, SingleFlight};
use crate::manager::{Inner, Services};
use crate::requests::bounded;
use crate::stats::Counters;

/// The most `resources/unsubscribe` requests for evicted automatic subscriptions under way at
/// once, per manager. An eviction past it sends none (the server may go on sending updates
/// for that URI; observers still see them, its content goes stale by them or by the TTL).
pub const MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT: usize = 64;

/// What a flight of a URI's subscription did: what a caller that shared it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubscriptionChange {
    /// A subscribe: the URI is subscribed (or its subscription was reset meanwhile).
    Subscribed,
    /// An eviction's unsubscribe: a caller that wanted a subscription must make its own.
    Unsubscribed,
}

/// One flight per URI for its subscribes and its evictions' unsubscribes.
pub(crate) type SubscriptionFlights = SingleFlight<SubscriptionChange>;

/// The tasks sending evictions' unsubscribes; dropping it aborts them.
#[derive(Default)]
pub(crate) struct Evictions {
    tasks: Mutex<JoinSet<()>>,
}

impl Evictions {
    /// Spawns `unsubscribe` unless [`MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT`] are under way or
    /// there is no tokio runtime to run it on; then says why not.
    fn start(&self, unsubscribe: EvictionUnsubscribe) -> Result<(), &'static str> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "there is no tokio runtime to send it on")?;
        let mut tasks = lock(&self.tasks);
        while tasks.try_join_next().is_some() {}
        if tasks.len() >= MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT {
            return Err(
                "too many evictions' unsubscribes are under way (the server is not answering them)",
            );
        }
        tasks.spawn_on(unsubscribe.send(), &runtime);
        Ok(())
    }
}

impl Inner {
    /// The automatic subscriptions of `evicted` are over: claims each URI's subscription
    /// flight and starts its `resources/unsubscribe` in the background (see the module docs).
    /// Returns at once.
    pub(crate) fn unsubscribe_evicted(&self, evicted: Vec<String>, services: &Services) {
        for uri in evicted {
            Counters::add(&self.counters.subscriptions_evicted);
            tracing::debug!(
                uri,
                limit = self.config.max_auto_subscriptions,
                "evicting the least recently read automatic resource subscription"
            );
            let deadline =
                mcp_core::time::deadline_after(Instant::now(), self.config.request_timeout);
            let unsubscribe = EvictionUnsubscribe {
                claim: self.subscriptions.lead(&uri),
                uri,
                manager: self.me.clone(),
                flights: self.subscriptions.clone(),
                service: services.subscription.clone(),
                options: self.options(deadline),
                deadline,
            };
            let uri = unsubscribe.uri.clone();
            if let Err(why) = self.evictions.start(unsubscribe) {
                unsubscribe_failed(&self.counters, &uri, &why);
            }
        }
    }
}

/// One evicted URI's `resources/unsubscribe`, to be sent in its subscription flight.
struct EvictionUnsubscribe {
    uri: String,
    /// The URI's flight, claimed at the eviction; `None` when one was under way then.
    claim: Option<Leading<SubscriptionChange>>,
    manager: Weak<Inner>,
    flights: Arc<SubscriptionFlights>,
    service: BoxService,
    options: RequestOptions,
    deadline: Instant,
}

impl EvictionUnsubscribe {
    async fn send(self) {
        let EvictionUnsubscribe {
            uri,
            claim,
            manager,
            flights,
            service,
            options,
            deadline,
        } = self;
        let claim = match claim {
            Some(claim) => claim,
            None => match flights.lead_when_free(&uri, deadline).await {
                Some(claim) => claim,
                None => {
                    if let Some(inner) = manager.upgrade() {
                        unsubscribe_failed(
                            &inner.counters,
                            &uri,
                            &"the subscribe under way for it did not end in time",
                        );
                    }
                    return;
                }
            },
        };
        // Within the URI's flight: nothing subscribes it while we look and send.
        if manager
            .upgrade()
            .is_some_and(|inner| inner.table.is_subscribed(&uri))
        {
            tracing::debug!(
                uri,
                "an evicted resource subscription was made again before its unsubscribe was sent; not sent"
            );
            claim.finish(Ok(SubscriptionChange::Subscribed));
            return;
        }
        let request = service.unsubscribe_resource(&uri, options);
        if let Err(e) = bounded(deadline, &uri, "resources/unsubscribe", request).await {
            if let Some(inner) = manager.upgrade() {
                unsubscribe_failed(&inner.counters, &uri, &e);
            }
        }
        claim.finish(Ok(SubscriptionChange::Unsubscribed));
    }
}

/// Logs and counts an eviction whose unsubscribe failed or was not sent.
fn unsubscribe_failed(counters: &Counters, uri: &str, why: &dyn std::fmt::Display) {
    Counters::add(&counters.evicted_unsubscribes_failed);
    tracing::warn!(
        uri,
        error = %why,
        "could not unsubscribe from an evicted resource subscription; the server may still send updates for it"
    );
}
