//! The conformance prompts and the completions of `test_prompt_with_arguments`' `arg1`.

use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::input_required;
use super::media::image_content;
use crate::jsonrpc::{params_object, req_str, RpcError};

/// Completions offered for `arg1` (filtered by the typed prefix).
const ARG1_VALUES: &[&str] = &["paris", "park", "party"];

/// The prompt definitions (`prompts/list`), built once, in [`super::PROMPT_NAMES`] order.
pub(crate) fn list() -> &'static [Value] {
    static PROMPTS: OnceLock<Vec<Value>> = OnceLock::new();
    PROMPTS.get_or_init(|| {
        vec![
            json!({
                "name": "test_simple_prompt",
                "description": "A simple prompt without arguments.",
                "arguments": []
            }),
            json!({
                "name": "test_prompt_with_arguments",
                "description": "A prompt with two required arguments.",
                "arguments": [
                    { "name": "arg1", "description": "First test argument", "required": true },
                    { "name": "arg2", "description": "Second test argument", "required": true }
                ]
            }),
            json!({
                "name": "test_prompt_with_embedded_resource",
                "description": "A prompt that embeds a resource.",
                "arguments": [
                    { "name": "resourceUri", "description": "URI of the resource to embed", "required": true }
                ]
            }),
            json!({
                "name": "test_prompt_with_image",
                "description": "A prompt with an image.",
                "arguments": []
            }),
            input_required::prompt(),
        ]
    })
}

fn user(content: Value) -> Value {
    json!({ "role": "user", "content": content })
}

fn text(text: impl Into<String>) -> Value {
    json!({ "type": "text", "text": text.into() })
}

/// `prompts/get` of a conformance prompt; `None` when `name` is not one.
pub(crate) fn get(name: &str, params: Option<&RawValue>) -> Option<Result<Value, RpcError>> {
    let arguments = || -> Result<Map<String, Value>, RpcError> {
        match params_object(params)?.remove("arguments") {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(map)) => Ok(map),
            Some(_) => Err(RpcError::bad_field("arguments", "an object")),
        }
    };
    let result = match name {
        "test_simple_prompt" => Ok(json!({
            "messages": [user(text("This is a simple prompt for testing."))]
        })),
        "test_prompt_with_arguments" => arguments().and_then(|args| {
            let arg1 = req_str(&args, "arg1")?;
            let arg2 = req_str(&args, "arg2")?;
            Ok(json!({
                "messages": [user(text(format!(
                    "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                )))]
            }))
        }),
        "test_prompt_with_embedded_resource" => arguments().and_then(|args| {
            let uri = req_str(&args, "resourceUri")?;
            Ok(json!({
                "messages": [
                    user(json!({
                        "type": "resource",
                        "resource": {
                            "uri": uri,
                            "mimeType": "text/plain",
                            "text": "Embedded resource content for testing."
                        }
                    })),
                    user(text("Please process the embedded resource above."))
                ]
            }))
        }),
        "test_prompt_with_image" => Ok(json!({
            "messages": [user(image_content()), user(text("Please analyze the image above."))]
        })),
        input_required::PROMPT => input_required::get_prompt(params),
        _ => return None,
    };
    Some(result)
}

/// The completion candidates of argument `argument` of prompt `prompt`; `None` when the
/// prompt is not a conformance prompt.
pub(crate) fn complete(prompt: &str, argument: &str) -> Option<&'static [&'static str]> {
    if !list().iter().any(|p| p["name"] == prompt) {
        return None;
    }
    Some(match (prompt, argument) {
        ("test_prompt_with_arguments", "arg1") => ARG1_VALUES,
        _ => &[],
    })
}
