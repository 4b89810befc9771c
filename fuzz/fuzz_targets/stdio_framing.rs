//! The stdio transport's line framing (mcp-transport-stdio `framing.rs`): a server's stdout,
//! cut into reads of every size, gives the same frames as when it arrives in one read, and no
//! more frames than it has lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::Input;
use mcp_transport_stdio::fuzzing::frames;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let read_size = 1 + usize::from(input.byte() % 64);
    let buffer = 1 + usize::from(input.byte());
    // Small caps, so the oversized paths are reached as often as the others.
    let max = 8 + 8 * usize::from(input.byte());
    let bytes = input.rest();
    let whole = frames(bytes, bytes.len().max(1), bytes.len() + 1, max);
    let cut = frames(bytes, read_size, buffer, max);
    assert_eq!(
        whole, cut,
        "reads of {read_size} bytes through a {buffer}-byte buffer framed differently"
    );
    let lines = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
    assert!(
        whole.len() <= lines,
        "{} frames from {lines} lines",
        whole.len()
    );
});
