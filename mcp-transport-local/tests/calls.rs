//! Calling tools: typed arguments and results, arguments refused with the field named, many
//! calls at once, and failures that stay inside the call (a tool error, a panic).

mod common;

use std::sync::Arc;

use common::{connect, test_server, Path, DEADLINE};
use mcp_core::jsonrpc::codes;
use mcp_core::{Era, ErrorKind, McpService, McpServiceExt, Operation, Payload, RequestOptions};
use serde_json::json;

const ERAS: [Option<Era>; 2] = [None, Some(Era::Legacy)];

#[tokio::test]
async fn typed_arguments_and_results_round_trip() {
    for path in Path::BOTH {
        for era in ERAS {
            let server = test_server(path, Arc::default());
            let session = connect(&server, Arc::default(), era).await;
            let sum = session
                .call_tool(
                    "add",
                    Some(json!({"a": 2, "b": 0.5})),
                    RequestOptions::new(),
                )
                .await
                .unwrap();
            assert_eq!(
                sum.structured_content,
                Some(json!({"sum": 2.5})),
                "{path:?} {era:?}"
            );
            assert_eq!(sum.text(), r#"{"sum":2.5}"#);
            assert!(!sum.is_error());
            let found = session
                .call_tool(
                    "search",
                    Some(json!({"query": "rust", "limit": 3, "filter": {"year": 2024}})),
                    RequestOptions::new(),
                )
                .await
                .unwrap();
            assert_eq!(found.text(), "rust (up to 3)");
            session.close().await;
        }
    }
}

/// A tool's text result reaches the caller typed, with no JSON between, whether answered in
/// place or through the connection's task (the channel carries messages, not bytes).
#[tokio::test]
async fn a_tool_result_reaches_the_caller_typed() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let session = connect(&server, Arc::default(), None).await;
        let arguments =
            serde_json::value::to_raw_value(&json!({"query": "q", "limit": 1})).unwrap();
        let result = session
            .call_tool_raw("search", &arguments, RequestOptions::new())
            .await
            .unwrap();
        assert!(matches!(result, Payload::Typed(_)), "{path:?}: {result:?}");
        assert_eq!(
            result.into_value().unwrap(),
            json!({"content": [{"type": "text", "text": "q (up to 1)"}]})
        );
        session.close().await;
    }
}

#[tokio::test]
async fn a_bad_argument_is_an_invalid_params_error_naming_the_field() {
    for path in Path::BOTH {
        for era in ERAS {
            let server = test_server(path, Arc::default());
            let session = connect(&server, Arc::default(), era).await;
            for (arguments, field) in [
                (json!({"query": "q"}), "limit"),
                (json!({"query": "q", "limit": -1}), "limit"),
                (json!({"query": 7, "limit": 1}), "query"),
                (json!({"query": "q", "limit": 1, "colour": "red"}), "colour"),
                (
                    json!({"query": "q", "limit": 1, "filter": {"year": "last"}}),
                    "filter.year",
                ),
            ] {
                let error = session
                    .call_tool("search", Some(arguments.clone()), RequestOptions::new())
                    .await
                    .expect_err("refused");
                let context = format!("{path:?} {era:?} {arguments}: {error}");
                assert_eq!(error.kind(), ErrorKind::InvalidParams, "{context}");
                assert_eq!(error.code(), Some(codes::INVALID_PARAMS), "{context}");
                assert_eq!(error.field(), Some(field), "{context}");
                assert!(
                    error.message().contains(&format!("field `{field}`")),
                    "{context}"
                );
                assert!(error.message().contains("tool `search`"), "{context}");
                assert_eq!(error.subject(), Some("search"), "{context}");
            }
            let error = session
                .call_tool("search", Some(json!([1, 2])), RequestOptions::new())
                .await
                .expect_err("arguments must be an object");
            assert_eq!(error.field(), Some("arguments"), "{error}");
            session.close().await;
        }
    }
}

#[tokio::test]
async fn an_unknown_tool_is_reported_as_not_found() {
    let server = test_server(Path::InPlace, Arc::default());
    let session = connect(&server, Arc::default(), None).await;
    let error = session
        .call_tool("nope", Some(json!({})), RequestOptions::new())
        .await
        .expect_err("no such tool");
    assert_eq!(error.kind(), ErrorKind::ToolNotFound, "{error}");
    session.close().await;
}

#[tokio::test]
async fn arguments_given_as_values_are_read_without_text() {
    // A caller handing the session in-memory parameters (not `call_tool`'s text).
    let server = test_server(Path::InPlace, Arc::default());
    let session = connect(&server, Arc::default(), None).await;
    let params =
        mcp_core::Payload::Value(json!({"name": "echo", "arguments": {"text": "as a value"}}));
    let result = session
        .call(Operation::new("tools/call", Some(params)))
        .await
        .unwrap()
        .into_typed::<mcp_core::types::CallToolResult>()
        .unwrap();
    assert_eq!(result.text(), "as a value");
    let params = mcp_core::Payload::Value(json!({"name": "echo", "arguments": {"text": 1}}));
    let error = session
        .call(Operation::new("tools/call", Some(params)))
        .await
        .expect_err("text must be a string");
    assert_eq!(error.field(), Some("text"), "{error}");
    session.close().await;
}

#[tokio::test]
async fn a_hundred_calls_in_flight_each_get_their_own_answer() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let session = connect(&server, Arc::default(), None).await;
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..100 {
            let session = session.clone();
            calls.spawn(async move {
                let text = format!("call-{i}");
                let result = session
                    .call_tool("echo", Some(json!({"text": text})), RequestOptions::new())
                    .await;
                (text, result)
            });
        }
        let mut answered = 0;
        while let Some(joined) = tokio::time::timeout(DEADLINE, calls.join_next())
            .await
            .expect("the calls finish in time")
        {
            let (text, result) = joined.expect("the call task");
            assert_eq!(result.unwrap().text(), text, "{path:?}");
            answered += 1;
        }
        assert_eq!(answered, 100);
        assert_eq!(server.running_calls(), 0);
        session.close().await;
    }
}

#[tokio::test]
async fn a_tool_failure_is_a_result_the_model_reads() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let session = connect(&server, Arc::default(), None).await;
        let result = session
            .call_tool("refuse", Some(json!({})), RequestOptions::new())
            .await
            .unwrap();
        assert!(result.is_error(), "{path:?}");
        assert_eq!(result.text(), "no, thank you");
        session.close().await;
    }
}

#[tokio::test]
async fn a_panicking_tool_becomes_a_tool_error_and_the_server_still_serves() {
    for path in Path::BOTH {
        for era in ERAS {
            let server = test_server(path, Arc::default());
            let session = connect(&server, Arc::default(), era).await;
            let result = session
                .call_tool("explode", Some(json!({})), RequestOptions::new())
                .await
                .expect("a panic is an answer, not a failed call");
            assert!(result.is_error(), "{path:?} {era:?}");
            assert_eq!(
                result.text(),
                "tool `explode` panicked: the fuse was lit",
                "{path:?} {era:?}"
            );
            let early = session
                .call_tool("explode_early", Some(json!({})), RequestOptions::new())
                .await
                .expect("a panic before the handler's future is an answer too");
            assert!(early.is_error());
            assert_eq!(
                early.text(),
                "tool `explode_early` panicked: lit before the call began"
            );
            let after = session
                .call_tool(
                    "echo",
                    Some(json!({"text": "still here"})),
                    RequestOptions::new(),
                )
                .await
                .unwrap();
            assert_eq!(after.text(), "still here");
            assert!(!session.is_closed());
            assert_eq!(server.running_calls(), 0);
            session.close().await;
        }
    }
}
