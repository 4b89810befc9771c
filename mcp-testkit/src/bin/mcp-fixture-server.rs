//! `mcp-fixture-server`: the fixture MCP server on stdin/stdout.
//! Run with `--help` for the fault-injection flags.

fn main() {
    std::process::exit(mcp_testkit::run::run(std::env::args().skip(1)));
}
