//! Resources: `fixture://counter`, `fixture://static/hello` and the template
//! `fixture://items/{id}`, plus subscriptions (and, with `--conformance-content`, the
//! `test://` resources of [`crate::conformance`]).

use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::jsonrpc::{params_object, req_str, RpcError, RESOURCE_NOT_FOUND};
use crate::pagination::{page_result, paginate};
use crate::server::FixtureServer;

/// The counter bumped by the `bump_resource` tool; text "counter = N".
pub const COUNTER_URI: &str = "fixture://counter";
/// A static text resource: "Hello, fixture!".
pub const HELLO_URI: &str = "fixture://static/hello";
/// The resource template; reading `fixture://items/ID` returns "item ID".
pub const ITEM_TEMPLATE: &str = "fixture://items/{id}";
/// Listed only while toggled on by `trigger_list_changed {"list": "resources"}`; text "dynamic".
pub const DYNAMIC_URI: &str = "fixture://dynamic";
/// Prefix of URIs matched by [`ITEM_TEMPLATE`].
pub const ITEM_PREFIX: &str = "fixture://items/";

fn resources() -> &'static [Value] {
    static RESOURCES: OnceLock<Vec<Value>> = OnceLock::new();
    RESOURCES.get_or_init(|| {
        vec![
            json!({
                "uri": COUNTER_URI,
                "name": "counter",
                "title": "Counter",
                "description": "A counter incremented by the bump_resource tool (subscribable).",
                "mimeType": "text/plain"
            }),
            json!({
                "uri": HELLO_URI,
                "name": "hello",
                "title": "Hello",
                "description": "A static greeting.",
                "mimeType": "text/plain"
            }),
        ]
    })
}

/// `resources/list`.
pub(crate) fn list(server: &FixtureServer, params: Option<&RawValue>) -> Result<Value, RpcError> {
    let params = params_object(params)?;
    let page_size = server.options().page_size;
    let conformance = server.options().conformance_content;
    if server.dynamic_resource_present() || conformance {
        let mut all = resources().to_vec();
        if server.dynamic_resource_present() {
            all.push(json!({
                "uri": DYNAMIC_URI,
                "name": "dynamic",
                "description": "Present only while toggled on by trigger_list_changed.",
                "mimeType": "text/plain"
            }));
        }
        if conformance {
            all.extend(crate::conformance::resource_list().iter().cloned());
        }
        let (page, next) = paginate(&all, page_size, &params)?;
        Ok(page_result("resources", page, next))
    } else {
        let (page, next) = paginate(resources(), page_size, &params)?;
        Ok(page_result("resources", page, next))
    }
}

/// `resources/templates/list`.
pub(crate) fn templates_list(
    server: &FixtureServer,
    params: Option<&RawValue>,
) -> Result<Value, RpcError> {
    params_object(params)?;
    let mut templates = vec![json!({
        "uriTemplate": ITEM_TEMPLATE,
        "name": "item",
        "title": "Item",
        "description": "Reading fixture://items/ID returns the text \"item ID\".",
        "mimeType": "text/plain"
    })];
    if server.options().conformance_content {
        templates.push(crate::conformance::resource_templates());
    }
    Ok(json!({ "resourceTemplates": templates }))
}

/// The text of a known resource, or `None`.
fn resolve(server: &FixtureServer, uri: &str) -> Option<String> {
    match uri {
        COUNTER_URI => Some(format!("counter = {}", server.counter())),
        HELLO_URI => Some("Hello, fixture!".to_owned()),
        DYNAMIC_URI if server.dynamic_resource_present() => Some("dynamic".to_owned()),
        _ => uri
            .strip_prefix(ITEM_PREFIX)
            .filter(|id| !id.is_empty() && !id.contains('/'))
            .map(|id| format!("item {id}")),
    }
}

fn not_found(uri: &str) -> RpcError {
    RpcError::new(RESOURCE_NOT_FOUND, "Resource not found").with_data(json!({ "uri": uri }))
}

fn uri_param(params: Option<&RawValue>) -> Result<String, RpcError> {
    let params = params_object(params)?;
    Ok(req_str(&params, "uri")?.to_owned())
}

/// `resources/read`.
pub(crate) fn read(server: &FixtureServer, params: Option<&RawValue>) -> Result<Value, RpcError> {
    let uri = uri_param(params)?;
    if server.options().conformance_content {
        if let Some(contents) = crate::conformance::read_resource(&uri) {
            return Ok(json!({ "contents": contents }));
        }
    }
    let text = resolve(server, &uri).ok_or_else(|| not_found(&uri))?;
    Ok(json!({
        "contents": [{ "uri": uri, "mimeType": "text/plain", "text": text }]
    }))
}

/// `resources/subscribe` (only existing resources can be subscribed to).
pub(crate) fn subscribe(
    server: &FixtureServer,
    params: Option<&RawValue>,
) -> Result<Value, RpcError> {
    let uri = uri_param(params)?;
    let conformance =
        server.options().conformance_content && crate::conformance::is_subscribable(&uri);
    if !conformance && resolve(server, &uri).is_none() {
        return Err(not_found(&uri));
    }
    server.subscribe(&uri);
    Ok(Value::Object(Map::new()))
}

/// `resources/unsubscribe` (unsubscribing something not subscribed is fine).
pub(crate) fn unsubscribe(
    server: &FixtureServer,
    params: Option<&RawValue>,
) -> Result<Value, RpcError> {
    let uri = uri_param(params)?;
    server.unsubscribe(&uri);
    Ok(Value::Object(Map::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ServerOptions;

    #[tokio::test]
    async fn resolves_known_uris() {
        let (server, _rx) = FixtureServer::new(ServerOptions::default());
        assert_eq!(
            resolve(&server, COUNTER_URI).as_deref(),
            Some("counter = 0")
        );
        assert_eq!(
            resolve(&server, HELLO_URI).as_deref(),
            Some("Hello, fixture!")
        );
        assert_eq!(
            resolve(&server, "fixture://items/42").as_deref(),
            Some("item 42")
        );
        assert_eq!(resolve(&server, "fixture://items/"), None);
        assert_eq!(resolve(&server, "fixture://nope"), None);
    }
}
