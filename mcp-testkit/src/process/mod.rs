//! The processes a test starts — a third-party server, the fixture binary, a daemon, a helper
//! run once — through one harness, so that none is left running when its test ends, passes or
//! panics:
//!
//! - where they are: [`workspace_root`], [`interop_dir`] and [`interop_component`] (what
//!   `cargo xtask interop-setup` installs; a missing component panics naming that command),
//!   [`find_program`] (a system program, or an error saying how to install it);
//! - [`free_port`]: a loopback port nobody listens on right now;
//! - [`ChildProcess`]: a started child, leading a process group of its own. Its output goes
//!   to a log file ([`ChildProcess::spawn_logged`], [`ChildProcess::log_text`] for failure
//!   messages) or is read line by line until a ready line ([`ChildProcess::spawn_until_line`]);
//!   readiness is polled under a deadline ([`ChildProcess::wait_ready`]), and so is its exit
//!   ([`ChildProcess::wait_within`], [`ChildProcess::interrupt`]). Dropping it kills its whole
//!   group (`SIGKILL`) and reaps it.
//!
//! Why a group: a server started through a wrapper (`npx`, a shell, a launcher script) runs
//! as a grandchild, and killing the child alone would orphan it. What a child starts in a group
//! of its own (as the stdio transport does for its servers) is not touched: tests that check
//! for leftover processes still see what the code under test left.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use mcp_testkit::process::{free_port, ChildProcess};
//!
//! let port = free_port();
//! let log = std::env::temp_dir().join(format!("server-{port}.log"));
//! let mut server = ChildProcess::spawn_logged(
//!     "an HTTP server",
//!     Command::new("python3").args(["-m", "http.server", &port.to_string()]),
//!     &log,
//! )
//! .unwrap_or_else(|e| panic!("{e}"));
//! server
//!     .wait_ready(&format!("listening on port {port}"), Duration::from_secs(10), || {
//!         std::net::TcpStream::connect(("127.0.0.1", port))
//!             .map(drop)
//!             .map_err(|e| e.to_string())
//!     })
//!     .unwrap_or_else(|e| panic!("{e}"));
//! // … the test; dropping `server` kills it, also when the test panics.
//! ```
//!
//! Unix only (the module is empty elsewhere).

#![cfg(unix)]

mod child;

pub use child::{ChildProcess, KILL_TIMEOUT, READY_POLL_INTERVAL};

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// Where things are.
// ---------------------------------------------------------------------------------------------

/// The workspace's root directory (the parent of this crate's).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("mcp-testkit lives in the workspace")
        .to_path_buf()
}

/// Where `cargo xtask interop-setup` installs the third-party servers: `$MCP_INTEROP_DIR`, by
/// default `<workspace>/.interop`.
pub fn interop_dir() -> PathBuf {
    std::env::var_os("MCP_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".interop"))
}

/// `<interop dir>/<component>` (`node`, `py`, `fastmcp`, `tssdk`, …), after checking that
/// `cargo xtask interop-setup` installed it there (its `.xtask-stamp`). Panics saying to run
/// that command when it did not: a missing server is a broken test environment.
#[track_caller]
pub fn interop_component(component: &str) -> PathBuf {
    let dir = interop_dir();
    let component_dir = dir.join(component);
    assert!(
        component_dir.join(".xtask-stamp").is_file(),
        "the interop component `{component}` is not installed in {}: run `cargo xtask \
         interop-setup`",
        dir.display()
    );
    component_dir
}

/// `program` on PATH, else in `/usr/bin` or `/usr/sbin` (a user's PATH may lack the latter);
/// else an error naming its Debian `package` and `cargo xtask interop-setup`.
pub fn find_program(program: &str, package: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    find_program_in(
        program,
        package,
        std::env::split_paths(&path).chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")]),
    )
}

fn find_program_in(
    program: &str,
    package: &str,
    dirs: impl IntoIterator<Item = PathBuf>,
) -> Result<PathBuf, String> {
    dirs.into_iter()
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            format!(
                "`{program}` (Debian package {package}) is not installed: run `cargo xtask \
                 interop-setup` to install the test packages"
            )
        })
}

/// A loopback port nobody listens on right now (the caller binds it soon after; another
/// process may take it meanwhile, so a server that fails to bind is best retried on a new one).
#[track_caller]
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .unwrap_or_else(|e| panic!("cannot bind a loopback port: {e}"))
        .port()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_its_package_and_the_setup_command() {
        let err = find_program_in(
            "surely-not-a-program-4f2a",
            "some-package",
            [PathBuf::from("/surely/not/a/dir-4f2a")],
        )
        .unwrap_err();
        assert!(err.contains("surely-not-a-program-4f2a"), "{err}");
        assert!(err.contains("some-package"), "{err}");
        assert!(err.contains("cargo xtask interop-setup"), "{err}");
        assert!(find_program("sh", "dash").is_ok());
    }

    #[test]
    #[should_panic(expected = "run `cargo xtask interop-setup`")]
    fn a_missing_interop_component_names_the_setup_command() {
        interop_component("surely-not-a-component-4f2a");
    }

    #[test]
    fn a_free_port_can_be_bound() {
        let port = free_port();
        assert_ne!(port, 0);
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("the port is free");
    }
}
