//! Tools: listing and calling.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CacheHints, Content, Extra};

/// Hints about a tool's behaviour (untrusted unless the server is).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling twice with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world (e.g. the web).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The name to call it by.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does (for the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Unknown members (icons, execution, `_meta`, …), preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Tool {
    /// True when the server marks the tool read-only or idempotent (safe to replay).
    pub fn is_replay_safe(&self) -> bool {
        self.annotations
            .as_ref()
            .is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true))
    }
}

/// Result of `tools/list` (one page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Cursor of the next page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Caching hints (2026-07-28).
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Parameters of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolRequestParams {
    /// The tool's name.
    pub name: String,
    /// The arguments (an object), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Unknown members (including `_meta`), preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `tools/call`; a tool's own failure is `is_error: true`, not a protocol error.
/// Deserialized by hand (not with `#[serde(flatten)]`, which buffers every member first): the hot
/// path of every tool call, whose results can be megabytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured content blocks.
    pub content: Vec<Content>,
    /// Structured result matching the tool's output schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool failed; the content says why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Unknown members (including `_meta`), preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ResultVisitor;
        impl<'de> serde::de::Visitor<'de> for ResultVisitor {
            type Value = CallToolResult;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tools/call result object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<CallToolResult, A::Error> {
                let mut result = CallToolResult {
                    content: Vec::new(),
                    structured_content: None,
                    is_error: None,
                    extra: Extra::new(),
                };
                while let Some(key) = map.next_key::<super::MemberKey<'de>>()?.map(|k| k.0) {
                    match key.as_ref() {
                        "content" => result.content = map.next_value()?,
                        "structuredContent" => result.structured_content = map.next_value()?,
                        "isError" => result.is_error = map.next_value()?,
                        _ => {
                            let value: Value = map.next_value()?;
                            result.extra.insert(key.into_owned(), value);
                        }
                    }
                }
                Ok(result)
            }
        }
        deserializer.deserialize_map(ResultVisitor)
    }
}

impl CallToolResult {
    /// True when the tool reported a failure.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The text of all text blocks, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.content.iter().filter_map(Content::as_text).collect();
        texts.join("\n")
    }
}
