//! The command line (clap derive definitions).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde_json::{Map, Value};

use crate::args::{
    parse_json_object, parse_key_value, parse_llm_format, parse_region, parse_seconds,
};

/// The exit codes, shown at the end of `--help`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    the tool reported an error (isError result), or a generic failure
  2    usage error (bad flags, malformed JSON or --arg)
  3    configuration error (file missing or unreadable, syntax error, invalid field)
  4    server unavailable (the server the command needs failed to start or is not ready)
  5    not found (unknown tool, prompt, resource or server)
  6    timeout
  7    protocol or other MCP error
  130  interrupted (Ctrl-C)

Configuration: --config PATH, else .mcp.json in the current directory, else
$XDG_CONFIG_HOME/mcph/config.{json,toml} (or ~/.config/mcph/...), else a built-in
fixture server (so every command can be tried out right away).";

/// mcph: talk to MCP servers from the command line.
#[derive(Debug, Parser)]
#[command(
    name = "mcph",
    version,
    about = "List MCP servers and their health, list and call tools, read resources, get prompts",
    long_about = "mcph starts the MCP servers of a configuration file (Claude Desktop / Claude Code / \
Cursor `mcpServers`, VS Code `servers`, Codex `[mcp_servers.*]` TOML), runs one command \
against them and shuts them down. Output is for humans by default; --json prints one JSON \
document on stdout for scripts. Errors are one `error:` line and one `hint:` line on stderr.",
    after_long_help = EXIT_CODES
)]
pub struct Cli {
    /// Configuration file (JSON or .toml); default: the first of ./.mcp.json, $XDG_CONFIG_HOME (else ~/.config)/mcph/config.{json,toml} that exists, else the built-in fixture
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Print one JSON document on stdout instead of human output
    #[arg(long, global = true)]
    pub json: bool,

    /// Log what happens (client and server diagnostics) on stderr; RUST_LOG refines it
    #[arg(short, long, global = true)]
    pub verbose: bool,

    /// The client's region: servers that list `endpoints` send their calls to an endpoint of
    /// this region when one is healthy (default: the configuration's top-level "region", else
    /// MCPH_REGION)
    #[arg(long, global = true, value_name = "REGION", value_parser = parse_region)]
    pub region: Option<String>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show every configured server: status, transport, tool count, server name and version
    Servers,

    /// List tools (qualified `server__tool` names), optionally of one server
    #[command(
        after_long_help = "--llm prints the tool list a harness hands to a model, the exact bytes:\n\
one JSON array, tools in a stable order (new tools last), members sorted, no whitespace;\n\
FORMAT is anthropic (default: name, description, input_schema), openai (type: function) or\n\
mcp (the server's definition under the qualified name).\n\n\
--watch shows the tools, then every change of the list as it happens (+ added, - removed,\n\
~ changed; with --json one JSON object per line), until Ctrl-C or --count changes."
    )]
    Tools {
        /// Only this server's tools
        #[arg(conflicts_with = "llm")]
        server: Option<String>,
        /// Print the model-ready tool list (anthropic, openai or mcp)
        #[arg(long, value_name = "FORMAT", num_args = 0..=1, default_missing_value = "anthropic",
              value_parser = parse_llm_format)]
        llm: Option<mcp_client::LlmToolFormat>,
        /// Keep watching: print every change of the tool list
        #[arg(long, conflicts_with = "llm")]
        watch: bool,
        /// With --watch: stop after this many changes
        #[arg(long, value_name = "N", requires = "watch")]
        count: Option<u64>,
    },

    /// Call a tool by its qualified name; prints its text output
    #[command(
        after_long_help = "Arguments come from a JSON object, from --arg pairs, or both (--arg wins).\n\
A --arg value is parsed as JSON when it parses (42, true, {\"a\":1}, [1,2]) and taken as a\n\
string otherwise. Progress is drawn on stderr when it is a terminal. Ctrl-C cancels the call\n\
(exit 130). A result with isError prints its text on stderr and exits 1.\n\n\
A 2026-07-28 server may run a call as a task (Tasks extension): mcph waits for it within\n\
--timeout either way (and without --task cancels it when the time runs out or on Ctrl-C);\n\
--task shows the task id and its status when it starts and ends on stderr, leaves the task\n\
running if the wait is cut short, and with --no-wait prints the task and returns at once\n\
(then see `mcph task`; a stdio server's tasks end with mcph).\n\n\
Examples: mcph call fixture__add --arg a=2 --arg b=40\n\
          mcph call fixture__job --arg duration_ms=2000 --task"
    )]
    Call {
        /// The tool, `server__tool` (see `mcph tools`)
        name: String,
        /// Arguments as a JSON object, e.g. '{"text":"hi"}'
        #[arg(value_name = "JSON", value_parser = parse_json_object)]
        arguments: Option<Map<String, Value>>,
        /// One argument, KEY=VALUE (repeatable)
        #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = parse_key_value)]
        args: Vec<(String, String)>,
        /// Handle a task the server makes of the call: show its id and status on stderr, and
        /// leave it running if the wait is cut short
        #[arg(long)]
        task: bool,
        /// With --task: print the task (id and status) and return without waiting
        #[arg(long, requires = "task")]
        no_wait: bool,
        /// How long the call may take, in seconds, a task included (default: the server's
        /// tool timeout)
        #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
        timeout: Option<Duration>,
    },

    /// Tasks of the Tasks extension (`mcph call --task --no-wait` starts one): show, wait for
    /// or cancel a task by its id
    Task {
        /// What to do.
        #[command(subcommand)]
        command: TaskCommand,
    },

    /// List the resources of every ready server
    Resources,

    /// Read a resource by URI
    Read {
        /// The resource URI
        uri: String,
        /// The server to read it from (default: the one server that offers it)
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },

    /// Read a resource, then show it again every time the server says it changed
    #[command(
        after_long_help = "mcph subscribes to the resource (resources/subscribe), prints it, and on every\n\
notifications/resources/updated reads it again and prints it with the time since the start,\n\
until Ctrl-C or --count updates. It subscribes again if the server restarts.\n\
With --json: one JSON object per line ({\"uri\", \"server\", \"update\", \"contents\"}).\n\n\
Example: mcph watch fixture://counter"
    )]
    Watch {
        /// The resource URI
        uri: String,
        /// The server to read it from (default: the one server that offers it)
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        /// Stop after this many updates
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },

    /// List the prompts of every ready server (qualified `server__prompt` names)
    Prompts,

    /// Live per-server statistics of calls made through the full call stack
    #[command(
        after_long_help = "mcph stats calls through each server's full call stack (timeout, retry, breaker,\n\
pool) — a ping of every ready server, or with --call a tool — --rate times a second, and shows\n\
what the client's metrics saw: per server calls, QPS, p50/p99 latency, errors, breaker, pool,\n\
cache hits and reconnects, and per operation the latency quantiles and errors by kind. In a\n\
terminal the view is redrawn in place every --interval; with --json one snapshot per line;\n\
with --once one snapshot after --warmup rounds.\n\n\
Examples: mcph stats --once\n\
          mcph stats --prometheus 127.0.0.1:9464\n\
          mcph stats --web 127.0.0.1:8080\n\
          mcph stats --call fixture__add --arg a=1 --arg b=2 --rate 50"
    )]
    Stats {
        /// Print one snapshot and exit
        #[arg(long)]
        once: bool,
        /// Call this tool (`server__tool`) instead of pinging the servers
        #[arg(long, value_name = "TOOL")]
        call: Option<String>,
        /// Arguments of --call as a JSON object
        #[arg(long = "json-args", value_name = "JSON", value_parser = parse_json_object, requires = "call")]
        json_args: Option<Map<String, Value>>,
        /// One argument of --call, KEY=VALUE (repeatable)
        #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = parse_key_value, requires = "call")]
        args: Vec<(String, String)>,
        /// Calls (or ping rounds) per second
        #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        rate: u32,
        /// How often the view is redrawn, in seconds
        #[arg(long, value_name = "SECS", default_value = "1", value_parser = parse_seconds)]
        interval: Duration,
        /// With --once: rounds before the snapshot
        #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        warmup: u32,
        /// Also serve the metrics for Prometheus at http://ADDR/metrics while running (loopback
        /// addresses only, e.g. 127.0.0.1:9464; port 0 picks one, printed on stderr)
        #[arg(long, value_name = "ADDR", conflicts_with = "once")]
        prometheus: Option<std::net::SocketAddr>,
        /// Also serve the operations panel — a live page of every server's state, breaker,
        /// QPS, latency and errors, with /api/snapshot, /events and /metrics — at
        /// http://ADDR/ while running (loopback addresses only; port 0 picks one, printed on
        /// stderr); sampled every --interval
        #[arg(long, value_name = "ADDR", conflicts_with = "once")]
        web: Option<std::net::SocketAddr>,
    },

    /// Serve a configured server to others over another transport, until Ctrl-C
    #[command(
        after_long_help = "Example: `mcph bridge --grpc 127.0.0.1:50051 files` serves the \
configured stdio server `files` over gRPC (the mcp.transport.v1.Mcp/Session JSON-RPC tunnel);\n\
every gRPC call gets its own connection to the server (a child process for a stdio server), at\n\
most --max-calls at once. The address it listens on is printed on stdout (port 0 picks one).\n\
Callers act as you (the bridge uses your credentials for the server), so an address beyond\n\
loopback is refused unless callers must present a token (--token-env) and the bridge serves TLS\n\
(--tls-cert and --tls-key), so the token never travels in cleartext."
    )]
    Bridge {
        /// Listen for gRPC on this address (e.g. 127.0.0.1:50051)
        #[arg(long, value_name = "ADDR")]
        grpc: std::net::SocketAddr,
        /// The server to serve (as named in the configuration)
        server: String,
        /// Require `authorization: Bearer <the value of this environment variable>`
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        /// The largest message, in bytes, either way (default 16 MiB)
        #[arg(long, value_name = "BYTES")]
        max_message_size: Option<usize>,
        /// The most gRPC calls served at once, each with its own connection to the server
        /// (default 64); more are refused with RESOURCE_EXHAUSTED
        #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_calls: Option<usize>,
        /// Serve TLS (grpcs://) with this certificate chain (PEM); needs --tls-key
        #[arg(long, value_name = "PATH", requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The private key (PEM) for --tls-cert
        #[arg(long, value_name = "PATH", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
    },

    /// Serve every configured server as one MCP server on stdin/stdout, for any harness
    #[command(
        after_long_help = "Put mcph in a harness's MCP configuration as its only server:\n\
  {\"mcpServers\": {\"mcph\": {\"command\": \"mcph\", \"args\": [\"serve\", \"--config\", \"/path/to/mcp.json\"]}}}\n\
The harness then sees the tools, prompts and resources of every server of that configuration,\n\
each called through mcph's supervision, pools, retries, breakers and OAuth. Names stay the\n\
servers' own unless two servers share one; then each name of that list becomes\n\
`server__name` (--prefix always does it for every name; --separator picks the joint).\n\
Serves until the harness closes stdin, or Ctrl-C. Logs (with -v) go to stderr.\n\
With --http ADDR it serves Streamable HTTP at http://ADDR/mcp instead, in both protocol eras\n\
(2025-11-25 sessions; 2026-07-28 stateless), until Ctrl-C. Clients act as you (the gateway uses\n\
your credentials for the servers), so an address beyond loopback is refused unless clients must\n\
present a token (--token-env) and the gateway serves TLS (--tls-cert and --tls-key)."
    )]
    Serve {
        /// Serve Streamable HTTP on this loopback address (e.g. 127.0.0.1:8931; port 0 picks
        /// one) instead of stdio: both protocol eras at /mcp; the address is printed on stdout
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Also serve the operations panel (and /metrics for Prometheus) on this loopback
        /// address, e.g. 127.0.0.1:8932; its URL is printed on stderr
        #[arg(long, value_name = "ADDR")]
        admin: Option<std::net::SocketAddr>,
        /// Serve the gRPC tunnel (mcp.transport.v1.Mcp/Session) on this address instead of
        /// stdio; the address is printed on stdout
        #[arg(long, value_name = "ADDR", conflicts_with = "http")]
        grpc: Option<std::net::SocketAddr>,
        /// With --http or --grpc: require `Authorization: Bearer <the value of this
        /// environment variable>` (needed, with TLS, beyond loopback)
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        /// With --http or --grpc: serve TLS with this certificate chain (PEM); needs --tls-key
        #[arg(long, value_name = "PATH", requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The private key (PEM) for --tls-cert
        #[arg(long, value_name = "PATH", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// When names carry their server's name: `auto` (only when two servers share one) or
        /// `always`
        #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always"])]
        prefix: String,
        /// Between a server's name and a tool's or prompt's (1 to 8 of A-Z a-z 0-9 _ . -)
        #[arg(long, value_name = "SEP", default_value = "__")]
        separator: String,
    },

    /// OAuth logins: log in to a server, show what is stored, log out
    Auth {
        /// What to do.
        #[command(subcommand)]
        command: AuthCommand,
    },

    /// Get (render) a prompt
    Prompt {
        /// The prompt, `server__prompt` (see `mcph prompts`)
        name: String,
        /// One argument, KEY=VALUE (repeatable; values are strings)
        #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = parse_key_value)]
        args: Vec<(String, String)>,
    },
}

/// `mcph task …`.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Show a task's status (and its result or error once it ended)
    Get {
        /// The server that runs it (as named in the configuration)
        server: String,
        /// The task id
        id: String,
    },
    /// Wait for a task to end and print its result, answering what it asks on the way
    Wait {
        /// The server that runs it (as named in the configuration)
        server: String,
        /// The task id
        id: String,
        /// How long to wait, in seconds
        #[arg(long, value_name = "SECS", value_parser = parse_seconds, default_value = "300")]
        timeout: Duration,
    },
    /// Ask the server to cancel a task (cooperative: `mcph task get` shows how it ended)
    Cancel {
        /// The server that runs it (as named in the configuration)
        server: String,
        /// The task id
        id: String,
    },
}

/// `mcph auth …`.
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Log in to a server: opens the browser (or prints the URL) and catches the redirect on
    /// a loopback port; the tokens go to the OS credential store (or the fleet store)
    Login {
        /// The server (as named in the configuration)
        server: String,
        /// Print the URL instead of opening a browser
        #[arg(long)]
        no_browser: bool,
        /// Use the device authorization grant (a code to enter on any device); the default
        /// on a machine without a display when the server offers it
        #[arg(long, conflicts_with = "no_browser")]
        device: bool,
        /// How long to wait for the authorization, in seconds
        #[arg(long, value_name = "SECS", default_value_t = 300)]
        timeout: u64,
    },
    /// Show which servers have tokens, when they expire and their scopes (never the tokens)
    Status,
    /// Revoke a server's tokens where it supports revocation, and delete them
    Logout {
        /// The server (as named in the configuration)
        server: String,
    },
    /// Print a new random encryption key for a fleet store (put it in MCPH_STORE_KEY on every
    /// replica that shares the store)
    StoreKey,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn call_parses_json_and_args() {
        let cli = Cli::try_parse_from([
            "mcph",
            "call",
            "s__t",
            r#"{"a":1}"#,
            "--arg",
            "b=2",
            "--json",
        ])
        .unwrap();
        assert!(cli.json);
        match cli.command {
            Command::Call {
                name,
                arguments,
                args,
                ..
            } => {
                assert_eq!(name, "s__t");
                assert_eq!(arguments.unwrap()["a"], 1);
                assert_eq!(args, vec![("b".to_owned(), "2".to_owned())]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_json_is_a_usage_error() {
        let usage = i32::from(crate::errors::EXIT_USAGE);
        let err = Cli::try_parse_from(["mcph", "call", "s__t", "{nope"]).unwrap_err();
        assert_eq!(err.exit_code(), usage);
        let err = Cli::try_parse_from(["mcph", "call", "s__t", "--arg", "novalue"]).unwrap_err();
        assert_eq!(err.exit_code(), usage);
    }
}
