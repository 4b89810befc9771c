//! Entry points for the fuzz targets in the repository's `fuzz/` directory: the line codec of
//! the tunnel, reached without a channel. Not an API (hidden from the docs); it follows the
//! private module it wraps.

use mcp_core::{Message, TransportError};

use crate::line::{decode, encode, Decoded};
use crate::proto::JsonRpcLine;

/// Decodes one received line as the client transport does: `Ok(None)` for an empty line,
/// the message, or the recoverable error a bad line is reported with.
pub fn decode_line(line: &str) -> Result<Option<Message>, TransportError> {
    let line = JsonRpcLine {
        line: line.to_owned(),
        ..JsonRpcLine::default()
    };
    match decode(line, "the server") {
        Decoded::Message(message) => Ok(Some(message)),
        Decoded::Empty => Ok(None),
        Decoded::Bad(error) => Err(error),
    }
}

/// Encodes `message` as the line the transport sends, `None` when its JSON is over `max`
/// bytes or cannot be written.
pub fn encode_line(message: &Message, max: usize) -> Option<String> {
    encode(message, max).ok().map(|line| line.line)
}
