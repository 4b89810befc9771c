//! What a new session shows: the server and its tools, the era it was found to speak, the
//! protocol version agreed.

use std::sync::Arc;

use mcp_core::{Era, ErrorKind, McpServiceExt, ProtocolVersion, RequestOptions};
use mcp_session::SessionConnector;
use serde_json::json;

use super::{echo, handshake_connector_with, open, open_with, session_options, ContractHandler};
use crate::peer::Peer;

/// The server the fixture's tools come from.
const SERVER_NAME: &str = "mcp-fixture-server";

/// Connects, sees the fixture's server and tools over the transport it reports, calls one,
/// closes.
pub async fn handshake(peer: &Peer) {
    let session = open(peer).await;
    assert_eq!(
        session.server_info().server_info.name,
        SERVER_NAME,
        "{}",
        peer.name
    );
    assert_eq!(
        session.transport_name(),
        peer.network_transport,
        "{}: the session's network transport",
        peer.name
    );
    let tools = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: tools/list failed: {e}", peer.name));
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for tool in [
        "echo",
        "add",
        "slow",
        "slow_stats",
        "fail",
        "large",
        "crash",
        "trigger_list_changed",
        "ask_elicitation",
        "ask_roots",
    ] {
        assert!(
            names.contains(&tool),
            "{}: no `{tool}` in {names:?}",
            peer.name
        );
    }
    assert_eq!(
        echo(&session, "hello").await.unwrap(),
        "hello",
        "{}",
        peer.name
    );
    session.close().await;
}

/// A session that is not told the era finds the one the server speaks (`server/discover`
/// answered: modern, with its result kept and the list results' cache hints; refused: legacy,
/// after `initialize`), and works in it; a session pinned to the other era is refused clearly,
/// naming the handshake the server did not know.
pub async fn the_era_is_detected(peer: &Peer) {
    let session = open(peer).await;
    assert_eq!(session.era(), peer.era, "{}", peer.name);
    assert_eq!(
        session.discover_result().is_some(),
        peer.era == Era::Modern,
        "{}: a discover result in the {:?} era",
        peer.name,
        peer.era
    );
    let page = session
        .list_tools(None, RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: tools/list failed: {e}", peer.name));
    let ttl = match peer.era {
        Era::Modern => peer
            .list_ttl_ms
            .map(|ms| i64::try_from(ms).expect("a ttl in range")),
        Era::Legacy => None,
    };
    assert_eq!(page.cache.ttl_ms, ttl, "{}: the cache hint", peer.name);
    assert_eq!(echo(&session, "in era").await.unwrap(), "in era");
    let sum = session
        .call_tool("add", Some(json!({"a": 2, "b": 3})), RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: add failed: {e}", peer.name));
    assert_eq!(
        sum.structured_content,
        Some(json!({"sum": 5})),
        "{}",
        peer.name
    );
    session.close().await;

    let (other, unknown) = match peer.era {
        Era::Legacy => (Era::Modern, "server/discover"),
        Era::Modern => (Era::Legacy, "initialize"),
    };
    let pinned = handshake_connector_with(
        peer,
        Arc::new(ContractHandler::default()),
        session_options().with_era(other),
    );
    let error = match pinned.connect().await {
        Ok(session) => {
            let era = session.era();
            session.close().await;
            panic!(
                "{}: a session pinned to {other:?} opened in {era:?}",
                peer.name
            )
        }
        Err(error) => error,
    };
    assert_ne!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);
    assert!(
        error.message().contains(unknown),
        "{}: pinned to {other:?}, refused without naming `{unknown}`: {error}",
        peer.name
    );
}

/// The protocol version the client asks for is the one agreed: each legacy version the client
/// speaks, offered in `initialize`, with a legacy server; 2026-07-28 with a modern one.
pub async fn protocol_versions_are_negotiated(peer: &Peer) {
    let versions: &[&str] = match peer.era {
        Era::Legacy => &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        Era::Modern => &["2026-07-28"],
    };
    for version in versions {
        let asked: ProtocolVersion = version
            .parse()
            .unwrap_or_else(|e| panic!("{version} is a version: {e:?}"));
        let connector = handshake_connector_with(
            peer,
            Arc::new(ContractHandler::default()),
            session_options().with_protocol_version(asked),
        );
        let session = open_with(peer, connector).await;
        assert_eq!(
            session.protocol_version().as_str(),
            *version,
            "{}: the version agreed",
            peer.name
        );
        assert_eq!(echo(&session, version).await.unwrap(), *version);
        session.close().await;
    }
}
