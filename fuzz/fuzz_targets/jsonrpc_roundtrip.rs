//! Decode → encode → decode is stable (mcp-core `jsonrpc.rs`): the owned and the shared
//! (zero-copy) visitor accept the same lines and read the same message, `write_json` writes
//! exactly the `Serialize` output, and a message's own JSON reads back as the same message
//! and the same bytes.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mcp_core::Message;

fuzz_target!(|data: &[u8]| {
    let owned = Message::from_slice(data);
    let shared = Message::from_shared_line(&Arc::new(data.to_vec()));
    let (owned, shared) = match (owned, shared) {
        (Ok(owned), Ok(shared)) => (owned, shared),
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "the owned and shared visitors fail differently");
            return;
        }
        (owned, shared) => panic!(
            "the owned and shared visitors disagree: {:?} vs {:?}",
            owned.map(|_| "ok"),
            shared.map(|_| "ok")
        ),
    };
    let json = owned.to_json_string().expect("a decoded message encodes");
    assert_eq!(
        json,
        shared.to_json_string().expect("a decoded message encodes"),
        "the owned and shared visitors read different messages"
    );
    let serialized = serde_json::to_string(&owned).expect("a decoded message serializes");
    assert_eq!(json, serialized, "write_json differs from Serialize");
    let again = Message::from_json_str(&json)
        .unwrap_or_else(|e| panic!("our own JSON does not decode: {e}\n{json}"));
    assert_eq!(again, owned, "decode(encode(m)) != m");
    assert_eq!(
        again.to_json_string().expect("a decoded message encodes"),
        json,
        "encode(decode(encode(m))) != encode(m)"
    );
});
