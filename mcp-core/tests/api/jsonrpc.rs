use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use mcp_core::jsonrpc::*;
use serde_json::json;

fn parse(text: &str) -> Result<Message, MessageError> {
    Message::from_json_str(text)
}

#[test]
fn parses_request_with_number_and_string_ids() {
    let m = parse(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
    assert_eq!(m, Message::Request(Request::new(7, "ping", None)));
    let m = parse(r#"{"jsonrpc":"2.0","id":"srv-1","method":"roots/list","params":{}}"#).unwrap();
    match m {
        Message::Request(r) => {
            assert_eq!(r.id, RequestId::from("srv-1"));
            assert_eq!(r.params.unwrap().to_json_string(), "{}");
        }
        other => panic!("expected request, got {other:?}"),
    }
}

#[test]
fn parses_notification_response_and_error() {
    let m = parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
    assert!(matches!(m, Message::Notification(n) if n.method == "notifications/initialized"));
    let m = parse(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#).unwrap();
    match m {
        Message::Response(r) => {
            assert_eq!(r.id, Some(RequestId::Number(1)));
            assert_eq!(r.outcome.unwrap().to_json_string(), r#"{"tools":[]}"#);
        }
        other => panic!("expected response, got {other:?}"),
    }
    let m =
        parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse"}}"#).unwrap();
    match m {
        Message::Response(r) => {
            assert_eq!(r.id, None);
            assert_eq!(r.outcome.unwrap_err().code, codes::PARSE_ERROR);
        }
        other => panic!("expected response, got {other:?}"),
    }
}

#[test]
fn malformed_messages_are_errors_not_panics() {
    for bad in [
        "",
        "not json",
        "[]",
        "[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]",
        "42",
        r#"{"id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"2.0","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
    assert!(Message::from_slice(&[0xff, 0xfe, b'{']).is_err());
}

#[test]
fn unknown_members_survive_a_round_trip() {
    let text = r#"{"jsonrpc":"2.0","id":3,"result":{"x":1,"future":[1,2]},"trace":{"span":"abc"}}"#;
    let m = parse(text).unwrap();
    let out = m.to_json_string().unwrap();
    let a: Value = serde_json::from_str(text).unwrap();
    let b: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(a, b);
}

#[test]
fn serializes_built_messages() {
    let m: Message = Request::new(
        5,
        "tools/call",
        Some(Payload::Value(
            json!({"name":"echo","arguments":{"text":"hi"}}),
        )),
    )
    .into();
    let v: Value = serde_json::from_str(&m.to_json_string().unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})
    );
    let m: Message = Response::error(None, ErrorObject::method_not_found("x")).into();
    let v: Value = serde_json::from_str(&m.to_json_string().unwrap()).unwrap();
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["error"]["code"], json!(-32601));
}

#[test]
fn payload_parses_once_into_types_and_compares_semantically() {
    let raw = Payload::from_json_str(r#"{ "a" : 1 , "b" : [true] }"#).unwrap();
    let val = Payload::Value(json!({"b":[true],"a":1}));
    assert_eq!(raw, val);
    #[derive(Deserialize)]
    struct T {
        a: i64,
    }
    assert_eq!(raw.deserialize::<T>().unwrap().a, 1);
    assert_eq!(val.into_typed::<T>().unwrap().a, 1);
    assert!(raw.is_object());
}

#[test]
fn shared_lines_parse_like_owned_ones_without_copying() {
    let text = r#"{"result":{"content":[{"type":"text","text":"big"}]},"jsonrpc":"2.0","id":9}"#;
    let line = Arc::new(text.as_bytes().to_vec());
    let shared = Message::from_shared_line(&line).unwrap();
    assert_eq!(shared, parse(text).unwrap());
    match &shared {
        Message::Response(r) => match r.outcome.as_ref().unwrap() {
            Payload::Shared(s) => {
                assert_eq!(s.as_str(), r#"{"content":[{"type":"text","text":"big"}]}"#)
            }
            other => panic!("expected a shared payload, got {other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(Arc::strong_count(&line), 2, "the payload shares the line");
    drop(shared);
    assert_eq!(Arc::strong_count(&line), 1, "and gives it back");
    let out = Message::from_shared_line(&line)
        .unwrap()
        .to_json_string()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        serde_json::from_str::<Value>(text).unwrap()
    );
    for bad in ["", "{", r#"{"jsonrpc":"2.0","id":1,"result":{}} x"#, "[1]"] {
        assert!(
            Message::from_shared_line(&Arc::new(bad.as_bytes().to_vec())).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn a_typed_payload_is_handed_over_as_it_is_and_is_json_everywhere_else() {
    use mcp_core::types::{CallToolResult, Content};
    let result = CallToolResult {
        content: vec![Content::text("quote \" é")],
        structured_content: Some(json!({"n": 1})),
        is_error: None,
        extra: Default::default(),
    };
    let json = serde_json::to_value(&result).unwrap();
    let text_at = |r: &CallToolResult| match &r.content[0] {
        Content::Text { text, .. } => text.as_ptr(),
        other => panic!("not text: {other:?}"),
    };
    // Its own type: the value itself, not a copy; any other: read from its JSON.
    let kept = result.clone();
    let at = text_at(&kept);
    let taken = Payload::Typed(TypedPayload::new(kept))
        .into_typed::<CallToolResult>()
        .unwrap();
    assert_eq!(text_at(&taken), at, "moved, not copied");
    let typed = Payload::Typed(TypedPayload::new(result.clone()));
    // Borrowed as it is, without a copy or JSON.
    match &typed {
        Payload::Typed(kept) => assert_eq!(kept.get::<CallToolResult>(), Some(&result)),
        other => panic!("not typed: {other:?}"),
    }
    assert_eq!(
        typed.clone().into_typed::<CallToolResult>().unwrap(),
        result
    );
    assert_eq!(typed.clone().into_typed::<Value>().unwrap(), json);
    assert_eq!(typed.clone().into_value().unwrap(), json);
    assert_eq!(typed.deserialize::<Value>().unwrap(), json);
    assert!(typed
        .clone()
        .into_typed::<Vec<String>>()
        .unwrap_err()
        .is_data());
    assert_eq!(
        typed.to_json_string(),
        serde_json::to_string(&result).unwrap()
    );
    assert!(typed.is_object());
    assert_eq!(typed, Payload::Value(json.clone()));
    assert!(format!("{typed:?}").contains("quote"));
    // On the wire it is the same JSON, written either way.
    let message: Message = Response::success(RequestId::from(9), typed).into();
    let mut written = Vec::new();
    message.write_json(&mut written).unwrap();
    assert_eq!(
        String::from_utf8(written).unwrap(),
        serde_json::to_string(&message).unwrap()
    );
    let read = Message::from_slice(&serde_json::to_vec(&message).unwrap()).unwrap();
    let Message::Response(Response {
        outcome: Ok(back), ..
    }) = read
    else {
        panic!("not a result: {read:?}");
    };
    assert_eq!(back.into_typed::<CallToolResult>().unwrap(), result);
}

#[test]
fn write_json_writes_exactly_what_serialize_does() {
    let line = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]},"x-extra":[1,{"a":"\u00e9"}]}"#;
    let shared = Message::from_shared_line(&Arc::new(line.to_vec())).unwrap();
    let raw = Message::from_slice(line).unwrap();
    let mut extra = Map::new();
    extra.insert("weird \"key\"".into(), json!({"n": null}));
    let messages = [
        shared,
        raw,
        Request::new(
            1,
            "tools/call",
            Some(Payload::Value(
                json!({"name": "é", "arguments": {"q": "a\"b"}}),
            )),
        )
        .into(),
        Request::new("s-1", "ping", None).into(),
        Message::Request(Request {
            extra: extra.clone(),
            ..Request::new(
                2,
                "x",
                Some(Payload::from_json_str(r#"{ "spaced" : 1 }"#).unwrap()),
            )
        }),
        Notification::new(
            "notifications/cancelled",
            Some(Payload::Value(json!({"requestId": 3}))),
        )
        .into(),
        Notification::new("notifications/initialized", None).into(),
        Response::error(None, ErrorObject::invalid_params("bad")).into(),
        Response::error(Some(RequestId::from(4)), ErrorObject::internal("x")).into(),
    ];
    for message in messages {
        let mut written = Vec::new();
        message.write_json(&mut written).unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            serde_json::to_string(&message).unwrap(),
            "{message:?}"
        );
        assert_eq!(
            message.to_json_string().unwrap(),
            serde_json::to_string(&message).unwrap()
        );
    }
}

#[test]
fn integral_float_ids_are_accepted() {
    let m = parse(r#"{"jsonrpc":"2.0","id":4.0,"result":{}}"#).unwrap();
    assert!(matches!(m, Message::Response(r) if r.id == Some(RequestId::Number(4))));
}

#[test]
fn a_parse_error_never_shows_the_peers_text() {
    let secret = format!("Bearer SECRET{}", "x".repeat(100_000));
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"error":"{secret}\u001b[2J"}}"#);
    for e in [
        Message::from_slice(line.as_bytes()).unwrap_err(),
        Message::from_shared_line(&Arc::new(line.clone().into_bytes())).unwrap_err(),
    ] {
        let shown = format!("{e} {e:?} {}", e.reason());
        assert!(!shown.contains("SECRET"), "{shown}");
        assert_eq!(
            e.to_string(),
            format!(
                "invalid JSON-RPC message (not a JSON-RPC 2.0 message) at line 1 column {}",
                line.len() - 1
            )
        );
        // The parser's words are kept apart, bounded, for a transport to show redacted.
        assert!(e.parser_words().starts_with("invalid type: string"));
        assert!(e.parser_words().len() <= 4096);
    }
    let e = Message::from_slice(b"{\"jsonrpc\":").unwrap_err();
    assert_eq!(e.reason(), "cut short at line 1 column 11");
    let e = Message::from_slice(b"nope").unwrap_err();
    assert_eq!(e.reason(), "not JSON at line 1 column 2");
}

/// A peer on another transport (an HTTP body, a gRPC line) may put line breaks between the
/// tokens of its JSON. Copied as they were onto a stdio line, the second line of these params
/// would reach a server as a request of its own (through the gRPC bridge, for one).
#[test]
fn raw_line_breaks_never_reach_the_written_line() {
    let text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[\r\n\
                {\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"evil\"}\n],\"x\":\"a\\nb\"}";
    let owned = Message::from_json_str(text).unwrap();
    let shared = Message::from_shared_line(&Arc::new(text.as_bytes().to_vec())).unwrap();
    // Arguments straight from a model's output, pretty-printed (`call_tool_raw`).
    let pretty: Box<serde_json::value::RawValue> =
        serde_json::from_str("{\n  \"text\": \"hi\",\r\n  \"x\": \"a\\nb\"\n}").unwrap();
    let operation = mcp_core::service::Operation::call_tool_raw("echo", &pretty).unwrap();
    let from_a_model = Message::Request(Request::new(2, "tools/call", operation.params));
    for message in [owned, shared, from_a_model] {
        let json = message.to_json_string().unwrap();
        assert!(!json.contains('\n') && !json.contains('\r'), "{json}");
        assert!(
            json.contains(r#""a\nb""#),
            "an escaped line break stays: {json}"
        );
        assert_eq!(json, serde_json::to_string(&message).unwrap());
        assert_eq!(Message::from_json_str(&json).unwrap(), message);
    }
}
