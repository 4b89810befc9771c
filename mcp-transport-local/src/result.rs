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

/// A result of content blocks only.
fn content_result(content: Vec<Content>) -> Result<Payload, ToolError> {
    kept(CallToolResult {
        content,
        structured_content: None,
        is_error: None,
        extra: Default::default(),
    })
}

/// The result kept typed when it is what reading its own JSON would give (the client takes it
/// as it is, without that reading: `TypedPayload::new`); otherwise its JSON.
fn kept(result: CallToolResult) -> Result<Payload, ToolError> {
    if reads_back_as_itself(&result) {
        Ok(Payload::Typed(TypedPayload::new(result)))
    } else {
        serde_json::to_value(result)
            .map(Payload::Value)
            .map_err(|e| encoding_failed("result", e))
    }
}

/// Whether reading `result`'s JSON gives `result` again. Conservative: text blocks only, and no
/// unknown member that a known one would take (or that would make it more than a complete
/// result: `resultType`); a null `structuredContent` reads back as none.
fn reads_back_as_itself(result: &CallToolResult) -> bool {
    const RESULT_MEMBERS: [&str; 4] = ["content", "structuredContent", "isError", "resultType"];
    RESULT_MEMBERS
        .iter()
        .all(|m| !result.extra.contains_key(*m))
        && result.structured_content != Some(Value::Null)
        && result.content.iter().all(|block| {
            matches!(block, Content::Text { extra, .. }
                if !extra.contains_key("type") && !extra.contains_key("text"))
        })
}

/// The JSON of a result that [`IntoToolResult::into_tool_payload`] builds.
fn json_of_payload(payload: Result<Payload, ToolError>) -> Result<Value, ToolError> {
    payload?
        .into_value()
        .map_err(|e| encoding_failed("result", e))
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        json_of_payload(self.into_tool_payload())
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        content_result(vec![Content::text(self)])
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        json_of_payload(self.into_tool_payload())
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        content_result(vec![Content::text(self)])
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
        json_of_payload(self.into_tool_payload())
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        content_result(vec![self])
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        json_of_payload(self.into_tool_payload())
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        content_result(self)
    }
}

/// Full control: the result as it is (`isError`, `_meta`, several blocks, …).
impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        serde_json::to_value(self).map_err(|e| encoding_failed("result", e))
    }

    fn into_tool_payload(self) -> Result<Payload, ToolError> {
        kept(self)
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

    /// Kept typed or not, the caller gets what reading the JSON gives.
    fn reads_as_json(payload: Payload, json: &Value) {
        let expected: CallToolResult = serde_json::from_value(json.clone()).expect("a result");
        assert_eq!(payload.into_typed::<CallToolResult>().unwrap(), expected);
    }

    #[test]
    fn a_typed_payload_is_the_result_its_json_reads_as() {
        fn kept<T: IntoToolResult>(make: impl Fn() -> T) {
            let json = make().into_tool_result().expect("a result");
            let payload = make().into_tool_payload().expect("a result");
            assert!(
                matches!(payload, Payload::Typed(_)),
                "kept typed: {payload:?}"
            );
            reads_as_json(payload, &json);
        }
        kept(|| "hi");
        kept(|| String::from("quote \" é"));
        kept(|| Content::text("one"));
        kept(|| vec![Content::text("a"), Content::text("b")]);
        kept(Vec::<Content>::new);
        kept(|| Ok::<_, ToolError>("fine"));
        let whole = || -> CallToolResult {
            serde_json::from_value(json!({
                "content": [{"type": "text", "text": "partly"}],
                "structuredContent": {"b": 1},
                "isError": true,
                "_meta": {"example.com/trace": "t-1"},
            }))
            .unwrap()
        };
        kept(whole);
    }

    #[test]
    fn a_result_that_would_read_back_differently_goes_as_json() {
        let text = || Content::text("t");
        let with_extra = |key: &str, value: Value| {
            let mut result = CallToolResult {
                content: vec![text()],
                structured_content: None,
                is_error: None,
                extra: Default::default(),
            };
            result.extra.insert(key.into(), value);
            result
        };
        let mut cases = vec![
            with_extra("isError", json!(true)),
            with_extra("resultType", json!("input_required")),
            with_extra("content", json!([])),
            CallToolResult {
                structured_content: Some(Value::Null),
                ..with_extra("_meta", json!({}))
            },
            CallToolResult {
                content: vec![Content::Other(json!({"type": "text", "text": "x"}))],
                ..with_extra("_meta", json!({}))
            },
        ];
        let image = Content::Image {
            data: "aGk=".into(),
            mime_type: "image/png".into(),
            extra: Default::default(),
        };
        cases.push(CallToolResult {
            content: vec![image],
            ..with_extra("_meta", json!({}))
        });
        for result in cases {
            let json = result.clone().into_tool_result().expect("a result");
            let payload = result.into_tool_payload().expect("a result");
            assert!(matches!(payload, Payload::Value(_)), "{payload:?}");
            // Its JSON is what `into_tool_result` gives (duplicate members resolved as JSON
            // does).
            assert_eq!(payload.into_value().unwrap(), json);
        }
        // Failures and empty results stay JSON too.
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
