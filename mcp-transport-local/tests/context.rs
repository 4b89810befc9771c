//! What handlers do through their context: progress, log messages, list changes, requests to
//! the client — and cancellation reaching them, or bounding them when they ignore it.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{alive_tasks, connect, test_server, Path, Seen, TestHandler};
use mcp_core::types::LoggingLevel;
use mcp_core::{Era, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::ServerNotification;
use mcp_transport_local::{LocalTool, NoArguments, RequestContext};
use serde_json::json;

const ERAS: [Option<Era>; 2] = [None, Some(Era::Legacy)];

#[tokio::test]
async fn progress_reaches_the_caller_in_order_before_the_result() {
    for path in Path::BOTH {
        for era in ERAS {
            let server = test_server(path, Arc::default());
            let session = connect(&server, Arc::default(), era).await;
            let seen = Arc::new(Mutex::new(Vec::new()));
            let record = seen.clone();
            let options = RequestOptions::new().on_progress(move |p| {
                record
                    .lock()
                    .unwrap()
                    .push((p.progress, p.total, p.message.clone()));
            });
            let result = session
                .call_tool("progress", Some(json!({"steps": 5})), options)
                .await
                .unwrap();
            assert_eq!(result.text(), "5 steps");
            // All five were dispatched before the call returned: no waiting here.
            let seen = seen.lock().unwrap().clone();
            let steps: Vec<f64> = seen.iter().map(|(p, _, _)| *p).collect();
            assert_eq!(steps, vec![1.0, 2.0, 3.0, 4.0, 5.0], "{path:?} {era:?}");
            assert!(seen
                .iter()
                .all(|(_, total, m)| *total == Some(5.0) && m.as_deref() == Some("working")));
            session.close().await;
        }
    }
}

#[tokio::test]
async fn log_messages_reach_the_client_at_the_level_it_chose() {
    for path in Path::BOTH {
        for era in ERAS {
            let server = test_server(path, Arc::default());
            let handler = Arc::new(TestHandler::default());
            let session = connect(&server, handler.clone(), era).await;
            session
                .set_logging_level(LoggingLevel::Warning, RequestOptions::new())
                .await
                .unwrap();
            session
                .call_tool("log", Some(json!({"message": "m"})), RequestOptions::new())
                .await
                .unwrap();
            // Dispatched before the answer: the handler has seen them already.
            let logged: Vec<_> = handler
                .notifications
                .lock()
                .unwrap()
                .iter()
                .filter_map(|n| match n {
                    ServerNotification::LoggingMessage(m) => Some(m.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(logged.len(), 1, "{path:?} {era:?}: {logged:?}");
            assert_eq!(logged[0].level, LoggingLevel::Error);
            assert_eq!(logged[0].data, json!("error: m"));
            assert_eq!(logged[0].logger.as_deref(), Some("tests"));
            session.close().await;
        }
    }
}

#[tokio::test]
async fn tool_list_changes_reach_every_connected_client() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let modern = connect(&server, Arc::default(), None).await;
        let legacy = connect(&server, Arc::default(), Some(Era::Legacy)).await;
        let mut modern_stream = modern.subscribe();
        let mut legacy_stream = legacy.subscribe();
        let extra = LocalTool::new(
            "extra",
            |_ctx: RequestContext, _a: NoArguments| async move { "extra" },
        );
        server.add_tool(extra).unwrap();
        for stream in [&mut modern_stream, &mut legacy_stream] {
            let next = tokio::time::timeout(common::DEADLINE, stream.next()).await;
            assert_eq!(
                next,
                Ok(Some(ServerNotification::ToolListChanged)),
                "{path:?}"
            );
        }
        let tools = modern.list_all_tools(RequestOptions::new()).await.unwrap();
        assert!(tools.iter().any(|t| t.name == "extra"));
        assert!(server.remove_tool("extra"));
        assert!(!server.remove_tool("extra"));
        let next = tokio::time::timeout(common::DEADLINE, legacy_stream.next()).await;
        assert_eq!(next, Ok(Some(ServerNotification::ToolListChanged)));
        modern.close().await;
        legacy.close().await;
    }
}

#[tokio::test]
async fn the_server_asks_the_client_and_the_session_handler_answers() {
    for path in Path::BOTH {
        for era in ERAS {
            let server = test_server(path, Arc::default());
            let handler = Arc::new(TestHandler::default());
            let session = connect(&server, handler.clone(), era).await;
            let answer = session
                .call_tool("ask", Some(json!({})), RequestOptions::new())
                .await
                .unwrap();
            assert_eq!(answer.text(), "hello \"tester\"", "{path:?} {era:?}");
            assert_eq!(handler.elicitations.load(Ordering::SeqCst), 1);
            let roots = session
                .call_tool("roots", Some(json!({})), RequestOptions::new())
                .await
                .unwrap();
            assert_eq!(roots.text(), "1 roots", "{path:?} {era:?}");
            assert_eq!(server.running_calls(), 0);
            session.close().await;
        }
    }
}

#[tokio::test]
async fn a_client_without_the_capability_is_not_asked() {
    for era in ERAS {
        let server = test_server(Path::InPlace, Arc::default());
        let transport = server.connect().unwrap();
        let session = mcp_session::ClientSession::connect(transport, (), common::options(era))
            .await
            .unwrap();
        let answer = session
            .call_tool("ask", Some(json!({})), RequestOptions::new())
            .await
            .unwrap();
        assert!(answer.is_error(), "{era:?}");
        assert!(
            answer.text().contains("did not declare the capability"),
            "{}",
            answer.text()
        );
        session.close().await;
    }
}

#[tokio::test]
async fn the_callers_deadline_cancels_the_handler() {
    for path in Path::BOTH {
        for era in ERAS {
            let seen = Arc::new(Seen::default());
            let server = test_server(path, seen.clone());
            let session = connect(&server, Arc::default(), era).await;
            let before = server.cancellations();
            let error = session
                .call_tool(
                    "watch_cancel",
                    Some(json!({})),
                    RequestOptions::new().with_timeout(Duration::from_millis(200)),
                )
                .await
                .expect_err("the deadline passes");
            assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
            mcp_testkit::wait::until("the handler's token firing", common::DEADLINE, || {
                seen.cancellation_reached.load(Ordering::SeqCst)
            })
            .await;
            mcp_testkit::wait::until("the handler being dropped", common::DEADLINE, || {
                seen.handler_dropped.load(Ordering::SeqCst)
            })
            .await;
            mcp_testkit::wait::until("the server counting it", common::DEADLINE, || {
                server.cancellations() > before
            })
            .await;
            mcp_testkit::wait::until("no call running", common::DEADLINE, || {
                server.running_calls() == 0
            })
            .await;
            let after = session
                .call_tool("echo", Some(json!({"text": "on"})), RequestOptions::new())
                .await
                .unwrap();
            assert_eq!(after.text(), "on", "{path:?} {era:?}");
            session.close().await;
        }
    }
}

#[tokio::test]
async fn a_caller_dropping_the_call_cancels_the_handler() {
    for path in Path::BOTH {
        let seen = Arc::new(Seen::default());
        let server = test_server(path, seen.clone());
        let session = connect(&server, Arc::default(), None).await;
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool("watch_cancel", Some(json!({})), RequestOptions::new())
                    .await
            })
        };
        mcp_testkit::wait::until("the call running", common::DEADLINE, || {
            server.running_calls() == 1
        })
        .await;
        call.abort();
        mcp_testkit::wait::until("the handler's token firing", common::DEADLINE, || {
            seen.cancellation_reached.load(Ordering::SeqCst)
        })
        .await;
        mcp_testkit::wait::until("no call running", common::DEADLINE, || {
            server.running_calls() == 0
        })
        .await;
        assert_eq!(server.cancellations(), 1, "{path:?}");
        session.close().await;
    }
}

#[tokio::test]
async fn a_tool_that_ignores_cancellation_is_bounded_by_the_deadline_and_not_leaked() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let session = connect(&server, Arc::default(), None).await;
        let tasks_before = alive_tasks();
        let started = tokio::time::Instant::now();
        let error = session
            .call_tool(
                "stubborn",
                Some(json!({})),
                RequestOptions::new().with_timeout(Duration::from_millis(300)),
            )
            .await
            .expect_err("the deadline passes");
        assert_eq!(error.kind(), ErrorKind::Timeout, "{path:?}: {error}");
        assert!(started.elapsed() < common::DEADLINE);
        mcp_testkit::wait::until("the stubborn call ending", common::DEADLINE, || {
            server.running_calls() == 0
        })
        .await;
        mcp_testkit::wait::until("its task ending", common::DEADLINE, || {
            alive_tasks() <= tasks_before
        })
        .await;
        session.close().await;
    }
}

#[tokio::test]
async fn a_cancelled_handler_sees_its_token_fire_first() {
    // The token is cancelled before the handler is dropped, so code it handed elsewhere can
    // react; `is_cancelled` agrees.
    let order = Arc::new(AtomicU64::new(0));
    let observed = order.clone();
    let server = mcp_transport_local::LocalServer::builder("s", "1")
        .tool(LocalTool::new(
            "wait",
            move |ctx: RequestContext, _a: NoArguments| {
                let observed = observed.clone();
                async move {
                    struct OnDrop(RequestContext, Arc<AtomicU64>);
                    impl Drop for OnDrop {
                        fn drop(&mut self) {
                            let code = if self.0.is_cancelled() { 1 } else { 2 };
                            self.1.store(code, Ordering::SeqCst);
                        }
                    }
                    let _guard = OnDrop(ctx.clone(), observed);
                    ctx.cancelled().await;
                    "cancelled"
                }
            },
        ))
        .build()
        .unwrap();
    let session = connect(&server, Arc::default(), None).await;
    let error = session
        .call_tool(
            "wait",
            Some(json!({})),
            RequestOptions::new().with_timeout(Duration::from_millis(100)),
        )
        .await
        .expect_err("times out");
    assert_eq!(error.kind(), ErrorKind::Timeout);
    mcp_testkit::wait::until("the guard dropping", common::DEADLINE, || {
        order.load(Ordering::SeqCst) != 0
    })
    .await;
    assert_eq!(order.load(Ordering::SeqCst), 1);
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_request_to_a_client_that_does_not_read_is_bounded_by_the_limit() {
    use mcp_core::jsonrpc::{Message, Notification, Payload, Request, RequestId};
    use mcp_core::{Transport, TransportSender};
    use mcp_transport_local::LocalServer;

    let outcome = Arc::new(Mutex::new(None::<String>));
    let seen = outcome.clone();
    let server = LocalServer::builder("unread", "1.0.0")
        // One queued message fills the queue: the client below never reads.
        .queue_capacity(1)
        .client_request_timeout(Duration::from_secs(2))
        .tool(LocalTool::new(
            "ask",
            move |ctx: RequestContext, _: NoArguments| {
                let seen = seen.clone();
                async move {
                    let asked = ctx.list_roots().await.map(|_| ());
                    *seen.lock().unwrap() = Some(match asked {
                        Ok(()) => "answered".to_owned(),
                        Err(e) => e.to_string(),
                    });
                    "done"
                }
            },
        ))
        .build()
        .expect("a valid server");
    let transport = server.connect().expect("connects");
    let (sender, _unread) = transport.split();
    let initialize = Request::new(
        RequestId::Number(1),
        "initialize",
        Some(Payload::Value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "raw", "version": "1"}
        }))),
    );
    sender.send(Message::Request(initialize)).await.unwrap();
    let initialized = Notification::new("notifications/initialized", None);
    sender
        .send(Message::Notification(initialized))
        .await
        .unwrap();
    let call = Request::new(
        RequestId::Number(2),
        "tools/call",
        Some(Payload::Value(json!({"name": "ask", "arguments": {}}))),
    );
    sender.send(Message::Request(call)).await.unwrap();
    // The initialize answer fills the queue, so the request to the client cannot even be
    // queued: the limit still ends the wait.
    mcp_testkit::wait::until(
        "the tool's request to the client gives up",
        common::DEADLINE,
        || outcome.lock().unwrap().is_some(),
    )
    .await;
    let said = outcome.lock().unwrap().clone().unwrap();
    assert_eq!(said, "the client did not answer roots/list within 2s");
}
