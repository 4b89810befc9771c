//! Where tokens live: a small [`TokenStore`] trait, one entry per server and account, with the
//! OS credential store (`KeyringStore`, feature `keyring`) and the process's memory
//! ([`MemoryStore`]) as backends. Nothing is ever written to a plaintext file.
//!
//! [`default_store`] picks the OS store when one is reachable and otherwise falls back to
//! memory, saying why, so the caller can tell the user once.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::credentials::StoredCredentials;

#[cfg(feature = "keyring")]
mod keyring;
#[cfg(feature = "keyring")]
pub use self::keyring::KeyringStore;

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
}

/// Tokens in this process's memory only: gone when it exits, never written anywhere.
#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<StoreKey, StoredCredentials>>,
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
