//! The fixture server's `main` over stdio: parse the flags, apply the start-up faults, serve
//! stdin/stdout until EOF. `mcph __fixture-server` runs [`run`]; mcp-testkit's
//! `mcp-fixture-server` runs the same two steps ([`parse_command_line`], then [`start`]) with
//! HTTP (`--http ADDR`) and WebSocket (`--ws ADDR`) added.

use std::io;

use crate::options::{parse_args, CliCommand, ServerOptions, HELP};
use crate::startup::apply_startup_faults;
use crate::stdio::serve_stdio_blocking;
use crate::{SERVER_NAME, SERVER_VERSION};

/// Runs the fixture server on stdin/stdout with command-line `args` (without the program name)
/// and returns the process exit code: 0 after stdin EOF, 1 on a start-up or I/O failure, 2 on
/// bad flags — `--http` and `--ws` among them, which only mcp-testkit's `mcp-fixture-server`
/// serves (the other HTTP and OAuth flags are taken and, as by that server on stdio, ignored).
/// The caller should exit with it at once, so that in-flight tasks (slow tools, pending client
/// requests) do not keep the process alive after stdin EOF.
pub fn run(args: impl IntoIterator<Item = String>) -> i32 {
    let options = match parse_command_line(args) {
        Ok(options) => options,
        Err(code) => return code,
    };
    let network = [
        ("--http", options.http.is_some()),
        ("--ws", options.ws.is_some()),
    ];
    if let Some((flag, _)) = network.into_iter().find(|(_, given)| *given) {
        eprintln!(
            "{SERVER_NAME}: {flag} is not served here: this server speaks stdio only (the \
             `mcp-fixture-server` binary of mcp-testkit serves HTTP and WebSocket)"
        );
        return 2;
    }
    start(options, serve_stdio_blocking)
}

/// Parses the command line (without the program name). `--help` and `--version` are printed
/// here, a bad flag is reported on stderr; each is `Err` with the exit code to end with (0 or
/// 2).
pub fn parse_command_line(args: impl IntoIterator<Item = String>) -> Result<ServerOptions, i32> {
    match parse_args(args) {
        Ok(CliCommand::Run(options)) => Ok(options),
        Ok(CliCommand::Help) => {
            print!("{HELP}");
            Err(0)
        }
        Ok(CliCommand::Version) => {
            println!("{SERVER_NAME} {SERVER_VERSION}");
            Err(0)
        }
        Err(message) => {
            eprintln!("{SERVER_NAME}: {message}");
            Err(2)
        }
    }
}

/// Applies the start-up faults of `options`, then serves with `serve` until it returns, and
/// returns the exit code: 0 when it returns `Ok`, 1 (reported on stderr) when the start-up
/// faults or `serve` fail.
pub fn start(options: ServerOptions, serve: impl FnOnce(ServerOptions) -> io::Result<()>) -> i32 {
    // Kept alive (never reaped) for the lifetime of the process.
    let _grandchild = match apply_startup_faults(&options) {
        Ok(child) => child,
        Err(e) => {
            eprintln!("{SERVER_NAME}: start-up failed: {e}");
            return 1;
        }
    };
    match serve(options) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{SERVER_NAME}: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::run;

    fn args(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn http_and_websocket_are_refused_before_the_start_up_faults() {
        // `--exit-on-start` would end this test process: the refusal comes first.
        for flag in ["--http", "--ws"] {
            assert_eq!(run(args(&["--exit-on-start", "7", flag, "127.0.0.1:0"])), 2);
        }
    }

    #[test]
    fn bad_flags_help_and_version_end_at_once() {
        assert_eq!(run(args(&["--bogus"])), 2);
        assert_eq!(run(args(&["--help"])), 0);
        assert_eq!(run(args(&["--version"])), 0);
    }
}
