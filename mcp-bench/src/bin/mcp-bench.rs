//! `mcp-bench`: runs every benchmark client on every scenario and prints the report (see
//! [`mcp_bench::driver`]). `cargo xtask bench` builds the binaries and runs it.

use mcp_bench::driver::{main_with, Options, USAGE};

fn main() {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("mcp-bench: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    match main_with(&options) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("mcp-bench: error: {e}");
            std::process::exit(1);
        }
    }
}
