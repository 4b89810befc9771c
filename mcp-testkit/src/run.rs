//! The fixture server's `main`: parse the flags, apply the start-up faults, serve stdin/stdout
//! (or HTTP with `--http ADDR`, WebSocket with `--ws ADDR`).
//! Shared by the `mcp-fixture-server` binary and `mcph __fixture-server`.

use std::io::{self, Write};
use std::net::SocketAddr;

use crate::http::serve_http;
use crate::options::{parse_args, CliCommand, ServerOptions, HELP};
use crate::startup::apply_startup_faults;
use crate::stdio::serve_stdio_blocking;
use crate::ws::serve_ws;
use crate::{SERVER_NAME, SERVER_VERSION};

/// Runs the fixture server with command-line `args` (without the program name) and returns
/// the process exit code: 0 after stdin EOF, 1 on a start-up or I/O failure, 2 on bad flags.
/// With `--http ADDR` it serves HTTP until killed (see [`serve_http_forever`]), with
/// `--ws ADDR` WebSocket (see [`serve_ws_forever`]).
/// The caller should exit with it at once, so that in-flight tasks (slow tools, pending client
/// requests) do not keep the process alive after stdin EOF.
pub fn run(args: impl IntoIterator<Item = String>) -> i32 {
    let options = match parse_args(args) {
        Ok(CliCommand::Run(options)) => options,
        Ok(CliCommand::Help) => {
            print!("{HELP}");
            return 0;
        }
        Ok(CliCommand::Version) => {
            println!("{SERVER_NAME} {SERVER_VERSION}");
            return 0;
        }
        Err(message) => {
            eprintln!("{SERVER_NAME}: {message}");
            return 2;
        }
    };
    // Kept alive (never reaped) for the lifetime of the process.
    let _grandchild = match apply_startup_faults(&options) {
        Ok(child) => child,
        Err(e) => {
            eprintln!("{SERVER_NAME}: start-up failed: {e}");
            return 1;
        }
    };
    if let Some(addr) = options.http {
        return match serve_http_forever(options, addr) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("{SERVER_NAME}: {e}");
                1
            }
        };
    }
    if let Some(addr) = options.ws {
        return match serve_ws_forever(options, addr) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("{SERVER_NAME}: {e}");
                1
            }
        };
    }
    match serve_stdio_blocking(options) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{SERVER_NAME}: {e}");
            1
        }
    }
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
