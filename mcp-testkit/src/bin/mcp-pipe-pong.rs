//! `mcp-pipe-pong`: the floor for stdio round-trip benchmarks.
//!
//! Reads newline-terminated lines from stdin and answers each one with the fixed line given as
//! the first argument (plus `'\n'`), flushing after every answer. Plain `std`, no runtime, no
//! parsing: what is left is the cost of the pipes and the process wake-ups.

use std::io::{BufRead, BufReader, Write};

fn main() {
    let Some(response) = std::env::args_os().nth(1) else {
        eprintln!("usage: mcp-pipe-pong RESPONSE_LINE");
        std::process::exit(2);
    };
    let mut response = response.into_encoded_bytes();
    response.push(b'\n');
    let stdin = std::io::stdin();
    let mut input = BufReader::with_capacity(64 * 1024, stdin.lock());
    let stdout = std::io::stdout();
    let mut output = stdout.lock();
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if output.write_all(&response).is_err() || output.flush().is_err() {
            return;
        }
    }
}
