//! `mcp-bench`: measures our client (the bare session, and the facade with its full stack), the
//! official Rust SDK (`rmcp`) and a raw pipe floor doing the same `tools/call`s against the same
//! server, each client in its own process.
//!
//! - [`args`]: the command line every client binary takes ([`ClientArgs`]).
//! - [`measure`](mod@measure): the timing loops (sequential latency, N calls in flight) over any async call,
//!   and [`Measurement`], the JSON line a client prints.
//! - [`http_server`]: starting the server command as a Streamable HTTP server (`--transport
//!   http`) and killing it at the end.
//! - [`usage`]: this process's CPU time and peak memory (`getrusage`).
//! - [`scenario`]: the calls benchmarked (echo with a few bytes, a 256 KiB result) and the
//!   exact JSON-RPC lines of each, for the floor.
//! - [`report`]: the driver's clients, scenarios, medians, ratios and markdown table.
//! - [`stack_overhead`](mod@stack_overhead): the bare session against the full stack, per
//!   cell of that table: its markdown table and `report.json`'s `stack_overhead` section.
//! - [`gateway`]: the gateway comparison — the bare session to the fixture directly, through
//!   `mcph serve` and through `mcp-proxy` — its rows, targets, markdown section and
//!   `report.json`'s `gateway` section.
//! - [`driver`]: the `mcp-bench` driver that runs every client and writes the report.
//!
//! The client binaries are `bench-client-ours` (the bare session), `bench-client-stack`
//! (`mcp-client`'s facade with its full default stack in front of that session: what a harness
//! gets), `bench-client-rmcp` and `bench-client-floor`; `mcp-bench` drives them and prints the
//! report (`cargo xtask bench`).

pub mod args;
pub mod driver;
pub mod gateway;
pub mod http_server;
pub mod measure;
pub mod report;
pub mod scenario;
pub mod stack_overhead;
pub mod usage;

pub use args::{ClientArgs, Mode, Transport};
pub use measure::{measure, Measurement};
pub use scenario::Payload;
