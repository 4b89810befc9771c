//! Running external commands with their output streamed through.

use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

/// Environment variables that `cargo run` sets for the xtask binary itself and
/// that must not leak into the cargo/tool invocations we spawn.
const CARGO_RUN_VARS: &[&str] = &[
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_PKG_NAME",
    "CARGO_PKG_VERSION",
    "CARGO_PKG_VERSION_MAJOR",
    "CARGO_PKG_VERSION_MINOR",
    "CARGO_PKG_VERSION_PATCH",
    "CARGO_PKG_VERSION_PRE",
    "CARGO_PKG_AUTHORS",
    "CARGO_PKG_DESCRIPTION",
    "CARGO_PKG_HOMEPAGE",
    "CARGO_PKG_REPOSITORY",
    "CARGO_PKG_LICENSE",
    "CARGO_PKG_LICENSE_FILE",
    "CARGO_PKG_README",
    "CARGO_PKG_RUST_VERSION",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
];

/// The cargo executable that launched us (falls back to `cargo` on PATH).
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// Build a command rooted at `dir` with the `cargo run` variables removed.
pub fn command(program: impl AsRef<OsStr>, args: &[&str], dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    for var in CARGO_RUN_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// Render a command line for logs.
pub fn display(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Run with stdout/stderr inherited. Errors only when the program can't start.
pub fn run(cmd: &mut Command) -> io::Result<ExitStatus> {
    eprintln!("$ {}", display(cmd));
    cmd.status()
}

/// Run, streaming stdout/stderr through to ours while also capturing both
/// (ANSI escapes stripped) so the caller can parse summary lines.
pub fn run_capture(cmd: &mut Command) -> io::Result<(ExitStatus, String)> {
    eprintln!("$ {}", display(cmd));
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let captured = Arc::new(Mutex::new(String::new()));
    let out = child.stdout.take().map(|s| tee(s, captured.clone(), false));
    let err = child.stderr.take().map(|s| tee(s, captured.clone(), true));
    let status = child.wait()?;
    for h in [out, err].into_iter().flatten() {
        let _ = h.join();
    }
    let text = std::mem::take(&mut *captured.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((status, text))
}

fn tee(
    src: impl Read + Send + 'static,
    sink: Arc<Mutex<String>>,
    to_stderr: bool,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut reader = BufReader::new(src);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if to_stderr {
                        let mut e = io::stderr().lock();
                        let _ = e.write_all(&line);
                        let _ = e.flush();
                    } else {
                        let mut o = io::stdout().lock();
                        let _ = o.write_all(&line);
                        let _ = o.flush();
                    }
                    let text = strip_ansi(&String::from_utf8_lossy(&line));
                    if let Ok(mut s) = sink.lock() {
                        s.push_str(&text);
                    }
                }
            }
        }
    })
}

/// Remove ANSI CSI escape sequences (colours) from `s`.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters/intermediates, then one final byte in 0x40..=0x7e.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether this runs on CI: `CI` set, and not to `false` or `0`.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The cargo target directory (`CARGO_TARGET_DIR` or `<root>/target`).
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_absolute() {
                d
            } else {
                root.join(d)
            }
        }
        _ => root.join("target"),
    }
}

#[cfg(test)]
mod tests {
    use super::strip_ansi;

    #[test]
    fn strips_colour_codes() {
        assert_eq!(strip_ansi("\u{1b}[32;1mPASS\u{1b}[0m ok"), "PASS ok");
        assert_eq!(strip_ansi("plain"), "plain");
    }
}
