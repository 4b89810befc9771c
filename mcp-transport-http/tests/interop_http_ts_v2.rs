//! Interop: a server on the TypeScript SDK v2 server package (`@modelcontextprotocol/server`
//! 2.4.0, pinned by xtask), interop/ts_v2_server.mjs, over Streamable HTTP. It serves the
//! 2026-07-28 era statelessly and 2025 requests without a session. Facts are in
//! interop/NOTES.md ("TypeScript SDK v2").

mod common;

use common::*;
use mcp_core::types::{ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_core::{Era, ErrorObject, McpServiceExt, ProtocolVersion, RequestOptions};
use mcp_session::{ClientHandler, ServerNotification, SessionOptions};
use serde_json::json;

/// Accepts the confirmation with `yes: true`.
struct SaysYes;

#[async_trait::async_trait]
impl ClientHandler for SaysYes {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({"form": {}})),
            ..Default::default()
        }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        assert_eq!(params.message, "Proceed?");
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"yes": true}).as_object().cloned(),
        })
    }
}

#[tokio::test]
async fn detected_as_modern_with_input_requests_and_listen() {
    let server = Server::start(ts_v2_server()).await;
    let session = connect_with(&server, SaysYes, SessionOptions::default()).await;
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(
        session.server_info().server_info.name,
        "ts-v2-interop-server"
    );
    let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "confirm", "touch"]);
    let r = session
        .call_tool("echo", Some(json!({"text": "hé"})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "hé");
    // One call for the caller: the input_required round is answered and re-issued, with the
    // server's request state echoed.
    let r = session
        .call_tool("confirm", Some(json!({})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "yes=true state=round-1");
    // It advertises tool-list changes, so the session listens (subscriptions/listen); a
    // change `touch` publishes reaches subscribers.
    assert_eq!(
        session
            .server_info()
            .capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );
    let mut notes = session.subscribe();
    // The listen stream opens in the background: publish until one arrives.
    let seen = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            session
                .call_tool("touch", Some(json!({})), RequestOptions::new())
                .await
                .unwrap();
            let wait = tokio::time::timeout(std::time::Duration::from_millis(500), notes.next());
            if let Ok(Some(ServerNotification::ToolListChanged)) = wait.await {
                return;
            }
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "no tools/list_changed arrived through subscriptions/listen"
    );
    session.close().await;
}

#[tokio::test]
async fn a_pinned_legacy_era_is_served_without_a_session() {
    let server = Server::start(ts_v2_server()).await;
    let options = SessionOptions::default().with_era(Era::Legacy);
    let session = connect_with(&server, (), options).await;
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
    let r = session
        .call_tool("echo", Some(json!({"text": "old"})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "old");
    session.close().await;
}
