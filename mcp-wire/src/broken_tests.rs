//! The readers of broken messages, against the shapes peers send.

use super::*;
use std::sync::Arc;

use mcp_core::{Message, RequestId};

#[test]
fn the_id_of_a_broken_message_is_found_before_the_fault_or_as_its_last_member() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{}"#,
        "[".repeat(100_000)
    );
    assert!(Message::from_slice(deep.as_bytes()).is_err());
    assert_eq!(request_id_of(deep.as_bytes()), Some(RequestId::Number(7)));
    for (text, id) in [
        (
            r#"{"jsonrpc":"2.0","id":"a","result":1,"error":{}}"#,
            Some("a".into()),
        ),
        (r#"{"id":3,"result":"cut"#, Some(RequestId::Number(3))),
        (
            r#"{"result":{"id":4},"id":5,"bogus""#,
            Some(RequestId::Number(5)),
        ),
        (r#"{"jsonrpc":"2.0","result":[[[["#, None),
        ("[1,2]", None),
        ("not json", None),
    ] {
        assert_eq!(request_id_of(text.as_bytes()), id, "{text}");
    }
    // After the fault, the id is trusted as the object's last member only (the TypeScript
    // SDK's order), and only where the whole message is at hand.
    let deep_first = format!(r#"{{"result":{},"id":8}}"#, "[".repeat(100_000));
    assert_eq!(
        request_id_of(deep_first.as_bytes()),
        Some(RequestId::Number(8))
    );
    assert_eq!(request_id_in_prefix(deep_first.as_bytes()), None);
    let nested_last = format!(r#"{{"result":{}{{"id":9}},"x":1}}"#, "[".repeat(100_000));
    assert_eq!(request_id_of(nested_last.as_bytes()), None);
}

#[test]
fn a_broken_request_names_its_id_for_the_side_that_answers_it() {
    let deep = "[".repeat(100_000);
    let request = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{deep}"#);
    assert_eq!(
        id_of_broken_request(request.as_bytes()),
        Some(RequestId::Number(3))
    );
    assert_eq!(request_id_of(request.as_bytes()), None);
    let method_first = format!(r#"{{"method":"ping","id":"a","params":{deep}"#);
    assert_eq!(
        id_of_broken_request(method_first.as_bytes()),
        Some("a".into())
    );
    assert_eq!(id_of_broken_request(br#"{"params":[[[}"#), None);
}

#[test]
fn a_whole_message_broken_after_its_id_names_it_unless_a_method_could_follow() {
    let mut broken = br#"{"jsonrpc":"2.0","id":5,"#.to_vec();
    broken.extend_from_slice(b"\xff\"result\":{}}");
    assert_eq!(request_id_of(&broken), Some(RequestId::Number(5)));
    assert_eq!(request_id_in_prefix(&broken), None);
    let mut request = br#"{"jsonrpc":"2.0","id":5,"#.to_vec();
    request.extend_from_slice(b"\xff\"method\":\"ping\"}");
    assert_eq!(request_id_of(&request), None);
}

#[test]
fn a_broken_server_request_names_no_request_of_the_client() {
    let deep = "[".repeat(100_000);
    for text in [
        // id first, method next (the common order of a request).
        format!(r#"{{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{deep}"#),
        // method first.
        format!(r#"{{"jsonrpc":"2.0","method":"roots/list","id":5,"params":{deep}"#),
        // whole, but not a valid message.
        r#"{"jsonrpc":"2.0","id":5,"method":7}"#.to_owned(),
        // broken, the TypeScript SDK's order (method first, id last).
        format!(r#"{{"method":"ping","params":{{"a":{deep}}},"jsonrpc":"2.0","id":5}}"#),
        // a broken notification whose params carry an id.
        format!(r#"{{"method":"notifications/progress","params":{{"id":5,"x":{deep}"#),
    ] {
        assert_eq!(request_id_of(text.as_bytes()), None, "{:.80}", text);
        assert_eq!(request_id_in_prefix(text.as_bytes()), None, "{:.80}", text);
    }
    // Cut short after the id: no member follows, so no method; the id is the answer's.
    let torn = br#"{"jsonrpc":"2.0","id":1,"res"#;
    assert_eq!(request_id_of(torn), Some(RequestId::Number(1)));
    assert_eq!(request_id_in_prefix(torn), None, "a prefix may go on");
    // Cut where a `method` member may have begun: perhaps the server's request.
    for cut in [
        &br#"{"jsonrpc":"2.0","id":1,"meth"#[..],
        br#"{"jsonrpc":"2.0","id":1,"m"#,
        br#"{"jsonrpc":"2.0","id":1,""#,
        br#"{"jsonrpc":"2.0","id":1, "#,
        br#"{"jsonrpc":"2.0","id":1"#,
        br#"{"id":1,"jsonrpc":"2.0""#,
        br#"{"jsonrpc":"2.0","id":1,"met"#,
    ] {
        let shown = String::from_utf8_lossy(cut);
        assert_eq!(request_id_of(cut), None, "{shown}");
        assert_eq!(
            classify_broken_message(cut),
            BrokenMessage::Unknown,
            "{shown}"
        );
    }
    // Inside a key that is not `method`'s: no method follows.
    assert_eq!(
        request_id_of(br#"{"jsonrpc":"2.0","id":1,"methods"#),
        Some(RequestId::Number(1))
    );
    // Broken before the end with nothing that tells: a method may follow the fault.
    assert_eq!(request_id_of(br#"{"id":5,"x":[},"method":"m"}"#), None);
    // A numeric-string id is found as written (the session reads it as this client's 5).
    assert_eq!(
        request_id_of(format!(r#"{{"id":"5","result":{deep}"#).as_bytes()),
        Some(RequestId::from("5"))
    );
}

#[test]
fn a_broken_message_is_an_answer_a_server_message_or_unknown() {
    for (bytes, expected) in [
        (
            &b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":\"caf\xe9\"}"[..],
            BrokenMessage::AnswerTo(RequestId::Number(4)),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"caf\xe9\"}}",
            BrokenMessage::ServerRequestOrNotification,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":\"\xe9\"}",
            BrokenMessage::ServerRequestOrNotification,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"result\":\"\xe9\"}",
            BrokenMessage::Unknown,
        ),
        (b"[1,\xe9]", BrokenMessage::Unknown),
    ] {
        let shown = String::from_utf8_lossy(bytes);
        assert_eq!(classify_broken_message(bytes), expected, "{shown}");
    }
}

#[test]
fn an_id_in_a_prefix_is_trusted_only_once_the_prefix_says_it_is_an_answer() {
    for (prefix, id) in [
        // An answer member after the id: an answer, cut in its result.
        (r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"#, Some(5)),
        (r#"{"jsonrpc":"2.0","id":5,"error":{"code":"#, Some(5)),
        // The answer member first, the id next.
        (r#"{"result":{},"id":6,"jsonrpc""#, Some(6)),
        // The object's end with no method: an answer (if no valid one).
        (r#"{"jsonrpc":"2.0","id":7}"#, Some(7)),
        // A method after the id, inside the prefix: a request.
        (r#"{"jsonrpc":"2.0","id":5,"method":"x","params":{"#, None),
        // The prefix ends after the id, before anything that tells: it may be a request
        // whose method comes later, so no id.
        (r#"{"jsonrpc":"2.0","id":5,"_meta":{"x":"#, None),
        (r#"{"jsonrpc":"2.0","id":5"#, None),
        (r#"{"jsonrpc":"2.0","id":5,"#, None),
        // An answer member but no id before the cut.
        (r#"{"result":{"id":4,"x":"#, None),
    ] {
        assert_eq!(
            request_id_in_prefix(prefix.as_bytes()),
            id.map(RequestId::Number),
            "{prefix}"
        );
    }
}

#[test]
fn a_parse_error_quotes_the_peers_text_redacted_and_cut() {
    let secret = format!("Bearer SECRET{}", "x".repeat(100_000));
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"error":"{secret}\u001b[2J"}}"#);
    let e = Message::from_slice(line.as_bytes()).unwrap_err();
    let reason = message_error_text(&e);
    let reason = reason.strip_prefix("invalid JSON-RPC message: ").unwrap();
    assert!(!reason.contains("SECRET"), "{reason}");
    assert!(reason.chars().count() < 300, "{reason}");
    assert!(!reason.chars().any(char::is_control), "{reason:?}");
    assert!(reason.starts_with("invalid type: string"), "{reason}");
    // The position stays, after the cut.
    assert!(
        reason.ends_with(&format!("column {}", line.len() - 1)),
        "{reason}"
    );
    let shared = Arc::new(line.into_bytes());
    let e = Message::from_shared_line(&shared).unwrap_err();
    let shown = message_error_text(&e);
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(shown.chars().count() < 330, "{shown}");
}
