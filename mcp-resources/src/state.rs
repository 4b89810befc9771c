//! The per-URI state machine's vocabulary: [`ResourceState`], what moved it ([`Trigger`]) and
//! one move ([`Transition`]). The rules live in the crate docs; the code that applies them in
//! `table.rs`.

use std::fmt;

use serde::Serialize;

/// Where one URI stands (R-RES). See the [crate docs](crate) for the diagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceState {
    /// Never accessed (or forgotten: evicted while not subscribed, a resubscription that could not
    /// subscribe again). Nothing is held, the server sends no updates.
    Unknown,
    /// The server sends updates for it; no content is held.
    Subscribed,
    /// Content is held and fresh: read within the TTL, no update since.
    Cached,
    /// Content is out of date (an update, the TTL, a reconnect); the next read fetches it.
    Stale,
    /// Explicitly unsubscribed, or the manager closed: no updates, nothing held, reads go to
    /// the server every time until [`subscribe`](crate::ResourceManager::subscribe) is called
    /// again.
    Unsubscribed,
}

impl ResourceState {
    /// A stable snake_case name, for logs, metrics and `--json` output.
    pub const fn as_str(self) -> &'static str {
        match self {
            ResourceState::Unknown => "unknown",
            ResourceState::Subscribed => "subscribed",
            ResourceState::Cached => "cached",
            ResourceState::Stale => "stale",
            ResourceState::Unsubscribed => "unsubscribed",
        }
    }
}

impl fmt::Display for ResourceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What caused a [`Transition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Trigger {
    /// A read fetched the content and kept it.
    Read,
    /// A `resources/subscribe` succeeded (explicit, or the automatic one of a first read).
    Subscribe,
    /// `notifications/resources/updated` for the URI.
    Updated,
    /// The content's TTL ran out (noticed when the URI was next read or its state asked for).
    TtlExpired,
    /// A new session ([`reconnected`](crate::ResourceManager::reconnected)): updates may have
    /// been missed.
    Reconnected,
    /// Resubscribing on a new session failed (or the new session's server does not
    /// offer subscriptions): the URI is forgotten.
    ResubscribeFailed,
    /// The owner's notification stream lagged
    /// ([`notifications_missed`](crate::ResourceManager::notifications_missed)): updates may
    /// have been missed.
    NotificationsMissed,
    /// The content was dropped to keep the cache within
    /// [`max_bytes`](crate::ResourceConfig::max_bytes).
    Evicted,
    /// An explicit [`unsubscribe`](crate::ResourceManager::unsubscribe).
    Unsubscribe,
    /// The automatic subscription was the least recently read one past
    /// [`max_auto_subscriptions`](crate::ResourceConfig::max_auto_subscriptions): the server
    /// was told `resources/unsubscribe` and a SUBSCRIBED URI is forgotten.
    SubscriptionEvicted,
    /// The manager closed ([`close`](crate::ResourceManager::close)): the session ended.
    Closed,
}

impl Trigger {
    /// A stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Trigger::Read => "read",
            Trigger::Subscribe => "subscribe",
            Trigger::Updated => "updated",
            Trigger::TtlExpired => "ttl_expired",
            Trigger::Reconnected => "reconnected",
            Trigger::ResubscribeFailed => "resubscribe_failed",
            Trigger::NotificationsMissed => "notifications_missed",
            Trigger::Evicted => "evicted",
            Trigger::Unsubscribe => "unsubscribe",
            Trigger::SubscriptionEvicted => "subscription_evicted",
            Trigger::Closed => "closed",
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One move of one URI's state, as [`transitions`](crate::ResourceManager::transitions)
/// reports it. A trigger that leaves the state as it was (an update of a URI that holds no
/// content) is no transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    /// The resource.
    pub uri: String,
    /// The state before.
    pub from: ResourceState,
    /// The state after.
    pub to: ResourceState,
    /// Why.
    pub trigger: Trigger,
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} -> {} ({})",
            self.uri, self.from, self.to, self.trigger
        )
    }
}
