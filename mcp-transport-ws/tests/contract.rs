//! The transport contract suite (mcp-transport-contract) over WebSocket, against the fixture
//! server in process.

use std::sync::Arc;

use mcp_testkit::ServerOptions;
use mcp_transport_contract::peer::{event_log_path, Cancellations, RemoveOnDrop};
use mcp_transport_contract::Peer;
use mcp_transport_ws::{WebSocketConnector, WebSocketServerConfig};

/// The largest message the suite's connector takes.
const CAP: usize = 16 * 1024 * 1024;

mcp_transport_contract::contract_suite!(fixture_over_ws());

async fn fixture_over_ws() -> Peer {
    let log = event_log_path("ws");
    let options = ServerOptions {
        event_log: Some(log.clone()),
        ..ServerOptions::default()
    };
    let fixture = mcp_testkit::ws::serve_ws(options, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("the WebSocket fixture listens");
    let config = WebSocketServerConfig::new(fixture.url()).max_message_size(CAP);
    let connector = WebSocketConnector::new(config).expect("a valid config");
    Peer::new(
        "ws",
        Arc::new(connector),
        CAP,
        Cancellations::EventLog(log.clone()),
    )
    .keeping(RemoveOnDrop(log))
    .on_shutdown(move || fixture.shutdown())
}
