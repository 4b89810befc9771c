//! The fixture's event log (`--event-log PATH`): one JSON line per request, per executed
//! `tools/call` and per `notifications/cancelled` received, appended to a file that survives the server's restarts,
//! so tests can count executions per call (no side-effecting call may run twice) and check that
//! the client told the server about every request it gave up on.
//!
//! Lines: `{"event":"request","method":"<method>","id":<request id>}` for every request,
//! `{"event":"call","id":<request id>,"tool":"<name>","call_id":<arguments.call_id>}`,
//! `{"event":"cancelled","id":<request id>}`, and for a `tools/call` POST that got an HTTP
//! fault instead of being handled, `{"event":"fault","fault":"stall"|"trickle"|"endless_error",
//! "id":<request id>}`. Each line is written with one `write` on a file
//! opened with `O_APPEND`, so lines from several processes do not interleave.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;

/// Where events go; a no-op without `--event-log`.
#[derive(Debug, Default)]
pub struct EventLog {
    file: Option<Mutex<File>>,
}

impl EventLog {
    /// Opens (creating) `path` for appending; `None` logs nothing.
    pub fn open(path: Option<&Path>) -> EventLog {
        let file =
            path.and_then(
                |path| match OpenOptions::new().create(true).append(true).open(path) {
                    Ok(file) => Some(Mutex::new(file)),
                    Err(e) => {
                        eprintln!("fixture: cannot open the event log {}: {e}", path.display());
                        None
                    }
                },
            );
        EventLog { file }
    }

    /// Whether events are recorded at all.
    pub fn is_enabled(&self) -> bool {
        self.file.is_some()
    }

    /// Appends one event.
    pub fn record(&self, event: &Value) {
        let Some(file) = &self.file else {
            return;
        };
        let mut line = event.to_string();
        line.push('\n');
        let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = file.write_all(line.as_bytes()) {
            eprintln!("fixture: writing the event log failed: {e}");
        }
    }
}

/// Reads an event log back: every line that parses (a torn last line is skipped).
pub fn read_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits until `check` holds for the events in `path` (re-read every 20 ms), for at most
/// `within`; panics with `what` and the events seen when it never does (test support).
pub async fn wait_for_events(
    path: &Path,
    within: std::time::Duration,
    what: &str,
    check: impl Fn(&[Value]) -> bool,
) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let events = read_events(path);
        if check(&events) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {events:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
