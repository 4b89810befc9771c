//! `mcph watch URI` and `mcph stats` against fixture servers (this very binary run as
//! `mcph __fixture-server`).

mod common;

use common::*;
use mcp_testkit::process::ChildProcess;
use serde_json::{json, Value};

/// A fixture that bumps `fixture://counter` (and changes its tools) every 200 ms.
fn churning_config(env: &Env) {
    let config = json!({"mcpServers": {"fx": {
        "command": MCPH,
        "args": ["__fixture-server", "--churn-every-ms", "200"]
    }}});
    env.cwd.write(".mcp.json", &config.to_string());
}

#[test]
fn watch_prints_the_resource_again_on_every_update() {
    let env = Env::new();
    churning_config(&env);
    let run = env.run(&["watch", "fixture://counter", "--count", "2"]);
    run.assert_code(0);
    let headers: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("[+")).collect();
    assert_eq!(headers.len(), 3, "{}", run.stdout);
    assert!(headers[0].ends_with("read of fixture://counter (fx):"));
    assert!(headers[1].ends_with("update 1 of fixture://counter (fx):"));
    assert!(headers[2].ends_with("update 2 of fixture://counter (fx):"));

    let run = env.run(&["watch", "fixture://counter", "--count", "2", "--json"]);
    run.assert_code(0);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let counters: Vec<u64> = lines
        .iter()
        .map(|l| {
            l["contents"][0]["text"]
                .as_str()
                .unwrap()
                .trim_start_matches("counter = ")
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        counters.windows(2).all(|w| w[0] < w[1]),
        "every update shows a newer value: {counters:?}"
    );
    assert_eq!(lines[2]["update"], 2);
    assert_eq!(lines[0]["server"], "fx");

    // An unknown resource is a clear error.
    let run = env.run(&["watch", "fixture://nope", "--count", "1"]);
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("fixture://nope"), "{}", run.stderr);
}

#[test]
fn stats_once_shows_what_the_calls_did() {
    let env = Env::new();
    let run = env.run(&[
        "stats",
        "--once",
        "--warmup",
        "12",
        "--rate",
        "100",
        "--call",
        "fixture__add",
        "--arg",
        "a=1",
        "--arg",
        "b=2",
    ]);
    run.assert_code(0);
    assert!(run.stdout.contains("SERVER"), "{}", run.stdout);
    assert!(run.stdout.contains("tools/call add"), "{}", run.stdout);

    let run = env.run(&[
        "stats", "--once", "--warmup", "12", "--rate", "100", "--json",
    ]);
    run.assert_code(0);
    let snapshot = run.json();
    let server = &snapshot["servers"][0];
    assert_eq!(server["name"], "fixture");
    assert_eq!(server["network_transport"], "pipe");
    let ping = server["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["method"] == "ping")
        .expect("the pings are counted");
    assert_eq!(ping["calls"], 12);
    assert_eq!(ping["errors"], 0);
    assert_eq!(ping["latency"]["count"], 12);
    assert!(ping["latency"]["p50_us"].as_u64().unwrap() > 0);
    assert!(ping["latency"]["p99_us"].as_u64() >= ping["latency"]["p50_us"].as_u64());
    // The tool list was listed once at start (a miss) and never again.
    let tools = server["cache"]["caches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cache"] == "tools")
        .unwrap();
    assert_eq!(tools["misses"], 1);

    let run = env.run(&["stats", "--once", "--call", "fixture__nope"]);
    run.assert_code(5);
}

#[test]
fn stats_serves_prometheus_on_loopback_until_ctrl_c() {
    use std::io::{Read, Write};
    let env = Env::new();
    let mut stats = env.spawn(&[
        "stats",
        "--json",
        "--rate",
        "50",
        "--prometheus",
        "127.0.0.1:0",
    ]);
    // The address is announced on stderr.
    let addr = stats.wait_for_line(Stream::Stderr, DEADLINE, |line| {
        line.strip_prefix("serving Prometheus metrics at http://")
            .map(|url| url.trim_end_matches("/metrics").to_owned())
    });
    // Scrape until the pings show up (the client calls 50 times a second).
    let deadline = std::time::Instant::now() + DEADLINE;
    let body = loop {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        if response.contains(r#"mcp_client_calls_total{server="fixture",method="ping"}"#) {
            break response;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no pings counted: {response}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(body.contains("# TYPE mcp_client_operation_duration_seconds summary"));
    assert!(body.contains(r#"quantile="0.99""#));
    let run = stats.interrupt_leader(DEADLINE);
    assert_eq!(run.code, Some(0), "Ctrl-C is how a live view ends");
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "the endpoint is gone with the process"
    );
    // A non-loopback address is refused.
    let run = env.run(&["stats", "--prometheus", "0.0.0.0:0"]);
    run.assert_code(1);
    assert!(run.stderr.contains("beyond loopback"), "{}", run.stderr);
}

#[test]
fn stats_stops_when_its_reader_goes_away() {
    use std::io::{BufRead, BufReader};
    let env = Env::new();
    let mut stats = ChildProcess::spawn(
        "mcph stats",
        &mut env.command(&["stats", "--json", "--interval", "0.1"]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // `mcph stats --json | head -1`: one line, then the pipe closes (the thread ends, dropping
    // the pipe).
    let stdout = stats.take_stdout().expect("piped stdout");
    let (sender, first_line) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(read.map(|_| line));
    });
    let line = first_line
        .recv_timeout(DEADLINE)
        .expect("mcph stats prints a snapshot in time")
        .unwrap();
    let snapshot: Value = serde_json::from_str(&line).unwrap();
    assert!(snapshot["servers"].is_array());
    let status = stats
        .wait_within(DEADLINE)
        .expect("mcph stops once nobody reads");
    assert_eq!(status.code(), Some(0));
}
