//! The follower and `TasksExt` around a real session, against a scripted modern server over
//! `ChannelTransport` (the session tests' pattern): following, input requests answered once,
//! the poll interval's bounds, the last look, cancellation of abandoned tasks (deadline, error,
//! a dropped call), waits that leave the task running, protocol errors, delivery marks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::time::Instant;

use mcp_core::jsonrpc::{ErrorObject, Message, Payload, Request, RequestId, Response};
use mcp_core::types::{
    CallToolResult, ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult,
};
use mcp_core::{Delivery, ErrorKind, Layer, McpServiceExt, Operation, RequestOptions};
use mcp_session::{ChannelTransport, ClientHandler, ClientSession, ServerEnd, SessionOptions};

use crate::{
    FollowTasksLayer, TaskFollower, TaskStatus, TasksExt, ToolCallOutcome, MAX_POLL, MIN_POLL,
};

/// How long the scripted server waits for the client's next message.
const STEP: Duration = Duration::from_secs(5);

struct Server {
    end: ServerEnd,
}

impl Server {
    async fn next_within(&mut self, limit: Duration) -> Message {
        tokio::time::timeout(limit, self.end.incoming.recv())
            .await
            .expect("the client sent nothing in time")
            .expect("the client closed the connection")
    }

    async fn request(&mut self, method: &str) -> Request {
        self.request_within(method, STEP).await
    }

    async fn request_within(&mut self, method: &str, limit: Duration) -> Request {
        match self.next_within(limit).await {
            Message::Request(r) if r.method == method => r,
            other => panic!("expected a {method} request, got {other:?}"),
        }
    }

    /// The next request, past any notifications (a dropped call's `notifications/cancelled`).
    async fn next_request(&mut self) -> Request {
        loop {
            match self.next_within(STEP).await {
                Message::Request(r) => return r,
                Message::Notification(_) => {}
                other => panic!("expected a request, got {other:?}"),
            }
        }
    }

    async fn respond(&self, id: RequestId, result: Value) {
        self.end
            .outgoing
            .send(Response::success(id, Payload::Value(result)).into())
            .await
            .expect("client gone");
    }

    /// Answers the probe as a modern server with `capabilities`.
    async fn discover(&mut self, capabilities: Value) {
        let probe = self.request("server/discover").await;
        self.respond(
            probe.id.clone(),
            json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": capabilities,
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tasks", "version": "1.0"}}
            }),
        )
        .await;
    }

    /// Answers the `tools/call` with the handle of task `t-7` (`extra` merged in).
    async fn run_as_task(&mut self, extra: Value) {
        let request = self.request("tools/call").await;
        let mut handle = task("working", extra);
        handle["resultType"] = json!("task");
        self.respond(request.id.clone(), handle).await;
    }
}

fn params(r: &Request) -> Value {
    r.params.clone().unwrap().into_value().unwrap()
}

/// Task `t-7` as `tasks/get` reports it (`extra` merged in).
fn task(status: &str, extra: Value) -> Value {
    let mut task = json!({
        "resultType": "complete",
        "taskId": "t-7",
        "status": status,
        "createdAt": "2026-12-04T00:00:00Z",
        "lastUpdatedAt": "2026-12-04T00:00:00Z",
        "ttlMs": null,
        "pollIntervalMs": 1
    });
    if let (Value::Object(task), Value::Object(extra)) = (&mut task, extra) {
        task.extend(extra);
    }
    task
}

/// Task `t-7` completed with a tool result of one text block.
fn completed(text: &str) -> Value {
    task(
        "completed",
        json!({"result": {"content": [{"type": "text", "text": text}]}}),
    )
}

/// A modern session with `handler`, and the scripted server on its other end, which offers
/// tools and the Tasks extension.
async fn connect(
    handler: Arc<dyn ClientHandler>,
    options: &SessionOptions,
) -> (ClientSession, Server) {
    let offering_tasks = json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    connect_offering(handler, options, offering_tasks).await
}

/// [`connect`] to a server offering `capabilities`.
async fn connect_offering(
    handler: Arc<dyn ClientHandler>,
    options: &SessionOptions,
    capabilities: Value,
) -> (ClientSession, Server) {
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    let discovered = tokio::spawn(async move {
        server.discover(capabilities).await;
        server
    });
    let session = ClientSession::connect_shared(transport, handler, options.clone())
        .await
        .expect("connects");
    (session, discovered.await.unwrap())
}

/// A session with `handler` behind a follower built with the same handler and options.
async fn followed(
    handler: Arc<dyn ClientHandler>,
) -> (Arc<TaskFollower<ClientSession>>, Server, FollowTasksLayer) {
    let options = SessionOptions::default().with_tasks(true);
    let (session, server) = connect(handler.clone(), &options).await;
    let layer = FollowTasksLayer::new(handler, &options);
    (Arc::new(layer.layer(session)), server, layer)
}

/// Counts elicitations, accepting each.
#[derive(Clone, Default)]
struct CountingConfirms(Arc<AtomicUsize>);

#[async_trait]
impl ClientHandler for CountingConfirms {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({"form": {}})),
            ..Default::default()
        }
    }

    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"ok": true}).as_object().cloned(),
        })
    }
}

/// A `tools/call` answered with a task is followed to its end: `tasks/get` carries the task id
/// and the protocol `_meta`, an input request shown again by an eventually consistent server is
/// answered only once, and the caller gets the task's result as the call's.
#[tokio::test]
async fn a_task_is_followed_and_each_input_request_answered_once() {
    let handler = CountingConfirms::default();
    let (service, mut server, _) = followed(Arc::new(handler.clone())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move {
            service
                .call_tool("build", None, RequestOptions::new())
                .await
        }
    });
    server.run_as_task(json!({})).await;
    let ask = json!({"inputRequests": {"k1": {"method": "elicitation/create",
        "params": {"mode": "form", "message": "Sure?", "requestedSchema": {"type": "object"}}}}});
    let get = server.request("tasks/get").await;
    assert_eq!(params(&get)["taskId"], "t-7");
    assert_eq!(
        params(&get)["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    server
        .respond(get.id.clone(), task("input_required", ask.clone()))
        .await;
    let update = server.request("tasks/update").await;
    assert_eq!(params(&update)["taskId"], "t-7");
    assert_eq!(params(&update)["inputResponses"]["k1"]["action"], "accept");
    server
        .respond(update.id.clone(), json!({"resultType": "complete"}))
        .await;
    // The server has not caught up yet: the same request again, which is not asked again.
    let get = server.request("tasks/get").await;
    server
        .respond(get.id.clone(), task("input_required", ask))
        .await;
    let get = server.request("tasks/get").await;
    server.respond(get.id.clone(), completed("built")).await;
    let result = call.await.unwrap().unwrap();
    assert_eq!(result.text(), "built");
    assert_eq!(handler.0.load(Ordering::SeqCst), 1);
    service.inner().close().await;
}

/// A service picked per call (a gate's current session) goes through the same follower with
/// `call_through`: the task is followed on that service, and its abandonment cancelled there.
#[tokio::test]
async fn a_task_is_followed_through_a_service_picked_per_call() {
    // No follower wraps the session: the layer is handed it per call.
    let options = SessionOptions::default().with_tasks(true);
    let (session, mut server) = connect(Arc::new(()), &options).await;
    let layer = FollowTasksLayer::new(Arc::new(()), &options);
    let call = tokio::spawn({
        let (layer, session) = (layer.clone(), session.clone());
        async move {
            let answer = layer
                .call_through(&session, Operation::call_tool("build", None))
                .await?;
            CallToolResult::from_answer(answer, "build")
        }
    });
    server.run_as_task(json!({})).await;
    let get = server.request("tasks/get").await;
    server.respond(get.id.clone(), completed("through")).await;
    assert_eq!(call.await.unwrap().unwrap().text(), "through");

    let call = tokio::spawn({
        let (layer, session) = (layer.clone(), session.clone());
        async move {
            layer
                .call_through(&session, Operation::call_tool("build", None))
                .await
        }
    });
    server.run_as_task(json!({})).await;
    let get = server.request("tasks/get").await;
    server
        .respond(get.id.clone(), task("paused", json!({})))
        .await;
    assert!(call.await.unwrap().is_err());
    let cancel = server.request("tasks/cancel").await;
    assert_eq!(params(&cancel)["taskId"], "t-7");
    session.close().await;
}

/// An unknown status ends the call with an error, and the task, abandoned, is cancelled.
#[tokio::test]
async fn an_unknown_status_ends_the_call_and_cancels_the_task() {
    let (service, mut server, _) = followed(Arc::new(())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move { service.call_tool("t", None, RequestOptions::new()).await }
    });
    server.run_as_task(json!({})).await;
    let get = server.request("tasks/get").await;
    server
        .respond(get.id.clone(), task("paused", json!({})))
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert!(
        err.message().contains("status this client does not know"),
        "{err}"
    );
    assert_eq!(err.subject(), Some("t"), "{err}");
    // Abandoned, so the server is asked to cancel it.
    let cancel = server.request("tasks/cancel").await;
    assert_eq!(params(&cancel)["taskId"], "t-7");
    service.inner().close().await;
}

/// A `tasks/get` answered about another task is a protocol error; the task is cancelled.
#[tokio::test]
async fn an_answer_about_another_task_is_a_protocol_error() {
    let (service, mut server, _) = followed(Arc::new(())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move { service.call_tool("t", None, RequestOptions::new()).await }
    });
    server.run_as_task(json!({})).await;
    let get = server.request("tasks/get").await;
    server
        .respond(get.id.clone(), task("working", json!({"taskId": "t-8"})))
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(
        err.message()
            .contains("for task t-7 answered about task t-8"),
        "{err}"
    );
    assert_eq!(err.delivery(), Some(Delivery::Answered), "{err}");
    let cancel = server.request("tasks/cancel").await;
    assert_eq!(params(&cancel)["taskId"], "t-7");
    service.inner().close().await;
}

/// A poll interval longer than the time left still gets one last look before the deadline.
#[tokio::test]
async fn a_task_gets_a_last_look_before_the_deadline() {
    let (service, mut server, _) = followed(Arc::new(())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move {
            let options = RequestOptions::new().with_timeout(Duration::from_millis(800));
            service.call_tool("build", None, options).await
        }
    });
    server.run_as_task(json!({"pollIntervalMs": 600_000})).await;
    let get = server.request("tasks/get").await;
    server
        .respond(get.id.clone(), completed("just in time"))
        .await;
    assert_eq!(call.await.unwrap().unwrap().text(), "just in time");
    service.inner().close().await;
}

/// The server's `pollIntervalMs` is honoured within [`MIN_POLL`] and [`MAX_POLL`]; without one
/// the session options' `task_poll_interval` applies.
#[tokio::test(start_paused = true)]
async fn the_servers_poll_interval_is_kept_within_bounds() {
    let (service, mut server, _) = followed(Arc::new(())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move {
            let options = RequestOptions::new().with_timeout(Duration::from_secs(3600));
            service.call_tool("build", None, options).await
        }
    });
    // 1 ms suggested: 20 ms kept.
    server.run_as_task(json!({"pollIntervalMs": 1})).await;
    let answered = Instant::now();
    let get = server.request("tasks/get").await;
    let waited = answered.elapsed();
    assert!(
        waited >= MIN_POLL && waited < MIN_POLL + Duration::from_millis(10),
        "{waited:?}"
    );
    // An hour suggested: ten minutes kept.
    server
        .respond(
            get.id.clone(),
            task("working", json!({"pollIntervalMs": 3_600_000})),
        )
        .await;
    let answered = Instant::now();
    let get = server.request_within("tasks/get", MAX_POLL + STEP).await;
    let waited = answered.elapsed();
    assert!(
        waited >= MAX_POLL && waited < MAX_POLL + Duration::from_millis(10),
        "{waited:?}"
    );
    // None suggested: the session options' default.
    server
        .respond(
            get.id.clone(),
            task("working", json!({"pollIntervalMs": null})),
        )
        .await;
    let answered = Instant::now();
    let get = server.request("tasks/get").await;
    let waited = answered.elapsed();
    let default = SessionOptions::default().task_poll_interval;
    assert!(
        waited >= default && waited < default + Duration::from_millis(10),
        "{waited:?}"
    );
    server.respond(get.id.clone(), completed("done")).await;
    assert_eq!(call.await.unwrap().unwrap().text(), "done");
    service.inner().close().await;
}

/// Past the call's deadline the call fails, saying so, and the server is asked to cancel the
/// task, which nobody else knows about.
#[tokio::test(start_paused = true)]
async fn a_task_past_the_calls_deadline_is_cancelled() {
    let (service, mut server, _) = followed(Arc::new(())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move {
            let options = RequestOptions::new().with_timeout(Duration::from_millis(300));
            service.call_tool("build", None, options).await
        }
    });
    server.run_as_task(json!({"pollIntervalMs": 100})).await;
    let cancel = loop {
        let request = server.next_request().await;
        match request.method.as_str() {
            "tasks/get" => {
                server
                    .respond(
                        request.id.clone(),
                        task("working", json!({"pollIntervalMs": 100})),
                    )
                    .await
            }
            "tasks/cancel" => break request,
            other => panic!("unexpected {other}"),
        }
    };
    assert_eq!(params(&cancel)["taskId"], "t-7");
    server
        .respond(cancel.id.clone(), json!({"resultType": "complete"}))
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        err.message().contains("task t-7 was still working"),
        "{err}"
    );
    assert!(err.message().contains("asked to cancel"), "{err}");
    assert_eq!(err.subject(), Some("build"), "{err}");
    service.inner().close().await;
}

/// A caller that drops the call (Ctrl-C, a timeout of its own) abandons the task: the server is
/// asked to cancel it all the same.
#[tokio::test]
async fn a_dropped_call_cancels_its_task() {
    let (service, mut server, _) = followed(Arc::new(())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move {
            service
                .call_tool("build", None, RequestOptions::new())
                .await
        }
    });
    server.run_as_task(json!({})).await;
    let get = server.request("tasks/get").await;
    server
        .respond(
            get.id.clone(),
            task("working", json!({"pollIntervalMs": 60_000})),
        )
        .await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let cancel = server.next_request().await;
    assert_eq!(cancel.method, "tasks/cancel");
    assert_eq!(params(&cancel)["taskId"], "t-7");
    server
        .respond(cancel.id.clone(), json!({"resultType": "complete"}))
        .await;
    service.inner().close().await;
}

/// A failure while following a task says the call was sent: a retry layer must not send the
/// `tools/call` (which the server already answered with a task) again.
#[tokio::test]
async fn errors_while_following_a_task_never_say_not_sent() {
    let (service, mut server, _) = followed(Arc::new(())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move {
            service
                .call_tool("build", None, RequestOptions::new())
                .await
        }
    });
    server.run_as_task(json!({})).await;
    let get = server.request("tasks/get").await;
    server
        .respond(
            get.id.clone(),
            task("working", json!({"pollIntervalMs": 100})),
        )
        .await;
    // The server goes away: the next poll cannot even be sent.
    drop(server);
    let err = call.await.unwrap().unwrap_err();
    assert_ne!(err.delivery(), Some(Delivery::NotSent), "{err}");
    assert!(err.delivery().is_some(), "{err}");
}

/// The handle itself when the caller asks for it: nothing is followed.
#[tokio::test]
async fn the_handle_is_handed_back_when_asked_for() {
    let (service, mut server, _) = followed(Arc::new(())).await;
    let call = tokio::spawn({
        let service = service.clone();
        async move {
            service
                .call_tool_as_task("build", None, RequestOptions::new())
                .await
        }
    });
    server.run_as_task(json!({"pollIntervalMs": 30})).await;
    let ToolCallOutcome::Task(task) = call.await.unwrap().unwrap() else {
        panic!("expected the task");
    };
    assert_eq!(task.task_id, "t-7");
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.poll_interval_ms, Some(30));
    service.inner().close().await;
}

/// `call_session`: a session whose server offers the Tasks extension gets its tasks followed;
/// one whose server does not is called directly (no copy kept for a task), and a task such a
/// server sends anyway is refused by the session, never polled.
#[tokio::test(start_paused = true)]
async fn a_session_is_followed_only_where_its_server_offers_tasks() {
    let options = SessionOptions::default().with_tasks(true);
    let layer = FollowTasksLayer::new(Arc::new(()), &options);

    let (session, mut server) = connect(Arc::new(()), &options).await;
    let call = tokio::spawn({
        let (layer, session) = (layer.clone(), session.clone());
        async move {
            let answer = layer
                .call_session(session, Operation::call_tool("build", None))
                .await?;
            CallToolResult::from_answer(answer, "build")
        }
    });
    server.run_as_task(json!({})).await;
    let get = server.request("tasks/get").await;
    server.respond(get.id.clone(), completed("followed")).await;
    assert_eq!(call.await.unwrap().unwrap().text(), "followed");
    session.close().await;

    let (session, mut server) =
        connect_offering(Arc::new(()), &options, json!({"tools": {}})).await;
    let call = tokio::spawn({
        let (layer, session) = (layer.clone(), session.clone());
        async move {
            layer
                .call_session(session, Operation::call_tool("build", None))
                .await
        }
    });
    server.run_as_task(json!({})).await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.message().contains("does not offer"), "{err}");
    session.close().await;
}

/// `wait_for_task` follows the task to its end; when the wait gives up the task is left running
/// (its caller holds the id and may wait again): no `tasks/cancel`.
#[tokio::test(start_paused = true)]
async fn a_wait_follows_the_task_and_leaves_it_running_when_it_gives_up() {
    let (service, mut server, layer) = followed(Arc::new(())).await;
    let wait = tokio::spawn({
        let service = service.clone();
        async move { service.wait_for_task("t-7", RequestOptions::new()).await }
    });
    let get = server.request("tasks/get").await;
    assert_eq!(params(&get)["taskId"], "t-7");
    server
        .respond(get.id.clone(), task("working", json!({})))
        .await;
    let get = server.request("tasks/get").await;
    server.respond(get.id.clone(), completed("waited")).await;
    let ended = wait.await.unwrap().unwrap();
    assert_eq!(ended.status, TaskStatus::Completed);
    assert_eq!(ended.into_tool_result().unwrap().text(), "waited");

    let mut wait = tokio::spawn({
        let service = service.clone();
        async move {
            let options = RequestOptions::new().with_timeout(Duration::from_millis(300));
            service.wait_for_task("t-7", options).await
        }
    });
    let outcome = loop {
        tokio::select! {
            outcome = &mut wait => break outcome.unwrap(),
            request = server.next_request() => {
                assert_eq!(request.method, "tasks/get");
                server
                    .respond(request.id.clone(), task("working", json!({"pollIntervalMs": 100})))
                    .await;
            }
        }
    };
    let err = outcome.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(!err.message().contains("cancel"), "{err}");
    // Every cancellation the follower started is over: none was.
    layer.flush_cancels(STEP).await;
    assert!(server.end.incoming.try_recv().is_err());
    service.inner().close().await;
}

/// Without a follower in the stack, `wait_for_task` polls through the service itself; an input
/// request then fails the wait (nothing there holds the handler).
#[tokio::test]
async fn a_wait_without_a_follower_polls_through_the_service() {
    let (session, mut server) =
        connect(Arc::new(()), &SessionOptions::default().with_tasks(true)).await;
    let wait = tokio::spawn({
        let session = session.clone();
        async move { session.wait_for_task("t-7", RequestOptions::new()).await }
    });
    let get = server.request("tasks/get").await;
    server
        .respond(get.id.clone(), task("working", json!({})))
        .await;
    let get = server.request("tasks/get").await;
    server.respond(get.id.clone(), completed("polled")).await;
    let ended = wait.await.unwrap().unwrap();
    assert_eq!(ended.into_tool_result().unwrap().text(), "polled");

    let wait = tokio::spawn({
        let session = session.clone();
        async move { session.wait_for_task("t-7", RequestOptions::new()).await }
    });
    let get = server.request("tasks/get").await;
    let ask = json!({"inputRequests": {"k1": {"method": "roots/list"}}});
    server
        .respond(get.id.clone(), task("input_required", ask))
        .await;
    let err = wait.await.unwrap().unwrap_err();
    assert!(err.message().contains("nothing here can answer"), "{err}");
    assert_ne!(err.delivery(), Some(Delivery::NotSent), "{err}");
    session.close().await;
}
