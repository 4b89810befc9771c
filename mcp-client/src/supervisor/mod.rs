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
//!   resources are resubscribed, and the logging level is set again (by the connector, on every
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
//!   (resources resubscribed, tools listed) and swapped in; the old one is handed to the router,
//!   which closes it once its calls are over.
//!
//! A call that arrives while the server is starting, reconnecting or probing waits for it within
//! its own deadline ([`Supervisor::ready_session`]).
//!
//! Here the supervisor's state and its handle (policy, events, snapshot, start and stop);
//! `readiness.rs` how calls get the session, `run.rs` the supervising task's state machine
//! (start-up, reconnects, probes), `follow.rs` a ready session followed (events, health checks,
//! moves).

mod follow;
mod readiness;
mod run;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::types::Tool;
use mcp_core::Error;
use mcp_session::{ClientSession, SessionConnector};
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

pub(crate) struct Supervisor {
    name: String,
    connector: Arc<dyn SessionConnector>,
    /// Where sessions are opened, for a server with several endpoints.
    router: Option<Arc<Router>>,
    policy: SupervisionPolicy,
    connect_timeout: Duration,
    request_timeout: Duration,
    probe_interval: Duration,
    state: watch::Sender<Snapshot>,
    events: mpsc::Sender<SupervisorEvent>,
    inbox: Mutex<Option<mpsc::Receiver<SupervisorEvent>>>,
    /// What every new session resubscribes before it is ready (resource subscriptions); weak: it
    /// reaches back to the supervisor through the call stack.
    resubscriber: std::sync::OnceLock<std::sync::Weak<dyn crate::resources::Resubscriber>>,
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
    /// When a routed server's last move failed (the next is tried
    /// [`MOVE_RETRY`](follow::MOVE_RETRY) later at the soonest).
    move_failed_at: Mutex<Option<Instant>>,
}

/// How many status changes a supervisor remembers.
const HISTORY: usize = 64;

use mcp_core::sync::lock;

/// Where a supervisor's parts come from.
pub(crate) struct SupervisorParts {
    pub(crate) name: String,
    pub(crate) connector: Arc<dyn SessionConnector>,
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
            resubscriber: std::sync::OnceLock::new(),
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

    /// Sets what every new session resubscribes before it is ready (once, before [`start`]).
    pub(crate) fn resubscribe_with(&self, resubscriber: &Arc<dyn crate::resources::Resubscriber>) {
        let _ = self.resubscriber.set(Arc::downgrade(resubscriber));
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

    /// Resubscribes the resources a new session must hold, before `deadline`.
    async fn resubscribe(&self, session: &ClientSession, deadline: Instant) {
        if let Some(resubscriber) = self.resubscriber.get().and_then(std::sync::Weak::upgrade) {
            resubscriber.resubscribe(session, deadline).await;
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
}

#[cfg(test)]
mod tests;
