//! Inputs the fuzz targets of `fuzz/` found, kept as tests of the behaviour they broke.

use mcp_core::types::ProgressNotificationParams;
use mcp_core::Message;

/// decode → encode → decode gives the same message and the same bytes.
fn assert_round_trip(line: &str) {
    let message = Message::from_json_str(line).unwrap();
    let json = message.to_json_string().unwrap();
    let again = Message::from_json_str(&json).unwrap();
    assert_eq!(again, message, "decode(encode(m)) != m for {line}");
    assert_eq!(again.to_json_string().unwrap(), json);
}

/// `jsonrpc_roundtrip` and `grpc_line`: a number too large for an integer in a member the
/// message keeps as a value came back one unit in the last place off, because serde_json's
/// default float parsing is not correctly rounded.
#[test]
fn numbers_in_kept_members_survive_a_round_trip_exactly() {
    let long = "2".repeat(100);
    assert_round_trip(&format!(
        r#"{{"jsonrpc":"2.0","method":"no/such","arid":1444444444444444444{long}24}}"#
    ));
    assert_round_trip(&format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"x","trace":[0.1,1e-7,{},123456789.123456789e200]}}"#,
        "4".repeat(150)
    ));
}

/// The same for a typed payload's numbers: what the client reads is what the server wrote.
#[test]
fn typed_float_members_read_back_exactly() {
    let json = r#"{"progressToken":1,"progress":0.30000000000000004,"total":1.4444444444444444444444444444444e113}"#;
    let first: ProgressNotificationParams = serde_json::from_str(json).unwrap();
    let written = serde_json::to_string(&first).unwrap();
    let second: ProgressNotificationParams = serde_json::from_str(&written).unwrap();
    assert_eq!(first.progress.to_bits(), second.progress.to_bits());
    assert_eq!(
        first.total.map(f64::to_bits),
        second.total.map(f64::to_bits)
    );
}

/// `jsonrpc_roundtrip`: a raw result with a carriage return between its tokens and a number
/// beyond f64 (so it cannot be compared as a `Value`) is written on one line (the `\r` becomes
/// a space), and the message read back from that line is still equal to the one received.
#[test]
fn a_raw_result_with_a_line_break_equals_its_one_line_encoding() {
    assert_round_trip(
        "{\"jsonrpc\":\"2.0\",\"id\":14,\"result\":{\"resourceTemplates\":[{\"name\":\"item\",\r\
         \"title\":\"Item\",\"uriTempnprc\":5249685.9999E999999999}]}}",
    );
    assert_round_trip("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1e999,\n\"b\":2}}");
}
