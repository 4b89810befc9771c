//! Hostile stdio servers: a small Python server that answers the `initialize` handshake, then
//! misbehaves on the tool called (endless stderr, bytes that are not UTF-8, over-cap answers and
//! an endless line, unknown and duplicate answers, deep nesting, a huge id, floods, a grandchild holding the
//! pipes). For every case the call ends with a clear, correctly classified error no later than
//! its deadline (or is answered), the client's memory stays under the stated bound (counted by
//! [`PeakAlloc`], deterministic), the session is left as the crate documents (a fatal framing
//! error closes it; a bad message, an unknown or duplicate answer leaves it open with nothing
//! pending), and no process is left behind.

mod common;

use std::time::Duration;

use common::{group_members, wait_group_gone, DEADLINE};
use mcp_core::types::CallToolResult;
use mcp_core::{Error, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::peak_alloc::{one_case_at_a_time, Measure, PeakAlloc};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
use serde_json::{json, Value};
use tokio::time::Instant;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc::new();

/// The client's `max_message_size` in these tests.
const CAP: usize = 1 << 20;
/// The deadline of the calls under test: long, so that an error that waits for it shows.
const CALL_DEADLINE: Duration = Duration::from_secs(60);
/// What a hostile server may make the client hold at once, on top of what it held before: a
/// line at the cap, the stdout and stderr read buffers, the stderr tail, a parsed message.
const BOUND: usize = 4 * CAP;

/// The hostile server. Tools: `echo`, `stderr` (`n` bytes of `pattern` on stderr, then an
/// answer), `invalid_utf8` (an answer with a byte that is not UTF-8; `id_last` puts its id
/// last, as the TypeScript SDK does; `no_id` names no request), `binary_line` (lines of such
/// bytes that are no JSON, then an answer), `big_answer` (an answer whose text is `n` bytes,
/// its id last), `endless_line` (`x` forever, no newline; `id_first` starts it as the answer),
/// `bad_notification` (a notification with a byte that is not UTF-8, then an answer),
/// `secret_error` (an answer whose `error` is a string holding a token, `n` bytes), `unknown_id`,
/// `duplicate_id`, `deep` (a result nested `n` deep), `huge_id` (an answer with an `n`-byte id
/// first), `big_array` (an `n`-element JSON array line first), `flood` (`n` notifications and `n`
/// pings first), `grandchild` (starts `sleep 600` sharing the pipes; answers its pid), `exit`.
const SERVER: &str = r#"
import json, os, subprocess, sys

out = sys.stdout.buffer
err = sys.stderr.buffer
CHUNK = 64 * 1024

def write(data):
    out.write(data)
    out.flush()

def send(message):
    write(json.dumps(message).encode() + b"\n")

def answer(id, text):
    send({"jsonrpc": "2.0", "id": id,
          "result": {"content": [{"type": "text", "text": text}]}})

def call(id, name, args):
    n = args.get("n", 0)
    if name == "echo":
        answer(id, args.get("text", ""))
    elif name == "stderr":
        pattern = args["pattern"].encode()
        chunk = (pattern * (CHUNK // len(pattern) + 1))[:CHUNK]
        for _ in range(n // CHUNK):
            err.write(chunk)
        err.flush()
        answer(id, "flooded")
    elif name == "invalid_utf8":
        result = b'{"content":[{"type":"text","text":"a\xffb"}]}'
        if args.get("no_id"):
            write(b'{"jsonrpc":"2.0","result":' + result + b"}\n")
        elif args.get("id_last"):
            write(b'{"result":' + result + b',"jsonrpc":"2.0","id":%d}\n' % id)
        else:
            write(b'{"jsonrpc":"2.0","id":%d,"result":' % id + result + b"}\n")
    elif name == "binary_line":
        write(b"\xfe\xfe\xfe\n")
        write(b"caf\xe9 listening (a Latin-1 log line)\n")
        answer(id, "after binary lines")
    elif name == "big_answer":
        # The TypeScript SDK's order and compact form: the id comes last.
        result = {"content": [{"type": "text", "text": "x" * n}]}
        write(json.dumps({"result": result, "jsonrpc": "2.0", "id": id},
                         separators=(",", ":")).encode() + b"\n")
    elif name == "endless_line":
        if args.get("id_first"):
            write(b'{"jsonrpc":"2.0","id":%d,"result":"' % id)
        chunk = b"x" * CHUNK
        while True:
            write(chunk)
    elif name == "bad_notification":
        write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"caf\xe9"}}\n')
        answer(id, "after a bad notification")
    elif name == "secret_error":
        send({"jsonrpc": "2.0", "id": id, "error": "Bearer SECRET-0123456789 \x1b[2J" + "x" * n})
    elif name == "unknown_id":
        send({"jsonrpc": "2.0", "id": id + 1000000, "result": {}})
        send({"jsonrpc": "2.0", "id": "not-ours", "result": {}})
        send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "x"}})
        answer(id, "after unknown ids")
    elif name == "duplicate_id":
        answer(id, "first")
        answer(id, "second")
    elif name == "deep":
        nest = b"[" * n + b"]" * n
        where = args["where"]
        if where == "result":
            write(b'{"jsonrpc":"2.0","id":%d,"result":' % id + nest + b"}\n")
            return
        if where == "structured":
            write(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"structuredContent":{"a":' % id + nest + b"}}}\n")
            return
        if where == "notification":
            write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":' + nest + b"}}\n")
        elif where == "request":
            write(b'{"jsonrpc":"2.0","id":"deep","method":"roots/list","params":{"a":' + nest + b"}}\n")
        answer(id, "after deep " + where)
    elif name == "huge_id":
        send({"jsonrpc": "2.0", "id": "i" * n, "result": {}})
        answer(id, "after huge id")
    elif name == "huge_request_ids":
        for k in range(n):
            send({"jsonrpc": "2.0", "id": "%d-" % k + "i" * args["size"], "method": "ping"})
        answer(id, "after huge request ids")
    elif name == "big_array":
        write(b"[" + b"0," * n + b"0]\n")
        answer(id, "after big array")
    elif name == "flood":
        for k in range(n):
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "note %d" % k}})
            send({"jsonrpc": "2.0", "id": "ping-%d" % k, "method": "ping"})
        answer(id, "after flood")
    elif name == "grandchild":
        child = subprocess.Popen(["sleep", "600"])
        answer(id, str(child.pid))
    elif name == "exit":
        err.write(b"exiting on purpose\n")
        err.flush()
        os._exit(args.get("code", 3))

for raw in sys.stdin.buffer:
    message = json.loads(raw)
    method = message.get("method")
    id = message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/call":
        params = message["params"]
        call(id, params["name"], params.get("arguments") or {})
    elif method is not None and id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}})
"#;

fn hostile() -> StdioServerConfig {
    StdioServerConfig::new("python3")
        .args(["-c", SERVER])
        .name("hostile")
        .max_message_size(CAP)
        .shutdown_grace(Duration::from_millis(300))
}

async fn connect() -> (ClientSession, u32) {
    let transport = StdioTransport::spawn(hostile()).expect("python3 starts");
    let pid = transport.pid();
    let options = SessionOptions::default().with_request_timeout(CALL_DEADLINE);
    let session = tokio::time::timeout(DEADLINE, ClientSession::connect(transport, (), options))
        .await
        .expect("connect finished in time")
        .expect("connects");
    (session, pid)
}

/// Calls `name`; fails the test if the call outlives its deadline plus a margin (an error
/// that waits for the deadline shows as `ErrorKind::Timeout`, which each test rules out).
async fn call(
    session: &ClientSession,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, Error> {
    let options = RequestOptions::new().with_timeout(CALL_DEADLINE);
    tokio::time::timeout(
        CALL_DEADLINE + DEADLINE,
        session.call_tool(name, Some(arguments), options),
    )
    .await
    .expect("the call ended")
}

/// Runs one hostile call measured: its outcome, how long it took, and the peak memory it added.
async fn measured(
    session: &ClientSession,
    name: &str,
    arguments: Value,
) -> (Result<CallToolResult, Error>, Duration, usize) {
    let measure = Measure::start(&ALLOC);
    let started = Instant::now();
    let outcome = call(session, name, arguments).await;
    let took = started.elapsed();
    let peak = measure.peak();
    eprintln!(
        "{name}: {} after {took:?}, peak {} KiB",
        match &outcome {
            Ok(result) => format!("answered {:?}", result.text()),
            Err(e) => format!("{:?}: {e}", e.kind()),
        },
        peak / 1024
    );
    (outcome, took, peak)
}

fn assert_bounded(peak: usize, case: &str) {
    assert!(
        peak < BOUND,
        "{case}: the client held {peak} bytes more at its peak (bound {BOUND})"
    );
}

/// The session still answers, and nothing is left pending.
async fn assert_still_serving(session: &ClientSession) {
    let result = call(session, "echo", json!({"text": "still here"}))
        .await
        .expect("the session goes on");
    assert_eq!(result.text(), "still here");
    assert_eq!(session.pending_requests(), 0);
}

async fn close(session: ClientSession, pid: u32) {
    tokio::time::timeout(DEADLINE, session.close())
        .await
        .expect("close is bounded");
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn endless_stderr_without_newlines_is_drained_in_bounded_memory() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    for pattern in ["x", "progress 42%\r", "\r"] {
        let (outcome, _, peak) = measured(
            &session,
            "stderr",
            json!({"pattern": pattern, "n": 64 << 20}),
        )
        .await;
        assert_eq!(outcome.expect("answered while flooding").text(), "flooded");
        assert_bounded(peak, &format!("64 MiB of {pattern:?} on stderr"));
    }
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn endless_stderr_lines_are_drained_in_bounded_memory() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    // Empty lines once took no room in the tail's budget: 4 M of them were 4 M entries.
    for pattern in ["\n", "a stderr line\n"] {
        let (outcome, _, peak) = measured(
            &session,
            "stderr",
            json!({"pattern": pattern, "n": 4 << 20}),
        )
        .await;
        assert_eq!(outcome.expect("answered while flooding").text(), "flooded");
        assert_bounded(peak, &format!("4 MiB of {pattern:?} on stderr"));
    }
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn an_answer_that_is_not_utf8_fails_its_call_at_once_and_the_session_goes_on() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    for (case, arguments) in [
        ("id first", json!({})),
        ("id last", json!({"id_last": true})),
    ] {
        let (outcome, took, peak) = measured(&session, "invalid_utf8", arguments).await;
        let err = outcome.expect_err("bytes that are not UTF-8 are no answer");
        assert_eq!(err.kind(), ErrorKind::Protocol, "{case}: {err}");
        assert!(took < CALL_DEADLINE, "{case}: ended before its deadline");
        assert!(err.message().contains("MCP server `hostile`"), "{err}");
        assert!(err.message().contains("not UTF-8"), "{err}");
        assert!(err.message().contains("byte offset"), "{err}");
        assert!(err.message().contains("of its output"), "{err}");
        assert_bounded(peak, case);
    }
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn a_message_that_is_not_utf8_and_names_no_request_closes_the_session() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, took, peak) = measured(&session, "invalid_utf8", json!({"no_id": true})).await;
    let err = outcome.expect_err("an answer was lost, and nothing tells whose");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(took < CALL_DEADLINE, "ended before its deadline: {took:?}");
    assert!(err.message().contains("MCP server `hostile`"), "{err}");
    assert!(err.message().contains("not UTF-8"), "{err}");
    assert!(err.message().contains("byte offset"), "{err}");
    assert_bounded(peak, "no id");
    assert!(session.is_closed(), "the output cannot be trusted any more");
    close(session, pid).await;
}

#[tokio::test]
async fn log_lines_that_are_not_utf8_are_skipped() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, _, peak) = measured(&session, "binary_line", json!({})).await;
    assert_eq!(outcome.expect("answered").text(), "after binary lines");
    assert_bounded(peak, "binary lines");
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn an_over_cap_answer_with_its_id_last_fails_only_its_call() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    // Past the cap, but ending within the allowance of another `CAP` bytes.
    let (outcome, took, peak) = measured(&session, "big_answer", json!({"n": CAP + CAP / 2})).await;
    let err = outcome.expect_err("an answer over the cap is discarded");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(took < CALL_DEADLINE, "ended before its deadline: {took:?}");
    assert!(err.message().contains("MCP server `hostile`"), "{err}");
    assert!(
        err.message().contains(&format!("{CAP}-byte limit")),
        "{err}"
    );
    assert_bounded(peak, "big answer, id last");
    assert!(!session.is_closed(), "only the call fails");
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn an_over_cap_answer_past_the_allowance_closes_the_session_at_twice_the_cap() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, took, peak) = measured(&session, "big_answer", json!({"n": 3 * CAP})).await;
    let err = outcome.expect_err("nothing named the request in time");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(took < CALL_DEADLINE, "ended before its deadline: {took:?}");
    assert!(err.message().contains("MCP server `hostile`"), "{err}");
    assert!(
        err.message().contains(&format!("{CAP}-byte limit")),
        "{err}"
    );
    assert!(
        err.message().contains(&format!("{} bytes", 2 * CAP)),
        "{err}"
    );
    assert_bounded(peak, "big answer past the allowance");
    assert!(session.is_closed());
    close(session, pid).await;
}

#[tokio::test]
async fn an_endless_line_fails_the_call_once_it_passes_twice_the_cap() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, took, peak) = measured(&session, "endless_line", json!({})).await;
    let err = outcome.expect_err("an endless line is no answer");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    // Known after 2 MiB of input: well before the deadline, however slow the machine.
    assert!(
        took < CALL_DEADLINE / 2,
        "ended well before its deadline: {took:?}"
    );
    assert!(err.message().contains("MCP server `hostile`"), "{err}");
    assert!(
        err.message().contains(&format!("{CAP}-byte limit")),
        "{err}"
    );
    assert_bounded(peak, "endless line");
    assert!(session.is_closed());
    // The server is blocked writing to a pipe nobody reads: close still ends it.
    close(session, pid).await;
}

#[tokio::test]
async fn an_endless_answer_fails_its_call_at_the_cap_then_closes_the_session_past_its_allowance() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let measure = Measure::start(&ALLOC);
    let outcome = call(&session, "endless_line", json!({"id_first": true})).await;
    let err = outcome.expect_err("an endless line is no answer");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(
        err.message().contains(&format!("{CAP}-byte limit")),
        "{err}"
    );
    // Its request failed at the cap; the line still ends the connection past its allowance (the
    // cap plus 16 MiB here), instead of being read forever while later calls wait out their
    // deadlines.
    let closed = tokio::time::timeout(CALL_DEADLINE / 2, session.closed())
        .await
        .expect("the session closed well before a call's deadline");
    let peak = measure.peak();
    drop(measure);
    eprintln!(
        "endless answer: {err}; then closed: {closed}; peak {} KiB",
        peak / 1024
    );
    assert!(
        closed
            .message()
            .contains(&format!("{} bytes", CAP + 16 * 1024 * 1024)),
        "{closed}"
    );
    assert!(closed.message().contains("already failed"), "{closed}");
    assert_bounded(peak, "endless answer, id first");
    close(session, pid).await;
}

#[tokio::test]
async fn a_server_notification_that_is_not_utf8_is_skipped_and_the_session_goes_on() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, _, peak) = measured(&session, "bad_notification", json!({})).await;
    assert_eq!(
        outcome.expect("answered").text(),
        "after a bad notification"
    );
    assert_bounded(peak, "bad notification");
    assert!(!session.is_closed());
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn the_servers_text_in_an_error_is_redacted_and_cut() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, took, peak) = measured(&session, "secret_error", json!({"n": CAP / 2})).await;
    let err = outcome.expect_err("a string is no error object");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(took < CALL_DEADLINE, "ended before its deadline: {took:?}");
    assert!(!err.message().contains("SECRET"), "{err}");
    assert!(!err.message().contains('\u{1b}'), "{err:?}");
    assert!(err.message().chars().count() < 1000, "{err}");
    assert_bounded(peak, "secret error");
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn unknown_and_duplicate_answers_are_ignored() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, _, peak) = measured(&session, "unknown_id", json!({})).await;
    assert_eq!(outcome.expect("answered").text(), "after unknown ids");
    assert_bounded(peak, "unknown ids");
    let (outcome, _, peak) = measured(&session, "duplicate_id", json!({})).await;
    assert_eq!(outcome.expect("answered").text(), "first");
    assert_bounded(peak, "duplicate id");
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn deep_nesting_is_a_clean_error_not_a_stack_overflow() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    for place in ["result", "structured"] {
        let (outcome, _, peak) =
            measured(&session, "deep", json!({"n": 100_000, "where": place})).await;
        let err = outcome.expect_err("a result nested 100,000 deep is no tool result");
        assert_eq!(err.kind(), ErrorKind::Protocol, "{place}: {err}");
        assert_bounded(peak, place);
    }
    for place in ["notification", "request"] {
        let (outcome, _, peak) =
            measured(&session, "deep", json!({"n": 100_000, "where": place})).await;
        assert_eq!(
            outcome.expect("answered").text(),
            format!("after deep {place}")
        );
        assert_bounded(peak, place);
    }
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn a_huge_id_is_dropped_in_bounded_memory() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, _, peak) = measured(&session, "huge_id", json!({"n": CAP - 100})).await;
    assert_eq!(outcome.expect("answered").text(), "after huge id");
    assert_bounded(peak, "huge id");
    assert_still_serving(&session).await;
    close(session, pid).await;
}

/// Pings whose ids are near the cap, from a server that does not read its input meanwhile:
/// answers echo their ids and wait in queues bounded by count, so ids over
/// `MAX_SERVER_REQUEST_ID_BYTES` are not answered and the queues hold kilobytes, not megabytes.
#[tokio::test]
async fn server_requests_with_huge_ids_are_refused_in_bounded_memory() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let arguments = json!({"n": 48, "size": CAP - 100});
    let (outcome, _, peak) = measured(&session, "huge_request_ids", arguments).await;
    assert_eq!(outcome.expect("answered").text(), "after huge request ids");
    assert_bounded(peak, "huge request ids");
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn a_big_json_line_that_is_no_message_is_skipped_without_building_it() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    // Just under the cap: as a `serde_json::Value` it would take 16 times its size.
    let (outcome, _, peak) = measured(&session, "big_array", json!({"n": CAP / 2 - 10})).await;
    assert_eq!(outcome.expect("answered").text(), "after big array");
    assert_bounded(peak, "big array");
    assert_still_serving(&session).await;
    close(session, pid).await;
}

#[tokio::test]
async fn a_flood_of_notifications_and_requests_is_bounded_and_calls_are_answered() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let (outcome, _, peak) = measured(&session, "flood", json!({"n": 20_000})).await;
    assert_eq!(outcome.expect("answered").text(), "after flood");
    assert_bounded(peak, "flood");
    assert_still_serving(&session).await;
    close(session, pid).await;
}

/// Waits until `pid`'s group has `count` live members.
async fn wait_members(pid: u32, count: usize) {
    mcp_testkit::wait::until("the grandchild to appear", DEADLINE, || {
        group_members(pid).0.len() >= count
    })
    .await;
}

#[tokio::test]
async fn close_ends_a_server_whose_grandchild_holds_the_pipes() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    let result = call(&session, "grandchild", json!({})).await.unwrap();
    assert!(result.text().parse::<u32>().is_ok(), "{}", result.text());
    wait_members(pid, 2).await;
    close(session, pid).await;
}

#[tokio::test]
async fn dropping_the_session_ends_a_server_whose_grandchild_holds_the_pipes() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    call(&session, "grandchild", json!({})).await.unwrap();
    wait_members(pid, 2).await;
    drop(session);
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn a_server_that_dies_while_its_grandchild_holds_the_pipes_fails_the_call_at_once() {
    let _one = one_case_at_a_time().await;
    let (session, pid) = connect().await;
    call(&session, "grandchild", json!({})).await.unwrap();
    wait_members(pid, 2).await;
    let (outcome, took, _) = measured(&session, "exit", json!({"code": 3})).await;
    let err = outcome.expect_err("the server died");
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    assert!(took < CALL_DEADLINE, "ended before its deadline: {took:?}");
    assert!(err.message().contains("exited with status 3"), "{err}");
    assert!(err.message().contains("exiting on purpose"), "{err}");
    close(session, pid).await;
}
