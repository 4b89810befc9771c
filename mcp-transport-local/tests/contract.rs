//! The transport contract suite (mcp-transport-contract) in process, against the fixture's
//! tools as a `LocalServer`.

use std::sync::Arc;

use mcp_transport_contract::peer::Cancellations;
use mcp_transport_contract::Peer;
use mcp_transport_local::fixture::{fixture_server, MAX_LARGE_BYTES};

mcp_transport_contract::contract_suite!(fixture_in_process());

async fn fixture_in_process() -> Peer {
    let server = fixture_server();
    let counted = server.clone();
    Peer::new(
        "local",
        server.connector(),
        MAX_LARGE_BYTES as usize,
        Cancellations::Counter(Arc::new(move || counted.cancellations())),
    )
    .keeping(server)
}
