//! Inputs the `sse` fuzz target of `fuzz/` found, kept as tests of the behaviour they broke.

use mcp_transport_http::sse::{SseError, SseParser};

/// Invalid UTF-8 is decoded lossily, and each bad byte becomes a 3-byte U+FFFD: 129 bytes of
/// `0xE5` made a 387-byte event through a 257-byte cap. The cap holds for the data as
/// delivered.
#[test]
fn lossy_decoding_does_not_grow_an_event_past_the_cap() {
    let max = 257;
    let mut stream = b"data: ".to_vec();
    stream.extend(std::iter::repeat_n(0xE5u8, 129));
    stream.extend_from_slice(b" third\n\ndata: after\n\n");
    let mut parser = SseParser::new(max);
    assert_eq!(
        parser.feed(&stream),
        Err(SseError::EventTooLarge { limit: max })
    );
    let event = parser.next_event().expect("the next event is kept");
    assert_eq!(event.data, "after");
    assert!(parser.next_event().is_none());

    // Across two data lines, and split across chunks, the same.
    let mut parser = SseParser::new(max);
    let mut stream = b"data: ok\ndata: ".to_vec();
    stream.extend(std::iter::repeat_n(0xFFu8, 100));
    stream.extend_from_slice(b"\n\n");
    let (first, second) = stream.split_at(20);
    let fed = [parser.feed(first), parser.feed(second)];
    assert!(fed.iter().any(Result::is_err), "{fed:?}");
    assert!(parser.next_event().is_none());

    // Within the cap once decoded: delivered.
    let mut parser = SseParser::new(max);
    let mut stream = b"data: ".to_vec();
    stream.extend(std::iter::repeat_n(0xFFu8, 85));
    stream.extend_from_slice(b"\n\n");
    parser.feed(&stream).unwrap();
    assert_eq!(parser.next_event().unwrap().data.len(), 255);
}
