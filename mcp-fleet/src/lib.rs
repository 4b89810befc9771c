//! `mcp-fleet`: the state a fleet of MCP client processes (replicas) shares on Redis.
//!
//! - `settings.rs` — [`FleetSettings`] (where Redis is, its password, the store key, the key
//!   prefix, the per-operation timeout) and [`StoreKeyMaterial`], the 32-byte key every replica
//!   encrypts the tokens with.
//! - `fleet.rs` — [`Fleet`], one per process: the Redis connection every part shares, and
//!   where the token store and the rate-limit permits come from.
//! - `store.rs` — [`RedisStore`], an [`mcp_auth::TokenStore`]: one encrypted Redis hash per
//!   server and account, generations compared in one script, deletes as tombstones.
//! - `lock.rs` — the refresh lock ([`TokenStore::lock_entry`](mcp_auth::TokenStore::lock_entry))
//!   on Redis, falling back to this machine's file lock while Redis is unreachable.
//! - `permits.rs` — [`RedisPermits`], an [`mcp_resilience::SharedPermits`]: one fleet-wide
//!   rate limit per server (GCRA in one Lua script, on Redis's clock).
//! - `cipher.rs` — AES-256-GCM of a store entry, bound to its Redis key and generation.
//! - `connection.rs` — the one Redis connection of a [`Fleet`]: connected on first use, every
//!   operation bounded by the timeout, errors naming the URL without its password.
//! - `error.rs` — [`FleetError`].
//!
//! # Why redis-rs (crate `redis`) and not `fred`
//!
//! redis-rs is the most used and most actively kept Redis client for Rust; it has what this
//! crate needs and little else: tokio, a reconnecting multiplexed [`ConnectionManager`](
//! redis::aio::ConnectionManager), scripts sent as `EVALSHA` with a fallback to `EVAL`, and
//! `rediss://` on rustls (aws-lc-rs, like our transports). `fred` is a fine client too, but
//! larger (its own pooling, routing and reconnect policies) for the handful of commands used
//! here, and pulls in more of its own runtime machinery.
//!
//! # What lives where on Redis
//!
//! Under a prefix (default `mcph`) several fleets can share one Redis:
//!
//! | key | type | what |
//! |---|---|---|
//! | `{prefix}:oauth:{hash}` | hash | one store entry: `gen`, `kid`, `data` ([`RedisStore`]) |
//! | `{prefix}:lock:{hash}` | string | the refresh lock of that entry: a random token, with a time-to-live |
//! | `{prefix}:ratelimit:{server}` | string | a server's rate limit: its theoretical arrival time in µs ([`RedisPermits`]) |
//!
//! `{hash}` is the first 32 hex characters of SHA-256(server ‖ 0 ‖ account): no server URL
//! (which may hold a secret in its query) is ever part of a key name.
//!
//! # When Redis is down
//!
//! Every operation gives up after [`FleetSettings::op_timeout`] (2 s by default), and:
//!
//! - loading or storing tokens fails with a clear error; the OAuth client keeps the tokens it
//!   holds, and nothing is deleted;
//! - the refresh lock is this machine's file lock, with one warning per outage;
//! - each replica's rate limit is its own, at the full rate, with one warning per outage (the
//!   fleet may go up to replicas × the limit until Redis is back).

#![warn(missing_docs)]

mod cipher;
mod connection;
mod error;
mod fleet;
mod lock;
mod permits;
mod settings;
mod store;

pub use error::FleetError;
pub use fleet::Fleet;
pub use permits::RedisPermits;
pub use settings::{
    FleetSettings, StoreKeyMaterial, DEFAULT_OP_TIMEOUT, DEFAULT_PREFIX, FALLBACK_LOCK_SERVICE,
};
pub use store::RedisStore;
