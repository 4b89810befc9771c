//! The full fixture server's `main` (the `mcp-fixture-server` binary): mcp-fixture's
//! steps — parse the flags, apply the start-up faults ([`mcp_fixture::run`]) — then serve
//! HTTP with `--http ADDR`, WebSocket with `--ws ADDR`, else stdin/stdout.
//! (`mcph __fixture-server` runs mcp-fixture's stdio-only runner instead.)

use std::io::{self, Write};
use std::net::SocketAddr;

use mcp_fixture::run::{parse_command_line, start};

use crate::http::serve_http;
use crate::options::ServerOptions;
use crate::stdio::serve_stdio_blocking;
use crate::ws::serve_ws;
use crate::SERVER_NAME;

/// Runs the fixture server with command-line `args` (without the program name) and returns
/// the process exit code: 0 after stdin EOF, 1 on a start-up or I/O failure, 2 on bad flags.
/// With `--http ADDR` it serves HTTP until killed (see [`serve_http_forever`]), with
/// `--ws ADDR` WebSocket (see [`serve_ws_forever`]).
/// The caller should exit with it at once, so that in-flight tasks (slow tools, pending client
/// requests) do not keep the process alive after stdin EOF.
pub fn run(args: impl IntoIterator<Item = String>) -> i32 {
    let options = match parse_command_line(args) {
        Ok(options) => options,
        Err(code) => return code,
    };
    start(options, |options| match (options.http, options.ws) {
        (Some(addr), _) => serve_http_forever(options, addr),
        (None, Some(addr)) => serve_ws_forever(options, addr),
        (None, None) => serve_stdio_blocking(options),
    })
}

/// Serves HTTP on `addr` (loopback only) on a current-thread runtime until the process is
/// killed. Once listening, writes `listening on http://IP:PORT` as the first line of stdout
/// (flushed, for scripts) and the same line to stderr.
pub fn serve_http_forever(options: ServerOptions, addr: SocketAddr) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let fixture = serve_http(options, addr).await?;
        let line = format!("listening on {}", fixture.base_url());
        {
            let mut stdout = io::stdout().lock();
            writeln!(stdout, "{line}")?;
            stdout.flush()?;
        }
        eprintln!("{SERVER_NAME}: {line}");
        std::future::pending::<()>().await;
        drop(fixture);
        Ok(())
    })
}

/// Serves WebSocket on `addr` (loopback only) on a current-thread runtime until the process
/// is killed. Once listening, writes `listening on ws://IP:PORT/mcp` (the endpoint) as the
/// first line of stdout (flushed, for scripts) and the same line to stderr.
pub fn serve_ws_forever(options: ServerOptions, addr: SocketAddr) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let fixture = serve_ws(options, addr).await?;
        let line = format!("listening on {}", fixture.url());
        {
            let mut stdout = io::stdout().lock();
            writeln!(stdout, "{line}")?;
            stdout.flush()?;
        }
        eprintln!("{SERVER_NAME}: {line}");
        std::future::pending::<()>().await;
        drop(fixture);
        Ok(())
    })
}
