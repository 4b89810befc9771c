//! Shared helpers: the fixture server over stdio behind a `GrpcBridge` on 127.0.0.1, sessions
//! to it, and the backend processes' pids (to check they are gone).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{BoxTransport, Error, TransportConnector};
use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use mcp_transport_grpc::{GrpcBridge, GrpcBridgeHandle, GrpcServerConfig, GrpcTransport};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};

/// Generous deadline for anything a test waits on.
pub const DEADLINE: Duration = Duration::from_secs(20);

pub fn fixture(args: &[&str]) -> StdioServerConfig {
    StdioServerConfig::new(mcp_testkit::fixture_server_bin())
        .args(args)
        .shutdown_grace(Duration::from_millis(300))
}

/// Starts the fixture server for every connection and remembers each child's pid.
#[derive(Clone)]
pub struct RecordingStdio {
    config: StdioServerConfig,
    pub pids: Arc<Mutex<Vec<u32>>>,
}

impl RecordingStdio {
    pub fn new(config: StdioServerConfig) -> RecordingStdio {
        RecordingStdio {
            config,
            pids: Arc::default(),
        }
    }

    pub fn pids(&self) -> Vec<u32> {
        self.pids.lock().unwrap().clone()
    }
}

#[async_trait]
impl TransportConnector for RecordingStdio {
    async fn connect(&self) -> Result<BoxTransport, Error> {
        let transport = StdioTransport::spawn(self.config.clone())?;
        self.pids.lock().unwrap().push(transport.pid());
        Ok(BoxTransport::new(transport))
    }

    fn transport_name(&self) -> &'static str {
        "pipe"
    }
}

/// A bridge in front of the fixture server (started with `args`) on 127.0.0.1.
pub struct Bridged {
    pub bridge: GrpcBridgeHandle,
    pub backend: RecordingStdio,
}

impl Bridged {
    pub async fn start(args: &[&str]) -> Bridged {
        Bridged::start_with(args, |bridge| bridge).await
    }

    pub async fn start_with(
        args: &[&str],
        configure: impl FnOnce(GrpcBridge) -> GrpcBridge,
    ) -> Bridged {
        let backend = RecordingStdio::new(fixture(args));
        let bridge = configure(
            GrpcBridge::new(Arc::new(backend.clone()))
                .backend_close_timeout(Duration::from_secs(2))
                .shutdown_timeout(Duration::from_secs(5)),
        )
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("the bridge binds 127.0.0.1");
        Bridged { bridge, backend }
    }

    pub fn config(&self) -> GrpcServerConfig {
        GrpcServerConfig::new(self.bridge.url())
    }

    pub async fn session(&self) -> ClientSession {
        self.session_with(self.config(), (), SessionOptions::default())
            .await
            .expect("connects")
    }

    pub async fn session_with(
        &self,
        config: GrpcServerConfig,
        handler: impl ClientHandler,
        options: SessionOptions,
    ) -> Result<ClientSession, Error> {
        tokio::time::timeout(DEADLINE, async {
            let transport = GrpcTransport::connect(config).await?;
            ClientSession::connect(transport, handler, options).await
        })
        .await
        .expect("connect finished in time")
    }

    /// Waits until the bridge has no call left and every backend process is gone.
    pub async fn wait_all_ended(&self) {
        mcp_testkit::wait::until("the bridge's calls to end", DEADLINE, || {
            self.bridge.active_calls() == 0
        })
        .await;
        for pid in self.backend.pids() {
            wait_process_gone(pid).await;
        }
    }
}

/// Whether a process with this pid exists at all (live or zombie).
pub fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits until the process is gone and reaped.
pub async fn wait_process_gone(pid: u32) {
    mcp_testkit::wait::until(&format!("process {pid} to be gone"), DEADLINE, || {
        !process_exists(pid)
    })
    .await;
}

/// A fresh event-log path for the fixture (`--event-log`), removed when dropped.
pub struct EventLog(pub PathBuf);

impl EventLog {
    pub fn new(name: &str) -> EventLog {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        EventLog(
            std::env::temp_dir().join(format!("mcp-grpc-{name}-{}-{n}.events", std::process::id())),
        )
    }

    pub fn arg(&self) -> &str {
        self.0.to_str().expect("temp paths are UTF-8 here")
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
