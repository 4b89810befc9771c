//! The capture of a stdio server's stderr (mcp-transport-stdio `stderr.rs`): whatever the child
//! writes (endless lines, `\r` progress output, invalid UTF-8), the kept tail stays within its
//! budget or is one line (a line is kept even when it alone is over the budget), no kept line
//! is longer than the line cap, and the reads' sizes do not change what is kept.
//!
//! The budget is drawn from two bytes (0 to 65535), so it falls below, around and above one
//! cut line (4102 bytes) and several.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::Input;
use mcp_transport_stdio::fuzzing::stderr_tail;

/// The longest line kept (4 KiB) and the mark of a cut line.
const MAX_LINE: usize = 4096 + " [...]".len();

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let read_size = 1 + usize::from(input.byte() % 64);
    let budget = usize::from(u16::from_le_bytes([input.byte(), input.byte()]));
    let bytes = input.rest();
    let whole = stderr_tail(bytes, bytes.len().max(1), budget);
    let cut = stderr_tail(bytes, read_size, budget);
    assert_eq!(
        whole, cut,
        "reads of {read_size} bytes kept a different tail"
    );
    // The tail counts each kept line with its newline, and drops the oldest lines while that
    // count is over the budget and more than one line is left: several lines join to fewer
    // bytes than the budget (the last has no newline), or one line is left.
    assert!(
        whole.len() < budget || !whole.contains('\n'),
        "a {}-byte tail of {} lines for a budget of {budget}",
        whole.len(),
        whole.split('\n').count()
    );
    for line in whole.split('\n') {
        assert!(
            line.len() <= MAX_LINE,
            "a kept line of {} bytes",
            line.len()
        );
    }
});
