//! The behaviours every transport must show, one async function each, in both eras. Each opens
//! its own sessions through the peer's connector and closes them; each is bounded by [`LIMIT`]
//! (the [`contract_suite!`](crate::contract_suite) wrapper fails a behaviour that does not
//! finish).
//!
//! - `opening`: what a new session shows — the server, its tools, its era, the protocol
//!   version.
//! - `requests`: calls and lists — many at once, large and too large messages, results and
//!   errors, pages, resources and prompts.
//! - `server_messages`: what the server sends while a call runs — progress, notifications,
//!   its requests to the client.
//! - `ending`: how calls and connections end — cancelled, past their deadline, the peer dying,
//!   closing.
//! - `wrapping`: the policies and the pool around the transport's sessions.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::jsonrpc::ErrorObject;
use mcp_core::types::{
    ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult, ListRootsResult, Root,
    RootsCapability,
};
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{
    ClientHandler, ClientSession, HandshakeConnector, SessionConnector, SessionOptions,
};
use serde_json::json;

use crate::peer::Peer;

mod ending;
mod opening;
mod requests;
mod server_messages;
mod wrapping;

pub use ending::{
    cancellation_reaches_the_server, close_is_idempotent, deadline_holds_without_an_answer,
    peer_dying_mid_call,
};
pub use opening::{handshake, protocol_versions_are_negotiated, the_era_is_detected};
pub use requests::{
    calls_in_flight, large_message, lists_come_in_pages, message_over_the_cap,
    resources_and_prompts, results_and_errors_are_told_apart,
};
pub use server_messages::{
    notifications, progress, roots_requests_are_answered_by_the_handler, server_to_client_request,
};
pub use wrapping::{policies_wrap_the_transport, pool_serves_the_transport};

/// The most any one behaviour may take, set-up and tear-down included.
pub const LIMIT: Duration = Duration::from_secs(60);
/// How long the suite waits for something that should happen at once (a failure after the peer
/// died, a notification, a cancellation reaching the server).
pub(crate) const PROMPTLY: Duration = Duration::from_secs(10);

/// The names of every behaviour, in the order [`contract_suite!`](crate::contract_suite)
/// registers them.
pub const ALL: &[&str] = &[
    "handshake",
    "the_era_is_detected",
    "protocol_versions_are_negotiated",
    "calls_in_flight",
    "large_message",
    "message_over_the_cap",
    "results_and_errors_are_told_apart",
    "lists_come_in_pages",
    "resources_and_prompts",
    "cancellation_reaches_the_server",
    "progress",
    "notifications",
    "server_to_client_request",
    "roots_requests_are_answered_by_the_handler",
    "deadline_holds_without_an_answer",
    "peer_dying_mid_call",
    "close_is_idempotent",
    "policies_wrap_the_transport",
    "pool_serves_the_transport",
];

/// The name the suite's handler gives when the server asks (elicitation), followed by the
/// question in parentheses.
pub const ELICITED_NAME: &str = "contract-suite";

/// The root the suite's handler lists.
pub const ROOT_URI: &str = "file:///srv/project";

/// Declares elicitation and roots; accepts every form with [`ELICITED_NAME`] and the question
/// asked, remembering the questions; lists one root, [`ROOT_URI`].
#[derive(Debug, Default)]
pub(crate) struct ContractHandler {
    asked: Mutex<Vec<String>>,
}

impl ContractHandler {
    /// The questions the server asked (elicitation), in order.
    pub(crate) fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[async_trait]
impl ClientHandler for ContractHandler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            roots: Some(RootsCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let name = format!("{ELICITED_NAME} ({})", params.message);
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(params.message);
        let mut content = serde_json::Map::new();
        content.insert("name".into(), json!(name));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        })
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: vec![Root::new(ROOT_URI, "project")],
        })
    }
}

/// The suite's session options: the era is detected (never pinned), every request has a
/// deadline.
pub(crate) fn session_options() -> SessionOptions {
    SessionOptions {
        request_timeout: Duration::from_secs(20),
        ..SessionOptions::default()
    }
}

pub(crate) fn handshake_connector(peer: &Peer) -> HandshakeConnector {
    handshake_connector_with(
        peer,
        Arc::new(ContractHandler::default()),
        session_options(),
    )
}

pub(crate) fn handshake_connector_with(
    peer: &Peer,
    handler: Arc<dyn ClientHandler>,
    options: SessionOptions,
) -> HandshakeConnector {
    HandshakeConnector::new(peer.connector.clone(), handler, options)
}

pub(crate) async fn open(peer: &Peer) -> ClientSession {
    open_with(peer, handshake_connector(peer)).await
}

pub(crate) async fn open_with(peer: &Peer, connector: HandshakeConnector) -> ClientSession {
    connector
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{}: connecting failed: {e}", peer.name))
}

pub(crate) async fn echo(session: &ClientSession, text: &str) -> Result<String, mcp_core::Error> {
    let result = session
        .call_tool("echo", Some(json!({ "text": text })), RequestOptions::new())
        .await?;
    Ok(result.text())
}

pub(crate) fn within(timeout: Duration) -> RequestOptions {
    RequestOptions::new().with_timeout(timeout)
}
