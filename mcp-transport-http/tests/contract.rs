//! The transport contract suite (mcp-transport-contract) over Streamable HTTP and
//! HTTP+SSE, against the fixture server in process. HTTP+SSE is the 2024-11-05
//! transport: it carries the legacy era only.

use std::sync::Arc;

use mcp_testkit::serve_http;
use mcp_transport_contract::peer::{Cancellations, TestkitFixture};
use mcp_transport_contract::{Era, Peer};
use mcp_transport_http::{HttpConnector, HttpKind, HttpServerConfig};

/// The largest message the suite's connector takes.
const CAP: usize = 16 * 1024 * 1024;

async fn fixture_over_http(name: &'static str, kind: HttpKind, era: Era) -> Peer {
    let fixture = TestkitFixture::new(name, era);
    let server = serve_http(fixture.options(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("the HTTP fixture listens");
    let url = match kind {
        HttpKind::HttpSse => server.sse_url(),
        _ => server.url(),
    };
    let config = HttpServerConfig::new(url).max_message_size(CAP);
    let peer = fixture
        .peer(name, "tcp", Arc::new(HttpConnector::new(config, kind)), CAP)
        .on_shutdown(move || server.shutdown());
    match era {
        // In the modern era closing the request's stream is the cancellation (nothing is
        // POSTed), and the fixture's HTTP server, a 2025-11-25 reading, keeps running a call
        // whose stream closed: it cannot tell.
        Era::Modern => peer.with_cancellations(Cancellations::NotCounted(
            "the fixture's HTTP server does not take a closed stream for a cancellation",
        )),
        Era::Legacy => peer,
    }
}

mod streamable {
    use super::*;
    mcp_transport_contract::contract_suite!(|era| fixture_over_http(
        "http",
        HttpKind::Streamable,
        era
    ));
}

mod http_sse {
    use super::*;
    mcp_transport_contract::contract_suite!(
        |era| fixture_over_http("sse", HttpKind::HttpSse, era);
        legacy
    );
}
