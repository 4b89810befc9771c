//! The Tasks extension end to end against the fixture server over stdio (`--era dual`, its
//! `job` tool), through a session wrapped in the follower: a `tools/call` the server runs as a
//! task is followed to its result, input requests reach the handler once, failures and
//! cancellations are errors, a task past the call's deadline is cancelled, and a client that
//! does not declare the extension never sees a task.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::types::{ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_core::{ErrorKind, ErrorObject, Layer, McpServiceExt, RequestOptions};
use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use mcp_tasks::{
    FollowTasksLayer, TaskFollower, TaskStatus, TasksExt, ToolCallOutcome, TASKS_EXTENSION,
};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
use serde_json::json;

/// Generous deadline for anything a test waits on.
const DEADLINE: Duration = Duration::from_secs(20);

fn fixture(args: &[&str]) -> StdioServerConfig {
    StdioServerConfig::new(mcp_testkit::fixture_server_bin())
        .args(args)
        .shutdown_grace(Duration::from_millis(300))
}

/// A session to the fixture, behind a follower with the same handler and options.
async fn connect_with(
    args: &[&str],
    handler: Arc<dyn ClientHandler>,
    options: SessionOptions,
) -> TaskFollower<ClientSession> {
    let transport = StdioTransport::spawn(fixture(args)).expect("spawns");
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect_shared(transport, handler.clone(), options.clone()),
    )
    .await
    .expect("connect finished in time")
    .expect("connects");
    FollowTasksLayer::new(handler, &options).layer(session)
}

async fn connect(args: &[&str]) -> TaskFollower<ClientSession> {
    connect_with(
        args,
        Arc::new(()),
        SessionOptions::default().with_tasks(true),
    )
    .await
}

/// Confirms every elicitation (`{"confirm": true}`) and counts them.
#[derive(Default, Clone)]
struct Confirm(Arc<AtomicUsize>);

#[async_trait]
impl ClientHandler for Confirm {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({ "form": {} })),
            ..Default::default()
        }
    }

    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({ "confirm": true }).as_object().cloned(),
        })
    }
}

#[tokio::test]
async fn a_tool_call_run_as_a_task_is_followed_to_its_result() {
    let session = connect(&["--era", "dual"]).await;
    assert_eq!(session.inner().era(), mcp_core::Era::Modern);
    assert!(session
        .inner()
        .server_info()
        .capabilities
        .extension(TASKS_EXTENSION)
        .is_some());
    let result = session
        .call_tool(
            "job",
            Some(json!({"duration_ms": 150})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(result.text(), "job done after 150 ms");
    assert_ne!(result.is_error, Some(true));
    session.inner().close().await;
}

#[tokio::test]
async fn the_task_handle_can_be_held_polled_and_waited_for() {
    let session = connect(&["--era", "dual"]).await;
    let outcome = session
        .call_tool_as_task(
            "job",
            Some(json!({"duration_ms": 200, "poll_interval_ms": 30})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    let ToolCallOutcome::Task(task) = outcome else {
        panic!("expected a task, got {outcome:?}");
    };
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.poll_interval_ms, Some(30));
    assert!(task.created_at.is_some() && task.ttl_ms.is_some());
    let now = session
        .get_task(&task.task_id, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(now.task_id, task.task_id);
    let ended = session
        .wait_for_task(&task.task_id, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(ended.status, TaskStatus::Completed);
    assert_eq!(
        ended.into_tool_result().unwrap().text(),
        "job done after 200 ms"
    );
    // A quick tool is never a task.
    let outcome = session
        .call_tool_as_task("echo", Some(json!({"text": "now"})), RequestOptions::new())
        .await
        .unwrap();
    assert!(matches!(outcome, ToolCallOutcome::Completed(r) if r.text() == "now"));
    let err = session
        .get_task("no-such-task", RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams, "{err}");
    session.inner().close().await;
}

#[tokio::test]
async fn a_task_asking_for_input_is_answered_through_the_handler_once() {
    let handler = Confirm::default();
    let session = connect_with(
        &["--era", "dual"],
        Arc::new(handler.clone()),
        SessionOptions::default().with_tasks(true),
    )
    .await;
    let result = session
        .call_tool(
            "job",
            Some(json!({"duration_ms": 100, "confirm": true, "poll_interval_ms": 20})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        result.text(),
        "job done after 100 ms (confirmed: {\"confirm\":true})"
    );
    assert_eq!(handler.0.load(Ordering::SeqCst), 1);
    session.inner().close().await;
}

#[tokio::test]
async fn failed_and_cancelled_tasks_are_errors() {
    let session = connect(&["--era", "dual"]).await;
    let err = session
        .call_tool(
            "job",
            Some(json!({"duration_ms": 50, "fail": true})),
            RequestOptions::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32603), "{err}");
    assert!(err.message().contains("the job failed, as asked"), "{err}");

    let ToolCallOutcome::Task(task) = session
        .call_tool_as_task(
            "job",
            Some(json!({"duration_ms": 60_000})),
            RequestOptions::new(),
        )
        .await
        .unwrap()
    else {
        panic!("expected a task");
    };
    session
        .cancel_task(&task.task_id, RequestOptions::new())
        .await
        .unwrap();
    let ended = session
        .wait_for_task(&task.task_id, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(ended.status, TaskStatus::Cancelled);
    let err = ended.into_tool_result().unwrap_err();
    assert!(err.message().contains("cancelled"), "{err}");
    session.inner().close().await;
}

/// The call's one deadline covers the whole task; past it the call fails and the server is
/// asked to cancel the task, which nobody else knows about.
#[tokio::test]
async fn a_task_past_the_calls_deadline_is_cancelled() {
    let session = connect(&["--era", "dual"]).await;
    let err = session
        .call_tool(
            "job",
            Some(json!({"duration_ms": 60_000})),
            RequestOptions::new().with_timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.message().contains("task-1"), "{err}");
    // The fixture numbers its tasks; the cancellation is queued: wait until it arrived.
    let status = || async {
        session
            .get_task("task-1", RequestOptions::new())
            .await
            .unwrap()
            .status
    };
    mcp_testkit::wait::until_async("task-1 stops working", DEADLINE, || async {
        match status().await {
            TaskStatus::Working => Err("task-1 is still working".to_owned()),
            _ => Ok(()),
        }
    })
    .await;
    assert_eq!(status().await, TaskStatus::Cancelled);
    session.inner().close().await;
}

/// Without the extension (a session that does not declare it, or a legacy server) the same
/// tool runs inline; a job that can only run as a task is refused with -32021.
#[tokio::test]
async fn without_the_extension_no_task_is_ever_returned() {
    let session = connect_with(
        &["--era", "dual"],
        Arc::new(()),
        SessionOptions::default().with_tasks(false),
    )
    .await;
    let outcome = session
        .call_tool_as_task(
            "job",
            Some(json!({"duration_ms": 20})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert!(matches!(outcome, ToolCallOutcome::Completed(r) if r.text() == "job done after 20 ms"));
    let err = session
        .call_tool("job", Some(json!({"confirm": true})), RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32021), "{err}");
    session.inner().close().await;

    let session = connect(&[]).await;
    assert_eq!(session.inner().era(), mcp_core::Era::Legacy);
    let result = session
        .call_tool(
            "job",
            Some(json!({"duration_ms": 20})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(result.text(), "job done after 20 ms");
    session.inner().close().await;
}
