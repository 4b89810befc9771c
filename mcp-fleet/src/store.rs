//! [`RedisStore`]: the OAuth token store of a fleet, on Redis.
//!
//! One hash per entry, `{prefix}:oauth:{hash}` ({hash}: the first 32 hex characters of
//! SHA-256(server ‖ 0 ‖ account)), with the fields
//!
//! - `gen` — the entry's [generation](mcp_auth::StoredCredentials::generation), in decimal;
//! - `kid` — the id of the key it was encrypted with ([`StoreKeyMaterial::key_id`]);
//! - `data` — base64 of nonce ‖ AES-256-GCM ciphertext of the entry's JSON, bound to the key
//!   name and `gen` (`cipher.rs`).
//!
//! [`save_if_newer`](TokenStore::save_if_newer) compares and writes in one Lua script, so two
//! replicas storing at once never let the older entry win. [`delete`](TokenStore::delete)
//! leaves a tombstone: `data` and `kid` go, `gen` stays — a process that still holds the
//! deleted tokens cannot store them again (its generation is not above the tombstone's), and
//! [`load`](TokenStore::load) returns the tombstone as an entry without tokens at that
//! generation, so the next login is stored one generation above it.
//!
//! A wrong key is an error naming both key ids, never "no entry" (which would look like a
//! logout, and a new login would overwrite the other replicas' tokens); nothing is deleted.
//! While Redis is unreachable every operation fails with a clear [`StoreError`] within the
//! timeout; the OAuth client keeps the tokens it holds.
//!
//! [`StoreKeyMaterial::key_id`]: crate::StoreKeyMaterial::key_id

use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use mcp_auth::store::{EntryLock, LockDir};
use mcp_auth::{StoreError, StoreKey, StoredCredentials, TokenStore};
use redis::Script;
use sha2::{Digest, Sha256};

use crate::cipher::EntryCipher;
use crate::connection::RedisConnection;
use crate::error::FleetError;
use crate::settings::{hex, FleetSettings};

/// Writes the entry only when its stored `gen` is below the new one (or there is none).
/// Generations are compared as canonical decimals (length, then digits), so they need not fit
/// Lua's doubles. KEYS[1] = the entry; ARGV = gen, kid, data. Returns 1 when written.
static SAVE_IF_NEWER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local stored = redis.call('HGET', KEYS[1], 'gen')
if stored then
  local new = ARGV[1]
  if #stored > #new or (#stored == #new and stored >= new) then
    return 0
  end
end
redis.call('HSET', KEYS[1], 'gen', ARGV[1], 'kid', ARGV[2], 'data', ARGV[3])
return 1
",
    )
});

/// The OAuth token store on a fleet's Redis (see the module docs). From
/// [`Fleet::token_store`](crate::Fleet::token_store).
pub struct RedisStore {
    pub(crate) connection: Arc<RedisConnection>,
    cipher: EntryCipher,
    key_source: String,
    prefix: String,
    pub(crate) lock_ttl: Duration,
    pub(crate) lock_dir: LockDir,
}

impl RedisStore {
    pub(crate) fn new(connection: Arc<RedisConnection>, settings: &FleetSettings) -> RedisStore {
        RedisStore {
            connection,
            cipher: EntryCipher::new(&settings.key),
            key_source: settings.key_source.clone(),
            prefix: settings.prefix.clone(),
            lock_ttl: settings.lock_ttl,
            lock_dir: settings.lock_dir.clone(),
        }
    }

    /// The Redis key of `key`'s entry: `{prefix}:oauth:{hash}`.
    pub fn entry_key(&self, key: &StoreKey) -> String {
        format!("{}:oauth:{}", self.prefix, entry_hash(key))
    }

    /// The Redis key of `key`'s refresh lock: `{prefix}:lock:{hash}`.
    pub fn lock_key(&self, key: &StoreKey) -> String {
        format!("{}:lock:{}", self.prefix, entry_hash(key))
    }

    /// The id of the key this store encrypts with.
    pub fn key_id(&self) -> &str {
        self.cipher.key_id()
    }

    /// The three fields of an entry, sealed for `redis_key`.
    fn fields(
        &self,
        redis_key: &str,
        credentials: &StoredCredentials,
    ) -> Result<[String; 3], FleetError> {
        let json = zeroize::Zeroizing::new(serde_json::to_vec(credentials).map_err(|e| {
            FleetError::Malformed {
                entry: redis_key.to_owned(),
                reason: format!("cannot serialize it: {e}"),
            }
        })?);
        let data = self.cipher.seal(redis_key, credentials.generation, &json)?;
        Ok([
            credentials.generation.to_string(),
            self.cipher.key_id().to_owned(),
            data,
        ])
    }

    async fn load_entry(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, FleetError> {
        let redis_key = self.entry_key(key);
        let (generation, kid, data) = self
            .connection
            .run("reading a token store entry", |mut connection| {
                let cmd = redis::cmd("HMGET")
                    .arg(&redis_key)
                    .arg("gen")
                    .arg("kid")
                    .arg("data")
                    .to_owned();
                async move {
                    cmd.query_async::<(Option<String>, Option<String>, Option<String>)>(
                        &mut connection,
                    )
                    .await
                }
            })
            .await?;
        let malformed = |reason: &str| FleetError::Malformed {
            entry: redis_key.clone(),
            reason: reason.to_owned(),
        };
        let generation = match generation {
            None if data.is_none() => return Ok(None),
            None => return Err(malformed("it has data but no `gen`")),
            Some(generation) => generation
                .parse::<u64>()
                .map_err(|_| malformed("its `gen` is not a decimal number"))?,
        };
        let Some(data) = data else {
            // A tombstone: deleted, but its generation stays (see the module docs).
            return Ok(Some(StoredCredentials {
                generation,
                ..StoredCredentials::default()
            }));
        };
        let Some(json) = self.cipher.open(&redis_key, generation, &data)? else {
            let entry_key_id = kid.unwrap_or_else(|| "(none)".into());
            let hint = if entry_key_id == self.cipher.key_id() {
                ": the same key, so the entry was edited (its `gen` or `data`) or copied from \
                 another entry"
            } else {
                ": every replica needs the same key"
            };
            return Err(FleetError::Undecryptable {
                entry: redis_key,
                entry_key_id,
                key_origin: self.key_source.clone(),
                key_id: self.cipher.key_id().to_owned(),
                hint,
            });
        };
        let mut credentials: StoredCredentials =
            serde_json::from_slice(&json).map_err(|e| FleetError::Malformed {
                entry: redis_key.clone(),
                // serde_json's messages name a position and a type, never the input.
                reason: format!("its decrypted entry is not a token store entry: {e}"),
            })?;
        // `gen` is bound to the ciphertext: it is the entry's generation.
        credentials.generation = generation;
        Ok(Some(credentials))
    }

    async fn save_entry(
        &self,
        key: &StoreKey,
        credentials: &StoredCredentials,
    ) -> Result<(), FleetError> {
        let redis_key = self.entry_key(key);
        let [generation, kid, data] = self.fields(&redis_key, credentials)?;
        self.connection
            .run("writing a token store entry", |mut connection| {
                let cmd = redis::cmd("HSET")
                    .arg(&redis_key)
                    .arg("gen")
                    .arg(&generation)
                    .arg("kid")
                    .arg(&kid)
                    .arg("data")
                    .arg(&data)
                    .to_owned();
                async move { cmd.query_async::<()>(&mut connection).await }
            })
            .await
    }

    async fn save_entry_if_newer(
        &self,
        key: &StoreKey,
        credentials: &StoredCredentials,
    ) -> Result<bool, FleetError> {
        let redis_key = self.entry_key(key);
        let [generation, kid, data] = self.fields(&redis_key, credentials)?;
        let written: i64 = self
            .connection
            .run("writing a token store entry if newer", |mut connection| {
                let mut invocation = SAVE_IF_NEWER.key(&redis_key);
                invocation.arg(&generation).arg(&kid).arg(&data);
                async move { invocation.invoke_async(&mut connection).await }
            })
            .await?;
        Ok(written == 1)
    }

    async fn delete_entry(&self, key: &StoreKey) -> Result<(), FleetError> {
        let redis_key = self.entry_key(key);
        self.connection
            .run("deleting a token store entry", |mut connection| {
                let cmd = redis::cmd("HDEL")
                    .arg(&redis_key)
                    .arg("data")
                    .arg("kid")
                    .to_owned();
                async move { cmd.query_async::<()>(&mut connection).await }
            })
            .await
    }
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.connection.url())
            .field("prefix", &self.prefix)
            .field("key_id", &self.cipher.key_id())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl TokenStore for RedisStore {
    /// "Redis at redis://127.0.0.1:6379/0 (prefix mcph, AES-256-GCM)".
    fn describe(&self) -> String {
        format!(
            "Redis at {} (prefix {}, AES-256-GCM)",
            self.connection.url(),
            self.prefix
        )
    }

    fn is_persistent(&self) -> bool {
        true
    }

    async fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, StoreError> {
        Ok(self.load_entry(key).await?)
    }

    async fn save(
        &self,
        key: &StoreKey,
        credentials: &StoredCredentials,
    ) -> Result<(), StoreError> {
        Ok(self.save_entry(key, credentials).await?)
    }

    /// Removes the tokens, leaving a tombstone that keeps the generation (see the module docs).
    async fn delete(&self, key: &StoreKey) -> Result<(), StoreError> {
        Ok(self.delete_entry(key).await?)
    }

    async fn save_if_newer(
        &self,
        key: &StoreKey,
        credentials: &StoredCredentials,
    ) -> Result<bool, StoreError> {
        Ok(self.save_entry_if_newer(key, credentials).await?)
    }

    /// A lock on Redis shared by every replica; this machine's file lock while Redis is
    /// unreachable (see `lock.rs`).
    async fn lock_entry(&self, key: &StoreKey, wait: Duration) -> Result<EntryLock, StoreError> {
        self.take_entry_lock(key, wait).await
    }
}

/// The first 32 hex characters of SHA-256(server ‖ 0 ‖ account).
fn entry_hash(key: &StoreKey) -> String {
    let mut hash = Sha256::new();
    hash.update(key.server.as_bytes());
    hash.update([0]);
    hash.update(key.account.as_bytes());
    hex(&hash.finalize()[..16])
}
