//! The supervisor against scripted in-process servers, on tokio's paused clock: exact reconnect
//! schedules and state sequences.

use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;

use async_trait::async_trait;
use mcp_core::jsonrpc::{Message, Payload, Response};
use mcp_core::{Delivery, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::{ChannelTransport, ServerEnd, SessionOptions};
use serde_json::json;
use tokio::task::AbortHandle;

use super::*;

/// How the next connection attempt goes.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// A server that answers.
    Serve,
    /// The connection is refused.
    Refuse,
    /// The server refuses the credentials.
    Deny,
    /// The server answers, but not as MCP.
    Garble,
}

/// Scripts the servers a [`Scripted`] connector connects to.
#[derive(Default)]
struct Script {
    plans: Mutex<VecDeque<Plan>>,
    /// When each connection attempt happened.
    attempts: Mutex<Vec<Instant>>,
    /// The server task of the live connection (abort it to kill the server).
    live: Mutex<Option<AbortHandle>>,
    tools_lists: AtomicUsize,
    subscribed: Mutex<Vec<String>>,
    /// Whether servers answer pings.
    deaf_to_pings: std::sync::atomic::AtomicBool,
    /// The `ttlMs` of `tools/list` answers.
    tools_ttl_ms: Mutex<Option<i64>>,
}

impl Script {
    fn plan(&self, plans: &[Plan]) {
        lock(&self.plans).extend(plans.iter().copied());
    }
    fn kill_live_server(&self) {
        if let Some(task) = lock(&self.live).take() {
            task.abort();
        }
    }
    fn attempts_since(&self, start: Instant) -> Vec<Duration> {
        lock(&self.attempts).iter().map(|t| *t - start).collect()
    }
}

struct Scripted(Arc<Script>);

#[async_trait]
impl SessionConnector for Scripted {
    async fn connect(&self) -> Result<ClientSession, Error> {
        let script = self.0.clone();
        lock(&script.attempts).push(Instant::now());
        let plan = lock(&script.plans).pop_front().unwrap_or(Plan::Refuse);
        match plan {
            Plan::Refuse => {
                Err(Error::network("connection refused").with_delivery(Delivery::NotSent))
            }
            Plan::Deny => Err(Error::new(ErrorKind::Auth, "HTTP 401")),
            Plan::Garble => Err(Error::new(
                ErrorKind::Protocol,
                "the server answered with Content-Type text/html, not JSON or an event stream",
            )),
            Plan::Serve => {
                let (transport, end) = ChannelTransport::pair(64);
                let task = tokio::spawn(serve(end, script.clone()));
                *lock(&script.live) = Some(task.abort_handle());
                ClientSession::connect(transport, (), SessionOptions::default()).await
            }
        }
    }
}

async fn serve(mut end: ServerEnd, script: Arc<Script>) {
    while let Some(message) = end.incoming.recv().await {
        let Message::Request(request) = message else {
            continue;
        };
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "scripted", "version": "1"}
            }),
            "tools/list" => {
                script.tools_lists.fetch_add(1, Ordering::SeqCst);
                let mut list =
                    json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]});
                if let Some(ttl) = *lock(&script.tools_ttl_ms) {
                    list["ttlMs"] = json!(ttl);
                }
                list
            }
            "ping" if script.deaf_to_pings.load(Ordering::SeqCst) => continue,
            "resources/subscribe" => {
                let params = request.params.clone().unwrap().into_value().unwrap();
                lock(&script.subscribed).push(params["uri"].as_str().unwrap().to_owned());
                json!({})
            }
            _ => json!({}),
        };
        if end
            .outgoing
            .send(Response::success(request.id, Payload::Value(result)).into())
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Records what the supervisor reports.
#[derive(Default)]
struct Recorder {
    tools_changed: AtomicUsize,
}

impl SupervisorListener for Recorder {
    fn tools_changed(&self, _server: &str) {
        self.tools_changed.fetch_add(1, Ordering::SeqCst);
    }
    fn lists_changed(&self, _server: &str, _which: Lists) {}
}

fn supervisor(script: &Arc<Script>, connect_timeout: Duration) -> Arc<Supervisor> {
    Supervisor::new(
        SupervisorParts {
            name: "s".into(),
            connector: Arc::new(Scripted(script.clone())),
            router: None,
            policy: SupervisionPolicy::default(),
            connect_timeout,
            request_timeout: Duration::from_secs(30),
            probe_interval: Duration::from_secs(30),
            events: mpsc::channel(EVENT_QUEUE),
            metrics: mcp_metrics::Metrics::new().server("s"),
        },
        ServerStatus::Starting,
    )
}

/// Where the supervisor's history stands now: later entries are what happened after.
fn mark(supervisor: &Supervisor) -> usize {
    supervisor.history().len()
}

/// The labels of the statuses the supervisor went through after `mark`.
fn statuses_since(supervisor: &Supervisor, mark: usize) -> Vec<String> {
    supervisor
        .history()
        .into_iter()
        .skip(mark)
        .map(|(_, status)| status.to_string())
        .collect()
}

/// Waits until the supervisor has gone through a status matching `what` after `mark`; returns
/// when it happened.
async fn wait_for_history(
    supervisor: &Supervisor,
    mark: usize,
    what: impl Fn(&ServerStatus) -> bool,
) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        if let Some((at, _)) = supervisor
            .history()
            .into_iter()
            .skip(mark)
            .find(|(_, status)| what(status))
        {
            return at;
        }
        assert!(
            Instant::now() < deadline,
            "never reached: {:?}",
            supervisor.history()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_until(supervisor: &Supervisor, what: impl Fn(&ServerStatus) -> bool) {
    let mut rx = supervisor.state.subscribe();
    tokio::time::timeout(Duration::from_secs(600), rx.wait_for(|s| what(&s.status)))
        .await
        .expect("the state was reached")
        .expect("the supervisor is alive");
}

fn secs(list: &[u64]) -> Vec<Duration> {
    list.iter().map(|s| Duration::from_secs(*s)).collect()
}

#[tokio::test(start_paused = true)]
async fn a_lost_session_is_retried_at_0_1_2_4_8_seconds_then_probed_every_30_seconds() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    sup.start(Arc::new(Recorder::default()));
    wait_until(&sup, ServerStatus::is_ready).await;

    // Five reconnects fail, the first probe fails, the second brings it back.
    script.plan(&[Plan::Refuse; 6]);
    script.plan(&[Plan::Serve]);
    let lost_at = Instant::now();
    let before = mark(&sup);
    lock(&script.attempts).clear();
    script.kill_live_server();
    wait_until(&sup, |s| matches!(s, ServerStatus::Unavailable { .. })).await;
    assert_eq!(script.attempts_since(lost_at), secs(&[0, 1, 3, 7, 15]));
    wait_until(&sup, ServerStatus::is_ready).await;
    assert_eq!(
        script.attempts_since(lost_at),
        secs(&[0, 1, 3, 7, 15, 45, 75])
    );
    assert_eq!(
        statuses_since(&sup, before),
        [
            "reconnecting (attempt 1)",
            "reconnecting (attempt 2)",
            "reconnecting (attempt 3)",
            "reconnecting (attempt 4)",
            "reconnecting (attempt 5)",
            "unavailable",
            "probing",
            "unavailable",
            "probing",
            "ready",
        ]
    );
    assert_eq!(sup.reconnects(), 1);
    assert_eq!(sup.last_error().as_deref(), Some("connection refused"));
}

#[tokio::test(start_paused = true)]
async fn start_up_retries_once_at_once_and_a_refused_start_is_unavailable() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Refuse, Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    let start = Instant::now();
    sup.start(Arc::new(Recorder::default()));
    sup.started(Duration::from_secs(60)).await;
    assert!(sup.snapshot().status.is_ready());
    assert_eq!(script.attempts_since(start), secs(&[0, 0]));

    let script = Arc::new(Script::default());
    script.plan(&[Plan::Refuse, Plan::Refuse]);
    let sup = supervisor(&script, Duration::from_secs(10));
    sup.start(Arc::new(Recorder::default()));
    sup.started(Duration::from_secs(60)).await;
    assert_eq!(sup.snapshot().status.label(), "unavailable");
    assert_eq!(lock(&script.attempts).len(), 2);
    let err = sup
        .ready_session(Instant::now() + Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ServerUnavailable);
    assert!(err.was_never_sent());
    assert_eq!(
        err.clone().with_subject("s__echo").agent_message(),
        "tool s__echo is unavailable: server not responding"
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_unavailable_for_a_protocol_failure_fails_calls_as_protocol_errors() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Garble, Plan::Garble]);
    let sup = supervisor(&script, Duration::from_secs(10));
    sup.start(Arc::new(Recorder::default()));
    sup.started(Duration::from_secs(60)).await;
    assert!(matches!(
        sup.snapshot().status,
        ServerStatus::Unavailable {
            kind: ErrorKind::Protocol,
            ..
        }
    ));
    let err = sup
        .ready_session(Instant::now() + Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.was_never_sent());
    assert!(err.message().contains("is unavailable"), "{err}");
    assert!(err.message().contains("Content-Type text/html"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn refused_credentials_are_never_retried() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Deny, Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    sup.start(Arc::new(Recorder::default()));
    sup.started(Duration::from_secs(60)).await;
    assert_eq!(sup.snapshot().status.label(), "needs-auth");
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(lock(&script.attempts).len(), 1, "no retry, no probe");
    let err = sup.ready_session(Instant::now()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
}

#[tokio::test(start_paused = true)]
async fn a_call_waits_for_a_reconnecting_server_within_its_deadline() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Serve, Plan::Refuse, Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    sup.start(Arc::new(Recorder::default()));
    wait_until(&sup, ServerStatus::is_ready).await;
    let before = mark(&sup);
    script.kill_live_server();
    wait_for_history(&sup, before, |s| {
        matches!(s, ServerStatus::Reconnecting { .. })
    })
    .await;
    // Back after the second attempt, at 1 s: a call with 5 s to go gets the new session...
    let started = Instant::now();
    let session = sup
        .ready_session(started + Duration::from_secs(5))
        .await
        .expect("the server came back in time");
    assert!(!session.is_closed());
    assert!(Instant::now() - started <= Duration::from_secs(1));
    // ...and one whose deadline comes first gets a timeout that says nothing was sent.
    script.plan(&[Plan::Refuse, Plan::Refuse, Plan::Serve]);
    let before = mark(&sup);
    script.kill_live_server();
    wait_for_history(&sup, before, |s| {
        matches!(s, ServerStatus::Reconnecting { .. })
    })
    .await;
    let started = Instant::now();
    let err = sup
        .ready_session(started + Duration::from_millis(500))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.was_never_sent());
    assert_eq!(Instant::now() - started, Duration::from_millis(500));
}

#[tokio::test(start_paused = true)]
async fn a_failed_health_check_counts_as_a_lost_session() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Serve, Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    sup.start(Arc::new(Recorder::default()));
    wait_until(&sup, ServerStatus::is_ready).await;
    let first = sup.snapshot().session.unwrap();
    // A healthy server: a suspicion changes nothing.
    sup.tell(SupervisorEvent::Suspect);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(sup.snapshot().status.is_ready());
    assert_eq!(lock(&script.attempts).len(), 1);
    // A server that stopped answering: the ping times out after 5 s and it is replaced.
    script.deaf_to_pings.store(true, Ordering::SeqCst);
    let suspected = Instant::now();
    let before = mark(&sup);
    sup.tell(SupervisorEvent::Suspect);
    let lost_at = wait_for_history(&sup, before, |s| {
        matches!(s, ServerStatus::Reconnecting { .. })
    })
    .await;
    assert_eq!(lost_at - suspected, Duration::from_secs(5));
    script.deaf_to_pings.store(false, Ordering::SeqCst);
    wait_for_history(&sup, before, ServerStatus::is_ready).await;
    assert!(first.is_closed(), "the old session was closed");
    assert_eq!(sup.reconnects(), 1);
}

#[tokio::test(start_paused = true)]
async fn resources_are_resubscribed_and_tools_listed_again_after_a_reconnect() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Serve, Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    /// Resubscribes one resource on every new session, and counts the sessions.
    struct Resubscribed(std::sync::atomic::AtomicUsize);
    #[async_trait::async_trait]
    impl crate::resources::Resubscriber for Resubscribed {
        async fn resubscribe(&self, session: &ClientSession, deadline: Instant) {
            self.0.fetch_add(1, Ordering::SeqCst);
            let options = RequestOptions::new().with_deadline(deadline);
            session
                .subscribe_resource("data://b", options)
                .await
                .unwrap();
        }
    }
    let resubscribed = Arc::new(Resubscribed(std::sync::atomic::AtomicUsize::new(0)));
    let resubscriber: Arc<dyn crate::resources::Resubscriber> = resubscribed.clone();
    sup.resubscribe_with(&resubscriber);
    let recorder = Arc::new(Recorder::default());
    sup.start(recorder.clone());
    wait_until(&sup, ServerStatus::is_ready).await;
    assert_eq!(
        resubscribed.0.load(Ordering::SeqCst),
        1,
        "before the first session was ready"
    );
    lock(&script.subscribed).clear();
    let before = mark(&sup);
    script.kill_live_server();
    wait_for_history(&sup, before, ServerStatus::is_ready).await;
    assert_eq!(
        statuses_since(&sup, before),
        ["reconnecting (attempt 1)", "ready"]
    );
    assert_eq!(*lock(&script.subscribed), ["data://b"]);
    assert_eq!(resubscribed.0.load(Ordering::SeqCst), 2);
    assert_eq!(script.tools_lists.load(Ordering::SeqCst), 2);
    assert_eq!(recorder.tools_changed.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_list_changed_costs_one_refresh() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    let recorder = Arc::new(Recorder::default());
    sup.start(recorder.clone());
    wait_until(&sup, ServerStatus::is_ready).await;
    for _ in 0..20 {
        sup.tell(SupervisorEvent::ToolsChanged);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        script.tools_lists.load(Ordering::SeqCst),
        2,
        "start + one refresh"
    );
    assert_eq!(recorder.tools_changed.load(Ordering::SeqCst), 2);
}

/// The tool list is listed again when its `ttlMs` runs out (never more often than
/// `min_list_ttl`), and kept until a `list_changed` when it has no TTL.
#[tokio::test(start_paused = true)]
async fn a_tool_list_is_listed_again_when_its_ttl_runs_out() {
    let script = Arc::new(Script::default());
    *lock(&script.tools_ttl_ms) = Some(5_000);
    script.plan(&[Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    let recorder = Arc::new(Recorder::default());
    sup.start(recorder.clone());
    wait_until(&sup, ServerStatus::is_ready).await;
    let listed = script.tools_lists.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(12_500)).await;
    assert_eq!(
        script.tools_lists.load(Ordering::SeqCst) - listed,
        2,
        "at 5 s and 10 s"
    );
    // A TTL shorter than the floor is listed at the floor's pace.
    *lock(&script.tools_ttl_ms) = Some(10);
    tokio::time::sleep(Duration::from_millis(2_600)).await;
    let listed = script.tools_lists.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    assert_eq!(script.tools_lists.load(Ordering::SeqCst) - listed, 3);
    // No TTL: kept.
    *lock(&script.tools_ttl_ms) = None;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let listed = script.tools_lists.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(script.tools_lists.load(Ordering::SeqCst), listed);
}

#[tokio::test(start_paused = true)]
async fn stop_closes_the_session_and_later_calls_fail_at_once() {
    let script = Arc::new(Script::default());
    script.plan(&[Plan::Serve]);
    let sup = supervisor(&script, Duration::from_secs(10));
    sup.start(Arc::new(Recorder::default()));
    wait_until(&sup, ServerStatus::is_ready).await;
    let session = sup.snapshot().session.unwrap();
    sup.stop(Duration::from_secs(5)).await;
    assert!(session.is_closed());
    assert_eq!(sup.snapshot().status, ServerStatus::Stopped);
    assert!(sup.snapshot().tools.is_none());
    let err = sup
        .ready_session(Instant::now() + Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ServerUnavailable);
}
