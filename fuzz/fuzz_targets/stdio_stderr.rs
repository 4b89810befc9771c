//! The capture of a stdio server's stderr (mcp-transport-stdio `stderr.rs`): whatever the child
//! writes (endless lines, `\r` progress output, invalid UTF-8), the kept tail stays within its
//! budget or one cut line, no kept line is longer than the line cap, and the reads' sizes do
//! not change what is kept.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::Input;
use mcp_transport_stdio::fuzzing::stderr_tail;

/// The longest line kept (4 KiB) and the mark of a cut line.
const MAX_LINE: usize = 4096 + " [...]".len();

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let read_size = 1 + usize::from(input.byte() % 64);
    let budget = 16 * usize::from(input.byte());
    let bytes = input.rest();
    let whole = stderr_tail(bytes, bytes.len().max(1), budget);
    let cut = stderr_tail(bytes, read_size, budget);
    assert_eq!(
        whole, cut,
        "reads of {read_size} bytes kept a different tail"
    );
    assert!(
        whole.len() <= budget.max(MAX_LINE),
        "a {}-byte tail for a budget of {budget}",
        whole.len()
    );
    for line in whole.split('\n') {
        assert!(
            line.len() <= MAX_LINE,
            "a kept line of {} bytes",
            line.len()
        );
    }
});
