//! Tool and prompt arguments from the command line: a JSON object and `--arg KEY=VALUE` pairs.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Parses the positional JSON argument of `call`: it must be a JSON object.
pub fn parse_json_object(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "expected a JSON object like '{{\"key\": \"value\"}}', found {}",
            json_type(&other)
        )),
        Err(e) => Err(format!("not valid JSON: {e}")),
    }
}

/// Splits `KEY=VALUE` at the first `=`; the key must not be empty.
pub fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.to_owned()))
        }
        Some(_) => Err("the key before '=' is empty (expected KEY=VALUE)".to_owned()),
        None => Err(format!("expected KEY=VALUE, found {text:?} (no '=')")),
    }
}

/// A number of seconds (fractions allowed), more than zero and at most a day.
pub fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 86_400.0 => Ok(std::time::Duration::from_secs_f64(secs)),
        Ok(_) => Err(format!(
            "expected seconds between 0 and 86400, found {text}"
        )),
        Err(_) => Err(format!("expected a number of seconds, found {text:?}")),
    }
}

/// A region label (`--region`): non-empty, without whitespace or control characters.
pub fn parse_region(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("expected a region label such as eu-west, found an empty string".to_owned());
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "expected a region label such as eu-west, found {text:?} (it contains whitespace)"
        ));
    }
    Ok(text.to_owned())
}

/// A model tool-list format: `anthropic`, `openai` or `mcp`.
pub fn parse_llm_format(text: &str) -> Result<mcp_client::LlmToolFormat, String> {
    mcp_client::LlmToolFormat::from_name(text)
        .ok_or_else(|| format!("expected anthropic, openai or mcp, found {text:?}"))
}

/// A `--arg` value for a tool: JSON when it parses (numbers, booleans, null, objects, arrays,
/// quoted strings), the raw text otherwise.
pub fn tool_value(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// Tool arguments: the JSON object (if any) with the `--arg` pairs applied over it, in order.
pub fn tool_arguments(json: Option<Map<String, Value>>, pairs: &[(String, String)]) -> Value {
    let mut map = json.unwrap_or_default();
    for (key, raw) in pairs {
        map.insert(key.clone(), tool_value(raw));
    }
    Value::Object(map)
}

/// Prompt arguments (always strings): `None` when there are none.
pub fn prompt_arguments(pairs: &[(String, String)]) -> Option<BTreeMap<String, String>> {
    if pairs.is_empty() {
        return None;
    }
    Some(pairs.iter().cloned().collect())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_parse_as_json_when_they_can() {
        assert_eq!(tool_value("42"), json!(42));
        assert_eq!(tool_value("-1.5"), json!(-1.5));
        assert_eq!(tool_value("true"), json!(true));
        assert_eq!(tool_value("null"), json!(null));
        assert_eq!(tool_value(r#"{"a":[1]}"#), json!({"a": [1]}));
        assert_eq!(tool_value(r#""quoted""#), json!("quoted"));
        assert_eq!(tool_value("hello world"), json!("hello world"));
        assert_eq!(tool_value(""), json!(""));
        assert_eq!(tool_value("{broken"), json!("{broken"));
    }

    #[test]
    fn key_value_splits_at_the_first_equals() {
        assert_eq!(
            parse_key_value("a=b=c").unwrap(),
            ("a".into(), "b=c".into())
        );
        assert_eq!(parse_key_value("a=").unwrap(), ("a".into(), "".into()));
        assert!(parse_key_value("a").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_key_value("=x").unwrap_err().contains("empty"));
    }

    #[test]
    fn json_must_be_an_object() {
        assert_eq!(parse_json_object(r#"{"x":1}"#).unwrap()["x"], 1);
        assert!(parse_json_object("[1]").unwrap_err().contains("an array"));
        assert!(parse_json_object("{x")
            .unwrap_err()
            .contains("not valid JSON"));
    }

    #[test]
    fn pairs_override_the_json_object() {
        let json = parse_json_object(r#"{"a":1,"b":2}"#).unwrap();
        let pairs = [
            ("b".to_owned(), "40".to_owned()),
            ("c".to_owned(), "x".to_owned()),
        ];
        assert_eq!(
            tool_arguments(Some(json), &pairs),
            json!({"a": 1, "b": 40, "c": "x"})
        );
        assert_eq!(tool_arguments(None, &[]), json!({}));
    }

    #[test]
    fn prompt_arguments_stay_strings() {
        assert_eq!(prompt_arguments(&[]), None);
        let args = prompt_arguments(&[("n".into(), "42".into())]).unwrap();
        assert_eq!(args["n"], "42");
    }
}
