//! Small request and result types: pagination, logging level, completion, empty results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Extra, LoggingLevel};

/// Parameters of every paginated list request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// The cursor from the previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Parameters of `logging/setLevel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetLevelRequestParams {
    /// The minimum level the server should send.
    pub level: LoggingLevel,
}

/// Parameters of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// `{"type":"ref/prompt","name":…}` or `{"type":"ref/resource","uri":…}`.
    #[serde(rename = "ref")]
    pub reference: Value,
    /// `{"name":…, "value":…}`: the argument being completed.
    pub argument: Value,
    /// Already-resolved arguments (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
}

/// The completion values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values (at most 100).
    pub values: Vec<String>,
    /// Total number of matches, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// More matches exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// Result of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// The completion.
    pub completion: Completion,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A result with no members (ping, subscribe, setLevel).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {
    /// Unknown members (e.g. `_meta`), preserved.
    #[serde(flatten)]
    pub extra: Extra,
}
