//! What the 2026-07-28 revision adds: `server/discover`, the per-request `_meta` keys, result
//! types and multi round-trip requests, cache hints, and `subscriptions/listen`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Extra, Implementation, ServerCapabilities};

/// The reserved `_meta` keys of the modern era.
pub mod meta {
    /// The protocol version of one request (required on every modern request).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities relevant to one request (required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's name and version (recommended).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The least severe log level the server may emit for one request.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's name and version, in a result's `_meta`.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The `subscriptions/listen` request a notification belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// A request's W3C `traceparent` (both eras; the OpenTelemetry MCP conventions' key).
    pub const TRACEPARENT: &str = "traceparent";
    /// A request's W3C `tracestate` (both eras), next to its `traceparent`.
    pub const TRACESTATE: &str = "tracestate";
}

/// The JSON-RPC error codes the MCP specification reserves (-32020 to -32099).
pub mod error_codes {
    /// HTTP headers do not match the body, or required headers are missing or malformed.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability the client did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The server does not speak the request's protocol version.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

    /// Whether `code` is one only a modern server sends (the reserved MCP range).
    pub fn is_modern(code: i64) -> bool {
        (-32099..=-32020).contains(&code)
    }
}

/// Result of `server/discover`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The protocol versions the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// Guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the answer stays fresh.
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Unknown members (including `_meta` with the server's info), preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

impl DiscoverResult {
    /// The server's name and version: `_meta["io.modelcontextprotocol/serverInfo"]`, or a
    /// top-level `serverInfo` (some servers put it there), when present and well-formed.
    pub fn server_info(&self) -> Option<Implementation> {
        let from_meta = self
            .extra
            .get("_meta")
            .and_then(|m| m.get(meta::SERVER_INFO));
        let info = from_meta.or_else(|| self.extra.get("serverInfo"))?;
        serde_json::from_value(info.clone()).ok()
    }
}

/// The `data` of an `UnsupportedProtocolVersion` error (-32022).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsupportedVersionData {
    /// The versions the server speaks.
    #[serde(default)]
    pub supported: Vec<String>,
    /// The version the request named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
}

/// Caching hints of a result (`tools/list`, `prompts/list`, `resources/list`,
/// `resources/templates/list`, `resources/read`, `server/discover`), sent since 2026-07-28.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheHints {
    /// Milliseconds after receipt the result may be considered fresh; absent or negative: stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may cache the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

impl CacheHints {
    /// How long the result stays fresh (zero when the server gave no positive TTL).
    pub fn fresh_for(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.ttl_ms.unwrap_or(0).max(0) as u64)
    }

    /// Hints of two pages of one list: the shorter TTL (absent if either is), the narrower scope.
    pub fn merge(&self, other: &CacheHints) -> CacheHints {
        CacheHints {
            ttl_ms: match (self.ttl_ms, other.ttl_ms) {
                (Some(a), Some(b)) => Some(a.min(b)),
                _ => None,
            },
            cache_scope: match (self.cache_scope, other.cache_scope) {
                (Some(CacheScope::Private), _) | (_, Some(CacheScope::Private)) => {
                    Some(CacheScope::Private)
                }
                (Some(a), Some(_)) => Some(a),
                _ => None,
            },
        }
    }
}

/// Who may cache a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No user-specific data: any cache may keep it for anyone.
    Public,
    /// Only for the same authorization context.
    Private,
}

/// The `resultType` of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultType {
    /// A final result (also what an absent `resultType` means).
    Complete,
    /// More input is needed: an [`InputRequiredResult`].
    InputRequired,
    /// Any other value (an extension's, e.g. the tasks extension's `"task"`).
    Other(String),
}

impl ResultType {
    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(other) => other,
        }
    }

    /// Parses a wire value.
    pub fn parse(value: &str) -> ResultType {
        match value {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

/// One request of the server inside an [`InputRequiredResult`]: `elicitation/create`,
/// `sampling/createMessage` or `roots/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The method, as a server→client request would name it.
    pub method: String,
    /// Its parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// `resultType: "input_required"`: the server needs answers to finish; the client sends the request
/// again with `inputResponses` (keyed like `input_requests`) and `requestState` echoed unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// What the server asks, by its own keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<serde_json::Map<String, Value>>,
    /// Opaque state to echo back exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Which notifications a `subscriptions/listen` stream carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_subscriptions: Vec<String>,
}

impl NotificationFilter {
    /// True when it asks for nothing.
    pub fn is_empty(&self) -> bool {
        !self.tools_list_changed
            && !self.prompts_list_changed
            && !self.resources_list_changed
            && self.resource_subscriptions.is_empty()
    }
}

/// Parameters of `subscriptions/listen`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenRequestParams {
    /// What to deliver.
    pub notifications: NotificationFilter,
}
