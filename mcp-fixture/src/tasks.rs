//! The Tasks extension (`io.modelcontextprotocol/tasks`) in the modern era: the `job` tool runs
//! as a task for a client that declares the extension on its request, and `tasks/get`,
//! `tasks/update` and `tasks/cancel` serve it. The fixture's own reading of SEP-2663,
//! independent of `mcp-core`.
//!
//! `job {duration_ms, confirm, fail, poll_interval_ms}` works for `duration_ms` (default 300).
//! With `confirm`, half way through it moves to `input_required` with one elicitation (key
//! `confirm-<task>`) and waits for `tasks/update` (at most the task's TTL); a declined
//! confirmation completes with an `isError` result. With `fail` it ends `failed` with a
//! JSON-RPC error. `tasks/cancel` stops the work at once. A client that did not declare the
//! extension gets the job run inline (no `confirm`: that needs a task, `-32021`).
//!
//! Every job is a tokio task owned by the `TaskStore`; dropping the store (with the server)
//! aborts them. Tasks are kept for the server's life (`ttlMs` is advertised, not enforced).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use crate::jsonrpc::{opt_u64, RpcError, INVALID_PARAMS};
use crate::server::{Dispatch, Reply};
use crate::tools::{text_result, tool_error};

/// The extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `MissingRequiredClientCapability`.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// How long a task is kept (`ttlMs`), and how long a job waits for its confirmation.
pub const TASK_TTL_MS: u64 = 60_000;
/// The default `pollIntervalMs`.
pub const DEFAULT_POLL_INTERVAL_MS: u64 = 50;
/// The longest job.
pub const MAX_JOB_MS: u64 = 600_000;

/// What one `job` call asks for.
#[derive(Clone, Copy)]
pub(crate) struct JobSpec {
    duration_ms: u64,
    confirm: bool,
    fail: bool,
    poll_interval_ms: u64,
}

impl JobSpec {
    pub(crate) fn parse(args: &Map<String, Value>) -> Result<JobSpec, RpcError> {
        let flag = |name: &str| match args.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(RpcError::bad_field(name, "a boolean")),
        };
        Ok(JobSpec {
            duration_ms: opt_u64(args, "duration_ms", 300, MAX_JOB_MS)?,
            confirm: flag("confirm")?,
            fail: flag("fail")?,
            poll_interval_ms: opt_u64(args, "poll_interval_ms", DEFAULT_POLL_INTERVAL_MS, 60_000)?,
        })
    }
}

/// One task.
struct Entry {
    /// The task object (`taskId`, `status`, timestamps, …, and `result` / `error` /
    /// `inputRequests` as its status carries).
    task: Map<String, Value>,
    /// The job, while it runs.
    job: Option<AbortHandle>,
    /// The input request waiting for `tasks/update`: its key and where the answer goes.
    waiting: Option<(String, oneshot::Sender<Value>)>,
}

#[derive(Default)]
struct TaskTable {
    tasks: Mutex<HashMap<String, Entry>>,
    next: AtomicU64,
}

impl TaskTable {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves a task on (unless it already ended): new status and members.
    fn set(&self, id: &str, status: &str, members: Vec<(&str, Value)>) {
        let mut tasks = self.lock();
        let Some(entry) = tasks.get_mut(id) else {
            return;
        };
        if is_terminal(&entry.task) {
            return;
        }
        entry.task.remove("inputRequests");
        entry.task.insert("status".into(), Value::from(status));
        entry
            .task
            .insert("lastUpdatedAt".into(), Value::from(now_iso8601()));
        for (key, value) in members {
            entry.task.insert(key.into(), value);
        }
        if status != "working" && status != "input_required" {
            entry.job = None;
            entry.waiting = None;
        }
    }
}

fn is_terminal(task: &Map<String, Value>) -> bool {
    matches!(
        task.get("status").and_then(Value::as_str),
        Some("completed" | "failed" | "cancelled")
    )
}

/// The server's tasks. Dropping it aborts every job still running.
#[derive(Default)]
pub(crate) struct TaskStore {
    shared: Arc<TaskTable>,
}

impl Drop for TaskStore {
    fn drop(&mut self) {
        for entry in self.shared.lock().values_mut() {
            if let Some(job) = entry.job.take() {
                job.abort();
            }
        }
    }
}

impl TaskStore {
    /// Starts `job` as a task and answers with its handle (`CreateTaskResult`). The task exists
    /// before the answer is sent, as the extension requires.
    pub(crate) fn create(&self, spec: JobSpec) -> Value {
        let n = self.shared.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("task-{n}");
        let now = now_iso8601();
        let mut task = Map::new();
        task.insert("taskId".into(), Value::from(id.clone()));
        task.insert("status".into(), Value::from("working"));
        task.insert("statusMessage".into(), Value::from("the job is running"));
        task.insert("createdAt".into(), Value::from(now.clone()));
        task.insert("lastUpdatedAt".into(), Value::from(now));
        task.insert("ttlMs".into(), Value::from(TASK_TTL_MS));
        task.insert("pollIntervalMs".into(), Value::from(spec.poll_interval_ms));
        let mut handle = task.clone();
        self.shared.lock().insert(
            id.clone(),
            Entry {
                task,
                job: None,
                waiting: None,
            },
        );
        let job = tokio::spawn(run_job(Arc::clone(&self.shared), id.clone(), spec));
        if let Some(entry) = self.shared.lock().get_mut(&id) {
            entry.job = Some(job.abort_handle());
        }
        handle.insert("resultType".into(), Value::from("task"));
        Value::Object(handle)
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let id = task_id(params)?;
        let tasks = self.shared.lock();
        let entry = tasks.get(id).ok_or_else(|| unknown_task(id))?;
        let mut task = entry.task.clone();
        task.insert("resultType".into(), Value::from("complete"));
        Ok(Value::Object(task))
    }

    /// `tasks/update`: the answer to the waiting input request; unknown or already answered
    /// keys are ignored, as the extension says.
    pub(crate) fn update(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let id = task_id(params)?;
        let responses = match params.get("inputResponses") {
            Some(Value::Object(map)) => map,
            _ => return Err(RpcError::bad_field("inputResponses", "an object")),
        };
        let mut tasks = self.shared.lock();
        let entry = tasks.get_mut(id).ok_or_else(|| unknown_task(id))?;
        let answered = match &entry.waiting {
            Some((key, _)) => responses.get(key).cloned(),
            None => None,
        };
        if let Some(answer) = answered {
            if let Some((_, reply)) = entry.waiting.take() {
                let _ = reply.send(answer);
            }
            entry.task.remove("inputRequests");
            entry.task.insert("status".into(), Value::from("working"));
            entry.task.insert(
                "statusMessage".into(),
                Value::from("confirmed; the job is running"),
            );
            entry
                .task
                .insert("lastUpdatedAt".into(), Value::from(now_iso8601()));
        }
        Ok(json!({}))
    }

    /// `tasks/cancel`: stops the job (a task that already ended stays as it ended).
    pub(crate) fn cancel(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let id = task_id(params)?;
        let job = {
            let mut tasks = self.shared.lock();
            let entry = tasks.get_mut(id).ok_or_else(|| unknown_task(id))?;
            entry.job.take()
        };
        if let Some(job) = job {
            job.abort();
        }
        self.shared.set(
            id,
            "cancelled",
            vec![("statusMessage", Value::from("cancelled by the client"))],
        );
        Ok(json!({}))
    }
}

/// The job, run inline for a client without the extension.
pub(crate) fn run_inline(spec: JobSpec) -> Dispatch {
    if spec.confirm {
        return Dispatch::error(
            RpcError::new(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability: a confirmed job runs as a task",
            )
            .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})),
        );
    }
    Dispatch::Later(Box::pin(async move {
        tokio::time::sleep(Duration::from_millis(spec.duration_ms)).await;
        if spec.fail {
            return Reply::Error(RpcError::new(
                crate::jsonrpc::INTERNAL_ERROR,
                "the job failed, as asked",
            ));
        }
        Reply::Result(text_result(format!(
            "job done after {} ms",
            spec.duration_ms
        )))
    }))
}

async fn run_job(shared: Arc<TaskTable>, id: String, spec: JobSpec) {
    let half = Duration::from_millis(spec.duration_ms / 2);
    tokio::time::sleep(half).await;
    let mut confirmed = String::new();
    if spec.confirm {
        let key = format!("confirm-{id}");
        let (reply, answer) = oneshot::channel();
        let request = json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": format!("Go on with {id}?"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean", "default": true}},
                    "required": ["confirm"]
                }
            }
        });
        // One critical section: a `tasks/update` must never see the request without its
        // answer slot.
        {
            let mut requests = Map::new();
            requests.insert(key.clone(), request);
            let mut tasks = shared.lock();
            let Some(entry) = tasks.get_mut(&id) else {
                return;
            };
            if is_terminal(&entry.task) {
                return;
            }
            entry
                .task
                .insert("status".into(), Value::from("input_required"));
            entry
                .task
                .insert("inputRequests".into(), Value::Object(requests));
            entry.task.insert(
                "statusMessage".into(),
                Value::from("waiting for confirmation"),
            );
            entry
                .task
                .insert("lastUpdatedAt".into(), Value::from(now_iso8601()));
            entry.waiting = Some((key, reply));
        }
        let answer = match tokio::time::timeout(Duration::from_millis(TASK_TTL_MS), answer).await {
            Ok(Ok(answer)) => answer,
            _ => {
                shared.set(
                    &id,
                    "failed",
                    vec![
                        (
                            "error",
                            json!({"code": crate::jsonrpc::INTERNAL_ERROR, "message": "no confirmation arrived"}),
                        ),
                        ("statusMessage", Value::from("no confirmation arrived")),
                    ],
                );
                return;
            }
        };
        let action = answer.get("action").and_then(Value::as_str).unwrap_or("");
        if action != "accept" {
            shared.set(
                &id,
                "completed",
                vec![
                    (
                        "result",
                        tool_error(format!("the job was not confirmed ({action:?})")),
                    ),
                    ("statusMessage", Value::from("not confirmed")),
                ],
            );
            return;
        }
        confirmed = format!(
            " (confirmed: {})",
            answer.get("content").unwrap_or(&Value::Null)
        );
    }
    tokio::time::sleep(Duration::from_millis(spec.duration_ms) - half).await;
    if spec.fail {
        shared.set(
            &id,
            "failed",
            vec![
                (
                    "error",
                    json!({"code": crate::jsonrpc::INTERNAL_ERROR, "message": "the job failed, as asked"}),
                ),
                ("statusMessage", Value::from("failed")),
            ],
        );
        return;
    }
    shared.set(
        &id,
        "completed",
        vec![
            (
                "result",
                text_result(format!("job done after {} ms{confirmed}", spec.duration_ms)),
            ),
            ("statusMessage", Value::from("done")),
        ],
    );
}

fn task_id(params: &Map<String, Value>) -> Result<&str, RpcError> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::bad_field("taskId", "a string"))
}

fn unknown_task(id: &str) -> RpcError {
    RpcError::new(INVALID_PARAMS, format!("Unknown task: {id}"))
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
fn now_iso8601() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso8601_utc() {
        let now = now_iso8601();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
        let year: u32 = now[..4].parse().unwrap();
        assert!(year >= 2026, "{now}");
    }
}
