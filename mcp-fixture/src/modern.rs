//! The 2026-07-28 ("modern") era of the fixture, behind `--era dual` or `--era modern`: the
//! fixture's second reading of the revision, independent of `mcp-core`.
//!
//! - `server/discover` answers the supported versions, the same capabilities as `initialize`,
//!   the server info in `_meta["io.modelcontextprotocol/serverInfo"]`, and cache hints.
//! - A request whose `params._meta` names `io.modelcontextprotocol/protocolVersion` is modern:
//!   a version other than 2026-07-28 gets `-32022` with the supported list, a request without
//!   `io.modelcontextprotocol/clientCapabilities` gets `-32602`, and every result carries
//!   `resultType: "complete"` (unless it says `"input_required"`); list results add `ttlMs`
//!   and `cacheScope`. Reading an unknown resource is `-32602` with the `uri` in `data`
//!   (SEP-2164), where 2025-11-25 says `-32002`.
//! - `--era modern` refuses `initialize` (`-32601`), `--era legacy` (the default) refuses
//!   `server/discover` the way 2025 servers do.
//! - `server/discover` offers the Tasks extension, served by `tasks.rs`.
//!
//! Served on stdio; over HTTP the fixture's sessions still require `initialize`.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::jsonrpc::{RpcError, INVALID_PARAMS};

/// The modern revision.
pub const MODERN_VERSION: &str = "2026-07-28";
/// `UnsupportedProtocolVersion`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// How long list results stay fresh (`ttlMs`).
pub const LIST_TTL_MS: u64 = 60_000;

/// Which eras the fixture serves (`--era`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraMode {
    /// Only the `initialize` handshake (2025-11-25 and older); `server/discover` is unknown.
    #[default]
    Legacy,
    /// Both, decided per request.
    Dual,
    /// Only 2026-07-28; `initialize` is unknown.
    Modern,
}

impl EraMode {
    /// Parses `legacy`, `dual` or `modern`.
    pub fn parse(name: &str) -> Option<EraMode> {
        match name {
            "legacy" => Some(EraMode::Legacy),
            "dual" => Some(EraMode::Dual),
            "modern" => Some(EraMode::Modern),
            _ => None,
        }
    }

    /// Whether modern requests are served.
    pub fn serves_modern(self) -> bool {
        self != EraMode::Legacy
    }
}

/// The `_meta` protocol fields of a request, if it has any.
pub(crate) struct RequestEra {
    pub(crate) version: String,
    pub(crate) has_capabilities: bool,
    /// The request's client capabilities declare the Tasks extension.
    pub(crate) tasks: bool,
}

/// Reads `params._meta`'s protocol fields (a scan of the parameters; only modern requests have
/// the key, so legacy ones are skipped by a text check).
pub(crate) fn request_era(params: Option<&RawValue>) -> Option<RequestEra> {
    let text = params?.get();
    if !text.contains("io.modelcontextprotocol/protocolVersion") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
        version: Option<String>,
        #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
        capabilities: Option<Capabilities>,
    }
    #[derive(serde::Deserialize)]
    struct Capabilities {
        #[serde(default)]
        extensions: Option<std::collections::HashMap<String, serde::de::IgnoredAny>>,
    }
    let meta = serde_json::from_str::<Params>(text).ok()?.meta?;
    Some(RequestEra {
        version: meta.version?,
        tasks: meta
            .capabilities
            .as_ref()
            .and_then(|c| c.extensions.as_ref())
            .is_some_and(|e| e.contains_key(crate::tasks::TASKS_EXTENSION)),
        has_capabilities: meta.capabilities.is_some(),
    })
}

/// Refuses a modern request the fixture cannot serve.
pub(crate) fn check(era: &RequestEra) -> Result<(), RpcError> {
    if era.version != MODERN_VERSION {
        let mut error = RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        error.data = Some(json!({"supported": [MODERN_VERSION], "requested": era.version}));
        return Err(error);
    }
    if !era.has_capabilities {
        return Err(RpcError::new(
            INVALID_PARAMS,
            "params._meta lacks io.modelcontextprotocol/clientCapabilities",
        ));
    }
    Ok(())
}

/// The `server/discover` result (the capabilities gain the Tasks extension).
pub(crate) fn discover(mut capabilities: Value, server_info: Value, instructions: &str) -> Value {
    if let Value::Object(map) = &mut capabilities {
        map.insert(
            "extensions".into(),
            json!({ crate::tasks::TASKS_EXTENSION: {} }),
        );
    }
    json!({
        "resultType": "complete",
        "supportedVersions": [MODERN_VERSION],
        "capabilities": capabilities,
        "instructions": instructions,
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": server_info}
    })
}

/// A modern result: `resultType`, and the cache hints on lists and reads.
pub(crate) fn shape_result(method: &str, result: &mut Value) {
    let Value::Object(map) = result else {
        return;
    };
    map.entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    if is_cacheable(method) {
        map.entry("ttlMs")
            .or_insert_with(|| Value::from(LIST_TTL_MS));
        map.entry("cacheScope")
            .or_insert_with(|| Value::from("public"));
    }
}

/// A modern request's error: an unknown resource is `-32602 Invalid params` (SEP-2164), not the
/// older `-32002`.
pub(crate) fn shape_error(method: &str, mut error: RpcError) -> RpcError {
    if method == "resources/read" && error.code == crate::jsonrpc::RESOURCE_NOT_FOUND {
        error.code = INVALID_PARAMS;
    }
    error
}

/// The same for a response line built by hand (hot paths): the members go in right after
/// `"result":{`.
pub(crate) fn shape_line(method: &str, line: String) -> String {
    let Some(at) = line.find("\"result\":{") else {
        return line;
    };
    let at = at + "\"result\":{".len();
    let mut members = String::from("\"resultType\":\"complete\"");
    if is_cacheable(method) {
        members.push_str(&format!(
            ",\"ttlMs\":{LIST_TTL_MS},\"cacheScope\":\"public\""
        ));
    }
    let empty = line[at..].starts_with('}');
    let mut shaped = String::with_capacity(line.len() + members.len() + 1);
    shaped.push_str(&line[..at]);
    shaped.push_str(&members);
    if !empty {
        shaped.push(',');
    }
    shaped.push_str(&line[at..]);
    shaped
}

fn is_cacheable(method: &str) -> bool {
    matches!(
        method,
        "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_built_lines_get_the_result_type() {
        assert_eq!(
            shape_line(
                "tools/call",
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#.into()
            ),
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}"#
        );
        assert_eq!(
            shape_line(
                "tools/list",
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into()
            ),
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":60000,"cacheScope":"public"}}"#
        );
    }

    #[test]
    fn modern_requests_are_recognized_and_checked() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert!(request_era(Some(&raw(r#"{"name":"x"}"#))).is_none());
        let era = request_era(Some(&raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        )))
        .unwrap();
        assert!(check(&era).is_ok());
        let era = request_era(Some(&raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        )))
        .unwrap();
        assert_eq!(check(&era).unwrap_err().code, UNSUPPORTED_PROTOCOL_VERSION);
        let era = request_era(Some(&raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        )))
        .unwrap();
        assert_eq!(check(&era).unwrap_err().code, INVALID_PARAMS);
    }
}
