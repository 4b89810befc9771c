//! [`Peer`]: a server behind one transport, as the suite sees it.

use std::any::Any;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use mcp_core::TransportConnector;

type Shutdown = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// How the suite learns how many `notifications/cancelled` (or the transport's equivalent)
/// reached the server.
pub enum Cancellations {
    /// The fixture server's `--event-log` file: `{"event":"cancelled",…}` lines.
    EventLog(PathBuf),
    /// A counter the server keeps (an in-process server).
    Counter(Arc<dyn Fn() -> u64 + Send + Sync>),
}

/// A server reached through one transport: what a transport registers with the suite.
pub struct Peer {
    /// The transport's name in test output (`"stdio"`, `"ws"`, …).
    pub name: &'static str,
    /// Opens connections to the server.
    pub connector: Arc<dyn TransportConnector>,
    /// The largest message the connector accepts (the suite sends one larger).
    pub message_cap: usize,
    /// How the server's cancellations are counted.
    pub cancellations: Cancellations,
    /// Keeps the server alive (a fixture handle, a temp dir) until the peer is dropped.
    keep: Vec<Box<dyn Any + Send + Sync>>,
    shutdown: Option<Shutdown>,
}

impl Peer {
    /// A peer named `name` behind `connector`.
    pub fn new(
        name: &'static str,
        connector: Arc<dyn TransportConnector>,
        message_cap: usize,
        cancellations: Cancellations,
    ) -> Peer {
        Peer {
            name,
            connector,
            message_cap,
            cancellations,
            keep: Vec::new(),
            shutdown: None,
        }
    }

    /// Keeps `value` (a server handle, a temporary directory) alive as long as the peer.
    pub fn keeping(mut self, value: impl Any + Send + Sync) -> Peer {
        self.keep.push(Box::new(value));
        self
    }

    /// Runs `stop` when the test ends (stops an in-process server, waits for its tasks).
    pub fn on_shutdown<F, Fut>(mut self, stop: F) -> Peer
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.shutdown = Some(Box::new(move || Box::pin(stop())));
        self
    }

    /// How many cancellations reached the server so far.
    pub fn cancellations_seen(&self) -> u64 {
        match &self.cancellations {
            Cancellations::EventLog(path) => std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .filter(|line| line.contains(r#""event":"cancelled""#))
                .count() as u64,
            Cancellations::Counter(count) => count(),
        }
    }

    /// Ends the peer: its shutdown hook, then everything it keeps.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.shutdown.take() {
            stop().await;
        }
        self.keep.clear();
    }
}

/// A fresh event-log path for a fixture server (in the system temp directory, unique per
/// process and call).
pub fn event_log_path(transport: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "mcp-contract-{transport}-{}-{n}.events",
        std::process::id()
    ))
}

/// Removes an event-log file when dropped (keep it in the peer).
#[derive(Debug)]
pub struct RemoveOnDrop(pub PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
