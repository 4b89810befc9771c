//! Session engine tests against a scripted in-memory server.

use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::channel::{ChannelTransport, ServerEnd};
use crate::ErrorCodeTable;
use mcp_core::jsonrpc::{ErrorObject, Message, Request, Response};
use mcp_core::service::TraceContext;
use mcp_core::{Delivery, ErrorKind, McpServiceExt, TransportCapabilities};
use serde_json::Value;
use tokio::time::Instant;

const STEP: Duration = Duration::from_secs(5);

/// The progress-token part of the one `_meta` function.
fn with_progress_token(params: Option<Payload>, id: i64) -> Result<Payload, Error> {
    let additions = meta::MetaAdditions {
        progress_token: Some(id),
        modern: None,
        log_level: None,
        trace: None,
    };
    meta::with_request_meta(params, &additions).map(|p| p.expect("params are created"))
}

/// Plays the server side of a [`ChannelTransport`] message by message.
struct FakeServer {
    end: ServerEnd,
}

impl FakeServer {
    async fn next(&mut self) -> Message {
        tokio::time::timeout(STEP, self.end.incoming.recv())
            .await
            .expect("the client sent nothing in time")
            .expect("the client closed the connection")
    }

    async fn expect_request(&mut self, method: &str) -> Request {
        match self.next().await {
            Message::Request(r) if r.method == method => r,
            other => panic!("expected a {method} request, got {other:?}"),
        }
    }

    async fn expect_notification(&mut self, method: &str) -> Notification {
        match self.next().await {
            Message::Notification(n) if n.method == method => n,
            other => panic!("expected a {method} notification, got {other:?}"),
        }
    }

    async fn send(&self, message: impl Into<Message>) {
        self.end
            .outgoing
            .send(message.into())
            .await
            .expect("client gone");
    }

    async fn respond(&self, id: RequestId, result: Value) {
        self.send(Response::success(id, Payload::Value(result)))
            .await;
    }

    async fn notify(&self, method: &str, params: Value) {
        self.send(Notification::new(method, Some(Payload::Value(params))))
            .await;
    }

    /// Plays a legacy server: refuses the `server/discover` probe as an unknown method and
    /// returns the `initialize` request that follows.
    async fn expect_initialize(&mut self) -> Request {
        let first = self.expect_any_request().await;
        if first.method != "server/discover" {
            assert_eq!(first.method, "initialize", "{first:?}");
            return first;
        }
        self.send(Response::error(
            Some(first.id),
            ErrorObject::method_not_found("server/discover"),
        ))
        .await;
        self.expect_request("initialize").await
    }

    async fn expect_any_request(&mut self) -> Request {
        match self.next().await {
            Message::Request(r) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    /// Answers initialize with `version` and consumes notifications/initialized.
    async fn handshake(&mut self, version: &str) -> InitializeRequestParams {
        let init = self.expect_initialize().await;
        let params: InitializeRequestParams = init.params.clone().unwrap().into_typed().unwrap();
        self.respond(
            init.id,
            json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "fake", "version": "1.0"}
            }),
        )
        .await;
        self.expect_notification("notifications/initialized").await;
        params
    }
}

async fn connect_with(
    handler: impl ClientHandler,
    options: SessionOptions,
    version: &'static str,
) -> (ClientSession, FakeServer, InitializeRequestParams) {
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = FakeServer { end };
    let server_task = tokio::spawn(async move {
        let params = server.handshake(version).await;
        (server, params)
    });
    let session = ClientSession::connect(transport, handler, options)
        .await
        .expect("connects");
    let (server, params) = server_task.await.unwrap();
    (session, server, params)
}

async fn connect() -> (ClientSession, FakeServer) {
    let (s, f, _) = connect_with((), SessionOptions::default(), "2025-11-25").await;
    (s, f)
}

fn progress_token(r: &Request) -> Value {
    let params: Value = r.params.clone().unwrap().into_value().unwrap();
    params["_meta"]["progressToken"].clone()
}

#[tokio::test]
async fn handshake_offers_latest_version_and_sends_initialized() {
    let (session, _server, params) =
        connect_with((), SessionOptions::default(), "2025-11-25").await;
    assert_eq!(params.protocol_version, "2025-11-25");
    assert_eq!(params.client_info.name, "mcp-core");
    assert_eq!(params.capabilities, ClientCapabilities::default());
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(session.server_info().server_info.name, "fake");
    assert!(session.server_info().capabilities.tools.is_some());
}

#[tokio::test]
async fn every_older_supported_version_is_accepted() {
    for version in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let (session, _server, _) = connect_with((), SessionOptions::default(), version).await;
        assert_eq!(session.protocol_version().as_str(), version);
    }
}

#[tokio::test]
async fn an_unsupported_server_version_is_a_clear_error() {
    let (transport, end) = ChannelTransport::pair(8);
    let mut server = FakeServer { end };
    let task = tokio::spawn(async move {
        let init = server.expect_initialize().await;
        server
            .respond(
                init.id,
                json!({"protocolVersion": "1999-01-01", "capabilities": {},
                       "serverInfo": {"name": "old", "version": "0.1"}}),
            )
            .await;
        // The client closes the connection instead of sending initialized.
        tokio::time::timeout(STEP, server.end.incoming.recv())
            .await
            .unwrap()
    });
    let err = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(err.message().contains("1999-01-01"), "{err}");
    assert!(err.message().contains("old"), "{err}");
    assert!(
        task.await.unwrap().is_none(),
        "the client must not send initialized"
    );
}

#[tokio::test]
async fn handler_capabilities_are_advertised() {
    let roots = StaticRoots::new(vec![Root::new("file:///work", "work")]);
    let (_session, _server, params) =
        connect_with(roots, SessionOptions::default(), "2025-11-25").await;
    assert!(params.capabilities.roots.is_some());
    assert!(params.capabilities.sampling.is_none());
    assert!(params.capabilities.elicitation.is_none());
}

#[tokio::test(start_paused = true)]
async fn initialize_times_out_when_the_server_never_answers() {
    let (transport, end) = ChannelTransport::pair(8);
    let options = SessionOptions::default().with_initialize_timeout(Duration::from_secs(3));
    let err = ClientSession::connect(transport, (), options)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.message().contains("3s"), "{err}");
    drop(end);
}

#[tokio::test]
async fn concurrent_requests_are_correlated_by_id() {
    let (session, mut server) = connect().await;
    let calls: Vec<_> = (0..50)
        .map(|i| {
            let s = session.clone();
            tokio::spawn(async move {
                s.call_tool(
                    "echo",
                    Some(json!({"text": i.to_string()})),
                    RequestOptions::new(),
                )
                .await
            })
        })
        .collect();
    let mut requests = Vec::new();
    for _ in 0..50 {
        requests.push(server.expect_request("tools/call").await);
    }
    // Answer in reverse order.
    for r in requests.into_iter().rev() {
        let args: Value = r.params.clone().unwrap().into_value().unwrap();
        let text = args["arguments"]["text"].as_str().unwrap().to_owned();
        assert_eq!(
            progress_token(&r),
            json!(match r.id {
                RequestId::Number(n) => n,
                _ => panic!(),
            })
        );
        server
            .respond(r.id, json!({"content": [{"type": "text", "text": text}]}))
            .await;
    }
    for (i, call) in calls.into_iter().enumerate() {
        let result = call.await.unwrap().unwrap();
        assert_eq!(result.text(), i.to_string());
    }
    assert_eq!(session.pending_requests(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_request_is_cancelled_on_the_server() {
    let (session, mut server) = connect().await;
    let options = RequestOptions::new().with_timeout(Duration::from_millis(200));
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("slow", None, options).await }
    });
    let request = server.expect_request("tools/call").await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(err.subject(), Some("slow"));
    assert_eq!(
        err.agent_message(),
        "tool slow is unavailable: server not responding"
    );
    let cancel = server.expect_notification("notifications/cancelled").await;
    let params: CancelledNotificationParams = cancel.params.unwrap().into_typed().unwrap();
    assert_eq!(params.request_id, request.id);
    assert_eq!(params.reason.as_deref(), Some("timeout"));
    // A late answer is dropped quietly.
    server.respond(request.id, json!({"content": []})).await;
    session.ping_answered(&mut server).await;
}

impl ClientSession {
    /// Pings and answers the ping from the fake server: proves the session still works.
    async fn ping_answered(&self, server: &mut FakeServer) {
        let ping = tokio::spawn({
            let s = self.clone();
            async move { s.ping(RequestOptions::new()).await }
        });
        let r = server.expect_request("ping").await;
        server.respond(r.id, json!({})).await;
        ping.await.unwrap().expect("ping succeeds");
    }
}

#[tokio::test]
async fn dropping_a_request_future_cancels_it_on_the_server() {
    let (session, mut server) = connect().await;
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("slow", None, RequestOptions::new()).await }
    });
    let request = server.expect_request("tools/call").await;
    call.abort();
    let _ = call.await;
    let cancel = server.expect_notification("notifications/cancelled").await;
    let params: CancelledNotificationParams = cancel.params.unwrap().into_typed().unwrap();
    assert_eq!(params.request_id, request.id);
    assert_eq!(session.pending_requests(), 0);
}

#[tokio::test]
async fn progress_reaches_the_caller() {
    let (session, mut server) = connect().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| {
            seen.lock()
                .unwrap()
                .push((p.progress, p.total, p.message.clone()))
        }
    });
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("slow", None, options).await }
    });
    let request = server.expect_request("tools/call").await;
    let token = progress_token(&request);
    for i in 1..=3 {
        server
            .notify("notifications/progress", json!({"progressToken": token, "progress": i, "total": 3, "message": format!("step {i}")}))
            .await;
    }
    // Progress for an unknown token is ignored.
    server
        .notify(
            "notifications/progress",
            json!({"progressToken": 999, "progress": 1}),
        )
        .await;
    server
        .respond(
            request.id,
            json!({"content": [{"type":"text","text":"done"}]}),
        )
        .await;
    assert_eq!(call.await.unwrap().unwrap().text(), "done");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn progress_resets_the_deadline_up_to_the_hard_cap() {
    let (session, mut server) = connect().await;
    // Deadline 1 s, reset by progress, hard cap 10 s: progress every 600 ms keeps it alive.
    let options = RequestOptions::new()
        .with_timeout(Duration::from_secs(1))
        .with_reset_on_progress(Duration::from_secs(10));
    let call = tokio::spawn({
        let s = session.clone();
        let options = options.clone();
        async move { s.call_tool("slow", None, options).await }
    });
    let request = server.expect_request("tools/call").await;
    let token = progress_token(&request);
    for i in 0..5 {
        tokio::time::sleep(Duration::from_millis(600)).await;
        server
            .notify(
                "notifications/progress",
                json!({"progressToken": token, "progress": i}),
            )
            .await;
    }
    server.respond(request.id, json!({"content": []})).await;
    call.await
        .unwrap()
        .expect("progress kept the request alive past its 1 s deadline");

    // Progress forever: the hard cap ends it.
    let started = Instant::now();
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("slow", None, options).await }
    });
    let request = server.expect_request("tools/call").await;
    let token = progress_token(&request);
    let err = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        server
            .notify(
                "notifications/progress",
                json!({"progressToken": token, "progress": 1}),
            )
            .await;
        if call.is_finished() {
            break call.await.unwrap().unwrap_err();
        }
    };
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let elapsed = Instant::now() - started;
    assert!(
        elapsed >= Duration::from_secs(10) && elapsed < Duration::from_secs(11),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn without_reset_progress_does_not_extend_the_deadline() {
    let (session, mut server) = connect().await;
    let options = RequestOptions::new().with_timeout(Duration::from_secs(1));
    let started = Instant::now();
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("slow", None, options).await }
    });
    let request = server.expect_request("tools/call").await;
    let token = progress_token(&request);
    tokio::time::sleep(Duration::from_millis(600)).await;
    server
        .notify(
            "notifications/progress",
            json!({"progressToken": token, "progress": 1}),
        )
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(Instant::now() - started < Duration::from_millis(1100));
}

#[tokio::test(start_paused = true)]
async fn transport_end_fails_every_pending_request_at_once() {
    let (session, mut server) = connect().await;
    let started = Instant::now();
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let s = session.clone();
            tokio::spawn(async move { s.call_tool("slow", None, RequestOptions::new()).await })
        })
        .collect();
    for _ in 0..3 {
        server.expect_request("tools/call").await;
    }
    drop(server);
    for call in calls {
        let err = call.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Network);
        assert!(err.message().contains("closed the connection"), "{err}");
    }
    assert!(
        Instant::now() - started < Duration::from_secs(1),
        "must not wait for the 30 s timeout"
    );
    assert!(session.is_closed());
    assert_eq!(session.closed().await.kind(), ErrorKind::Network);
    // New requests fail at once too.
    assert_eq!(
        session
            .ping(RequestOptions::new())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Network
    );
}

#[tokio::test]
async fn notifications_fan_out_to_every_subscriber() {
    let (session, server) = connect().await;
    let mut a = session.subscribe();
    let mut b = session.subscribe();
    server
        .notify("notifications/tools/list_changed", json!({}))
        .await;
    server
        .notify("notifications/resources/updated", json!({"uri": "x://y"}))
        .await;
    server
        .notify(
            "notifications/message",
            json!({"level": "info", "logger": "l", "data": "hello"}),
        )
        .await;
    server.notify("notifications/custom", json!({"k": 1})).await;
    for stream in [&mut a, &mut b] {
        let got = [
            stream.next().await.unwrap(),
            stream.next().await.unwrap(),
            stream.next().await.unwrap(),
            stream.next().await.unwrap(),
        ];
        assert_eq!(got[0], ServerNotification::ToolListChanged);
        assert!(matches!(&got[1], ServerNotification::ResourceUpdated(p) if p.uri == "x://y"));
        assert!(
            matches!(&got[2], ServerNotification::LoggingMessage(p) if p.level == LoggingLevel::Info && p.data == json!("hello"))
        );
        assert!(
            matches!(&got[3], ServerNotification::Other(n) if n.method == "notifications/custom")
        );
    }
    drop(server);
    assert!(a.next().await.is_none(), "the stream ends with the session");
}

async fn server_request(
    server: &mut FakeServer,
    id: &str,
    method: &str,
    params: Value,
) -> Response {
    server
        .send(Request::new(id, method, Some(Payload::Value(params))))
        .await;
    match server.next().await {
        Message::Response(r) => {
            assert_eq!(r.id, Some(RequestId::from(id)));
            r
        }
        other => panic!("expected a response, got {other:?}"),
    }
}

#[tokio::test]
async fn server_requests_follow_the_declared_capabilities() {
    let (_session, mut server) = connect().await;
    let pong = server_request(&mut server, "s1", "ping", json!({})).await;
    assert_eq!(pong.outcome.unwrap().into_value().unwrap(), json!({}));
    for method in [
        "roots/list",
        "sampling/createMessage",
        "elicitation/create",
        "x/unknown",
    ] {
        let r = server_request(&mut server, "s2", method, json!({})).await;
        assert_eq!(r.outcome.unwrap_err().code, -32601, "{method}");
    }

    let roots = StaticRoots::new(vec![Root::new("file:///work", "work")]);
    let (_session, mut server, _) =
        connect_with(roots, SessionOptions::default(), "2025-11-25").await;
    let r = server_request(&mut server, "s3", "roots/list", json!({})).await;
    assert_eq!(
        r.outcome.unwrap().into_value().unwrap(),
        json!({"roots": [{"uri": "file:///work", "name": "work"}]})
    );
}

struct FormFiller;

#[async_trait::async_trait]
impl ClientHandler for FormFiller {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({"form": {}})),
            sampling: Some(json!({})),
            ..Default::default()
        }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(params.schema_defaults()),
        })
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn elicitation_is_routed_to_the_handler_and_bad_params_are_rejected() {
    let (_session, mut server, params) =
        connect_with(FormFiller, SessionOptions::default(), "2025-11-25").await;
    assert_eq!(params.capabilities.elicitation, Some(json!({"form": {}})));
    let r = server_request(
        &mut server,
        "e1",
        "elicitation/create",
        json!({"message": "who?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}}}),
    )
    .await;
    assert_eq!(
        r.outcome.unwrap().into_value().unwrap(),
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    let r = server_request(&mut server, "e2", "elicitation/create", json!({"nope": 1})).await;
    assert_eq!(r.outcome.unwrap_err().code, -32602);
}

#[tokio::test]
async fn a_server_can_cancel_its_own_request() {
    let (session, mut server, _) =
        connect_with(FormFiller, SessionOptions::default(), "2025-11-25").await;
    server
        .send(Request::new(
            "s9",
            "sampling/createMessage",
            Some(Payload::Value(json!({"messages": [], "maxTokens": 5}))),
        ))
        .await;
    // Wait until the handler task exists, then cancel it.
    let deadline = Instant::now() + STEP;
    while lock(&session.shared.handler_tasks).is_empty() {
        assert!(Instant::now() < deadline, "handler task never started");
        tokio::task::yield_now().await;
    }
    server
        .notify(
            "notifications/cancelled",
            json!({"requestId": "s9", "reason": "changed my mind"}),
        )
        .await;
    let deadline = Instant::now() + STEP;
    while !lock(&session.shared.handler_tasks).is_empty() {
        assert!(Instant::now() < deadline, "handler task was not cancelled");
        tokio::task::yield_now().await;
    }
    // No response was sent for s9: the next message the server sees is the ping.
    session.ping_answered(&mut server).await;
}

#[tokio::test]
async fn server_errors_are_classified_through_the_table() {
    let (session, mut server) = connect().await;
    let call = tokio::spawn({
        let s = session.clone();
        async move {
            s.call_tool("nope", Some(json!({})), RequestOptions::new())
                .await
        }
    });
    let r = server.expect_request("tools/call").await;
    server
        .send(Response::error(
            Some(r.id),
            ErrorObject::invalid_params("Unknown tool: nope"),
        ))
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolNotFound);
    assert!(!err.is_retryable());
    assert_eq!(
        err.agent_message(),
        "tool nope does not exist: check the tool name and server configuration"
    );
}

#[tokio::test]
async fn custom_error_table_is_used() {
    let options = SessionOptions::default()
        .with_error_codes(ErrorCodeTable::default().with_code(-31000, ErrorKind::Auth));
    let (session, mut server, _) = connect_with((), options, "2025-11-25").await;
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("t", None, RequestOptions::new()).await }
    });
    let r = server.expect_request("tools/call").await;
    server
        .send(Response::error(
            Some(r.id),
            ErrorObject::new(-31000, "token expired"),
        ))
        .await;
    assert_eq!(call.await.unwrap().unwrap_err().kind(), ErrorKind::Auth);
}

#[tokio::test]
async fn list_all_tools_follows_cursors() {
    let (session, mut server) = connect().await;
    let list = tokio::spawn({
        let s = session.clone();
        async move { s.list_all_tools(RequestOptions::new()).await }
    });
    for (cursor, names, next) in [
        (Value::Null, vec!["a", "b"], json!("p2")),
        (json!("p2"), vec!["c"], json!("p3")),
        (json!("p3"), vec!["d"], Value::Null),
    ] {
        let r = server.expect_request("tools/list").await;
        let params = r.params.clone().unwrap().into_value().unwrap();
        assert_eq!(params.get("cursor").cloned().unwrap_or(Value::Null), cursor);
        let tools: Vec<Value> = names
            .iter()
            .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
            .collect();
        let mut result = json!({"tools": tools});
        if !next.is_null() {
            result["nextCursor"] = next;
        }
        server.respond(r.id, result).await;
    }
    let names: Vec<String> = list
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn typed_helpers_send_the_right_params() {
    let (session, mut server) = connect().await;
    let s = session.clone();
    let client = tokio::spawn(async move {
        s.set_logging_level(LoggingLevel::Warning, RequestOptions::new())
            .await
            .unwrap();
        s.subscribe_resource("x://r", RequestOptions::new())
            .await
            .unwrap();
        let read = s
            .read_resource("x://r", RequestOptions::new())
            .await
            .unwrap();
        let prompt = s
            .get_prompt(
                "greet",
                Some([("name".to_owned(), "Ada".to_owned())].into()),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        (read, prompt)
    });
    let r = server.expect_request("logging/setLevel").await;
    assert_eq!(
        r.params.clone().unwrap().into_value().unwrap()["level"],
        json!("warning")
    );
    server.respond(r.id, json!({})).await;
    let r = server.expect_request("resources/subscribe").await;
    assert_eq!(
        r.params.clone().unwrap().into_value().unwrap()["uri"],
        json!("x://r")
    );
    server.respond(r.id, json!({})).await;
    let r = server.expect_request("resources/read").await;
    server
        .respond(r.id, json!({"contents": [{"uri": "x://r", "text": "v1"}]}))
        .await;
    let r = server.expect_request("prompts/get").await;
    assert_eq!(
        r.params.clone().unwrap().into_value().unwrap()["arguments"],
        json!({"name": "Ada"})
    );
    server
        .respond(
            r.id,
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi Ada"}}]}),
        )
        .await;
    let (read, prompt) = client.await.unwrap();
    assert_eq!(read.contents[0].text.as_deref(), Some("v1"));
    assert_eq!(prompt.messages[0].content.as_text(), Some("hi Ada"));
}

#[tokio::test]
async fn raw_tool_calls_get_a_spliced_progress_token() {
    let (session, mut server) = connect().await;
    let args = serde_json::value::RawValue::from_string(r#"{"text":"raw"}"#.to_owned()).unwrap();
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool_raw("echo", &args, RequestOptions::new()).await }
    });
    let r = server.expect_request("tools/call").await;
    let params = r.params.clone().unwrap().into_value().unwrap();
    assert_eq!(params["name"], json!("echo"));
    assert_eq!(params["arguments"], json!({"text": "raw"}));
    assert_eq!(
        params["_meta"]["progressToken"],
        json!(match r.id {
            RequestId::Number(n) => n,
            _ => panic!(),
        })
    );
    server
        .respond(r.id, json!({"content": [{"type": "text", "text": "raw"}]}))
        .await;
    let result = call.await.unwrap().unwrap();
    assert!(matches!(result, Payload::Value(_) | Payload::Raw(_)));
    assert_eq!(result.into_typed::<CallToolResult>().unwrap().text(), "raw");
}

#[test]
fn progress_token_splicing_handles_every_params_shape() {
    let raw = |s: &str| {
        Some(Payload::Raw(
            serde_json::value::RawValue::from_string(s.to_owned()).unwrap(),
        ))
    };
    let v = |p: Payload| p.into_value().unwrap();
    assert_eq!(
        v(with_progress_token(None, 1).unwrap()),
        json!({"_meta": {"progressToken": 1}})
    );
    assert_eq!(
        v(with_progress_token(raw("{}"), 2).unwrap()),
        json!({"_meta": {"progressToken": 2}})
    );
    assert_eq!(
        v(with_progress_token(raw(" { } "), 2).unwrap()),
        json!({"_meta": {"progressToken": 2}})
    );
    assert_eq!(
        v(with_progress_token(raw(r#"{"a":1}"#), 3).unwrap()),
        json!({"a": 1, "_meta": {"progressToken": 3}})
    );
    // Raw and value parameters with a `_meta` of their own get the token the same way.
    assert_eq!(
        v(with_progress_token(raw(r#"{"_meta":{"x":1}}"#), 4).unwrap()),
        json!({"_meta": {"x": 1, "progressToken": 4}})
    );
    assert_eq!(
        v(with_progress_token(raw(r#"{"\u005fmeta":{"x":1},"q":2}"#), 4).unwrap()),
        json!({"_meta": {"x": 1, "progressToken": 4}, "q": 2})
    );
    assert_eq!(
        v(with_progress_token(raw(r#"{"_meta":{"progressToken":"mine"}}"#), 4).unwrap()),
        json!({"_meta": {"progressToken": "mine"}})
    );
    assert_eq!(
        v(with_progress_token(raw(r#"{"note":"_meta\""}"#), 7).unwrap()),
        json!({"note": "_meta\"", "_meta": {"progressToken": 7}})
    );
    assert_eq!(
        v(with_progress_token(Some(Payload::Value(json!({"_meta": {"x": 1}}))), 5).unwrap()),
        json!({"_meta": {"x": 1, "progressToken": 5}})
    );
    assert!(with_progress_token(raw("[1]"), 6).is_err());
    assert!(with_progress_token(Some(Payload::Value(json!(3))), 6).is_err());
}

#[tokio::test]
async fn close_ends_the_session_and_the_server_sees_the_end() {
    let (session, mut server) = connect().await;
    let mut stream = session.subscribe();
    session.close().await;
    assert!(session.is_closed());
    assert!(tokio::time::timeout(STEP, server.end.incoming.recv())
        .await
        .unwrap()
        .is_none());
    assert!(stream.next().await.is_none());
    assert_eq!(
        session
            .ping(RequestOptions::new())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Network
    );
    assert!(session.subscribe().next().await.is_none());
}

#[tokio::test]
async fn dropping_the_last_handle_ends_the_session_tasks() {
    let (session, mut server) = connect().await;
    let weak = Arc::downgrade(&session.shared);
    drop(session);
    // The reader task held the session state; once aborted, everything is released.
    let deadline = Instant::now() + STEP;
    while weak.strong_count() > 0 {
        assert!(Instant::now() < deadline, "session state leaked");
        tokio::task::yield_now().await;
    }
    assert!(tokio::time::timeout(STEP, server.end.incoming.recv())
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn malformed_results_are_protocol_errors() {
    let (session, mut server) = connect().await;
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.list_tools(None, RequestOptions::new()).await }
    });
    let r = server.expect_request("tools/list").await;
    server.respond(r.id, json!({"tools": "not a list"})).await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(err.message().contains("tools/list"), "{err}");
}

#[tokio::test]
async fn many_requests_from_many_tasks_all_complete() {
    let (session, mut server) = connect().await;
    let done = Arc::new(AtomicUsize::new(0));
    let server_task = tokio::spawn(async move {
        for _ in 0..500 {
            let r = server.expect_request("ping").await;
            server.respond(r.id, json!({})).await;
        }
        server
    });
    let tasks: Vec<_> = (0..500)
        .map(|_| {
            let s = session.clone();
            let done = done.clone();
            tokio::spawn(async move {
                s.ping(RequestOptions::new()).await.unwrap();
                done.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(done.load(Ordering::Relaxed), 500);
    let _server = server_task.await.unwrap();
}

#[tokio::test]
async fn a_request_dropped_just_before_close_is_still_cancelled_on_the_server() {
    let (session, mut server) = connect().await;
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("slow", None, RequestOptions::new()).await }
    });
    let request = server.expect_request("tools/call").await;
    call.abort();
    let _ = call.await;
    session.close().await;
    let cancel = server.expect_notification("notifications/cancelled").await;
    let params: CancelledNotificationParams = cancel.params.unwrap().into_typed().unwrap();
    assert_eq!(params.request_id, request.id);
    assert!(tokio::time::timeout(STEP, server.end.incoming.recv())
        .await
        .unwrap()
        .is_none());
}

/// Connects over a pair whose client→server direction holds `capacity` messages, returning the
/// raw server end: once the test stops reading it, the transport stops taking messages.
async fn connect_over_pair(
    capacity: usize,
    options: SessionOptions,
    handler: impl ClientHandler,
) -> (ClientSession, FakeServer) {
    let (transport, end) = ChannelTransport::pair(capacity);
    let mut server = FakeServer { end };
    let server_task = tokio::spawn(async move {
        server.handshake("2025-11-25").await;
        server
    });
    let session = ClientSession::connect(transport, handler, options)
        .await
        .expect("connects");
    (session, server_task.await.unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_request_the_transport_cannot_take_times_out_at_its_deadline() {
    // One slot towards the server, and the server stops reading after the handshake: the first
    // call fills the slot, every later one waits inside `send`.
    let (session, mut server) = connect_over_pair(1, SessionOptions::default(), ()).await;
    let timeout = Duration::from_secs(2);
    let started = Instant::now();
    let calls: Vec<_> = (0..5)
        .map(|i| {
            let s = session.clone();
            let options = RequestOptions::new().with_timeout(timeout);
            tokio::spawn(async move { s.call_tool("echo", Some(json!({"i": i})), options).await })
        })
        .collect();
    for call in calls {
        let err = call.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        assert_eq!(err.delivery(), Some(Delivery::Sent));
        let elapsed = Instant::now() - started;
        assert!(
            elapsed >= timeout && elapsed < timeout + Duration::from_millis(50),
            "{elapsed:?}"
        );
    }
    assert_eq!(session.pending_requests(), 0);
    // The server reads again: it hears the cancellation of the one request it got, and the
    // session works.
    let first = server.expect_request("tools/call").await;
    let cancel = server.expect_notification("notifications/cancelled").await;
    let params: CancelledNotificationParams = cancel.params.unwrap().into_typed().unwrap();
    assert_eq!(params.request_id, first.id);
    let ping = tokio::spawn({
        let s = session.clone();
        async move { s.ping(RequestOptions::new()).await }
    });
    let r = loop {
        match server.next().await {
            Message::Request(r) if r.method == "ping" => break r,
            Message::Notification(n) if n.method == "notifications/cancelled" => continue,
            other => panic!("unexpected {other:?}"),
        }
    };
    server.respond(r.id, json!({})).await;
    ping.await.unwrap().expect("the session is usable again");
}

#[tokio::test(start_paused = true)]
async fn an_absolute_deadline_wins_over_a_longer_timeout() {
    let (session, mut server) = connect().await;
    let started = Instant::now();
    let options = RequestOptions::new()
        .with_timeout(Duration::from_secs(30))
        .with_deadline(started + Duration::from_secs(1));
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("slow", None, options).await }
    });
    server.expect_request("tools/call").await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(Instant::now() - started, Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn notify_is_bounded_when_the_transport_takes_nothing() {
    let options = SessionOptions::default().with_request_timeout(Duration::from_secs(1));
    let (session, _server) = connect_over_pair(1, options, ()).await;
    // Fill the one slot, then the next notification cannot be taken.
    session.notify("notifications/x", None).await.unwrap();
    let started = Instant::now();
    let err = session.notify("notifications/x", None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.message().contains("notifications/x"), "{err}");
    assert_eq!(Instant::now() - started, Duration::from_secs(1));
}

/// A transport whose close never finishes (a peer that ignores every way of ending).
struct StuckOnClose(ChannelTransport);

struct StuckSender(crate::channel::ChannelSender);

#[async_trait::async_trait]
impl TransportSender for StuckSender {
    async fn send(&self, message: Message) -> Result<(), mcp_core::TransportError> {
        self.0.send(message).await
    }
    async fn close(&self) -> Result<(), mcp_core::TransportError> {
        std::future::pending().await
    }
    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("stuck")
    }
}

impl Transport for StuckOnClose {
    type Sender = StuckSender;
    type Receiver = crate::channel::ChannelReceiver;
    fn split(self) -> (StuckSender, crate::channel::ChannelReceiver) {
        let (sender, receiver) = self.0.split();
        (StuckSender(sender), receiver)
    }
}

#[tokio::test(start_paused = true)]
async fn close_is_bounded_when_the_transport_never_closes() {
    let (transport, end) = ChannelTransport::pair(8);
    let mut server = FakeServer { end };
    let server_task = tokio::spawn(async move {
        server.handshake("2025-11-25").await;
        server
    });
    let options = SessionOptions {
        close_timeout: Duration::from_secs(3),
        ..SessionOptions::default()
    };
    let session = ClientSession::connect(StuckOnClose(transport), (), options)
        .await
        .unwrap();
    let _server = server_task.await.unwrap();
    let started = Instant::now();
    session.close().await;
    let took = Instant::now() - started;
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(session.is_closed());
    assert_eq!(
        session
            .ping(RequestOptions::new())
            .await
            .unwrap_err()
            .delivery(),
        Some(Delivery::NotSent)
    );
}

/// A handler whose sampling never finishes (a human who never answers).
struct NeverSamples;

#[async_trait::async_trait]
impl ClientHandler for NeverSamples {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: Some(json!({})),
            ..ClientCapabilities::default()
        }
    }
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn server_requests_past_the_cap_are_answered_busy() {
    let options = SessionOptions {
        max_concurrent_server_requests: 2,
        ..SessionOptions::default()
    };
    let (session, mut server) = connect_over_pair(16, options, NeverSamples).await;
    let sampling = || Some(Payload::Value(json!({"messages": [], "maxTokens": 5})));
    for id in ["s1", "s2"] {
        server
            .send(Request::new(id, "sampling/createMessage", sampling()))
            .await;
    }
    let deadline = Instant::now() + STEP;
    while session.server_requests_in_flight() < 2 {
        assert!(Instant::now() < deadline, "handler tasks never started");
        tokio::task::yield_now().await;
    }
    let busy = server_request(
        &mut server,
        "s3",
        "sampling/createMessage",
        json!({"messages": [], "maxTokens": 5}),
    )
    .await;
    let error = busy.outcome.unwrap_err();
    assert_eq!(error.code, server_requests::BUSY_ERROR_CODE);
    assert!(error.message.contains("busy"), "{}", error.message);
    // Pings are still answered, without a task.
    let pong = server_request(&mut server, "p1", "ping", json!({})).await;
    assert!(pong.outcome.is_ok());
    // Once the server cancels one, there is room again.
    server
        .notify("notifications/cancelled", json!({"requestId": "s1"}))
        .await;
    let deadline = Instant::now() + STEP;
    while session.server_requests_in_flight() > 1 {
        assert!(
            Instant::now() < deadline,
            "the cancelled task is still counted"
        );
        tokio::task::yield_now().await;
    }
    server
        .send(Request::new("s4", "sampling/createMessage", sampling()))
        .await;
    let deadline = Instant::now() + STEP;
    while session.server_requests_in_flight() < 2 {
        assert!(Instant::now() < deadline, "s4 was not taken");
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn errors_say_how_far_the_request_got() {
    let (session, mut server) = connect().await;
    // Answered with an error.
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("t", None, RequestOptions::new()).await }
    });
    let r = server.expect_request("tools/call").await;
    server
        .send(Response::error(Some(r.id), ErrorObject::internal("boom")))
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.delivery(), Some(Delivery::Answered));
    assert_eq!(err.subject(), Some("t"));
    // Sent, then the connection died.
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("t", None, RequestOptions::new()).await }
    });
    server.expect_request("tools/call").await;
    drop(server);
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert_eq!(err.delivery(), Some(Delivery::Sent));
    // After the end, nothing is sent.
    let err = session
        .call_tool("t", None, RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.delivery(), Some(Delivery::NotSent));
    assert!(err.was_never_sent());
}

#[tokio::test(start_paused = true)]
async fn a_huge_timeout_means_never_not_a_panic() {
    let (session, mut server) = connect().await;
    let options = RequestOptions::new()
        .with_timeout(Duration::MAX)
        .with_reset_on_progress(Duration::MAX);
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("slow", None, options).await }
    });
    let r = server.expect_request("tools/call").await;
    server.respond(r.id, json!({"content": []})).await;
    call.await.unwrap().expect("answered");
}

#[tokio::test(start_paused = true)]
async fn a_handler_that_never_answers_is_cut_off_and_duplicate_ids_are_refused() {
    let options = SessionOptions {
        server_request_timeout: Duration::from_secs(2),
        ..SessionOptions::default()
    };
    let (_session, mut server) = connect_over_pair(16, options, NeverSamples).await;
    let sampling = || Some(Payload::Value(json!({"messages": [], "maxTokens": 5})));
    let started = Instant::now();
    server
        .send(Request::new("s1", "sampling/createMessage", sampling()))
        .await;
    // The same id again while the first is in flight.
    let duplicate = server_request(
        &mut server,
        "s1",
        "sampling/createMessage",
        json!({"messages": [], "maxTokens": 5}),
    )
    .await;
    assert_eq!(duplicate.outcome.unwrap_err().code, -32600);
    let late = match server.next().await {
        Message::Response(r) => r,
        other => panic!("expected a response, got {other:?}"),
    };
    assert_eq!(late.id, Some(RequestId::from("s1")));
    let error = late.outcome.unwrap_err();
    assert!(
        error.message.contains("did not answer"),
        "{}",
        error.message
    );
    assert_eq!(Instant::now() - started, Duration::from_secs(2));
}

/// The trace-context part of the one `_meta` function.
fn with_trace(params: Option<Payload>, trace: &TraceContext) -> Result<Option<Payload>, Error> {
    let additions = meta::MetaAdditions {
        progress_token: None,
        modern: None,
        log_level: None,
        trace: Some(trace),
    };
    meta::with_request_meta(params, &additions)
}

#[test]
fn a_trace_context_is_spliced_into_every_params_shape() {
    let raw = |s: &str| {
        Some(Payload::Raw(
            serde_json::value::RawValue::from_string(s.to_owned()).unwrap(),
        ))
    };
    let v = |p: Option<Payload>| p.expect("params").into_value().unwrap();
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let trace = TraceContext::new(PARENT, Some("rojo=00f067aa0ba902b7".into()));
    let both = json!({"traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7"});
    assert_eq!(v(with_trace(None, &trace).unwrap()), json!({"_meta": both}));
    // Raw parameters get it spliced in as text (no value tree), values get it inserted.
    let spliced = with_trace(raw(r#"{"name":"echo","arguments":{"a":1}}"#), &trace).unwrap();
    assert!(matches!(spliced, Some(Payload::Shared(_))));
    assert_eq!(
        v(spliced),
        json!({"name": "echo", "arguments": {"a": 1}, "_meta": both})
    );
    assert_eq!(
        v(with_trace(Some(Payload::Value(json!({"name": "echo"}))), &trace).unwrap()),
        json!({"name": "echo", "_meta": both})
    );
    // A `_meta` of the caller's own keeps its members, and a trace context of its own whole
    // (our tracestate does not belong to its traceparent).
    assert_eq!(
        v(with_trace(raw(r#"{"_meta":{"x":1,"traceparent":"mine"}}"#), &trace).unwrap()),
        json!({"_meta": {"x": 1, "traceparent": "mine"}})
    );
    assert_eq!(
        v(with_trace(raw(r#"{"_meta":{"tracestate":"theirs"}}"#), &trace).unwrap()),
        json!({"_meta": {"tracestate": "theirs"}})
    );
    assert_eq!(
        v(with_trace(raw(r#"{"_meta":{"x":1}}"#), &trace).unwrap()),
        json!({"_meta": {"x": 1, "traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7"}})
    );
    // Without a tracestate only the traceparent is added; whatever the strings hold, the
    // result is valid JSON.
    let odd = TraceContext::new("a\"b", None);
    assert_eq!(
        v(with_trace(raw("{}"), &odd).unwrap()),
        json!({"_meta": {"traceparent": "a\"b"}})
    );
    // With the progress token and the modern members, all in one `_meta`.
    let modern = ModernMeta::new(json!({}), json!({"name": "c", "version": "1"}));
    let additions = meta::MetaAdditions {
        progress_token: Some(3),
        modern: Some(&modern),
        log_level: None,
        trace: Some(&trace),
    };
    let all = v(meta::with_request_meta(raw(r#"{"a":1}"#), &additions).unwrap());
    assert_eq!(all["_meta"]["progressToken"], 3);
    assert_eq!(all["_meta"]["traceparent"], PARENT);
    assert_eq!(
        all["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    // As values (for a transport answering in place): the same context, nothing spliced.
    let values = additions.as_values();
    assert_eq!(values.trace_context, Some(&trace));
}

#[test]
fn without_a_trace_context_nothing_is_added() {
    let additions = meta::MetaAdditions {
        progress_token: None,
        modern: None,
        log_level: None,
        trace: None,
    };
    let text = r#"{"name":"echo","arguments":{"a":1}}"#;
    let raw = Payload::Raw(serde_json::value::RawValue::from_string(text.into()).unwrap());
    let params = meta::with_request_meta(Some(raw), &additions)
        .unwrap()
        .unwrap();
    assert!(matches!(params, Payload::Raw(_)));
    assert_eq!(params.to_json_string(), text);
    assert!(meta::with_request_meta(None, &additions).unwrap().is_none());
    assert_eq!(additions.as_values().trace_context, None);
    // The progress token alone: no trace members.
    let params = v_of(with_progress_token(None, 1).unwrap());
    assert_eq!(params, json!({"_meta": {"progressToken": 1}}));
}

fn v_of(payload: Payload) -> Value {
    payload.into_value().unwrap()
}

#[tokio::test]
async fn a_request_with_a_trace_context_carries_it_in_its_meta() {
    let (session, mut server) = connect().await;
    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let call = tokio::spawn({
        let session = session.clone();
        async move {
            let options = RequestOptions::new().with_trace_context(TraceContext::new(PARENT, None));
            session
                .call_tool("echo", Some(json!({"text": "x"})), options)
                .await
        }
    });
    let request = server.expect_request("tools/call").await;
    let params = request.params.clone().unwrap().into_value().unwrap();
    assert_eq!(params["_meta"]["traceparent"], PARENT);
    assert!(params["_meta"].get("tracestate").is_none());
    assert!(params["_meta"]["progressToken"].is_i64());
    server
        .respond(
            request.id,
            json!({"content": [{"type": "text", "text": "x"}]}),
        )
        .await;
    call.await.unwrap().unwrap();
    // The next request without one carries none.
    let listing = tokio::spawn({
        let session = session.clone();
        async move { session.list_tools(None, RequestOptions::new()).await }
    });
    let request = server.expect_request("tools/list").await;
    let params = request.params.clone().unwrap().into_value().unwrap();
    assert!(params["_meta"].get("traceparent").is_none());
    server.respond(request.id, json!({"tools": []})).await;
    listing.await.unwrap().unwrap();
    session.close().await;
}

#[test]
fn spliced_params_are_written_as_valid_json() {
    let raw =
        serde_json::value::RawValue::from_string(r#"{"name":"é","arguments":{"q":"a\"b"}}"#.into())
            .unwrap();
    let params = with_progress_token(Some(Payload::Raw(raw)), 9).unwrap();
    let message: Message = Request::new(9, "tools/call", Some(params)).into();
    let mut line = Vec::new();
    message.write_json(&mut line).unwrap();
    let parsed: Value = serde_json::from_slice(&line).expect("valid JSON");
    assert_eq!(parsed["params"]["_meta"]["progressToken"], 9);
    assert_eq!(parsed["params"]["arguments"]["q"], "a\"b");
    assert_eq!(
        String::from_utf8(line).unwrap(),
        serde_json::to_string(&message).unwrap()
    );
}

/// A [`ChannelTransport`] whose receiver also delivers the errors a test injects, as a
/// transport reports a message it could not read.
struct WithInjectedErrors {
    inner: ChannelTransport,
    errors: tokio::sync::mpsc::Receiver<mcp_core::TransportError>,
}

struct InjectingReceiver {
    inner: crate::channel::ChannelReceiver,
    errors: tokio::sync::mpsc::Receiver<mcp_core::TransportError>,
}

#[async_trait::async_trait]
impl TransportReceiver for InjectingReceiver {
    async fn receive(&mut self) -> Option<Result<Message, mcp_core::TransportError>> {
        tokio::select! {
            Some(e) = self.errors.recv() => Some(Err(e)),
            message = self.inner.receive() => message,
        }
    }
}

impl Transport for WithInjectedErrors {
    type Sender = crate::channel::ChannelSender;
    type Receiver = InjectingReceiver;
    fn split(self) -> (Self::Sender, InjectingReceiver) {
        let (sender, inner) = self.inner.split();
        let receiver = InjectingReceiver {
            inner,
            errors: self.errors,
        };
        (sender, receiver)
    }
}

#[tokio::test(start_paused = true)]
async fn a_broken_answer_naming_its_request_as_a_numeric_string_fails_it_at_once() {
    let (transport, end) = ChannelTransport::pair(8);
    let (inject, errors) = tokio::sync::mpsc::channel(4);
    let mut server = FakeServer { end };
    let server_task = tokio::spawn(async move {
        server.handshake("2025-11-25").await;
        server
    });
    let transport = WithInjectedErrors {
        inner: transport,
        errors,
    };
    let session = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .expect("connects");
    let mut server = server_task.await.unwrap();
    let deadline = Duration::from_secs(30);
    let options = RequestOptions::new().with_timeout(deadline);
    let started = Instant::now();
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("t", None, options).await }
    });
    let request = server.expect_request("tools/call").await;
    let RequestId::Number(n) = request.id else {
        panic!("the client sends numeric ids: {:?}", request.id)
    };
    // What any transport reports for `{"jsonrpc":"2.0","id":"<n>","result":<broken>`: the id
    // as the server wrote it, a string.
    let broken = mcp_core::TransportError::recoverable(
        mcp_core::transport::TransportErrorKind::InvalidMessage,
        "the server sent invalid JSON-RPC message: nested too deep",
    )
    .for_request(Some(RequestId::from(n.to_string().as_str())));
    inject.send(broken).await.unwrap();
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.message().contains("nested too deep"), "{err}");
    assert!(
        Instant::now() - started < deadline,
        "ended by its deadline, not by the broken answer"
    );
    assert_eq!(session.pending_requests(), 0);
    session.close().await;
}
