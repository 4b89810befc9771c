//! [`RedisPermits`]: a server's rate limit shared by every replica of a fleet, as GCRA (the
//! generic cell rate algorithm, the one governor uses locally) in one Lua script — one round
//! trip per decision.
//!
//! The key `{prefix}:ratelimit:{server}` holds the theoretical arrival time (TAT) in µs on
//! Redis's clock (`TIME`), so the replicas' clocks never matter. With the emission interval
//! T = 1 s / calls per second and the tolerance τ = T·(burst − 1), a call at `now` is allowed
//! when `now ≥ TAT − τ` (and then TAT becomes max(TAT, now) + T); otherwise it waits
//! `TAT − τ − now`. The key expires once TAT has passed (an idle limit costs nothing).
//!
//! The server's name is in the key as it is when it is plain (`[A-Za-z0-9._-]`, at most 64
//! characters), else as `#` + 32 hex characters of its SHA-256.

use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use mcp_resilience::{RateLimitPolicy, SharedPermits};
use redis::Script;
use sha2::{Digest, Sha256};

use crate::connection::RedisConnection;
use crate::settings::hex;

/// GCRA on Redis's clock. KEYS[1] = the limit; ARGV = T and τ in µs. Returns 0 when a permit
/// was taken, else the wait in µs. (µs since the epoch fit a Lua double exactly until 2255.)
static GCRA: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or 0) or 0
if tat < now then
  tat = now
end
local wait = tat - tolerance - now
if wait > 0 then
  return wait
end
local next_tat = tat + interval
local ttl_ms = math.floor((next_tat - now) / 1000) + 1
redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX', string.format('%d', ttl_ms))
return 0
",
    )
});

/// The longest plain server name kept as it is in a key.
const MAX_PLAIN_NAME: usize = 64;

/// One server's fleet-wide rate-limit permits on Redis (see the module docs). From
/// [`Fleet::permits`](crate::Fleet::permits).
pub struct RedisPermits {
    connection: Arc<RedisConnection>,
    key: String,
}

impl RedisPermits {
    pub(crate) fn new(
        connection: Arc<RedisConnection>,
        prefix: &str,
        server_name: &str,
    ) -> RedisPermits {
        RedisPermits {
            connection,
            key: format!("{prefix}:ratelimit:{}", key_part(server_name)),
        }
    }

    /// The Redis key of this limit.
    pub fn key(&self) -> &str {
        &self.key
    }
}

impl fmt::Debug for RedisPermits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisPermits")
            .field("url", &self.connection.url())
            .field("key", &self.key)
            .finish()
    }
}

#[async_trait]
impl SharedPermits for RedisPermits {
    async fn try_take(&self, policy: &RateLimitPolicy) -> Result<Option<Duration>, String> {
        let interval = u64::try_from(policy.interval().as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        let tolerance = interval.saturating_mul(u64::from(policy.burst.get()) - 1);
        let wait_us: u64 = self
            .connection
            .run("taking a rate-limit permit", |mut connection| {
                let mut invocation = GCRA.key(&self.key);
                invocation.arg(interval).arg(tolerance);
                async move { invocation.invoke_async(&mut connection).await }
            })
            .await
            .map_err(|e| e.to_string())?;
        Ok((wait_us > 0).then(|| Duration::from_micros(wait_us)))
    }

    /// "Redis at redis://10.0.0.5:6379/0, key mcph:ratelimit:github".
    fn describe(&self) -> String {
        format!("Redis at {}, key {}", self.connection.url(), self.key)
    }
}

/// `name` as part of a key: as it is when plain, else `#` and a hash.
fn key_part(name: &str) -> String {
    let plain = !name.is_empty()
        && name.len() <= MAX_PLAIN_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if plain {
        name.to_owned()
    } else {
        format!("#{}", hex(&Sha256::digest(name.as_bytes())[..16]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_stay_and_odd_ones_are_hashed() {
        assert_eq!(key_part("github"), "github");
        assert_eq!(key_part("my-server_2.prod"), "my-server_2.prod");
        for odd in [
            "",
            "a b",
            "https://x.example/mcp?key=s3cret",
            &"a".repeat(65),
        ] {
            let part = key_part(odd);
            assert!(
                part.starts_with('#') && part.len() == 33,
                "{odd:?} → {part}"
            );
            assert!(!part.contains("s3cret"));
        }
        assert_ne!(key_part("a b"), key_part("a  b"));
    }
}
