//! The command line of every client binary.
//!
//! ```text
//! bench-client-X --server PATH [--server-arg ARG]... --mode latency|throughput
//!                [--inflight N] [--warmup N] [--calls N] [--payload small|large]
//! ```
//! The client starts the server itself (`--server` with its args; prefix with `taskset` to pin
//! it), runs the warm-up calls, measures `--calls` calls, and prints one [`Measurement`]
//! (crate::Measurement) as a JSON line on stdout.

use crate::scenario::Payload;

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
    /// Unmeasured calls first.
    pub warmup: usize,
    /// Measured calls.
    pub calls: usize,
    /// What to call.
    pub payload: Payload,
}

impl ClientArgs {
    /// Parses `std::env::args()`; exits with a usage message on error.
    pub fn from_env() -> ClientArgs {
        match ClientArgs::parse(std::env::args().skip(1)) {
            Ok(args) => args,
            Err(e) => {
                eprintln!("error: {e}\nusage: --server PATH [--server-arg ARG]... --mode latency|throughput [--inflight N] [--warmup N] [--calls N] [--payload small|large]");
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
            ]
            .map(String::from),
        )
        .unwrap();
        assert_eq!(a.server, "taskset");
        assert_eq!(a.server_args, ["-c", "1"]);
        assert_eq!(a.mode, Mode::Throughput);
        assert_eq!((a.inflight, a.warmup, a.calls), (64, 5, 50));
        assert_eq!(a.payload, Payload::Large);
        assert!(ClientArgs::parse(["--mode".to_owned()]).is_err());
        assert!(ClientArgs::parse(Vec::<String>::new()).is_err());
    }
}
