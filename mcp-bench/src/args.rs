//! The command line of every client binary.
//!
//! ```text
//! bench-client-X --server PATH [--server-arg ARG]... --mode latency|throughput
//!                [--inflight N] [--warmup N] [--calls N] [--payload small|large]
//!                [--transport stdio|http] [--tool NAME] [--server-url URL]
//! ```
//! The client starts the server itself (`--server` with its args; prefix with `taskset` to pin
//! it), runs the warm-up calls, measures `--calls` calls, and prints one
//! [`Measurement`](crate::Measurement) as a JSON line on stdout.
//!
//! With `--transport http` the server command gets `--http 127.0.0.1:0` appended, the client
//! reads the URL from its first stdout line and talks Streamable HTTP to `<url>/mcp` (see
//! [`crate::http_server`]); it kills the server at the end. With `--server-url URL` too, the
//! command is run as it is (nothing appended) and the client talks to `URL` once its port
//! accepts connections (a server that prints nothing, such as `mcp-proxy`).
//!
//! `--tool NAME` calls the payload's tool under another name (a gateway that prefixes names).

use serde::{Deserialize, Serialize};

use crate::scenario::Payload;

/// How the client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// The server is a child process talking over its stdin/stdout.
    Stdio,
    /// The server serves Streamable HTTP on loopback.
    Http,
}

impl Transport {
    /// `stdio` or `http`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        }
    }
}

/// Sequential latency, or throughput with calls in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One call at a time; per-call latencies recorded.
    Latency,
    /// `inflight` calls outstanding at all times; calls per second.
    Throughput,
}

/// Parsed client arguments.
#[derive(Debug, Clone)]
pub struct ClientArgs {
    /// The server program.
    pub server: String,
    /// Its arguments.
    pub server_args: Vec<String>,
    /// What to measure.
    pub mode: Mode,
    /// Calls outstanding at once (throughput mode).
    pub inflight: usize,
    /// Unmeasured calls first, in the measured shape (throughput mode: `inflight` at once, and
    /// at least `inflight` of them).
    pub warmup: usize,
    /// Measured calls.
    pub calls: usize,
    /// What to call.
    pub payload: Payload,
    /// stdio (default) or Streamable HTTP.
    pub transport: Transport,
    /// The tool's name when it is not the payload's own (`--tool`).
    pub tool: Option<String>,
    /// Over HTTP: the endpoint the server command serves, when it does not print it
    /// (`--server-url`).
    pub server_url: Option<String>,
}

impl ClientArgs {
    /// The name of the tool to call: `--tool`, or the payload's.
    pub fn tool(&self) -> &str {
        self.tool.as_deref().unwrap_or(self.payload.tool())
    }
}

impl ClientArgs {
    /// Parses `std::env::args()`; exits with a usage message on error.
    pub fn from_env() -> ClientArgs {
        match ClientArgs::parse(std::env::args().skip(1)) {
            Ok(args) => args,
            Err(e) => {
                eprintln!("error: {e}\nusage: --server PATH [--server-arg ARG]... --mode latency|throughput [--inflight N] [--warmup N] [--calls N] [--payload small|large] [--transport stdio|http] [--tool NAME] [--server-url URL]");
                std::process::exit(2);
            }
        }
    }

    /// Parses an argument list.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<ClientArgs, String> {
        let mut server = None;
        let mut server_args = Vec::new();
        let mut mode = Mode::Latency;
        let mut inflight = 1;
        let mut warmup = 1000;
        let mut calls = 10_000;
        let mut payload = Payload::Small;
        let mut transport = Transport::Stdio;
        let mut tool = None;
        let mut server_url = None;
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
            let number = |v: String| {
                v.parse::<usize>()
                    .map_err(|_| format!("{flag}: not a number: {v}"))
            };
            match flag.as_str() {
                "--server" => server = Some(value()?),
                "--server-arg" => server_args.push(value()?),
                "--mode" => {
                    mode = match value()?.as_str() {
                        "latency" => Mode::Latency,
                        "throughput" => Mode::Throughput,
                        other => return Err(format!("unknown mode {other}")),
                    }
                }
                "--inflight" => inflight = number(value()?)?.max(1),
                "--warmup" => warmup = number(value()?)?,
                "--calls" => calls = number(value()?)?.max(1),
                "--payload" => {
                    let v = value()?;
                    payload = Payload::parse(&v).ok_or_else(|| format!("unknown payload {v}"))?;
                }
                "--transport" => {
                    transport = match value()?.as_str() {
                        "stdio" => Transport::Stdio,
                        "http" => Transport::Http,
                        other => return Err(format!("unknown transport {other}")),
                    }
                }
                "--tool" => tool = Some(value()?),
                "--server-url" => server_url = Some(value()?),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(ClientArgs {
            server: server.ok_or("--server is required")?,
            server_args,
            mode,
            inflight,
            warmup,
            calls,
            payload,
            transport,
            tool,
            server_url,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_flag() {
        let a = ClientArgs::parse(
            [
                "--server",
                "taskset",
                "--server-arg",
                "-c",
                "--server-arg",
                "1",
                "--mode",
                "throughput",
                "--inflight",
                "64",
                "--warmup",
                "5",
                "--calls",
                "50",
                "--payload",
                "large",
                "--transport",
                "http",
                "--tool",
                "fixture/large",
                "--server-url",
                "http://127.0.0.1:9/",
            ]
            .map(String::from),
        )
        .unwrap();
        assert_eq!(a.server, "taskset");
        assert_eq!(a.server_args, ["-c", "1"]);
        assert_eq!(a.mode, Mode::Throughput);
        assert_eq!((a.inflight, a.warmup, a.calls), (64, 5, 50));
        assert_eq!(a.payload, Payload::Large);
        assert_eq!(a.transport, Transport::Http);
        assert_eq!(a.tool(), "fixture/large");
        assert_eq!(a.server_url.as_deref(), Some("http://127.0.0.1:9/"));
        let b = ClientArgs::parse(["--server", "x"].map(String::from)).unwrap();
        assert_eq!(b.transport, Transport::Stdio);
        assert_eq!((b.tool(), b.server_url.as_deref()), ("echo", None));
        assert!(
            ClientArgs::parse(["--server", "x", "--transport", "ws"].map(String::from)).is_err()
        );
        assert!(ClientArgs::parse(["--mode".to_owned()]).is_err());
        assert!(ClientArgs::parse(Vec::<String>::new()).is_err());
    }
}
