//! [`RequestContext`]: what a handler can do besides returning its result — report progress,
//! log, send notifications, ask the client (elicitation, sampling, roots: answered by the
//! session's `ClientHandler`), and notice that the call was cancelled.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use mcp_core::jsonrpc::{ErrorObject, Message, Notification, Payload, RequestId};
use mcp_core::sync::lock;
use mcp_core::types::{
    methods, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ListRootsResult, LoggingLevel,
};
use mcp_core::Era;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::call::Handled;
use crate::connection::Connection;
use crate::era::{Abilities, ClientAbilities, RequestFacts};
use crate::error::ClientRequestError;
use crate::server::LocalServer;

/// What a tool, resource or prompt handler gets besides its arguments: the request's identity,
/// progress and logging, notifications, requests to the client, and cancellation.
///
/// Cheap to clone; clones share the call. Whatever the client is sent while the handler runs
/// (its progress, logs, notifications) reaches the client before the call's answer does.
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) call: Arc<CallState>,
}

/// One call's state, shared by its context, its runner and (in the modern era, between the
/// rounds of a call that asks for input) the connection.
pub(crate) struct CallState {
    pub(crate) connection: Arc<Connection>,
    /// Which request the call is answering now (a modern call that asked for input continues
    /// in a new request).
    identity: Mutex<Identity>,
    modern: bool,
    /// A modern request's log level and client capabilities (legacy: the connection's).
    log_level: Option<LoggingLevel>,
    abilities: Abilities,
    /// Made when first asked for (most calls never look); `cancelled` says whether it must
    /// be born cancelled.
    cancellation: OnceLock<CancellationToken>,
    cancelled: AtomicBool,
    /// Modern era: requests for the client's input the handler waits on.
    input: Mutex<Vec<InputWait>>,
    next_input: AtomicU64,
    pub(crate) handled: Handled,
}

struct Identity {
    request_id: RequestId,
    progress_token: Option<RequestId>,
}

/// A modern call's question to the client, asked in its `input_required` result.
pub(crate) struct InputWait {
    pub(crate) key: String,
    pub(crate) method: String,
    pub(crate) params: Value,
    pub(crate) responder: oneshot::Sender<Result<Value, ErrorObject>>,
}

impl CallState {
    pub(crate) fn new(
        connection: Arc<Connection>,
        request_id: RequestId,
        facts: RequestFacts,
        handled: Handled,
    ) -> Arc<CallState> {
        let modern = facts.is_modern();
        Arc::new(CallState {
            connection,
            identity: Mutex::new(Identity {
                request_id,
                progress_token: facts.progress_token,
            }),
            modern,
            log_level: facts.log_level,
            abilities: facts.abilities,
            cancellation: OnceLock::new(),
            cancelled: AtomicBool::new(false),
            input: Mutex::new(Vec::new()),
            next_input: AtomicU64::new(1),
            handled,
        })
    }

    /// The call's cancellation token.
    pub(crate) fn cancellation(&self) -> &CancellationToken {
        let token = self.cancellation.get_or_init(CancellationToken::new);
        // Sequentially consistent with `cancel`: a token made while the call is being
        // cancelled is cancelled by one side or the other.
        if self.cancelled.load(Ordering::SeqCst) {
            token.cancel();
        }
        token
    }

    /// Whether the call is of the modern era.
    pub(crate) fn is_modern(&self) -> bool {
        self.modern
    }

    /// Cancels the call (its token, now or when it is made).
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        if let Some(token) = self.cancellation.get() {
            token.cancel();
        }
    }

    /// A modern call continues in a new request (after the client's input).
    pub(crate) fn continue_in(&self, request_id: RequestId, progress_token: Option<RequestId>) {
        let mut identity = lock(&self.identity);
        identity.request_id = request_id;
        identity.progress_token = progress_token;
    }

    /// The questions asked since the last look (modern era only).
    pub(crate) fn take_input_requests(&self) -> Vec<InputWait> {
        if !self.modern {
            return Vec::new();
        }
        std::mem::take(&mut *lock(&self.input))
    }

    async fn send(&self, message: Message) {
        // The connection counts what it queues: the call's answer will not overtake it.
        let related = lock(&self.identity).request_id.clone();
        self.connection.send_related(message, related).await;
    }
}

impl RequestContext {
    /// The id of the request being answered.
    pub fn request_id(&self) -> RequestId {
        lock(&self.call.identity).request_id.clone()
    }

    /// The request's progress token, when the caller asked for progress.
    pub fn progress_token(&self) -> Option<RequestId> {
        lock(&self.call.identity).progress_token.clone()
    }

    /// The era of the request.
    pub fn era(&self) -> Era {
        if self.call.modern {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// Reports progress (`notifications/progress` to the request's progress token; nothing
    /// when the caller asked for none). `progress` should grow with every report.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = self.progress_token() else {
            return;
        };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notify(methods::NOTIFICATION_PROGRESS, Some(params))
            .await;
    }

    /// Logs to the client (`notifications/message`), when `level` is at least the level the
    /// client chose (`logging/setLevel`, or a modern request's log level; everything when it
    /// chose none).
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        let minimum = match self.call.modern {
            true => self.call.log_level,
            false => self.call.connection.log_level(),
        };
        if minimum.is_some_and(|minimum| level < minimum) {
            return;
        }
        let data = serde_json::to_value(data).unwrap_or(Value::Null);
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.notify(methods::NOTIFICATION_MESSAGE, Some(params))
            .await;
    }

    /// Sends any notification to the client.
    pub async fn notify(&self, method: &str, params: Option<Value>) {
        let note = Notification::new(method, params.map(Payload::Value));
        self.call.send(note.into()).await;
    }

    /// The server this call runs on (to add or remove tools, or to crash it in tests). What it
    /// sends this call's client meanwhile (a tool list change) arrives before the call's answer.
    pub fn server(&self) -> LocalServer {
        LocalServer::from_shared(self.call.connection.server.clone())
    }

    /// True once the call is cancelled: the client cancelled it or gave up waiting, or the
    /// connection ended. (A cancelled handler is dropped at its next `.await`; this is for
    /// work it handed elsewhere — a spawned task, a blocking thread.)
    pub fn is_cancelled(&self) -> bool {
        self.call.cancelled.load(Ordering::SeqCst)
    }

    /// Resolves once the call is cancelled.
    pub async fn cancelled(&self) {
        self.call.cancellation().cancelled().await
    }

    /// The call's cancellation token, to hand to work the handler starts elsewhere.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.call.cancellation().clone()
    }

    /// Asks the user through the client (`elicitation/create`).
    pub async fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ClientRequestError> {
        self.typed_request(methods::ELICITATION_CREATE, params)
            .await
    }

    /// Asks the client's model (`sampling/createMessage`).
    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ClientRequestError> {
        self.typed_request(methods::SAMPLING_CREATE_MESSAGE, params)
            .await
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<ListRootsResult, ClientRequestError> {
        self.typed_request(methods::ROOTS_LIST, json!({})).await
    }

    /// Sends the client any request and waits for its answer. In the legacy era this is a
    /// server→client request; in the modern era the call answers `input_required` and goes on
    /// when the client re-issues it with the answer (the session does both for its caller).
    /// Either way the session's `ClientHandler` answers.
    pub async fn request_client(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, ClientRequestError> {
        let abilities: ClientAbilities = match self.call.modern {
            true => self.call.abilities.resolve(),
            false => self.call.connection.abilities(),
        };
        if !abilities.answers(method) {
            return Err(ClientRequestError::NotSupported {
                method: method.to_owned(),
            });
        }
        if !self.call.modern {
            let related = lock(&self.call.identity).request_id.clone();
            return self
                .call
                .connection
                .request_client(method, params, related)
                .await;
        }
        let (responder, answer) = oneshot::channel();
        let n = self.call.next_input.fetch_add(1, Ordering::Relaxed);
        lock(&self.call.input).push(InputWait {
            key: format!("input-{n}"),
            method: method.to_owned(),
            params,
            responder,
        });
        match answer.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(ClientRequestError::Refused(error)),
            Err(_) => Err(ClientRequestError::ConnectionEnded),
        }
    }

    /// Sends the client several requests as one round, under keys of the caller's choosing
    /// (`requests`: key → `{"method": …, "params": …}`, as in a 2026-07-28 `inputRequests`):
    /// in the modern era one `input_required` answer asks for all of them under these keys
    /// (a gateway passes its server's round on unchanged); in the legacy era they are sent one
    /// after another. The answers come back under the same keys. Fails as a whole when the
    /// client cannot answer one of them.
    pub async fn request_client_round(
        &self,
        requests: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientRequestError> {
        let mut asked = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .ok_or_else(|| ClientRequestError::InvalidAnswer {
                    method: "(input request)".to_owned(),
                    reason: format!("input request {key:?} names no method"),
                })?;
            let params = request.get("params").cloned().unwrap_or(json!({}));
            asked.push((key.clone(), method.to_owned(), params));
        }
        let abilities: ClientAbilities = match self.call.modern {
            true => self.call.abilities.resolve(),
            false => self.call.connection.abilities(),
        };
        if let Some((_, method, _)) = asked.iter().find(|(_, m, _)| !abilities.answers(m)) {
            return Err(ClientRequestError::NotSupported {
                method: method.clone(),
            });
        }
        let mut answers = Map::new();
        if !self.call.modern {
            for (key, method, params) in asked {
                let related = lock(&self.call.identity).request_id.clone();
                let answer = self
                    .call
                    .connection
                    .request_client(&method, params, related)
                    .await?;
                answers.insert(key, answer);
            }
            return Ok(answers);
        }
        // All asked before any is awaited: the call parks once, with every question.
        let mut waiting = Vec::with_capacity(asked.len());
        {
            let mut input = lock(&self.call.input);
            for (key, method, params) in asked {
                let (responder, answer) = oneshot::channel();
                input.push(InputWait {
                    key: key.clone(),
                    method,
                    params,
                    responder,
                });
                waiting.push((key, answer));
            }
        }
        for (key, answer) in waiting {
            match answer.await {
                Ok(Ok(value)) => {
                    answers.insert(key, value);
                }
                Ok(Err(error)) => return Err(ClientRequestError::Refused(error)),
                Err(_) => return Err(ClientRequestError::ConnectionEnded),
            }
        }
        Ok(answers)
    }

    async fn typed_request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
    ) -> Result<R, ClientRequestError> {
        let invalid = |reason: String| ClientRequestError::InvalidAnswer {
            method: method.to_owned(),
            reason,
        };
        let params = serde_json::to_value(params).map_err(|e| invalid(e.to_string()))?;
        let answer = self.request_client(method, params).await?;
        serde_json::from_value(answer).map_err(|e| invalid(e.to_string()))
    }
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("request_id", &self.request_id())
            .field("handler", &self.call.handled)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
