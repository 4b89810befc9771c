//! The tool catalog (`tools/list`) and the tool implementations (`tools/call`).
//!
//! Here: the names, the `tools/call` entry point (its params, dispatch by name) and the result
//! builders. The catalog is in `catalog.rs`; the tools, by theme, in `plain.rs` (answered from
//! the arguments alone), `timed.rs` (`slow`, `record`), `faults.rs` (`fail`, `crash`),
//! `notifying.rs` (list changes, resource updates, log messages) and `ask.rs` (server→client
//! requests).
//!
//! `echo` is the benchmark tool: its arguments are deserialised borrowed from
//! the input line and the response line is written in one allocation.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::jsonrpc::{self, params_object, req_str, RpcError};
use crate::server::{Dispatch, FixtureServer};

mod ask;
mod catalog;
mod faults;
mod notifying;
mod plain;
mod timed;

pub(crate) use catalog::list;
pub(crate) use notifying::churn;
pub(crate) use timed::SlowCalls;

use ask::{ask, ask_elicitation, ask_sampling};
use faults::{crash, fail};
use notifying::{bump_resource, log, trigger_list_changed};
use plain::{add, echo, extra_tool_call, large};
use timed::{record, slow};

/// Largest output of the `large` tool: 64 MiB.
pub const MAX_LARGE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest `duration_ms` accepted by `slow` (one hour).
pub const MAX_SLOW_DURATION_MS: u64 = 3_600_000;
/// Largest `steps` accepted by `slow`.
pub const MAX_SLOW_STEPS: u64 = 10_000;

/// Names of the always-present tools, in `tools/list` order.
pub const TOOL_NAMES: &[&str] = &[
    "echo",
    "add",
    "slow",
    "fail",
    "crash",
    "trigger_list_changed",
    "bump_resource",
    "large",
    "ask_roots",
    "ask_sampling",
    "ask_elicitation",
    "log",
    "record",
    "job",
    "slow_stats",
];

/// Name of the tool toggled by `trigger_list_changed`.
pub const DYNAMIC_TOOL: &str = "dynamic_tool";

/// Name of the tool listed with `--instance LABEL` (answers LABEL).
pub const INSTANCE_TOOL: &str = "instance";

/// Whether `name` is a built-in tool's: always present, toggled, listed with `--instance` or
/// with `--conformance-content`.
pub fn is_built_in(name: &str) -> bool {
    TOOL_NAMES.contains(&name)
        || name == DYNAMIC_TOOL
        || name == INSTANCE_TOOL
        || crate::conformance::is_tool(name)
}

/// `tools/call` params, borrowed from the input line.
#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "jsonrpc::present")]
    arguments: Option<&'a RawValue>,
    #[serde(
        rename = "_meta",
        default,
        borrow,
        deserialize_with = "jsonrpc::present"
    )]
    meta: Option<&'a RawValue>,
}

/// A successful tool result with one text item.
pub(crate) fn text_result(text: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": text.into() }] })
}

/// A tool-level error result (`isError: true`) with one text item.
pub(crate) fn tool_error(text: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": text.into() }], "isError": true })
}

/// Explains why `tools/call` params failed to deserialise, naming the field.
fn explain_call_params(params: Option<&RawValue>) -> RpcError {
    let map = match params_object(params) {
        Ok(map) => map,
        Err(e) => return e,
    };
    if let Err(e) = req_str(&map, "name") {
        return e;
    }
    match map.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return RpcError::bad_field("arguments", "an object"),
    }
    match map.get("_meta") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return RpcError::bad_field("_meta", "an object"),
    }
    RpcError::invalid_params("Invalid params for tools/call")
}

pub(super) fn parse_arguments(raw: Option<&RawValue>) -> Result<Map<String, Value>, RpcError> {
    let Some(raw) = raw else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        _ => Err(RpcError::bad_field("arguments", "an object")),
    }
}

/// `tools/call`.
///
/// `tasks`: the request declares the Tasks extension (then `job` runs as a task).
pub(crate) fn call(
    server: &FixtureServer,
    id: &RawValue,
    params: Option<&RawValue>,
    tasks: bool,
) -> Dispatch {
    let parsed = params.and_then(|raw| serde_json::from_str::<CallParams>(raw.get()).ok());
    let Some(call) = parsed else {
        return Dispatch::error(explain_call_params(params));
    };
    if call.name == "echo" {
        return echo(id, call.arguments);
    }
    let args = match parse_arguments(call.arguments) {
        Ok(args) => args,
        Err(e) => return Dispatch::error(e),
    };
    let outcome = match &*call.name {
        "add" => add(&args),
        "slow" => slow(server, &args, call.meta),
        "fail" => fail(server, &args),
        "record" => record(&args),
        "crash" => crash(&args),
        "trigger_list_changed" => trigger_list_changed(server, &args),
        "bump_resource" => Ok(bump_resource(server)),
        "large" => large(id, &args),
        "ask_roots" => Ok(ask(server, "roots/list", json!({}))),
        "ask_sampling" => ask_sampling(server, &args),
        "ask_elicitation" => ask_elicitation(server, &args),
        "log" => log(server, &args),
        "slow_stats" => Ok(Dispatch::result(text_result(
            server.slow_calls().snapshot().to_string(),
        ))),
        "job" => crate::tasks::JobSpec::parse(&args).map(|spec| {
            if tasks {
                Dispatch::result(server.tasks().create(spec))
            } else {
                crate::tasks::run_inline(spec)
            }
        }),
        DYNAMIC_TOOL if server.dynamic_tool_present() => {
            Ok(Dispatch::result(text_result("dynamic")))
        }
        INSTANCE_TOOL if server.options().instance.is_some() => Ok(Dispatch::result(text_result(
            server.options().instance.as_deref().unwrap_or_default(),
        ))),
        name if server.options().extra_tools.iter().any(|t| t == name) => {
            extra_tool_call(name, &args)
        }
        name if server.options().conformance_content && crate::conformance::is_tool(name) => {
            crate::conformance::call_tool(server, name, &args, call.meta, params)
        }
        other => Err(RpcError::invalid_params(format!("Unknown tool: {other}"))),
    };
    outcome.unwrap_or_else(Dispatch::error)
}
