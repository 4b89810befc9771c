//! Where tokens live: a small [`TokenStore`] trait, one entry per server and account, with the
//! OS credential store (`KeyringStore`, feature `keyring`) and the process's memory
//! ([`MemoryStore`]) as backends. Nothing is ever written to a plaintext file.
//!
//! [`default_store`] picks the OS store when one is reachable and otherwise falls back to
//! memory, saying why, so the caller can tell the user once.
//!
//! Several processes may share one store (every `mcph` on a machine shares the OS store; the
//! replicas of a fleet share a Redis store, crate `mcp-fleet`). A refresh is theirs to
//! coordinate: [`TokenStore::lock_entry`] holds the other processes off while one re-reads,
//! refreshes and stores (the OS store's lock is an OS file lock, [`FileLock`]), and
//! [`TokenStore::save_if_newer`] refuses a write older than the entry, so a process that lost
//! a race never overwrites — or deletes — the tokens the winner stored.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use crate::credentials::StoredCredentials;

mod file_lock;
#[cfg(feature = "keyring")]
mod keyring;

pub use self::file_lock::{FileLock, LockDir};
#[cfg(feature = "keyring")]
pub use self::keyring::KeyringStore;

/// How long a refresh may hold an entry's lock: the OAuth request timeout
/// ([`crate::http::REQUEST_TIMEOUT`], 30 s) and a margin for metadata discovery and the store's own
/// round trips. A waiter waits at most this long; a Redis lock expires after it.
pub const ENTRY_LOCK_TTL: Duration = Duration::from_secs(40);

/// Which entry: one per server and account, never shared between servers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreKey {
    /// The server, by its canonical URL (or its configured name).
    pub server: String,
    /// The account (user) on that server; `"default"` when there is one.
    pub account: String,
}

impl StoreKey {
    /// The key for `server` and `account`.
    pub fn new(server: impl Into<String>, account: impl Into<String>) -> Self {
        StoreKey {
            server: server.into(),
            account: account.into(),
        }
    }
}

/// A credential store failed. The message names the store and the entry, never a secret.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// Keeps [`StoredCredentials`] per [`StoreKey`].
#[async_trait]
pub trait TokenStore: Send + Sync + 'static {
    /// What this store is, for people ("Secret Service", "memory (this process only)").
    fn describe(&self) -> String;

    /// Whether what is saved outlives the process.
    fn is_persistent(&self) -> bool;

    /// The entry for `key`, if any.
    async fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, StoreError>;

    /// Replaces the entry for `key`.
    async fn save(&self, key: &StoreKey, credentials: &StoredCredentials)
        -> Result<(), StoreError>;

    /// Removes the entry for `key` (no error when there is none).
    async fn delete(&self, key: &StoreKey) -> Result<(), StoreError>;

    /// Writes `credentials` only if they are newer than the entry — its
    /// [`generation`](StoredCredentials::generation) is below theirs, or there is none — and
    /// says whether it wrote. This is how a process that lost a refresh race is kept from
    /// overwriting the winner's tokens, and how "forget the refused tokens" deletes them only
    /// while they are still the ones that were refused (write the entry without tokens one
    /// generation above the refused one).
    ///
    /// The default reads, compares and writes: atomic only under [`lock_entry`]'s lock, which is
    /// how [`OAuthClient`](crate::OAuthClient) calls it. A store shared without such a lock
    /// compares and writes in one step (Redis: one script).
    ///
    /// [`lock_entry`]: TokenStore::lock_entry
    async fn save_if_newer(
        &self,
        key: &StoreKey,
        credentials: &StoredCredentials,
    ) -> Result<bool, StoreError> {
        let stored = self.load(key).await?;
        if stored.is_some_and(|s| s.generation >= credentials.generation) {
            return Ok(false);
        }
        self.save(key, credentials).await?;
        Ok(true)
    }

    /// Holds every other process sharing this store off the entry for `key` — for the re-read →
    /// refresh → store of one refresh — until the returned lock is released or dropped. Waits
    /// at most `wait` for a holder to finish; then fails, and the caller goes on uncoordinated
    /// (the generations still keep the newest tokens).
    ///
    /// The default holds nothing: a store only this process sees needs no lock beyond the
    /// client's own.
    async fn lock_entry(&self, key: &StoreKey, wait: Duration) -> Result<EntryLock, StoreError> {
        let _ = (key, wait);
        Ok(EntryLock::none())
    }
}

/// A held entry lock ([`TokenStore::lock_entry`]). [`release`](EntryLock::release) gives it
/// back at once; dropping it gives it back too (a file lock with its file; a Redis lock in the
/// background, or when its time-to-live ends).
pub struct EntryLock {
    held: Option<Box<dyn HeldLock>>,
}

/// One backend's held lock, behind [`EntryLock`].
#[async_trait]
pub trait HeldLock: Send + Sync {
    /// Gives the lock back (never fails: a lock that cannot be given back ends with its
    /// time-to-live or its process).
    async fn release(self: Box<Self>);
}

impl EntryLock {
    /// No lock (the store needs none).
    pub fn none() -> EntryLock {
        EntryLock { held: None }
    }

    /// A lock a backend holds.
    pub fn held(lock: Box<dyn HeldLock>) -> EntryLock {
        EntryLock { held: Some(lock) }
    }

    /// Whether a lock is held (false for a store that needs none).
    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// Gives the lock back.
    pub async fn release(mut self) {
        if let Some(held) = self.held.take() {
            held.release().await;
        }
    }
}

impl fmt::Debug for EntryLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntryLock")
            .field("held", &self.is_held())
            .finish()
    }
}

/// Tokens in this process's memory only: gone when it exits, never written anywhere. Several
/// [`OAuthClient`](crate::OAuthClient)s may share one (each entry has its own lock, like the
/// shared stores).
#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<StoreKey, StoredCredentials>>,
    locks: Mutex<HashMap<StoreKey, Arc<tokio::sync::Mutex<()>>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = mcp_core::sync::lock(&self.entries).len();
        f.debug_struct("MemoryStore")
            .field("entries", &count)
            .finish()
    }
}

#[async_trait]
impl TokenStore for MemoryStore {
    fn describe(&self) -> String {
        "memory (this process only)".into()
    }

    fn is_persistent(&self) -> bool {
        false
    }

    async fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, StoreError> {
        Ok(mcp_core::sync::lock(&self.entries).get(key).cloned())
    }

    async fn save(
        &self,
        key: &StoreKey,
        credentials: &StoredCredentials,
    ) -> Result<(), StoreError> {
        mcp_core::sync::lock(&self.entries).insert(key.clone(), credentials.clone());
        Ok(())
    }

    async fn delete(&self, key: &StoreKey) -> Result<(), StoreError> {
        mcp_core::sync::lock(&self.entries).remove(key);
        Ok(())
    }

    async fn save_if_newer(
        &self,
        key: &StoreKey,
        credentials: &StoredCredentials,
    ) -> Result<bool, StoreError> {
        let mut entries = mcp_core::sync::lock(&self.entries);
        if entries
            .get(key)
            .is_some_and(|s| s.generation >= credentials.generation)
        {
            return Ok(false);
        }
        entries.insert(key.clone(), credentials.clone());
        Ok(true)
    }

    async fn lock_entry(&self, key: &StoreKey, wait: Duration) -> Result<EntryLock, StoreError> {
        let lock = mcp_core::sync::lock(&self.locks)
            .entry(key.clone())
            .or_default()
            .clone();
        match tokio::time::timeout(wait, lock.lock_owned()).await {
            Ok(guard) => Ok(EntryLock::held(Box::new(MemoryLock { _guard: guard }))),
            Err(_) => Err(StoreError(format!(
                "another client has held the memory store's lock for longer than {wait:?}"
            ))),
        }
    }
}

/// A held [`MemoryStore`] entry lock.
struct MemoryLock {
    /// Held until the lock is released or dropped.
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

#[async_trait]
impl HeldLock for MemoryLock {
    async fn release(self: Box<Self>) {}
}

/// The store [`default_store`] chose.
pub struct DefaultStore {
    /// The store to use.
    pub store: Arc<dyn TokenStore>,
    /// Why the OS credential store is not used, when it is not (tell the user once).
    pub fallback_reason: Option<String>,
}

/// The OS credential store for `service` (the application's name, e.g. `"mcph"`) when one is
/// reachable; otherwise a [`MemoryStore`] and the reason.
///
/// With the `keyring` feature this is `KeyringStore::open`, which blocks while it probes the OS
/// store (at most `KeyringStore::DEFAULT_TIMEOUT`, 10 s, per backend tried): call it at startup
/// or from `spawn_blocking`, not on an async worker thread.
pub fn default_store(service: &str) -> DefaultStore {
    #[cfg(feature = "keyring")]
    {
        match KeyringStore::open(service) {
            Ok(store) => DefaultStore {
                store: Arc::new(store),
                fallback_reason: None,
            },
            Err(err) => {
                tracing::debug!(reason = %err, "no OS credential store; tokens stay in memory");
                DefaultStore {
                    store: Arc::new(MemoryStore::new()),
                    fallback_reason: Some(format!(
                        "{err}; tokens are kept in memory for this process only"
                    )),
                }
            }
        }
    }
    #[cfg(not(feature = "keyring"))]
    {
        let _ = service;
        DefaultStore {
            store: Arc::new(MemoryStore::new()),
            fallback_reason: Some(
                "built without OS credential store support (feature `keyring`)".into(),
            ),
        }
    }
}
