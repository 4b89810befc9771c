//! What a server built on this crate can add (what a gateway needs): definitions given whole,
//! lists replaced at once with one `list_changed`, methods of its own, a read fallback,
//! resource subscriptions, rounds of questions under chosen keys — and, on the wire, which
//! request each message belongs to and what a 2026-07-28 answer must carry. Driven with raw
//! JSON-RPC messages, as a server transport (stdio, HTTP) would.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::jsonrpc::{Message, Notification, Payload, Request, RequestId};
use mcp_core::types::{Prompt, Resource, ResourceTemplate, Tool};
use mcp_core::{Transport, TransportSender};
use mcp_transport_local::{
    LocalPrompt, LocalReceiver, LocalResource, LocalResourceTemplate, LocalSender, LocalServer,
    LocalTool, RequestContext, ToolError,
};
use serde_json::{json, Map, Value};

const DEADLINE: Duration = Duration::from_secs(10);

fn definition(name: &str) -> Tool {
    serde_json::from_value(json!({
        "name": name,
        "description": format!("{name}, described elsewhere"),
        "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
    }))
    .expect("a tool definition")
}

/// A tool that answers its arguments back.
fn mirror(name: &str) -> LocalTool {
    LocalTool::from_definition(
        definition(name),
        |_ctx, arguments: Map<String, Value>| async move { Value::Object(arguments).to_string() },
    )
}

struct Wire {
    sender: LocalSender,
    receiver: LocalReceiver,
    next: i64,
}

impl Wire {
    fn open(server: &LocalServer) -> Wire {
        let (sender, receiver) = server.connect().expect("a connection").split();
        Wire {
            sender,
            receiver,
            next: 1,
        }
    }

    async fn send(&self, message: Message) {
        self.sender.send(message).await.expect("sent");
    }

    /// The next message and the request it belongs to.
    async fn next(&mut self) -> (Message, Option<RequestId>) {
        tokio::time::timeout(DEADLINE, self.receiver.receive_related())
            .await
            .expect("a message in time")
            .expect("the connection is open")
            .expect("a message")
    }

    /// Sends a request and reads up to its answer; returns the answer's JSON and what came
    /// before it.
    async fn ask(
        &mut self,
        method: &str,
        params: Value,
    ) -> (Value, Vec<(Value, Option<RequestId>)>) {
        let id = self.next;
        self.next += 1;
        self.send(Request::new(id, method, Some(Payload::Value(params))).into())
            .await;
        let mut before = Vec::new();
        loop {
            let (message, related) = self.next().await;
            let json: Value = serde_json::from_str(&message.to_json_string().unwrap()).unwrap();
            if json.get("id") == Some(&json!(id)) && json.get("method").is_none() {
                assert_eq!(
                    related,
                    Some(RequestId::Number(id)),
                    "an answer is its request's"
                );
                return (json, before);
            }
            before.push((json, related));
        }
    }

    async fn initialize(&mut self) {
        let (answer, _) = self
            .ask(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                       "clientInfo": {"name": "raw", "version": "1"}}),
            )
            .await;
        assert!(answer.get("result").is_some(), "{answer}");
        self.send(Notification::new("notifications/initialized", None).into())
            .await;
    }
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

#[tokio::test]
async fn definitions_given_whole_are_served_as_they_are() {
    let server = LocalServer::builder("s", "1")
        .answer_in_place(false)
        .tool(mirror("echo_args"))
        .build()
        .unwrap();
    let mut wire = Wire::open(&server);
    wire.initialize().await;
    let (listed, _) = wire.ask("tools/list", json!({})).await;
    let tool = &listed["result"]["tools"][0];
    assert_eq!(tool["description"], "echo_args, described elsewhere");
    assert_eq!(tool["inputSchema"]["required"], json!(["x"]));
    let (called, _) = wire
        .ask(
            "tools/call",
            json!({"name": "echo_args", "arguments": {"x": 7, "extra": true}}),
        )
        .await;
    assert_eq!(
        called["result"]["content"][0]["text"],
        json!({"x": 7, "extra": true}).to_string(),
        "arguments are the handler's to check"
    );
}

#[tokio::test]
async fn replacing_a_list_tells_clients_once_and_only_when_it_changed() {
    let server = LocalServer::builder("s", "1")
        .answer_in_place(false)
        .build()
        .unwrap();
    let mut wire = Wire::open(&server);
    wire.initialize().await;
    assert!(server.set_tools(vec![mirror("a"), mirror("b")]).unwrap());
    let (note, related) = wire.next().await;
    assert_eq!(note.method(), Some("notifications/tools/list_changed"));
    assert_eq!(related, None, "a list change belongs to no request");
    // The same list again: no change, no notification; the next message is the ping's answer.
    assert!(!server.set_tools(vec![mirror("a"), mirror("b")]).unwrap());
    let (pong, _) = wire.ask("ping", json!({})).await;
    assert!(pong.get("result").is_some());
    // A duplicate name is refused and nothing changes.
    assert!(server.set_tools(vec![mirror("a"), mirror("a")]).is_err());
    let (listed, _) = wire.ask("tools/list", json!({})).await;
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 2);

    let prompt: Prompt = serde_json::from_value(json!({"name": "p"})).unwrap();
    let prompt = LocalPrompt::from_definition(prompt, |_ctx, _args: Map<String, Value>| async {
        "hello".to_owned()
    });
    assert!(server.set_prompts(vec![prompt]).unwrap());
    let (note, _) = wire.next().await;
    assert_eq!(note.method(), Some("notifications/prompts/list_changed"));
    let resource: Resource =
        serde_json::from_value(json!({"uri": "mem://a", "name": "a"})).unwrap();
    let resource = LocalResource::from_definition(resource, |_ctx, _req| async { "a".to_owned() });
    assert!(server.set_resources(vec![resource], Vec::new()).unwrap());
    let (note, _) = wire.next().await;
    assert_eq!(note.method(), Some("notifications/resources/list_changed"));
}

#[tokio::test]
async fn methods_of_its_own_a_read_fallback_and_amended_capabilities() {
    let template: ResourceTemplate =
        serde_json::from_value(json!({"uriTemplate": "mem://{+path}", "name": "beyond level 1"}))
            .unwrap();
    let server = LocalServer::builder("s", "1")
        .answer_in_place(false)
        .method(
            "completion/complete",
            |_ctx: RequestContext, params| async move {
                let value = params
                    .as_ref()
                    .and_then(|p| p.pointer("/argument/value"))
                    .cloned()
                    .unwrap_or_default();
                Ok(json!({"completion": {"values": [value]}}))
            },
        )
        .method("x/refuse", |_ctx: RequestContext, _params| async move {
            Err::<Value, _>(ToolError::rpc(mcp_core::jsonrpc::ErrorObject::new(
                -32099,
                "refused on purpose",
            )))
        })
        .resource_template(LocalResourceTemplate::from_definition(
            template,
            |_ctx, _req| async { "never".to_owned() },
        ))
        .read_fallback(|_ctx, request| async move { format!("fallback read {}", request.uri()) })
        .capabilities(|capabilities| {
            capabilities.completions = Some(json!({}));
        })
        .build()
        .expect("a template beyond level 1 is listed, not refused");
    let mut wire = Wire::open(&server);
    let (initialized, _) = wire
        .ask(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}),
        )
        .await;
    assert_eq!(
        initialized["result"]["capabilities"]["completions"],
        json!({})
    );
    let (completed, _) = wire
        .ask(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "x"}}),
        )
        .await;
    assert_eq!(completed["result"]["completion"]["values"], json!(["x"]));
    let (refused, _) = wire.ask("x/refuse", json!({})).await;
    assert_eq!(refused["error"]["code"], -32099);
    let (templates, _) = wire.ask("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "mem://{+path}"
    );
    let (read, _) = wire
        .ask("resources/read", json!({"uri": "mem://deep/path"}))
        .await;
    assert_eq!(
        read["result"]["contents"][0]["text"],
        "fallback read mem://deep/path"
    );
    let (unknown, _) = wire.ask("x/unknown", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
}

#[tokio::test]
async fn subscriptions_are_counted_across_connections_and_updates_reach_subscribers() {
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = changes.clone();
    let server = LocalServer::builder("s", "1")
        .answer_in_place(false)
        .resource_subscriptions(move |uri, subscribed| {
            seen.lock().unwrap().push((uri.to_owned(), subscribed));
        })
        .build()
        .unwrap();
    let mut first = Wire::open(&server);
    first.initialize().await;
    let mut second = Wire::open(&server);
    second.initialize().await;

    first
        .ask("resources/subscribe", json!({"uri": "mem://a"}))
        .await;
    first
        .ask("resources/subscribe", json!({"uri": "mem://a"}))
        .await;
    second
        .ask("resources/subscribe", json!({"uri": "mem://a"}))
        .await;
    assert_eq!(*changes.lock().unwrap(), [("mem://a".to_owned(), true)]);

    server.notify_resource_updated("mem://a");
    server.notify_resource_updated("mem://other");
    let (note, related) = first.next().await;
    assert_eq!(note.method(), Some("notifications/resources/updated"));
    assert_eq!(related, None);
    let (note, _) = second.next().await;
    assert_eq!(note.method(), Some("notifications/resources/updated"));
    let (pong, _) = first.ask("ping", json!({})).await;
    assert!(
        pong.get("result").is_some(),
        "nothing for mem://other came first"
    );

    first
        .ask("resources/unsubscribe", json!({"uri": "mem://a"}))
        .await;
    assert_eq!(
        changes.lock().unwrap().len(),
        1,
        "the second connection still subscribes"
    );
    // A connection that ends lets go of its subscriptions.
    drop(second);
    tokio::time::timeout(DEADLINE, async {
        while changes.lock().unwrap().len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the last subscriber's end is heard");
    assert_eq!(changes.lock().unwrap()[1], ("mem://a".to_owned(), false));
}

#[tokio::test]
async fn a_round_of_questions_keeps_its_keys_in_the_modern_era() {
    let round = LocalTool::from_definition(definition("ask"), |ctx, _args| async move {
        let mut requests = Map::new();
        requests.insert(
            "user_name".to_owned(),
            json!({"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {"type": "object"}}}),
        );
        requests.insert(
            "colour".to_owned(),
            json!({"method": "elicitation/create", "params": {"message": "colour?", "requestedSchema": {"type": "object"}}}),
        );
        match ctx.request_client_round(&requests).await {
            Ok(answers) => Ok(Value::Object(answers).to_string()),
            Err(e) => Err(ToolError::failed(e.to_string())),
        }
    });
    let server = LocalServer::builder("s", "1")
        .answer_in_place(false)
        .served_on_a_wire(true)
        .tool(round)
        .build()
        .unwrap();
    let mut wire = Wire::open(&server);
    let (asked, _) = wire
        .ask(
            "tools/call",
            json!({"name": "ask", "arguments": {}, "_meta": modern_meta()}),
        )
        .await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let keys: Vec<&String> = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        keys,
        ["colour", "user_name"],
        "both in one round, under their own keys"
    );
    let state = result["requestState"].clone();
    let accept = |name: &str| json!({"action": "accept", "content": {"v": name}});
    let (done, _) = wire
        .ask(
            "tools/call",
            json!({"name": "ask", "arguments": {}, "_meta": modern_meta(), "requestState": state,
                   "inputResponses": {"user_name": accept("ada"), "colour": accept("red")}}),
        )
        .await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("ada") && text.contains("red"), "{text}");
}

#[tokio::test]
async fn modern_answers_carry_what_the_revision_requires() {
    let resource: Resource =
        serde_json::from_value(json!({"uri": "mem://a", "name": "a"})).unwrap();
    let server = LocalServer::builder("s", "1")
        .answer_in_place(false)
        .served_on_a_wire(true)
        .tool(mirror("echo_args"))
        .resource(LocalResource::from_definition(
            resource,
            |_ctx, _req| async { "a".to_owned() },
        ))
        .build()
        .unwrap();
    let mut wire = Wire::open(&server);
    let meta = modern_meta();
    let (listed, _) = wire.ask("tools/list", json!({"_meta": meta})).await;
    assert_eq!(listed["result"]["resultType"], "complete");
    assert_eq!(listed["result"]["ttlMs"], 0);
    assert_eq!(listed["result"]["cacheScope"], "private");
    let (read, _) = wire
        .ask("resources/read", json!({"uri": "mem://a", "_meta": meta}))
        .await;
    assert_eq!(read["result"]["resultType"], "complete");
    assert_eq!(read["result"]["ttlMs"], 0);
    let (called, _) = wire
        .ask(
            "tools/call",
            json!({"name": "echo_args", "arguments": {"x": 1}, "_meta": meta}),
        )
        .await;
    assert_eq!(called["result"]["resultType"], "complete");
    assert!(
        called["result"].get("ttlMs").is_none(),
        "a call is not cached"
    );
    let (missing, _) = wire
        .ask(
            "resources/read",
            json!({"uri": "mem://none", "_meta": meta}),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], "mem://none");

    // The legacy era's answers are left as they are.
    let mut legacy = Wire::open(&server);
    legacy.initialize().await;
    let (listed, _) = legacy.ask("tools/list", json!({})).await;
    assert!(listed["result"].get("resultType").is_none(), "{listed}");
    let (missing, _) = legacy
        .ask("resources/read", json!({"uri": "mem://none"}))
        .await;
    assert_eq!(missing["error"]["code"], -32002);
}

#[tokio::test]
async fn what_a_call_sends_belongs_to_its_request() {
    let talkative = LocalTool::from_definition(definition("talk"), |ctx, _args| async move {
        ctx.log(mcp_core::types::LoggingLevel::Info, None, "working")
            .await;
        "done".to_owned()
    });
    let server = LocalServer::builder("s", "1")
        .answer_in_place(false)
        .tool(talkative)
        .build()
        .unwrap();
    let mut wire = Wire::open(&server);
    wire.initialize().await;
    let (answer, before) = wire
        .ask("tools/call", json!({"name": "talk", "arguments": {}}))
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "done");
    let id = answer["id"].as_i64().unwrap();
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0].0["method"], "notifications/message");
    assert_eq!(before[0].1, Some(RequestId::Number(id)));
}
