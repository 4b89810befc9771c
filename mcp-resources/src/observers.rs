//! The observer map: URI → callbacks, plus callbacks for every URI, called on each
//! `notifications/resources/updated`. Registering returns an [`UpdateGuard`] that removes the
//! callback when dropped.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use mcp_core::sync::lock;
use mcp_core::types::ResourceUpdatedNotificationParams;

/// A callback of [`on_update`](crate::ResourceManager::on_update): gets the notification's
/// parameters (the URI, and any other members the server sent in `extra`).
pub(crate) type UpdateCallback = Arc<dyn Fn(&ResourceUpdatedNotificationParams) + Send + Sync>;

#[derive(Default)]
pub(crate) struct Observers {
    next_id: AtomicU64,
    map: Mutex<ObserverMap>,
}

#[derive(Default)]
struct ObserverMap {
    by_uri: HashMap<String, Vec<(u64, UpdateCallback)>>,
    every_uri: Vec<(u64, UpdateCallback)>,
}

impl Observers {
    pub(crate) fn add(
        self: &Arc<Self>,
        uri: Option<&str>,
        callback: UpdateCallback,
    ) -> UpdateGuard {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut map = lock(&self.map);
        match uri {
            Some(uri) => map
                .by_uri
                .entry(uri.to_owned())
                .or_default()
                .push((id, callback)),
            None => map.every_uri.push((id, callback)),
        }
        UpdateGuard {
            observers: Arc::downgrade(self),
            uri: uri.map(str::to_owned),
            id,
        }
    }

    fn remove(&self, uri: Option<&str>, id: u64) {
        let mut map = lock(&self.map);
        match uri {
            Some(uri) => {
                if let Some(callbacks) = map.by_uri.get_mut(uri) {
                    callbacks.retain(|(i, _)| *i != id);
                    if callbacks.is_empty() {
                        map.by_uri.remove(uri);
                    }
                }
            }
            None => map.every_uri.retain(|(i, _)| *i != id),
        }
    }

    /// Callbacks registered for `uri` (not counting those for every URI).
    pub(crate) fn count(&self, uri: &str) -> usize {
        lock(&self.map).by_uri.get(uri).map_or(0, Vec::len)
    }

    pub(crate) fn clear(&self) {
        let mut map = lock(&self.map);
        map.by_uri.clear();
        map.every_uri.clear();
    }

    /// Calls every callback for the update's URI, then every callback for all URIs, in the
    /// order they were added — outside the lock (a callback may add or drop observers). A
    /// callback that panics is reported and skipped; the others still run and nothing is
    /// poisoned.
    pub(crate) fn notify(&self, update: &ResourceUpdatedNotificationParams) {
        let callbacks: Vec<UpdateCallback> = {
            let map = lock(&self.map);
            map.by_uri
                .get(&update.uri)
                .into_iter()
                .flatten()
                .chain(map.every_uri.iter())
                .map(|(_, callback)| callback.clone())
                .collect()
        };
        for callback in callbacks {
            if catch_unwind(AssertUnwindSafe(|| callback(update))).is_err() {
                tracing::error!(
                    uri = %update.uri,
                    "a resource update callback panicked; the other callbacks still ran"
                );
            }
        }
    }
}

/// Keeps a callback of [`on_update`](crate::ResourceManager::on_update) or
/// [`on_any_update`](crate::ResourceManager::on_any_update) registered; dropping it removes
/// the callback (a call already under way finishes).
#[must_use = "dropping the guard removes the callback at once"]
pub struct UpdateGuard {
    observers: Weak<Observers>,
    uri: Option<String>,
    id: u64,
}

impl UpdateGuard {
    /// The URI the callback observes (`None`: every URI).
    pub fn uri(&self) -> Option<&str> {
        self.uri.as_deref()
    }
}

impl std::fmt::Debug for UpdateGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateGuard")
            .field("uri", &self.uri)
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for UpdateGuard {
    fn drop(&mut self) {
        if let Some(observers) = self.observers.upgrade() {
            observers.remove(self.uri.as_deref(), self.id);
        }
    }
}
