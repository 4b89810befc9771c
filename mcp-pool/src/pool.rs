//! [`SessionPool`]: the shared handle, the lazy start of the bb8 pool, checkout bounded by the
//! call's deadline, and the [`McpService`] implementation.

use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

use mcp_core::service::CallFuture;
use mcp_core::{Delivery, Error, ErrorKind, McpService, Operation, Payload};
use mcp_session::SessionConnector;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::PoolConfig;
use crate::manager::{pool_closed, LogErrors, ManagerShared, SessionManager};
use crate::sizing::{self, SizedPermit, Sizer};
use crate::stats::{fill_from_bb8, Counters, Gauge, PoolStats};
use crate::tasks::AbortOnDrop;

/// bb8's own checkout timeout: only a backstop, since every checkout is bounded by its call's
/// deadline first.
const CHECKOUT_BACKSTOP: Duration = Duration::from_secs(600);

/// How long [`SessionPool::close`] waits for idle sessions to close gracefully. Each session's
/// close is bounded by itself (its `SessionOptions::close_timeout`, 10 s by default, plus at
/// most 6 s of draining); this bounds them all together.
pub const CLOSE_WAIT: Duration = Duration::from_secs(20);

/// A pool of sessions to one server, for one client (see the crate documentation for who may
/// share a pool). Cheap to clone: clones share the pool. Nothing connects until the first call.
///
/// Every call checks one session out (waiting at most until the call's deadline), sends the
/// operation on it, and returns the session to the pool when the call ends — also when the
/// caller gives up or its task panics. Dropping the last handle ends every session and task of
/// the pool at once; [`close`](SessionPool::close) ends them gracefully.
#[derive(Clone)]
pub struct SessionPool {
    shared: Arc<PoolShared>,
}

struct PoolShared {
    manager: Arc<ManagerShared>,
    connector: Arc<dyn SessionConnector>,
    sizer: Option<Arc<Sizer>>,
    started: OnceLock<Started>,
}

/// The pool once its first call came.
struct Started {
    pool: bb8::Pool<SessionManager>,
    _sizing: Option<AbortOnDrop>,
}

impl Drop for PoolShared {
    fn drop(&mut self) {
        // Before the bb8 pool (a field) is dropped: sessions dropped from now on are released
        // at once, connects in progress stop, waiting callers (there are none left) would wake.
        self.manager.shut_down();
        if let Some(sizer) = &self.sizer {
            sizer.close();
        }
    }
}

/// One session bound to one call; returns it to the pool when dropped.
struct Checkout<'a> {
    // Field order is drop order: the session goes back to bb8 first, then the load-sized
    // permit, then the in-use count.
    conn: bb8::PooledConnection<'a, SessionManager>,
    _permit: Option<SizedPermit>,
    _in_use: Gauge<'a>,
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        self.conn.activity().end_call();
    }
}

/// Polls `future` once: `Ready(output)` or `Pending` (the future stays usable).
fn poll_once<F: Future>(mut future: Pin<&mut F>) -> impl Future<Output = Poll<F::Output>> + '_ {
    poll_fn(move |cx| Poll::Ready(future.as_mut().poll(cx)))
}

impl SessionPool {
    /// A pool of sessions opened by `connector`. Connects nothing yet, and needs no runtime
    /// until the first call.
    pub fn new<C: SessionConnector>(connector: C, config: PoolConfig) -> SessionPool {
        SessionPool::with_shared_connector(Arc::new(connector), config)
    }

    /// [`new`](SessionPool::new) with a connector shared with others (e.g. a supervisor).
    pub fn with_shared_connector(
        connector: Arc<dyn SessionConnector>,
        config: PoolConfig,
    ) -> SessionPool {
        let config = config.normalized();
        let sizer = config
            .load_sized
            .then(|| Arc::new(Sizer::new(config.min_target(), config.max_size)));
        SessionPool {
            shared: Arc::new(PoolShared {
                manager: Arc::new(ManagerShared::new(config)),
                connector,
                sizer,
                started: OnceLock::new(),
            }),
        }
    }

    /// The configuration the pool runs with (normalized).
    pub fn config(&self) -> &PoolConfig {
        &self.shared.manager.config
    }

    /// A snapshot of the pool's state and counters.
    pub fn stats(&self) -> PoolStats {
        let manager = &self.shared.manager;
        let mut stats = PoolStats {
            closed: manager.is_closed(),
            max_size: manager.config.max_size,
            target_size: self.shared.sizer.as_ref().map(|s| s.target()),
            ..PoolStats::default()
        };
        if let Some(started) = self.shared.started.get() {
            stats.started = true;
            fill_from_bb8(&mut stats, &started.pool.state());
        }
        manager.counters.fill(&mut stats);
        stats
    }

    /// Closes the pool: new calls fail at once ([`ErrorKind::ServerUnavailable`], never sent),
    /// waiting callers are woken with that error, connects in progress stop, and every idle
    /// session is closed gracefully — this waits for those closes, at most [`CLOSE_WAIT`].
    /// Calls in flight go on; each one's session is closed (in the background, by the pool)
    /// when it ends. Dropping the pool afterwards releases whatever is left at once.
    pub async fn close(&self) {
        let shared = &self.shared;
        let deadline = Instant::now() + CLOSE_WAIT;
        shared.manager.close();
        if let Some(sizer) = &shared.sizer {
            sizer.close();
        }
        // Twice: a connect that had already succeeded when the pool closed may put its
        // session in the pool just after the first pass.
        for _ in 0..2 {
            self.discard_idle().await;
            shared.manager.closer.drain(deadline).await;
        }
    }

    /// Discards every idle session (once closed, each fails bb8's checkout test, and bb8
    /// discards each one it tries — all of them within one poll of `get`, since the test needs
    /// no round trip); each is closed gracefully by the pool's closer.
    async fn discard_idle(&self) {
        if let Some(started) = self.shared.started.get() {
            let get = pin!(started.pool.get());
            if let Poll::Ready(Ok(conn)) = poll_once(get).await {
                // Not possible once closed (every session counts as broken); returning it
                // discards it anyway.
                drop(conn);
            }
        }
    }

    /// The bb8 pool, built on first use: nothing connects before the first call.
    fn started(&self) -> &Started {
        self.shared.started.get_or_init(|| {
            let shared = &self.shared;
            let config = &shared.manager.config;
            let manager = SessionManager::new(shared.connector.clone(), shared.manager.clone());
            let pool = bb8::Pool::builder()
                .max_size(config.max_size)
                .min_idle(Some(config.min_idle))
                .idle_timeout(Some(config.idle_timeout))
                .max_lifetime(config.max_lifetime)
                .reaper_rate(config.reaper_interval)
                .connection_timeout(CHECKOUT_BACKSTOP)
                .retry_connection(false)
                .test_on_check_out(true)
                .queue_strategy(bb8::QueueStrategy::Lifo)
                .error_sink(Box::new(LogErrors))
                .build_unchecked(manager);
            let sizing = shared.sizer.as_ref().map(|sizer| {
                AbortOnDrop(tokio::spawn(sizing::run(
                    sizer.clone(),
                    config.idle_timeout,
                )))
            });
            tracing::debug!(
                min_idle = config.min_idle,
                max_size = config.max_size,
                load_sized = config.load_sized,
                "session pool started"
            );
            Started {
                pool,
                _sizing: sizing,
            }
        })
    }

    /// The error of a checkout whose deadline passed.
    fn no_free_connection(&self, started: Instant) -> Error {
        let manager = &self.shared.manager;
        Counters::bump(&manager.counters.timeouts);
        let in_use = manager
            .counters
            .in_use
            .load(std::sync::atomic::Ordering::Relaxed);
        let target = match &self.shared.sizer {
            Some(sizer) => format!(", load-sized target {}", sizer.target()),
            None => String::new(),
        };
        Error::new(
            ErrorKind::Timeout,
            format!(
                "the session pool had no free connection within {:?} ({in_use} of {} in use{target})",
                Instant::now().saturating_duration_since(started),
                manager.config.max_size,
            ),
        )
        .with_delivery(Delivery::NotSent)
    }

    /// Checks one session out, waiting at most until `deadline`.
    async fn checkout(&self, started: Instant, deadline: Instant) -> Result<Checkout<'_>, Error> {
        if self.shared.manager.is_closed() {
            return Err(pool_closed());
        }
        let pool = &self.started().pool;
        self.checkout_from(pool, started, deadline).await
    }

    /// Counts this checkout as one that waited (once, when it starts waiting — a caller that
    /// gives up while waiting counts too) and as waiting while the gauge lives.
    fn start_waiting(&self, waited: &mut bool) -> Gauge<'_> {
        let counters = &self.shared.manager.counters;
        if !*waited {
            *waited = true;
            Counters::bump(&counters.waits);
        }
        Gauge::up(&counters.waiting)
    }

    async fn checkout_from<'a>(
        &'a self,
        pool: &'a bb8::Pool<SessionManager>,
        started: Instant,
        deadline: Instant,
    ) -> Result<Checkout<'a>, Error> {
        let manager = &self.shared.manager;
        let mut waited = false;
        let permit = match &self.shared.sizer {
            None => None,
            Some(sizer) => match sizer.try_acquire() {
                Some(permit) => Some(permit),
                None => {
                    let _waiting = self.start_waiting(&mut waited);
                    // Boxed: rare, and the call's future stays small.
                    match Box::pin(tokio::time::timeout_at(deadline, sizer.acquire_growing())).await
                    {
                        Ok(Some(permit)) => Some(permit),
                        Ok(None) => return Err(pool_closed()),
                        Err(_) => return Err(self.no_free_connection(started)),
                    }
                }
            },
        };
        let mut events = manager.events();
        let mut get = pin!(pool.get());
        let got = match poll_once(get.as_mut()).await {
            Poll::Ready(got) => got,
            Poll::Pending => {
                let _waiting = self.start_waiting(&mut waited);
                // Boxed: rare, and the call's future stays small.
                Box::pin(self.wait(get, &mut events, started, deadline)).await?
            }
        };
        let conn = got.map_err(|e| match e {
            bb8::RunError::User(e) => e.with_delivery(Delivery::NotSent),
            bb8::RunError::TimedOut => self.no_free_connection(started),
        })?;
        conn.activity().begin_call();
        Ok(Checkout {
            conn,
            _permit: permit,
            _in_use: Gauge::up(&manager.counters.in_use),
        })
    }

    /// Waits for bb8's `get`, the deadline, or news that nothing will come: the pool was
    /// closed, or a connect failed while no session exists or is being opened (bb8 would not
    /// tell the caller; its `get` would wait out the deadline).
    async fn wait<'a, F>(
        &self,
        mut get: Pin<&mut F>,
        events: &mut watch::Receiver<u64>,
        started: Instant,
        deadline: Instant,
    ) -> Result<F::Output, Error>
    where
        F: Future<Output = Result<bb8::PooledConnection<'a, SessionManager>, bb8::RunError<Error>>>,
    {
        let manager = &self.shared.manager;
        let mut expired = pin!(tokio::time::sleep_until(deadline));
        let mut events_open = true;
        loop {
            tokio::select! {
                biased;
                got = get.as_mut() => return Ok(got),
                _ = expired.as_mut() => return Err(self.no_free_connection(started)),
                changed = events.changed(), if events_open => {
                    if changed.is_err() {
                        events_open = false;
                        continue;
                    }
                    if manager.is_closed() {
                        return Err(pool_closed());
                    }
                    if manager.nothing_to_wait_for() {
                        if let Some(failure) = manager.last_failure() {
                            return Err(failure);
                        }
                    }
                }
            }
        }
    }
}

impl McpService for SessionPool {
    /// Checks a session out (bounded by the operation's deadline: its `deadline`, or `timeout`
    /// from now, or the pool's `request_timeout`), calls it with the operation — whose deadline
    /// is then that same moment, so waiting for the session and the call share it — and
    /// returns the session when the call ends.
    ///
    /// With reset-on-progress (in the operation's options or the session's), only the checkout
    /// is bounded by that deadline; the call keeps the session's progress rules.
    fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(checkout_and_call(self, operation))
    }
}

impl SessionPool {
    /// [`call`](McpService::call) on a handle the future keeps: the future borrows nothing (a
    /// stack that picks the pool per call builds the call's future at once).
    pub fn call_owned(self, operation: Operation) -> CallFuture<'static> {
        Box::pin(checkout_and_call(self, operation))
    }
}

/// [`McpService::call`]'s body on `pool` (borrowed or owned). An `async` block, not an
/// `async fn`: the future holds the operation once.
#[allow(clippy::manual_async_fn)]
fn checkout_and_call<'a, P>(
    pool: P,
    mut operation: Operation,
) -> impl Future<Output = Result<Payload, Error>> + Send + 'a
where
    P: std::borrow::Borrow<SessionPool> + Send + 'a,
{
    async move {
        let pool = pool.borrow();
        let started = Instant::now();
        let deadline = operation
            .options
            .deadline_from(started, pool.config().request_timeout);
        let checkout = match pool.checkout(started, deadline).await {
            Ok(checkout) => checkout,
            Err(e) => return Err(operation.attach_subject(e)),
        };
        if Instant::now() >= deadline {
            return Err(operation.attach_subject(pool.no_free_connection(started)));
        }
        let session = checkout.conn.session();
        let resets = operation
            .options
            .reset_timeout_on_progress
            .unwrap_or(session.options().reset_timeout_on_progress);
        if !resets {
            operation.options.deadline = Some(deadline);
        }
        session.call(operation).await
    }
}

impl fmt::Debug for SessionPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionPool")
            .field("config", self.config())
            .field("stats", &self.stats())
            .finish()
    }
}
