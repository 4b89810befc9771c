//! The modern era (2026-07-28) of the engine against a scripted server: the probe and its
//! fallbacks, `_meta` on every request, multi round-trip requests, version refusals, the
//! methods the era removed, and the `subscriptions/listen` stream.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::*;
use crate::channel::{ChannelTransport, ServerEnd};
use mcp_core::jsonrpc::{ErrorObject, Message, Request, Response};
use mcp_core::types::{ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_core::{ErrorKind, McpServiceExt};

const STEP: Duration = Duration::from_secs(5);

struct Server {
    end: ServerEnd,
}

impl Server {
    async fn next(&mut self) -> Message {
        tokio::time::timeout(STEP, self.end.incoming.recv())
            .await
            .expect("the client sent nothing in time")
            .expect("the client closed the connection")
    }

    async fn request(&mut self, method: &str) -> Request {
        match self.next().await {
            Message::Request(r) if r.method == method => r,
            other => panic!("expected a {method} request, got {other:?}"),
        }
    }

    async fn respond(&self, id: RequestId, result: Value) {
        self.send(Response::success(id, Payload::Value(result)))
            .await;
    }

    async fn fail(&self, id: RequestId, code: i64, message: &str, data: Option<Value>) {
        let mut error = ErrorObject::new(code, message);
        error.data = data;
        self.send(Response::error(Some(id), error)).await;
    }

    async fn send(&self, message: impl Into<Message>) {
        self.end
            .outgoing
            .send(message.into())
            .await
            .expect("client gone");
    }

    /// Answers the probe as a modern server with `capabilities`.
    async fn discover(&mut self, capabilities: Value) -> Request {
        let probe = self.request("server/discover").await;
        self.respond(
            probe.id.clone(),
            json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28", "2025-11-25"],
                "capabilities": capabilities,
                "instructions": "be brief",
                "ttlMs": 60000,
                "cacheScope": "public",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2.0"}}
            }),
        )
        .await;
        probe
    }
}

fn params(r: &Request) -> Value {
    r.params.clone().unwrap().into_value().unwrap()
}

async fn connect_modern(
    handler: impl ClientHandler,
    options: SessionOptions,
    capabilities: Value,
) -> (ClientSession, Server, Request) {
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    let task = tokio::spawn(async move {
        let probe = server.discover(capabilities).await;
        (server, probe)
    });
    let session = ClientSession::connect(transport, handler, options)
        .await
        .expect("connects");
    let (server, probe) = task.await.unwrap();
    (session, server, probe)
}

#[tokio::test]
async fn a_discover_result_opens_a_modern_session_without_initialize() {
    let memo = EraMemo::default();
    let options = SessionOptions::default()
        .with_client_info("probe-test", "1.2")
        .with_era_memo(memo.clone())
        .with_tasks(true);
    let (session, mut server, probe) = connect_modern((), options, json!({"tools": {}})).await;
    let meta = &params(&probe)["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "probe-test"
    );
    assert!(session.is_modern());
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(session.server_info().server_info.name, "modern");
    assert_eq!(
        session.server_info().instructions.as_deref(),
        Some("be brief")
    );
    assert_eq!(
        session.discover_result().unwrap().cache.fresh_for(),
        Duration::from_secs(60)
    );
    assert_eq!(memo.get(), Some(Era::Modern));

    // Every later request carries the same fields, next to the progress token; no
    // notifications/initialized was sent.
    let list = tokio::spawn({
        let s = session.clone();
        async move { s.list_tools(None, RequestOptions::new()).await }
    });
    let request = server.request("tools/list").await;
    let meta = params(&request)["_meta"].clone();
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(meta["progressToken"].is_number());
    server
        .respond(
            request.id,
            json!({"resultType": "complete", "tools": [], "ttlMs": 1500, "cacheScope": "private"}),
        )
        .await;
    let page = list.await.unwrap().unwrap();
    assert_eq!(page.cache.ttl_ms, Some(1500));
    assert_eq!(
        page.cache.cache_scope,
        Some(mcp_core::types::CacheScope::Private)
    );
}

#[tokio::test]
async fn a_refusal_of_the_probe_falls_back_to_initialize_and_is_remembered() {
    let memo = EraMemo::default();
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    let task = tokio::spawn(async move {
        let probe = server.request("server/discover").await;
        server
            .send(Response::error(
                Some(probe.id),
                ErrorObject::method_not_found("server/discover"),
            ))
            .await;
        let init = server.request("initialize").await;
        let offered = params(&init)["protocolVersion"].clone();
        server
            .respond(
                init.id,
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "serverInfo": {"name": "legacy", "version": "1"}}),
            )
            .await;
        (server, offered)
    });
    let options = SessionOptions::default().with_era_memo(memo.clone());
    let session = ClientSession::connect(transport, (), options)
        .await
        .unwrap();
    let (_server, offered) = task.await.unwrap();
    assert_eq!(offered, "2025-11-25");
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(memo.get(), Some(Era::Legacy));

    // The next connection to the same server skips the probe.
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    let task = tokio::spawn(async move {
        let init = server.request("initialize").await;
        server
            .respond(
                init.id,
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "serverInfo": {"name": "legacy", "version": "1"}}),
            )
            .await;
        server
    });
    let options = SessionOptions::default().with_era_memo(memo);
    let session = ClientSession::connect(transport, (), options)
        .await
        .unwrap();
    let _server = task.await.unwrap();
    assert_eq!(session.era(), Era::Legacy);
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_is_legacy_after_the_discover_timeout() {
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    let task = tokio::spawn(async move {
        let _probe = server.request("server/discover").await;
        // The unanswered probe is not cancelled (a legacy server never knew it): the next
        // message is initialize.
        let init = server.request("initialize").await;
        server
            .respond(
                init.id,
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "serverInfo": {"name": "quiet", "version": "1"}}),
            )
            .await;
        match server.next().await {
            Message::Notification(n) => assert_eq!(n.method, "notifications/initialized"),
            other => panic!("unexpected {other:?}"),
        }
        server
    });
    let started = tokio::time::Instant::now();
    let options = SessionOptions::default().with_discover_timeout(Duration::from_secs(2));
    let session = ClientSession::connect(transport, (), options)
        .await
        .unwrap();
    let _server = task.await.unwrap();
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_06_18);
    assert_eq!(started.elapsed(), Duration::from_secs(2));
}

#[tokio::test]
async fn an_unsupported_version_is_retried_once_then_names_both_sides() {
    // Refused while listing the version asked for: retried, and the session is modern.
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    let task = tokio::spawn(async move {
        let probe = server.request("server/discover").await;
        server
            .fail(
                probe.id,
                -32022,
                "Unsupported protocol version",
                Some(json!({"supported": ["2026-07-28"], "requested": "2026-07-28"})),
            )
            .await;
        server.discover(json!({})).await;
        server
    });
    let session = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .unwrap();
    let mut server = task.await.unwrap();
    assert!(session.is_modern());

    // A version this client does not speak: a clear error naming both.
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.list_prompts(None, RequestOptions::new()).await }
    });
    let request = server.request("prompts/list").await;
    server
        .fail(
            request.id,
            -32022,
            "Unsupported protocol version",
            Some(json!({"supported": ["2027-01-01"], "requested": "2026-07-28"})),
        )
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(err.message().contains("it speaks 2027-01-01"), "{err}");
    assert!(
        err.message().contains("protocol version 2026-07-28;"),
        "{err}"
    );

    // A server that speaks only modern versions this client lacks fails the connect clearly.
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    tokio::spawn(async move {
        let probe = server.request("server/discover").await;
        server
            .fail(
                probe.id,
                -32022,
                "Unsupported protocol version",
                Some(json!({"supported": ["2027-01-01"]})),
            )
            .await;
        let _ = server.end.incoming.recv().await;
    });
    let err = ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .unwrap_err();
    assert!(err.message().contains("2027-01-01"), "{err}");
}

#[tokio::test]
async fn a_pinned_modern_era_refuses_a_legacy_server() {
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    tokio::spawn(async move {
        let probe = server.request("server/discover").await;
        server
            .send(Response::error(
                Some(probe.id),
                ErrorObject::method_not_found("server/discover"),
            ))
            .await;
        let _ = server.end.incoming.recv().await;
    });
    let options = SessionOptions::default().with_era(Era::Modern);
    let err = ClientSession::connect(transport, (), options)
        .await
        .unwrap_err();
    assert!(err.message().contains("modern"), "{err}");
}

/// Accepts every elicitation with `{"confirmed": true}`.
struct Confirms;

#[async_trait]
impl ClientHandler for Confirms {
    fn capabilities(&self) -> mcp_core::types::ClientCapabilities {
        mcp_core::types::ClientCapabilities {
            elicitation: Some(json!({"form": {}})),
            ..Default::default()
        }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        assert_eq!(params.message, "Sure?");
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"confirmed": true}).as_object().cloned(),
        })
    }
}

#[tokio::test]
async fn input_required_is_answered_by_the_handler_and_the_call_reissued() {
    let (session, mut server, probe) =
        connect_modern(Confirms, SessionOptions::default(), json!({"tools": {}})).await;
    assert_eq!(
        params(&probe)["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"],
        json!({"form": {}})
    );
    let call = tokio::spawn({
        let s = session.clone();
        async move {
            s.call_tool(
                "deploy",
                Some(json!({"env": "prod"})),
                RequestOptions::new(),
            )
            .await
        }
    });
    let first = server.request("tools/call").await;
    let state = r#"{"nonce":"n-1", "opaque": "\u00e9"}"#;
    server
        .respond(
            first.id.clone(),
            json!({
                "resultType": "input_required",
                "inputRequests": {"ok": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "Sure?",
                    "requestedSchema": {"type": "object", "properties": {"confirmed": {"type": "boolean"}}}
                }}},
                "requestState": state
            }),
        )
        .await;
    let second = server.request("tools/call").await;
    assert_ne!(second.id, first.id, "a retry is a new request");
    let p = params(&second);
    assert_eq!(p["arguments"], json!({"env": "prod"}));
    assert_eq!(p["name"], "deploy");
    assert_eq!(p["requestState"], state, "echoed exactly");
    assert_eq!(
        p["inputResponses"]["ok"],
        json!({"action": "accept", "content": {"confirmed": true}})
    );
    assert_eq!(
        p["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    // No state this time: the next retry carries none.
    server
        .respond(
            second.id,
            json!({"resultType": "input_required", "inputRequests": {"again": {
                "method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {}}}}}),
        )
        .await;
    let third = server.request("tools/call").await;
    assert!(params(&third).get("requestState").is_none());
    server
        .respond(
            third.id,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}),
        )
        .await;
    let result = call.await.unwrap().unwrap();
    assert_eq!(result.content.len(), 1);
}

#[tokio::test]
async fn input_rounds_are_bounded_and_unknown_result_types_refused() {
    let options = SessionOptions {
        max_input_rounds: 2,
        ..SessionOptions::default()
    };
    let (session, mut server, _) = connect_modern(Confirms, options, json!({})).await;
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("loop", None, RequestOptions::new()).await }
    });
    for _ in 0..3 {
        let r = server.request("tools/call").await;
        server
            .respond(
                r.id,
                json!({"resultType": "input_required", "requestState": "s"}),
            )
            .await;
    }
    let err = call.await.unwrap().unwrap_err();
    assert!(err.message().contains("2 rounds"), "{err}");

    let call = tokio::spawn({
        let s = session.clone();
        async move { s.list_tools(None, RequestOptions::new()).await }
    });
    let r = server.request("tools/list").await;
    server
        .respond(r.id, json!({"resultType": "mystery", "tools": []}))
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert!(err.message().contains("mystery"), "{err}");

    // Only tools/call, prompts/get and resources/read may ask for input.
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.list_tools(None, RequestOptions::new()).await }
    });
    let r = server.request("tools/list").await;
    server
        .respond(
            r.id,
            json!({"resultType": "input_required", "requestState": "x"}),
        )
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert!(err.message().contains("input_required"), "{err}");

    // Input required without saying what is refused, not retried.
    let call = tokio::spawn({
        let s = session.clone();
        async move { s.call_tool("vague", None, RequestOptions::new()).await }
    });
    let r = server.request("tools/call").await;
    server
        .respond(r.id, json!({"resultType": "input_required"}))
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert!(err.message().contains("without saying what"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn every_input_round_shares_the_calls_deadline() {
    let (session, mut server, _) =
        connect_modern(Confirms, SessionOptions::default(), json!({})).await;
    let started = tokio::time::Instant::now();
    let call = tokio::spawn({
        let s = session.clone();
        async move {
            let options = RequestOptions::new().with_timeout(Duration::from_secs(10));
            let outcome = s.call_tool("slow", None, options).await;
            (outcome, started.elapsed())
        }
    });
    // Each round is answered after 4 s: the third is past the call's 10 s.
    for _ in 0..3 {
        let r = server.request("tools/call").await;
        tokio::time::sleep(Duration::from_secs(4)).await;
        server
            .respond(
                r.id,
                json!({"resultType": "input_required", "requestState": "again"}),
            )
            .await;
    }
    let (outcome, failed_after) = call.await.unwrap();
    let err = outcome.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(failed_after, Duration::from_secs(10));
}

#[tokio::test]
async fn the_sessions_protocol_fields_win_over_a_callers_meta() {
    let (session, mut server, _) = connect_modern((), SessionOptions::default(), json!({})).await;
    let call = tokio::spawn({
        let s = session.clone();
        async move {
            let raw = serde_json::value::RawValue::from_string(
                r#"{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","mine":1}}"#
                    .into(),
            )
            .unwrap();
            let operation =
                mcp_core::service::Operation::new("tools/call", Some(Payload::Raw(raw)));
            mcp_core::McpService::call(&s, operation).await
        }
    });
    let r = server.request("tools/call").await;
    let meta = &params(&r)["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(meta["mine"], 1);
    server
        .respond(r.id, json!({"resultType": "complete", "content": []}))
        .await;
    call.await.unwrap().unwrap();
}

#[tokio::test]
async fn removed_methods_keep_working_for_callers() {
    let (session, mut server, _) = connect_modern((), SessionOptions::default(), json!({})).await;
    // ping is a server/discover.
    let ping = tokio::spawn({
        let s = session.clone();
        async move { s.ping(RequestOptions::new()).await }
    });
    server.discover(json!({})).await;
    ping.await.unwrap().unwrap();
    // logging/setLevel sends nothing; later requests carry the level.
    session
        .set_logging_level(
            mcp_core::types::LoggingLevel::Warning,
            RequestOptions::new(),
        )
        .await
        .unwrap();
    let list = tokio::spawn({
        let s = session.clone();
        async move { s.list_resources(None, RequestOptions::new()).await }
    });
    let r = server.request("resources/list").await;
    assert_eq!(
        params(&r)["_meta"]["io.modelcontextprotocol/logLevel"],
        "warning"
    );
    server
        .respond(r.id, json!({"resultType": "complete", "resources": []}))
        .await;
    list.await.unwrap().unwrap();
    // No roots/list_changed notification exists any more.
    session.notify_roots_list_changed().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_listen_stream_follows_the_advertised_and_subscribed_notifications() {
    let capabilities = json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}});
    let (session, mut server, _) =
        connect_modern((), SessionOptions::default(), capabilities).await;
    let mut notifications = session.subscribe();
    let listen = server.request("subscriptions/listen").await;
    assert_eq!(
        params(&listen)["notifications"],
        json!({"toolsListChanged": true})
    );
    let tag = json!({"io.modelcontextprotocol/subscriptionId": listen.id.clone()});
    // The acknowledgement is the stream's own: subscribers never see it.
    server
        .send(mcp_core::jsonrpc::Notification::new(
            "notifications/subscriptions/acknowledged",
            Some(Payload::Value(
                json!({"_meta": tag.clone(), "notifications": {"toolsListChanged": true}}),
            )),
        ))
        .await;
    server
        .send(mcp_core::jsonrpc::Notification::new(
            "notifications/tools/list_changed",
            Some(Payload::Value(json!({"_meta": tag}))),
        ))
        .await;
    let seen = tokio::time::timeout(STEP, notifications.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            seen,
            NotificationEvent::Notification(ServerNotification::ToolListChanged)
        ),
        "{seen:?}"
    );

    // Subscribing to a resource re-opens the stream with it; the old one is cancelled.
    session
        .subscribe_resource("file:///a", RequestOptions::new())
        .await
        .unwrap();
    let mut cancelled = false;
    let relisten = loop {
        match server.next().await {
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                assert_eq!(params_of(&n)["requestId"], json!(listen.id));
                cancelled = true;
            }
            Message::Request(r) if r.method == "subscriptions/listen" => break r,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(
        params(&relisten)["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
    );
    if !cancelled {
        let n = server.next().await;
        assert!(
            matches!(&n, Message::Notification(n) if n.method == "notifications/cancelled"),
            "{n:?}"
        );
    }
    // A change tagged with the ended stream is dropped; one of the current stream arrives.
    for (id, uri) in [
        (listen.id.clone(), "file:///old"),
        (relisten.id.clone(), "file:///a"),
    ] {
        server
            .send(mcp_core::jsonrpc::Notification::new(
                "notifications/resources/updated",
                Some(Payload::Value(json!({
                    "_meta": {"io.modelcontextprotocol/subscriptionId": id},
                    "uri": uri
                }))),
            ))
            .await;
    }
    let seen = tokio::time::timeout(STEP, notifications.recv())
        .await
        .unwrap()
        .unwrap();
    match seen {
        NotificationEvent::Notification(ServerNotification::ResourceUpdated(p)) => {
            assert_eq!(p.uri, "file:///a")
        }
        other => panic!("unexpected {other:?}"),
    }
    // A graceful end of the stream: it is opened again (after a delay).
    server
        .respond(relisten.id.clone(), json!({"resultType": "complete"}))
        .await;
    let reopened = tokio::time::timeout(
        Duration::from_secs(5),
        server.request("subscriptions/listen"),
    )
    .await
    .unwrap();
    assert_ne!(reopened.id, relisten.id);
    // The server tears it down with notifications/cancelled (stdio): opened again too.
    server
        .send(mcp_core::jsonrpc::Notification::new(
            "notifications/cancelled",
            Some(Payload::Value(
                json!({"requestId": reopened.id.clone(), "reason": "shutdown"}),
            )),
        ))
        .await;
    let again = tokio::time::timeout(
        Duration::from_secs(10),
        server.request("subscriptions/listen"),
    )
    .await
    .unwrap();
    assert_ne!(again.id, reopened.id);
    // Closing the session ends the listener with it.
    session.close().await;
    assert!(session.is_closed());
}

fn params_of(n: &mcp_core::jsonrpc::Notification) -> Value {
    n.params.clone().unwrap().into_value().unwrap()
}

#[tokio::test]
async fn a_header_mismatch_relists_the_tools_and_sends_the_call_again() {
    let (session, mut server, _) = connect_modern((), SessionOptions::default(), json!({})).await;
    let call = tokio::spawn({
        let s = session.clone();
        async move {
            s.call_tool("sql", Some(json!({"region": "eu"})), RequestOptions::new())
                .await
        }
    });
    let first = server.request("tools/call").await;
    server
        .fail(first.id, -32020, "Mcp-Param-Region header missing", None)
        .await;
    let list = server.request("tools/list").await;
    server
        .respond(list.id, json!({"resultType": "complete", "tools": []}))
        .await;
    let again = server.request("tools/call").await;
    assert_eq!(params(&again)["arguments"], json!({"region": "eu"}));
    server
        .respond(again.id, json!({"resultType": "complete", "content": []}))
        .await;
    call.await.unwrap().unwrap();
}

/// The re-listing after a header mismatch goes through the one pagination loop: a server that
/// hands back a cursor it gave before ends the call at once with a protocol error naming
/// `tools/list` and the cursor, instead of being asked for page after page.
#[tokio::test]
async fn a_header_mismatch_relisting_stops_at_a_repeated_cursor() {
    let (session, mut server, _) = connect_modern((), SessionOptions::default(), json!({})).await;
    let call = tokio::spawn({
        let s = session.clone();
        async move {
            s.call_tool("sql", Some(json!({"region": "eu"})), RequestOptions::new())
                .await
        }
    });
    let first = server.request("tools/call").await;
    server
        .fail(first.id, -32020, "Mcp-Param-Region header missing", None)
        .await;
    for _ in 0..2 {
        let list = server.request("tools/list").await;
        server
            .respond(
                list.id,
                json!({"resultType": "complete", "tools": [], "nextCursor": "loop"}),
            )
            .await;
    }
    let err = tokio::time::timeout(std::time::Duration::from_secs(10), call)
        .await
        .expect("the call ends at the repeated cursor, without asking for a third page")
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert_eq!(
        err.message(),
        "tools/list: the server repeated cursor \"loop\"; stopping to avoid an endless loop"
    );
}

#[tokio::test]
async fn a_wrong_legacy_memo_is_corrected_by_probing_again() {
    let memo = EraMemo::default();
    memo.set(Era::Legacy);
    let (transport, end) = ChannelTransport::pair(64);
    let mut server = Server { end };
    let task = tokio::spawn(async move {
        let init = server.request("initialize").await;
        server
            .send(Response::error(
                Some(init.id),
                ErrorObject::method_not_found("initialize"),
            ))
            .await;
        server.discover(json!({})).await;
        server
    });
    let options = SessionOptions::default().with_era_memo(memo.clone());
    let session = ClientSession::connect(transport, (), options)
        .await
        .unwrap();
    let _server = task.await.unwrap();
    assert!(session.is_modern());
    assert_eq!(memo.get(), Some(Era::Modern));
}

/// A task handle (`resultType: "task"`) as a Tasks-extension server answers a `tools/call`.
fn task_handle() -> Value {
    json!({
        "resultType": "task",
        "taskId": "t-7",
        "status": "working",
        "createdAt": "2026-12-04T00:00:00Z",
        "lastUpdatedAt": "2026-12-04T00:00:00Z",
        "ttlMs": null,
        "pollIntervalMs": 1
    })
}

/// A `tools/call` the server runs as a task is answered with the task's handle (following it
/// is the `mcp-tasks` layer's business); a `tasks/get` answer may carry the handle's type too.
#[tokio::test]
async fn a_tool_call_run_as_a_task_is_answered_with_its_handle() {
    let (session, mut server, _) = connect_modern(
        (),
        SessionOptions::default().with_tasks(true),
        json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
    .await;
    assert!(session.server_offers_extension(TASKS_EXTENSION));
    let call = tokio::spawn({
        let session = session.clone();
        async move { session.call(Operation::call_tool("build", None)).await }
    });
    let request = server.request("tools/call").await;
    assert!(
        params(&request)["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            .get(TASKS_EXTENSION)
            .is_some(),
        "{:?}",
        params(&request)
    );
    server.respond(request.id.clone(), task_handle()).await;
    let answer = call.await.unwrap().unwrap().into_value().unwrap();
    assert_eq!(answer, task_handle());
    // Nothing follows it here: the next request the server sees is the caller's.
    let get = tokio::spawn({
        let session = session.clone();
        async move {
            let get = Operation::new(
                mcp_core::types::methods::TASKS_GET,
                Some(Payload::Value(json!({"taskId": "t-7"}))),
            );
            session.call(get).await
        }
    });
    let request = server.request("tasks/get").await;
    server.respond(request.id.clone(), task_handle()).await;
    assert_eq!(
        get.await.unwrap().unwrap().into_value().unwrap(),
        task_handle()
    );
    session.close().await;
}

/// Only `tools/call` may become a task, and only when the session declared the extension and
/// the server offered it.
#[tokio::test]
async fn tasks_outside_tools_call_or_undeclared_are_refused() {
    let (session, mut server, _) =
        connect_modern((), SessionOptions::default(), json!({"prompts": {}})).await;
    let get = tokio::spawn({
        let session = session.clone();
        async move { session.get_prompt("p", None, RequestOptions::new()).await }
    });
    let request = server.request("prompts/get").await;
    server.respond(request.id.clone(), task_handle()).await;
    let err = get.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.message().contains("\"task\""), "{err}");
    session.close().await;

    let (session, mut server, _) = connect_modern(
        (),
        SessionOptions::default().with_tasks(false),
        json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
    .await;
    let call = tokio::spawn({
        let session = session.clone();
        async move { session.call_tool("t", None, RequestOptions::new()).await }
    });
    let request = server.request("tools/call").await;
    assert!(
        params(&request)["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            .get(TASKS_EXTENSION)
            .is_none(),
        "{:?}",
        params(&request)
    );
    server.respond(request.id.clone(), task_handle()).await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.message().contains("\"task\""), "{err}");
    session.close().await;

    // Declared by the client, not offered by the server: the extension is not in use.
    let (session, mut server, _) = connect_modern(
        (),
        SessionOptions::default().with_tasks(true),
        json!({"tools": {}}),
    )
    .await;
    assert!(!session.server_offers_extension(TASKS_EXTENSION));
    let call = tokio::spawn({
        let session = session.clone();
        async move { session.call_tool("t", None, RequestOptions::new()).await }
    });
    let request = server.request("tools/call").await;
    server.respond(request.id.clone(), task_handle()).await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(
        err.message()
            .contains("does not offer the io.modelcontextprotocol/tasks extension"),
        "{err}"
    );
    session.close().await;
}
