//! A ready session followed until it is lost: the facade's events, health checks, tool lists
//! listed again (announced or expired), and a routed server's moves to a better endpoint.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::sync::lock;
use mcp_core::types::Tool;
use mcp_core::{Error, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::ClientSession;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::run::Attempt;
use super::{Lists, Supervisor, SupervisorEvent, SupervisorListener};

/// How following a session ended.
pub(super) enum Followed {
    /// It was lost, for this reason.
    Lost(Error),
    /// The router asked to move, and a session on the better endpoint is ready.
    Moved(ClientSession, Vec<Tool>, usize),
}

/// How soon a routed server tries to move again after a move failed.
pub(super) const MOVE_RETRY: Duration = Duration::from_secs(1);

impl Supervisor {
    /// Follows a ready session (on `endpoint`) until it is lost, or a routed server moves to
    /// a better endpoint.
    pub(super) async fn follow(
        &self,
        session: &ClientSession,
        endpoint: usize,
        inbox: &mut mpsc::Receiver<SupervisorEvent>,
        listener: &dyn SupervisorListener,
    ) -> Followed {
        let mut reinitializations = session.reinitializations();
        loop {
            let stale_at = *lock(&self.tools_stale_at);
            let event = tokio::select! {
                reason = session.closed() => return Followed::Lost(reason),
                Ok(()) = reinitializations.changed() => {
                    // The server forgot the session and it was re-initialized in place: its
                    // resources are resubscribed on it.
                    tracing::debug!(server = %self.name, "the session was re-initialized; resubscribing");
                    self.resubscribe(session, Instant::now() + self.connect_timeout).await;
                    continue;
                }
                event = inbox.recv() => event,
                () = sleep_until_some(stale_at) => {
                    tracing::debug!(server = %self.name, "the tool list's ttlMs ran out; listing again");
                    *lock(&self.tools_stale_at) = None;
                    self.refresh_tools(session, listener, Refresh::Expired).await;
                    continue;
                }
            };
            match event {
                // Unreachable while the supervisor holds its own sender; be safe anyway.
                None => return Followed::Lost(session.closed().await),
                Some(SupervisorEvent::ToolsChanged) => {
                    // A burst of notifications costs one refresh.
                    tokio::time::sleep(self.policy.list_changed_debounce).await;
                    let more = self.drain(inbox);
                    if more.suspect {
                        if let Some(lost) = self.health_check(session).await {
                            return Followed::Lost(lost);
                        }
                    }
                    if !more.lists.is_empty() {
                        listener.lists_changed(&self.name, more.lists);
                    }
                    self.refresh_tools(session, listener, Refresh::Announced)
                        .await;
                    if more.reroute {
                        if let Some(moved) = self.reroute(session, endpoint).await {
                            return moved;
                        }
                    }
                }
                Some(
                    event @ (SupervisorEvent::PromptsChanged | SupervisorEvent::ResourcesChanged),
                ) => {
                    listener.lists_changed(&self.name, Lists::of(&event));
                }
                Some(SupervisorEvent::Suspect) => {
                    let more = self.drain(inbox);
                    if let Some(lost) = self.health_check(session).await {
                        return Followed::Lost(lost);
                    }
                    if more.reroute {
                        if let Some(moved) = self.reroute(session, endpoint).await {
                            return moved;
                        }
                    }
                }
                Some(SupervisorEvent::Reroute) => {
                    self.took_reroute();
                    let more = self.drain(inbox);
                    if more.suspect {
                        if let Some(lost) = self.health_check(session).await {
                            return Followed::Lost(lost);
                        }
                    }
                    if let Some(moved) = self.reroute(session, endpoint).await {
                        return moved;
                    }
                }
            }
        }
    }

    /// Takes every queued event (what they asked for is returned).
    pub(super) fn drain(&self, inbox: &mut mpsc::Receiver<SupervisorEvent>) -> Drained {
        let drained = drain(inbox);
        if drained.reroute {
            self.took_reroute();
        }
        drained
    }

    /// A reroute was taken from the queue: the router may queue the next.
    fn took_reroute(&self) {
        if let Some(router) = &self.router {
            router.reroute_taken();
        }
    }

    /// Opens a session on the endpoint the router prefers to `current`, if it prefers one and
    /// the session opens; otherwise the current session stays.
    ///
    /// Staying on an endpoint marked down (calls wait rather than go to it), the session is
    /// checked: lost when it does not answer, the endpoint up again when it does.
    async fn reroute(&self, session: &ClientSession, current: usize) -> Option<Followed> {
        let router = self.router.as_ref()?;
        let recently_failed =
            lock(&self.move_failed_at).is_some_and(|at| at.elapsed() < MOVE_RETRY);
        match router.move_from(current) {
            Some(target) if !recently_failed => {
                tracing::debug!(server = %self.name, from = current, to = target, "moving to another endpoint");
                let deadline = mcp_core::time::deadline_after(Instant::now(), self.connect_timeout);
                // The current session may die meanwhile: then it is lost (and the next
                // attempt goes wherever the router says).
                let attempt = tokio::select! {
                    attempt = self.attempt_leaving(deadline, Some(current)) => attempt,
                    reason = session.closed() => return Some(Followed::Lost(reason)),
                };
                match attempt {
                    Attempt::Connected(session, tools, endpoint) => {
                        *lock(&self.move_failed_at) = None;
                        return Some(Followed::Moved(session, tools, endpoint));
                    }
                    Attempt::Failed(e) => {
                        *lock(&self.move_failed_at) = Some(Instant::now());
                        tracing::debug!(server = %self.name, error = %e, "moving to another endpoint failed; staying");
                    }
                }
            }
            _ => {}
        }
        if router.endpoint(current).is_some_and(|e| e.unreachable()) {
            match self.health_check(session).await {
                Some(lost) => return Some(Followed::Lost(lost)),
                None => router.endpoint_answered(current),
            }
        }
        None
    }

    /// Lists the tools again. `Why::Expired` (the list's `ttlMs` ran out) tells the catalog
    /// only when something changed, and retries a failed listing later.
    async fn refresh_tools(
        &self,
        session: &ClientSession,
        listener: &dyn SupervisorListener,
        why: Refresh,
    ) {
        let options = RequestOptions::new().with_timeout(self.request_timeout);
        match session.list_all_tools_with_hints(options).await {
            Ok((tools, hints)) => {
                self.metrics.cache(mcp_metrics::CacheKind::Tools, false);
                self.note_freshness(&hints);
                tracing::debug!(server = %self.name, tools = tools.len(), "tool list refreshed");
                let mut changed = true;
                self.state.send_modify(|s| {
                    changed = s.tools.as_deref() != Some(&tools);
                    s.tools = Some(Arc::new(tools));
                });
                if changed || why == Refresh::Announced {
                    listener.tools_changed(&self.name);
                }
            }
            Err(e) => {
                tracing::warn!(server = %self.name, error = %e, "refreshing the tool list failed");
                if why == Refresh::Expired {
                    *lock(&self.tools_stale_at) = Some(
                        tokio::time::Instant::now() + self.policy.min_list_ttl.max(RETRY_EXPIRED),
                    );
                }
            }
        }
    }

    /// Schedules the next listing for when a tool list's `ttlMs` runs out.
    pub(super) fn note_freshness(&self, hints: &mcp_core::types::CacheHints) {
        let ttl = hints.fresh_for();
        *lock(&self.tools_stale_at) = (!ttl.is_zero())
            .then(|| tokio::time::Instant::now() + ttl.max(self.policy.min_list_ttl));
    }

    /// Pings the session; `Some(reason)` when it is gone.
    async fn health_check(&self, session: &ClientSession) -> Option<Error> {
        let options = RequestOptions::new().with_timeout(self.policy.health_check_timeout);
        match session.ping(options).await {
            Ok(()) => None,
            Err(e) if matches!(e.kind(), ErrorKind::Network | ErrorKind::Timeout) => Some(
                Error::network(format!("the health check failed: {}", e.message())),
            ),
            // The server answered (an error): it is alive.
            Err(_) => None,
        }
    }
}

/// Why a tool list is listed again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refresh {
    /// The server announced a change (`list_changed`).
    Announced,
    /// Its `ttlMs` ran out.
    Expired,
}

/// How soon a listing after an expired `ttlMs` that failed is tried again (at the least).
const RETRY_EXPIRED: Duration = Duration::from_secs(5);

/// Sleeps until `at`, or forever without one.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What a drained burst of events asked for.
#[derive(Default)]
pub(super) struct Drained {
    suspect: bool,
    reroute: bool,
    lists: Lists,
}

fn drain(inbox: &mut mpsc::Receiver<SupervisorEvent>) -> Drained {
    let mut drained = Drained::default();
    while let Ok(event) = inbox.try_recv() {
        match event {
            SupervisorEvent::Suspect => drained.suspect = true,
            SupervisorEvent::Reroute => drained.reroute = true,
            SupervisorEvent::PromptsChanged | SupervisorEvent::ResourcesChanged => {
                drained.lists = drained.lists.or(Lists::of(&event))
            }
            SupervisorEvent::ToolsChanged => {}
        }
    }
    drained
}
