//! The pool against in-process fake servers (one per session, over `ChannelTransport`), mostly
//! on tokio's paused clock. Each test names the behaviour it proves.

mod common;

use std::time::Duration;

use common::{alive_tasks, Hub};
use mcp_core::types::CallToolResult;
use mcp_core::{Delivery, Error, ErrorKind, McpServiceExt, RequestOptions};
use mcp_pool::{PoolConfig, SessionPool};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Generous bound for conditions the tests wait on.
const LIMIT: Duration = Duration::from_secs(30);

fn quiet() -> PoolConfig {
    PoolConfig::default().with_keepalive(None)
}

async fn echo(pool: &SessionPool, text: &str) -> Result<CallToolResult, Error> {
    pool.call_tool("echo", Some(json!({ "text": text })), RequestOptions::new())
        .await
}

fn spawn_slow(
    pool: &SessionPool,
    ms: u64,
    options: RequestOptions,
) -> JoinHandle<Result<CallToolResult, Error>> {
    let pool = pool.clone();
    tokio::spawn(async move {
        pool.call_tool("slow", Some(json!({ "ms": ms })), options)
            .await
    })
}

#[tokio::test(start_paused = true)]
async fn nothing_connects_before_the_first_call_then_min_idle_sessions_are_kept() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), PoolConfig::default());
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(hub.created(), 0, "no call, no session");
    let stats = pool.stats();
    assert!(!stats.started);
    assert_eq!((stats.connections, stats.created), (0, 0));

    assert_eq!(echo(&pool, "first").await.unwrap().text(), "first");
    // bb8 opened min_idle (2); the call took one, so bb8 opened one more to keep 2 idle.
    mcp_testkit::wait::until("three sessions, all idle", LIMIT, || {
        let s = pool.stats();
        s.connections == 3 && s.idle == 3 && s.in_use == 0
    })
    .await;
    assert_eq!(hub.created(), 3);
    assert_eq!(hub.live(), 3);
    assert_eq!(pool.stats().created, 3);
    println!("after the first call: {:?}", pool.stats());
}

#[tokio::test(start_paused = true)]
async fn twenty_concurrent_calls_use_at_most_max_sessions_one_call_per_session_at_a_time() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), quiet().with_max_size(3));
    let started = Instant::now();
    let calls: Vec<_> = (0..20)
        .map(|_| spawn_slow(&pool, 1000, RequestOptions::new()))
        .collect();
    mcp_testkit::wait::until("three calls running, the rest waiting", LIMIT, || {
        let s = pool.stats();
        s.in_use == 3 && s.waiting == 17
    })
    .await;
    assert_eq!(pool.stats().connections, 3);
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().text(), "slept 1000 ms");
    }
    let elapsed = started.elapsed();
    // 20 calls of 1 s, 3 at a time: 7 rounds.
    assert!(
        elapsed >= Duration::from_secs(7) && elapsed < Duration::from_secs(8),
        "{elapsed:?}"
    );
    assert_eq!(hub.created(), 3, "never more sessions than max_size");
    assert_eq!(hub.max_live(), 3, "never more than 3 connected at once");
    assert_eq!(hub.total_calls(), 20);
    for session in hub.sessions() {
        assert_eq!(
            session.max_in_flight(),
            1,
            "session {} carried two calls at once",
            session.id
        );
        assert!(session.calls() > 1, "sessions are reused between calls");
    }
    let stats = pool.stats();
    assert!(stats.waits >= 17, "{stats:?}");
    assert_eq!((stats.in_use, stats.waiting, stats.timeouts), (0, 0, 0));
    println!(
        "20 calls over max 3: sessions {}, calls per session {:?}, {stats:?}",
        hub.created(),
        hub.sessions().iter().map(|s| s.calls()).collect::<Vec<_>>()
    );
}

#[tokio::test(start_paused = true)]
async fn each_call_returns_its_session_and_the_next_call_reuses_it() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), quiet().with_min_idle(0));
    for i in 0..5 {
        let text = format!("call {i}");
        assert_eq!(echo(&pool, &text).await.unwrap().text(), text);
        let stats = pool.stats();
        assert_eq!(stats.in_use, 0, "returned after call {i}");
        assert_eq!(stats.idle, stats.connections);
    }
    assert_eq!(hub.created(), 1, "one session served every call");
    assert_eq!(hub.session(0).calls(), 5);
}

/// bb8 measures idleness with `std::time::Instant`, which the paused clock does not move: this
/// one runs on the real clock, with short timeouts.
#[tokio::test]
async fn idle_sessions_are_closed_after_idle_timeout_down_to_min_idle() {
    let hub = Hub::new();
    let config = quiet()
        .with_min_idle(1)
        .with_max_size(5)
        .with_idle_timeout(Duration::from_millis(300))
        .with_reaper_interval(Duration::from_millis(50));
    let pool = SessionPool::new(hub.connector(), config);
    let burst: Vec<_> = (0..5)
        .map(|_| spawn_slow(&pool, 100, RequestOptions::new()))
        .collect();
    for call in burst {
        call.await.unwrap().unwrap();
    }
    let after_burst = pool.stats();
    assert_eq!(after_burst.connections, 5, "{after_burst:?}");
    mcp_testkit::wait::until(
        "the idle sessions are reaped down to min_idle",
        LIMIT,
        || {
            let s = pool.stats();
            s.closed_idle >= 5 && s.connections == 1 && s.idle == 1
        },
    )
    .await;
    mcp_testkit::wait::until(
        "the reaped sessions are closed on the server",
        LIMIT,
        || hub.live() as u32 == pool.stats().connections,
    )
    .await;
    let stats = pool.stats();
    assert!(
        stats.created >= 6,
        "bb8 opened a fresh one for min_idle: {stats:?}"
    );
    println!("after idling: {stats:?}, sessions made {}", hub.created());
}

#[tokio::test(start_paused = true)]
async fn idle_sessions_are_pinged_once_per_keepalive_interval() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), PoolConfig::default());
    let t0 = Instant::now();
    echo(&pool, "warm up").await.unwrap();
    mcp_testkit::wait::until("three idle sessions", LIMIT, || pool.stats().idle == 3).await;
    let pings = || hub.sessions().iter().map(|s| s.pings()).collect::<Vec<_>>();
    tokio::time::sleep_until(t0 + Duration::from_secs(59)).await;
    assert_eq!(pings(), vec![0, 0, 0], "not before a whole idle interval");
    tokio::time::sleep_until(t0 + Duration::from_secs(61)).await;
    assert_eq!(pings(), vec![1, 1, 1]);
    tokio::time::sleep_until(t0 + Duration::from_secs(181)).await;
    assert_eq!(pings(), vec![3, 3, 3], "one ping per 60 s of idleness");
    let stats = pool.stats();
    assert_eq!((stats.keepalive_pings, stats.keepalive_failures), (9, 0));
    assert_eq!(stats.connections, 3, "healthy sessions stay");
}

#[tokio::test(start_paused = true)]
async fn a_session_is_not_pinged_while_a_call_holds_it() {
    let hub = Hub::new();
    let pool = SessionPool::new(
        hub.connector(),
        PoolConfig::default().with_min_idle(0).with_max_size(1),
    );
    let t0 = Instant::now();
    let call = spawn_slow(
        &pool,
        150_000,
        RequestOptions::new().with_timeout(Duration::from_secs(200)),
    );
    tokio::time::sleep_until(t0 + Duration::from_secs(149)).await;
    assert_eq!(hub.session(0).pings(), 0, "busy: never pinged");
    call.await.unwrap().unwrap();
    tokio::time::sleep_until(t0 + Duration::from_secs(150 + 59)).await;
    assert_eq!(hub.session(0).pings(), 0, "idle for less than 60 s");
    tokio::time::sleep_until(t0 + Duration::from_secs(150 + 61)).await;
    assert_eq!(
        hub.session(0).pings(),
        1,
        "pinged 60 s after its call ended"
    );
}

#[tokio::test(start_paused = true)]
async fn a_session_that_fails_its_ping_is_closed_and_replaced() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), PoolConfig::default().with_min_idle(1));
    echo(&pool, "warm up").await.unwrap();
    mcp_testkit::wait::until("two idle sessions", LIMIT, || pool.stats().idle == 2).await;
    for session in hub.sessions() {
        session.stop_answering_pings();
    }
    // Pinged at 60 s, no answer within the 10 s ping timeout: closed.
    tokio::time::sleep(Duration::from_secs(71)).await;
    mcp_testkit::wait::until("both sessions closed by their keepalive", LIMIT, || {
        hub.sessions().iter().all(|s| s.ended()) && pool.stats().keepalive_failures == 2
    })
    .await;
    assert_eq!(echo(&pool, "after").await.unwrap().text(), "after");
    let stats = pool.stats();
    assert_eq!(stats.closed_broken, 2, "{stats:?}");
    assert!(hub.created() >= 3);
    let fresh: usize = hub.sessions()[2..].iter().map(|s| s.calls()).sum();
    assert_eq!(fresh, 1, "the call went to a new session");
    mcp_testkit::wait::until("every session is pooled or closed", LIMIT, || {
        hub.live() as u32 == pool.stats().connections
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_ping_answered_with_an_error_keeps_the_session() {
    let hub = Hub::new();
    let pool = SessionPool::new(
        hub.connector(),
        PoolConfig::default().with_min_idle(0).with_max_size(1),
    );
    echo(&pool, "warm up").await.unwrap();
    hub.session(0).answer_pings_with_errors();
    tokio::time::sleep(Duration::from_secs(121)).await;
    assert_eq!(hub.session(0).pings(), 2, "pinged twice, answered twice");
    assert!(!hub.session(0).ended(), "an answer proves the server alive");
    let stats = pool.stats();
    assert_eq!((stats.keepalive_pings, stats.keepalive_failures), (2, 0));
    assert_eq!(echo(&pool, "same").await.unwrap().text(), "same");
    assert_eq!((hub.created(), hub.session(0).calls()), (1, 2));
}

#[tokio::test(start_paused = true)]
async fn a_session_closed_by_its_server_is_discarded_at_checkout_and_replaced() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), quiet().with_min_idle(0));
    echo(&pool, "one").await.unwrap();
    hub.session(0).hang_up();
    mcp_testkit::wait::until("the client noticed", LIMIT, || {
        hub.session(0).client_ended()
    })
    .await;
    assert_eq!(echo(&pool, "two").await.unwrap().text(), "two");
    assert_eq!(hub.created(), 2);
    assert_eq!(hub.session(1).calls(), 1);
    assert_eq!(
        hub.session(1).pings(),
        0,
        "checkout needs no round trip to the server"
    );
    let stats = pool.stats();
    assert_eq!(
        (stats.closed_broken, stats.connections),
        (1, 1),
        "{stats:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_the_wait_for_a_free_session() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), quiet().with_min_idle(0).with_max_size(1));
    let holder = spawn_slow(&pool, 10_000, RequestOptions::new());
    mcp_testkit::wait::until("the only session is in use", LIMIT, || {
        pool.stats().in_use == 1
    })
    .await;
    let started = Instant::now();
    let err = pool
        .call_tool(
            "echo",
            Some(json!({"text": "late"})),
            RequestOptions::new().with_timeout(Duration::from_secs(2)),
        )
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_millis(2100),
        "{elapsed:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.was_never_sent());
    assert_eq!(err.subject(), Some("echo"));
    assert!(err.message().contains("no free connection"), "{err}");
    assert!(err.message().contains("1 of 1 in use"), "{err}");
    assert_eq!(pool.stats().timeouts, 1);
    holder.await.unwrap().unwrap();
    assert_eq!(
        hub.total_calls(),
        1,
        "the timed-out call never reached a server"
    );
}

#[tokio::test(start_paused = true)]
async fn waiting_for_a_session_and_the_call_share_one_deadline() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), quiet().with_min_idle(0).with_max_size(1));
    let holder = spawn_slow(&pool, 3_000, RequestOptions::new());
    mcp_testkit::wait::until("the only session is in use", LIMIT, || {
        pool.stats().in_use == 1
    })
    .await;
    let started = Instant::now();
    // Waits ~3 s for the session, then the 4 s call: the 5 s deadline cuts it at 5 s, not 8.
    let err = pool
        .call_tool(
            "slow",
            Some(json!({"ms": 4_000})),
            RequestOptions::new().with_timeout(Duration::from_secs(5)),
        )
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(5) && elapsed < Duration::from_millis(5100),
        "{elapsed:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(err.delivery(), Some(Delivery::Sent), "{err:?}");
    holder.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_connect_failure_reaches_the_caller_at_once_as_never_sent() {
    let hub = Hub::new();
    hub.fail_next_connects(1_000);
    let pool = SessionPool::new(hub.connector(), quiet());
    let started = Instant::now();
    let err = echo(&pool, "x").await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "not the deadline: {:?}",
        started.elapsed()
    );
    assert_eq!(err.kind(), ErrorKind::Network);
    assert!(err.was_never_sent());
    assert!(err.message().contains("refused by the test"), "{err}");
    assert_eq!(err.subject(), Some("echo"));
    assert!(pool.stats().connect_failures >= 1);
    hub.fail_next_connects(0);
    assert_eq!(echo(&pool, "back").await.unwrap().text(), "back");
}

#[tokio::test(start_paused = true)]
async fn a_connect_that_hangs_is_cut_off_by_connect_timeout() {
    let hub = Hub::new();
    hub.hang_connects(true);
    let pool = SessionPool::new(hub.connector(), quiet());
    let started = Instant::now();
    let err = echo(&pool, "x").await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(10) && elapsed < Duration::from_secs(11),
        "{elapsed:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.was_never_sent());
    assert!(err.message().contains("connecting"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_panicking_connector_is_an_error_and_costs_the_pool_no_capacity() {
    let hub = Hub::new();
    hub.panic_next_connects(1);
    let pool = SessionPool::new(hub.connector(), quiet().with_min_idle(0).with_max_size(1));
    let err = echo(&pool, "x").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ServerUnavailable);
    assert!(err.was_never_sent());
    assert!(err.message().contains("panicked"), "{err}");
    // With max_size 1, a slot lost inside bb8 would make this wait out its deadline.
    assert_eq!(echo(&pool, "then").await.unwrap().text(), "then");
    assert_eq!(pool.stats().connections, 1);
}

#[tokio::test(start_paused = true)]
async fn closing_wakes_waiting_callers_with_server_unavailable() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), quiet().with_min_idle(0).with_max_size(1));
    let holder = spawn_slow(&pool, 5_000, RequestOptions::new());
    mcp_testkit::wait::until("the only session is in use", LIMIT, || {
        pool.stats().in_use == 1
    })
    .await;
    let waiter = spawn_slow(&pool, 10, RequestOptions::new());
    mcp_testkit::wait::until("a caller waits", LIMIT, || pool.stats().waiting == 1).await;
    let started = Instant::now();
    pool.close().await;
    let err = waiter.await.unwrap().unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1), "woken at once");
    assert_eq!(err.kind(), ErrorKind::ServerUnavailable);
    assert!(err.was_never_sent());
    holder.await.unwrap().unwrap();
}

/// Real threads, real clock: many short calls racing over a small pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_callers_on_several_threads_never_share_a_session_or_exceed_max() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), quiet().with_max_size(4));
    for _ in 0..5 {
        let calls: Vec<_> = (0..50)
            .map(|i| spawn_slow(&pool, (i % 3) as u64, RequestOptions::new()))
            .collect();
        for call in calls {
            call.await.unwrap().unwrap();
        }
    }
    mcp_testkit::wait::until("every session is back", LIMIT, || pool.stats().in_use == 0).await;
    assert_eq!(hub.total_calls(), 250);
    assert!(hub.max_live() <= 4, "{} sessions at once", hub.max_live());
    for session in hub.sessions() {
        assert_eq!(session.max_in_flight(), 1, "session {}", session.id);
    }
    let stats = pool.stats();
    assert_eq!((stats.waiting, stats.timeouts), (0, 0), "{stats:?}");
    println!("250 racing calls: {stats:?}");
}

#[tokio::test(start_paused = true)]
async fn cancelled_timed_out_and_panicking_callers_leak_no_session_and_no_task() {
    let baseline = alive_tasks();
    let hub = Hub::new();
    let pool = SessionPool::new(
        hub.connector(),
        PoolConfig::default().with_min_idle(1).with_max_size(3),
    );
    let long = || RequestOptions::new().with_timeout(Duration::from_secs(60));

    // Callers cancelled mid-call (their tasks aborted), some holding sessions, some waiting.
    let cancelled: Vec<_> = (0..5).map(|_| spawn_slow(&pool, 10_000, long())).collect();
    mcp_testkit::wait::until("three running", LIMIT, || pool.stats().in_use == 3).await;
    for call in &cancelled {
        call.abort();
    }
    for call in cancelled {
        assert!(call.await.unwrap_err().is_cancelled());
    }

    // Callers whose deadline passes mid-call.
    let timed_out: Vec<_> = (0..3)
        .map(|_| {
            spawn_slow(
                &pool,
                5_000,
                RequestOptions::new().with_timeout(Duration::from_millis(500)),
            )
        })
        .collect();
    for call in timed_out {
        assert_eq!(call.await.unwrap().unwrap_err().kind(), ErrorKind::Timeout);
    }

    // Callers that panic while their call holds a session.
    let panicking: Vec<_> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let call = pool.call_tool("slow", Some(json!({"ms": 10_000})), long());
                let panic_while_held = async {
                    while pool.stats().in_use == 0 {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                };
                tokio::select! {
                    _ = call => {}
                    _ = panic_while_held => panic!("the caller panics while holding a session"),
                }
            })
        })
        .collect();
    for task in panicking {
        assert!(task.await.unwrap_err().is_panic());
    }

    mcp_testkit::wait::until("every session is back", LIMIT, || {
        let s = pool.stats();
        s.in_use == 0 && s.waiting == 0
    })
    .await;
    mcp_testkit::wait::until("every session made is pooled or closed", LIMIT, || {
        hub.live() as u32 == pool.stats().connections
    })
    .await;
    assert!(pool.stats().connections <= 3);
    assert_eq!(
        echo(&pool, "still fine").await.unwrap().text(),
        "still fine"
    );
    println!(
        "after cancel/timeout/panic: {:?}, sessions made {}",
        pool.stats(),
        hub.created()
    );

    drop(pool);
    mcp_testkit::wait::until(
        "no session and no task left",
        Duration::from_secs(120),
        || hub.live() == 0 && alive_tasks() == baseline,
    )
    .await;
    assert!(hub.sessions().iter().all(|s| s.client_ended()));
}

#[tokio::test(start_paused = true)]
async fn stats_report_in_use_idle_waiting_and_waits() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), quiet().with_min_idle(0).with_max_size(2));
    let before = pool.stats();
    assert!(!before.started);
    assert_eq!((before.max_size, before.target_size), (2, None));

    let a = spawn_slow(&pool, 5_000, RequestOptions::new());
    let b = spawn_slow(&pool, 5_000, RequestOptions::new());
    mcp_testkit::wait::until("two in use", LIMIT, || pool.stats().in_use == 2).await;
    let busy = pool.stats();
    assert_eq!(
        (busy.connections, busy.idle, busy.waiting),
        (2, 0, 0),
        "{busy:?}"
    );

    let c = spawn_slow(&pool, 1_000, RequestOptions::new());
    mcp_testkit::wait::until("one caller waiting", LIMIT, || pool.stats().waiting == 1).await;
    assert_eq!(pool.stats().in_use, 2);

    for call in [a, b, c] {
        call.await.unwrap().unwrap();
    }
    let after = pool.stats();
    assert_eq!((after.in_use, after.idle, after.connections), (0, 2, 2));
    // a and b waited for their sessions to be opened, c for a free one.
    assert_eq!(after.waits, 3, "{after:?}");
    assert_eq!((after.created, after.timeouts, after.waiting), (2, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_load_sized_pool_grows_while_callers_wait_and_shrinks_one_per_idle_period() {
    let hub = Hub::new();
    let config = quiet()
        .with_load_sized(true)
        .with_min_idle(1)
        .with_max_size(5)
        .with_idle_timeout(Duration::from_secs(300));
    let pool = SessionPool::new(hub.connector(), config);
    assert_eq!(pool.stats().target_size, Some(1));
    let t0 = Instant::now();
    for i in 0..3 {
        echo(&pool, &i.to_string()).await.unwrap();
    }
    assert_eq!(
        pool.stats().target_size,
        Some(1),
        "one caller at a time never waits for the target"
    );

    let burst: Vec<_> = (0..8)
        .map(|_| spawn_slow(&pool, 2_000, RequestOptions::new()))
        .collect();
    mcp_testkit::wait::until("five in use", LIMIT, || pool.stats().in_use == 5).await;
    let peak = pool.stats();
    assert_eq!(
        peak.target_size,
        Some(5),
        "grown one per waiting caller, up to max"
    );
    assert_eq!(peak.waiting, 3, "{peak:?}");
    for call in burst {
        call.await.unwrap().unwrap();
    }
    for session in hub.sessions() {
        assert_eq!(session.max_in_flight(), 1);
    }
    assert!(hub.max_live() <= 5);

    let mut targets = Vec::new();
    for period in 1..=6u64 {
        tokio::time::sleep_until(t0 + Duration::from_secs(300 * period + 1)).await;
        targets.push(pool.stats().target_size.unwrap_or_default());
    }
    // The first period held the burst (the target was reached); then one less per idle period.
    assert_eq!(targets, vec![5, 4, 3, 2, 1, 1]);
    println!(
        "load-sized: targets {targets:?}, {:?}, sessions made {}",
        pool.stats(),
        hub.created()
    );
}

#[tokio::test(start_paused = true)]
async fn close_ends_idle_sessions_refuses_new_calls_and_lets_running_calls_finish() {
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), PoolConfig::default());
    echo(&pool, "warm up").await.unwrap();
    mcp_testkit::wait::until("three idle", LIMIT, || pool.stats().idle == 3).await;
    let running = spawn_slow(&pool, 5_000, RequestOptions::new());
    mcp_testkit::wait::until("one in use", LIMIT, || pool.stats().in_use == 1).await;

    pool.close().await;
    mcp_testkit::wait::until("only the running call's session is left", LIMIT, || {
        hub.live() == 1
    })
    .await;
    let err = echo(&pool, "refused").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ServerUnavailable);
    assert!(err.was_never_sent());

    assert_eq!(running.await.unwrap().unwrap().text(), "slept 5000 ms");
    mcp_testkit::wait::until("the last session is closed after its call", LIMIT, || {
        hub.live() == 0
    })
    .await;
    let stats = pool.stats();
    assert!(stats.closed);
    assert_eq!((stats.connections, stats.in_use), (0, 0), "{stats:?}");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_pool_ends_every_session_and_task() {
    let baseline = alive_tasks();
    let hub = Hub::new();
    let pool = SessionPool::new(hub.connector(), PoolConfig::default());
    let calls: Vec<_> = (0..4)
        .map(|_| spawn_slow(&pool, 100, RequestOptions::new()))
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert!(hub.live() >= 4);
    drop(pool);
    mcp_testkit::wait::until(
        "no session and no task left",
        Duration::from_secs(120),
        || hub.live() == 0 && alive_tasks() == baseline,
    )
    .await;
}
