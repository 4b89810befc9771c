//! The tools answered from their arguments alone: `echo` (the benchmark path: borrowed
//! arguments, one allocation), `add`, `large` and the `--extra-tool` echo.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::{parse_arguments, text_result, tool_error, MAX_LARGE_BYTES};
use crate::jsonrpc::{self, opt_str, req_number, req_str, req_u64, RpcError};
use crate::server::{Dispatch, Reply};

#[derive(Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

pub(super) fn echo(id: &RawValue, arguments: Option<&RawValue>) -> Dispatch {
    match arguments.and_then(|raw| serde_json::from_str::<EchoArgs>(raw.get()).ok()) {
        Some(args) => Dispatch::Now(Reply::Line(jsonrpc::text_result_line(id, &args.text))),
        None => {
            let error = match parse_arguments(arguments)
                .and_then(|args| req_str(&args, "text").map(drop))
            {
                Err(e) => e,
                Ok(()) => RpcError::bad_field("text", "a string"),
            };
            Dispatch::error(error)
        }
    }
}

/// An `--extra-tool NAME` call: `NAME: <text>` (no `text`: empty).
pub(super) fn extra_tool_call(name: &str, args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let text = opt_str(args, "text")?.unwrap_or_default();
    Ok(Dispatch::result(text_result(format!("{name}: {text}"))))
}

pub(super) fn add(args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let a = req_number(args, "a")?;
    let b = req_number(args, "b")?;
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => a.checked_add(b).map(Value::from),
        _ => None,
    };
    let sum = match sum {
        Some(sum) => sum,
        None => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            match serde_json::Number::from_f64(a + b) {
                Some(n) => Value::Number(n),
                None => {
                    return Ok(Dispatch::result(tool_error(
                        "the sum is not a finite number",
                    )))
                }
            }
        }
    };
    Ok(Dispatch::result(json!({
        "content": [{ "type": "text", "text": sum.to_string() }],
        "structuredContent": { "sum": sum }
    })))
}

pub(super) fn large(id: &RawValue, args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let bytes = req_u64(args, "bytes", MAX_LARGE_BYTES)?;
    let bytes = usize::try_from(bytes).map_err(|_| RpcError::bad_field("bytes", "addressable"))?;
    Ok(Dispatch::Now(Reply::Line(jsonrpc::repeated_x_result_line(
        id, bytes,
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_sums_integers_and_floats() {
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let check = |d: Dispatch, text: &str| match d {
            Dispatch::Now(Reply::Result(v)) => {
                assert_eq!(v["content"][0]["text"], text);
                assert_eq!(v["structuredContent"]["sum"].to_string(), text);
            }
            _ => panic!("unexpected dispatch"),
        };
        check(add(&args(json!({"a": 1, "b": 2}))).expect("ok"), "3");
        check(add(&args(json!({"a": 1.5, "b": 2}))).expect("ok"), "3.5");
        check(
            add(&args(json!({"a": i64::MAX, "b": 1}))).expect("ok"),
            "9.223372036854776e+18",
        );
        let err = add(&args(json!({"a": "x", "b": 2}))).err().expect("error");
        assert!(err.message.contains("`a`"));
    }
}
