//! Inputs the `sse` fuzz target of `fuzz/` found, kept as tests of the behaviour they broke.

use mcp_transport_http::sse::{SseError, SseEvent, SseParser};

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

/// What a parser made of a stream, as the `sse` fuzz target compares it: the events, each
/// discarded event's size and request, and whether any `feed` said an event was too large.
#[derive(Debug, PartialEq)]
struct Parsed {
    events: Vec<SseEvent>,
    discarded: Vec<(usize, Option<String>)>,
    too_large: bool,
}

fn parse<'a>(max: usize, pieces: impl IntoIterator<Item = &'a [u8]>) -> Parsed {
    let mut parser = SseParser::new(max).keeping_discarded();
    let mut parsed = Parsed {
        events: Vec::new(),
        discarded: Vec::new(),
        too_large: false,
    };
    let drain = |parser: &mut SseParser, parsed: &mut Parsed| {
        parsed
            .events
            .extend(std::iter::from_fn(|| parser.next_event()));
        while let Some(over) = parser.next_discarded() {
            let id = over.request_id().map(|id| format!("{id:?}"));
            parsed.discarded.push((over.size(), id));
        }
    };
    for piece in pieces {
        parsed.too_large |= parser.feed(piece).is_err();
        drain(&mut parser, &mut parsed);
    }
    parser.finish();
    drain(&mut parser, &mut parsed);
    parsed
}

/// Replays a fuzzer input as the `sse` target reads it (a byte for the cap, a byte for
/// keeping discarded events, four chunk sizes, then the stream): the stream whole, and cut
/// into chunks of those sizes.
fn replay(input: &[u8]) -> (Parsed, Parsed) {
    let (params, stream) = input.split_at(6);
    let max = 1 + 4 * usize::from(params[0]);
    let sizes = &params[2..6];
    let mut pieces = Vec::new();
    let mut rest = stream;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at((1 + usize::from(size % 64)).min(rest.len()));
        pieces.push(now);
        rest = later;
    }
    (parse(max, [stream]), parse(max, pieces))
}

/// An oversized line cut off by the end of the stream made `feed` fail or not depending on
/// the chunking: a `data` line whose start came in a chunk of its own was counted without its
/// field name. Every line counts whole against the line cap, ended or not.
#[test]
fn an_unterminated_oversized_line_is_too_large_in_every_chunking() {
    let (whole, cut) = replay(include_bytes!("data/sse-unterminated-line.bin"));
    assert_eq!(whole, cut);
    assert!(whole.too_large);

    // The same in small: 76 bytes of line over a 10 + 64 byte line cap, with no end.
    let mut stream = b"data: ".to_vec();
    stream.extend([b'x'; 70]);
    for split in 0..=stream.len() {
        let (a, b) = stream.split_at(split);
        let parsed = parse(10, [a, b]);
        assert!(parsed.too_large, "split at {split}");
        assert_eq!(parsed.discarded, vec![(70, None)], "split at {split}");
    }
}

/// What was kept of a discarded event (66 bytes whole, 3 in chunks) depended on where a chunk
/// cut the `data:` field name of the line that went over the cap.
#[test]
fn a_discarded_event_keeps_the_same_size_in_every_chunking() {
    let (whole, cut) = replay(include_bytes!("data/sse-discarded-size.bin"));
    assert_eq!(whole, cut);

    let stream = format!(
        "data: {{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{}\"}}\n\ndata: ok\n\n",
        "x".repeat(100)
    );
    let whole = parse(10, [stream.as_bytes()]);
    assert_eq!(
        whole.discarded,
        vec![(stream.len() - 18, Some("Number(7)".into()))]
    );
    for split in 0..=stream.len() {
        let (a, b) = stream.as_bytes().split_at(split);
        assert_eq!(parse(10, [a, b]), whole, "split at {split}");
    }
}

/// The request a discarded answer was for depended on the chunking, with the bytes kept of it:
/// in the fuzzer's stream a chunked reading kept 53 bytes that were not the event's data and
/// named request 4 from them, where the event's data (181 bytes, as a transcription of the spec
/// reads the stream) names none. The other way round, a chunk cutting `data:` lost the request
/// an answer named, and on HTTP+SSE its call waited for its deadline instead of failing.
#[test]
fn a_discarded_answer_names_its_request_in_every_chunking() {
    let (whole, cut) = replay(include_bytes!("data/sse-discarded-request.bin"));
    assert_eq!(whole, cut);
    // A cap of 1 byte: every event is discarded, the first (an overlong line, no data) too.
    let sizes: Vec<usize> = whole.discarded.iter().map(|(size, _)| *size).collect();
    assert_eq!(sizes, [0, 181, 140, 147, 87]);
    assert!(
        whole.discarded.iter().all(|(_, id)| id.is_none()),
        "{whole:?}"
    );

    let stream = format!(
        "event: message\nid: 3\ndata: {{\"jsonrpc\":\"2.0\",\"id\":\"r-9\",\"result\":{{\"text\":\"{}\"}}}}\n\n",
        "y".repeat(120)
    );
    for split in 0..=stream.len() {
        let (a, b) = stream.as_bytes().split_at(split);
        let parsed = parse(16, [a, b]);
        assert_eq!(parsed.discarded.len(), 1, "split at {split}");
        assert_eq!(
            parsed.discarded[0].1.as_deref(),
            Some("String(\"r-9\")"),
            "split at {split}"
        );
    }
}
