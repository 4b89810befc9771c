//! The browser the operations panel's browser test runs (`mcp-gateway/tests/admin_browser.rs`):
//! Debian's `chromium`, run headless to load the panel, let its script render the live
//! snapshot, and dump the DOM and a screenshot.
//!
//! [`ensure_package`] checks Debian package `chromium` with `dpkg-query` and installs it with
//! `apt-get` when missing (run as root, or with `sudo` on PATH); with it present it runs
//! nothing. The test finds the program as the other system programs are found
//! (`mcp_testkit::process::find_program`: PATH, then `/usr/bin`), and fails naming this command
//! when it is missing.

use crate::secret_service::ensure_debian_package;

/// Makes sure `chromium` is installed (PATH, then `/usr/bin`): `"already present"` when it was,
/// `"installed"` when this installed it; otherwise what went wrong.
pub fn ensure_package() -> Result<&'static str, String> {
    ensure_debian_package("chromium", "chromium", &["/usr/bin"])
}
