//! The transport contract suite (mcp-transport-contract) in process, against the fixture's
//! tools as a `LocalServer`.

use std::sync::Arc;

use mcp_transport_contract::peer::Cancellations;
use mcp_transport_contract::{Era, Peer};
use mcp_transport_local::fixture::{fixture_builder, MAX_LARGE_BYTES};
use mcp_transport_local::Eras;

mcp_transport_contract::contract_suite!(fixture_in_process);

async fn fixture_in_process(era: Era) -> Peer {
    let eras = match era {
        Era::Legacy => Eras::LegacyOnly,
        Era::Modern => Eras::ModernOnly,
    };
    let server = fixture_builder()
        .eras(eras)
        .build()
        .expect("the fixture's registrations are valid");
    let counted = server.clone();
    Peer::new(
        "local",
        "inproc",
        era,
        server.connector(),
        MAX_LARGE_BYTES as usize,
        Cancellations::Counter(Arc::new(move || counted.cancellations())),
    )
    .keeping(server)
}
