//! The prober: every endpoint of a routed server is probed once per probe interval, all in the
//! same round (so a busy moment weighs on every endpoint alike). The endpoint carrying the calls
//! is pinged on the supervisor's session; every other one gets a new session, one ping and a
//! close. A ping is `ping` in the 2025 era and `server/discover` in the 2026-07-28 era (the
//! session maps it). Only the ping is timed: its round trip is what the endpoints are compared
//! by — never the calls', whose tools take what they take. A probe that fails marks its
//! endpoint down; one that answers brings it up. After each round the router decides again.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcp_core::{ClientSession, Connector, McpServiceExt, RequestOptions};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::Router;
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
/// supervisor is gone.
async fn round(router: &Weak<Router>, supervisor: &Weak<Supervisor>) -> bool {
    let (Some(router), Some(supervisor)) = (router.upgrade(), supervisor.upgrade()) else {
        return false;
    };
    let primary = supervisor.ready_now_at();
    drop(supervisor);
    let mut probes = JoinSet::new();
    for index in 0..router.endpoints().len() {
        let on_primary = primary
            .as_ref()
            .filter(|(_, active)| *active == index)
            .map(|(session, _)| session.clone());
        let router = router.clone();
        probes.spawn(async move {
            let latency = probe(&router, index, on_primary).await;
            (index, latency)
        });
    }
    while let Some(done) = probes.join_next().await {
        let Ok((index, latency)) = done else {
            continue;
        };
        let Some(endpoint) = router.endpoint(index) else {
            continue;
        };
        endpoint
            .metrics
            .record_probe(latency.as_ref().ok().copied());
        match latency {
            Ok(_) => endpoint.answered(Instant::now()),
            Err(why) => router.endpoint_failed(index, &format!("probe failed: {why}")),
        }
    }
    router.evaluate();
    true
}

/// Probes endpoint `index`: the ping's round trip, or why it failed.
async fn probe(
    router: &Router,
    index: usize,
    on_primary: Option<ClientSession>,
) -> Result<Duration, String> {
    let Some(endpoint) = router.endpoint(index) else {
        return Err("no such endpoint".to_owned());
    };
    if let Some(reason) = endpoint.connector.unreachable() {
        return Err(reason.to_owned());
    }
    if let Some(session) = on_primary {
        return ping(&session, router.ping_timeout()).await;
    }
    let session =
        match tokio::time::timeout(router.connect_timeout(), endpoint.connector.connect()).await {
            Ok(Ok(session)) => session,
            Ok(Err(e)) => return Err(e.message().to_owned()),
            Err(_) => {
                return Err(format!(
                    "no session within {}",
                    mcp_core::time::human_duration(router.connect_timeout())
                ))
            }
        };
    let latency = ping(&session, router.ping_timeout()).await;
    let _ = tokio::time::timeout(PROBE_CLOSE, session.close()).await;
    latency
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
