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
//!
//! With `--transport http` the same, over Streamable HTTP: the capture does initialize +
//! initialized + the call by hand against the fixture served with `--http 127.0.0.1:0`
//! (keeping the session id) and records the call's response (status, `content-type` —
//! `text/event-stream` from the fixture — `cache-control` and the body); the pong
//! (`bench-client-floor --http-pong`, under the launcher) is a tiny `std` HTTP/1.1 server that
//! answers every POST with those bytes and a `Content-Length`; the client is a minimal
//! blocking HTTP/1.1 client on one keep-alive connection writing the POST our transport makes
//! (same headers, the session id, the request body), pipelining the requests in throughput mode.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_bench::http_server::{HttpServer, ENDPOINT_PATH};
use mcp_bench::usage::process_usage;
use mcp_bench::{ClientArgs, Measurement, Mode, Payload, Transport};
use serde_json::Value;

/// What `bench-client-ours` sends to open the session (its initialize request is id 1).
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"mcp-core","version":"0.1.0"},"protocolVersion":"2025-11-25"}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
/// Id of the first call after initialize.
const CALL_ID: u64 = 2;
/// Read buffer: large enough that a 256 KiB response takes a few `read`s, not hundreds.
const READ_BUFFER: usize = 1 << 20;

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("--pong") => return pong(),
        Some("--http-pong") => return http_pong(),
        _ => {}
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
    match args.transport {
        Transport::Stdio => run_stdio(args),
        Transport::Http => run_http(args),
    }
}

/// One request/response channel to a pong, for the measuring loop.
trait PingPong {
    /// Writes one request.
    fn send(&mut self) -> Result<(), String>;
    /// Reads one response and checks its length.
    fn receive(&mut self) -> Result<(), String>;
}

/// The stdio pong: a request line out, a response line of `expected` bytes back.
struct PipePong {
    peer: Peer,
    request: Vec<u8>,
    line: Vec<u8>,
    expected: usize,
}

impl PingPong for PipePong {
    fn send(&mut self) -> Result<(), String> {
        self.peer.send(&self.request)
    }

    fn receive(&mut self) -> Result<(), String> {
        self.peer.receive(&mut self.line)?;
        if self.line.len() == self.expected {
            Ok(())
        } else {
            Err(format!(
                "response of {} bytes, expected {}",
                self.line.len(),
                self.expected
            ))
        }
    }
}

fn run_stdio(args: &ClientArgs) -> Result<Measurement, String> {
    let request = request_line(args.payload, CALL_ID);
    let response = capture_response(args, &request)?;
    let peer = start_pong(args, &response)?;
    let mut request = request.into_bytes();
    request.push(b'\n');
    let expected = response.len();
    drop(response);
    let mut pong = PipePong {
        peer,
        request,
        line: Vec::with_capacity(expected + 1),
        expected,
    };
    let measurement = measure_blocking(args, &mut pong);
    pong.peer.stop();
    measurement
}

/// Warm-up and measured phase over blocking I/O. Latency mode: one request, one response, per
/// call. Throughput mode with N in flight: N requests, then one more per response read, until
/// `--calls` responses are read; the pong answers in order, so each response belongs to the
/// oldest outstanding request.
fn measure_blocking(args: &ClientArgs, pong: &mut impl PingPong) -> Result<Measurement, String> {
    for _ in 0..args.warmup {
        pong.send()?;
        pong.receive()?;
    }
    let mut latencies = Vec::with_capacity(args.calls);
    let (cpu_before, _) = process_usage();
    let started = Instant::now();
    match args.mode {
        Mode::Latency => {
            for _ in 0..args.calls {
                let t = Instant::now();
                pong.send()?;
                pong.receive()?;
                latencies.push(t.elapsed());
            }
        }
        Mode::Throughput => {
            // Requests are small (< 400 bytes): N of them fit in the pipe or socket buffer,
            // no deadlock.
            let mut sent_at = VecDeque::with_capacity(args.inflight);
            let mut sent = 0;
            while sent < args.calls.min(args.inflight) {
                sent_at.push_back(Instant::now());
                pong.send()?;
                sent += 1;
            }
            while latencies.len() < args.calls {
                pong.receive()?;
                let t = sent_at.pop_front().expect("a request is outstanding");
                latencies.push(t.elapsed());
                if sent < args.calls {
                    sent_at.push_back(Instant::now());
                    pong.send()?;
                    sent += 1;
                }
            }
        }
    }
    let elapsed = started.elapsed();
    let (cpu_after, max_rss_kib) = process_usage();
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
        server_cpu_us_per_call: None,
        upstream_cpu_us_per_call: None,
        server_max_rss_kib: None,
    })
}

// ---- Streamable HTTP -------------------------------------------------------------------------

/// A minimal blocking HTTP/1.1 client connection (keep-alive; `Content-Length` or chunked
/// response bodies).
struct HttpConn {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    authority: String,
}

/// The parts of a response kept.
struct HttpResponse {
    status: u16,
    /// Lower-case names.
    headers: Vec<(String, String)>,
}

impl HttpResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl HttpConn {
    fn connect(authority: &str) -> Result<HttpConn, String> {
        let stream =
            TcpStream::connect(authority).map_err(|e| format!("connect {authority}: {e}"))?;
        stream
            .set_nodelay(true)
            .map_err(|e| format!("nodelay: {e}"))?;
        let reader = stream.try_clone().map_err(|e| format!("clone: {e}"))?;
        Ok(HttpConn {
            writer: stream,
            reader: BufReader::with_capacity(READ_BUFFER, reader),
            authority: authority.to_owned(),
        })
    }

    /// The POST our client's transport makes for `body`.
    fn request(&self, session: Option<&str>, body: &str) -> Vec<u8> {
        let mut head = format!(
            "POST {ENDPOINT_PATH} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n",
            self.authority
        );
        if let Some(session) = session {
            head.push_str(&format!(
                "mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n"
            ));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        bytes
    }

    fn send(&mut self, request: &[u8]) -> Result<(), String> {
        self.writer
            .write_all(request)
            .map_err(|e| format!("write: {e}"))
    }

    fn line(&mut self, line: &mut String) -> Result<(), String> {
        line.clear();
        match self.reader.read_line(line) {
            Ok(0) => Err("the server closed the connection".to_owned()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    /// Reads one response; its body into `body`.
    fn receive(&mut self, body: &mut Vec<u8>) -> Result<HttpResponse, String> {
        let mut line = String::new();
        self.line(&mut line)?;
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| format!("bad status line {line:?}"))?;
        let mut headers = Vec::new();
        loop {
            self.line(&mut line)?;
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            let (name, value) = trimmed
                .split_once(':')
                .ok_or_else(|| format!("bad header line {trimmed:?}"))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        let response = HttpResponse { status, headers };
        body.clear();
        if let Some(length) = response.header("content-length") {
            let length: usize = length
                .parse()
                .map_err(|_| format!("bad content-length {length:?}"))?;
            body.resize(length, 0);
            self.reader
                .read_exact(body)
                .map_err(|e| format!("read body: {e}"))?;
        } else if response
            .header("transfer-encoding")
            .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
        {
            loop {
                self.line(&mut line)?;
                let size = line.trim().split(';').next().unwrap_or("");
                let size = usize::from_str_radix(size, 16)
                    .map_err(|_| format!("bad chunk size {line:?}"))?;
                if size == 0 {
                    // Trailers (none expected) up to the empty line.
                    loop {
                        self.line(&mut line)?;
                        if line.trim_end().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                let at = body.len();
                body.resize(at + size, 0);
                self.reader
                    .read_exact(&mut body[at..])
                    .map_err(|e| format!("read chunk: {e}"))?;
                self.line(&mut line)?;
            }
        } else if !matches!(status, 202 | 204) {
            return Err(format!(
                "status {status} without content-length or chunked body"
            ));
        }
        Ok(response)
    }
}

/// The JSON-RPC message with `id` in a response body: the body itself (JSON) or the `data:`
/// lines of its SSE events.
fn find_message(body: &[u8], id: u64) -> Option<Value> {
    let text = std::str::from_utf8(body).ok()?;
    let candidates = std::iter::once(text).chain(
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim_start),
    );
    candidates
        .filter_map(|c| serde_json::from_str::<Value>(c).ok())
        .find(|v| v.get("method").is_none() && v["id"] == id)
}

/// Does the handshake over HTTP with the real server and returns the exact HTTP response
/// (status line, its `content-type` and `cache-control`, `content-length`, body) to replay.
fn capture_http_response(args: &ClientArgs, request: &str) -> Result<Vec<u8>, String> {
    let server = HttpServer::start(&args.server, &args.server_args)?;
    let mut conn = HttpConn::connect(server.authority())?;
    let mut body = Vec::new();
    conn.send(&conn.request(None, INITIALIZE))?;
    let init = conn.receive(&mut body)?;
    if init.status != 200 || find_message(&body, 1).is_none() {
        return Err(format!("initialize: status {}", init.status));
    }
    let session = init
        .header("mcp-session-id")
        .ok_or("no mcp-session-id on the initialize response")?
        .to_owned();
    conn.send(&conn.request(Some(&session), INITIALIZED))?;
    let status = conn.receive(&mut body)?.status;
    if status != 202 {
        return Err(format!("notifications/initialized: status {status}"));
    }
    conn.send(&conn.request(Some(&session), request))?;
    let call = conn.receive(&mut body)?;
    let value = find_message(&body, CALL_ID).ok_or_else(|| {
        format!(
            "tools/call: status {}, no response in the body",
            call.status
        )
    })?;
    if let Some(error) = value.get("error") {
        return Err(format!("the server answered the call with {error}"));
    }
    let text = value["result"]["content"][0]["text"].as_str().unwrap_or("");
    if call.status != 200 || !args.payload.check_text(text) {
        return Err("unexpected tool result".to_owned());
    }
    let mut head = String::from("HTTP/1.1 200 OK\r\n");
    for name in ["content-type", "cache-control"] {
        if let Some(value) = call.header(name) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut response = head.into_bytes();
    response.extend_from_slice(&body);
    drop(server);
    Ok(response)
}

/// The HTTP pong: stdin = `LENGTH\n` + the full HTTP response; listens on a loopback port
/// (printed as `listening on http://IP:PORT`) and answers every request on every connection
/// with that response, in order (pipelined requests included).
fn http_pong() {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut length = String::new();
    let response = input
        .read_line(&mut length)
        .ok()
        .and_then(|_| length.trim().parse::<usize>().ok())
        .and_then(|n| {
            let mut response = vec![0; n];
            input.read_exact(&mut response).ok().map(|()| response)
        });
    let Some(response) = response else {
        eprintln!("bench-client-floor --http-pong: expected LENGTH and the response on stdin");
        std::process::exit(2);
    };
    let listener = match TcpListener::bind("127.0.0.1:0").and_then(|l| Ok((l.local_addr()?, l))) {
        Ok((addr, listener)) => {
            println!("listening on http://{addr}");
            let _ = std::io::stdout().flush();
            listener
        }
        Err(e) => {
            eprintln!("bench-client-floor --http-pong: bind: {e}");
            std::process::exit(1);
        }
    };
    let response = std::sync::Arc::new(response);
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let response = response.clone();
        std::thread::spawn(move || serve_pong_connection(stream, &response));
    }
}

fn serve_pong_connection(stream: TcpStream, response: &[u8]) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::with_capacity(64 * 1024, stream);
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        let mut length = 0;
        let mut first = true;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if first {
                first = false;
                continue;
            }
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some((name, value)) = trimmed.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        body.resize(length, 0);
        if reader.read_exact(&mut body).is_err() || writer.write_all(response).is_err() {
            return;
        }
    }
}

/// The HTTP pong's connection: the recorded request out, a response of `expected` body bytes
/// back.
struct HttpPong {
    conn: HttpConn,
    request: Vec<u8>,
    body: Vec<u8>,
    expected: usize,
}

impl PingPong for HttpPong {
    fn send(&mut self) -> Result<(), String> {
        self.conn.send(&self.request)
    }

    fn receive(&mut self) -> Result<(), String> {
        let status = self.conn.receive(&mut self.body)?.status;
        if status == 200 && self.body.len() == self.expected {
            Ok(())
        } else {
            Err(format!(
                "status {status}, body of {} bytes, expected {}",
                self.body.len(),
                self.expected
            ))
        }
    }
}

/// The floor over HTTP: the request our transport POSTs for the call, to a non-MCP responder
/// (`--http-pong`, under the server's launcher) that replays the fixture's recorded response;
/// one keep-alive connection, requests pipelined in throughput mode.
fn run_http(args: &ClientArgs) -> Result<Measurement, String> {
    let request = request_line(args.payload, CALL_ID);
    let response = capture_http_response(args, &request)?;
    let body_length = response.len()
        - response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(0, |p| p + 4);
    let me = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let me = me
        .to_str()
        .ok_or("the executable path is not UTF-8")?
        .to_owned();
    let mut input = format!("{}\n", response.len()).into_bytes();
    input.extend_from_slice(&response);
    drop(response);
    let pong = match args.server_args.split_last() {
        None => HttpServer::spawn(&me, &["--http-pong".to_owned()], Some(&input))?,
        Some((_program, launcher_args)) => {
            let mut all = launcher_args.to_vec();
            all.extend([me, "--http-pong".to_owned()]);
            HttpServer::spawn(&args.server, &all, Some(&input))?
        }
    };
    drop(input);
    let conn = HttpConn::connect(pong.authority())?;
    // The session id is a 32-hex-digit token, as the fixture's.
    let request = conn.request(Some("0123456789abcdef0123456789abcdef"), &request);
    let mut pong_conn = HttpPong {
        conn,
        request,
        body: Vec::with_capacity(body_length),
        expected: body_length,
    };
    let measurement = measure_blocking(args, &mut pong_conn);
    drop(pong_conn);
    drop(pong);
    measurement
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
