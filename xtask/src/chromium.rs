//! The browser the operations panel's browser test runs (`mcp-gateway/tests/admin_browser.rs`):
//! Debian's `chromium`, run headless to load the panel, let its script render the live
//! snapshot, and dump the DOM and a screenshot.
//!
//! [`ensure_package`] checks Debian package `chromium` with `dpkg-query` and installs it with
//! `apt-get` when missing (run as root, or with `sudo` on PATH); with it present it runs
//! nothing. The test finds the program as the other system programs are found
//! (`mcp_testkit::process::find_program`: PATH, then `/usr/bin`), and fails naming this command
//! when it is missing.

use std::path::Path;

use crate::secret_service::{apt_get, is_installed, on_path, INSTALL_TIMEOUT, UPDATE_TIMEOUT};

/// The Debian package, and the program the test runs.
const PACKAGE: &str = "chromium";
const PROGRAM: &str = "chromium";

/// Makes sure `chromium` is installed: `"already present"` when it was, `"installed"` when this
/// installed it; otherwise what went wrong.
pub fn ensure_package() -> Result<&'static str, String> {
    if !on_path("dpkg-query") {
        // Not Debian: accept the program from wherever it came.
        return if program_found() {
            Ok("already present")
        } else {
            Err(format!(
                "no dpkg-query here (not Debian?): install {PROGRAM} with the system's package \
                 manager"
            ))
        };
    }
    if is_installed(PACKAGE) && program_found() {
        return Ok("already present");
    }

    eprintln!("chromium: installing {PACKAGE}");
    apt_get(&["update", "-q"], UPDATE_TIMEOUT)?;
    apt_get(
        &["install", "-y", "-q", "--no-install-recommends", PACKAGE],
        INSTALL_TIMEOUT,
    )?;
    if !is_installed(PACKAGE) || !program_found() {
        return Err(format!("apt-get finished but {PACKAGE} is still missing"));
    }
    Ok("installed")
}

/// Whether `chromium` is where the test looks: PATH, then `/usr/bin`.
fn program_found() -> bool {
    on_path(PROGRAM) || Path::new("/usr/bin").join(PROGRAM).is_file()
}
