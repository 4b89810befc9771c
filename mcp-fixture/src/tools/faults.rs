//! The tools that fail on purpose: `fail` (the first N calls, as a tool error or a JSON-RPC
//! error) and `crash` (the process exits without answering).

use serde_json::{Map, Value};

use super::{text_result, tool_error};
use crate::jsonrpc::{opt_str, RpcError, INTERNAL_ERROR};
use crate::server::{Dispatch, FixtureServer};

pub(super) fn fail(
    server: &FixtureServer,
    args: &Map<String, Value>,
) -> Result<Dispatch, RpcError> {
    let protocol = match opt_str(args, "mode")? {
        None | Some("tool") => false,
        Some("protocol") => true,
        Some(_) => return Err(RpcError::bad_field("mode", "\"tool\" or \"protocol\"")),
    };
    let n = server.options().fail_first;
    let k = server.next_fail_call();
    if k > n {
        return Ok(Dispatch::result(text_result(format!(
            "ok after {n} failures"
        ))));
    }
    let message = format!("failure {k} of {n}");
    Ok(if protocol {
        Dispatch::error(RpcError::new(INTERNAL_ERROR, message))
    } else {
        Dispatch::result(tool_error(message))
    })
}

pub(super) fn crash(args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let code = match args.get("exit_code") {
        None | Some(Value::Null) => 1,
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())
            .ok_or_else(|| RpcError::bad_field("exit_code", "a 32-bit integer"))?,
        Some(_) => return Err(RpcError::bad_field("exit_code", "an integer")),
    };
    eprintln!("fixture server crashing on purpose");
    std::process::exit(code);
}
