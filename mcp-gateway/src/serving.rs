//! What the gateway's servers (the MCP endpoint, the panel) share: [`ServerTask`], the owner
//! of an accept loop — told to stop and waited for within a bound, or aborted with everything
//! it owns when dropped — and [`is_loopback_authority`], their DNS-rebinding check.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a stopping server's task is waited for before it is aborted.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// A server task and the way to tell it to stop.
#[derive(Debug)]
pub(crate) struct ServerTask {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl ServerTask {
    /// Spawns the loop `serve` makes of the stop signal it is given.
    pub(crate) fn spawn<F>(serve: impl FnOnce(oneshot::Receiver<()>) -> F) -> ServerTask
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let (stop, stopped) = oneshot::channel();
        ServerTask {
            stop: Some(stop),
            task: Some(tokio::spawn(serve(stopped))),
        }
    }

    /// Tells the loop to stop and waits for it, at most five seconds (then aborts it).
    pub(crate) async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(SHUTDOWN_TIMEOUT, &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

impl Drop for ServerTask {
    fn drop(&mut self) {
        // Aborting the loop drops what it owns (its connections' `JoinSet`).
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Whether an authority (a `Host` value, an origin without its scheme) names a loopback host:
/// `localhost`, `127.0.0.1` (any 127.x address), `[::1]`, with or without a port.
pub(crate) fn is_loopback_authority(authority: &str) -> bool {
    let authority = authority.trim();
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        authority.split(':').next().unwrap_or("")
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
