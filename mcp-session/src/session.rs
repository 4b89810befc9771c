//! [`ClientSession`]: its lifecycle (connect, handshake, re-initialization, close); the request
//! path and everything else of the engine are in the files of `session/` (the crate's docs
//! list them).

mod era;
mod handler;
mod in_place;
mod input;
mod listen;
mod meta;
mod modern;
mod notifications;
mod options;
mod pending;
mod reader;
mod refusals;
mod request;
mod server_requests;
mod session_loss;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Map;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::{AbortHandle, JoinHandle};

pub use era::EraMemo;
pub use handler::{ClientHandler, StaticRoots};
pub use input::answer_input_requests;
pub use modern::{result_type, RESULT_TYPE_TASK};
pub use notifications::{NotificationEvent, NotificationStream, ServerNotification};
pub use options::{SessionOptions, TASKS_EXTENSION};
pub use server_requests::MAX_SERVER_REQUEST_ID_BYTES;

use mcp_core::error::{Delivery, Error};
use mcp_core::jsonrpc::{Notification, Payload, RequestId};
use mcp_core::service::{CallFuture, McpService, Operation, RequestOptions};
use mcp_core::transport::{Transport, TransportReceiver, TransportSender};
use mcp_core::types::*;
use mcp_core::version::{Era, ProtocolVersion};
use meta::ModernMeta;
use pending::PendingTable;
use reader::{run_outbox, run_reader, OutboxItem, OUTBOX_CAPACITY};
pub(crate) use request::human_duration;

/// How long `close` waits for queued cancellations to be handed to the transport.
const OUTBOX_FLUSH_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a failed connect lets the transport close gracefully.
const FAILED_CONNECT_CLOSE: Duration = Duration::from_secs(2);
/// How long connect waits for the server to acknowledge the `subscriptions/listen` stream.
const LISTEN_OPEN_WAIT: Duration = Duration::from_secs(2);
/// How long `close` waits for the reader task to see the end of the connection.
const READER_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// A live MCP session. Cheap to clone; all clones share the session. The session ends when
/// [`close`](ClientSession::close) is called or the last clone is dropped.
#[derive(Clone)]
pub struct ClientSession {
    shared: Arc<SessionShared>,
    /// `None` only in the handle the session's own listener task holds, which must not keep
    /// the session alive.
    _owner: Option<Arc<SessionOwner>>,
}

/// What the session's handles and tasks share.
struct SessionShared {
    sender: Box<dyn TransportSender>,
    pending: PendingTable,
    next_id: AtomicI64,
    notifications: Mutex<Option<broadcast::Sender<ServerNotification>>>,
    outbox: mpsc::Sender<OutboxItem>,
    handler: Arc<dyn ClientHandler>,
    handler_tasks: Mutex<HashMap<RequestId, AbortHandle>>,
    options: SessionOptions,
    initialize_result: OnceLock<InitializeResult>,
    protocol_version: OnceLock<ProtocolVersion>,
    /// The `server/discover` answer (modern sessions).
    discover_result: OnceLock<DiscoverResult>,
    /// The `_meta` members of every modern request.
    modern_meta: ModernMeta,
    /// The log level `logging/setLevel` chose (carried by every later modern request).
    log_level: Mutex<Option<LoggingLevel>>,
    /// What the modern `subscriptions/listen` stream asks for.
    listen_filter: listen::FilterSender,
    /// Counts the server's acknowledgements of listen streams.
    listen_acks: watch::Sender<u64>,
    closed: watch::Sender<Option<Error>>,
    /// Counts re-initializations after session expiry.
    session_generation: AtomicU64,
    /// Tells [`ClientSession::reinitializations`] watchers the generation of a re-initialized
    /// session.
    reinitialized: tokio::sync::watch::Sender<u64>,
    /// Serializes re-initialization (rare; never on the normal message path).
    reinitializing: tokio::sync::Mutex<()>,
    /// Handshakes started by `reinitialize` (callers queued behind a failed one give up).
    reinitialize_attempts: AtomicU64,
}

/// Owns the session's tasks; dropping it (with the last handle) ends them.
struct SessionOwner {
    shared: Arc<SessionShared>,
    reader: Mutex<Option<JoinHandle<()>>>,
    outbox: JoinHandle<()>,
    /// The modern `subscriptions/listen` task, once started.
    listener: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for SessionOwner {
    fn drop(&mut self) {
        if let Some(reader) = lock(&self.reader).take() {
            reader.abort();
        }
        if let Some(listener) = lock(&self.listener).take() {
            listener.abort();
        }
        self.outbox.abort();
        self.shared
            .finish(Error::network("the session was dropped"));
    }
}

pub(crate) use mcp_core::sync::lock;

/// The capabilities every modern request declares: the handler's, plus the Tasks extension
/// unless [`SessionOptions::tasks`] is off.
fn modern_capabilities(
    mut capabilities: ClientCapabilities,
    options: &SessionOptions,
) -> serde_json::Value {
    if options.tasks {
        capabilities
            .extensions
            .get_or_insert_with(Map::new)
            .entry(TASKS_EXTENSION)
            .or_insert_with(|| serde_json::json!({}));
    }
    serde_json::to_value(capabilities).unwrap_or_else(|_| serde_json::json!({}))
}

impl ClientSession {
    /// Connects over `transport`: starts the session and opens it in the server's era — the
    /// `server/discover` probe, then the `initialize` handshake for a legacy server — bounded
    /// by [`SessionOptions::initialize_timeout`]. On failure the transport is closed.
    pub async fn connect<T: Transport>(
        transport: T,
        handler: impl ClientHandler,
        options: SessionOptions,
    ) -> Result<ClientSession, Error> {
        ClientSession::connect_shared(transport, Arc::new(handler), options).await
    }

    /// [`connect`](ClientSession::connect) with a handler shared with other sessions (a
    /// supervisor reconnecting a server, a pool opening more sessions to it).
    pub async fn connect_shared<T: Transport>(
        transport: T,
        handler: Arc<dyn ClientHandler>,
        options: SessionOptions,
    ) -> Result<ClientSession, Error> {
        let (sender, receiver) = transport.into_boxed();
        let session = ClientSession::start(sender, receiver, handler, options);
        let deadline = session.shared.options.initialize_timeout;
        let failure = match tokio::time::timeout(deadline, session.open()).await {
            Ok(Ok(())) => {
                session.start_listener().await;
                return Ok(session);
            }
            Ok(Err(e)) => e,
            Err(_) => Error::timeout(format!(
                "the server did not complete initialize within {}",
                human_duration(deadline)
            )),
        };
        // A short graceful close; past it, dropping the session releases everything (a child
        // is killed), so a failed connect never takes much longer than its deadline.
        let _ = tokio::time::timeout(FAILED_CONNECT_CLOSE, session.close()).await;
        Err(failure)
    }

    fn start(
        sender: Box<dyn TransportSender>,
        receiver: Box<dyn TransportReceiver>,
        handler: Arc<dyn ClientHandler>,
        options: SessionOptions,
    ) -> ClientSession {
        let (notify_tx, _) = broadcast::channel(options.notification_buffer.max(1));
        let (outbox_tx, outbox_rx) = mpsc::channel(OUTBOX_CAPACITY);
        let (closed_tx, _) = watch::channel(None);
        let modern_meta = ModernMeta::new(
            modern_capabilities(handler.capabilities(), &options),
            serde_json::to_value(&options.client_info).unwrap_or_else(|_| serde_json::json!({})),
        );
        let shared = Arc::new(SessionShared {
            sender,
            pending: PendingTable::default(),
            next_id: AtomicI64::new(1),
            notifications: Mutex::new(Some(notify_tx)),
            outbox: outbox_tx,
            handler,
            handler_tasks: Mutex::new(HashMap::new()),
            options,
            initialize_result: OnceLock::new(),
            protocol_version: OnceLock::new(),
            discover_result: OnceLock::new(),
            modern_meta,
            log_level: Mutex::new(None),
            listen_filter: watch::channel(NotificationFilter::default()).0,
            listen_acks: watch::channel(0).0,
            closed: closed_tx,
            session_generation: AtomicU64::new(0),
            reinitialized: tokio::sync::watch::channel(0).0,
            reinitializing: tokio::sync::Mutex::new(()),
            reinitialize_attempts: AtomicU64::new(0),
        });
        let reader = tokio::spawn(run_reader(shared.clone(), receiver));
        let outbox = tokio::spawn(run_outbox(shared.clone(), outbox_rx));
        let owner = SessionOwner {
            shared: shared.clone(),
            reader: Mutex::new(Some(reader)),
            outbox,
            listener: Mutex::new(None),
        };
        ClientSession {
            shared,
            _owner: Some(Arc::new(owner)),
        }
    }

    /// Starts the modern session's `subscriptions/listen` task (see `listen.rs`), asking for
    /// the list changes the server advertises, and waits (at most
    /// [`LISTEN_OPEN_WAIT`]) until the server acknowledges it, so that changes right after
    /// connect are not missed.
    async fn start_listener(&self) {
        let (true, Some(owner)) = (self.is_modern(), &self._owner) else {
            return;
        };
        let advertised = listen::advertised_filter(&self.server_info().capabilities);
        self.shared.listen_filter.send_modify(|filter| {
            filter.tools_list_changed = advertised.tools_list_changed;
            filter.prompts_list_changed = advertised.prompts_list_changed;
            filter.resources_list_changed = advertised.resources_list_changed;
        });
        let internal = ClientSession {
            shared: self.shared.clone(),
            _owner: None,
        };
        let wants = !self.shared.listen_filter.borrow().is_empty();
        let mut acks = self.shared.listen_acks.subscribe();
        let task = tokio::spawn(internal.run_listener());
        if let Some(old) = lock(&owner.listener).replace(task) {
            old.abort();
        }
        if wants {
            let acked = acks.wait_for(|n| *n > 0);
            if tokio::time::timeout(LISTEN_OPEN_WAIT, acked).await.is_err() {
                tracing::debug!("the server did not acknowledge subscriptions/listen in time");
            }
        }
    }

    /// A new session after the server forgot the old one (HTTP 404): one handshake however
    /// many requests noticed, then the counter moves on; callers that queued behind a
    /// handshake that failed get its failure rather than trying again in turn. The handshake
    /// runs in a task of its own, so a caller that gives up meanwhile (its deadline, a drop)
    /// does not cut it short and leave the session without one; its requests are bounded by
    /// the request timeout, and it keeps no session handle alive (the session ends as usual
    /// when the last one drops, which fails its requests).
    async fn reinitialize(&self, seen_generation: u64) -> Result<(), Error> {
        let handshake = ClientSession {
            shared: self.shared.clone(),
            _owner: None,
        };
        let task = tokio::spawn(handshake.reinitialize_task(seen_generation));
        match task.await {
            Ok(outcome) => outcome,
            Err(e) => Err(Error::network(format!(
                "making a new session failed: the handshake task ended ({e})"
            ))),
        }
    }

    /// The handshake's task, its type written out: the handshake sends requests, whose futures
    /// hold this one, so the compiler could not work out by itself that it is `Send`.
    fn reinitialize_task(
        self,
        seen_generation: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Error>> + Send>> {
        Box::pin(async move { self.reinitialize_now(seen_generation).await })
    }

    async fn reinitialize_now(&self, seen_generation: u64) -> Result<(), Error> {
        let attempts = self.shared.reinitialize_attempts.load(Ordering::Acquire);
        let _one_at_a_time = self.shared.reinitializing.lock().await;
        if self.shared.session_generation.load(Ordering::Acquire) != seen_generation {
            return Ok(());
        }
        if self.shared.reinitialize_attempts.load(Ordering::Acquire) != attempts {
            return Err(Error::network(
                "the server forgot the session, and making a new one just failed",
            ));
        }
        self.shared
            .reinitialize_attempts
            .fetch_add(1, Ordering::AcqRel);
        // Boxed: `initialize` sends requests, which could (by type, never at run time: the
        // handshake itself is not replayed) come back here.
        Box::pin(self.initialize()).await?;
        let generation = self
            .shared
            .session_generation
            .fetch_add(1, Ordering::AcqRel)
            + 1;
        self.shared.reinitialized.send_replace(generation);
        Ok(())
    }

    /// The legacy `initialize` handshake.
    async fn initialize(&self) -> Result<(), Error> {
        let options = &self.shared.options;
        let offered = if options.protocol_version.is_modern() {
            ProtocolVersion::LATEST_LEGACY
        } else {
            options.protocol_version
        };
        let params = InitializeRequestParams {
            protocol_version: offered.as_str().to_owned(),
            capabilities: self.shared.handler.capabilities(),
            client_info: options.client_info.clone(),
            extra: Map::new(),
        };
        let params = Payload::from_serialize(&params).map_err(Error::unencodable)?;
        let result = self
            .round_trip_adding(
                methods::INITIALIZE,
                Some(params),
                RequestOptions::default(),
                request::MetaToAdd::HANDSHAKE,
            )
            .await?;
        let result: InitializeResult = result
            .into_typed()
            .map_err(|e| Error::protocol(format!("invalid initialize result: {e}")))?;
        let version: ProtocolVersion = result
            .protocol_version
            .parse()
            .ok()
            .filter(|v: &ProtocolVersion| !v.is_modern())
            .ok_or_else(|| {
                Error::protocol(format!(
                    "server {} {} answered initialize with protocol version {:?}, which is not a legacy version this client speaks",
                    result.server_info.name, result.server_info.version, result.protocol_version
                ))
            })?;
        self.shared.sender.set_protocol_version(Some(version));
        let _ = self.shared.protocol_version.set(version);
        tracing::debug!(
            server = %result.server_info.name,
            version = %version,
            "MCP session initialized"
        );
        if self.shared.initialize_result.set(result).is_err() {
            tracing::debug!("re-initialized; keeping the first session's server info");
        }
        self.notify(methods::NOTIFICATION_INITIALIZED, None).await
    }

    /// The server's name, version, capabilities and instructions: its `initialize` result, or
    /// in the modern era the same fields from `server/discover`.
    pub fn server_info(&self) -> &InitializeResult {
        self.shared
            .initialize_result
            .get()
            .expect("a connected session has completed initialize")
    }

    /// Changes every time the session re-initialized itself with the server after the server
    /// forgot it (an expired HTTP session: a new `initialize` on the same transport). What the
    /// old server-side session held — resource subscriptions, the logging level — is gone:
    /// whoever set it sets it again (the facade resubscribes its resources).
    pub fn reinitializations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.reinitialized.subscribe()
    }

    /// The negotiated protocol version (its [`era`](ProtocolVersion::era) is the session's).
    pub fn protocol_version(&self) -> ProtocolVersion {
        *self
            .shared
            .protocol_version
            .get()
            .expect("a connected session has completed initialize")
    }

    /// The transport's name (its
    /// [`TransportCapabilities::name`](mcp_core::TransportCapabilities::name)).
    pub fn transport_name(&self) -> &'static str {
        self.shared.sender.capabilities().name
    }

    /// The options this session runs with.
    pub fn options(&self) -> &SessionOptions {
        &self.shared.options
    }

    /// How many requests are waiting for responses.
    pub fn pending_requests(&self) -> usize {
        self.shared.pending.len()
    }

    /// How many server→client requests are being handled right now.
    pub fn server_requests_in_flight(&self) -> usize {
        lock(&self.shared.handler_tasks).len()
    }

    /// True once the session has ended (closed, dropped, or the transport failed).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.borrow().is_some()
    }

    /// Waits until the session ends and returns why.
    pub async fn closed(&self) -> Error {
        let mut rx = self.shared.closed.subscribe();
        loop {
            if let Some(reason) = rx.borrow_and_update().clone() {
                return reason;
            }
            if rx.changed().await.is_err() {
                return Error::network("the session was dropped");
            }
        }
    }

    /// Subscribes to the server's notifications from now on.
    pub fn subscribe(&self) -> NotificationStream {
        let receiver = match lock(&self.shared.notifications).as_ref() {
            Some(tx) => tx.subscribe(),
            // Ended: a stream that is already at its end.
            None => broadcast::channel(1).1,
        };
        NotificationStream { receiver }
    }

    /// Closes the session: hands queued cancellations to the transport (up to 1 s), lets the
    /// transport end the connection gracefully (up to [`SessionOptions::close_timeout`]; the
    /// transport's own grace periods are usually shorter), fails anything still pending, and
    /// ends the session's tasks. If the transport does not close in time, the connection's
    /// resources are released when the last handle is dropped (stdio: the process group is
    /// killed).
    pub async fn close(&self) {
        // Cancellations queued by dropped requests go out before the connection closes, so the
        // server is told (e.g. a Ctrl-C'd call followed at once by shutdown).
        let (flushed, done) = oneshot::channel();
        if self
            .shared
            .outbox
            .try_send(OutboxItem::Flush(flushed))
            .is_ok()
        {
            let _ = tokio::time::timeout(OUTBOX_FLUSH_TIMEOUT, done).await;
        }
        let limit = self.shared.options.close_timeout;
        let closed_in_time = match tokio::time::timeout(limit, self.shared.sender.close()).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "transport close reported an error");
                true
            }
            Err(_) => {
                tracing::warn!(
                    "the transport did not close within {}; dropping the connection",
                    human_duration(limit)
                );
                false
            }
        };
        let reader = self._owner.as_ref().and_then(|o| lock(&o.reader).take());
        if let Some(mut reader) = reader {
            if !closed_in_time
                || tokio::time::timeout(READER_DRAIN_TIMEOUT, &mut reader)
                    .await
                    .is_err()
            {
                reader.abort();
            }
        }
        self.shared
            .finish(Error::network("the session was closed by the client"));
    }

    /// Sends a notification, bounded by [`SessionOptions::request_timeout`].
    pub async fn notify(&self, method: &str, params: Option<Payload>) -> Result<(), Error> {
        let send = self
            .shared
            .sender
            .send(Notification::new(method, params).into());
        let limit = self.shared.options.request_timeout;
        match tokio::time::timeout(limit, send).await {
            Ok(sent) => sent.map_err(Error::from),
            Err(_) => Err(Error::timeout(format!(
                "{method} could not be sent within {}: the server is not reading",
                human_duration(limit)
            ))
            .with_delivery(Delivery::Sent)),
        }
    }

    /// Sends `notifications/roots/list_changed` (legacy era; modern requests carry the
    /// client's state in each request, so there it does nothing).
    pub async fn notify_roots_list_changed(&self) -> Result<(), Error> {
        if self.is_modern() {
            return Ok(());
        }
        self.notify(methods::NOTIFICATION_ROOTS_LIST_CHANGED, None)
            .await
    }

    /// The era this session speaks.
    pub fn era(&self) -> Era {
        self.protocol_version().era()
    }
}

impl ClientSession {
    /// [`call`](McpService::call) on a handle the future keeps: the future borrows nothing (a
    /// stack that picks the session per call builds the call's future at once, without keeping
    /// the operation beside it until polled).
    pub fn call_owned(self, operation: Operation) -> CallFuture<'static> {
        Box::pin(send_operation(self, operation))
    }
}

/// One request on `session` (borrowed or owned): [`McpService::call`]'s body. The operation is
/// taken apart before the future is made, so the future holds each part once.
fn send_operation<'a, S>(
    session: S,
    operation: Operation,
) -> impl std::future::Future<Output = Result<Payload, Error>> + Send + 'a
where
    S: std::borrow::Borrow<ClientSession> + Send + 'a,
{
    let Operation {
        method,
        params,
        options,
        subject,
        ..
    } = operation;
    async move {
        let session = session.borrow();
        let outcome = if session.is_modern() {
            session.modern_call(&method, params, options).await
        } else {
            session.round_trip(&method, params, options).await
        };
        outcome.map_err(|e| match subject {
            Some(subject) if e.subject().is_none() => e.with_subject(subject),
            _ => e,
        })
    }
}

impl McpService for ClientSession {
    fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(send_operation(self, operation))
    }
}

impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSession")
            .field("transport", &self.shared.sender.capabilities().name)
            .field(
                "server",
                &self
                    .shared
                    .initialize_result
                    .get()
                    .map(|r| &r.server_info.name),
            )
            .field("pending", &self.shared.pending.len())
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl SessionShared {
    /// Ends the session once: fails pending requests, stops notifications and handler tasks.
    fn finish(&self, reason: Error) {
        self.pending.close(reason.clone());
        lock(&self.notifications).take();
        for (_, task) in lock(&self.handler_tasks).drain() {
            task.abort();
        }
        self.closed.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }

    fn end_reason(&self) -> Error {
        self.pending
            .closed_reason()
            .unwrap_or_else(|| Error::network("the session ended"))
    }
}

#[cfg(test)]
mod in_place_tests;
#[cfg(test)]
mod modern_tests;
#[cfg(test)]
mod tests;
