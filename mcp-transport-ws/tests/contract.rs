//! The transport contract suite (mcp-transport-contract) over WebSocket, against the fixture
//! server in process.

use std::sync::Arc;

use mcp_transport_contract::peer::TestkitFixture;
use mcp_transport_contract::{Era, Peer};
use mcp_transport_ws::{WebSocketConnector, WebSocketServerConfig};

/// The largest message the suite's connector takes.
const CAP: usize = 16 * 1024 * 1024;

mcp_transport_contract::contract_suite!(fixture_over_ws);

async fn fixture_over_ws(era: Era) -> Peer {
    let fixture = TestkitFixture::new("ws", era);
    let server = mcp_testkit::ws::serve_ws(fixture.options(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("the WebSocket fixture listens");
    let config = WebSocketServerConfig::new(server.url()).max_message_size(CAP);
    let connector = WebSocketConnector::new(config).expect("a valid config");
    fixture
        .peer("ws", "tcp", Arc::new(connector), CAP)
        .on_shutdown(move || server.shutdown())
}
