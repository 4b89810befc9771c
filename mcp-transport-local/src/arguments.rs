//! A call's arguments, read into the handler's type once: borrowed from the request's JSON text
//! when it came as text, moved out of the request when it came as a value. A bad argument is an
//! invalid-params error naming the field (the path, found by reading the arguments a second
//! time with `serde_path_to_error`, only when the first read failed).

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::ToolError;

/// The `arguments` of one request, as it arrived.
pub(crate) enum Arguments<'a> {
    /// None given (an empty object for the handler).
    Absent,
    /// JSON text inside the request's parameters.
    Text(&'a RawValue),
    /// An in-memory value.
    Value(Value),
}

impl Arguments<'_> {
    /// Reads the arguments into `A`; `what` names the tool or prompt in errors.
    pub(crate) fn parse<A: DeserializeOwned>(
        self,
        what: &dyn std::fmt::Display,
    ) -> Result<A, ToolError> {
        match self {
            Arguments::Absent => parse_text("{}", what),
            Arguments::Text(raw) if raw.get() == "null" => parse_text("{}", what),
            Arguments::Text(raw) => {
                if !raw.get().starts_with('{') {
                    return Err(not_an_object(what));
                }
                parse_text(raw.get(), what)
            }
            Arguments::Value(Value::Null) => parse_text("{}", what),
            Arguments::Value(value) => {
                if !value.is_object() {
                    return Err(not_an_object(what));
                }
                // By reference first, so that on failure the value is still there to explain.
                match A::deserialize(&value) {
                    Ok(parsed) => Ok(parsed),
                    Err(_) => {
                        let explained = serde_path_to_error::deserialize::<_, A>(&value);
                        Err(explain(what, explained.err()))
                    }
                }
            }
        }
    }
}

fn parse_text<A: DeserializeOwned>(
    text: &str,
    what: &dyn std::fmt::Display,
) -> Result<A, ToolError> {
    match serde_json::from_str(text) {
        Ok(parsed) => Ok(parsed),
        Err(_) => {
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let explained = serde_path_to_error::deserialize::<_, A>(&mut deserializer);
            Err(explain(what, explained.err()))
        }
    }
}

fn not_an_object(what: &dyn std::fmt::Display) -> ToolError {
    ToolError::invalid_arguments(
        Some("arguments".to_owned()),
        format!("invalid arguments for {what}: `arguments` must be a JSON object"),
    )
}

/// An invalid-params error naming the field: the path where reading stopped, or, for a
/// missing or unknown member, that member.
fn explain<E: std::fmt::Display>(
    what: &dyn std::fmt::Display,
    error: Option<serde_path_to_error::Error<E>>,
) -> ToolError {
    let Some(error) = error else {
        return ToolError::invalid_arguments(None, format!("invalid arguments for {what}"));
    };
    let inner = error.inner().to_string();
    // serde_json appends " at line 1 column 9", which says nothing about arguments.
    let reason = match inner.rfind(" at line ") {
        Some(at) => inner[..at].to_owned(),
        None => inner.clone(),
    };
    let path = error.path().to_string();
    let parent = (path != ".").then_some(path);
    let member = named_member(&reason);
    let field = match (parent, member) {
        // An unknown member is already the path's last segment; a missing one is not.
        (Some(path), Some(member)) if path == member || path.ends_with(&format!(".{member}")) => {
            Some(path)
        }
        (Some(parent), Some(member)) => Some(format!("{parent}.{member}")),
        (None, Some(member)) => Some(member),
        (parent, None) => parent,
    };
    let message = match &field {
        Some(field) => format!("invalid arguments for {what}: field `{field}`: {reason}"),
        None => format!("invalid arguments for {what}: {reason}"),
    };
    ToolError::invalid_arguments(field, message)
}

/// The member serde names in "missing field `x`" and "unknown field `x`, expected …".
fn named_member(reason: &str) -> Option<String> {
    for lead in ["missing field `", "unknown field `"] {
        if let Some(rest) = reason.strip_prefix(lead) {
            return rest.split('`').next().map(str::to_owned);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        n: u32,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Args {
        a: f64,
        inner: Option<Inner>,
    }

    fn error_of(arguments: Arguments<'_>) -> mcp_core::jsonrpc::ErrorObject {
        arguments
            .parse::<Args>(&"tool `t`")
            .expect_err("bad arguments")
            .into_error_object()
    }

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn text_and_values_parse_alike() {
        let text = raw(r#"{"a":1.5}"#);
        let from_text: Args = Arguments::Text(&text).parse(&"t").unwrap();
        let from_value: Args = Arguments::Value(json!({"a": 1.5})).parse(&"t").unwrap();
        assert_eq!(from_text, from_value);
        assert_eq!(from_text.a, 1.5);
    }

    #[test]
    fn errors_name_the_field_in_message_and_data() {
        for (arguments, field) in [
            (json!({"a": "x"}), "a"),
            (json!({}), "a"),
            (json!({"a": 1, "b": 2}), "b"),
            (json!({"a": 1, "inner": {"n": -1}}), "inner.n"),
            (json!({"a": 1, "inner": {}}), "inner.n"),
        ] {
            let text = raw(&arguments.to_string());
            for error in [
                error_of(Arguments::Text(&text)),
                error_of(Arguments::Value(arguments.clone())),
            ] {
                assert_eq!(error.code, mcp_core::jsonrpc::codes::INVALID_PARAMS);
                assert_eq!(error.data, Some(json!({ "field": field })), "{arguments}");
                assert!(
                    error.message.contains(&format!("field `{field}`")),
                    "{}",
                    error.message
                );
                assert!(!error.message.contains("line 1"), "{}", error.message);
            }
        }
    }

    #[test]
    fn arguments_that_are_not_objects_are_refused() {
        let text = raw("[1]");
        let error = error_of(Arguments::Text(&text));
        assert!(error.message.contains("must be a JSON object"), "{error}");
        let error = error_of(Arguments::Value(json!(3)));
        assert_eq!(error.data, Some(json!({"field": "arguments"})));
    }

    #[test]
    fn absent_arguments_read_as_an_empty_object() {
        #[derive(Deserialize)]
        struct Optional {
            x: Option<u8>,
        }
        let parsed: Optional = Arguments::Absent.parse(&"t").unwrap();
        assert_eq!(parsed.x, None);
        let error = error_of(Arguments::Absent);
        assert_eq!(error.data, Some(json!({"field": "a"})));
    }
}
