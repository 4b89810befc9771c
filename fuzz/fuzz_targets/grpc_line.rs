//! The gRPC tunnel's line codec (mcp-transport-grpc `line.rs`) and the protobuf message that
//! carries it: a line decodes to a message, nothing (empty), or an error that names why; it
//! agrees with the JSON-RPC decoder on objects; a decoded message encodes to a line that
//! decodes to the same message and the same line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_core::Message;
use mcp_transport_grpc::fuzzing::{decode_line, encode_line};
use mcp_transport_grpc::proto::JsonRpcLine;
use prost::Message as _;

fn check_line(line: &str) {
    match decode_line(line) {
        Ok(Some(message)) => {
            let encoded = encode_line(&message, usize::MAX).expect("a decoded message encodes");
            let again = decode_line(&encoded)
                .unwrap_or_else(|e| panic!("our own line does not decode: {e}\n{encoded}"))
                .expect("our own line is not empty");
            assert_eq!(again, message, "decode(encode(m)) != m");
            assert_eq!(
                encode_line(&again, usize::MAX).as_deref(),
                Some(encoded.as_str())
            );
            // The size cap: a line one byte over it is refused, at it accepted.
            assert!(encode_line(&message, encoded.len() - 1).is_none());
            assert!(encode_line(&message, encoded.len()).is_some());
        }
        Ok(None) => assert!(
            line.trim_start().is_empty(),
            "a non-empty line read as empty"
        ),
        Err(e) => {
            assert!(!e.message().is_empty(), "an error without a message");
            assert!(!e.is_fatal(), "a bad line must not end the session: {e}");
            if line.trim_start().starts_with('{') {
                assert!(
                    Message::from_slice(line.as_bytes()).is_err(),
                    "the line codec refused a message the decoder reads: {e}"
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // The protobuf message as it comes off the wire.
    if let Ok(line) = JsonRpcLine::decode(data) {
        check_line(&line.line);
    }
    // And the line itself.
    if let Ok(text) = std::str::from_utf8(data) {
        check_line(text);
    }
});
