//! The client session engine: one MCP session over one [`Transport`].
//!
//! [`ClientSession::connect`] splits the transport, starts the session's reader task, and performs
//! the `initialize` handshake. After that, any number of requests may be in flight from any number
//! of tasks; each gets a deadline, a progress token, and a `notifications/cancelled` to the server
//! if it times out or its future is dropped. When the transport ends, every pending request fails at
//! once with a [`ErrorKind::Network`](crate::ErrorKind::Network) error that says why.
//!
//! Tasks: the reader task (dispatches everything the server sends), an outbox task (sends the
//! cancellations that `Drop` cannot await), and one short task per server→client request. All are
//! owned by the session and aborted when the last [`ClientSession`] handle is dropped.

mod handler;
mod notifications;
mod options;
mod pagination;
mod pending;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;

pub use handler::{ClientHandler, StaticRoots};
pub use notifications::{NotificationEvent, NotificationStream, ServerNotification};
pub use options::{ProgressCallback, RequestOptions, SessionOptions};

use crate::error::{Error, ErrorKind};
use crate::jsonrpc::{ErrorObject, Message, Notification, Payload, Request, RequestId, Response};
use crate::transport::{Transport, TransportErrorKind, TransportReceiver, TransportSender};
use crate::types::*;
use crate::version::ProtocolVersion;
use pending::{PendingRequest, PendingTable, ProgressState};

/// How often one request is replayed on a new session before its failure is reported.
const MAX_SESSION_REPLAYS: u32 = 3;
/// How long `close` waits for queued cancellations to be handed to the transport.
const OUTBOX_FLUSH_TIMEOUT: Duration = Duration::from_secs(1);
/// How long `close` waits for the reader task to see the end of the connection.
const READER_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// A live MCP session. Cheap to clone; all clones share the session. The session ends when
/// [`close`](ClientSession::close) is called or the last clone is dropped.
#[derive(Clone)]
pub struct ClientSession {
    shared: Arc<Shared>,
    _owner: Arc<SessionOwner>,
}

struct Shared {
    sender: Box<dyn TransportSender>,
    pending: PendingTable,
    next_id: AtomicI64,
    notifications: Mutex<Option<broadcast::Sender<ServerNotification>>>,
    outbox: mpsc::UnboundedSender<OutboxItem>,
    handler: Arc<dyn ClientHandler>,
    handler_tasks: Mutex<HashMap<RequestId, AbortHandle>>,
    options: SessionOptions,
    initialize_result: OnceLock<InitializeResult>,
    protocol_version: OnceLock<ProtocolVersion>,
    closed: watch::Sender<Option<Error>>,
    /// Counts re-initializations after session expiry.
    session_generation: std::sync::atomic::AtomicU64,
    /// Serializes re-initialization (rare; never on the normal message path).
    reinitializing: tokio::sync::Mutex<()>,
}

/// Owns the session's tasks; dropping it (with the last handle) ends them.
struct SessionOwner {
    shared: Arc<Shared>,
    reader: Mutex<Option<JoinHandle<()>>>,
    outbox: JoinHandle<()>,
}

impl Drop for SessionOwner {
    fn drop(&mut self) {
        if let Some(reader) = lock(&self.reader).take() {
            reader.abort();
        }
        self.outbox.abort();
        self.shared
            .finish(Error::network("the session was dropped"));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ClientSession {
    /// Connects over `transport`: starts the session and performs the `initialize` handshake
    /// (bounded by [`SessionOptions::initialize_timeout`]). On failure the transport is closed.
    pub async fn connect<T: Transport>(
        transport: T,
        handler: impl ClientHandler,
        options: SessionOptions,
    ) -> Result<ClientSession, Error> {
        let (sender, receiver) = transport.split();
        let session = ClientSession::start(
            Box::new(sender),
            Box::new(receiver),
            Arc::new(handler),
            options,
        );
        let deadline = session.shared.options.initialize_timeout;
        match tokio::time::timeout(deadline, session.initialize()).await {
            Ok(Ok(())) => Ok(session),
            Ok(Err(e)) => {
                session.close().await;
                Err(e)
            }
            Err(_) => {
                session.close().await;
                Err(Error::timeout(format!(
                    "the server did not complete initialize within {}",
                    human_duration(deadline)
                )))
            }
        }
    }

    fn start(
        sender: Box<dyn TransportSender>,
        receiver: Box<dyn TransportReceiver>,
        handler: Arc<dyn ClientHandler>,
        options: SessionOptions,
    ) -> ClientSession {
        let (notify_tx, _) = broadcast::channel(options.notification_buffer.max(1));
        let (outbox_tx, outbox_rx) = mpsc::unbounded_channel();
        let (closed_tx, _) = watch::channel(None);
        let shared = Arc::new(Shared {
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
            closed: closed_tx,
            session_generation: std::sync::atomic::AtomicU64::new(0),
            reinitializing: tokio::sync::Mutex::new(()),
        });
        let reader = tokio::spawn(run_reader(shared.clone(), receiver));
        let outbox = tokio::spawn(run_outbox(shared.clone(), outbox_rx));
        let owner = SessionOwner {
            shared: shared.clone(),
            reader: Mutex::new(Some(reader)),
            outbox,
        };
        ClientSession {
            shared,
            _owner: Arc::new(owner),
        }
    }

    /// A new session after the server forgot the old one (HTTP 404): one handshake however
    /// many requests noticed, then the counter moves on.
    async fn reinitialize(&self, seen_generation: u64) -> Result<(), Error> {
        let _one_at_a_time = self.shared.reinitializing.lock().await;
        if self.shared.session_generation.load(Ordering::Acquire) != seen_generation {
            return Ok(());
        }
        // Boxed: `initialize` sends requests, which could (by type, never at run time: the
        // handshake itself is not replayed) come back here.
        Box::pin(self.initialize()).await?;
        self.shared
            .session_generation
            .fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    async fn initialize(&self) -> Result<(), Error> {
        let options = &self.shared.options;
        let params = InitializeRequestParams {
            protocol_version: options.protocol_version.as_str().to_owned(),
            capabilities: self.shared.handler.capabilities(),
            client_info: options.client_info.clone(),
            extra: Map::new(),
        };
        let params = Payload::from_serialize(&params).map_err(encode_error)?;
        let result = self
            .send_request(
                methods::INITIALIZE,
                Some(params),
                RequestOptions::default(),
                false,
            )
            .await?;
        let result: InitializeResult = result
            .into_typed()
            .map_err(|e| Error::protocol(format!("invalid initialize result: {e}")))?;
        let version: ProtocolVersion = result.protocol_version.parse().map_err(|e| {
            Error::protocol(format!(
                "server {} {}: {e}",
                result.server_info.name, result.server_info.version
            ))
        })?;
        self.shared.sender.set_protocol_version(version);
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

    /// The server's `initialize` result (name, version, capabilities, instructions).
    pub fn server_info(&self) -> &InitializeResult {
        self.shared
            .initialize_result
            .get()
            .expect("a connected session has completed initialize")
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        *self
            .shared
            .protocol_version
            .get()
            .expect("a connected session has completed initialize")
    }

    /// The transport's name (see [`TransportSender::transport_name`]).
    pub fn transport_name(&self) -> &'static str {
        self.shared.sender.transport_name()
    }

    /// The options this session runs with.
    pub fn options(&self) -> &SessionOptions {
        &self.shared.options
    }

    /// How many requests are waiting for responses.
    pub fn pending_requests(&self) -> usize {
        self.shared.pending.len()
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

    /// Closes the session: closes the transport gracefully (bounded by the transport's own grace
    /// periods), fails anything still pending, and ends the session's tasks.
    pub async fn close(&self) {
        // Cancellations queued by dropped requests go out before the connection closes, so the
        // server is told (e.g. a Ctrl-C'd call followed at once by shutdown).
        let (flushed, done) = oneshot::channel();
        if self.shared.outbox.send(OutboxItem::Flush(flushed)).is_ok() {
            let _ = tokio::time::timeout(OUTBOX_FLUSH_TIMEOUT, done).await;
        }
        if let Err(e) = self.shared.sender.close().await {
            tracing::debug!(error = %e, "transport close reported an error");
        }
        let reader = lock(&self._owner.reader).take();
        if let Some(mut reader) = reader {
            if tokio::time::timeout(READER_DRAIN_TIMEOUT, &mut reader)
                .await
                .is_err()
            {
                reader.abort();
            }
        }
        self.shared
            .finish(Error::network("the session was closed by the client"));
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Payload>) -> Result<(), Error> {
        self.shared
            .sender
            .send(Notification::new(method, params).into())
            .await
            .map_err(Error::from)
    }

    /// Sends a request and waits for its result (raw: parse it with [`Payload::into_typed`]).
    /// A progress token is added to `params._meta` so the server can report progress.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        self.send_request(method, params, options, true).await
    }

    /// Sends a request and parses its result as `R`.
    pub async fn request_typed<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
    ) -> Result<R, Error> {
        let params = Payload::from_serialize(params).map_err(encode_error)?;
        let result = self.request(method, Some(params), options).await?;
        result
            .into_typed()
            .map_err(|e| Error::protocol(format!("invalid {method} result: {e}")))
    }

    async fn send_request(
        &self,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
        progress_token: bool,
    ) -> Result<Payload, Error> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let params = if progress_token {
            Some(with_progress_token(params, id)?)
        } else {
            params
        };
        self.send_prepared(id, method, params, options).await
    }

    /// Sends request `id` whose params already carry its progress token, and waits.
    async fn send_prepared(
        &self,
        id: i64,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        let shared = &self.shared;
        let reset = options
            .reset_timeout_on_progress
            .unwrap_or(shared.options.reset_timeout_on_progress);
        let progress = (reset || options.on_progress.is_some())
            .then(|| Arc::new(ProgressState::new(options.on_progress.clone())));
        let (reply, response) = oneshot::channel();
        shared.pending.insert(
            id,
            PendingRequest {
                reply,
                progress: progress.clone(),
            },
        )?;
        let mut guard = PendingGuard {
            shared,
            id,
            sent: false,
            cancellable: method != methods::INITIALIZE,
        };
        let request = Request::new(id, method, params);
        // Where the server can forget the session (HTTP), keep a copy to replay: a request the
        // server refused with "unknown session" never ran, so sending it again is safe.
        let replay = (shared.sender.sessions_can_expire() && method != methods::INITIALIZE)
            .then(|| request.clone());
        let mut generation = shared.session_generation.load(Ordering::Acquire);
        // Marked sent before the await: a caller that gives up mid-send still cancels.
        guard.sent = true;
        let mut sent = shared.sender.send(request.into()).await;
        let mut replays = 0;
        while let Err(e) = sent {
            let expired = e.kind() == TransportErrorKind::SessionExpired;
            match &replay {
                Some(replay) if expired && replays < MAX_SESSION_REPLAYS => {
                    replays += 1;
                    tracing::info!(
                        method,
                        "the server forgot the session; initializing a new one"
                    );
                    if let Err(reinit) = self.reinitialize(generation).await {
                        guard.sent = false;
                        return Err(reinit);
                    }
                    generation = shared.session_generation.load(Ordering::Acquire);
                    sent = shared.sender.send(replay.clone().into()).await;
                }
                _ => {
                    guard.sent = false;
                    return Err(Error::from(e));
                }
            }
        }

        let timeout = options.timeout.unwrap_or(shared.options.request_timeout);
        let started = Instant::now();
        let hard_deadline = if reset {
            started
                + options
                    .max_total_time
                    .unwrap_or(shared.options.max_request_time)
        } else {
            started + timeout
        };
        let mut deadline = (started + timeout).min(hard_deadline);
        tokio::pin!(response);
        loop {
            match tokio::time::timeout_at(deadline, &mut response).await {
                Ok(outcome) => {
                    guard.sent = false;
                    return match outcome {
                        Ok(outcome) => outcome,
                        Err(_) => Err(shared.end_reason()),
                    };
                }
                Err(_elapsed) => {
                    if reset {
                        let extended = progress
                            .as_ref()
                            .and_then(|p| p.last_update())
                            .map(|last| last + timeout);
                        if let Some(next) = extended {
                            let next = next.min(hard_deadline);
                            if next > deadline {
                                deadline = next;
                                continue;
                            }
                        }
                    }
                    guard.cancel("timeout");
                    let waited = Instant::now() - started;
                    return Err(Error::timeout(format!(
                        "{method} got no response within {}",
                        human_duration(waited)
                    )));
                }
            }
        }
    }

    /// One page of a paginated list.
    async fn list_page<R: DeserializeOwned>(
        &self,
        method: &str,
        cursor: Option<String>,
    ) -> Result<R, Error> {
        self.request_typed(
            method,
            &PaginatedRequestParams { cursor },
            RequestOptions::default(),
        )
        .await
    }

    /// Every page of a paginated list (see [`SessionOptions::max_pages`]); `split` takes a
    /// page's items and next cursor.
    async fn list_all<R: DeserializeOwned, T>(
        &self,
        method: &str,
        split: impl Fn(R) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, Error> {
        let split = &split;
        pagination::collect_pages(method, self.shared.options.max_pages, |cursor| {
            let page = self.list_page::<R>(method, cursor);
            async move { page.await.map(split) }
        })
        .await
    }

    /// `ping`: checks that the server answers.
    pub async fn ping(&self) -> Result<(), Error> {
        self.request(methods::PING, None, RequestOptions::default())
            .await
            .map(|_| ())
    }

    /// `tools/list`: one page.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, Error> {
        self.list_page(methods::TOOLS_LIST, cursor).await
    }

    /// Every tool, following cursors up to [`SessionOptions::max_pages`] pages.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_all(methods::TOOLS_LIST, |page: ListToolsResult| {
            (page.tools, page.next_cursor)
        })
        .await
    }

    /// `tools/call` with JSON arguments (an object, or `None`).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Value>,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, RequestOptions::default())
            .await
    }

    /// `tools/call` with per-call options (deadline, progress callback).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Option<Value>,
        options: RequestOptions,
    ) -> Result<CallToolResult, Error> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let params = if self.shared.sender.prefers_values() {
            let mut params = Map::with_capacity(3);
            params.insert("name".into(), Value::String(name.to_owned()));
            if let Some(arguments) = arguments {
                params.insert("arguments".into(), arguments);
            }
            params.insert("_meta".into(), json!({ "progressToken": id }));
            Payload::Value(Value::Object(params))
        } else {
            // Byte transports: serialize once, straight from the borrowed parts.
            #[derive(Serialize)]
            struct Meta {
                #[serde(rename = "progressToken")]
                progress_token: i64,
            }
            #[derive(Serialize)]
            struct Params<'a> {
                name: &'a str,
                #[serde(skip_serializing_if = "Option::is_none")]
                arguments: Option<&'a Value>,
                _meta: Meta,
            }
            let params = Params {
                name,
                arguments: arguments.as_ref(),
                _meta: Meta { progress_token: id },
            };
            Payload::Raw(serde_json::value::to_raw_value(&params).map_err(encode_error)?)
        };
        let result = self
            .send_prepared(id, methods::TOOLS_CALL, Some(params), options)
            .await
            .map_err(|e| e.with_subject(name))?;
        result.into_typed().map_err(|e| {
            Error::protocol(format!("invalid tools/call result: {e}")).with_subject(name)
        })
    }

    /// `tools/call` with arguments given as raw JSON text (e.g. straight from a model's output):
    /// the arguments are validated once and never turned into a value tree, and the result is
    /// returned raw for the caller to pass through or parse.
    pub async fn call_tool_raw(
        &self,
        name: &str,
        arguments: &serde_json::value::RawValue,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        #[derive(Serialize)]
        struct Params<'a> {
            name: &'a str,
            arguments: &'a serde_json::value::RawValue,
        }
        let raw =
            serde_json::value::to_raw_value(&Params { name, arguments }).map_err(encode_error)?;
        self.request(methods::TOOLS_CALL, Some(Payload::Raw(raw)), options)
            .await
            .map_err(|e| e.with_subject(name))
    }

    /// `resources/list`: one page.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, Error> {
        self.list_page(methods::RESOURCES_LIST, cursor).await
    }

    /// Every resource, following cursors.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list_all(methods::RESOURCES_LIST, |page: ListResourcesResult| {
            (page.resources, page.next_cursor)
        })
        .await
    }

    /// `resources/templates/list`: one page.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        self.list_page(methods::RESOURCES_TEMPLATES_LIST, cursor)
            .await
    }

    /// Every resource template, following cursors.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_all(
            methods::RESOURCES_TEMPLATES_LIST,
            |page: ListResourceTemplatesResult| (page.resource_templates, page.next_cursor),
        )
        .await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        self.request_typed(
            methods::RESOURCES_READ,
            &ReadResourceRequestParams {
                uri: uri.to_owned(),
            },
            RequestOptions::default(),
        )
        .await
        .map_err(|e| e.with_subject(uri))
    }

    /// `resources/subscribe`: the server will send `notifications/resources/updated` for `uri`.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.request_typed::<_, EmptyResult>(
            methods::RESOURCES_SUBSCRIBE,
            &SubscribeRequestParams {
                uri: uri.to_owned(),
            },
            RequestOptions::default(),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.with_subject(uri))
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.request_typed::<_, EmptyResult>(
            methods::RESOURCES_UNSUBSCRIBE,
            &SubscribeRequestParams {
                uri: uri.to_owned(),
            },
            RequestOptions::default(),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.with_subject(uri))
    }

    /// `prompts/list`: one page.
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult, Error> {
        self.list_page(methods::PROMPTS_LIST, cursor).await
    }

    /// Every prompt, following cursors.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list_all(methods::PROMPTS_LIST, |page: ListPromptsResult| {
            (page.prompts, page.next_cursor)
        })
        .await
    }

    /// `prompts/get` with string arguments.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, Error> {
        self.request_typed(
            methods::PROMPTS_GET,
            &GetPromptRequestParams {
                name: name.to_owned(),
                arguments,
            },
            RequestOptions::default(),
        )
        .await
        .map_err(|e| e.with_subject(name))
    }

    /// `completion/complete`.
    pub async fn complete(&self, params: &CompleteRequestParams) -> Result<CompleteResult, Error> {
        self.request_typed(
            methods::COMPLETION_COMPLETE,
            params,
            RequestOptions::default(),
        )
        .await
    }

    /// `logging/setLevel`.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), Error> {
        self.request_typed::<_, EmptyResult>(
            methods::LOGGING_SET_LEVEL,
            &SetLevelRequestParams { level },
            RequestOptions::default(),
        )
        .await
        .map(|_| ())
    }

    /// Sends `notifications/roots/list_changed`.
    pub async fn notify_roots_list_changed(&self) -> Result<(), Error> {
        self.notify(methods::NOTIFICATION_ROOTS_LIST_CHANGED, None)
            .await
    }
}

impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSession")
            .field("transport", &self.shared.sender.transport_name())
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

/// Removes a request from the pending table if its future ends early, and tells the server.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: i64,
    sent: bool,
    cancellable: bool,
}

impl PendingGuard<'_> {
    fn cancel(&mut self, reason: &str) {
        let was_pending = self.shared.pending.remove(self.id);
        if was_pending && self.sent && self.cancellable {
            let params = CancelledNotificationParams {
                request_id: RequestId::Number(self.id),
                reason: Some(reason.to_owned()),
            };
            if let Ok(params) = Payload::from_serialize(&params) {
                let note = Notification::new(methods::NOTIFICATION_CANCELLED, Some(params));
                let _ = self.shared.outbox.send(OutboxItem::Send(note.into()));
            }
        }
        self.sent = false;
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.sent {
            self.cancel("the client no longer waits for this request");
        } else {
            self.shared.pending.remove(self.id);
        }
    }
}

impl Shared {
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

fn encode_error(e: serde_json::Error) -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!("could not encode the request: {e}"),
    )
}

/// Adds `_meta.progressToken = id` to request parameters (creating them if absent).
fn with_progress_token(params: Option<Payload>, id: i64) -> Result<Payload, Error> {
    match params {
        None => Ok(Payload::Value(json!({ "_meta": { "progressToken": id } }))),
        Some(Payload::Value(Value::Object(mut map))) => {
            match map.get_mut("_meta") {
                Some(Value::Object(meta)) => {
                    meta.entry("progressToken").or_insert(Value::from(id));
                }
                _ => {
                    let mut meta = Map::with_capacity(1);
                    meta.insert("progressToken".into(), Value::from(id));
                    map.insert("_meta".into(), Value::Object(meta));
                }
            }
            Ok(Payload::Value(Value::Object(map)))
        }
        Some(payload @ (Payload::Raw(_) | Payload::Shared(_))) => {
            // Splice the token in as text: no value tree is built for pass-through arguments.
            let json = payload.to_json_string();
            let text = json.trim();
            let Some(body) = text.strip_prefix('{') else {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    "request params must be a JSON object",
                ));
            };
            if has_top_level_meta(text) {
                drop(json);
                return Ok(payload);
            }
            let body = body.trim_start();
            let spliced = if body.starts_with('}') {
                format!("{{\"_meta\":{{\"progressToken\":{id}}}}}")
            } else {
                format!("{{\"_meta\":{{\"progressToken\":{id}}},{body}")
            };
            serde_json::value::RawValue::from_string(spliced)
                .map(Payload::Raw)
                .map_err(encode_error)
        }
        Some(Payload::Value(_)) => Err(Error::new(
            ErrorKind::InvalidParams,
            "request params must be a JSON object",
        )),
    }
}

fn has_top_level_meta(object_text: &str) -> bool {
    serde_json::from_str::<HashMap<&str, &serde_json::value::RawValue>>(object_text)
        .map(|m| m.contains_key("_meta"))
        // Escaped keys cannot borrow; fall back to a conservative textual check.
        .unwrap_or_else(|_| object_text.contains("\"_meta\""))
}

/// Formats a duration for messages: "30s", "1.5s", "250ms".
pub(crate) fn human_duration(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        let secs = d.as_secs_f64();
        if (secs - secs.round()).abs() < 0.05 {
            format!("{}s", secs.round() as u64)
        } else {
            format!("{secs:.1}s")
        }
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// What the outbox task does, in order.
enum OutboxItem {
    /// Send a message (a cancellation queued from `Drop`).
    Send(Message),
    /// Everything queued before has been sent: tell the closer.
    Flush(oneshot::Sender<()>),
}

async fn run_outbox(shared: Arc<Shared>, mut outbox: mpsc::UnboundedReceiver<OutboxItem>) {
    while let Some(item) = outbox.recv().await {
        match item {
            OutboxItem::Send(message) => {
                if let Err(e) = shared.sender.send(message).await {
                    tracing::debug!(error = %e, "could not send a queued notification");
                }
            }
            OutboxItem::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

async fn run_reader(shared: Arc<Shared>, mut receiver: Box<dyn TransportReceiver>) {
    let notifications = lock(&shared.notifications).clone();
    let reason = loop {
        match receiver.receive().await {
            Some(Ok(message)) => dispatch(&shared, notifications.as_ref(), message),
            Some(Err(e)) if !e.is_fatal() => {
                tracing::warn!(error = %e, "skipping a bad message from the server");
                if let Some(RequestId::Number(id)) = e.request_id() {
                    shared.pending.complete(*id, Err(Error::from(e.clone())));
                }
            }
            Some(Err(e)) => break Error::from(e),
            None => break Error::network("the server closed the connection"),
        }
    };
    tracing::debug!(reason = %reason, "MCP session ended");
    drop(notifications);
    shared.finish(reason);
}

fn dispatch(
    shared: &Arc<Shared>,
    notifications: Option<&broadcast::Sender<ServerNotification>>,
    message: Message,
) {
    match message {
        Message::Response(response) => {
            let id = match response.id {
                Some(RequestId::Number(id)) => id,
                Some(RequestId::String(ref s)) => match s.parse::<i64>() {
                    Ok(id) => id,
                    Err(_) => {
                        tracing::warn!(id = %s, "response to a request this client never sent");
                        return;
                    }
                },
                None => {
                    if let Err(e) = &response.outcome {
                        tracing::warn!(error = %e, "the server reported an error without a request id");
                    }
                    return;
                }
            };
            let outcome = response
                .outcome
                .map_err(|e| Error::from_error_object(e, &shared.options.error_codes));
            if !shared.pending.complete(id, outcome) {
                tracing::debug!(id, "response for a request that is no longer waiting");
            }
        }
        Message::Notification(note) => match note.method.as_str() {
            methods::NOTIFICATION_PROGRESS => {
                let params: Result<ProgressNotificationParams, _> = match &note.params {
                    Some(p) => p.deserialize(),
                    None => return,
                };
                match params {
                    Ok(params) => {
                        let id = match &params.progress_token {
                            RequestId::Number(n) => Some(*n),
                            RequestId::String(s) => s.parse().ok(),
                        };
                        if let Some(state) = id.and_then(|id| shared.pending.progress(id)) {
                            state.record(&params);
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "malformed progress notification"),
                }
            }
            methods::NOTIFICATION_CANCELLED => {
                let params: Option<CancelledNotificationParams> =
                    note.params.as_ref().and_then(|p| p.deserialize().ok());
                if let Some(params) = params {
                    if let Some(task) = lock(&shared.handler_tasks).remove(&params.request_id) {
                        task.abort();
                    }
                }
            }
            _ => {
                let notification = ServerNotification::parse(note);
                shared.handler.on_notification(&notification);
                if let Some(tx) = notifications {
                    let _ = tx.send(notification);
                }
            }
        },
        Message::Request(request) => spawn_server_request(shared, request),
    }
}

/// Answers one server→client request on its own task (it may wait on a human or a model).
fn spawn_server_request(shared: &Arc<Shared>, request: Request) {
    let id = request.id.clone();
    let task_shared = shared.clone();
    let mut tasks = lock(&shared.handler_tasks);
    let task = tokio::spawn(async move {
        let id = request.id.clone();
        let outcome = answer_server_request(&task_shared, request).await;
        lock(&task_shared.handler_tasks).remove(&id);
        let response = match outcome {
            Ok(result) => Response::success(id, result),
            Err(error) => Response::error(Some(id), error),
        };
        if let Err(e) = task_shared.sender.send(response.into()).await {
            tracing::debug!(error = %e, "could not answer a server request");
        }
    });
    tasks.insert(id, task.abort_handle());
}

async fn answer_server_request(shared: &Shared, request: Request) -> Result<Payload, ErrorObject> {
    fn params<T: DeserializeOwned>(request: &Request) -> Result<T, ErrorObject> {
        match &request.params {
            Some(p) => p.deserialize().map_err(|e| {
                ErrorObject::invalid_params(format!("invalid {} params: {e}", request.method))
            }),
            None => Err(ErrorObject::invalid_params(format!(
                "{} needs params",
                request.method
            ))),
        }
    }
    fn encode<T: Serialize>(value: T) -> Result<Payload, ErrorObject> {
        Payload::from_serialize(&value).map_err(|e| ErrorObject::internal(e.to_string()))
    }
    let handler = &shared.handler;
    let capabilities = handler.capabilities();
    match request.method.as_str() {
        methods::PING => Ok(Payload::Value(json!({}))),
        methods::ROOTS_LIST if capabilities.roots.is_some() => encode(handler.list_roots().await?),
        methods::SAMPLING_CREATE_MESSAGE if capabilities.sampling.is_some() => {
            encode(handler.create_message(params(&request)?).await?)
        }
        methods::ELICITATION_CREATE if capabilities.elicitation.is_some() => {
            encode(handler.elicit(params(&request)?).await?)
        }
        methods::ROOTS_LIST | methods::SAMPLING_CREATE_MESSAGE | methods::ELICITATION_CREATE => {
            Err(ErrorObject::method_not_found(&request.method))
        }
        _ => handler.handle_other(request).await,
    }
}

#[cfg(test)]
mod tests;
