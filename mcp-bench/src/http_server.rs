//! A server command started as a Streamable HTTP server (`--transport http`).
//!
//! The command (`--server` with its `--server-arg`s, e.g. `taskset -c 1 mcp-fixture-server`)
//! gets `--http 127.0.0.1:0` appended; the server prints `listening on http://IP:PORT` (or the
//! endpoint itself, `http://IP:PORT/mcp`, as `mcph serve --http` does) as its first stdout line,
//! and the MCP endpoint is `<that URL>/mcp`. The server is killed when the
//! [`HttpServer`] is dropped.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The path of the Streamable HTTP endpoint.
pub const ENDPOINT_PATH: &str = "/mcp";

/// A running HTTP server process; killed on drop.
pub struct HttpServer {
    child: Child,
    /// Kept open: some servers end on stdin EOF.
    _stdin: Option<ChildStdin>,
    /// Kept open so that later writes to stdout do not fail.
    _stdout: BufReader<ChildStdout>,
    /// `http://IP:PORT`, without a trailing slash.
    pub base_url: String,
}

impl HttpServer {
    /// Starts `program args... --http 127.0.0.1:0` and waits for its `listening on` line.
    pub fn start(program: &str, args: &[String]) -> Result<HttpServer, String> {
        let mut all = args.to_vec();
        all.extend(["--http".to_owned(), "127.0.0.1:0".to_owned()]);
        HttpServer::spawn(program, &all, None)
    }

    /// Starts `program args...` as is, writes `input` to its stdin (kept open afterwards), and
    /// waits for its `listening on http://…` line.
    pub fn spawn(
        program: &str,
        args: &[String],
        input: Option<&[u8]>,
    ) -> Result<HttpServer, String> {
        let (child, mut stdin, stdout) = spawn_piped(program, args)?;
        let mut server = HttpServer {
            child,
            _stdin: None,
            _stdout: BufReader::new(stdout),
            base_url: String::new(),
        };
        if let (Some(input), Some(pipe)) = (input, stdin.as_mut()) {
            pipe.write_all(input)
                .and_then(|()| pipe.flush())
                .map_err(|e| format!("writing to {program}: {e}"))?;
        }
        server._stdin = stdin;
        let mut line = String::new();
        server
            ._stdout
            .read_line(&mut line)
            .map_err(|e| format!("reading {program}'s stdout: {e}"))?;
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .filter(|u| u.starts_with("http://"))
            .ok_or_else(|| format!("{program} did not print `listening on http://…`: {line:?}"))?;
        // The fixture prints its base URL; a gateway (`mcph serve --http`) its endpoint.
        let url = url.trim_end_matches('/');
        server.base_url = url.strip_suffix(ENDPOINT_PATH).unwrap_or(url).to_owned();
        Ok(server)
    }

    /// Starts `program args...` as is and waits (at most 30 s) until `url`'s host and port
    /// accept TCP connections: for a server that prints nothing.
    pub fn spawn_at(program: &str, args: &[String], url: &str) -> Result<HttpServer, String> {
        let authority = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .filter(|a| !a.is_empty())
            .ok_or_else(|| format!("not an http:// URL: {url}"))?;
        let addr: SocketAddr = authority
            .parse()
            .map_err(|e| format!("{url}: not IP:PORT: {e}"))?;
        let (child, stdin, stdout) = spawn_piped(program, args)?;
        let server = HttpServer {
            child,
            _stdin: stdin,
            _stdout: BufReader::new(stdout),
            base_url: format!("http://{authority}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut server = server;
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "{program} exited ({status}) before listening on {addr}"
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!("{program} did not listen on {addr} within 30 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `<base URL>/mcp`.
    pub fn endpoint(&self) -> String {
        format!("{}{ENDPOINT_PATH}", self.base_url)
    }

    /// `IP:PORT`.
    pub fn authority(&self) -> &str {
        self.base_url.trim_start_matches("http://")
    }
}

impl Drop for HttpServer {
    /// SIGTERM, so that a gateway can stop what it runs upstream; SIGKILL after 2 s.
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill only sends a signal to our own child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `program` with its stdin and stdout piped (stderr discarded): the child, its stdin
/// and its stdout.
fn spawn_piped(
    program: &str,
    args: &[String],
) -> Result<(Child, Option<ChildStdin>, ChildStdout), String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let stdin = child.stdin.take();
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("{program} was started without a stdout pipe"));
    };
    Ok((child, stdin, stdout))
}
