//! The outbound queue: backpressure, order, close, the end, batches. No test waits for time to
//! pass: a future is polled once to see whether it waits, or the clock is paused.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use super::*;

/// Polls `future` once: `Pending` means it waits (for room, for a message).
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

fn line(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

#[tokio::test]
async fn a_full_queue_makes_send_wait_until_the_writer_takes_a_message() {
    let (queue, mut receiver) = channel(2);
    queue.send(line("a")).await.unwrap();
    queue.send(line("b")).await.unwrap();
    let mut third = pin!(queue.send(line("c")));
    assert!(
        poll_once(third.as_mut()).is_pending(),
        "two queued: the third waits"
    );
    assert_eq!(receiver.recv().await, Some(line("a")));
    assert_eq!(third.await, Ok(()), "taking one made room");
    assert_eq!(receiver.recv().await, Some(line("b")));
    assert_eq!(receiver.recv().await, Some(line("c")));
}

#[tokio::test]
async fn a_capacity_of_zero_holds_one_message() {
    let (queue, mut receiver) = channel(0);
    queue.send(line("a")).await.unwrap();
    assert!(poll_once(pin!(queue.send(line("b")))).is_pending());
    assert_eq!(receiver.try_recv(), Some(line("a")));
}

#[tokio::test]
async fn close_is_idempotent_and_delivers_what_was_queued_before_the_end() {
    let (queue, mut receiver) = channel(8);
    for text in ["a", "b", "c"] {
        queue.send(line(text)).await.unwrap();
    }
    queue.close();
    queue.close();
    assert!(queue.is_closed());
    let mut seen = Vec::new();
    while let Some(message) = receiver.recv().await {
        seen.push(message);
    }
    assert_eq!(seen, [line("a"), line("b"), line("c")]);
    queue.close();
    assert_eq!(receiver.recv().await, None, "the end stays the end");
}

#[tokio::test]
async fn close_never_waits_even_when_the_queue_is_full() {
    let (queue, mut receiver) = channel(1);
    queue.send(line("a")).await.unwrap();
    // Synchronous: nothing to wait for, even with no room left.
    queue.close();
    assert_eq!(receiver.recv().await, Some(line("a")));
    assert_eq!(receiver.recv().await, None);
}

#[tokio::test]
async fn a_send_after_close_fails_at_once_even_with_room() {
    let (queue, mut receiver) = channel(8);
    queue.close();
    assert_eq!(queue.send(line("late")).await, Err(OutboundClosed));
    assert_eq!(
        receiver.recv().await,
        None,
        "nothing after the close got in"
    );
}

#[tokio::test]
async fn sends_waiting_for_room_at_the_close_are_delivered_when_they_succeed_and_bounded() {
    let (queue, mut receiver) = channel(1);
    queue.send(line("a")).await.unwrap();
    let mut waiting = [
        Box::pin(queue.send(line("b"))),
        Box::pin(queue.send(line("c"))),
        Box::pin(queue.send(line("d"))),
    ];
    for send in &mut waiting {
        assert!(poll_once(send.as_mut()).is_pending(), "the queue is full");
    }
    queue.close();
    let [b, c, d] = waiting;
    let drain = async {
        let mut seen = Vec::new();
        while let Some(message) = receiver.recv().await {
            seen.push(message);
        }
        seen
    };
    let (seen, b, c, d) = tokio::join!(drain, b, c, d);
    // Whatever a send reported, the writer agrees with: nothing accepted is lost, nothing
    // refused is written, and the end comes although senders were still waiting.
    let mut expected = vec![line("a")];
    for (text, result) in [("b", b), ("c", c), ("d", d)] {
        if result.is_ok() {
            expected.push(line(text));
        }
    }
    assert_eq!(seen, expected);
    assert!(
        seen.len() < 4,
        "more waiting sends than room: not all of them get in"
    );
}

#[tokio::test]
async fn sends_fail_once_the_receiver_is_closed_or_gone() {
    let (queue, mut receiver) = channel(1);
    queue.send(line("a")).await.unwrap();
    receiver.close();
    assert!(queue.is_closed());
    assert_eq!(queue.send(line("b")).await, Err(OutboundClosed));
    assert_eq!(
        receiver.recv().await,
        Some(line("a")),
        "what was queued can be taken"
    );
    assert_eq!(receiver.recv().await, None);

    let (queue, receiver) = channel(1);
    queue.send(line("a")).await.unwrap();
    let mut waiting = pin!(queue.send(line("b")));
    assert!(poll_once(waiting.as_mut()).is_pending());
    drop(receiver);
    assert_eq!(
        waiting.await,
        Err(OutboundClosed),
        "a waiting send fails too"
    );
    assert_eq!(queue.send(line("c")).await, Err(OutboundClosed));
}

#[tokio::test]
async fn dropping_the_queue_ends_the_receiver_after_what_was_queued() {
    let (queue, mut receiver) = channel(4);
    queue.send(line("a")).await.unwrap();
    drop(queue);
    assert_eq!(receiver.recv().await, Some(line("a")));
    assert_eq!(receiver.recv().await, None);
}

/// The next batch, taken whole.
async fn next_batch(
    receiver: &mut OutboundReceiver<Vec<u8>>,
    max_bytes: usize,
) -> Option<Vec<Vec<u8>>> {
    let first = receiver.recv().await?;
    let queued = receiver.queued_behind(&first, max_bytes);
    Some(std::iter::once(first).chain(queued).collect())
}

#[tokio::test]
async fn a_batch_takes_what_is_queued_while_it_holds_fewer_than_the_limit() {
    let (queue, mut receiver) = channel(16);
    for text in ["aaaa", "bbbb", "cccc", "dd", "e"] {
        queue.send(line(text)).await.unwrap();
    }
    // 4 < 10, 8 < 10, then 12: the last one takes the batch over the limit.
    assert_eq!(
        next_batch(&mut receiver, 10).await.unwrap(),
        [line("aaaa"), line("bbbb"), line("cccc")]
    );
    assert_eq!(
        next_batch(&mut receiver, 10).await.unwrap(),
        [line("dd"), line("e")],
        "then what is left, in order"
    );
    queue.send(line("f")).await.unwrap();
    queue.send(line("g")).await.unwrap();
    assert_eq!(
        next_batch(&mut receiver, 0).await.unwrap(),
        [line("f")],
        "a batch holds at least one message"
    );
    queue.close();
    assert_eq!(next_batch(&mut receiver, 10).await.unwrap(), [line("g")]);
    assert_eq!(next_batch(&mut receiver, 10).await, None, "then the end");
}

#[tokio::test]
async fn a_batch_is_lazy_a_message_queued_while_it_is_written_joins_it() {
    let (queue, mut receiver) = channel(4);
    queue.send(line("a")).await.unwrap();
    let first = receiver.recv().await.unwrap();
    assert_eq!(first, line("a"));
    let mut queued = receiver.queued_behind(&first, 100);
    queue.send(line("b")).await.unwrap();
    assert_eq!(queued.next(), Some(line("b")));
    assert_eq!(queued.next(), None);
    queue.send(line("c")).await.unwrap();
    queue.send(line("d")).await.unwrap();
    let first = receiver.recv().await.unwrap();
    assert_eq!(first, line("c"));
    // A writer that stops before asking for more.
    let _stopped_early = receiver.queued_behind(&first, 100);
    assert_eq!(
        receiver.try_recv(),
        Some(line("d")),
        "not asked for: still queued"
    );
}

#[tokio::test]
async fn a_batch_waits_for_its_first_message_only() {
    let (queue, mut receiver) = channel(4);
    let mut next = pin!(next_batch(&mut receiver, 100));
    assert!(poll_once(next.as_mut()).is_pending(), "nothing queued yet");
    queue.send(line("a")).await.unwrap();
    assert_eq!(next.await.unwrap(), [line("a")]);
}

#[tokio::test]
async fn a_batch_ends_at_the_close_and_the_end_follows() {
    let (queue, mut receiver) = channel(8);
    queue.send(line("a")).await.unwrap();
    queue.close();
    assert_eq!(next_batch(&mut receiver, 100).await.unwrap(), [line("a")]);
    assert_eq!(next_batch(&mut receiver, 100).await, None);
}

#[tokio::test]
async fn poll_recv_and_try_recv_read_through_the_close_to_the_end() {
    let (queue, mut receiver) = channel(8);
    assert_eq!(receiver.try_recv(), None, "empty");
    assert!(std::future::poll_fn(|cx| Poll::Ready(receiver.poll_recv(cx).is_pending())).await);
    queue.send(line("a")).await.unwrap();
    queue.send(line("b")).await.unwrap();
    queue.close();
    let first = std::future::poll_fn(|cx| receiver.poll_recv(cx)).await;
    assert_eq!(first, Some(line("a")));
    assert_eq!(receiver.try_recv(), Some(line("b")));
    assert_eq!(receiver.try_recv(), None);
    assert_eq!(
        std::future::poll_fn(|cx| receiver.poll_recv(cx)).await,
        None
    );
}
