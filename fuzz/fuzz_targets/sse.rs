//! The Server-Sent Events parser (mcp-transport-http `sse.rs`): the same events, last event
//! ID, retry and discarded events whatever the chunking, and no event over the size cap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::{chunks, Input};
use mcp_transport_http::sse::{SseEvent, SseParser};

/// What a parser made of a stream.
#[derive(Debug, PartialEq)]
struct Parsed {
    events: Vec<SseEvent>,
    last_event_id: Option<String>,
    retry: Option<std::time::Duration>,
    /// Size and request of each discarded event.
    discarded: Vec<(usize, Option<String>)>,
    rejected_chunks: usize,
}

fn parse(pieces: &[&[u8]], max: usize, keep: bool) -> Parsed {
    let mut parser = SseParser::new(max);
    if keep {
        parser = parser.keeping_discarded();
    }
    let mut parsed = Parsed {
        events: Vec::new(),
        last_event_id: None,
        retry: None,
        discarded: Vec::new(),
        rejected_chunks: 0,
    };
    let drain = |parser: &mut SseParser, parsed: &mut Parsed| {
        while let Some(event) = parser.next_event() {
            parsed.events.push(event);
        }
        while let Some(over) = parser.next_discarded() {
            let id = over.request_id().map(|id| format!("{id:?}"));
            parsed.discarded.push((over.size(), id));
        }
    };
    for piece in pieces {
        if parser.feed(piece).is_err() {
            parsed.rejected_chunks += 1;
        }
        drain(&mut parser, &mut parsed);
    }
    parser.finish();
    drain(&mut parser, &mut parsed);
    parsed.last_event_id = parser.last_event_id().map(str::to_owned);
    parsed.retry = parser.retry();
    parsed
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let max = 1 + 4 * usize::from(input.byte());
    let keep = input.byte() & 1 == 1;
    let sizes = input.take(4).to_vec();
    let stream = input.rest();
    let whole = parse(&[stream], max, keep);
    let cut = parse(&chunks(stream, &sizes), max, keep);
    for event in &whole.events {
        assert!(
            event.data.len() <= max,
            "an event of {} bytes passed a cap of {max}",
            event.data.len()
        );
    }
    assert_eq!(whole.events, cut.events, "chunking changed the events");
    assert_eq!(
        whole.last_event_id, cut.last_event_id,
        "chunking changed the last event ID"
    );
    assert_eq!(whole.retry, cut.retry, "chunking changed the retry");
    // Each discarded event's size and request, whatever the chunking (an unterminated last
    // line too). One feed keeps at most the last 64 discarded events: when the whole stream's
    // one feed reached that, its list is the end of the chunked one.
    if whole.discarded.len() < 64 {
        assert_eq!(
            whole.discarded, cut.discarded,
            "chunking changed the discarded events"
        );
    } else {
        let from = cut.discarded.len().saturating_sub(whole.discarded.len());
        assert_eq!(
            whole.discarded,
            cut.discarded[from..],
            "chunking changed the last discarded events"
        );
    }
    // An oversized event is reported, in some chunk, whenever one was discarded.
    assert_eq!(
        whole.rejected_chunks > 0,
        cut.rejected_chunks > 0,
        "chunking changed whether an event was too large"
    );
});
