//! [`ResourceManager`]: one server's resources kept fresh — reads from a bounded cache,
//! subscriptions made (and resubscribed on a new session), updates turned into state changes
//! and observer calls.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use mcp_core::sync::lock;
use mcp_core::types::{ReadResourceResult, ResourceUpdatedNotificationParams, ServerCapabilities};
use mcp_core::{BoxService, Error, McpServiceExt};
use mcp_session::{ClientSession, NotificationEvent, NotificationStream, ServerNotification};
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::config::ResourceConfig;
use crate::error::{closed, subscriptions_not_offered, waited_too_long};
use crate::eviction::{Evictions, SubscriptionFlights};
use crate::flight::{Role, SingleFlight};
use crate::listing::{ResourceListing, TemplateMatch};
use crate::new_session::{NewSession, ResubscribeReport};
use crate::observers::{Observers, UpdateGuard};
use crate::requests::bounded;
use crate::state::{ResourceState, Transition, Trigger};
use crate::stats::{Counters, ResourceStats};
use crate::table::{Lookup, StateTable};
use mcp_session::ListCache;

/// Where a [`read`](ResourceManager::read_with_source) got its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadSource {
    /// The cache: no request was made.
    Cache,
    /// A `resources/read` this read made.
    Server,
    /// A `resources/read` another caller had under way, shared.
    SharedFetch,
}

/// Whether a server's capabilities offer `resources/subscribe`.
pub fn offers_subscriptions(capabilities: &ServerCapabilities) -> bool {
    capabilities
        .resources
        .as_ref()
        .and_then(|r| r.subscribe)
        .unwrap_or(false)
}

/// Keeps one MCP server's resources fresh for a harness: the per-URI state machine of the
/// [crate docs](crate), a bounded cache, subscriptions, update observers and the server's
/// listing.
///
/// Cheap to clone (one shared state); `Send + Sync`. It owns no long-lived task (only the
/// short ones sending evicted automatic subscriptions' `resources/unsubscribe`, each within
/// [`request_timeout`](ResourceConfig::request_timeout) and aborted when the last handle
/// drops): the owner feeds it
/// notifications ([`handle_notification`](Self::handle_notification), a
/// [`ResourceHandler`](crate::ResourceHandler), or [`follow`](Self::follow)), and tells it about
/// new sessions ([`reconnected`](Self::reconnected)) and the end
/// ([`close`](Self::close)).
///
/// ```no_run
/// # async fn run(session: mcp_session::ClientSession) -> Result<(), mcp_core::Error> {
/// use mcp_resources::{ResourceConfig, ResourceManager};
/// let resources = ResourceManager::for_session(&session, ResourceConfig::default());
/// // Feed it the session's notifications (or use a `ResourceHandler` when connecting).
/// let follower = tokio::spawn({
///     let resources = resources.clone();
///     let stream = session.subscribe();
///     async move { resources.follow(stream).await }
/// });
/// let _guard = resources.on_update("file:///notes.md", |update| {
///     println!("{} changed", update.uri);
/// });
/// let notes = resources.read("file:///notes.md").await?; // subscribes, then reads
/// let again = resources.read("file:///notes.md").await?; // from the cache
/// resources.close().await;
/// follower.await.ok();
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ResourceManager {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// This manager, for the tasks it spawns (a weak hold: they must not keep it alive).
    pub(crate) me: Weak<Inner>,
    pub(crate) config: ResourceConfig,
    pub(crate) services: Mutex<Services>,
    pub(crate) table: StateTable,
    pub(crate) reads: SingleFlight<Arc<ReadResourceResult>>,
    /// Per URI, one subscribe or eviction unsubscribe at a time.
    pub(crate) subscriptions: Arc<SubscriptionFlights>,
    pub(crate) listings: SingleFlight<Arc<ResourceListing>>,
    pub(crate) listing: ListCache<ResourceListing>,
    pub(crate) observers: Arc<Observers>,
    pub(crate) counters: Counters,
    pub(crate) closed_signal: watch::Sender<bool>,
    /// The evictions' unsubscribes under way (aborted when this drops).
    pub(crate) evictions: Evictions,
}

/// Where requests go.
#[derive(Clone)]
pub(crate) struct Services {
    /// Reads and lists (a session, a stack of layers, a pool).
    pub(crate) read: BoxService,
    /// `resources/subscribe` and `unsubscribe`: the session updates arrive on.
    pub(crate) subscription: BoxService,
    /// The server offers `resources/subscribe`.
    pub(crate) can_subscribe: bool,
}

impl ResourceManager {
    /// A manager that reads, lists and subscribes through `service`, for a server with
    /// `capabilities` (which say whether it offers subscriptions).
    pub fn new(
        service: BoxService,
        capabilities: &ServerCapabilities,
        config: ResourceConfig,
    ) -> Self {
        let table = StateTable::new(
            config.max_bytes,
            config.transition_buffer,
            config.max_auto_subscriptions,
        );
        ResourceManager {
            inner: Arc::new_cyclic(|me| Inner {
                me: me.clone(),
                services: Mutex::new(Services {
                    read: service.clone(),
                    subscription: service,
                    can_subscribe: offers_subscriptions(capabilities),
                }),
                config,
                table,
                reads: SingleFlight::new(),
                subscriptions: Arc::new(SingleFlight::new()),
                listings: SingleFlight::new(),
                listing: ListCache::default(),
                observers: Arc::default(),
                counters: Counters::default(),
                closed_signal: watch::channel(false).0,
                evictions: Evictions::default(),
            }),
        }
    }

    /// A manager over one session: reads and subscriptions on it, its server's capabilities.
    pub fn for_session(session: &ClientSession, config: ResourceConfig) -> Self {
        let service: BoxService = Arc::new(session.clone());
        ResourceManager::new(service, &session.server_info().capabilities, config)
    }

    /// Sends `resources/subscribe` and `resources/unsubscribe` to `service` instead: the
    /// session the server sends updates on, when reads go elsewhere (a pool).
    pub fn with_subscription_service(self, service: BoxService) -> Self {
        lock(&self.inner.services).subscription = service;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &ResourceConfig {
        &self.inner.config
    }

    /// Whether the server offers subscriptions (as last told).
    pub fn can_subscribe(&self) -> bool {
        lock(&self.inner.services).can_subscribe
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.table.is_closed()
    }

    /// Reads `uri`: from the cache while it is CACHED and within its TTL, otherwise from the
    /// server — subscribing first on first access when the server offers subscriptions and
    /// [`auto_subscribe`](ResourceConfig::auto_subscribe) is on (a refused subscription is
    /// logged and the read goes on, fresh by the TTL only). Concurrent reads of one URI share
    /// one fetch. The result is kept unless an update, reconnect or unsubscribe came while it
    /// was on its way, it is heavier than the cache, its TTL is zero, or the URI is
    /// UNSUBSCRIBED (read through).
    ///
    /// Everything is bounded by [`request_timeout`](ResourceConfig::request_timeout); errors
    /// name the URI.
    pub async fn read(&self, uri: &str) -> Result<Arc<ReadResourceResult>, Error> {
        self.read_with_source(uri).await.map(|(result, _)| result)
    }

    /// [`read`](Self::read), also saying where the contents came from (for cache metrics).
    pub async fn read_with_source(
        &self,
        uri: &str,
    ) -> Result<(Arc<ReadResourceResult>, ReadSource), Error> {
        let inner = &self.inner;
        let deadline = mcp_core::time::deadline_after(Instant::now(), inner.config.request_timeout);
        match inner.table.lookup(uri, Instant::now()) {
            Lookup::Closed => return Err(closed(uri)),
            Lookup::Hit(result) => {
                Counters::add(&inner.counters.hits);
                return Ok((result, ReadSource::Cache));
            }
            Lookup::Miss => {}
        }
        Counters::add(&inner.counters.misses);
        let timeout = inner.config.request_timeout;
        let (result, role) = inner
            .reads
            .run(
                uri,
                deadline,
                || inner.fetch(uri, deadline),
                || waited_too_long(uri, "the read another caller started", timeout),
            )
            .await;
        let source = if role == Role::Follower {
            Counters::add(&inner.counters.shared_fetches);
            ReadSource::SharedFetch
        } else {
            ReadSource::Server
        };
        result.map(|result| (result, source))
    }

    /// Subscribes to `uri` (`resources/subscribe` on the subscription service), unless it is
    /// subscribed already: UNKNOWN / UNSUBSCRIBED → SUBSCRIBED. Fails when the server does not
    /// offer subscriptions. The subscription is kept until
    /// [`unsubscribe`](Self::unsubscribe) or [`close`](Self::close) (a read's automatic one of
    /// the same URI becomes explicit): it never counts against
    /// [`max_auto_subscriptions`](ResourceConfig::max_auto_subscriptions).
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        let inner = &self.inner;
        if inner.table.is_closed() {
            return Err(closed(uri));
        }
        let services = inner.services();
        if !services.can_subscribe {
            return Err(subscriptions_not_offered(uri));
        }
        let deadline = mcp_core::time::deadline_after(Instant::now(), inner.config.request_timeout);
        inner
            .subscribe_once(uri, deadline, &services, false)
            .await?;
        // Sharing a read's subscribe, the subscription may have been evicted before it became
        // explicit here: once more, on our own.
        if !inner.table.make_explicit(uri) && !inner.table.is_closed() {
            inner
                .subscribe_once(uri, deadline, &services, false)
                .await?;
        }
        Ok(())
    }

    /// Unsubscribes from `uri`: any state → UNSUBSCRIBED, content dropped, and the server told
    /// (`resources/unsubscribe`) when it was subscribed. The URI is UNSUBSCRIBED whatever the
    /// server answers; an error says the server may still send updates (observers still see
    /// them, nothing is cached). Reads of an UNSUBSCRIBED URI go to the server every time
    /// until [`subscribe`](Self::subscribe) is called again.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        let inner = &self.inner;
        let was_subscribed = inner.table.unsubscribe(uri).map_err(|_| closed(uri))?;
        if !was_subscribed && !inner.subscriptions.is_running(uri) {
            return Ok(());
        }
        let service = inner.services().subscription;
        let deadline = mcp_core::time::deadline_after(Instant::now(), inner.config.request_timeout);
        let request = service.unsubscribe_resource(uri, inner.options(deadline));
        bounded(deadline, uri, "resources/unsubscribe", request).await
    }

    /// The server's resources and templates: listed once (both lists at once, every page)
    /// and kept until `notifications/resources/list_changed` or a reconnect. Concurrent
    /// callers share one listing; a listing that raced an invalidation is returned but not
    /// kept. A server without `resources/templates/list` (-32601) has no templates.
    pub async fn discover_resources(&self) -> Result<Arc<ResourceListing>, Error> {
        let inner = &self.inner;
        if inner.table.is_closed() {
            return Err(closed("resources/list"));
        }
        if let Some(kept) = inner.listing.kept() {
            return Ok(kept);
        }
        let deadline = mcp_core::time::deadline_after(Instant::now(), inner.config.request_timeout);
        let timeout = inner.config.request_timeout;
        let (result, _) = inner
            .listings
            .run(
                "",
                deadline,
                || inner.list(deadline),
                || {
                    waited_too_long(
                        "resources/list",
                        "the listing another caller started",
                        timeout,
                    )
                },
            )
            .await;
        result
    }

    /// The server template `uri` is an instance of, with its variables (discovering the
    /// server's resources first if needed). Reading a templated URI is like reading any
    /// other.
    pub async fn template_for(&self, uri: &str) -> Result<Option<TemplateMatch>, Error> {
        Ok(self.discover_resources().await?.template_for(uri))
    }

    /// Calls `callback` on every `notifications/resources/updated` for `uri`, after the state
    /// change (a callback that reads the URI gets the new content), until the guard is
    /// dropped. It does not subscribe: [`subscribe`](Self::subscribe) or
    /// [`read`](Self::read) does.
    ///
    /// Callbacks run on whatever calls [`handle_notification`](Self::handle_notification) —
    /// with a [`ResourceHandler`](crate::ResourceHandler), the session's reader task — so
    /// keep them quick (set a flag, send on a channel). A callback that panics is caught
    /// and logged; the other callbacks still run, and the callback stays registered. A
    /// callback holding a clone of the manager keeps it alive until the guard drops or the
    /// manager closes.
    pub fn on_update(
        &self,
        uri: &str,
        callback: impl Fn(&ResourceUpdatedNotificationParams) + Send + Sync + 'static,
    ) -> UpdateGuard {
        self.inner.observers.add(Some(uri), Arc::new(callback))
    }

    /// Like [`on_update`](Self::on_update), for every URI (called after the URI's own
    /// callbacks).
    pub fn on_any_update(
        &self,
        callback: impl Fn(&ResourceUpdatedNotificationParams) + Send + Sync + 'static,
    ) -> UpdateGuard {
        self.inner.observers.add(None, Arc::new(callback))
    }

    /// How many callbacks observe `uri` (not counting [`on_any_update`](Self::on_any_update)'s).
    pub fn observer_count(&self, uri: &str) -> usize {
        self.inner.observers.count(uri)
    }

    /// Takes in one server notification: `notifications/resources/updated` (CACHED → STALE,
    /// a read under way is not kept, observers called) and
    /// `notifications/resources/list_changed` (the listing is dropped); anything else is
    /// ignored. Ignored after [`close`](Self::close).
    ///
    /// Wire it to the session's notifications: call it from the session's
    /// [`ClientHandler::on_notification`](mcp_session::ClientHandler::on_notification) (or use a
    /// [`ResourceHandler`](crate::ResourceHandler)), or run [`follow`](Self::follow) — one of
    /// them, not both (each update would count twice).
    pub fn handle_notification(&self, notification: &ServerNotification) {
        let inner = &self.inner;
        if inner.table.is_closed() {
            return;
        }
        match notification {
            ServerNotification::ResourceUpdated(update) => {
                Counters::add(&inner.counters.updates);
                inner.table.updated(&update.uri);
                inner.observers.notify(update);
            }
            ServerNotification::ResourceListChanged => {
                inner.listing.invalidate();
            }
            _ => {}
        }
    }

    /// Updates may have been missed (the owner's notification stream lagged): every CACHED
    /// URI → STALE (notifications missed), and the listing is dropped.
    pub fn notifications_missed(&self) {
        self.inner.listing.invalidate();
        self.inner.table.all_stale(Trigger::NotificationsMissed);
    }

    /// Feeds `stream` (a session's [`subscribe`](ClientSession::subscribe)) into
    /// [`handle_notification`](Self::handle_notification) until the stream ends (the session
    /// ended) or the manager closes; a lag is [`notifications_missed`](Self::notifications_missed).
    /// Run it in a task the owner keeps (and aborts, or ends by closing the manager).
    pub async fn follow(&self, mut stream: NotificationStream) {
        let mut closed = self.inner.closed_signal.subscribe();
        loop {
            let event = tokio::select! {
                event = stream.recv() => event,
                _ = closed.wait_for(|closed| *closed) => return,
            };
            match event {
                Some(NotificationEvent::Notification(notification)) => {
                    self.handle_notification(&notification)
                }
                Some(NotificationEvent::Missed(_)) => self.notifications_missed(),
                None => return,
            }
        }
    }

    /// A new session (a reconnect, a re-initialized session): updates may have been missed and the
    /// server has forgotten the subscriptions. Every CACHED URI → STALE (reconnected), the
    /// listing is dropped, and every subscribed URI (SUBSCRIBED, or CACHED / STALE with a
    /// subscription) is subscribed again on the (new) subscription service, one at a time,
    /// each under [`request_timeout`](ResourceConfig::request_timeout). A URI that cannot be
    /// subscribed again (or every one, when the new server does not offer subscriptions)
    /// loses its subscription: SUBSCRIBED → UNKNOWN (resubscribe failed); a STALE one stays
    /// STALE and its next read tries again.
    ///
    /// `new_session` says which services and capabilities changed.
    pub async fn reconnected(&self, new_session: NewSession) -> Result<ResubscribeReport, Error> {
        let inner = &self.inner;
        if inner.table.is_closed() {
            return Err(closed("resources/subscribe"));
        }
        {
            let mut services = lock(&inner.services);
            if let Some(service) = new_session.read_service {
                services.read = service;
            }
            if let Some(service) = new_session.subscription_service {
                services.subscription = service;
            }
            if let Some(capabilities) = &new_session.capabilities {
                services.can_subscribe = offers_subscriptions(capabilities);
            }
        }
        let services = inner.services();
        inner.listing.invalidate();
        let to_resubscribe = inner
            .table
            .to_resubscribe(services.can_subscribe)
            .map_err(|_| closed("resources/subscribe"))?;
        let mut report = ResubscribeReport::default();
        for (uri, epoch) in to_resubscribe {
            let deadline =
                mcp_core::time::deadline_after(Instant::now(), inner.config.request_timeout);
            let request = services
                .subscription
                .subscribe_resource(&uri, inner.options(deadline));
            match bounded(deadline, &uri, "resources/subscribe", request).await {
                Ok(()) => report.resubscribed.push(uri),
                Err(e) => {
                    tracing::warn!(uri, error = %e, "could not resubscribe to a resource on the new session");
                    inner.table.resubscribe_failed(&uri, epoch);
                    report.failed.push((uri, e));
                }
            }
        }
        Ok(report)
    }

    /// The session ended: every URI → UNSUBSCRIBED (closed), the cache and listing dropped,
    /// observers removed, and the server told with best-effort `resources/unsubscribe`
    /// requests, all within [`close_timeout`](ResourceConfig::close_timeout). Later calls fail
    /// ([`ErrorKind::ServerUnavailable`](mcp_core::ErrorKind), naming the URI); notifications
    /// are ignored. Idempotent.
    pub async fn close(&self) {
        let inner = &self.inner;
        let Some(subscribed) = inner.table.close() else {
            return;
        };
        inner.listing.invalidate();
        inner.observers.clear();
        inner.closed_signal.send_replace(true);
        if subscribed.is_empty() {
            return;
        }
        let service = inner.services().subscription;
        let deadline = mcp_core::time::deadline_after(Instant::now(), inner.config.close_timeout);
        let unsubscribe_all = async {
            for uri in &subscribed {
                if let Err(e) = service
                    .unsubscribe_resource(uri, inner.options(deadline))
                    .await
                {
                    tracing::debug!(uri, error = %e, "best-effort unsubscribe on close failed");
                }
            }
        };
        if tokio::time::timeout_at(deadline, unsubscribe_all)
            .await
            .is_err()
        {
            tracing::debug!("best-effort unsubscribes on close ran out of time");
        }
    }

    /// The state of `uri` now (an expired TTL or an eviction is noticed here: CACHED → STALE
    /// or → SUBSCRIBED / UNKNOWN). UNKNOWN for a URI never seen.
    pub fn state(&self, uri: &str) -> ResourceState {
        self.inner.table.state(uri, Instant::now())
    }

    /// Every tracked URI (not UNKNOWN) with its state, in URI order.
    pub fn states(&self) -> Vec<(String, ResourceState)> {
        self.inner.table.states(Instant::now())
    }

    /// Counters and sizes now.
    pub fn stats(&self) -> ResourceStats {
        let (tracked, subscribed, entries, weighted_bytes) = self.inner.table.sizes();
        self.inner
            .counters
            .snapshot(tracked, subscribed, entries, weighted_bytes)
    }

    /// Every [`Transition`] from now on. A receiver more than
    /// [`transition_buffer`](ResourceConfig::transition_buffer) behind skips the oldest.
    pub fn transitions(&self) -> broadcast::Receiver<Transition> {
        self.inner.table.transitions()
    }
}

impl fmt::Debug for ResourceManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceManager")
            .field("config", &self.inner.config)
            .field("can_subscribe", &self.can_subscribe())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}
