//! ResourceListing: the listing is fetched once, shared by concurrent callers, kept until a list
//! change or a reconnect; templates match URIs and templated URIs read like any other.

mod common;

use std::sync::Arc;

use common::*;
use mcp_resources::{NewSession, ResourceConfig, Trigger};
use mcp_session::ServerNotification;
use serde_json::json;

fn listed_server() -> FakeServer {
    let server = FakeServer::new()
        .with_text("test://static", "static")
        .with_text("test://items/42", "item 42");
    server.set_listing(
        vec![json!({"uri": "test://static", "name": "static"})],
        Some(vec![
            json!({"uriTemplate": "test://items/{id}", "name": "item"}),
            json!({"uriTemplate": "test://{+rest}", "name": "anything"}),
        ]),
    );
    server
}

#[tokio::test(start_paused = true)]
async fn the_listing_is_fetched_once_and_kept_until_the_list_changes() {
    let server = listed_server();
    let resources = manager(&server, ResourceConfig::default());
    let first = resources.discover_resources().await.unwrap();
    let second = resources.discover_resources().await.unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(first.resources().len(), 1);
    assert_eq!(first.templates().len(), 2);
    assert!(first.resource("test://static").is_some());
    assert_eq!(server.count("resources/list"), 1);
    assert_eq!(server.count("resources/templates/list"), 1);

    resources.handle_notification(&ServerNotification::ResourceListChanged);
    let third = resources.discover_resources().await.unwrap();
    assert!(!Arc::ptr_eq(&first, &third));
    assert_eq!(server.count("resources/list"), 2);
    assert_eq!(resources.stats().list_fetches, 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_discoveries_share_one_listing() {
    let server = listed_server();
    let resources = manager(&server, ResourceConfig::default());
    server.hold("resources/list");
    let callers: Vec<_> = (0..5)
        .map(|_| {
            let resources = resources.clone();
            tokio::spawn(async move { resources.discover_resources().await })
        })
        .collect();
    server.wait_for_requests(2).await;
    // A caller that joins late finds the kept listing: one listing either way.
    server.release("resources/list");
    let mut results = Vec::new();
    for caller in callers {
        results.push(caller.await.unwrap().unwrap());
    }
    assert!(results.iter().all(|r| Arc::ptr_eq(r, &results[0])));
    assert_eq!(server.count("resources/list"), 1);
    assert_eq!(server.count("resources/templates/list"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_listing_that_raced_a_list_change_is_returned_but_not_kept() {
    let server = listed_server();
    let resources = manager(&server, ResourceConfig::default());
    server.hold("resources/list");
    let caller = tokio::spawn({
        let resources = resources.clone();
        async move { resources.discover_resources().await }
    });
    server.wait_for_requests(2).await;
    resources.handle_notification(&ServerNotification::ResourceListChanged);
    server.release("resources/list");
    assert_eq!(caller.await.unwrap().unwrap().resources().len(), 1);
    resources.discover_resources().await.unwrap();
    assert_eq!(
        server.count("resources/list"),
        2,
        "the raced listing was not kept"
    );
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_drops_the_listing() {
    let server = listed_server();
    let resources = manager(&server, ResourceConfig::default());
    resources.discover_resources().await.unwrap();
    resources.reconnected(NewSession::new()).await.unwrap();
    resources.discover_resources().await.unwrap();
    assert_eq!(server.count("resources/list"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_server_without_templates_has_none() {
    let server = FakeServer::new();
    server.set_listing(vec![json!({"uri": "test://a", "name": "a"})], None);
    let resources = manager(&server, ResourceConfig::default());
    let listing = resources.discover_resources().await.unwrap();
    assert_eq!(listing.resources().len(), 1);
    assert!(listing.templates().is_empty());
    assert_eq!(resources.template_for("test://a").await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn a_templated_uri_finds_its_template_and_reads_like_any_other() {
    let server = listed_server();
    let resources = manager(&server, ResourceConfig::default());
    let matched = resources
        .template_for("test://items/42")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(matched.template.name, "item", "the most specific template");
    assert_eq!(matched.variables["id"], "42");
    let expanded = matched.uri_template.expand(&matched.variables);
    assert_eq!(expanded, "test://items/42");

    let mut rx = Recorder::new(&resources);
    assert_eq!(text(&resources.read(&expanded).await.unwrap()), "item 42");
    assert_eq!(
        rx.take(&expanded),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read)
        ]
    );
    let fallback = resources.template_for("test://a/b").await.unwrap().unwrap();
    assert_eq!(fallback.template.name, "anything");
    assert_eq!(fallback.variables["rest"], "a/b");
}
