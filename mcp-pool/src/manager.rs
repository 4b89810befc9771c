//! The bb8 side: [`SessionManager`] (bb8's `ManageConnection`), which opens sessions through the
//! [`SessionConnector`], and [`PooledSession`], the connection bb8 holds.
//!
//! - **Opening** is the connector's `connect`, bounded by `connect_timeout` and cut short when
//!   the pool is closed or dropped. Each new session gets its keepalive task. A failure is
//!   counted, kept as the pool's last connect error, and announced to waiting callers: bb8
//!   opens sessions in its own tasks and only hands their errors to its error sink, so a caller
//!   waiting for one would otherwise wait out its whole deadline.
//! - **Checking health** never goes over the network: a session is broken when it has ended
//!   ([`ClientSession::is_closed`]) or its keepalive ping failed. bb8 asks on checkout
//!   (`is_valid`) and on return (`has_broken`) and discards broken sessions; after `close` every
//!   session counts as broken, so none is handed out again.
//! - **Discarding** drops the [`PooledSession`]: its keepalive task is aborted and, if the
//!   session still runs, it is closed gracefully in a task the pool owns
//!   ([`Closer`]). Once the pool itself is gone, sessions are dropped instead, which releases
//!   them at once (a stdio server's process group is killed, an HTTP connection is dropped).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use mcp_core::{Delivery, Error, ErrorKind};
use mcp_session::{ClientSession, SessionConnector};
use tokio::sync::watch;

use crate::config::PoolConfig;
use crate::keepalive::{self, Activity};
use crate::stats::{Counters, Gauge};
use crate::tasks::{AbortOnDrop, Closer};

/// What the manager, the pool and every pooled session share.
#[derive(Debug)]
pub(crate) struct ManagerShared {
    pub(crate) config: PoolConfig,
    pub(crate) counters: Counters,
    /// Connects in progress.
    connecting: AtomicU32,
    /// Sessions opened and not yet dropped (in the pool, in use, or on their way into it).
    live: AtomicU32,
    /// Bumped on every connect failure and on close; waiting callers watch it.
    events: watch::Sender<u64>,
    last_failure: Mutex<Option<Error>>,
    /// Set by `close` and when the pool is dropped.
    closed: AtomicBool,
    /// Becomes true with `closed`; connects in progress watch it.
    closed_signal: watch::Sender<bool>,
    pub(crate) closer: Closer,
}

impl ManagerShared {
    pub(crate) fn new(config: PoolConfig) -> Self {
        ManagerShared {
            config,
            counters: Counters::default(),
            connecting: AtomicU32::new(0),
            live: AtomicU32::new(0),
            events: watch::channel(0).0,
            last_failure: Mutex::new(None),
            closed: AtomicBool::new(false),
            closed_signal: watch::channel(false).0,
            closer: Closer::new(),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Stops handing out and opening sessions, and wakes every waiting caller.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.closed_signal.send_replace(true);
        self.events.send_modify(|n| *n += 1);
    }

    /// The pool is gone: close, and release discarded sessions at once from now on.
    pub(crate) fn shut_down(&self) {
        self.close();
        self.closer.shut_down();
    }

    /// A receiver of connect failures (and of close), marked as seen.
    pub(crate) fn events(&self) -> watch::Receiver<u64> {
        let mut rx = self.events.subscribe();
        rx.borrow_and_update();
        rx
    }

    /// Whether no session exists or is being opened: a waiting caller then has nothing to
    /// wait for.
    pub(crate) fn nothing_to_wait_for(&self) -> bool {
        self.live.load(Ordering::Acquire) == 0 && self.connecting.load(Ordering::Acquire) == 0
    }

    /// The error of the last failed connect.
    pub(crate) fn last_failure(&self) -> Option<Error> {
        self.last_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn record_failure(&self, error: &Error) {
        Counters::bump(&self.counters.connect_failures);
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.clone());
    }

    fn announce(&self) {
        self.events.send_modify(|n| *n += 1);
    }
}

/// The error a call gets once the pool is closed.
pub(crate) fn pool_closed() -> Error {
    Error::new(ErrorKind::ServerUnavailable, "the session pool is closed")
        .with_delivery(Delivery::NotSent)
}

/// bb8's `ManageConnection` over a [`SessionConnector`].
pub(crate) struct SessionManager {
    connector: Arc<dyn SessionConnector>,
    shared: Arc<ManagerShared>,
}

impl SessionManager {
    pub(crate) fn new(connector: Arc<dyn SessionConnector>, shared: Arc<ManagerShared>) -> Self {
        SessionManager { connector, shared }
    }

    async fn open(&self) -> Result<ClientSession, Error> {
        let limit = self.shared.config.connect_timeout;
        let mut closed = self.shared.closed_signal.subscribe();
        // In a task of its own: a panicking connector must not unwind through bb8's opener
        // task, which would lose bb8's count of connections being opened (one slot for good).
        let connector = self.connector.clone();
        let mut connecting = AbortOnDrop(tokio::spawn(async move { connector.connect().await }));
        tokio::select! {
            opened = tokio::time::timeout(limit, &mut connecting.0) => match opened {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => Err(Error::new(
                    ErrorKind::ServerUnavailable,
                    format!("opening a session failed: {e}"),
                )),
                Err(_) => Err(Error::timeout(format!(
                    "connecting to the server took longer than {limit:?}"
                ))),
            },
            _ = closed.wait_for(|closed| *closed) => Err(pool_closed()),
        }
    }
}

impl bb8::ManageConnection for SessionManager {
    type Connection = PooledSession;
    type Error = Error;

    async fn connect(&self) -> Result<PooledSession, Error> {
        let shared = &self.shared;
        if shared.is_closed() {
            return Err(pool_closed());
        }
        let connecting = Gauge::up(&shared.connecting);
        match self.open().await {
            Ok(session) => {
                let pooled = PooledSession::new(session, shared.clone());
                drop(connecting);
                Ok(pooled)
            }
            Err(error) => {
                let error = error.with_delivery(Delivery::NotSent);
                if !shared.is_closed() {
                    tracing::warn!(error = %error, "could not open a pooled session");
                    shared.record_failure(&error);
                }
                drop(connecting);
                shared.announce();
                Err(error)
            }
        }
    }

    async fn is_valid(&self, conn: &mut PooledSession) -> Result<(), Error> {
        if self.has_broken(conn) {
            return Err(Error::network(
                "the pooled session has ended or the pool is closed",
            ));
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut PooledSession) -> bool {
        conn.is_broken() || self.shared.is_closed()
    }
}

/// bb8's error sink: connection errors bb8 does not hand to a caller go to the log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogErrors;

impl bb8::ErrorSink<Error> for LogErrors {
    fn sink(&self, error: Error) {
        tracing::debug!(error = %error, "session pool");
    }

    fn boxed_clone(&self) -> Box<dyn bb8::ErrorSink<Error>> {
        Box::new(*self)
    }
}

/// One session in the pool, with its keepalive task.
pub(crate) struct PooledSession {
    session: ClientSession,
    activity: Arc<Activity>,
    shared: Arc<ManagerShared>,
    _keepalive: Option<AbortOnDrop>,
}

impl PooledSession {
    fn new(session: ClientSession, shared: Arc<ManagerShared>) -> Self {
        shared.live.fetch_add(1, Ordering::AcqRel);
        let activity = Arc::new(Activity::new());
        let keepalive = shared.config.keepalive_interval.map(|interval| {
            AbortOnDrop(tokio::spawn(keepalive::run(
                session.clone(),
                activity.clone(),
                shared.clone(),
                interval,
            )))
        });
        PooledSession {
            session,
            activity,
            shared,
            _keepalive: keepalive,
        }
    }

    pub(crate) fn session(&self) -> &ClientSession {
        &self.session
    }

    pub(crate) fn activity(&self) -> &Activity {
        &self.activity
    }

    fn is_broken(&self) -> bool {
        self.session.is_closed() || self.activity.is_broken()
    }
}

impl Drop for PooledSession {
    fn drop(&mut self) {
        if self.is_broken() {
            Counters::bump(&self.shared.counters.closed_broken);
        }
        if !self.session.is_closed() {
            self.shared.closer.close_later(self.session.clone());
        }
        // No announcement: bb8 has already asked for a replacement, whose connect has not
        // started yet; a waiting caller keeps waiting for it.
        self.shared.live.fetch_sub(1, Ordering::AcqRel);
    }
}
