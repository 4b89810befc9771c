//! The transport contract suite (mcp-transport-contract) over Streamable HTTP and legacy
//! HTTP+SSE, against the fixture server in process.

use std::sync::Arc;

use mcp_testkit::{serve_http, ServerOptions};
use mcp_transport_contract::peer::{event_log_path, Cancellations, RemoveOnDrop};
use mcp_transport_contract::Peer;
use mcp_transport_http::{HttpConnector, HttpKind, HttpServerConfig};

/// The largest message the suite's connector takes.
const CAP: usize = 16 * 1024 * 1024;

async fn fixture_over_http(name: &'static str, kind: HttpKind) -> Peer {
    let log = event_log_path(name);
    let options = ServerOptions {
        event_log: Some(log.clone()),
        ..ServerOptions::default()
    };
    let fixture = serve_http(options, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("the HTTP fixture listens");
    let url = match kind {
        HttpKind::LegacySse => fixture.sse_url(),
        _ => fixture.url(),
    };
    let config = HttpServerConfig::new(url).max_message_size(CAP);
    Peer::new(
        name,
        Arc::new(HttpConnector::new(config, kind)),
        CAP,
        Cancellations::EventLog(log.clone()),
    )
    .keeping(RemoveOnDrop(log))
    .on_shutdown(move || fixture.shutdown())
}

mod streamable {
    use super::*;
    mcp_transport_contract::contract_suite!(fixture_over_http("http", HttpKind::Streamable));
}

mod legacy_sse {
    use super::*;
    mcp_transport_contract::contract_suite!(fixture_over_http("sse", HttpKind::LegacySse));
}
