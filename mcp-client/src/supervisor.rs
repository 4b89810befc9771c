//! One supervisor per server: it owns the server's primary session and keeps it alive.
//!
//! - **Start:** one connection attempt (spawn or connect, `initialize`, `tools/list`) bounded by
//!   the server's `startup_timeout`, and — if it failed before that time was up — one immediate
//!   retry within what is left of it. Start-up is bounded by one `startup_timeout`.
//! - **Session lost** (the child died, the connection closed, a health check failed): attempts
//!   on the schedule immediate, 1 s, 2 s, 4 s, 8 s ([`SupervisionPolicy::reconnect_delays`]),
//!   each bounded by `startup_timeout`. After the last one the server is
//!   [`Unavailable`](ServerStatus::Unavailable): calls fail at once, and a probe every
//!   `probe_interval` (default 30 s) tries again.
//! - **Back:** the tool list is fetched again (the catalog reports what changed), resource
//!   subscriptions are renewed, and the logging level is set again (by the connector, on every
//!   new session); callers see the server again without doing anything.
//! - **Credentials refused** (an `Auth` or `PermissionDenied` failure): never retried; the
//!   server stays in [`NeedsCredentials`](ServerStatus::NeedsCredentials).
//! - **Health:** a call that fails with a network error makes the supervisor ping the session
//!   (remote sessions do not end by themselves when the server goes away); if the ping fails
//!   too, the session counts as lost.
//!
//! - **Routed servers** (several endpoints): the session is opened where the server's
//!   [`Router`] says and stays on that endpoint for its life; a lost session marks its
//!   endpoint down, and reconnects go to the next one. When the router asks
//!   ([`SupervisorEvent::Reroute`]) and names a better endpoint, a new session is opened there
//!   (subscriptions renewed, tools listed) and swapped in; the old one is handed to the router,
//!   which closes it once its calls are over.
//!
//! A call that arrives while the server is starting, reconnecting or probing waits for it within
//! its own deadline ([`Supervisor::ready_session`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::types::Tool;
use mcp_core::{Delivery, Error, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, Connector};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::router::{Placement, Router};
use crate::status::ServerStatus;

/// The reconnect schedule and health checks of every server's supervisor.
#[derive(Debug, Clone, PartialEq)]
pub struct SupervisionPolicy {
    /// The wait before each reconnect attempt after a session was lost: immediate, 1 s, 2 s,
    /// 4 s, 8 s by default (five attempts).
    pub reconnect_delays: Vec<Duration>,
    /// How long the ping of a health check may take.
    pub health_check_timeout: Duration,
    /// How long a burst of `tools/list_changed` notifications is gathered into one refresh.
    pub list_changed_debounce: Duration,
    /// The shortest time a tool list is kept before it is listed again because its `ttlMs`
    /// (2026-07-28 cache hint) ran out. A list without a positive `ttlMs` is kept until a
    /// `list_changed` or a reconnect.
    pub min_list_ttl: Duration,
}

impl Default for SupervisionPolicy {
    fn default() -> Self {
        SupervisionPolicy {
            reconnect_delays: [0, 1, 2, 4, 8].map(Duration::from_secs).to_vec(),
            health_check_timeout: Duration::from_secs(5),
            list_changed_debounce: Duration::from_millis(50),
            min_list_ttl: Duration::from_secs(1),
        }
    }
}

/// What the rest of the facade tells a supervisor.
#[derive(Debug)]
pub(crate) enum SupervisorEvent {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
    /// `notifications/resources/list_changed`.
    ResourcesChanged,
    /// A call failed with a network error: is the session still alive?
    Suspect,
    /// (Routed servers) another endpoint may be better: ask the router, and move if it says so.
    Reroute,
}

/// What a supervisor tells the client.
pub(crate) trait SupervisorListener: Send + Sync + 'static {
    /// The server's tool list (or status) changed: rebuild the catalog.
    fn tools_changed(&self, server: &str);
    /// The server's prompts or resources may have changed (a notification, or a new session).
    fn lists_changed(&self, server: &str, which: Lists);
}

/// Which of a server's prompt and resource lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Lists {
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
}

impl Lists {
    /// Both lists.
    pub(crate) const BOTH: Lists = Lists {
        prompts: true,
        resources: true,
    };

    fn of(event: &SupervisorEvent) -> Lists {
        Lists {
            prompts: matches!(event, SupervisorEvent::PromptsChanged),
            resources: matches!(event, SupervisorEvent::ResourcesChanged),
        }
    }

    fn or(self, other: Lists) -> Lists {
        Lists {
            prompts: self.prompts || other.prompts,
            resources: self.resources || other.resources,
        }
    }

    /// True when neither.
    pub(crate) fn is_empty(self) -> bool {
        !(self.prompts || self.resources)
    }
}

/// The server's state as calls and status displays see it.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub(crate) status: ServerStatus,
    pub(crate) session: Option<ClientSession>,
    /// The last tool list the server gave (kept while it is away, so its tools stay in the
    /// catalog and calls get "unavailable" rather than "does not exist").
    pub(crate) tools: Option<Arc<Vec<Tool>>>,
    /// Where the session is (endpoint 0 of a server with one).
    pub(crate) placement: Placement,
}

/// How one connection attempt went.
enum Attempt {
    /// A session (on that endpoint) and its tools.
    Connected(ClientSession, Vec<Tool>, usize),
    Failed(Error),
}

/// How following a session ended.
enum Followed {
    /// It was lost, for this reason.
    Lost(Error),
    /// The router asked to move, and a session on the better endpoint is ready.
    Moved(ClientSession, Vec<Tool>, usize),
}

pub(crate) struct Supervisor {
    name: String,
    connector: Arc<dyn Connector>,
    /// Where sessions are opened, for a server with several endpoints.
    router: Option<Arc<Router>>,
    policy: SupervisionPolicy,
    connect_timeout: Duration,
    request_timeout: Duration,
    probe_interval: Duration,
    state: watch::Sender<Snapshot>,
    events: mpsc::Sender<SupervisorEvent>,
    inbox: Mutex<Option<mpsc::Receiver<SupervisorEvent>>>,
    /// What every new session renews before it is ready (resource subscriptions); weak: it
    /// reaches back to the supervisor through the call stack.
    renewal: std::sync::OnceLock<std::sync::Weak<dyn crate::resources::SubscriptionRenewal>>,
    reconnects: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// The last [`HISTORY`] status changes, with when they happened.
    history: Mutex<std::collections::VecDeque<(Instant, ServerStatus)>>,
    task: Mutex<Option<JoinHandle<()>>>,
    /// When the current tool list's `ttlMs` runs out (then it is listed again).
    tools_stale_at: Mutex<Option<tokio::time::Instant>>,
    metrics: mcp_metrics::ServerHandle,
    /// When the current session became ready (for `mcp.client.session.duration`).
    session_started: Mutex<Option<Instant>>,
    /// When a routed server's last move failed (the next is tried [`MOVE_RETRY`] later at
    /// the soonest).
    move_failed_at: Mutex<Option<Instant>>,
}

/// How soon a routed server tries to move again after a move failed.
const MOVE_RETRY: Duration = Duration::from_secs(1);

/// How many status changes a supervisor remembers.
const HISTORY: usize = 64;

use mcp_core::sync::lock;

/// Where a supervisor's parts come from.
pub(crate) struct SupervisorParts {
    pub(crate) name: String,
    pub(crate) connector: Arc<dyn Connector>,
    /// For a server with several endpoints: where its sessions are opened (then `connector`
    /// is not used).
    pub(crate) router: Option<Arc<Router>>,
    pub(crate) policy: SupervisionPolicy,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) probe_interval: Duration,
    pub(crate) events: (
        mpsc::Sender<SupervisorEvent>,
        mpsc::Receiver<SupervisorEvent>,
    ),
    /// Where reconnects, sessions and tool listings are counted.
    pub(crate) metrics: mcp_metrics::ServerHandle,
}

/// Events a supervisor holds before more are dropped: they only ever ask for a refresh or a
/// health check, and a burst of them costs one of each anyway.
pub(crate) const EVENT_QUEUE: usize = 64;

impl Supervisor {
    /// A supervisor in `initial` state (`Starting`, or `Disabled` / `Unavailable` for servers
    /// that will never be started); [`start`](Supervisor::start) runs it.
    pub(crate) fn new(parts: SupervisorParts, initial: ServerStatus) -> Arc<Supervisor> {
        let (state, _) = watch::channel(Snapshot {
            status: initial,
            session: None,
            tools: None,
            placement: Placement::SINGLE,
        });
        let (events, inbox) = parts.events;
        Arc::new(Supervisor {
            name: parts.name,
            connector: parts.connector,
            router: parts.router,
            policy: parts.policy,
            connect_timeout: parts.connect_timeout,
            request_timeout: parts.request_timeout,
            probe_interval: parts.probe_interval,
            state,
            events,
            inbox: Mutex::new(Some(inbox)),
            renewal: std::sync::OnceLock::new(),
            reconnects: AtomicU64::new(0),
            last_error: Mutex::new(None),
            history: Mutex::new(std::collections::VecDeque::new()),
            task: Mutex::new(None),
            tools_stale_at: Mutex::new(None),
            metrics: parts.metrics,
            session_started: Mutex::new(None),
            move_failed_at: Mutex::new(None),
        })
    }

    /// Starts supervising (once). The running task holds the supervisor; its owner (the
    /// server's `ManagedServer`) ends it with [`stop`](Self::stop) or [`abort`](Self::abort).
    pub(crate) fn start(self: &Arc<Self>, listener: Arc<dyn SupervisorListener>) {
        let Some(inbox) = lock(&self.inbox).take() else {
            return;
        };
        let supervisor = self.clone();
        let task = tokio::spawn(async move { supervisor.run(inbox, listener).await });
        *lock(&self.task) = Some(task);
    }

    /// Ends the supervising task at once (no graceful close: the owner is going away).
    pub(crate) fn abort(&self) {
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
    }

    /// The current state.
    pub(crate) fn snapshot(&self) -> Snapshot {
        self.state.borrow().clone()
    }

    /// The last status changes (oldest first), with when they happened.
    #[cfg(test)]
    pub(crate) fn history(&self) -> Vec<(Instant, ServerStatus)> {
        lock(&self.history).iter().cloned().collect()
    }

    fn remember(&self, status: &ServerStatus) {
        let mut history = lock(&self.history);
        if history.back().map(|(_, s)| s) != Some(status) {
            if history.len() == HISTORY {
                history.pop_front();
            }
            history.push_back((Instant::now(), status.clone()));
        }
    }

    /// Sessions re-established after one was lost.
    pub(crate) fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// The last failure the supervisor saw.
    pub(crate) fn last_error(&self) -> Option<String> {
        lock(&self.last_error).clone()
    }

    /// Tells the supervisor something (a list changed, a call failed); dropped when its queue
    /// is full (it has plenty to act on already).
    pub(crate) fn tell(&self, event: SupervisorEvent) {
        let _ = self.events.try_send(event);
    }

    /// Sets what every new session renews before it is ready (once, before [`start`]).
    pub(crate) fn renew_with(&self, renewal: &Arc<dyn crate::resources::SubscriptionRenewal>) {
        let _ = self.renewal.set(Arc::downgrade(renewal));
    }

    /// Waits until the start-up attempt has finished (ready or not), up to `limit`.
    pub(crate) async fn started(&self, limit: Duration) {
        let mut rx = self.state.subscribe();
        let _ = tokio::time::timeout(
            limit,
            rx.wait_for(|s| !matches!(s.status, ServerStatus::Starting)),
        )
        .await;
    }

    /// The session to send a call on: at once when ready; waits (until `deadline`) while the
    /// server is starting, reconnecting or probing; fails at once when it is unavailable, needs
    /// credentials, or is stopped. Errors say the call was never sent.
    pub(crate) async fn ready_session(&self, deadline: Instant) -> Result<ClientSession, Error> {
        self.ready_session_at(deadline)
            .await
            .map(|(session, _)| session)
    }

    /// [`ready_session`](Self::ready_session), with where the session is.
    pub(crate) async fn ready_session_at(
        &self,
        deadline: Instant,
    ) -> Result<(ClientSession, Placement), Error> {
        if let Some(ready) = self.ready_now_at() {
            return Ok(ready);
        }
        let mut rx = self.state.subscribe();
        loop {
            let snapshot = rx.borrow_and_update().clone();
            let status = snapshot.status;
            let error = match (&status, snapshot.session) {
                (ServerStatus::Ready, Some(session)) if !session.is_closed() => {
                    return Ok((session, snapshot.placement))
                }
                (status, _) if status.is_connecting() || status.is_ready() => {
                    // Ready with a closed session: the supervisor is about to notice.
                    match tokio::time::timeout_at(deadline, rx.changed()).await {
                        Ok(Ok(())) => continue,
                        Ok(Err(_)) => Error::new(
                            ErrorKind::ServerUnavailable,
                            format!("server \"{}\" is stopped", self.name),
                        ),
                        Err(_) => Error::timeout(format!(
                            "server \"{}\" is {status}; it was not back within the call's deadline",
                            self.name
                        )),
                    }
                }
                (ServerStatus::NeedsCredentials { reason }, _) => Error::new(
                    ErrorKind::Auth,
                    format!("server \"{}\" needs credentials: {reason}", self.name),
                ),
                // A server that answered, but not as MCP, is a protocol failure, not one that
                // is down: the call says so (`mcph` exits 7, not 4).
                (ServerStatus::Unavailable { reason, kind }, _) => Error::new(
                    match kind {
                        ErrorKind::Protocol => ErrorKind::Protocol,
                        _ => ErrorKind::ServerUnavailable,
                    },
                    format!(
                        "server \"{}\" is unavailable: {reason}; it is tried again every {}s",
                        self.name,
                        self.probe_interval.as_secs().max(1)
                    ),
                ),
                (status, _) => Error::new(
                    ErrorKind::ServerUnavailable,
                    format!("server \"{}\" is {status}", self.name),
                ),
            };
            return Err(error.with_delivery(Delivery::NotSent));
        }
    }

    /// The session, when the server is ready right now (no waiting, no subscription).
    pub(crate) fn ready_now(&self) -> Option<ClientSession> {
        self.ready_now_at().map(|(session, _)| session)
    }

    /// [`ready_now`](Self::ready_now), with where the session is.
    pub(crate) fn ready_now_at(&self) -> Option<(ClientSession, Placement)> {
        let state = self.state.borrow();
        match (&state.status, &state.session) {
            (ServerStatus::Ready, Some(session)) if !session.is_closed() => {
                Some((session.clone(), state.placement))
            }
            _ => None,
        }
    }

    /// Waits until the state changes, or `until`.
    pub(crate) async fn changed_before(&self, until: Instant) {
        let mut rx = self.state.subscribe();
        rx.borrow_and_update();
        let _ = tokio::time::timeout_at(until, rx.changed()).await;
    }

    /// Stops supervising: the task ends, the state becomes `Stopped`, and the primary session is
    /// closed (within `limit`).
    pub(crate) async fn stop(&self, limit: Duration) {
        let task = lock(&self.task).take();
        if let Some(task) = task {
            task.abort();
            // An abort takes effect at the task's next await: wait for it, so that nothing the
            // task does can follow the `Stopped` below.
            let _ = tokio::time::timeout(limit, task).await;
        }
        let mut session = None;
        self.remember(&ServerStatus::Stopped);
        self.state.send_modify(|s| {
            s.status = ServerStatus::Stopped;
            session = s.session.take();
            s.tools = None;
        });
        if let Some(session) = session {
            self.session_ended(None);
            let _ = tokio::time::timeout(limit, session.close()).await;
        }
    }

    /// Renews what a new session must hold (resource subscriptions) before `deadline`.
    async fn renew(&self, session: &ClientSession, deadline: Instant) {
        if let Some(renewal) = self.renewal.get().and_then(std::sync::Weak::upgrade) {
            renewal.renew(session, deadline).await;
        }
    }

    /// Records how long the session that just ended lived (`error_type` when it was lost).
    fn session_ended(&self, error_type: Option<&str>) {
        if let Some(started) = lock(&self.session_started).take() {
            self.metrics.session_ended(started.elapsed(), error_type);
        }
    }

    fn set_status(&self, status: ServerStatus) {
        self.remember(&status);
        self.state.send_modify(|s| {
            s.status = status;
            s.session = None;
        });
    }

    fn note_error(&self, error: &Error) {
        *lock(&self.last_error) = Some(error.message().to_owned());
    }

    async fn run(
        self: Arc<Self>,
        mut inbox: mpsc::Receiver<SupervisorEvent>,
        listener: Arc<dyn SupervisorListener>,
    ) {
        let mut outcome = self.start_up().await;
        // The session a move left: closed by the router once the new one is in place and the
        // calls on the old one are over.
        let mut left: Option<(usize, ClientSession)> = None;
        loop {
            match outcome {
                Attempt::Connected(session, tools, endpoint) => {
                    self.metrics
                        .set_protocol_version(Some(session.protocol_version().as_str()));
                    *lock(&self.session_started) = Some(Instant::now());
                    // The router learns where the calls go before any call sees the session.
                    let placement = match &self.router {
                        Some(router) => router.activated(endpoint),
                        None => Placement::SINGLE,
                    };
                    self.remember(&ServerStatus::Ready);
                    self.state.send_modify(|s| {
                        s.status = ServerStatus::Ready;
                        s.session = Some(session.clone());
                        s.tools = Some(Arc::new(tools));
                        s.placement = placement;
                    });
                    if let (Some(router), Some((from, old))) = (&self.router, left.take()) {
                        router.retire(from, Some(old));
                    }
                    tracing::info!(server = %self.name, "MCP server ready");
                    listener.tools_changed(&self.name);
                    listener.lists_changed(&self.name, Lists::BOTH);
                    let lost = match self
                        .follow(&session, endpoint, &mut inbox, listener.as_ref())
                        .await
                    {
                        Followed::Moved(new, tools, to) => {
                            // The old session goes on serving the calls in flight on it; the
                            // router closes it after them, once the new one is in place.
                            self.session_ended(None);
                            left = Some((endpoint, session));
                            outcome = Attempt::Connected(new, tools, to);
                            continue;
                        }
                        Followed::Lost(lost) => lost,
                    };
                    tracing::warn!(server = %self.name, reason = %lost, "MCP server session lost; reconnecting");
                    self.note_error(&lost);
                    self.session_ended(Some(lost.kind().as_str()));
                    if let Some(router) = &self.router {
                        router.endpoint_failed(endpoint, lost.message());
                    }
                    // No call may take the lost session while it is being closed.
                    self.set_status(ServerStatus::Reconnecting { attempt: 1 });
                    let _ = tokio::time::timeout(Duration::from_secs(2), session.close()).await;
                    drop(session);
                    outcome = self.reconnect(&mut inbox).await;
                }
                Attempt::Failed(error) if is_credentials_error(&error) => {
                    self.note_error(&error);
                    tracing::warn!(server = %self.name, error = %error, "MCP server refused the credentials; not retrying");
                    self.set_status(ServerStatus::NeedsCredentials {
                        reason: error.message().to_owned(),
                    });
                    listener.tools_changed(&self.name);
                    return;
                }
                Attempt::Failed(error) => {
                    self.note_error(&error);
                    tracing::warn!(server = %self.name, error = %error, "MCP server unavailable");
                    self.set_status(ServerStatus::Unavailable {
                        reason: error.message().to_owned(),
                        kind: error.kind(),
                    });
                    listener.tools_changed(&self.name);
                    outcome = self.probe(&mut inbox).await;
                }
            }
        }
    }

    /// The first attempt, and one immediate retry within the same `startup_timeout`.
    async fn start_up(&self) -> Attempt {
        let deadline = mcp_core::time::deadline_after(Instant::now(), self.connect_timeout);
        match self.attempt(deadline).await {
            Attempt::Failed(e) if !is_credentials_error(&e) && Instant::now() < deadline => {
                tracing::debug!(server = %self.name, error = %e, "start-up failed; retrying at once");
                self.attempt(deadline).await
            }
            outcome => outcome,
        }
    }

    /// Re-establishes a lost session on the backoff schedule.
    async fn reconnect(&self, inbox: &mut mpsc::Receiver<SupervisorEvent>) -> Attempt {
        let mut last = Error::network("the session was lost");
        for (index, delay) in self.policy.reconnect_delays.iter().enumerate() {
            let attempt = u32::try_from(index + 1).unwrap_or(u32::MAX);
            self.set_status(ServerStatus::Reconnecting { attempt });
            tokio::time::sleep(*delay).await;
            self.drain(inbox);
            match self
                .attempt(mcp_core::time::deadline_after(
                    Instant::now(),
                    self.connect_timeout,
                ))
                .await
            {
                connected @ Attempt::Connected(..) => {
                    self.reconnects.fetch_add(1, Ordering::Relaxed);
                    self.metrics.reconnected();
                    tracing::info!(server = %self.name, attempt, "MCP server reconnected");
                    return connected;
                }
                Attempt::Failed(e) if is_credentials_error(&e) => return Attempt::Failed(e),
                Attempt::Failed(e) => {
                    tracing::debug!(server = %self.name, attempt, error = %e, "reconnect attempt failed");
                    self.note_error(&e);
                    last = e;
                }
            }
        }
        Attempt::Failed(last)
    }

    /// Tries an unavailable server again every `probe_interval` until it is back.
    async fn probe(&self, inbox: &mut mpsc::Receiver<SupervisorEvent>) -> Attempt {
        loop {
            tokio::time::sleep(self.probe_interval).await;
            self.drain(inbox);
            self.set_status(ServerStatus::Probing);
            match self
                .attempt(mcp_core::time::deadline_after(
                    Instant::now(),
                    self.connect_timeout,
                ))
                .await
            {
                connected @ Attempt::Connected(..) => {
                    self.reconnects.fetch_add(1, Ordering::Relaxed);
                    self.metrics.reconnected();
                    tracing::info!(server = %self.name, "MCP server is back");
                    return connected;
                }
                Attempt::Failed(e) if is_credentials_error(&e) => return Attempt::Failed(e),
                Attempt::Failed(e) => {
                    tracing::debug!(server = %self.name, error = %e, "probe failed");
                    self.note_error(&e);
                    self.set_status(ServerStatus::Unavailable {
                        reason: e.message().to_owned(),
                        kind: e.kind(),
                    });
                }
            }
        }
    }

    /// Connects, lists the tools and renews subscriptions, all before `deadline`.
    async fn attempt(&self, deadline: Instant) -> Attempt {
        self.attempt_leaving(deadline, None).await
    }

    /// [`attempt`](Self::attempt); a routed server's session is opened where its router says,
    /// never on `leaving` (the endpoint a move goes away from).
    async fn attempt_leaving(&self, deadline: Instant, leaving: Option<usize>) -> Attempt {
        let connecting = async {
            let (session, endpoint) = match &self.router {
                Some(router) => router.connect(deadline, leaving).await?,
                None => (self.connector.connect().await?, 0),
            };
            let setup = async {
                let tools = session
                    .list_all_tools_with_hints(RequestOptions::new().with_deadline(deadline))
                    .await
                    .map(|(tools, hints)| {
                        // The tool list is not kept across sessions: a listing is a miss.
                        self.metrics.cache(mcp_metrics::CacheKind::Tools, false);
                        self.note_freshness(&hints);
                        tools
                    })?;
                // Last: the resource manager is handed the session only once nothing can
                // fail (a failed move keeps it on the session it stays on).
                self.renew(&session, deadline).await;
                Ok::<_, Error>(tools)
            };
            match setup.await {
                Ok(tools) => {
                    if let Some(router) = &self.router {
                        router.session_ready(endpoint);
                    }
                    Ok((session, tools, endpoint))
                }
                Err(e) => {
                    if let Some(router) = &self.router {
                        router.endpoint_failed(endpoint, e.message());
                    }
                    session.close().await;
                    Err(e)
                }
            }
        };
        match tokio::time::timeout_at(deadline, connecting).await {
            Ok(Ok((session, tools, endpoint))) => Attempt::Connected(session, tools, endpoint),
            Ok(Err(e)) => Attempt::Failed(e),
            Err(_) => Attempt::Failed(Error::timeout(format!(
                "the server did not complete start-up (initialize and tools/list) within the startup timeout ({})",
                mcp_core::time::human_duration(self.connect_timeout)
            ))),
        }
    }

    /// Follows a ready session (on `endpoint`) until it is lost, or a routed server moves to
    /// a better endpoint.
    async fn follow(
        &self,
        session: &ClientSession,
        endpoint: usize,
        inbox: &mut mpsc::Receiver<SupervisorEvent>,
        listener: &dyn SupervisorListener,
    ) -> Followed {
        let mut renewals = session.renewals();
        loop {
            let stale_at = *lock(&self.tools_stale_at);
            let event = tokio::select! {
                reason = session.closed() => return Followed::Lost(reason),
                Ok(()) = renewals.changed() => {
                    // The server forgot the session and it was made anew in place: what the
                    // old one held (resource subscriptions) is renewed on it.
                    tracing::debug!(server = %self.name, "the session was made anew; renewing its subscriptions");
                    self.renew(session, Instant::now() + self.connect_timeout).await;
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
    fn drain(&self, inbox: &mut mpsc::Receiver<SupervisorEvent>) -> Drained {
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
    fn note_freshness(&self, hints: &mcp_core::types::CacheHints) {
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
struct Drained {
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

fn is_credentials_error(error: &Error) -> bool {
    matches!(error.kind(), ErrorKind::Auth | ErrorKind::PermissionDenied)
}

#[cfg(test)]
mod tests;
