//! The transport contract suite (mcp-transport-contract) over stdio, against the fixture server.

use std::sync::Arc;

use mcp_transport_contract::peer::{event_log_path, Cancellations, RemoveOnDrop};
use mcp_transport_contract::Peer;
use mcp_transport_stdio::{StdioConnector, StdioServerConfig};

/// The largest message the suite's connector takes.
const CAP: usize = 16 * 1024 * 1024;

mcp_transport_contract::contract_suite!(fixture_over_stdio());

async fn fixture_over_stdio() -> Peer {
    let log = event_log_path("stdio");
    let config = StdioServerConfig::new(mcp_testkit::fixture_server_bin())
        .arg("--event-log")
        .arg(&log)
        .max_message_size(CAP);
    Peer::new(
        "stdio",
        Arc::new(StdioConnector::new(config)),
        CAP,
        Cancellations::EventLog(log.clone()),
    )
    .keeping(RemoveOnDrop(log))
}
