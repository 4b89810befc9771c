//! The conformance resources: `test://static-text`, `test://static-binary`,
//! `test://watched-resource` and the template `test://template/{id}/data`.

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::media::RED_PIXEL_PNG;

const STATIC_TEXT: &str = "test://static-text";
const STATIC_BINARY: &str = "test://static-binary";
const WATCHED: &str = "test://watched-resource";
const TEMPLATE: &str = "test://template/{id}/data";
const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

/// The resource definitions (`resources/list`), built once.
pub(crate) fn list() -> &'static [Value] {
    static RESOURCES: OnceLock<Vec<Value>> = OnceLock::new();
    RESOURCES.get_or_init(|| {
        vec![
            json!({
                "uri": STATIC_TEXT,
                "name": "static-text",
                "description": "A static text resource for conformance tests.",
                "mimeType": "text/plain"
            }),
            json!({
                "uri": STATIC_BINARY,
                "name": "static-binary",
                "description": "A static binary resource (a 1x1 red PNG) for conformance tests.",
                "mimeType": "image/png"
            }),
            json!({
                "uri": WATCHED,
                "name": "watched-resource",
                "description": "A resource clients can subscribe to.",
                "mimeType": "text/plain"
            }),
        ]
    })
}

/// The resource template definitions (`resources/templates/list`).
pub(crate) fn templates() -> Value {
    json!({
        "uriTemplate": TEMPLATE,
        "name": "template-data",
        "description": "Reading test://template/ID/data returns JSON data for ID.",
        "mimeType": "application/json"
    })
}

/// The `contents` of a conformance resource, or `None` when `uri` is not one.
pub(crate) fn read(uri: &str) -> Option<Value> {
    let content = match uri {
        STATIC_TEXT => json!({
            "uri": uri,
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource."
        }),
        STATIC_BINARY => json!({ "uri": uri, "mimeType": "image/png", "blob": RED_PIXEL_PNG }),
        WATCHED => json!({
            "uri": uri,
            "mimeType": "text/plain",
            "text": "The content of the watched resource."
        }),
        _ => {
            let id = uri
                .strip_prefix(TEMPLATE_PREFIX)?
                .strip_suffix(TEMPLATE_SUFFIX)
                .filter(|id| !id.is_empty() && !id.contains('/'))?;
            json!({
                "uri": uri,
                "mimeType": "application/json",
                "text": json!({
                    "id": id,
                    "templateTest": true,
                    "data": format!("Data for ID: {id}")
                })
                .to_string()
            })
        }
    };
    Some(json!([content]))
}

/// Whether `uri` can be subscribed to.
pub(crate) fn is_subscribable(uri: &str) -> bool {
    read(uri).is_some()
}
