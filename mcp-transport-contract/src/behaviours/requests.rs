//! Calls and lists: many at once, large messages and one over the cap, results told from
//! errors, lists in pages, resources and prompts.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use mcp_core::{ErrorKind, McpServiceExt, RequestOptions};
use serde_json::json;

use super::{echo, open, within, PROMPTLY};
use crate::peer::Peer;
use crate::slow_stats::slow_stats;

/// 100 slow calls and 200 echoes in flight at once on one session: the server has more than
/// one running at a time (its own count says so), and each caller gets its own answer.
pub async fn calls_in_flight(peer: &Peer) {
    const SLOW_CALLS: u64 = 100;
    const ECHOES: u64 = 200;
    let session = open(peer).await;
    let mut slow = tokio::task::JoinSet::new();
    for i in 0..SLOW_CALLS {
        let session = session.clone();
        slow.spawn(async move {
            // `slow` stays on the server a while, so calls that travel together overlap there;
            // a transport that sent them one at a time would show one running at most.
            let waited = session
                .call_tool(
                    "slow",
                    Some(json!({ "duration_ms": 300, "steps": 0 })),
                    RequestOptions::new(),
                )
                .await
                .map(|result| result.text());
            (i, waited)
        });
    }
    let mut echoes = tokio::task::JoinSet::new();
    for i in 0..ECHOES {
        let session = session.clone();
        echoes.spawn(async move { (i, echo(&session, &format!("call-{i}")).await) });
    }
    let mut answered = 0;
    while let Some(joined) = slow.join_next().await {
        let (i, waited) = joined.expect("the call task");
        let waited = waited.unwrap_or_else(|e| panic!("{}: slow call {i} failed: {e}", peer.name));
        assert_eq!(waited, "done after 0 steps", "{}", peer.name);
        answered += 1;
    }
    while let Some(joined) = echoes.join_next().await {
        let (i, answer) = joined.expect("the call task");
        let answer = answer.unwrap_or_else(|e| panic!("{}: echo {i} failed: {e}", peer.name));
        assert_eq!(answer, format!("call-{i}"), "{}", peer.name);
        answered += 1;
    }
    assert_eq!(answered, SLOW_CALLS + ECHOES);
    let stats = slow_stats(peer, &session).await;
    assert_eq!(stats.started, SLOW_CALLS, "{}: {stats:?}", peer.name);
    assert!(
        stats.max_running > 1,
        "{}: the server never had two calls running at once: {stats:?}",
        peer.name
    );
    session.close().await;
}

/// 8 MiB cross whole both ways: a request carrying 8 MiB (echoed back), and an 8 MiB answer.
pub async fn large_message(peer: &Peer) {
    const BYTES: usize = 8 * 1024 * 1024;
    assert!(
        peer.message_cap > BYTES + 4096,
        "{}: the cap is too small for 8 MiB",
        peer.name
    );
    let session = open(peer).await;
    let sent = "z".repeat(BYTES);
    let echoed = session
        .call_tool(
            "echo",
            Some(json!({ "text": sent })),
            within(Duration::from_secs(30)),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: an 8 MiB request failed: {e}", peer.name))
        .text();
    assert_eq!(echoed.len(), BYTES, "{}", peer.name);
    assert!(echoed.bytes().all(|b| b == b'z'), "{}", peer.name);
    let result = session
        .call_tool(
            "large",
            Some(json!({ "bytes": BYTES })),
            within(Duration::from_secs(30)),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: an 8 MiB answer failed: {e}", peer.name));
    let text = result.text();
    assert_eq!(text.len(), BYTES, "{}", peer.name);
    assert!(text.bytes().all(|b| b == b'x'), "{}", peer.name);
    session.close().await;
}

/// An answer over the connector's cap is an error (never a hang, never a partial answer), and
/// the session then either goes on or has ended cleanly.
pub async fn message_over_the_cap(peer: &Peer) {
    let session = open(peer).await;
    let bytes = peer.message_cap + 1024;
    let outcome = session
        .call_tool(
            "large",
            Some(json!({ "bytes": bytes })),
            within(Duration::from_secs(30)),
        )
        .await;
    let error = match outcome {
        Ok(result) => panic!(
            "{}: an answer of {} bytes passed a cap of {}",
            peer.name,
            result.text().len(),
            peer.message_cap
        ),
        Err(e) => e,
    };
    assert_ne!(error.kind(), ErrorKind::Timeout, "{}: {error}", peer.name);
    // Either the connection survived the refused message, or it failed and says so at once.
    match tokio::time::timeout(PROMPTLY, echo(&session, "after")).await {
        Ok(Ok(text)) => assert_eq!(text, "after", "{}", peer.name),
        Ok(Err(e)) => assert!(
            session.is_closed() || e.kind() != ErrorKind::Timeout,
            "{}: {e}",
            peer.name
        ),
        Err(_) => panic!(
            "{}: the session hangs after a message over the cap",
            peer.name
        ),
    }
    session.close().await;
}

/// What a call ends with arrives as what it is: a structured result, a tool's failure (a
/// result marked as an error, for the model to read), a JSON-RPC error (its code kept), an
/// unknown tool, arguments the tool refuses. The fixture's `fail` fails its first two calls.
pub async fn results_and_errors_are_told_apart(peer: &Peer) {
    let session = open(peer).await;
    let call = |name: &'static str, arguments: serde_json::Value| {
        let session = session.clone();
        async move {
            session
                .call_tool(name, Some(arguments), RequestOptions::new())
                .await
        }
    };
    let sum = call("add", json!({"a": 2, "b": 40}))
        .await
        .unwrap_or_else(|e| panic!("{}: add failed: {e}", peer.name));
    assert!(!sum.is_error(), "{}", peer.name);
    assert_eq!(
        sum.structured_content,
        Some(json!({"sum": 42})),
        "{}",
        peer.name
    );

    let protocol = call("fail", json!({"mode": "protocol"}))
        .await
        .expect_err("the first failure, as a JSON-RPC error");
    assert_eq!(protocol.code(), Some(-32603), "{}: {protocol}", peer.name);
    assert!(
        protocol.message().contains("failure 1 of 2"),
        "{}: {protocol}",
        peer.name
    );
    let failed = call("fail", json!({}))
        .await
        .unwrap_or_else(|e| panic!("{}: a tool's failure is a result: {e}", peer.name));
    assert!(failed.is_error(), "{}", peer.name);
    assert_eq!(failed.text(), "failure 2 of 2", "{}", peer.name);
    let recovered = call("fail", json!({}))
        .await
        .unwrap_or_else(|e| panic!("{}: fail after its failures: {e}", peer.name));
    assert!(!recovered.is_error(), "{}", peer.name);
    assert_eq!(recovered.text(), "ok after 2 failures", "{}", peer.name);

    let unknown = call("no_such_tool", json!({}))
        .await
        .expect_err("no such tool");
    assert_eq!(
        unknown.kind(),
        ErrorKind::ToolNotFound,
        "{}: {unknown}",
        peer.name
    );
    let refused = call("add", json!({"a": "x"}))
        .await
        .expect_err("`a` is not a number");
    assert_eq!(
        refused.kind(),
        ErrorKind::InvalidParams,
        "{}: {refused}",
        peer.name
    );
    assert_eq!(
        echo(&session, "still here").await.unwrap(),
        "still here",
        "{}",
        peer.name
    );
    session.close().await;
}

/// A list the server gives in pages is read page by page (the first page has the server's page
/// size and a cursor) and whole, every tool once.
pub async fn lists_come_in_pages(peer: &Peer) {
    let session = open(peer).await;
    let first = session
        .list_tools(None, RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: tools/list failed: {e}", peer.name));
    match peer.page_size {
        Some(size) => {
            assert_eq!(first.tools.len(), size, "{}: the first page", peer.name);
            assert!(first.next_cursor.is_some(), "{}: no cursor", peer.name);
        }
        None => assert!(
            first.next_cursor.is_none(),
            "{}: a cursor from a server that lists on one page",
            peer.name
        ),
    }
    let all = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: listing every page failed: {e}", peer.name));
    assert!(all.len() > 6, "{}: {} tools", peer.name, all.len());
    let names: HashSet<&str> = all.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), all.len(), "{}: a tool listed twice", peer.name);
    session.close().await;
}

/// Resources, resource templates and prompts are listed and served; an unknown resource and a
/// prompt without its required argument are refused as such (the argument named).
pub async fn resources_and_prompts(peer: &Peer) {
    let session = open(peer).await;
    let resources = session
        .list_all_resources(RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: resources/list failed: {e}", peer.name));
    assert!(
        resources.iter().any(|r| r.uri == "fixture://static/hello"),
        "{}",
        peer.name
    );
    let hello = session
        .read_resource("fixture://static/hello", RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: reading hello failed: {e}", peer.name));
    assert_eq!(
        hello.contents[0].text.as_deref(),
        Some("Hello, fixture!"),
        "{}",
        peer.name
    );
    let templates = session
        .list_all_resource_templates(RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: resources/templates/list failed: {e}", peer.name));
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "fixture://items/{id}"),
        "{}",
        peer.name
    );
    let item = session
        .read_resource("fixture://items/42", RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: reading an item failed: {e}", peer.name));
    assert_eq!(
        item.contents[0].text.as_deref(),
        Some("item 42"),
        "{}",
        peer.name
    );
    let missing = session
        .read_resource("fixture://nope", RequestOptions::new())
        .await
        .expect_err("no such resource");
    assert_eq!(
        missing.kind(),
        ErrorKind::Resource,
        "{}: {missing}",
        peer.name
    );

    let prompts = session
        .list_all_prompts(RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: prompts/list failed: {e}", peer.name));
    assert!(
        prompts.iter().any(|p| p.name == "greeting"),
        "{}",
        peer.name
    );
    let args = BTreeMap::from([
        ("name".to_owned(), "Ada".to_owned()),
        ("style".to_owned(), "formal".to_owned()),
    ]);
    let prompt = session
        .get_prompt("greeting", Some(args), RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{}: prompts/get failed: {e}", peer.name));
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Please greet Ada in a formal way."),
        "{}",
        peer.name
    );
    let refused = session
        .get_prompt("greeting", None, RequestOptions::new())
        .await
        .expect_err("the name is required");
    assert_eq!(
        refused.kind(),
        ErrorKind::InvalidParams,
        "{}: {refused}",
        peer.name
    );
    assert_eq!(refused.field(), Some("name"), "{}: {refused:?}", peer.name);
    session.close().await;
}
