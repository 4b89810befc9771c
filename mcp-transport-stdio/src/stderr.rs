//! The child's stderr: logged line by line and kept in a bounded ring buffer.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Longest stderr line kept whole; longer lines are cut (a server dumping megabytes on one line
/// must not grow the buffer).
const MAX_LINE: usize = 4096;

/// The last lines the child wrote to stderr, within a byte budget.
pub(crate) struct StderrTail {
    state: Mutex<Tail>,
    budget: usize,
}

struct Tail {
    lines: VecDeque<String>,
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

    pub(crate) fn push(&self, mut line: String) {
        if line.len() > MAX_LINE {
            let mut cut = MAX_LINE;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push_str(" [...]");
        }
        let mut t = self.state.lock().unwrap_or_else(|p| p.into_inner());
        t.bytes += line.len();
        t.lines.push_back(line);
        while t.bytes > self.budget && t.lines.len() > 1 {
            if let Some(old) = t.lines.pop_front() {
                t.bytes -= old.len();
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

/// Reads the child's stderr to its end: logs each line and keeps the tail.
pub(crate) async fn drain_stderr(stream: impl AsyncRead + Unpin, tail: &StderrTail, server: &str) {
    let mut reader = BufReader::new(stream);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end_matches(['\n', '\r']);
                tracing::debug!(target: "mcp_transport_stdio::stderr", server, "{line}");
                tail.push(line.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_newest_lines_within_budget() {
        let tail = StderrTail::new(20);
        for i in 0..10 {
            tail.push(format!("line {i}"));
        }
        assert_eq!(tail.text(), "line 7\nline 8\nline 9");
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
}
