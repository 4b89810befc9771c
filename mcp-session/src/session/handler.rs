//! How the client answers requests the server sends it.

use async_trait::async_trait;

use super::ServerNotification;
use mcp_core::jsonrpc::{ErrorObject, Payload, Request};
use mcp_core::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequestParams, ElicitResult, ListRootsResult, Root, RootsCapability,
};
use serde_json::{Map, Value};

/// Answers server→client requests. Every method has a default that follows the specification,
/// and the session only routes a request to a method whose capability
/// [`capabilities`](ClientHandler::capabilities) declares; anything else gets `-32601 Method not
/// found`. `ping` is always answered by the session itself.
///
/// `()` is the handler that declares nothing.
#[async_trait]
pub trait ClientHandler: Send + Sync + 'static {
    /// The capabilities advertised in `initialize`. Declare exactly what you implement.
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::default()
    }

    /// `roots/list` (needs `capabilities().roots`).
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Err(ErrorObject::method_not_found("roots/list"))
    }

    /// `sampling/createMessage` (needs `capabilities().sampling`). The default refuses: a client
    /// must not sample without a human's approval.
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let _ = params;
        Err(ErrorObject::new(
            -1,
            "sampling request declined by the client",
        ))
    }

    /// `elicitation/create` (needs `capabilities().elicitation`). The default declines.
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let _ = params;
        Ok(ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        })
    }

    /// Answers a whole round of input requests at once: the `inputRequests` of a 2026-07-28
    /// `input_required` result (or of a task), keyed as the server keyed them, each
    /// `{"method": …, "params": …}`; `method` is the request they belong to. The answers are
    /// keyed the same way. `None` (the default) answers them one by one through the methods
    /// above; a handler that passes the round on whole — a gateway, to its own client — keeps
    /// the server's keys and asks everything in one round.
    async fn answer_input_round(
        &self,
        method: &str,
        requests: &Map<String, Value>,
    ) -> Option<Result<Map<String, Value>, ErrorObject>> {
        let _ = (method, requests);
        None
    }

    /// Sees every notification the server sends (except progress and cancellation, which the
    /// session handles), from the first one on — including any sent during the handshake, before
    /// a [`subscribe`](super::ClientSession::subscribe)r could exist. Runs on the session's reader
    /// task: keep it quick (update a flag, forward to a channel).
    fn on_notification(&self, notification: &ServerNotification) {
        let _ = notification;
    }

    /// Any other request method (e.g. extensions). The default is `-32601`.
    async fn handle_other(&self, request: Request) -> Result<Payload, ErrorObject> {
        Err(ErrorObject::method_not_found(&request.method))
    }
}

impl ClientHandler for () {}

/// A handler that exposes a fixed list of roots and nothing else.
#[derive(Debug, Clone, Default)]
pub struct StaticRoots {
    roots: Vec<Root>,
}

impl StaticRoots {
    /// Exposes `roots`.
    pub fn new(roots: Vec<Root>) -> Self {
        StaticRoots { roots }
    }
}

#[async_trait]
impl ClientHandler for StaticRoots {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability {
                list_changed: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: self.roots.clone(),
        })
    }
}
