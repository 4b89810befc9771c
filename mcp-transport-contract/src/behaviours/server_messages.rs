//! What the server sends while a call runs: progress, notifications, and its own requests to
//! the client (elicitation, roots), answered by the session's handler.

use std::sync::{Arc, Mutex};

use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::ServerNotification;
use serde_json::json;

use super::{
    handshake_connector_with, open, open_with, session_options, ContractHandler, ELICITED_NAME,
    PROMPTLY, ROOT_URI,
};
use crate::peer::Peer;

/// Progress notifications reach the caller, in order and with their total, before the result.
pub async fn progress(peer: &Peer) {
    let session = open(peer).await;
    // Recorded, not asserted, in the callback: a panic there would hit whichever task delivers
    // progress, not this test.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| {
        record
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((p.progress, p.total));
    });
    let result = session
        .call_tool(
            "slow",
            Some(json!({ "duration_ms": 200, "steps": 4 })),
            options,
        )
        .await
        .unwrap_or_else(|e| panic!("{}: slow failed: {e}", peer.name));
    assert_eq!(result.text(), "done after 4 steps", "{}", peer.name);
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(
        seen,
        [
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ],
        "{}: the progress notifications before the result",
        peer.name
    );
    session.close().await;
}

/// A notification the server sends reaches subscribers (`tools/list_changed`), and the change
/// it announces is there to list (the fixture's `dynamic_tool`).
pub async fn notifications(peer: &Peer) {
    let session = open(peer).await;
    let mut stream = session.subscribe();
    session
        .call_tool(
            "trigger_list_changed",
            Some(json!({})),
            RequestOptions::new(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: trigger_list_changed failed: {e}", peer.name));
    let arrived = tokio::time::timeout(PROMPTLY, async {
        while let Some(notification) = stream.next().await {
            if matches!(notification, ServerNotification::ToolListChanged) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(arrived, Ok(true), "{}: no tools/list_changed", peer.name);
    let tools = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: tools/list failed: {e}", peer.name));
    assert!(
        tools.iter().any(|t| t.name == "dynamic_tool"),
        "{}: the new tool is not listed",
        peer.name
    );
    session.close().await;
}

/// The server asks the client (elicitation) in the middle of a call: the handler is asked once,
/// with the server's question, and its answer reaches the server.
pub async fn server_to_client_request(peer: &Peer) {
    let handler = Arc::new(ContractHandler::default());
    let connector = handshake_connector_with(peer, handler.clone(), session_options());
    let session = open_with(peer, connector).await;
    let result = session
        .call_tool(
            "ask_elicitation",
            Some(json!({ "message": "who are you?" })),
            RequestOptions::new(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: ask_elicitation failed: {e}", peer.name));
    let text = result.text();
    assert!(!result.is_error(), "{}: {text}", peer.name);
    let answer: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: the answer is not JSON: {e}: {text}", peer.name));
    assert_eq!(answer["action"], "accept", "{}: {text}", peer.name);
    assert_eq!(
        answer["content"]["name"],
        format!("{ELICITED_NAME} (who are you?)"),
        "{}: {text}",
        peer.name
    );
    assert_eq!(handler.asked(), ["who are you?"], "{}", peer.name);
    session.close().await;
}

/// The server asks for the client's roots: a handler that declares roots answers with them. A
/// session whose handler declares none never hands over roots: the fixture's tool fails,
/// reporting the client's refusal (`-32601`, method not found) — or, from a server that reads
/// the client's capabilities before asking (the in-process one), that it did not ask.
pub async fn roots_requests_are_answered_by_the_handler(peer: &Peer) {
    let session = open(peer).await;
    let result = session
        .call_tool("ask_roots", Some(json!({})), RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: ask_roots failed: {e}", peer.name));
    let text = result.text();
    assert!(!result.is_error(), "{}: {text}", peer.name);
    let answer: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: the answer is not JSON: {e}: {text}", peer.name));
    assert_eq!(
        answer,
        json!({"roots": [{"uri": ROOT_URI, "name": "project"}]}),
        "{}",
        peer.name
    );
    session.close().await;

    let without_roots = handshake_connector_with(peer, Arc::new(()), session_options());
    let session = open_with(peer, without_roots).await;
    let refused = session
        .call_tool("ask_roots", Some(json!({})), RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: ask_roots failed: {e}", peer.name));
    let text = refused.text();
    assert!(refused.is_error(), "{}: {text}", peer.name);
    let text = text.to_lowercase();
    let not_asked = text.contains("did not declare");
    assert!(
        not_asked || text.contains("-32601") || text.contains("method not found"),
        "{}: {text}",
        peer.name
    );
    session.close().await;
}
