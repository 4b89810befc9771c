//! The child's stderr: logged line by line and kept in a bounded ring buffer.
//!
//! Memory stays bounded whatever the child writes: a line keeps at most [`MAX_LINE`] bytes while
//! it is read (the rest is dropped as it arrives, and reading goes on, so the child never blocks
//! on a full pipe), and the tail keeps at most its byte budget. Text after a carriage return (not
//! part of `\r\n`) starts the line over, as on a terminal: a progress bar (`50%\r51%\r…`) keeps
//! only its latest state instead of pushing the lines before it out of the tail.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Longest stderr line kept whole; longer lines are cut (a server dumping megabytes on one line
/// must not grow the buffer).
const MAX_LINE: usize = 4096;
/// Marks a line that was cut.
const CUT_MARK: &str = " [...]";

/// The last lines the child wrote to stderr, within a byte budget.
pub(crate) struct StderrTail {
    state: Mutex<Tail>,
    budget: usize,
}

struct Tail {
    lines: VecDeque<String>,
    /// The size of [`StderrTail::text`]: each line with its newline, so that empty lines count.
    bytes: usize,
}

impl StderrTail {
    pub(crate) fn new(budget: usize) -> Self {
        StderrTail {
            state: Mutex::new(Tail {
                lines: VecDeque::new(),
                bytes: 0,
            }),
            budget,
        }
    }

    /// Keeps one line (cut to [`MAX_LINE`] bytes), dropping the oldest ones over the budget.
    pub(crate) fn push(&self, mut line: String) {
        if line.len() > MAX_LINE {
            cut(&mut line);
        }
        let mut t = self.state.lock().unwrap_or_else(|p| p.into_inner());
        t.bytes += line.len() + 1;
        t.lines.push_back(line);
        while t.bytes > self.budget && t.lines.len() > 1 {
            if let Some(old) = t.lines.pop_front() {
                t.bytes -= old.len() + 1;
            }
        }
    }

    /// The kept lines, oldest first, joined by newlines.
    pub(crate) fn text(&self) -> String {
        let t = self.state.lock().unwrap_or_else(|p| p.into_inner());
        t.lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Cuts `line` to at most [`MAX_LINE`] bytes (at a character boundary) and marks it cut.
fn cut(line: &mut String) {
    let mut at = line.len().min(MAX_LINE);
    while !line.is_char_boundary(at) {
        at -= 1;
    }
    line.truncate(at);
    line.push_str(CUT_MARK);
}

fn trim_carriage_returns_end(bytes: &[u8]) -> &[u8] {
    let kept = bytes
        .iter()
        .rposition(|&b| b != b'\r')
        .map_or(0, |last| last + 1);
    &bytes[..kept]
}

fn trim_carriage_returns_start(bytes: &[u8]) -> &[u8] {
    let skipped = bytes
        .iter()
        .position(|&b| b != b'\r')
        .unwrap_or(bytes.len());
    &bytes[skipped..]
}

/// One stderr line as it is read, never more than [`MAX_LINE`] bytes.
#[derive(Default)]
struct LineAssembler {
    bytes: Vec<u8>,
    /// Bytes were dropped past [`MAX_LINE`].
    cut: bool,
    /// The last bytes seen were carriage returns: a newline next ends the line, text starts
    /// it over.
    after_carriage_return: bool,
}

impl LineAssembler {
    /// Takes the next bytes; calls `line` with each line they end.
    fn feed(&mut self, mut data: &[u8], line: &mut impl FnMut(String)) {
        while let Some(&first) = data.first() {
            if self.after_carriage_return {
                match first {
                    b'\n' => {
                        self.after_carriage_return = false;
                        line(self.take());
                        data = &data[1..];
                        continue;
                    }
                    b'\r' => {
                        data = trim_carriage_returns_start(data);
                        continue;
                    }
                    // Text after a carriage return: a terminal would write over the line.
                    _ => {
                        self.after_carriage_return = false;
                        self.start_over();
                    }
                }
            }
            let (segment, ended) = match memchr::memchr(b'\n', data) {
                Some(end) => {
                    let segment = &data[..end];
                    data = &data[end + 1..];
                    // `\r\n` ends a line like `\n`.
                    (trim_carriage_returns_end(segment), true)
                }
                None => {
                    let segment = std::mem::take(&mut data);
                    let before = trim_carriage_returns_end(segment);
                    // Whether they start the line over depends on what comes next.
                    self.after_carriage_return = before.len() < segment.len();
                    (before, false)
                }
            };
            // A carriage return left in the segment has text after it: only what follows the
            // last one is still on the line (found at memchr speed, not byte by byte).
            let segment = match memchr::memrchr(b'\r', segment) {
                Some(last) => {
                    self.start_over();
                    &segment[last + 1..]
                }
                None => segment,
            };
            self.append(segment);
            if ended {
                line(self.take());
            }
        }
    }

    fn start_over(&mut self) {
        self.bytes.clear();
        self.cut = false;
    }

    /// At the end of the stream: the last line, if it has anything.
    fn finish(&mut self, line: &mut impl FnMut(String)) {
        if !self.bytes.is_empty() || self.cut {
            line(self.take());
        }
    }

    fn append(&mut self, data: &[u8]) {
        let room = MAX_LINE - self.bytes.len();
        if data.len() > room {
            self.cut = true;
        }
        self.bytes.extend_from_slice(&data[..data.len().min(room)]);
    }

    fn take(&mut self) -> String {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.cut || text.len() > MAX_LINE {
            cut(&mut text);
        }
        self.start_over();
        text
    }
}

/// Reads the child's stderr to its end: logs each line and keeps the tail.
pub(crate) async fn drain_stderr(stream: impl AsyncRead + Unpin, tail: &StderrTail, server: &str) {
    let mut reader = BufReader::new(stream);
    let mut assembler = LineAssembler::default();
    let mut keep = |line: String| {
        tracing::debug!(target: "mcp_transport_stdio::stderr", server, "{line}");
        tail.push(line);
    };
    loop {
        let read = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(data) => {
                assembler.feed(data, &mut keep);
                data.len()
            }
        };
        reader.consume(read);
    }
    assembler.finish(&mut keep);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_newest_lines_within_budget() {
        let tail = StderrTail::new(21);
        for i in 0..10 {
            tail.push(format!("line {i}"));
        }
        assert_eq!(tail.text(), "line 7\nline 8\nline 9");
    }

    #[test]
    fn empty_lines_count_against_the_budget() {
        let tail = StderrTail::new(100);
        for _ in 0..10_000 {
            tail.push(String::new());
        }
        assert_eq!(tail.state.lock().unwrap().lines.len(), 100);
    }

    #[test]
    fn cuts_huge_lines() {
        let tail = StderrTail::new(100_000);
        tail.push("é".repeat(10_000));
        let text = tail.text();
        assert!(text.len() <= MAX_LINE + 10);
        assert!(text.ends_with(" [...]"));
    }

    #[tokio::test]
    async fn drains_lines_from_a_stream() {
        let tail = StderrTail::new(1024);
        let data: &[u8] = b"first\nsecond\r\nno newline";
        drain_stderr(data, &tail, "t").await;
        assert_eq!(tail.text(), "first\nsecond\nno newline");
    }

    /// Every split of the input into two reads gives the same lines.
    fn lines_of(data: &[u8]) -> Vec<String> {
        let whole = {
            let mut lines = Vec::new();
            let mut assembler = LineAssembler::default();
            assembler.feed(data, &mut |l| lines.push(l));
            assembler.finish(&mut |l| lines.push(l));
            lines
        };
        for split in 0..=data.len() {
            let mut lines = Vec::new();
            let mut assembler = LineAssembler::default();
            assembler.feed(&data[..split], &mut |l| lines.push(l));
            assembler.feed(&data[split..], &mut |l| lines.push(l));
            assembler.finish(&mut |l| lines.push(l));
            assert_eq!(lines, whole, "split at {split}");
        }
        whole
    }

    #[test]
    fn a_carriage_return_starts_the_line_over_and_crlf_ends_it() {
        assert_eq!(
            lines_of(b"10%\r50%\r100%\r\ndone\n\r\r\rlast\r"),
            vec!["100%", "done", "last"]
        );
        assert_eq!(lines_of(b"a\n\nb"), vec!["a", "", "b"]);
        assert_eq!(lines_of(b"a\r\r\nb\rc\r\r"), vec!["a", "c"]);
        assert_eq!(lines_of(b"abc\r\rX\n\r\n"), vec!["X", ""]);
        assert!(lines_of(b"\r\r\r\r").is_empty());
    }

    #[test]
    fn a_line_is_cut_while_it_is_read() {
        let mut assembler = LineAssembler::default();
        let mut lines = Vec::new();
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..64 {
            assembler.feed(&chunk, &mut |l| lines.push(l));
            assert!(assembler.bytes.capacity() <= 2 * MAX_LINE);
        }
        assembler.feed(b"\n", &mut |l| lines.push(l));
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), MAX_LINE + CUT_MARK.len());
        assert!(lines[0].ends_with(CUT_MARK));
    }

    #[tokio::test]
    async fn endless_carriage_returns_keep_nothing_and_end() {
        let tail = StderrTail::new(1024);
        let data = vec![b'\r'; 8 << 20];
        drain_stderr(&data[..], &tail, "t").await;
        assert_eq!(tail.text(), "");
    }
}
