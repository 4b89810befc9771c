//! The tools whose effect is a notification: list changes (`trigger_list_changed`, and the
//! `--churn-every-ms` tick), resource updates (`bump_resource`) and log messages (`log`).

use serde_json::{json, Map, Value};

use super::text_result;
use crate::jsonrpc::{opt_str, opt_u64, req_str, RpcError};
use crate::server::{Dispatch, FixtureServer, LogLevel};

pub(super) fn trigger_list_changed(
    server: &FixtureServer,
    args: &Map<String, Value>,
) -> Result<Dispatch, RpcError> {
    let times = opt_u64(args, "times", 1, 100)?.max(1);
    let (present, notification, what) = match opt_str(args, "list")?.unwrap_or("tools") {
        "tools" => (
            server.toggle_dynamic_tool(),
            "notifications/tools/list_changed",
            "tools changed; dynamic_tool",
        ),
        "resources" => (
            server.toggle_dynamic_resource(),
            "notifications/resources/list_changed",
            "resources changed; fixture://dynamic",
        ),
        _ => return Err(RpcError::bad_field("list", "\"tools\" or \"resources\"")),
    };
    for _ in 0..times {
        server.notify(notification, &json!({}));
    }
    Ok(Dispatch::result(text_result(format!(
        "{what} present: {present}"
    ))))
}

/// One `--churn-every-ms` tick: the tool list changes and the counter is bumped.
pub(crate) fn churn(server: &FixtureServer) {
    server.toggle_dynamic_tool();
    server.notify("notifications/tools/list_changed", &json!({}));
    bump_resource(server);
}

pub(super) fn bump_resource(server: &FixtureServer) -> Dispatch {
    let value = server.bump_counter();
    if server.is_subscribed(crate::resources::COUNTER_URI) {
        server.notify(
            "notifications/resources/updated",
            &json!({ "uri": crate::resources::COUNTER_URI }),
        );
    }
    Dispatch::result(text_result(value.to_string()))
}

pub(super) fn log(server: &FixtureServer, args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let level_name = req_str(args, "level")?;
    let level = LogLevel::parse(level_name).ok_or_else(|| {
        RpcError::bad_field(
            "level",
            "one of debug, info, notice, warning, error, critical, alert, emergency",
        )
    })?;
    let message = req_str(args, "message")?;
    if server.log_enabled(level) {
        server.notify(
            "notifications/message",
            &json!({ "level": level.as_str(), "logger": "fixture", "data": message }),
        );
    }
    Ok(Dispatch::result(text_result("logged")))
}
