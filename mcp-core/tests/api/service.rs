//! The seam itself: layers compose, the typed methods work on any service, and operations
//! carry what the layers need.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;

use mcp_core::error::Error;
use mcp_core::jsonrpc::Payload;
use mcp_core::service::RequestOptions;
use mcp_core::service::*;
use mcp_core::types::methods;
use mcp_core::{Delivery, ErrorKind, McpServiceExt};

/// Answers every operation from a script and records what it saw.
#[derive(Default)]
struct Scripted {
    seen: Mutex<Vec<Operation>>,
}

#[async_trait]
impl McpService for Scripted {
    async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        self.seen.lock().unwrap().push(operation.clone());
        match operation.method.as_ref() {
            methods::TOOLS_LIST => {
                let cursor = operation
                    .params
                    .as_ref()
                    .and_then(|p| p.deserialize::<serde_json::Value>().ok())
                    .and_then(|v| v["cursor"].as_str().map(str::to_owned));
                Ok(Payload::Value(match cursor.as_deref() {
                    None => {
                        json!({"tools": [{"name": "a", "inputSchema": {}}], "nextCursor": "p2"})
                    }
                    _ => json!({"tools": [{"name": "b", "inputSchema": {}}]}),
                }))
            }
            methods::TOOLS_CALL => Ok(Payload::Value(
                json!({"content": [{"type": "text", "text": "ok"}]}),
            )),
            methods::RESOURCES_READ => Err(operation.attach_subject(
                Error::new(ErrorKind::Resource, "missing").with_delivery(Delivery::Answered),
            )),
            _ => Ok(Payload::Value(json!({}))),
        }
    }
}

/// Tags every operation's method on the way in, to show the order layers run in.
struct Tag {
    name: &'static str,
    log: Arc<Mutex<Vec<&'static str>>>,
}

struct Tagged<S> {
    inner: S,
    name: &'static str,
    log: Arc<Mutex<Vec<&'static str>>>,
}

impl<S> Layer<S> for Tag {
    type Service = Tagged<S>;
    fn layer(&self, inner: S) -> Tagged<S> {
        Tagged {
            inner,
            name: self.name,
            log: self.log.clone(),
        }
    }
}

#[async_trait]
impl<S: McpService> McpService for Tagged<S> {
    async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        self.log.lock().unwrap().push(self.name);
        self.inner.call(operation).await
    }
}

#[tokio::test]
async fn stacked_layers_run_outer_first_and_are_services_themselves() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let tag = |name| Tag {
        name,
        log: log.clone(),
    };
    let stack = Stack::new(tag("inner"), Stack::new(tag("middle"), tag("outer")));
    let service = stack.layer(Identity.layer(Scripted::default()));
    service.ping(RequestOptions::new()).await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["outer", "middle", "inner"]);
}

#[tokio::test]
async fn box_layers_stack_at_run_time() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut service: BoxService = Arc::new(Scripted::default());
    for name in ["first", "second"] {
        service = BoxLayer(Tag {
            name,
            log: log.clone(),
        })
        .layer(service);
    }
    let tools = service.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    // Two pages, each through both layers, the last added outermost.
    assert_eq!(*log.lock().unwrap(), ["second", "first", "second", "first"]);
}

#[tokio::test]
async fn typed_methods_mark_what_is_safe_to_send_twice() {
    let service = Scripted::default();
    service.ping(RequestOptions::new()).await.unwrap();
    service
        .call_tool("echo", Some(json!({"text": "hi"})), RequestOptions::new())
        .await
        .unwrap();
    let err = service
        .read_resource("data://x", RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.subject(), Some("data://x"));
    service
        .get_prompt("greet", None, RequestOptions::new())
        .await
        .unwrap_err();
    let seen = service.seen.lock().unwrap();
    let marks: Vec<_> = seen
        .iter()
        .map(|o| (o.method.as_ref(), o.idempotent, o.subject.as_deref()))
        .collect();
    assert_eq!(
        marks,
        [
            ("ping", true, None),
            ("tools/call", false, Some("echo")),
            ("resources/read", true, Some("data://x")),
            ("prompts/get", true, Some("greet")),
        ]
    );
    assert_eq!(seen[1].tool_name(), Some("echo"));
    assert_eq!(seen[0].tool_name(), None);
}

#[test]
fn idempotence_follows_the_method_and_can_be_overridden() {
    for method in [
        "ping",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
    ] {
        assert!(is_idempotent_method(method), "{method}");
    }
    assert!(!is_idempotent_method("tools/call"));
    assert!(!is_idempotent_method("x/custom"));
    let call = Operation::call_tool("lookup", None);
    assert!(!call.idempotent);
    assert!(call.with_idempotent(true).idempotent);
}

#[test]
fn operation_debug_never_prints_arguments() {
    let op = Operation::call_tool("login", Some(json!({"password": "hunter2"})));
    let text = format!("{op:?}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("login"), "{text}");
}

#[test]
fn raw_tool_calls_keep_the_arguments_text() {
    let args = serde_json::value::RawValue::from_string(r#"{"q": "a b"}"#.into()).unwrap();
    let op = Operation::call_tool_raw("search", &args).unwrap();
    assert_eq!(
        op.params.unwrap().to_json_string(),
        r#"{"name":"search","arguments":{"q": "a b"}}"#
    );
}

/// A `tools/call` answer that is not complete (a task handle nothing followed) is refused, not
/// read as an empty result.
#[test]
fn a_tool_answer_that_is_not_complete_is_not_a_result() {
    let handle = json!({"resultType": "task", "taskId": "t-1", "status": "working"});
    let err =
        mcp_core::types::CallToolResult::from_answer(Payload::Value(handle), "build").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.message().contains("followed by mcp-tasks"), "{err}");
    assert_eq!(err.subject(), Some("build"));
    assert_eq!(err.delivery(), Some(Delivery::Answered));
    let complete = json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]});
    let result =
        mcp_core::types::CallToolResult::from_answer(Payload::Value(complete), "build").unwrap();
    assert_eq!(result.text(), "ok");
}

#[test]
fn a_replayable_operation_keeps_its_parameters_as_raw_json_and_everything_else() {
    let value = serde_json::json!({"name": "search", "arguments": {"q": "mcp", "n": 3}});
    let operation = Operation::new("tools/call", Some(Payload::Value(value.clone())))
        .with_subject("search")
        .with_idempotent(true);
    let replayable = operation.into_replayable();
    match &replayable.params {
        Some(Payload::Raw(raw)) => {
            let read: serde_json::Value = serde_json::from_str(raw.get()).unwrap();
            assert_eq!(read, value);
        }
        other => panic!("expected raw JSON parameters, got {other:?}"),
    }
    assert_eq!(replayable.method, "tools/call");
    assert_eq!(replayable.subject.as_deref(), Some("search"));
    assert!(replayable.idempotent);

    // Parameters that are already text are kept as they are.
    let shared = Operation::call_tool("search", Some(serde_json::json!({"q": "mcp"})));
    let before = shared.params.clone();
    let kept = shared.into_replayable();
    assert!(matches!(kept.params, Some(Payload::Shared(_))));
    assert_eq!(kept.params, before);
}
