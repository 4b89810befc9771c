//! The configuration loaders' bounds: a file is read up to `MAX_CONFIG_BYTES` and no further
//! (`/dev/zero`, an endless FIFO, a too-big file are refused naming the file and the cap, with
//! the memory measured), and a file lists at most `MAX_SERVERS` servers, in every format.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_client::config::{
    load_with_env, parse_with_env, ConfigError, ConfigErrorKind, MAX_CONFIG_BYTES, MAX_SERVERS,
};
use mcp_testkit::peak_alloc::PeakAlloc;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc::new();

/// What loading a refused file may add to the process at its worst: the capped buffer (4 MiB
/// and one byte, grown by doubling to 8 MiB) and nothing in proportion to the input.
const LOAD_PEAK_BOUND: usize = 16 * 1024 * 1024;

fn no_env(_: &str) -> Option<String> {
    None
}

/// A file of this test's own in the temporary folder, removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> TempPath {
        TempPath(std::env::temp_dir().join(format!(
            "mcp-client-config-limits-{}-{name}",
            std::process::id()
        )))
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Loads `path`, measuring the most memory the load added.
fn load_measured(path: &Path) -> (Result<mcp_client::config::ClientConfig, ConfigError>, usize) {
    let held = ALLOC.held();
    ALLOC.reset_peak();
    let result = load_with_env(path, &no_env);
    (result, ALLOC.peak_since_reset(held))
}

fn assert_too_large(err: &ConfigError, path: &Path) {
    assert_eq!(err.kind(), ConfigErrorKind::TooLarge, "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with(&path.display().to_string()) && text.contains("larger than 4 MiB"),
        "{text}"
    );
}

/// A valid Claude file padded with spaces to exactly `size` bytes.
fn padded_config(size: usize) -> Vec<u8> {
    let body = br#"{"mcpServers": {"a": {"command": "a-server"}}}"#;
    let mut bytes = body.to_vec();
    bytes.resize(size, b' ');
    bytes
}

#[test]
fn dev_zero_is_refused_after_the_cap_with_bounded_memory() {
    let path = Path::new("/dev/zero");
    let (result, peak) = load_measured(path);
    assert_too_large(&result.unwrap_err(), path);
    assert!(peak < LOAD_PEAK_BOUND, "peak {peak} bytes");
    eprintln!("/dev/zero: peak {peak} bytes");
}

#[test]
fn a_file_over_the_cap_is_refused_and_one_at_the_cap_loads() {
    let cap = usize::try_from(MAX_CONFIG_BYTES).unwrap();
    let over = TempPath::new("over.json");
    std::fs::write(&over.0, padded_config(cap + 1)).unwrap();
    let (result, peak) = load_measured(&over.0);
    assert_too_large(&result.unwrap_err(), &over.0);
    assert!(peak < LOAD_PEAK_BOUND, "peak {peak} bytes");
    eprintln!("a file over the cap: peak {peak} bytes");

    let at = TempPath::new("at.json");
    std::fs::write(&at.0, padded_config(cap)).unwrap();
    let config = load_with_env(&at.0, &no_env).unwrap();
    assert_eq!(config.servers.len(), 1);
}

#[test]
fn an_endless_fifo_is_refused_after_the_cap() {
    let fifo = TempPath::new("endless.fifo");
    let c_path = std::ffi::CString::new(fifo.0.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let writer_path = fifo.0.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Writes until the reader goes away (EPIPE: Rust ignores SIGPIPE), then reports.
        let mut pipe = std::fs::OpenOptions::new()
            .write(true)
            .open(&writer_path)
            .unwrap();
        let chunk = vec![b' '; 64 * 1024];
        let mut written = 0u64;
        while pipe.write_all(&chunk).is_ok() {
            written += chunk.len() as u64;
        }
        let _ = done_tx.send(written);
    });
    let (result, peak) = load_measured(&fifo.0);
    assert_too_large(&result.unwrap_err(), &fifo.0);
    assert!(peak < LOAD_PEAK_BOUND, "peak {peak} bytes");
    eprintln!("an endless FIFO: peak {peak} bytes");
    // The loader closed its end: the writer ends, having written about the cap only.
    let written = done_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the writer ends once the loader closes the FIFO");
    assert!(written <= MAX_CONFIG_BYTES + 1024 * 1024, "{written}");
}

fn claude_with(count: usize) -> String {
    let entries: Vec<String> = (0..count)
        .map(|i| format!(r#""s{i}": {{"command": "server"}}"#))
        .collect();
    format!("{{\"mcpServers\": {{\n{}\n}}}}", entries.join(",\n"))
}

fn vscode_with(count: usize) -> String {
    let entries: Vec<String> = (0..count)
        .map(|i| format!(r#""s{i}": {{"command": "server"}}"#))
        .collect();
    format!(
        "{{\"mcp\": {{\"servers\": {{\n{}\n}}}}}}",
        entries.join(",\n")
    )
}

fn codex_with(count: usize) -> String {
    (0..count)
        .map(|i| format!("[mcp_servers.s{i}]\ncommand = \"server\"\n"))
        .collect()
}

/// A configuration text listing that many servers.
type TextWith = fn(usize) -> String;

#[test]
fn every_format_refuses_more_than_max_servers_and_takes_max_servers() {
    let cases: [(&str, TextWith, &str); 3] = [
        ("claude.json", claude_with, "mcpServers"),
        ("settings.json", vscode_with, "mcp.servers"),
        ("config.toml", codex_with, "mcp_servers"),
    ];
    for (file, text_with, field) in cases {
        let source = Path::new("/cfg").join(file);
        let config = parse_with_env(&text_with(MAX_SERVERS), &source, &no_env)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(config.servers.len(), MAX_SERVERS, "{file}");

        let err = parse_with_env(&text_with(MAX_SERVERS + 1), &source, &no_env).unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::TooLarge, "{file}: {err}");
        assert_eq!(err.field(), Some(field), "{file}: {err}");
        assert_eq!(err.server(), None, "{file}: {err}");
        assert!(
            err.message()
                .contains("1001 servers are listed; at most 1000 are supported"),
            "{file}: {err}"
        );
        assert!(err.to_string().starts_with("/cfg/"), "{err}");
    }
}
