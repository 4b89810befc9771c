//! The transport contract suite (mcp-transport-contract) over gRPC: the client transport
//! against the fixture server over stdio behind a `GrpcBridge` on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use mcp_transport_contract::peer::TestkitFixture;
use mcp_transport_contract::{Era, Peer};
use mcp_transport_grpc::{GrpcBridge, GrpcConnector, GrpcServerConfig};
use mcp_transport_stdio::{StdioConnector, StdioServerConfig};

/// The largest message the suite's connector takes (the default, both ways).
const CAP: usize = mcp_transport_grpc::DEFAULT_MAX_MESSAGE_SIZE;

mcp_transport_contract::contract_suite!(fixture_over_grpc);

async fn fixture_over_grpc(era: Era) -> Peer {
    let fixture = TestkitFixture::new("grpc", era);
    let backend = StdioServerConfig::new(mcp_testkit::fixture_server_bin())
        .args(fixture.args())
        .shutdown_grace(Duration::from_millis(500));
    let bridge = GrpcBridge::new(Arc::new(StdioConnector::new(backend)))
        .shutdown_timeout(Duration::from_secs(5))
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("the bridge binds 127.0.0.1");
    let client = GrpcConnector::new(GrpcServerConfig::new(bridge.url()).max_message_size(CAP))
        .expect("a valid config");
    let bridge = Arc::new(bridge);
    fixture
        .peer("grpc", "tcp", Arc::new(client), CAP)
        .on_shutdown(move || async move { bridge.shutdown().await })
}
