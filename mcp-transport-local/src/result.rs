//! What a tool handler may return ([`IntoToolResult`]): text, content blocks, a typed value
//! ([`Json`]: `structuredContent` plus its JSON as text, with the output schema generated), or a
//! whole [`CallToolResult`] for full control — each possibly inside a `Result`.

use mcp_core::types::{CallToolResult, Content};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// A value a tool handler returns, turned into the `tools/call` result.
pub trait IntoToolResult: Send + 'static {
    /// The result, as the JSON of a [`CallToolResult`].
    fn into_tool_result(self) -> Result<Value, ToolError>;

    /// The schema of the result's `structuredContent`, when the type has one (the tool's
    /// `outputSchema`).
    fn output_schema() -> Option<Value> {
        None
    }
}

/// A typed result: its JSON is the result's `structuredContent` (and, for clients that read
/// only content, also its one text block), and its schema is the tool's `outputSchema`. The
/// value must serialize to a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

/// `{"content":[{"type":"text","text":…}]}`, built directly (this is every text result's path).
pub(crate) fn text_result(text: String) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), Value::String("text".into()));
    block.insert("text".into(), Value::String(text));
    let mut result = Map::new();
    result.insert("content".into(), Value::Array(vec![Value::Object(block)]));
    Value::Object(result)
}

fn encoding_failed(what: &str, e: serde_json::Error) -> ToolError {
    ToolError::rpc(mcp_core::jsonrpc::ErrorObject::internal(format!(
        "the tool's {what} could not be encoded as JSON: {e}"
    )))
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        Ok(text_result(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        Ok(text_result(self.to_owned()))
    }
}

/// No content at all.
impl IntoToolResult for () {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        let mut result = Map::new();
        result.insert("content".into(), Value::Array(Vec::new()));
        Ok(Value::Object(result))
    }
}

impl IntoToolResult for Content {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        vec![self].into_tool_result()
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        let content = serde_json::to_value(self).map_err(|e| encoding_failed("content", e))?;
        let mut result = Map::new();
        result.insert("content".into(), content);
        Ok(Value::Object(result))
    }
}

/// Full control: the result as it is (`isError`, `_meta`, several blocks, …).
impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        serde_json::to_value(self).map_err(|e| encoding_failed("result", e))
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        let structured =
            serde_json::to_value(&self.0).map_err(|e| encoding_failed("structured result", e))?;
        if !structured.is_object() {
            return Err(ToolError::rpc(mcp_core::jsonrpc::ErrorObject::internal(
                "the tool's structured result is not a JSON object",
            )));
        }
        // The specification asks for the same JSON as text, for clients that read only
        // content blocks.
        let text = structured.to_string();
        let mut result = match text_result(text) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        result.insert("structuredContent".into(), structured);
        Ok(Value::Object(result))
    }

    fn output_schema() -> Option<Value> {
        Some(crate::schema::output_schema_of::<T>())
    }
}

/// `Ok` is the result; `Err` fails the call (see [`ToolError`]).
impl<T: IntoToolResult, E: Into<ToolError> + Send + 'static> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(e) => Err(e.into()),
        }
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}
