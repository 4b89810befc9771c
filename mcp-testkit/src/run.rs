//! The fixture server's `main`: parse the flags, apply the start-up faults, serve stdin/stdout.
//! Shared by the `mcp-fixture-server` binary and `mcph __fixture-server`.

use crate::options::{parse_args, CliCommand, HELP};
use crate::startup::apply_startup_faults;
use crate::stdio::serve_stdio_blocking;
use crate::{SERVER_NAME, SERVER_VERSION};

/// Runs the fixture server with command-line `args` (without the program name) and returns
/// the process exit code: 0 after stdin EOF, 1 on a start-up or I/O failure, 2 on bad flags.
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
    match serve_stdio_blocking(options) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{SERVER_NAME}: {e}");
            1
        }
    }
}
