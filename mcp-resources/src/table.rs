//! The state table: every tracked URI's [`ResourceState`] and the content cache beside it,
//! changed only here, under one lock, with every change reported as a [`Transition`].
//!
//! Everything in this file is synchronous; the manager (`manager.rs`) does the awaiting and
//! calls in here before and after each request. Two stamps make the races safe:
//! - an entry's `generation` changes on every invalidation (update, reconnect, unsubscribe,
//!   close); a read captures it before its request and keeps its result only if it is
//!   unchanged when the answer comes;
//! - an entry's `epoch` changes whenever its subscription is reset (unsubscribe, reconnect,
//!   close); a subscribe captures it and is recorded only if it is unchanged.
//!
//! Stamps come from one counter for the whole table, so an entry that is forgotten and
//! created again never repeats a stamp an earlier request captured.
//!
//! Lock order: the table's lock, then (inside moka) the eviction queue's. moka's eviction
//! listener takes only the queue's lock, so calling moka with the table locked is safe.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::sync::lock;
use mcp_core::types::ReadResourceResult;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::content::{weight_of, ContentCache};
use crate::state::{ResourceState, Transition, Trigger};

/// One tracked URI.
struct Entry {
    state: ResourceState,
    /// The server sends updates for it on the current subscription service (or a resubscription is
    /// re-subscribing it).
    subscribed: bool,
    /// The automatic subscription was refused by the server: not tried again until a
    /// reconnect (an explicit `subscribe` still tries).
    auto_subscribe_refused: bool,
    generation: u64,
    epoch: u64,
    /// When the content stops being fresh (CACHED only).
    fresh_until: Option<Instant>,
    /// The cached content's id (CACHED only).
    content_id: u64,
    /// The subscription was made by a read (not by an explicit subscribe): when it was last
    /// read, its key in [`Inner::automatic`].
    automatic: Option<u64>,
}

/// What a read finds.
pub(crate) enum Lookup {
    /// Fresh content.
    Hit(Arc<ReadResourceResult>),
    /// Nothing fresh: fetch it.
    Miss,
    /// The manager is closed.
    Closed,
}

/// What became of a fetched result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Cached.
    Cached,
    /// Invalidated while the request was out (an update, a reconnect, an unsubscribe).
    Raced,
    /// Heavier than the whole cache.
    TooLarge,
    /// The TTL (or the result's `ttlMs` hint) is zero.
    NotFresh,
    /// The URI is UNSUBSCRIBED: read through, never cached.
    Unsubscribed,
    /// The manager closed.
    Closed,
}

/// The table was closed: the caller fails with [`crate::error::closed`].
pub(crate) struct Closed;

struct Inner {
    entries: BTreeMap<String, Entry>,
    /// The automatic subscriptions, least recently read first (stamp → URI).
    automatic: BTreeMap<u64, String>,
    /// The most automatic subscriptions held at once (at least 1).
    max_automatic: usize,
    closed: bool,
    next_stamp: u64,
}

impl Inner {
    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    fn entry(&mut self, uri: &str) -> &mut Entry {
        // A stamp is spent even when the entry exists: they only need to be unique.
        let stamp = self.stamp();
        self.entries.entry(uri.to_owned()).or_insert_with(|| Entry {
            state: ResourceState::Unknown,
            subscribed: false,
            auto_subscribe_refused: false,
            generation: stamp,
            epoch: stamp,
            fresh_until: None,
            content_id: 0,
            automatic: None,
        })
    }

    /// `uri`'s subscription no longer counts as automatic (it ended, or became explicit).
    fn forget_automatic(&mut self, uri: &str) {
        if let Some(stamp) = self.entries.get_mut(uri).and_then(|e| e.automatic.take()) {
            self.automatic.remove(&stamp);
        }
    }

    /// `uri`'s automatic subscription (if it has one) was read now: the last to be evicted.
    fn touch_automatic(&mut self, uri: &str) {
        let stamp = self.stamp();
        if let Some(slot) = self.entries.get_mut(uri).and_then(|e| e.automatic.as_mut()) {
            let old = std::mem::replace(slot, stamp);
            self.automatic.remove(&old);
            self.automatic.insert(stamp, uri.to_owned());
        }
    }

    fn invalidate(&mut self, uri: &str) {
        let stamp = self.stamp();
        if let Some(entry) = self.entries.get_mut(uri) {
            entry.generation = stamp;
        }
    }

    fn reset_subscription(&mut self, uri: &str) {
        let stamp = self.stamp();
        if let Some(entry) = self.entries.get_mut(uri) {
            entry.generation = stamp;
            entry.epoch = stamp;
        }
    }
}

pub(crate) struct StateTable {
    inner: Mutex<Inner>,
    content: ContentCache,
    transitions: broadcast::Sender<Transition>,
}

impl StateTable {
    pub(crate) fn new(max_bytes: u64, transition_buffer: usize, max_automatic: usize) -> Self {
        StateTable {
            inner: Mutex::new(Inner {
                entries: BTreeMap::new(),
                automatic: BTreeMap::new(),
                max_automatic: max_automatic.max(1),
                closed: false,
                next_stamp: 0,
            }),
            content: ContentCache::new(max_bytes),
            transitions: broadcast::channel(transition_buffer.max(1)).0,
        }
    }

    pub(crate) fn transitions(&self) -> broadcast::Receiver<Transition> {
        self.transitions.subscribe()
    }

    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.inner).closed
    }

    /// Moves `uri` to `to`, reports it, and forgets a URI that ends up UNKNOWN (nothing held,
    /// not subscribed). Sent under the lock, so every receiver sees one URI's transitions in
    /// the order they happened.
    fn transition(&self, inner: &mut Inner, uri: &str, to: ResourceState, trigger: Trigger) {
        let Some(entry) = inner.entries.get_mut(uri) else {
            return;
        };
        let from = entry.state;
        if to != ResourceState::Cached {
            entry.fresh_until = None;
        }
        if from == to {
            return;
        }
        entry.state = to;
        if from == ResourceState::Cached {
            self.content.remove(uri);
        }
        tracing::trace!(uri, %from, %to, %trigger, "resource state");
        // Nobody listening is fine.
        let _ = self.transitions.send(Transition {
            uri: uri.to_owned(),
            from,
            to,
            trigger,
        });
        if to == ResourceState::Unknown && !entry.subscribed {
            inner.entries.remove(uri);
        }
    }

    /// Where content with nothing else holding it goes: SUBSCRIBED while subscribed, else
    /// UNKNOWN.
    fn emptied(subscribed: bool) -> ResourceState {
        if subscribed {
            ResourceState::Subscribed
        } else {
            ResourceState::Unknown
        }
    }

    /// Applies the evictions moka queued: CACHED → SUBSCRIBED / UNKNOWN (evicted), unless
    /// the content was replaced or dropped since.
    fn apply_evictions(&self, inner: &mut Inner) {
        for (uri, id) in self.content.take_evicted() {
            let to = match inner.entries.get(&uri) {
                Some(e) if e.state == ResourceState::Cached && e.content_id == id => {
                    Self::emptied(e.subscribed)
                }
                _ => continue,
            };
            self.transition(inner, &uri, to, Trigger::Evicted);
        }
    }

    /// The TTL and eviction checks of a CACHED entry: CACHED → STALE (TTL expired), or
    /// CACHED → SUBSCRIBED / UNKNOWN (evicted) when moka no longer has the content. Returns
    /// the content when it is fresh.
    fn observe(
        &self,
        inner: &mut Inner,
        uri: &str,
        now: Instant,
    ) -> Option<Arc<ReadResourceResult>> {
        self.apply_evictions(inner);
        let (state, fresh_until, content_id, subscribed) = {
            let e = inner.entries.get(uri)?;
            (e.state, e.fresh_until, e.content_id, e.subscribed)
        };
        if state != ResourceState::Cached {
            return None;
        }
        if fresh_until.is_none_or(|until| now >= until) {
            self.transition(inner, uri, ResourceState::Stale, Trigger::TtlExpired);
            return None;
        }
        match self.content.get(uri) {
            Some(content) if content.id == content_id => Some(content.result),
            _ => {
                let to = Self::emptied(subscribed);
                self.transition(inner, uri, to, Trigger::Evicted);
                None
            }
        }
    }

    /// What a read of `uri` finds now (the read counts as a use of its automatic
    /// subscription).
    pub(crate) fn lookup(&self, uri: &str, now: Instant) -> Lookup {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Lookup::Closed;
        }
        inner.touch_automatic(uri);
        match self.observe(&mut inner, uri, now) {
            Some(result) => Lookup::Hit(result),
            None => Lookup::Miss,
        }
    }

    /// The state of `uri` now (noticing an expired TTL or an eviction).
    pub(crate) fn state(&self, uri: &str, now: Instant) -> ResourceState {
        let mut inner = lock(&self.inner);
        self.observe(&mut inner, uri, now);
        inner
            .entries
            .get(uri)
            .map_or(ResourceState::Unknown, |e| e.state)
    }

    /// Every tracked URI's state now (UNKNOWN ones, being read for the first time, left out).
    pub(crate) fn states(&self, now: Instant) -> Vec<(String, ResourceState)> {
        let mut inner = lock(&self.inner);
        let uris: Vec<String> = inner.entries.keys().cloned().collect();
        for uri in &uris {
            self.observe(&mut inner, uri, now);
        }
        inner
            .entries
            .iter()
            .filter(|(_, e)| e.state != ResourceState::Unknown)
            .map(|(uri, e)| (uri.clone(), e.state))
            .collect()
    }

    /// Whether a read of `uri` should subscribe first: not subscribed, not refused, not
    /// explicitly unsubscribed.
    pub(crate) fn wants_subscription(&self, uri: &str) -> bool {
        let inner = lock(&self.inner);
        !inner.closed
            && inner.entries.get(uri).is_none_or(|e| {
                !e.subscribed && !e.auto_subscribe_refused && e.state != ResourceState::Unsubscribed
            })
    }

    /// Before a `resources/subscribe`: `None` when already subscribed, else the epoch to
    /// hand back to [`subscribed`](Self::subscribed). An explicit one (not `automatic`) makes
    /// a read's subscription of the URI explicit at once.
    pub(crate) fn begin_subscribe(
        &self,
        uri: &str,
        automatic: bool,
    ) -> Result<Option<u64>, Closed> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Err(Closed);
        }
        if !automatic {
            inner.forget_automatic(uri);
        }
        let entry = inner.entry(uri);
        Ok((!entry.subscribed).then_some(entry.epoch))
    }

    /// The server accepted the subscription: UNKNOWN / UNSUBSCRIBED → SUBSCRIBED (subscribe);
    /// an entry holding content keeps its state. `None` (ignored) when the subscription was
    /// reset meanwhile. An `automatic` one (a read's) is the most recently used; past the
    /// limit the least recently read automatic subscription is evicted (see
    /// [`evict_automatic`](Self::evict_automatic)): the URIs returned are the server's to be
    /// told `resources/unsubscribe`.
    pub(crate) fn subscribed(&self, uri: &str, epoch: u64, automatic: bool) -> Option<Vec<String>> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return None;
        }
        let stamp = inner.stamp();
        let entry = inner.entries.get_mut(uri).filter(|e| e.epoch == epoch)?;
        entry.subscribed = true;
        entry.auto_subscribe_refused = false;
        let state = entry.state;
        if automatic && entry.automatic.is_none() {
            entry.automatic = Some(stamp);
            inner.automatic.insert(stamp, uri.to_owned());
        }
        if matches!(state, ResourceState::Unknown | ResourceState::Unsubscribed) {
            self.transition(
                &mut inner,
                uri,
                ResourceState::Subscribed,
                Trigger::Subscribe,
            );
        }
        let mut evicted = Vec::new();
        while inner.automatic.len() > inner.max_automatic {
            let Some((_, oldest)) = inner.automatic.pop_first() else {
                break;
            };
            self.evict_automatic(&mut inner, &oldest);
            evicted.push(oldest);
        }
        Some(evicted)
    }

    /// An automatic subscription evicted (already out of [`Inner::automatic`]): no longer
    /// subscribed, its subscription reset (a read or resubscription under way is not recorded),
    /// SUBSCRIBED → UNKNOWN (subscription evicted, forgotten); CACHED and STALE keep their
    /// state, fresh by the TTL only, and a later read that fetches subscribes again.
    fn evict_automatic(&self, inner: &mut Inner, uri: &str) {
        inner.reset_subscription(uri);
        if let Some(entry) = inner.entries.get_mut(uri) {
            entry.automatic = None;
        }
        self.lose_subscription(inner, uri, Trigger::SubscriptionEvicted);
    }

    /// Whether the server sends updates for `uri` (as far as the table knows).
    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.inner)
            .entries
            .get(uri)
            .is_some_and(|e| e.subscribed)
    }

    /// An explicit subscribe that shared a read's subscribe of `uri`: the subscription is
    /// the harness's now, never evicted. False when `uri` is not subscribed (any more).
    pub(crate) fn make_explicit(&self, uri: &str) -> bool {
        let mut inner = lock(&self.inner);
        inner.forget_automatic(uri);
        inner.entries.get(uri).is_some_and(|e| e.subscribed)
    }

    /// The server refused the automatic subscription: not tried again until a reconnect.
    pub(crate) fn subscribe_refused(&self, uri: &str, epoch: u64) {
        let mut inner = lock(&self.inner);
        if let Some(entry) = inner.entries.get_mut(uri).filter(|e| e.epoch == epoch) {
            entry.auto_subscribe_refused = true;
        }
    }

    /// Before a `resources/read`: the generation to hand back to [`keep`](Self::keep).
    pub(crate) fn begin_read(&self, uri: &str) -> Result<u64, Closed> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Err(Closed);
        }
        Ok(inner.entry(uri).generation)
    }

    /// A read failed: a URI that holds nothing and is not subscribed is forgotten.
    pub(crate) fn read_failed(&self, uri: &str) {
        let mut inner = lock(&self.inner);
        if inner
            .entries
            .get(uri)
            .is_some_and(|e| e.state == ResourceState::Unknown && !e.subscribed)
        {
            inner.entries.remove(uri);
        }
    }

    /// A fetched result: cached (→ CACHED, read) when nothing invalidated the URI since
    /// `generation` and it may be kept.
    pub(crate) fn keep(
        &self,
        uri: &str,
        generation: u64,
        result: &Arc<ReadResourceResult>,
        ttl: Duration,
        now: Instant,
    ) -> Kept {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Kept::Closed;
        }
        let weight = weight_of(uri, result);
        let stamp = inner.stamp();
        let Some(entry) = inner.entries.get_mut(uri) else {
            return Kept::Raced;
        };
        if entry.generation != generation {
            return Kept::Raced;
        }
        if entry.state == ResourceState::Unsubscribed {
            return Kept::Unsubscribed;
        }
        if ttl.is_zero() {
            return Kept::NotFresh;
        }
        if !self.content.fits(weight) {
            return Kept::TooLarge;
        }
        entry.content_id = stamp;
        entry.fresh_until = Some(mcp_core::time::deadline_after(now, ttl));
        self.content.insert(uri, result.clone(), weight, stamp);
        self.transition(&mut inner, uri, ResourceState::Cached, Trigger::Read);
        self.apply_evictions(&mut inner);
        Kept::Cached
    }

    /// `notifications/resources/updated`: CACHED → STALE (updated); a read under way is not
    /// kept. Whether the URI is tracked.
    pub(crate) fn updated(&self, uri: &str) -> bool {
        let mut inner = lock(&self.inner);
        if inner.closed || !inner.entries.contains_key(uri) {
            return false;
        }
        inner.invalidate(uri);
        if inner
            .entries
            .get(uri)
            .is_some_and(|e| e.state == ResourceState::Cached)
        {
            self.transition(&mut inner, uri, ResourceState::Stale, Trigger::Updated);
        }
        true
    }

    /// Updates may have been missed: every CACHED URI → STALE (`trigger`).
    pub(crate) fn all_stale(&self, trigger: Trigger) {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return;
        }
        let uris: Vec<String> = inner.entries.keys().cloned().collect();
        for uri in uris {
            inner.invalidate(&uri);
            if inner
                .entries
                .get(&uri)
                .is_some_and(|e| e.state == ResourceState::Cached)
            {
                self.transition(&mut inner, &uri, ResourceState::Stale, trigger);
            }
        }
    }

    /// An explicit unsubscribe: any state → UNSUBSCRIBED (unsubscribe). Returns whether the
    /// server had been subscribed (and should be told).
    pub(crate) fn unsubscribe(&self, uri: &str) -> Result<bool, Closed> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Err(Closed);
        }
        inner.entry(uri);
        inner.reset_subscription(uri);
        inner.forget_automatic(uri);
        let entry = inner.entry(uri);
        let was_subscribed = std::mem::replace(&mut entry.subscribed, false);
        entry.auto_subscribe_refused = false;
        self.transition(
            &mut inner,
            uri,
            ResourceState::Unsubscribed,
            Trigger::Unsubscribe,
        );
        Ok(was_subscribed)
    }

    /// A new session: every CACHED URI → STALE (reconnected); the subscribed URIs are
    /// returned with their new epochs, to be subscribed again. When the new session cannot
    /// subscribe, they are no longer subscribed: SUBSCRIBED → UNKNOWN (resubscribe failed).
    pub(crate) fn to_resubscribe(&self, can_subscribe: bool) -> Result<Vec<(String, u64)>, Closed> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Err(Closed);
        }
        let uris: Vec<String> = inner.entries.keys().cloned().collect();
        let mut to_resubscribe = Vec::new();
        for uri in uris {
            inner.reset_subscription(&uri);
            let Some(entry) = inner.entries.get_mut(&uri) else {
                continue;
            };
            entry.auto_subscribe_refused = false;
            let (state, subscribed, epoch) = (entry.state, entry.subscribed, entry.epoch);
            if state == ResourceState::Cached {
                self.transition(&mut inner, &uri, ResourceState::Stale, Trigger::Reconnected);
            }
            if !subscribed {
                continue;
            }
            if can_subscribe {
                to_resubscribe.push((uri, epoch));
            } else {
                self.lose_subscription(&mut inner, &uri, Trigger::ResubscribeFailed);
            }
        }
        Ok(to_resubscribe)
    }

    /// `uri` is no longer subscribed: SUBSCRIBED → UNKNOWN (`trigger`, forgotten); other
    /// states stay.
    fn lose_subscription(&self, inner: &mut Inner, uri: &str, trigger: Trigger) {
        inner.forget_automatic(uri);
        let Some(entry) = inner.entries.get_mut(uri) else {
            return;
        };
        entry.subscribed = false;
        if entry.state == ResourceState::Subscribed {
            self.transition(inner, uri, ResourceState::Unknown, trigger);
        }
    }

    /// Subscribing again after a reconnect failed: no longer subscribed (SUBSCRIBED →
    /// UNKNOWN, resubscribe failed; STALE stays STALE and the next read tries again).
    pub(crate) fn resubscribe_failed(&self, uri: &str, epoch: u64) {
        let mut inner = lock(&self.inner);
        if inner.closed || inner.entries.get(uri).is_none_or(|e| e.epoch != epoch) {
            return;
        }
        self.lose_subscription(&mut inner, uri, Trigger::ResubscribeFailed);
    }

    /// Closes the table: every URI → UNSUBSCRIBED (closed), all content dropped. Returns the
    /// URIs that were subscribed, or `None` when it was closed already.
    pub(crate) fn close(&self) -> Option<Vec<String>> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return None;
        }
        let uris: Vec<String> = inner.entries.keys().cloned().collect();
        let mut subscribed = Vec::new();
        for uri in uris {
            inner.reset_subscription(&uri);
            let Some(entry) = inner.entries.get_mut(&uri) else {
                continue;
            };
            if std::mem::replace(&mut entry.subscribed, false) {
                subscribed.push(uri.clone());
            }
            self.transition(
                &mut inner,
                &uri,
                ResourceState::Unsubscribed,
                Trigger::Closed,
            );
        }
        inner.closed = true;
        inner.automatic.clear();
        for entry in inner.entries.values_mut() {
            entry.automatic = None;
        }
        self.content.clear();
        self.content.take_evicted();
        Some(subscribed)
    }

    /// (tracked URIs, subscribed URIs, cached entries, weighted bytes).
    pub(crate) fn sizes(&self) -> (u64, u64, u64, u64) {
        let mut inner = lock(&self.inner);
        let (entries, bytes) = self.content.size();
        self.apply_evictions(&mut inner);
        let tracked = inner
            .entries
            .values()
            .filter(|e| e.state != ResourceState::Unknown)
            .count() as u64;
        let subscribed = inner.entries.values().filter(|e| e.subscribed).count() as u64;
        (tracked, subscribed, entries, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_core::types::ResourceContents;

    fn result(text: &str) -> Arc<ReadResourceResult> {
        Arc::new(ReadResourceResult {
            contents: vec![ResourceContents {
                uri: "x://a".into(),
                mime_type: None,
                text: Some(text.into()),
                blob: None,
                extra: Default::default(),
            }],
            cache: Default::default(),
            extra: Default::default(),
        })
    }

    fn drain(
        rx: &mut broadcast::Receiver<Transition>,
    ) -> Vec<(ResourceState, ResourceState, Trigger)> {
        let mut out = Vec::new();
        while let Ok(t) = rx.try_recv() {
            out.push((t.from, t.to, t.trigger));
        }
        out
    }

    const TTL: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn a_read_that_raced_an_update_is_not_kept() {
        use ResourceState::*;
        let table = StateTable::new(1 << 20, 64, 256);
        let mut rx = table.transitions();
        let epoch = table
            .begin_subscribe("x://a", false)
            .ok()
            .flatten()
            .unwrap();
        assert!(table.subscribed("x://a", epoch, false).is_some());
        let generation = table.begin_read("x://a").ok().unwrap();
        assert!(table.updated("x://a"));
        let now = Instant::now();
        assert_eq!(
            table.keep("x://a", generation, &result("old"), TTL, now),
            Kept::Raced
        );
        assert_eq!(table.state("x://a", now), Subscribed);
        let generation = table.begin_read("x://a").ok().unwrap();
        assert_eq!(
            table.keep("x://a", generation, &result("new"), TTL, now),
            Kept::Cached
        );
        assert_eq!(
            drain(&mut rx),
            [
                (Unknown, Subscribed, Trigger::Subscribe),
                (Subscribed, Cached, Trigger::Read)
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_subscribe_that_raced_an_unsubscribe_is_not_recorded() {
        let table = StateTable::new(1 << 20, 64, 256);
        let epoch = table
            .begin_subscribe("x://a", false)
            .ok()
            .flatten()
            .unwrap();
        assert!(matches!(table.unsubscribe("x://a"), Ok(false)));
        assert!(table.subscribed("x://a", epoch, false).is_none());
        assert_eq!(
            table.state("x://a", Instant::now()),
            ResourceState::Unsubscribed
        );
    }

    #[tokio::test(start_paused = true)]
    async fn unknown_entries_are_forgotten() {
        let table = StateTable::new(1 << 20, 64, 256);
        table.begin_read("x://a").ok().unwrap();
        assert_eq!(lock(&table.inner).entries.len(), 1);
        assert_eq!(table.sizes().0, 0, "UNKNOWN is not tracked");
        table.read_failed("x://a");
        assert_eq!(lock(&table.inner).entries.len(), 0);
    }
}
