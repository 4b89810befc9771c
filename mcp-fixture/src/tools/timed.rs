//! The tools that take time: `slow` (progress notifications, cancellable, counted for
//! `slow_stats`) and `record` (a side effect, answered after a delay).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::{text_result, MAX_SLOW_DURATION_MS, MAX_SLOW_STEPS};
use crate::jsonrpc::{opt_u64, RpcError};
use crate::server::{Dispatch, FixtureServer, Reply};

pub(super) fn slow(
    server: &FixtureServer,
    args: &Map<String, Value>,
    meta: Option<&RawValue>,
) -> Result<Dispatch, RpcError> {
    let duration_ms = opt_u64(args, "duration_ms", 1000, MAX_SLOW_DURATION_MS)?;
    let steps = opt_u64(args, "steps", 5, MAX_SLOW_STEPS)?;
    let token = match meta {
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(mut meta)) => match meta.remove("progressToken") {
                None | Some(Value::Null) => None,
                Some(token @ (Value::String(_) | Value::Number(_))) => Some(token),
                Some(_) => {
                    return Err(RpcError::bad_field(
                        "_meta.progressToken",
                        "a string or an integer",
                    ))
                }
            },
            Ok(Value::Null) => None,
            _ => return Err(RpcError::bad_field("_meta", "an object")),
        },
        None => None,
    };
    let server = server.clone();
    let total = Duration::from_millis(duration_ms);
    // Counted from the moment the request is handled until the call ends or is cancelled
    // (the future, and the guard with it, is dropped).
    let running = server.slow_calls().start(server.clone());
    Ok(Dispatch::Later(Box::pin(async move {
        let _running = running;
        // `steps` is at most MAX_SLOW_STEPS, so it fits in u32.
        let step_count = u32::try_from(steps).unwrap_or(u32::MAX);
        if step_count == 0 {
            tokio::time::sleep(total).await;
        }
        let per_step = total.checked_div(step_count).unwrap_or(total);
        for i in 1..=steps {
            tokio::time::sleep(per_step).await;
            if let Some(token) = &token {
                server.notify(
                    "notifications/progress",
                    &json!({
                        "progressToken": token,
                        "progress": i,
                        "total": steps,
                        "message": format!("step {i} of {steps}")
                    }),
                );
            }
        }
        Reply::Result(text_result(format!("done after {steps} steps")))
    })))
}

/// The server's count of its `slow` calls, which the `slow_stats` tool answers.
#[derive(Debug, Default)]
pub(crate) struct SlowCalls {
    started: AtomicU64,
    running: AtomicU64,
    max_running: AtomicU64,
}

impl SlowCalls {
    /// Counts one more call, running until the returned guard is dropped.
    fn start(&self, server: FixtureServer) -> RunningSlowCall {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        RunningSlowCall(server)
    }

    /// `{started, running, max_running}`.
    pub(super) fn snapshot(&self) -> Value {
        json!({
            "started": self.started.load(Ordering::SeqCst),
            "running": self.running.load(Ordering::SeqCst),
            "max_running": self.max_running.load(Ordering::SeqCst),
        })
    }
}

/// One running `slow` call; no longer running when dropped.
struct RunningSlowCall(FixtureServer);

impl Drop for RunningSlowCall {
    fn drop(&mut self) {
        self.0.slow_calls().running.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(super) fn record(args: &Map<String, Value>) -> Result<Dispatch, RpcError> {
    let call_id = match args.get("call_id") {
        Some(Value::String(id)) => id.clone(),
        _ => return Err(RpcError::bad_field("call_id", "a string")),
    };
    let delay_ms = opt_u64(args, "delay_ms", 0, MAX_SLOW_DURATION_MS)?;
    let reply = text_result(format!("recorded {call_id}"));
    if delay_ms == 0 {
        return Ok(Dispatch::result(reply));
    }
    Ok(Dispatch::Later(Box::pin(async move {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        Reply::Result(reply)
    })))
}
