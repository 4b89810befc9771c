//! The facade serves a local server registered in code (`McpClientBuilder::local_server`) like
//! any configured one: in the catalog, through the call stack, under supervision, and it ends
//! the server's connections when it shuts down.

mod common;

use std::sync::Arc;

use common::{test_server, Path, DEADLINE};
use mcp_client::{ClientConfig, McpClient};
use mcp_core::ErrorKind;
use serde_json::json;

#[tokio::test]
async fn the_facade_serves_a_local_server_through_its_connector() {
    let server = test_server(Path::InPlace, Arc::default());
    let client = tokio::time::timeout(
        DEADLINE,
        McpClient::builder(ClientConfig::default())
            .local_server("builtin", server.connector())
            .start(),
    )
    .await
    .expect("starts in time");
    let report = &client.servers()[0];
    assert_eq!(report.name, "builtin");
    assert!(report.status.is_ready(), "{report:?}");
    assert!(client.tools().get("builtin__echo").is_some());

    let answer = client
        .call_tool("builtin__echo", Some(json!({"text": "through the facade"})))
        .await
        .unwrap();
    assert_eq!(answer.text(), "through the facade");
    let refused = client
        .call_tool("builtin__search", Some(json!({"query": "q"})))
        .await
        .expect_err("a missing argument");
    assert_eq!(refused.kind(), ErrorKind::InvalidParams, "{refused}");
    assert_eq!(refused.field(), Some("limit"));
    assert!(server.open_connections() >= 1);

    client.shutdown().await;
    mcp_testkit::wait::until("the facade's connections closing", DEADLINE, || {
        server.open_connections() == 0
    })
    .await;
    assert_eq!(server.running_calls(), 0);
}
