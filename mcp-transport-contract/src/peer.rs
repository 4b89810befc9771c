//! [`Peer`]: a server behind one transport, as the suite sees it, and [`TestkitFixture`], the
//! set-up every transport that serves mcp-testkit's fixture shares.

use std::any::Any;
use std::collections::HashSet;
use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use mcp_core::{Era, TransportConnector};
use mcp_testkit::modern::EraMode;
use mcp_testkit::ServerOptions;

type Shutdown = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// How the suite learns how many calls the server saw cancelled (by `notifications/cancelled`
/// or the transport's equivalent).
pub enum Cancellations {
    /// The fixture server's `--event-log` file: a `{"event":"cancelled","id":…}` line naming a
    /// `tools/call` the server ran (a `{"event":"call","id":…}` line) counts.
    EventLog(PathBuf),
    /// A counter the server keeps (an in-process server: cancellations that reached a running
    /// call).
    Counter(Arc<dyn Fn() -> u64 + Send + Sync>),
    /// The server cannot tell, for the reason given: the suite then checks the caller's side
    /// only (the deadline, the session going on).
    NotCounted(&'static str),
}

/// A server reached through one transport: what a transport registers with the suite.
pub struct Peer {
    /// The transport's name in test output (`"stdio"`, `"ws"`, …).
    pub name: &'static str,
    /// What the transport's sessions report as `transport_name` (`network.transport`:
    /// `"pipe"`, `"tcp"`, `"inproc"`).
    pub network_transport: &'static str,
    /// The one era the server speaks (the suite's sessions detect it; a session pinned to the
    /// other era is refused).
    pub era: Era,
    /// Opens connections to the server.
    pub connector: Arc<dyn TransportConnector>,
    /// The largest message the connector accepts (the suite sends one larger).
    pub message_cap: usize,
    /// How the server's cancellations are counted.
    pub cancellations: Cancellations,
    /// The server lists in pages of this many items (`None`: everything on one page).
    pub page_size: Option<usize>,
    /// The `ttlMs` cache hint of the server's modern list results (`None`: none given).
    pub list_ttl_ms: Option<u64>,
    /// Keeps the server alive (a fixture handle, a temp dir) until the peer is dropped.
    keep: Vec<Box<dyn Any + Send + Sync>>,
    shutdown: Option<Shutdown>,
}

impl Peer {
    /// A peer named `name` behind `connector`, whose server speaks `era` only, lists everything
    /// on one page and gives no cache hints.
    pub fn new(
        name: &'static str,
        network_transport: &'static str,
        era: Era,
        connector: Arc<dyn TransportConnector>,
        message_cap: usize,
        cancellations: Cancellations,
    ) -> Peer {
        Peer {
            name,
            network_transport,
            era,
            connector,
            message_cap,
            cancellations,
            page_size: None,
            list_ttl_ms: None,
            keep: Vec::new(),
            shutdown: None,
        }
    }

    /// The server lists in pages of `size` items.
    pub fn pages_of(mut self, size: usize) -> Peer {
        self.page_size = Some(size);
        self
    }

    /// The server's modern list results carry the cache hint `ttlMs: ttl_ms`.
    pub fn list_ttl_ms(mut self, ttl_ms: u64) -> Peer {
        self.list_ttl_ms = Some(ttl_ms);
        self
    }

    /// Counts the server's cancellations another way.
    pub fn with_cancellations(mut self, cancellations: Cancellations) -> Peer {
        self.cancellations = cancellations;
        self
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

    /// How many of its calls the server saw cancelled so far (`None`: it cannot tell).
    pub fn cancellations_seen(&self) -> Option<u64> {
        match &self.cancellations {
            Cancellations::EventLog(path) => {
                let events = mcp_testkit::event_log::read_events(path);
                let calls: HashSet<String> = events
                    .iter()
                    .filter(|e| e["event"] == "call")
                    .map(|e| e["id"].to_string())
                    .collect();
                let cancelled = events
                    .iter()
                    .filter(|e| e["event"] == "cancelled" && calls.contains(&e["id"].to_string()))
                    .count();
                Some(cancelled as u64)
            }
            Cancellations::Counter(count) => Some(count()),
            Cancellations::NotCounted(_) => None,
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

/// Lists of mcp-testkit's fixture come in pages of this many items under the suite.
pub const TESTKIT_PAGE_SIZE: usize = 2;

/// mcp-testkit's fixture server as a peer's server, started by the transport (as a process or
/// in process) with the flags every transport gives it: the era (`--era legacy`, the default,
/// or `--era modern`), lists in pages of [`TESTKIT_PAGE_SIZE`] (`--page-size`), and an event log
/// that counts cancellations (`--event-log`, removed with the peer).
pub struct TestkitFixture {
    era: Era,
    log: PathBuf,
}

impl TestkitFixture {
    /// The fixture for `transport`'s peer, speaking `era` only.
    pub fn new(transport: &str, era: Era) -> TestkitFixture {
        TestkitFixture {
            era,
            log: event_log_path(transport),
        }
    }

    /// The fixture's command-line arguments (to start it as a process).
    pub fn args(&self) -> Vec<OsString> {
        vec![
            "--era".into(),
            self.era_mode_name().into(),
            "--page-size".into(),
            TESTKIT_PAGE_SIZE.to_string().into(),
            "--event-log".into(),
            self.log.clone().into(),
        ]
    }

    /// The fixture's options (to serve it in process).
    pub fn options(&self) -> ServerOptions {
        ServerOptions {
            era: match self.era {
                Era::Legacy => EraMode::Legacy,
                Era::Modern => EraMode::Modern,
            },
            page_size: TESTKIT_PAGE_SIZE,
            event_log: Some(self.log.clone()),
            ..ServerOptions::default()
        }
    }

    /// The peer named `name` that reaches this fixture through `connector`.
    pub fn peer(
        self,
        name: &'static str,
        network_transport: &'static str,
        connector: Arc<dyn TransportConnector>,
        message_cap: usize,
    ) -> Peer {
        Peer::new(
            name,
            network_transport,
            self.era,
            connector,
            message_cap,
            Cancellations::EventLog(self.log.clone()),
        )
        .pages_of(TESTKIT_PAGE_SIZE)
        .list_ttl_ms(mcp_testkit::modern::LIST_TTL_MS)
        .keeping(RemoveOnDrop(self.log))
    }

    fn era_mode_name(&self) -> &'static str {
        match self.era {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
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
