//! What a tool handler may return ([`IntoToolResult`]): text, content blocks, a typed value
//! ([`Json`]: `structuredContent` plus its JSON as text, with the output schema generated), or a
//! whole [`CallToolResult`] for full control — each possibly inside a `Result`.

use mcp_core::jsonrpc::{Payload, TypedPayload};
use mcp_core::types::{CallToolResult, Content};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// A value a tool handler returns, turned into the `tools/call` result.
pub trait IntoToolResult: Send + 'static {
    /// The result, as the JSON of a [`CallToolResult`].
    fn into_tool_result(self) -> Result<Value, ToolError>;

    /// The result as the server hands it on: by default the JSON of
    /// [`into_tool_result`](IntoToolResult::into_tool_result). Results that are a
    /// [`CallToolResult`] already (text, content blocks, a whole result) override it to stay
    /// typed, so a client in the same process takes the result as it is, with no JSON between.
    /// An override must describe the same result as `into_tool_result`.
    fn into_tool_payload(self) -> Result<Payload, ToolError>
    where
        Self: Sized,
    {
        self.into_tool_result().map(Payload::Value)
    }

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

/// A result of content blocks only, kept typed.
fn typed_content(content: Vec<Content>) -> Result<Payload, ToolError> {
    Ok(Payload::Typed(TypedPayload::new(CallToolResult {
        content,
        structured_content: None,
        is_error: None,
        extra: Default::default(),
    })))
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        Ok(text_result(self))
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        typed_content(vec![Content::text(self)])
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        Ok(text_result(self.to_owned()))
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        typed_content(vec![Content::text(self)])
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

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        typed_content(vec![self])
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        let content = serde_json::to_value(self).map_err(|e| encoding_failed("content", e))?;
        let mut result = Map::new();
        result.insert("content".into(), content);
        Ok(Value::Object(result))
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        typed_content(self)
    }
}

/// Full control: the result as it is (`isError`, `_meta`, several blocks, …).
impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        serde_json::to_value(self).map_err(|e| encoding_failed("result", e))
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        Ok(Payload::Typed(TypedPayload::new(self)))
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

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        match self {
            Ok(value) => value.into_tool_payload(),
            Err(e) => Err(e.into()),
        }
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}

#[cfg(test)]
mod tests {
    use mcp_core::jsonrpc::ErrorObject;
    use serde_json::json;

    use super::*;

    /// The result's JSON.
    fn json_of(result: impl IntoToolResult) -> Value {
        result.into_tool_result().expect("a result")
    }

    fn text(text: &str) -> Value {
        json!({"content": [{"type": "text", "text": text}]})
    }

    #[test]
    fn text_results_are_one_text_block_holding_the_text_as_it_is() {
        assert_eq!(json_of("hi"), text("hi"));
        assert_eq!(json_of(String::new()), text(""));
        let awkward = "quote \" backslash \\ newline \n tab \t bell \u{7} nul \0 é 🦀";
        let written = json_of(awkward.to_owned()).to_string();
        assert_eq!(
            serde_json::from_str::<Value>(&written).unwrap(),
            text(awkward)
        );
    }

    #[test]
    fn a_typed_payload_is_the_same_result_as_its_json() {
        fn same<T: IntoToolResult>(make: impl Fn() -> T) {
            let json = make().into_tool_result().expect("a result");
            let payload = make().into_tool_payload().expect("a result");
            assert!(
                matches!(payload, Payload::Typed(_)),
                "kept typed: {payload:?}"
            );
            assert_eq!(payload.into_value().unwrap(), json);
        }
        same(|| "hi");
        same(|| String::from("quote \" é"));
        same(|| Content::text("one"));
        same(|| vec![Content::text("a"), Content::text("b")]);
        same(Vec::<Content>::new);
        same(|| Ok::<_, ToolError>("fine"));
        let whole: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "partly"}],
            "structuredContent": {"b": 1},
            "isError": true,
            "_meta": {"example.com/trace": "t-1"},
        }))
        .unwrap();
        same(|| whole.clone());
        // The rest stays JSON.
        let failed = Err::<String, _>(ToolError::failed("no"));
        assert!(failed.into_tool_payload().is_err());
        assert!(matches!(().into_tool_payload().unwrap(), Payload::Value(_)));
    }

    #[test]
    fn unit_is_a_result_without_content() {
        assert_eq!(json_of(()), json!({"content": []}));
    }

    #[test]
    fn content_blocks_are_the_result_content_as_they_are() {
        assert_eq!(json_of(Content::text("one")), text("one"));
        let image = Content::Image {
            data: "aGk=".into(),
            mime_type: "image/png".into(),
            extra: Default::default(),
        };
        assert_eq!(
            json_of(vec![Content::text("a"), image]),
            json!({"content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            ]})
        );
        assert_eq!(json_of(Vec::<Content>::new()), json!({"content": []}));
    }

    #[test]
    fn a_whole_call_tool_result_is_kept_as_it_is() {
        let shape = json!({
            "content": [{"type": "text", "text": "partly"}],
            "structuredContent": {"b": 1, "a": [true, null]},
            "isError": true,
            "_meta": {"example.com/trace": "t-1"},
        });
        let result: CallToolResult = serde_json::from_value(shape.clone()).expect("a result");
        assert_eq!(json_of(result), shape);
    }

    #[derive(Serialize, JsonSchema)]
    struct Reading {
        station: String,
        celsius: f64,
        note: Option<String>,
    }

    #[test]
    fn a_json_result_is_structured_content_and_the_same_json_as_text() {
        let reading = Reading {
            station: "Ny-Ålesund \"north\"".into(),
            celsius: -3.5,
            note: None,
        };
        // The text lists the members sorted (it is written from a `Value`).
        let as_text = r#"{"celsius":-3.5,"note":null,"station":"Ny-Ålesund \"north\""}"#;
        assert_eq!(
            json_of(Json(reading)),
            json!({
                "content": [{"type": "text", "text": as_text}],
                "structuredContent": {"station": "Ny-Ålesund \"north\"", "celsius": -3.5, "note": null},
            })
        );
    }

    #[test]
    fn a_json_result_that_is_not_an_object_fails_the_call() {
        #[derive(Serialize, JsonSchema)]
        struct Bare(u8);
        let error: ErrorObject = Json(Bare(7))
            .into_tool_result()
            .unwrap_err()
            .into_error_object();
        assert_eq!(error.code, mcp_core::jsonrpc::codes::INTERNAL_ERROR);
        assert!(error.message.contains("not a JSON object"), "{error}");
    }

    #[test]
    fn a_result_is_its_ok_value_or_its_error() {
        assert_eq!(json_of(Ok::<_, ToolError>("fine")), text("fine"));
        assert_eq!(
            <Result<Json<Reading>, ToolError>>::output_schema(),
            Json::<Reading>::output_schema()
        );
        let failed = Err::<String, _>(ToolError::failed("no luck"))
            .into_tool_result()
            .unwrap_err();
        assert_eq!(
            failed.into_tool_outcome(),
            Ok(json!({"content": [{"type": "text", "text": "no luck"}], "isError": true}))
        );
    }
}
