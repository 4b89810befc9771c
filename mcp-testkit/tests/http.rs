//! The fixture over Streamable HTTP and HTTP+SSE, driven by a plain HTTP client
//! (reqwest), on 127.0.0.1:0. Every wait has a deadline.

use std::future::Future;
use std::time::{Duration, Instant};

use mcp_testkit::{serve_http, HttpFixture, ServerOptions};
use reqwest::{Client, Response, StatusCode};
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(10);
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const VERSION: &str = "2025-11-25";

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

async fn start(options: ServerOptions) -> HttpFixture {
    serve_http(options, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve_http")
}

fn initialize_body(id: u64) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "http-test", "version": "0"}
        }
    })
    .to_string()
}

fn call_body(id: u64, name: &str, arguments: Value) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}
    })
    .to_string()
}

/// POSTs `body` to the fixture's `/mcp` with the headers a conforming client sends.
async fn post(
    client: &Client,
    fixture: &HttpFixture,
    session: Option<&str>,
    body: String,
) -> Response {
    post_url(client, &fixture.url(), session, body).await
}

/// [`post`] to any `/mcp` URL (a fixture in another process).
async fn post_url(client: &Client, url: &str, session: Option<&str>, body: String) -> Response {
    let mut request = client
        .post(url)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json")
        .body(body);
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", VERSION);
    }
    within("POST response", request.send()).await.expect("POST")
}

async fn get_stream(
    client: &Client,
    fixture: &HttpFixture,
    session: Option<&str>,
    last_event_id: Option<&str>,
) -> Response {
    let mut request = client
        .get(fixture.url())
        .header("accept", "text/event-stream");
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", VERSION);
    }
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    within("GET response", request.send()).await.expect("GET")
}

fn session_id(response: &Response) -> String {
    response
        .headers()
        .get("mcp-session-id")
        .expect("Mcp-Session-Id header")
        .to_str()
        .expect("ascii")
        .to_owned()
}

fn content_type(response: &Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

#[derive(Debug, Default, Clone)]
struct Event {
    id: Option<String>,
    event: Option<String>,
    data: String,
    retry: Option<u64>,
}

impl Event {
    fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data {:?}: {e}", self.data))
    }
}

/// A minimal SSE parser over a streaming response.
struct Sse {
    response: Response,
    buf: String,
}

impl Sse {
    fn new(response: Response) -> Self {
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            content_type(&response).starts_with("text/event-stream"),
            "{response:?}"
        );
        Self {
            response,
            buf: String::new(),
        }
    }

    /// The next event, or `None` at the end of the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut event = Event::default();
                let mut any = false;
                let mut data: Vec<&str> = Vec::new();
                for line in block.lines() {
                    let (field, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value);
                    match field {
                        "id" => event.id = Some(value.to_owned()),
                        "event" => event.event = Some(value.to_owned()),
                        "data" => data.push(value),
                        "retry" => event.retry = value.parse().ok(),
                        _ => continue,
                    }
                    any = true;
                }
                event.data = data.join("\n");
                if any {
                    return Some(event);
                }
                continue;
            }
            let chunk = within("an SSE chunk", self.response.chunk())
                .await
                .expect("read SSE chunk")?;
            self.buf
                .push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    }

    /// The next event that carries data (skipping priming events).
    async fn next_message(&mut self) -> Option<Event> {
        loop {
            let event = self.next().await?;
            if !event.data.is_empty() {
                return Some(event);
            }
        }
    }

    /// Every remaining event until the stream ends.
    async fn rest(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

/// Initializes over Streamable HTTP (SSE answer) and sends `notifications/initialized`.
async fn initialize(client: &Client, fixture: &HttpFixture) -> String {
    initialize_at(client, &fixture.url()).await
}

/// [`initialize`] at any `/mcp` URL.
async fn initialize_at(client: &Client, url: &str) -> String {
    let response = post_url(client, url, None, initialize_body(0)).await;
    let session = session_id(&response);
    let mut sse = Sse::new(response);
    let events = sse.rest().await;
    assert_eq!(events.last().expect("response").json()["id"], 0);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let response = post_url(client, url, Some(&session), initialized).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    session
}

/// POSTs one request in the session at `url` and returns its answer (from the SSE stream).
async fn request_at(client: &Client, url: &str, session: &str, body: String) -> Value {
    let response = post_url(client, url, Some(session), body).await;
    Sse::new(response)
        .next_message()
        .await
        .expect("answer")
        .json()
}

fn list_body(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}).to_string()
}

/// The tool names of a `tools/list` answer, in order.
fn tool_names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {answer}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn initialize_creates_session_and_streams_priming_then_response() {
    let fixture = start(ServerOptions::default()).await;
    assert!(fixture.url().starts_with("http://127.0.0.1:"));
    assert!(fixture.url().ends_with("/mcp"));
    assert!(fixture.sse_url().ends_with("/sse"));
    let client = Client::new();
    let response = post(&client, &fixture, None, initialize_body(1)).await;
    let session = session_id(&response);
    assert_eq!(session.len(), 32);
    assert!(session.bytes().all(|b| b.is_ascii_hexdigit()));
    let mut sse = Sse::new(response);
    let events = sse.rest().await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        events[0].id.is_some() && events[0].data.is_empty(),
        "priming {events:?}"
    );
    let answer = events[1].json();
    assert!(events[1].id.is_some());
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], VERSION);
    assert_eq!(answer["result"]["serverInfo"]["name"], "mcp-fixture-server");
    assert_eq!(fixture.session_count(), 1);

    // Older revisions get no priming event (their clients may not expect empty data).
    let old = initialize_body(2).replace(VERSION, "2025-03-26");
    let events = Sse::new(post(&client, &fixture, None, old).await)
        .rest()
        .await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].json()["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(fixture.session_count(), 2);
    fixture.shutdown().await;
}

#[tokio::test]
async fn tools_call_echo_and_notifications_get_202() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    let response = post(
        &client,
        &fixture,
        Some(&session),
        call_body(5, "echo", json!({"text": "hi"})),
    )
    .await;
    let message = Sse::new(response).next_message().await.expect("response");
    assert_eq!(message.json()["id"], 5);
    assert_eq!(message.json()["result"]["content"][0]["text"], "hi");

    // A response to nothing, and a cancellation of nothing: 202, no body.
    let stray = json!({"jsonrpc": "2.0", "id": "srv-99", "result": {}}).to_string();
    let response = post(&client, &fixture, Some(&session), stray).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(within("body", response.bytes())
        .await
        .expect("body")
        .is_empty());
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}})
            .to_string();
    assert_eq!(
        post(&client, &fixture, Some(&session), cancel)
            .await
            .status(),
        StatusCode::ACCEPTED
    );
}

#[tokio::test]
async fn slow_progress_arrives_inside_the_post_stream_before_the_response() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"duration_ms": 150, "steps": 3}, "_meta": {"progressToken": "tok"}}
    })
    .to_string();
    let events = Sse::new(post(&client, &fixture, Some(&session), body).await)
        .rest()
        .await;
    let messages: Vec<Value> = events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(Event::json)
        .collect();
    assert_eq!(messages.len(), 4, "{events:?}");
    for (i, progress) in messages[..3].iter().enumerate() {
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(progress["params"]["progressToken"], "tok");
        assert_eq!(progress["params"]["progress"], i + 1);
    }
    assert_eq!(messages[3]["id"], 7);
    assert_eq!(
        messages[3]["result"]["content"][0]["text"],
        "done after 3 steps"
    );
    // Every event has a distinct id.
    let mut ids: Vec<&str> = events
        .iter()
        .map(|e| e.id.as_deref().expect("id"))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), events.len());
}

#[tokio::test]
async fn get_stream_receives_resource_updates_and_list_changed() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "fixture://counter"}}).to_string();
    let answer = Sse::new(post(&client, &fixture, Some(&session), subscribe).await)
        .next_message()
        .await
        .expect("subscribe answer");
    assert_eq!(answer.json()["result"], json!({}));

    let mut standalone = Sse::new(get_stream(&client, &fixture, Some(&session), None).await);
    let priming = within("priming", standalone.next())
        .await
        .expect("priming event");
    assert!(priming.id.is_some() && priming.data.is_empty());

    let events = Sse::new(
        post(
            &client,
            &fixture,
            Some(&session),
            call_body(2, "bump_resource", json!({})),
        )
        .await,
    )
    .rest()
    .await;
    let post_messages: Vec<Value> = events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(Event::json)
        .collect();
    assert_eq!(
        post_messages.len(),
        1,
        "only the response on the POST stream: {events:?}"
    );
    assert_eq!(post_messages[0]["result"]["content"][0]["text"], "1");
    let update = standalone.next_message().await.expect("update");
    assert_eq!(update.json()["method"], "notifications/resources/updated");
    assert_eq!(update.json()["params"]["uri"], "fixture://counter");
    assert!(update.id.is_some());

    Sse::new(
        post(
            &client,
            &fixture,
            Some(&session),
            call_body(3, "trigger_list_changed", json!({})),
        )
        .await,
    )
    .rest()
    .await;
    let changed = standalone.next_message().await.expect("list_changed");
    assert_eq!(changed.json()["method"], "notifications/tools/list_changed");
}

#[tokio::test]
async fn session_wide_notifications_without_a_get() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    // No GET attached: list_changed caused by this request rides on its POST stream.
    let events = Sse::new(
        post(
            &client,
            &fixture,
            Some(&session),
            call_body(1, "trigger_list_changed", json!({})),
        )
        .await,
    )
    .rest()
    .await;
    let messages: Vec<Value> = events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(Event::json)
        .collect();
    assert_eq!(messages.len(), 2, "{events:?}");
    assert_eq!(messages[0]["method"], "notifications/tools/list_changed");
    assert_eq!(messages[1]["id"], 1);
}

#[tokio::test]
async fn json_mode_buffers_notifications_until_a_get_attaches() {
    let fixture = start(ServerOptions {
        http_json: true,
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let response = post(&client, &fixture, None, initialize_body(1)).await;
    let session = session_id(&response);
    within("body", response.bytes()).await.expect("body");
    let response = post(
        &client,
        &fixture,
        Some(&session),
        call_body(2, "trigger_list_changed", json!({})),
    )
    .await;
    let body: Value =
        serde_json::from_slice(&within("body", response.bytes()).await.expect("body"))
            .expect("json");
    assert_eq!(body["id"], 2);
    let mut standalone = Sse::new(get_stream(&client, &fixture, Some(&session), None).await);
    let changed = standalone
        .next_message()
        .await
        .expect("buffered notification");
    assert_eq!(changed.json()["method"], "notifications/tools/list_changed");
}

#[tokio::test]
async fn server_to_client_request_travels_on_the_tool_call_stream() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    let mut call = Sse::new(
        post(
            &client,
            &fixture,
            Some(&session),
            call_body(9, "ask_roots", json!({})),
        )
        .await,
    );
    let request = call
        .next_message()
        .await
        .expect("roots/list request")
        .json();
    assert_eq!(request["method"], "roots/list");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}}).to_string();
    assert_eq!(
        post(&client, &fixture, Some(&session), answer)
            .await
            .status(),
        StatusCode::ACCEPTED
    );
    let result = call.next_message().await.expect("tool result").json();
    assert_eq!(result["id"], 9);
    assert!(result["result"]["content"][0]["text"]
        .as_str()
        .expect("text")
        .contains("file:///tmp"));
    assert!(
        call.next().await.is_none(),
        "stream ends after the response"
    );
}

#[tokio::test]
async fn delete_ends_the_session() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    let response = within(
        "DELETE",
        client
            .delete(fixture.url())
            .header("mcp-session-id", &session)
            .send(),
    )
    .await
    .expect("DELETE");
    assert!(matches!(
        response.status(),
        StatusCode::OK | StatusCode::NO_CONTENT
    ));
    assert_eq!(fixture.session_count(), 0);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    assert_eq!(
        post(&client, &fixture, Some(&session), ping).await.status(),
        StatusCode::NOT_FOUND
    );
    let again = within(
        "DELETE",
        client
            .delete(fixture.url())
            .header("mcp-session-id", &session)
            .send(),
    )
    .await
    .expect("DELETE");
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_cancels_requests_in_flight_and_closes_their_streams() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    let slow = call_body(1, "slow", json!({"duration_ms": 600_000, "steps": 1}));
    let mut stream = Sse::new(post(&client, &fixture, Some(&session), slow).await);
    let priming = stream.next().await.expect("priming");
    assert!(priming.data.is_empty());
    let response = within(
        "DELETE",
        client
            .delete(fixture.url())
            .header("mcp-session-id", &session)
            .send(),
    )
    .await
    .expect("DELETE");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(stream.next().await.is_none(), "stream closed by DELETE");
}

#[tokio::test]
async fn header_and_body_checks() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let send = |accept: &'static str, content_type: &'static str, body: String| {
        client
            .post(fixture.url())
            .header("accept", accept)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let response = within(
        "POST",
        send("application/json", "application/json", initialize_body(1)),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);
    let response = within("POST", send(ACCEPT_BOTH, "text/plain", initialize_body(1)))
        .await
        .expect("POST");
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // Not initialize and no session id.
    assert_eq!(
        post(&client, &fixture, None, ping.clone()).await.status(),
        StatusCode::BAD_REQUEST
    );
    // Unknown session.
    assert_eq!(
        post(&client, &fixture, Some("nope"), ping.clone())
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let session = initialize(&client, &fixture).await;
    // Invalid JSON and batches: 400 with a JSON-RPC error body.
    let response = post(&client, &fixture, Some(&session), "{not json".to_owned()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value =
        serde_json::from_slice(&within("body", response.bytes()).await.expect("body"))
            .expect("json");
    assert_eq!(body["error"]["code"], -32700);
    let response = post(&client, &fixture, Some(&session), format!("[{ping}]")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    // Unsupported protocol version header.
    let response = within(
        "POST",
        client
            .post(fixture.url())
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "1999-01-01")
            .body(ping.clone())
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    // GET whose Accept lacks text/event-stream; unknown paths and methods.
    let response = within(
        "GET",
        client
            .get(fixture.url())
            .header("accept", "application/json")
            .header("mcp-session-id", &session)
            .send(),
    )
    .await
    .expect("GET");
    assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);
    let response = within(
        "GET",
        client.get(format!("{}/nope", fixture.base_url())).send(),
    )
    .await
    .expect("GET");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = within("PUT", client.put(fixture.url()).send())
        .await
        .expect("PUT");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    // Unknown Last-Event-ID.
    let response = get_stream(&client, &fixture, Some(&session), Some("77-3")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn drop_after_then_resume_with_last_event_id_delivers_the_response() {
    let fixture = start(ServerOptions {
        http_drop_sse_after: Some(1),
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    // initialize: the response would be the first message, and the drop always comes before
    // the response: only the priming event (with `retry`) arrives.
    let response = post(&client, &fixture, None, initialize_body(1)).await;
    let session = session_id(&response);
    let first = Sse::new(response).rest().await;
    assert_eq!(first.len(), 1, "only the priming event: {first:?}");
    assert_eq!(first[0].retry, Some(100));
    let priming_id = first[0].id.clone().expect("priming id");
    let resumed = Sse::new(get_stream(&client, &fixture, Some(&session), Some(&priming_id)).await)
        .rest()
        .await;
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(resumed[0].json()["id"], 1);

    // slow with progress: priming + one progress, then the drop.
    let body = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"duration_ms": 90, "steps": 3}, "_meta": {"progressToken": 1}}
    })
    .to_string();
    let first = Sse::new(post(&client, &fixture, Some(&session), body).await)
        .rest()
        .await;
    assert_eq!(first.len(), 2, "{first:?}");
    assert_eq!(first[0].retry, Some(100));
    assert_eq!(first[1].json()["params"]["progress"], 1);
    let last_id = first[1].id.clone().expect("id");
    let resumed = Sse::new(get_stream(&client, &fixture, Some(&session), Some(&last_id)).await)
        .rest()
        .await;
    let messages: Vec<Value> = resumed.iter().map(Event::json).collect();
    assert_eq!(messages.len(), 3, "{resumed:?}");
    assert_eq!(messages[0]["params"]["progress"], 2);
    assert_eq!(messages[1]["params"]["progress"], 3);
    assert_eq!(messages[2]["id"], 2);
    assert_eq!(
        messages[2]["result"]["content"][0]["text"],
        "done after 3 steps"
    );
    // Replaying again from the same id gives the same events (history is kept).
    let again = Sse::new(get_stream(&client, &fixture, Some(&session), Some(&last_id)).await)
        .rest()
        .await;
    assert_eq!(again.len(), 3);
}

#[tokio::test]
async fn drop_after_zero_closes_right_after_priming() {
    let fixture = start(ServerOptions {
        http_drop_sse_after: Some(0),
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let response = post(&client, &fixture, None, initialize_body(1)).await;
    let session = session_id(&response);
    let first = Sse::new(response).rest().await;
    assert_eq!(first.len(), 1);
    let resumed =
        Sse::new(get_stream(&client, &fixture, Some(&session), first[0].id.as_deref()).await)
            .rest()
            .await;
    assert_eq!(resumed[0].json()["result"]["protocolVersion"], VERSION);
}

#[tokio::test]
async fn expired_session_gets_404() {
    let fixture = start(ServerOptions {
        http_expire_session_after: Some(2),
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await; // request 1
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let response = post(&client, &fixture, Some(&session), list.clone()).await; // request 2
    assert_eq!(response.status(), StatusCode::OK);
    Sse::new(response).rest().await;
    assert_eq!(
        post(&client, &fixture, Some(&session), list.clone())
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(fixture.session_count(), 0);
    // Re-initializing gives a new, working session.
    let fresh = initialize(&client, &fixture).await;
    assert_ne!(fresh, session);
    assert_eq!(
        post(&client, &fixture, Some(&fresh), list).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn fail_first_answers_503_then_works() {
    let fixture = start(ServerOptions {
        http_fail_first: 2,
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    for _ in 0..2 {
        let response = post(&client, &fixture, None, initialize_body(1)).await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(fixture.session_count(), 0);
    let session = initialize(&client, &fixture).await;
    assert_eq!(fixture.session_count(), 1);
    assert!(!session.is_empty());
}

#[tokio::test]
async fn json_mode_answers_with_application_json() {
    let fixture = start(ServerOptions {
        http_json: true,
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let response = post(&client, &fixture, None, initialize_body(1)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(content_type(&response).starts_with("application/json"));
    let session = session_id(&response);
    let body: Value =
        serde_json::from_slice(&within("body", response.bytes()).await.expect("body"))
            .expect("json");
    assert_eq!(body["id"], 1);
    assert_eq!(body["result"]["protocolVersion"], VERSION);

    // A task-answered request (slow) and a plain one.
    let slow = call_body(2, "slow", json!({"duration_ms": 30, "steps": 1}));
    let response = post(&client, &fixture, Some(&session), slow).await;
    assert!(content_type(&response).starts_with("application/json"));
    let body: Value =
        serde_json::from_slice(&within("body", response.bytes()).await.expect("body"))
            .expect("json");
    assert_eq!(body["result"]["content"][0]["text"], "done after 1 steps");
    let response = post(
        &client,
        &fixture,
        Some(&session),
        call_body(3, "echo", json!({"text": "j"})),
    )
    .await;
    let body: Value =
        serde_json::from_slice(&within("body", response.bytes()).await.expect("body"))
            .expect("json");
    assert_eq!(body["id"], 3);
    assert_eq!(body["result"]["content"][0]["text"], "j");
}

#[tokio::test]
async fn no_get_answers_405() {
    let fixture = start(ServerOptions {
        http_no_get: true,
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    let response = get_stream(&client, &fixture, Some(&session), None).await;
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(response.headers().get("allow").is_some());
    // POST still works.
    let response = post(
        &client,
        &fixture,
        Some(&session),
        call_body(1, "echo", json!({"text": "x"})),
    )
    .await;
    assert_eq!(
        Sse::new(response)
            .next_message()
            .await
            .expect("answer")
            .json()["id"],
        1
    );
}

#[tokio::test]
async fn stateless_mode_has_no_session_ids() {
    let fixture = start(ServerOptions {
        http_stateless: true,
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let response = post(&client, &fixture, None, initialize_body(1)).await;
    assert!(response.headers().get("mcp-session-id").is_none());
    Sse::new(response).rest().await;
    let response = post(
        &client,
        &fixture,
        None,
        call_body(2, "add", json!({"a": 2, "b": 3})),
    )
    .await;
    let answer = Sse::new(response)
        .next_message()
        .await
        .expect("answer")
        .json();
    assert_eq!(answer["result"]["structuredContent"]["sum"], 5);
    let response = within("DELETE", client.delete(fixture.url()).send())
        .await
        .expect("DELETE");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn delay_slows_every_response() {
    let fixture = start(ServerOptions {
        http_delay_ms: 150,
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let started = Instant::now();
    let response = post(&client, &fixture, None, initialize_body(1)).await;
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn http_sse_endpoint_event_then_message_events() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let response = within(
        "GET /sse",
        client
            .get(fixture.sse_url())
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .expect("GET /sse");
    let mut sse = Sse::new(response);
    let endpoint = sse.next().await.expect("endpoint event");
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(
        endpoint.data.starts_with("/message?sessionId="),
        "{endpoint:?}"
    );
    assert_eq!(fixture.http_sse_session_count(), 1);
    let post_url = format!("{}{}", fixture.base_url(), endpoint.data);
    let send = |body: String| {
        client
            .post(&post_url)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let response = within("POST /message", send(initialize_body(1)))
        .await
        .expect("POST");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let message = sse.next().await.expect("initialize response");
    assert_eq!(message.event.as_deref(), Some("message"));
    assert_eq!(message.json()["id"], 1);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(
        within("POST", send(initialized))
            .await
            .expect("POST")
            .status(),
        StatusCode::ACCEPTED
    );
    let response = within("POST", send(call_body(2, "echo", json!({"text": "sse"}))))
        .await
        .expect("POST");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let message = sse.next().await.expect("echo response");
    assert_eq!(message.json()["result"]["content"][0]["text"], "sse");
    // Bad JSON → 400; unknown session → 404.
    assert_eq!(
        within("POST", send("nope".into()))
            .await
            .expect("POST")
            .status(),
        StatusCode::BAD_REQUEST
    );
    let response = within(
        "POST",
        client
            .post(format!("{}/message?sessionId=unknown", fixture.base_url()))
            .body("{}")
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    // Closing the stream ends the session.
    drop(sse);
    let deadline = Instant::now() + DEADLINE;
    while fixture.http_sse_session_count() > 0 {
        assert!(Instant::now() < deadline, "HTTP+SSE session not removed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn shutdown_closes_the_listener() {
    let fixture = start(ServerOptions::default()).await;
    let addr = fixture.local_addr();
    let client = Client::new();
    initialize(&client, &fixture).await;
    fixture.shutdown().await;
    let connected = within("connect", tokio::net::TcpStream::connect(addr)).await;
    assert!(connected.is_err(), "listener still open");
}

#[tokio::test]
async fn binary_serves_http_and_prints_the_address_first() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-fixture-server"))
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn fixture");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = within("listening line", lines.next_line())
        .await
        .expect("read")
        .expect("a line");
    let base = line
        .strip_prefix("listening on ")
        .expect("prefix")
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{line}");
    let client = Client::new();
    let response = within(
        "POST",
        client
            .post(format!("{base}/mcp"))
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .body(initialize_body(1))
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("mcp-session-id").is_some());
    child.kill().await.expect("kill");
}

#[tokio::test]
async fn refuses_non_loopback_addresses() {
    let err = serve_http(ServerOptions::default(), "0.0.0.0:0".parse().expect("addr"))
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn instance_and_extra_tools_over_streamable_http_and_http_sse() {
    let client = Client::new();
    let plain = start(ServerOptions::default()).await;
    let session = initialize(&client, &plain).await;
    let answer = request_at(&client, &plain.url(), &session, list_body(1)).await;
    let names = tool_names(&answer);
    assert_eq!(names.len(), 15, "{names:?}");
    assert!(!names.iter().any(|n| n == "instance"), "{names:?}");

    let fixture = start(ServerOptions {
        instance: Some("us-east".into()),
        extra_tools: vec!["gamma".into(), "delta".into()],
        ..ServerOptions::default()
    })
    .await;
    let url = fixture.url();
    let session = initialize(&client, &fixture).await;
    let answer = request_at(&client, &url, &session, list_body(1)).await;
    assert_eq!(tool_names(&answer)[15..], ["instance", "gamma", "delta"]);
    let answer = request_at(&client, &url, &session, call_body(2, "instance", json!({}))).await;
    assert_eq!(
        answer["result"],
        json!({"content": [{"type": "text", "text": "us-east"}]})
    );
    let body = call_body(3, "delta", json!({"text": "hi"}));
    let answer = request_at(&client, &url, &session, body).await;
    assert_eq!(answer["result"]["content"][0]["text"], "delta: hi");

    // HTTP+SSE: the same tools on /sse.
    let response = within(
        "GET /sse",
        client
            .get(fixture.sse_url())
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .expect("GET /sse");
    let mut sse = Sse::new(response);
    let endpoint = sse.next().await.expect("endpoint event");
    let post_url = format!("{}{}", fixture.base_url(), endpoint.data);
    let send = |body: String| {
        client
            .post(&post_url)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for body in [
        initialize_body(1),
        list_body(2),
        call_body(3, "instance", json!({})),
        call_body(4, "gamma", json!({"text": "sse"})),
    ] {
        let response = within("POST /message", send(body)).await.expect("POST");
        assert_eq!(response.status(), StatusCode::ACCEPTED);
    }
    let mut answers = Vec::new();
    while answers.len() < 4 {
        let message = sse.next().await.expect("a message event").json();
        if message.get("id").is_some() {
            answers.push(message);
        }
    }
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(
        tool_names(&answers[1])[15..],
        ["instance", "gamma", "delta"]
    );
    assert_eq!(answers[2]["result"]["content"][0]["text"], "us-east");
    assert_eq!(answers[3]["result"]["content"][0]["text"], "gamma: sse");
    fixture.shutdown().await;
}

/// POSTs `body` to a `--http-json` fixture at `url`; returns the session id header and the
/// JSON answer.
async fn json_request(
    client: &Client,
    url: &str,
    session: Option<&str>,
    body: String,
) -> (Option<String>, Value) {
    let response = post_url(client, url, session, body).await;
    assert!(content_type(&response).starts_with("application/json"));
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = within("body", response.bytes()).await.expect("body");
    (session, serde_json::from_slice(&bytes).expect("json"))
}

/// Starts the binary with `args` and `--http 127.0.0.1:0`; returns it and its `/mcp` URL.
async fn spawn_http_binary(args: &[&str]) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-fixture-server"))
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn fixture");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = within("listening line", lines.next_line())
        .await
        .expect("read")
        .expect("a line");
    let base = line.strip_prefix("listening on ").expect("prefix");
    (child, format!("{base}/mcp"))
}

#[tokio::test]
async fn binaries_per_region_tell_which_answered_and_differ_in_tools() {
    let client = Client::new();
    let (mut a, url_a) = spawn_http_binary(&["--instance", "region-a"]).await;
    let (mut b, url_b) = spawn_http_binary(&[
        "--instance=region-b",
        "--extra-tool",
        "only_b",
        "--http-json",
    ])
    .await;
    let session_a = initialize_at(&client, &url_a).await;
    let answer = request_at(
        &client,
        &url_a,
        &session_a,
        call_body(1, "instance", json!({})),
    )
    .await;
    assert_eq!(answer["result"]["content"][0]["text"], "region-a");
    let answer = request_at(&client, &url_a, &session_a, list_body(2)).await;
    assert_eq!(tool_names(&answer)[15..], ["instance"]);

    // b answers with application/json (--http-json).
    let (session_b, _) = json_request(&client, &url_b, None, initialize_body(1)).await;
    let session_b = session_b.expect("a session id");
    let in_b = Some(session_b.as_str());
    let (_, answer) = json_request(&client, &url_b, in_b, list_body(2)).await;
    assert_eq!(tool_names(&answer)[15..], ["instance", "only_b"]);
    let (_, answer) =
        json_request(&client, &url_b, in_b, call_body(3, "instance", json!({}))).await;
    assert_eq!(answer["result"]["content"][0]["text"], "region-b");
    let body = call_body(4, "only_b", json!({"text": "x"}));
    let (_, answer) = json_request(&client, &url_b, in_b, body).await;
    assert_eq!(answer["result"]["content"][0]["text"], "only_b: x");
    let answer = request_at(
        &client,
        &url_a,
        &session_a,
        call_body(5, "only_b", json!({"text": "x"})),
    )
    .await;
    assert_eq!(answer["error"]["message"], "Unknown tool: only_b");
    a.kill().await.expect("kill a");
    b.kill().await.expect("kill b");
}

#[tokio::test]
async fn a_non_loopback_host_or_origin_is_refused_with_403() {
    let fixture = start(ServerOptions::default()).await;
    let client = Client::new();
    let send = |host: Option<&'static str>, origin: Option<&'static str>| {
        let mut request = client
            .post(fixture.url())
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .body(initialize_body(1));
        if let Some(host) = host {
            request = request.header("host", host);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    for (host, origin) in [
        (Some("evil.example.com"), None),
        (None, Some("http://evil.example.com")),
        (Some("localhost"), Some("https://attacker.test:8443")),
    ] {
        let response = within("refusal", send(host, origin)).await.expect("sent");
        assert_eq!(
            response.status(),
            StatusCode::FORBIDDEN,
            "{host:?} {origin:?}"
        );
    }
    assert_eq!(fixture.session_count(), 0, "nothing was handled");
    for (host, origin) in [
        (None, None),
        (Some("localhost"), Some("http://localhost")),
        (Some("127.0.0.1:1234"), Some("http://[::1]:1234")),
    ] {
        let response = within("answer", send(host, origin)).await.expect("sent");
        assert_eq!(response.status(), StatusCode::OK, "{host:?} {origin:?}");
    }
}

#[tokio::test]
async fn conformance_reconnection_tool_closes_after_priming_and_resumes() {
    let fixture = start(ServerOptions {
        conformance_content: true,
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let session = initialize(&client, &fixture).await;
    let response = post(
        &client,
        &fixture,
        Some(&session),
        call_body(2, "test_reconnection", json!({})),
    )
    .await;
    let first = Sse::new(response).rest().await;
    assert_eq!(first.len(), 1, "only the priming event: {first:?}");
    assert_eq!(first[0].retry, Some(100));
    assert!(first[0].data.is_empty());
    let resumed =
        Sse::new(get_stream(&client, &fixture, Some(&session), first[0].id.as_deref()).await)
            .rest()
            .await;
    let answer = resumed.last().expect("the result").json();
    assert_eq!(answer["id"], 2);
    assert!(answer["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("reconnected")));
}

#[tokio::test]
async fn conformance_sampling_request_travels_on_the_tool_call_stream() {
    let fixture = start(ServerOptions {
        conformance_content: true,
        ..ServerOptions::default()
    })
    .await;
    let client = Client::new();
    let body = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "http-test", "version": "0"}
        }
    });
    let response = post(&client, &fixture, None, body.to_string()).await;
    let session = session_id(&response);
    Sse::new(response).rest().await;
    let response = post(
        &client,
        &fixture,
        Some(&session),
        call_body(3, "test_sampling", json!({"prompt": "Hi?"})),
    )
    .await;
    let mut sse = Sse::new(response);
    let ask = sse
        .next_message()
        .await
        .expect("the sampling request")
        .json();
    assert_eq!(ask["method"], "sampling/createMessage");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"
    }});
    let accepted = post(&client, &fixture, Some(&session), answer.to_string()).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let result = sse.next_message().await.expect("the tool result").json();
    assert_eq!(result["id"], 3);
    assert_eq!(
        result["result"]["content"][0]["text"],
        "LLM response: Paris"
    );
}
