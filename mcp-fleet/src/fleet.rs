//! [`Fleet`]: one per process — the Redis connection the token store, its lock and the rate
//! limits share.

use std::fmt;
use std::sync::Arc;

use mcp_resilience::SharedPermits;

use crate::connection::RedisConnection;
use crate::error::FleetError;
use crate::permits::RedisPermits;
use crate::settings::FleetSettings;
use crate::store::RedisStore;

/// A fleet's shared state on Redis, for one process (replica). Cheap to clone: clones share
/// the connection.
///
/// Nothing connects until the first operation; a first connect that fails is tried again by
/// the next operation. Every operation is bounded by
/// [`FleetSettings::op_timeout`]. A `Fleet` belongs to the tokio runtime it is first used on
/// (its connection's task runs there).
///
/// ```no_run
/// use mcp_fleet::{Fleet, FleetSettings, StoreKeyMaterial};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let key = StoreKeyMaterial::parse("MCPH_STORE_KEY", &std::env::var("MCPH_STORE_KEY")?)?;
/// let fleet = Fleet::new(FleetSettings::new("redis://10.0.0.5:6379/0", key, "MCPH_STORE_KEY"))?;
/// let store = fleet.token_store(); // an mcp_auth::TokenStore
/// let permits = fleet.permits("github"); // for RateLimitLayer::shared
/// println!("tokens and limits on {}", fleet.describe());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Fleet {
    connection: Arc<RedisConnection>,
    prefix: String,
    store: Arc<RedisStore>,
}

impl Fleet {
    /// A fleet on the Redis `settings` name. Parses and checks the settings; no I/O.
    pub fn new(settings: FleetSettings) -> Result<Fleet, FleetError> {
        settings.check()?;
        let connection = Arc::new(RedisConnection::new(&settings)?);
        let store = Arc::new(RedisStore::new(connection.clone(), &settings));
        Ok(Fleet {
            connection,
            prefix: settings.prefix,
            store,
        })
    }

    /// The token store (one per fleet: every caller gets the same).
    pub fn token_store(&self) -> Arc<RedisStore> {
        self.store.clone()
    }

    /// The fleet-wide rate-limit permits of the server named `server_name`, for
    /// [`RateLimitLayer::shared`](mcp_resilience::RateLimitLayer::shared).
    pub fn permits(&self, server_name: &str) -> Arc<dyn SharedPermits> {
        Arc::new(self.redis_permits(server_name))
    }

    /// The same as [`permits`](Self::permits), as its concrete type.
    pub fn redis_permits(&self, server_name: &str) -> RedisPermits {
        RedisPermits::new(self.connection.clone(), &self.prefix, server_name)
    }

    /// Asks Redis for a `PONG` (within the timeout): whether the fleet's Redis answers now.
    pub async fn ping(&self) -> Result<(), FleetError> {
        self.connection
            .run("PING", |mut connection| async move {
                redis::cmd("PING")
                    .query_async::<String>(&mut connection)
                    .await
            })
            .await
            .map(|_| ())
    }

    /// "Redis at redis://127.0.0.1:6379/0 (prefix mcph)".
    pub fn describe(&self) -> String {
        format!(
            "Redis at {} (prefix {})",
            self.connection.url(),
            self.prefix
        )
    }

    /// Redis's URL, without a password.
    pub fn url(&self) -> &str {
        self.connection.url()
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("url", &self.connection.url())
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}
