//! The in-place path (`in_place.rs`) against a scripted transport that answers some requests
//! in place and sends the others: the `_meta` additions as values, deadlines (and progress
//! extending them), the answer future dropped on timeout, errors and their delivery, and a
//! closed session refusing new requests.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::*;
use crate::channel::{ChannelReceiver, ChannelSender, ChannelTransport, ServerEnd};
use mcp_core::jsonrpc::{ErrorObject, Message, Request};
use mcp_core::service::TraceContext;
use mcp_core::transport::{InPlaceAnswer, RequestMeta, TransportError, TransportErrorKind};
use mcp_core::{Delivery, ErrorKind, McpServiceExt, TransportCapabilities};

/// What the script saw of one in-place request.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    params: Option<Value>,
    progress_token: Option<i64>,
    modern: bool,
    trace_context: Option<TraceContext>,
}

type Script = dyn Fn(&Request) -> Option<InPlaceAnswer> + Send + Sync;

/// A channel transport whose sender answers what the script answers, in place.
struct ScriptedTransport {
    sender: ChannelSender,
    receiver: ChannelReceiver,
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

struct ScriptedSender {
    inner: ChannelSender,
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Transport for ScriptedTransport {
    type Sender = ScriptedSender;
    type Receiver = ChannelReceiver;

    fn split(self) -> (ScriptedSender, ChannelReceiver) {
        let sender = ScriptedSender {
            inner: self.sender,
            script: self.script,
            seen: self.seen,
        };
        (sender, self.receiver)
    }
}

#[async_trait]
impl TransportSender for ScriptedSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.inner.send(message).await
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.inner.close().await
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("scripted").with_values_preferred(true)
    }

    fn answer_in_place(
        &self,
        request: Request,
        meta: RequestMeta<'_>,
    ) -> Result<InPlaceAnswer, Request> {
        let Some(answer) = (self.script)(&request) else {
            return Err(request);
        };
        lock(&self.seen).push(Seen {
            method: request.method.clone(),
            params: request.params.map(|p| p.into_value().unwrap()),
            progress_token: meta.progress_token,
            modern: meta.modern.is_some_and(|m| {
                m.get(mcp_core::types::meta::PROTOCOL_VERSION) == Some(&json!("2026-07-28"))
            }),
            trace_context: meta.trace_context.cloned(),
        });
        Ok(answer)
    }
}

fn answered(result: Value) -> InPlaceAnswer {
    Box::pin(std::future::ready(Ok(Ok(Payload::Value(result)))))
}

/// A legacy `initialize` answer, and `tools/call` answered by `call`.
fn script(call: impl Fn(&Request) -> InPlaceAnswer + Send + Sync + 'static) -> Arc<Script> {
    Arc::new(move |request: &Request| match request.method.as_str() {
        "initialize" => Some(answered(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": {"name": "in-place", "version": "1"}
        }))),
        "tools/call" => Some(call(request)),
        _ => None,
    })
}

async fn connect(
    script: Arc<Script>,
    options: SessionOptions,
) -> (ClientSession, ServerEnd, Arc<Mutex<Vec<Seen>>>) {
    let (channel, end) = ChannelTransport::pair(64);
    let (sender, receiver) = channel.split();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let transport = ScriptedTransport {
        sender,
        receiver,
        script,
        seen: seen.clone(),
    };
    let session = ClientSession::connect(transport, (), options.with_era(Era::Legacy))
        .await
        .expect("connects");
    (session, end, seen)
}

fn echo_result() -> Value {
    json!({"content": [{"type": "text", "text": "in place"}]})
}

#[tokio::test]
async fn an_answer_given_in_place_is_the_result_and_meta_comes_as_values() {
    let (session, mut end, seen) = connect(
        script(|_| answered(echo_result())),
        SessionOptions::default(),
    )
    .await;
    // The handshake's notification still went the ordinary way.
    let initialized = end.incoming.recv().await.unwrap();
    assert!(
        matches!(initialized, Message::Notification(n) if n.method == "notifications/initialized")
    );
    let result = session
        .call_tool("echo", Some(json!({"text": "x"})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(result.text(), "in place");
    let seen = lock(&seen).clone();
    assert_eq!(seen[0].method, "initialize");
    assert_eq!(seen[0].progress_token, None);
    let call = &seen[1];
    assert_eq!(call.method, "tools/call");
    // The caller's parameters, untouched: the session's additions came as values.
    assert_eq!(
        call.params,
        Some(json!({"name": "echo", "arguments": {"text": "x"}}))
    );
    assert!(call.progress_token.is_some());
    assert!(!call.modern);
    assert_eq!(call.trace_context, None);
    assert_eq!(session.pending_requests(), 0);
    session.close().await;
}

#[tokio::test]
async fn a_trace_context_comes_as_a_value_in_place_and_the_params_stay_untouched() {
    let (session, mut end, seen) = connect(
        script(|_| answered(echo_result())),
        SessionOptions::default(),
    )
    .await;
    let _initialized = end.incoming.recv().await.unwrap();
    let trace = TraceContext::new(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        Some("congo=t61rcWkgMzE".into()),
    );
    session
        .call_tool(
            "echo",
            Some(json!({"text": "x"})),
            RequestOptions::new().with_trace_context(trace.clone()),
        )
        .await
        .unwrap();
    let call = lock(&seen)[1].clone();
    assert_eq!(call.trace_context, Some(trace));
    assert_eq!(
        call.params,
        Some(json!({"name": "echo", "arguments": {"text": "x"}}))
    );
    session.close().await;
}

#[tokio::test]
async fn a_declined_request_is_sent_with_its_meta_spliced_in() {
    let (session, mut end, _seen) = connect(
        script(|_| answered(echo_result())),
        SessionOptions::default(),
    )
    .await;
    let _initialized = end.incoming.recv().await.unwrap();
    let listing = tokio::spawn({
        let session = session.clone();
        async move { session.list_tools(None, RequestOptions::new()).await }
    });
    let request = match end.incoming.recv().await.unwrap() {
        Message::Request(r) => r,
        other => panic!("expected the request, got {other:?}"),
    };
    assert_eq!(request.method, "tools/list");
    let params = request.params.clone().unwrap().into_value().unwrap();
    assert!(params["_meta"]["progressToken"].is_i64());
    end.outgoing
        .send(
            mcp_core::jsonrpc::Response::success(request.id, Payload::Value(json!({"tools": []})))
                .into(),
        )
        .await
        .unwrap();
    assert!(listing.await.unwrap().unwrap().tools.is_empty());
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn the_deadline_holds_and_drops_the_answer() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let never = move |_: &Request| -> InPlaceAnswer {
        struct SetOnDrop(Arc<AtomicBool>);
        impl Drop for SetOnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let guard = SetOnDrop(flag.clone());
        Box::pin(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            unreachable!()
        })
    };
    let (session, _end, _seen) = connect(script(never), SessionOptions::default()).await;
    let started = tokio::time::Instant::now();
    let error = session
        .call_tool(
            "slow",
            None,
            RequestOptions::new().with_timeout(Duration::from_secs(3)),
        )
        .await
        .expect_err("times out");
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(error.delivery(), Some(Delivery::Sent));
    assert!(
        error
            .message()
            .contains("tools/call got no response within 3s"),
        "{error}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the answer future is dropped"
    );
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn progress_through_the_receiver_reaches_the_callback_and_extends_the_deadline() {
    let (answer_tx, answer_rx) = tokio::sync::oneshot::channel::<Value>();
    let answer_rx = Arc::new(Mutex::new(Some(answer_rx)));
    let call = move |_: &Request| -> InPlaceAnswer {
        let answer = lock(&answer_rx).take().expect("one call");
        Box::pin(async move { Ok(Ok(Payload::Value(answer.await.unwrap()))) })
    };
    let (session, end, seen) = connect(script(call), SessionOptions::default()).await;
    let updates = Arc::new(AtomicUsize::new(0));
    let counted = updates.clone();
    let options = RequestOptions::new()
        .with_timeout(Duration::from_secs(2))
        .with_reset_on_progress(Duration::from_secs(60))
        .on_progress(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        });
    let calling = tokio::spawn({
        let session = session.clone();
        async move { session.call_tool("slow", None, options).await }
    });
    // Three progress notifications 1.5 s apart keep a 2 s deadline alive for 4.5 s (the
    // runtime's clock is paused: these sleeps take no real time).
    let mut polls = 0;
    let token = loop {
        polls += 1;
        assert!(polls < 100, "the call never reached the transport");
        if let Some(token) = lock(&seen)
            .iter()
            .find(|s| s.method == "tools/call")
            .and_then(|s| s.progress_token)
        {
            break token;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    for step in 1..=3 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let note = Notification::new(
            "notifications/progress",
            Some(Payload::Value(
                json!({"progressToken": token, "progress": step}),
            )),
        );
        end.outgoing.send(note.into()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!calling.is_finished(), "progress kept the call alive");
    answer_tx.send(echo_result()).unwrap();
    let result = calling.await.unwrap().unwrap();
    assert_eq!(result.text(), "in place");
    assert_eq!(updates.load(Ordering::SeqCst), 3);
    session.close().await;
}

#[tokio::test]
async fn errors_keep_their_code_and_say_how_far_the_request_got() {
    let calls = Arc::new(AtomicUsize::new(0));
    let count = calls.clone();
    let call = move |_: &Request| -> InPlaceAnswer {
        match count.fetch_add(1, Ordering::SeqCst) {
            0 => Box::pin(std::future::ready(Ok(Err(ErrorObject::invalid_params(
                "invalid arguments: field `text`",
            ))))),
            1 => Box::pin(std::future::ready(Err(TransportError::fatal(
                TransportErrorKind::PeerGone,
                "the server died",
            )))),
            _ => Box::pin(std::future::ready(Err(TransportError::fatal(
                TransportErrorKind::Closed,
                "closed",
            )
            .never_sent()))),
        }
    };
    let (session, _end, _seen) = connect(script(call), SessionOptions::default()).await;
    let invalid = session
        .call_tool("echo", None, RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(invalid.kind(), ErrorKind::InvalidParams);
    assert_eq!(invalid.field(), Some("text"));
    assert_eq!(invalid.delivery(), Some(Delivery::Answered));
    assert_eq!(invalid.subject(), Some("echo"));
    let gone = session
        .call_tool("echo", None, RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(gone.kind(), ErrorKind::Network);
    assert_eq!(gone.delivery(), Some(Delivery::Sent));
    let closed = session
        .call_tool("echo", None, RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(closed.delivery(), Some(Delivery::NotSent));
    session.close().await;
}

#[tokio::test]
async fn a_closed_session_refuses_in_place_requests() {
    let (session, _end, _seen) = connect(
        script(|_| answered(echo_result())),
        SessionOptions::default(),
    )
    .await;
    session.close().await;
    // With and without the pending-table entry progress needs.
    for options in [
        RequestOptions::new(),
        RequestOptions::new().on_progress(|_| {}),
    ] {
        let error = session.call_tool("echo", None, options).await.unwrap_err();
        assert_eq!(error.delivery(), Some(Delivery::NotSent), "{error}");
        assert_eq!(error.kind(), ErrorKind::Network, "{error}");
    }
}

/// A scripted transport whose receiver can be made to fail with a chosen error.
struct FailingReceiver {
    inner: ChannelReceiver,
    failure: tokio::sync::mpsc::Receiver<TransportError>,
}

#[async_trait]
impl mcp_core::transport::TransportReceiver for FailingReceiver {
    async fn receive(&mut self) -> Option<Result<Message, TransportError>> {
        tokio::select! {
            message = self.inner.receive() => message,
            Some(error) = self.failure.recv() => Some(Err(error)),
        }
    }
}

struct FailingTransport {
    scripted: ScriptedTransport,
    failure: tokio::sync::mpsc::Receiver<TransportError>,
}

impl Transport for FailingTransport {
    type Sender = ScriptedSender;
    type Receiver = FailingReceiver;

    fn split(self) -> (ScriptedSender, FailingReceiver) {
        let (sender, inner) = self.scripted.split();
        let receiver = FailingReceiver {
            inner,
            failure: self.failure,
        };
        (sender, receiver)
    }
}

#[tokio::test]
async fn a_connection_that_fails_leaves_pending_requests_possibly_delivered() {
    // Whatever kind the failure has (here one that, on `send`, would mean "never sent"), a
    // request already handed to the transport may have reached the server: a retry layer must
    // not send a side-effecting call again.
    let (channel, mut end) = ChannelTransport::pair(64);
    let (sender, receiver) = channel.split();
    let (fail, failure) = tokio::sync::mpsc::channel(1);
    let handshake_only: Arc<Script> = Arc::new(|request: &Request| {
        (request.method == "initialize").then(|| {
            answered(json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "in-place", "version": "1"}
            }))
        })
    });
    let transport = FailingTransport {
        scripted: ScriptedTransport {
            sender,
            receiver,
            script: handshake_only,
            seen: Arc::new(Mutex::new(Vec::new())),
        },
        failure,
    };
    let options = SessionOptions::default().with_era(Era::Legacy);
    let session = ClientSession::connect(transport, (), options)
        .await
        .expect("connects");
    let calling = tokio::spawn({
        let session = session.clone();
        async move {
            session
                .call_tool("record", None, RequestOptions::new())
                .await
        }
    });
    // The call reached the server's end of the connection...
    let deadline = Duration::from_secs(10);
    loop {
        let message = tokio::time::timeout(deadline, end.incoming.recv())
            .await
            .expect("the call is sent in time")
            .expect("the connection is open");
        if matches!(&message, Message::Request(r) if r.method == "tools/call") {
            break;
        }
    }
    // ...and then the connection fails.
    fail.send(TransportError::fatal(
        TransportErrorKind::Connect,
        "the connection was reset",
    ))
    .await
    .expect("the receiver listens");
    let error = tokio::time::timeout(deadline, calling)
        .await
        .expect("the call ends in time")
        .expect("the task ran")
        .expect_err("the call fails");
    assert_eq!(error.delivery(), Some(Delivery::Sent), "{error}");
    assert!(
        error.message().contains("the connection was reset"),
        "{error}"
    );
    session.close().await;
}
