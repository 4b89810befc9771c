//! The transport contract suite (mcp-transport-contract) over gRPC: the client transport
//! against the fixture server over stdio behind a `GrpcBridge` on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use mcp_transport_contract::peer::{event_log_path, Cancellations, RemoveOnDrop};
use mcp_transport_contract::Peer;
use mcp_transport_grpc::{GrpcBridge, GrpcConnector, GrpcServerConfig};
use mcp_transport_stdio::{StdioConnector, StdioServerConfig};

/// The largest message the suite's connector takes (the default, both ways).
const CAP: usize = mcp_transport_grpc::DEFAULT_MAX_MESSAGE_SIZE;

mcp_transport_contract::contract_suite!(fixture_over_grpc());

async fn fixture_over_grpc() -> Peer {
    let log = event_log_path("grpc");
    let backend = StdioServerConfig::new(mcp_testkit::fixture_server_bin())
        .arg("--event-log")
        .arg(&log)
        .shutdown_grace(Duration::from_millis(500));
    let bridge = GrpcBridge::new(Arc::new(StdioConnector::new(backend)))
        .shutdown_timeout(Duration::from_secs(5))
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("the bridge binds 127.0.0.1");
    let client = GrpcConnector::new(GrpcServerConfig::new(bridge.url()).max_message_size(CAP))
        .expect("a valid config");
    let bridge = Arc::new(bridge);
    Peer::new(
        "grpc",
        Arc::new(client),
        CAP,
        Cancellations::EventLog(log.clone()),
    )
    .keeping(RemoveOnDrop(log))
    .on_shutdown(move || async move { bridge.shutdown().await })
}
