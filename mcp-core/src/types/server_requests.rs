//! Requests a server sends to the client: roots, sampling, elicitation.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Extra, Role};

/// A filesystem root the client exposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Root {
    /// A root with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: Some(name.into()),
            extra: Extra::new(),
        }
    }
}

/// Result of `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}

/// One message of a sampling conversation (content kept as JSON: text, image, audio, tool use …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// A content block or an array of them.
    pub content: Value,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Parameters of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Maximum tokens to generate.
    pub max_tokens: u64,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Unknown members (modelPreferences, includeContext, tools, …), preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Normally `assistant`.
    pub role: Role,
    /// The generated content.
    pub content: Value,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Parameters of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestParams {
    /// `form` (default) or `url` (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What to ask the user.
    pub message: String,
    /// Form mode: a flat JSON Schema object of primitive properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// URL mode: where to send the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// URL mode: correlates `notifications/elicitation/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitRequestParams {
    /// The `default` of every property of the form schema that declares one (SEP-1034).
    pub fn schema_defaults(&self) -> Map<String, Value> {
        let schema = self.requested_schema.as_ref();
        let props = schema.and_then(|s| s.get("properties")?.as_object());
        let props = props.into_iter().flatten();
        props
            .filter_map(|(name, schema)| Some((name.clone(), schema.get("default")?.clone())))
            .collect()
    }
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted the form.
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the request.
    Cancel,
}

/// Result of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values (accept only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}
