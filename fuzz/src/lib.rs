//! What the fuzz targets share: reading a few parameters off the front of an input, cutting
//! data into chunks, and the round-trip check of a typed payload.
//!
//! Every target asserts more than "no panic" where it can: the same result whatever the
//! chunking, bounded output for bounded input, round trips that are stable, and errors that
//! say something.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A fuzzer input read as parameter bytes from its front, then the data.
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Input { bytes }
    }

    /// The next parameter byte (0 once the input is used up).
    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// The next `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (now, rest) = self.bytes.split_at(n.min(self.bytes.len()));
        self.bytes = rest;
        now
    }

    /// The rest of the input.
    pub fn rest(self) -> &'a [u8] {
        self.bytes
    }
}

/// Cuts `data` into chunks of 1 to 64 bytes, the sizes taken in turn from `sizes` (one chunk
/// when `sizes` is empty).
pub fn chunks<'d>(data: &'d [u8], sizes: &[u8]) -> Vec<&'d [u8]> {
    if sizes.is_empty() {
        return vec![data];
    }
    let mut out = Vec::new();
    let mut rest = data;
    let mut next = sizes.iter().cycle();
    while !rest.is_empty() {
        let size = next.next().map_or(1, |&s| 1 + usize::from(s % 64));
        let (now, later) = rest.split_at(size.min(rest.len()));
        out.push(now);
        rest = later;
    }
    out
}

/// If `json` reads as a `T`, checks that `T`'s JSON reads back as the same JSON: what a type
/// keeps of a peer's message survives being sent on (every MCP type keeps unknown members).
pub fn check_round_trip<T: DeserializeOwned + Serialize>(json: &str, what: &str) {
    let Ok(value) = serde_json::from_str::<T>(json) else {
        return;
    };
    let first = serde_json::to_value(&value)
        .unwrap_or_else(|e| panic!("a {what} read from JSON cannot be written back: {e}"));
    let again: T = serde_json::from_value(first.clone())
        .unwrap_or_else(|e| panic!("a {what}'s own JSON does not read back: {e}\n{first}"));
    let second = serde_json::to_value(&again)
        .unwrap_or_else(|e| panic!("a {what} read back cannot be written: {e}"));
    assert_eq!(first, second, "a {what} changed in a round trip");
}
