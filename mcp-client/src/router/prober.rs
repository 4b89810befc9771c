//! The prober: every endpoint of a routed server is probed in rounds, a probe interval after
//! the last round ended, all endpoints in the same round (so a busy moment weighs on every
//! endpoint alike); opening a probe's session takes at most a probe interval (at least 1 s).
//! The endpoint carrying the calls is pinged on the supervisor's session (counted as a call
//! on it, so a move never closes it under the ping); every other one gets a new session, one
//! ping and a close. A ping is `ping` in the 2025 era and `server/discover` in the 2026-07-28 era (the
//! session maps it). Only the ping is timed: its round trip is what the endpoints are compared
//! by — never the calls', whose tools take what they take. A probe that fails marks its
//! endpoint down; one that answers brings it up. After each round the router decides again.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionConnector};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::{Placement, Router};
use crate::status::ServerStatus;
use crate::supervisor::Supervisor;

/// How long closing a probe's session may take.
const PROBE_CLOSE: Duration = Duration::from_secs(2);

/// Starts the probe task: the first round as soon as the supervisor's start-up is over, then
/// one per probe interval. It holds the router and the supervisor weakly and ends with either
/// (the router aborts it when it stops or is dropped).
pub(super) fn spawn(router: &Arc<Router>, supervisor: &Arc<Supervisor>) -> JoinHandle<()> {
    let router = Arc::downgrade(router);
    let supervisor = Arc::downgrade(supervisor);
    tokio::spawn(async move {
        loop {
            if !round(&router, &supervisor).await {
                return;
            }
            let Some(interval) = router.upgrade().map(|r| r.probe_interval()) else {
                return;
            };
            tokio::time::sleep(interval).await;
        }
    })
}

/// One round: every endpoint probed at once, then the decision. False when the router or the
/// supervisor is gone, or the server stopped.
async fn round(router: &Weak<Router>, supervisor: &Weak<Supervisor>) -> bool {
    let (Some(router), Some(supervisor)) = (router.upgrade(), supervisor.upgrade()) else {
        return false;
    };
    match supervisor.snapshot().status {
        ServerStatus::Stopped => return false,
        // Nothing to route until someone logs in (or the server is turned on).
        ServerStatus::NeedsCredentials { .. } | ServerStatus::Disabled => return true,
        _ => {}
    }
    let primary = supervisor.ready_now_at();
    drop(supervisor);
    let mut probes = JoinSet::new();
    for index in 0..router.endpoints().len() {
        let on_primary = primary
            .as_ref()
            .filter(|(_, placement)| placement.endpoint == index)
            .map(|(session, placement)| (session.clone(), *placement));
        let router = router.clone();
        probes.spawn(async move {
            let outcome = probe(&router, index, on_primary).await;
            (index, outcome)
        });
    }
    while let Some(done) = probes.join_next().await {
        let Ok((index, outcome)) = done else {
            continue;
        };
        let Some(endpoint) = router.endpoint(index) else {
            continue;
        };
        match outcome {
            Probe::Answered(latency) => {
                endpoint.metrics.record_probe(Some(latency));
                endpoint.answered(Instant::now());
            }
            Probe::Failed(why) => {
                endpoint.metrics.record_probe(None);
                router.endpoint_failed(index, &format!("probe failed: {why}"));
            }
            Probe::Skipped => {}
        }
    }
    router.evaluate();
    true
}

/// How one probe went.
enum Probe {
    /// The ping's round trip.
    Answered(Duration),
    /// Why it failed.
    Failed(String),
    /// Not made, or cut short by the client (the session it used was retired by a move).
    Skipped,
}

/// Probes endpoint `index`: on the supervisor's session when it is there (with its
/// placement), else on a session of its own, opened and closed for the probe.
async fn probe(
    router: &Router,
    index: usize,
    on_primary: Option<(ClientSession, Placement)>,
) -> Probe {
    let Some(endpoint) = router.endpoint(index) else {
        return Probe::Skipped;
    };
    if let Some(reason) = endpoint.connector.unreachable() {
        return Probe::Failed(reason.to_owned());
    }
    if let Some((session, placement)) = on_primary {
        // Counted like a call, so a move waits for it before it closes the session.
        let _in_flight = endpoint.enter();
        if router.placement() != Some(placement) {
            return Probe::Skipped;
        }
        return match ping(&session, router.ping_timeout()).await {
            Err(_) if session.is_closed() && router.placement() != Some(placement) => {
                Probe::Skipped
            }
            outcome => outcome.map_or_else(Probe::Failed, Probe::Answered),
        };
    }
    // A probe never takes longer to open its session than a probe interval (at least 1 s).
    let limit = router
        .connect_timeout()
        .min(router.probe_interval().max(Duration::from_secs(1)));
    let session = match tokio::time::timeout(limit, endpoint.connector.connect()).await {
        Ok(Ok(session)) => session,
        Ok(Err(e)) => return Probe::Failed(e.message().to_owned()),
        Err(_) => {
            return Probe::Failed(format!(
                "no session within {}",
                mcp_core::time::human_duration(limit)
            ))
        }
    };
    let latency = ping(&session, router.ping_timeout()).await;
    let _ = tokio::time::timeout(PROBE_CLOSE, session.close()).await;
    latency.map_or_else(Probe::Failed, Probe::Answered)
}

/// One timed ping.
async fn ping(session: &ClientSession, timeout: Duration) -> Result<Duration, String> {
    let started = Instant::now();
    match session
        .ping(RequestOptions::new().with_timeout(timeout))
        .await
    {
        Ok(()) => Ok(started.elapsed()),
        Err(e) => Err(e.message().to_owned()),
    }
}
