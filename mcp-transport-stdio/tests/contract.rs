//! The transport contract suite (mcp-transport-contract) over stdio, against the fixture server.

use std::sync::Arc;

use mcp_transport_contract::peer::TestkitFixture;
use mcp_transport_contract::{Era, Peer};
use mcp_transport_stdio::{StdioConnector, StdioServerConfig};

/// The largest message the suite's connector takes.
const CAP: usize = 16 * 1024 * 1024;

mcp_transport_contract::contract_suite!(fixture_over_stdio);

async fn fixture_over_stdio(era: Era) -> Peer {
    let fixture = TestkitFixture::new("stdio", era);
    let config = StdioServerConfig::new(mcp_testkit::fixture_server_bin())
        .args(fixture.args())
        .max_message_size(CAP);
    fixture.peer("stdio", "pipe", Arc::new(StdioConnector::new(config)), CAP)
}
