//! The refresh lock of a store entry across a fleet
//! ([`TokenStore::lock_entry`](mcp_auth::TokenStore::lock_entry)).
//!
//! On Redis: `SET {prefix}:lock:{hash} <random token> PX <time-to-live>` when the key is free
//! (one script, which also finds the lock ours when a take is sent twice), tried again every
//! 10 ms at first, then up to every 50 ms, for at most the caller's wait. Given back by a
//! script that deletes the key only while it still holds our token (a lock that expired and
//! was taken by another replica is not ours to delete). A lock dropped without being released
//! is given back by a task on the current tokio runtime, or — without one — ends with its
//! time-to-live.
//!
//! While Redis is unreachable (it cannot be connected to, or does not answer within the
//! timeout) the lock falls back to this machine's OS file lock (`mcp_auth::store::LockDir`),
//! with one warning per outage: replicas on one machine still take turns; replicas on
//! different machines may refresh at the same time, and the generations keep the newest
//! tokens. When Redis answers, only the Redis lock is taken.

use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use mcp_auth::store::HeldLock;
use mcp_auth::{EntryLock, StoreError, StoreKey};
use redis::Script;
use tokio::time::Instant;

use crate::connection::RedisConnection;
use crate::error::FleetError;
use crate::settings::hex;
use crate::store::RedisStore;

/// The first wait between two tries at a lock another replica holds.
const FIRST_POLL: Duration = Duration::from_millis(10);
/// The longest wait between two tries.
const MAX_POLL: Duration = Duration::from_millis(50);
/// How long a take whose answer was lost is given to be taken back before the file lock.
const ORPHAN_RELEASE_LIMIT: Duration = Duration::from_millis(250);

/// Takes the lock for our token — or finds it ours already (a take sent again after its answer
/// was lost with a dropped connection). KEYS[1] = the lock; ARGV[1] = the token; ARGV[2] = the
/// time-to-live in ms. 1: ours; 0: another replica's.
static TAKE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  return 1
end
if holder then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
",
    )
});

/// Deletes the lock only while it holds our token. KEYS[1] = the lock; ARGV[1] = the token.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
",
    )
});

impl RedisStore {
    /// Takes `key`'s refresh lock (see the module docs), waiting at most `wait`.
    pub(crate) async fn take_entry_lock(
        &self,
        key: &StoreKey,
        wait: Duration,
    ) -> Result<EntryLock, StoreError> {
        let lock_key = self.lock_key(key);
        let token = random_token()?;
        let ttl_ms = u64::try_from(self.lock_ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let started = Instant::now();
        let mut poll = FIRST_POLL;
        loop {
            let taken = self
                .connection
                .run("taking a refresh lock", |mut connection| {
                    let mut invocation = TAKE.key(&lock_key);
                    invocation.arg(&token).arg(ttl_ms);
                    async move { invocation.invoke_async::<i64>(&mut connection).await }
                })
                .await;
            match taken {
                Ok(1) => {
                    return Ok(EntryLock::held(Box::new(RedisLock {
                        held: Some(TakenLock {
                            connection: self.connection.clone(),
                            lock_key,
                            token,
                        }),
                    })))
                }
                Ok(_) => {}
                Err(error) if error.is_unreachable() => {
                    // The take may have reached Redis and only its answer been lost: give it
                    // back (it is ours only if it holds our token), briefly, so that other
                    // replicas do not wait out its time-to-live.
                    let orphan = TakenLock {
                        connection: self.connection.clone(),
                        lock_key: lock_key.clone(),
                        token: token.clone(),
                    };
                    let _ = tokio::time::timeout(ORPHAN_RELEASE_LIMIT, orphan.give_back()).await;
                    return self.fall_back(key, &error, wait, started).await;
                }
                Err(error) => return Err(error.into()),
            }
            let waited = started.elapsed();
            if waited >= wait {
                return Err(StoreError(format!(
                    "another replica has held the refresh lock {lock_key} on Redis at {} for \
                     longer than {wait:?}",
                    self.connection.url()
                )));
            }
            tokio::time::sleep(poll.min(wait - waited)).await;
            poll = (poll * 2).min(MAX_POLL);
        }
    }

    /// The file lock of this machine, for the rest of `wait`.
    async fn fall_back(
        &self,
        key: &StoreKey,
        error: &FleetError,
        wait: Duration,
        started: Instant,
    ) -> Result<EntryLock, StoreError> {
        if self.connection.report_outage() {
            tracing::warn!(
                lock_dir = %self.lock_dir.path().display(),
                "{error}: refresh coordinated on this machine only (a file lock) until Redis \
                 answers again; replicas on other machines may refresh at the same time"
            );
        }
        let left = wait.saturating_sub(started.elapsed());
        let lock = self.lock_dir.lock(key, left).await?;
        Ok(lock.into_entry_lock())
    }
}

/// A 128-bit random token, as hex: whose lock it is.
fn random_token() -> Result<String, StoreError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        StoreError::from(FleetError::Random {
            what: "a lock token",
            reason: e.to_string(),
        })
    })?;
    Ok(hex(&bytes))
}

/// A refresh lock held on Redis.
struct RedisLock {
    /// `None` once given back.
    held: Option<TakenLock>,
}

struct TakenLock {
    connection: Arc<RedisConnection>,
    lock_key: String,
    token: String,
}

impl TakenLock {
    /// Deletes the lock if it is still ours; a failure leaves it to its time-to-live.
    async fn give_back(self) {
        let TakenLock {
            connection,
            lock_key,
            token,
        } = self;
        let released = connection
            .run("giving back a refresh lock", |mut connection| {
                let mut invocation = RELEASE.key(&lock_key);
                invocation.arg(&token);
                async move { invocation.invoke_async::<i64>(&mut connection).await }
            })
            .await;
        if let Err(error) = released {
            tracing::debug!(lock = %lock_key, "{error}; the lock ends with its time-to-live");
        }
    }
}

impl fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLock")
            .field("lock_key", &self.held.as_ref().map(|held| &held.lock_key))
            .finish()
    }
}

#[async_trait]
impl HeldLock for RedisLock {
    async fn release(mut self: Box<Self>) {
        if let Some(held) = self.held.take() {
            held.give_back().await;
        }
    }
}

impl Drop for RedisLock {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        // Bounded by the fleet's timeout; the runtime owns it. Without a runtime the lock ends
        // with its time-to-live.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(held.give_back());
        }
    }
}
