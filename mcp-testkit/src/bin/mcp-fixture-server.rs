//! `mcp-fixture-server`: the fixture MCP server on stdin/stdout.
//! Run with `--help` for the fault-injection flags.

use mcp_testkit::options::{parse_args, CliCommand, HELP};
use mcp_testkit::startup::apply_startup_faults;
use mcp_testkit::{serve_stdio, SERVER_NAME, SERVER_VERSION};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(CliCommand::Run(options)) => options,
        Ok(CliCommand::Help) => {
            print!("{HELP}");
            return;
        }
        Ok(CliCommand::Version) => {
            println!("{SERVER_NAME} {SERVER_VERSION}");
            return;
        }
        Err(message) => {
            eprintln!("{SERVER_NAME}: {message}");
            std::process::exit(2);
        }
    };
    // Kept alive (never reaped) for the lifetime of the process.
    let _grandchild = match apply_startup_faults(&options) {
        Ok(child) => child,
        Err(e) => {
            eprintln!("{SERVER_NAME}: start-up failed: {e}");
            std::process::exit(1);
        }
    };
    let code = match serve_stdio(options).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{SERVER_NAME}: {e}");
            1
        }
    };
    // Exit right away: in-flight tasks (slow tools, pending client requests)
    // must not keep the process alive after stdin EOF.
    std::process::exit(code);
}
