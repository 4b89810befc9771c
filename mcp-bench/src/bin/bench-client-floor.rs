//! The floor: the same bytes as one `tools/call`, ping-ponged over pipes between two processes,
//! with no MCP at all.
//!
//! Same command line as the other clients (`--server PATH [--server-arg ARG]... --mode ...`).
//! The server command is read as `[LAUNCHER ARGS...] PROGRAM`: its last word is the MCP server
//! (the fixture server), everything before it a launcher such as `taskset -c 1`.
//!
//! 1. Capture: start the real server command over raw pipes, do the initialize handshake with
//!    the bytes our client sends, send the scenario's `tools/call` request line — the exact
//!    line `bench-client-ours` writes for its first call — and keep the server's response line.
//! 2. Pong: start this same binary as `bench-client-floor --pong` under the same launcher (so
//!    it is pinned like the server would be), hand it the response line as its first input
//!    line, and from then on it answers every line with that response — the loop of
//!    `mcp-testkit`'s `mcp-pipe-pong`, which cannot be used as is because it takes the response
//!    as a command-line argument, and Linux caps one argument at 128 KiB (the large response
//!    is 256 KiB).
//! 3. Measure with blocking `std` I/O: latency mode writes one request line and reads one
//!    response line, per call; throughput mode with N in flight writes N lines, then for each
//!    response read writes one more line until `--calls` responses are read. The pong answers
//!    in order, so each response is matched with the oldest outstanding request, and the
//!    recorded per-call times are per-request round trips (send → its response), as in the
//!    MCP clients' throughput mode.
//!
//! The response is checked by its length only (the MCP clients check the result text).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_bench::usage::process_usage;
use mcp_bench::{ClientArgs, Measurement, Mode, Payload};
use serde_json::Value;

/// What `bench-client-ours` sends to open the session (its initialize request is id 1).
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"mcp-core","version":"0.1.0"},"protocolVersion":"2025-11-25"}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
/// Id of the first call after initialize.
const CALL_ID: u64 = 2;
/// Read buffer: large enough that a 256 KiB response takes a few `read`s, not hundreds.
const READ_BUFFER: usize = 1 << 20;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--pong") {
        pong();
        return;
    }
    let args = ClientArgs::from_env();
    match run(&args) {
        Ok(measurement) => measurement.print(),
        Err(e) => {
            eprintln!("bench-client-floor: {e}");
            std::process::exit(1);
        }
    }
}

/// The request line (no newline) our client writes for a call with JSON-RPC id `id`.
fn request_line(payload: Payload, id: u64) -> String {
    let tool = serde_json::to_string(payload.tool()).expect("a string serializes");
    let arguments = serde_json::to_string(&payload.arguments()).expect("JSON serializes");
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{tool},"arguments":{arguments},"_meta":{{"progressToken":{id}}}}}}}"#
    )
}

/// The pong: first input line = the response; then one response per input line.
fn pong() {
    let stdin = std::io::stdin();
    let mut input = BufReader::with_capacity(64 * 1024, stdin.lock());
    let mut response = Vec::new();
    match input.read_until(b'\n', &mut response) {
        Ok(n) if n > 0 && response.ends_with(b"\n") => {}
        _ => {
            eprintln!("bench-client-floor --pong: expected the response line on stdin");
            std::process::exit(2);
        }
    }
    let stdout = std::io::stdout();
    let mut output = stdout.lock();
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if output.write_all(&response).is_err() || output.flush().is_err() {
            return;
        }
    }
}

/// A child with piped stdin/stdout.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn spawn(program: &str, args: &[String]) -> Result<Peer, String> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::with_capacity(READ_BUFFER, child.stdout.take().expect("piped"));
        Ok(Peer {
            child,
            stdin,
            stdout,
        })
    }

    fn send(&mut self, line: &[u8]) -> Result<(), String> {
        self.stdin
            .write_all(line)
            .map_err(|e| format!("write: {e}"))
    }

    /// Reads one line (with its newline) into `line`; an error at end of stream.
    fn receive(&mut self, line: &mut Vec<u8>) -> Result<(), String> {
        line.clear();
        match self.stdout.read_until(b'\n', line) {
            Ok(0) => Err("the peer closed its stdout".to_owned()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    fn stop(self) {
        let Peer {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

/// Sends `request` (after the handshake) to the real server and returns its response line,
/// with its newline, after checking it is a successful result with the expected text.
fn capture_response(args: &ClientArgs, request: &str) -> Result<Vec<u8>, String> {
    let mut server = Peer::spawn(&args.server, &args.server_args)?;
    let mut line = Vec::new();
    let mut answer = |server: &mut Peer, id: u64| -> Result<Vec<u8>, String> {
        loop {
            server.receive(&mut line)?;
            let value: Value = serde_json::from_slice(&line)
                .map_err(|e| format!("the server wrote a non-JSON line: {e}"))?;
            if value.get("method").is_none() && value["id"] == id {
                if let Some(error) = value.get("error") {
                    return Err(format!("the server answered request {id} with {error}"));
                }
                if id == CALL_ID {
                    let text = value["result"]["content"][0]["text"].as_str().unwrap_or("");
                    if !args.payload.check_text(text) {
                        return Err("unexpected tool result".to_owned());
                    }
                }
                return Ok(std::mem::take(&mut line));
            }
        }
    };
    server.send(format!("{INITIALIZE}\n").as_bytes())?;
    answer(&mut server, 1)?;
    server.send(format!("{INITIALIZED}\n{request}\n").as_bytes())?;
    let response = answer(&mut server, CALL_ID)?;
    server.stop();
    Ok(response)
}

/// Starts the pong under the server's launcher prefix and primes it with `response`.
fn start_pong(args: &ClientArgs, response: &[u8]) -> Result<Peer, String> {
    let me = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let me = me
        .to_str()
        .ok_or("the executable path is not UTF-8")?
        .to_owned();
    let mut pong = match args.server_args.split_last() {
        None => Peer::spawn(&me, &["--pong".to_owned()])?,
        Some((_program, launcher_args)) => {
            let mut all = launcher_args.to_vec();
            all.extend([me, "--pong".to_owned()]);
            Peer::spawn(&args.server, &all)?
        }
    };
    pong.send(response)?;
    Ok(pong)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

fn run(args: &ClientArgs) -> Result<Measurement, String> {
    let request = request_line(args.payload, CALL_ID);
    let response = capture_response(args, &request)?;
    let mut pong = start_pong(args, &response)?;
    let mut request = request.into_bytes();
    request.push(b'\n');
    let expected = response.len();
    drop(response);

    let mut line = Vec::with_capacity(expected + 1);
    let mut receive = |pong: &mut Peer| -> Result<(), String> {
        pong.receive(&mut line)?;
        if line.len() == expected {
            Ok(())
        } else {
            Err(format!(
                "response of {} bytes, expected {expected}",
                line.len()
            ))
        }
    };

    for _ in 0..args.warmup {
        pong.send(&request)?;
        receive(&mut pong)?;
    }
    let mut latencies = Vec::with_capacity(args.calls);
    let (cpu_before, _) = process_usage();
    let started = Instant::now();
    match args.mode {
        Mode::Latency => {
            for _ in 0..args.calls {
                let t = Instant::now();
                pong.send(&request)?;
                receive(&mut pong)?;
                latencies.push(t.elapsed());
            }
        }
        Mode::Throughput => {
            // Requests are small (< 200 bytes): N of them fit in the pipe, no deadlock.
            let mut sent_at = VecDeque::with_capacity(args.inflight);
            let mut sent = 0;
            while sent < args.calls.min(args.inflight) {
                sent_at.push_back(Instant::now());
                pong.send(&request)?;
                sent += 1;
            }
            while latencies.len() < args.calls {
                receive(&mut pong)?;
                let t = sent_at.pop_front().expect("a request is outstanding");
                latencies.push(t.elapsed());
                if sent < args.calls {
                    sent_at.push_back(Instant::now());
                    pong.send(&request)?;
                    sent += 1;
                }
            }
        }
    }
    let elapsed = started.elapsed();
    let (cpu_after, max_rss_kib) = process_usage();
    pong.stop();
    latencies.sort_unstable();
    Ok(Measurement {
        client: "floor".to_owned(),
        calls: args.calls,
        inflight: if args.mode == Mode::Latency {
            1
        } else {
            args.inflight
        },
        p50_us: percentile(&latencies, 0.50),
        p99_us: percentile(&latencies, 0.99),
        calls_per_sec: args.calls as f64 / elapsed.as_secs_f64(),
        cpu_us_per_call: (cpu_after - cpu_before).as_secs_f64() * 1e6 / args.calls as f64,
        max_rss_kib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_what_our_client_sends() {
        assert_eq!(
            request_line(Payload::Small, 2),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":2}}}"#
        );
        assert_eq!(
            request_line(Payload::Large, 2),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"large","arguments":{"bytes":262144},"_meta":{"progressToken":2}}}"#
        );
    }
}
