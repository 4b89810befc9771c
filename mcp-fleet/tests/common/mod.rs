//! What the fleet tests share: a real redis-server each, settings, credentials with
//! recognizable secrets, raw Redis access, a log capture and bounded waits.

#![allow(dead_code)] // Each test file uses a different part.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_auth::store::LockDir;
use mcp_auth::{ClientIdentity, Secret, StoredCredentials, TokenEndpointAuth, TokenSet, TokenType};
use mcp_fleet::{FleetSettings, StoreKeyMaterial};
use mcp_testkit::redis::RedisServer;

/// Where the tests' keys say they came from.
pub const KEY_SOURCE: &str = "MCPH_STORE_KEY";

/// A fresh redis-server (installed by `cargo xtask interop-setup`).
pub fn redis() -> RedisServer {
    match RedisServer::start() {
        Ok(redis) => redis,
        Err(e) => panic!("{e}"),
    }
}

/// A random store key.
pub fn key() -> StoreKeyMaterial {
    StoreKeyMaterial::generate().expect("random bytes")
}

/// Settings for `url` with `key` and a short timeout. The fallback lock directory is one no
/// test expects to use (a test that falls back sets its own [`TempDir`]); never the user's.
pub fn settings(url: &str, key: &StoreKeyMaterial, prefix: &str) -> FleetSettings {
    FleetSettings::new(url, key.clone(), KEY_SOURCE)
        .with_prefix(prefix)
        .with_op_timeout(Duration::from_millis(500))
        .with_lock_dir(LockDir::at(
            std::env::temp_dir().join("mcp-fleet-tests-unused-locks"),
        ))
}

/// A directory under the system's temporary directory, unique to this process and `name`,
/// removed (with what is in it) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new name (the directory is created by whoever uses it first).
    pub fn new(name: &str) -> TempDir {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        TempDir(
            std::env::temp_dir().join(format!("mcp-fleet-test-{name}-{}-{n}", std::process::id())),
        )
    }

    /// Its path.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The secrets [`credentials`] holds, each unmistakable in a dump.
pub fn secrets(tag: &str) -> [String; 4] {
    [
        format!("ACCESS-{tag}-7f3a9c"),
        format!("REFRESH-{tag}-2b8e1d"),
        format!("CLIENTSECRET-{tag}-5c4f0a"),
        format!("DPOPKEY-{tag}-9d1e6b"),
    ]
}

/// A full entry at `generation` whose secrets are [`secrets`]`(tag)`.
pub fn credentials(generation: u64, tag: &str) -> StoredCredentials {
    let [access, refresh, client_secret, dpop] = secrets(tag);
    StoredCredentials {
        tokens: Some(TokenSet {
            access_token: Secret::new(access),
            token_type: TokenType::Bearer,
            refresh_token: Some(Secret::new(refresh)),
            expires_at: Some(1_900_000_000),
            lifetime_secs: Some(3600),
            scopes: vec!["read".into(), "write".into()],
        }),
        client: Some(ClientIdentity {
            client_id: format!("client-{tag}"),
            client_secret: Some(Secret::new(client_secret)),
            auth_method: TokenEndpointAuth::ClientSecretBasic,
            redirect_uri: Some("http://127.0.0.1:33418/callback".into()),
            issuer: Some("https://auth.example".into()),
        }),
        dpop_key: Some(Secret::new(dpop)),
        generation,
        logged_out: false,
    }
}

/// A plain connection to `url` (for looking at and editing what the store wrote).
pub async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(url).expect("a Redis URL");
    tokio::time::timeout(
        Duration::from_secs(5),
        client.get_multiplexed_async_connection(),
    )
    .await
    .expect("Redis answers within 5 s")
    .expect("a connection")
}

/// Everything logged (every level) on this thread while the guard lives, as text.
#[derive(Clone, Default)]
pub struct LogCapture {
    text: Arc<Mutex<Vec<u8>>>,
}

impl LogCapture {
    /// Captures this thread's events (a current-thread runtime's tasks included) until the
    /// guard is dropped.
    pub fn start() -> (LogCapture, tracing::subscriber::DefaultGuard) {
        let capture = LogCapture::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(capture.clone())
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        (capture, guard)
    }

    /// The text so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.text.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }

    /// How many lines at `level` (e.g. `"WARN"`) contain `needle`.
    pub fn count(&self, level: &str, needle: &str) -> usize {
        self.text()
            .lines()
            .filter(|line| line.contains(level) && line.contains(needle))
            .count()
    }
}

impl Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;

    fn make_writer(&'a self) -> LogCapture {
        self.clone()
    }
}
