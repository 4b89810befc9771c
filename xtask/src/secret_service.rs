//! The system packages that `mcp-auth`'s OS credential store tests need
//! (`mcp-auth/tests/keyring_store.rs`): a D-Bus daemon to run a private session bus and
//! gnome-keyring-daemon for a real Secret Service. Kernel keyutils needs no package.
//!
//! [`ensure_packages`] checks them with `dpkg-query` and installs what is missing with
//! `apt-get` (Debian 12 "bookworm" names; run as root, or with `sudo` on PATH). It is
//! idempotent: with everything present it runs nothing.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The packages the tests cannot run without, and the program each provides.
const REQUIRED: &[(&str, &str)] = &[
    ("dbus-daemon", "dbus-daemon"),
    ("gnome-keyring", "gnome-keyring-daemon"),
];

/// Handy for looking into a failing test by hand (`secret-tool`, `keyctl`); not needed.
const OPTIONAL: &[&str] = &["libsecret-tools", "keyutils"];

/// How long `apt-get update` may take.
pub(crate) const UPDATE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// How long one `apt-get install` may take.
pub(crate) const INSTALL_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// How long a `dpkg-query` or `id` may take.
pub(crate) const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// Makes sure the Secret Service test packages are installed: `"already present"` when they
/// were, `"installed"` when this installed them; otherwise what went wrong.
pub fn ensure_packages() -> Result<&'static str, String> {
    if !on_path("dpkg-query") {
        // Not Debian: accept the programs from wherever they came.
        let missing: Vec<&str> = REQUIRED
            .iter()
            .filter(|(_, program)| !on_path(program))
            .map(|(_, program)| *program)
            .collect();
        return if missing.is_empty() {
            Ok("already present")
        } else {
            Err(format!(
                "no dpkg-query here (not Debian?): install {} with the system's package manager",
                missing.join(" and ")
            ))
        };
    }

    let missing: Vec<&str> = REQUIRED
        .iter()
        .map(|(package, _)| *package)
        .filter(|package| !is_installed(package))
        .collect();
    let missing_optional: Vec<&str> = OPTIONAL
        .iter()
        .copied()
        .filter(|package| !is_installed(package))
        .collect();
    if missing.is_empty() {
        if !missing_optional.is_empty() {
            eprintln!(
                "secret-service: optional packages not installed (not needed): {}",
                missing_optional.join(" ")
            );
        }
        return Ok("already present");
    }

    eprintln!(
        "secret-service: installing {} (and, if available, {})",
        missing.join(" "),
        if missing_optional.is_empty() {
            "nothing else".to_owned()
        } else {
            missing_optional.join(" ")
        }
    );
    apt_get(&["update", "-q"], UPDATE_TIMEOUT)?;
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter().copied());
    apt_get(&args, INSTALL_TIMEOUT)?;
    if !missing_optional.is_empty() {
        let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
        args.extend(missing_optional.iter().copied());
        if let Err(err) = apt_get(&args, INSTALL_TIMEOUT) {
            eprintln!("secret-service: optional packages not installed: {err}");
        }
    }

    let still: Vec<&str> = REQUIRED
        .iter()
        .filter(|(package, program)| !is_installed(package) || !on_path(program))
        .map(|(package, _)| *package)
        .collect();
    if still.is_empty() {
        Ok("installed")
    } else {
        Err(format!(
            "apt-get finished but {} is still missing",
            still.join(", ")
        ))
    }
}

/// Whether dpkg has `package` installed (`dpkg-query -W -f='${Status}'`).
pub(crate) fn is_installed(package: &str) -> bool {
    let mut cmd = Command::new("dpkg-query");
    cmd.args(["-W", "--showformat=${Status}", package]);
    match output_within(cmd, QUERY_TIMEOUT) {
        Ok((true, status)) => status.trim().ends_with(" installed"),
        _ => false,
    }
}

/// Runs `apt-get ARGS` non-interactively (through `sudo` when not root), output shown.
pub(crate) fn apt_get(args: &[&str], timeout: Duration) -> Result<(), String> {
    let mut cmd = if is_root() {
        Command::new("apt-get")
    } else if on_path("sudo") {
        let mut cmd = Command::new("sudo");
        cmd.args(["-n", "--preserve-env=DEBIAN_FRONTEND", "apt-get"]);
        cmd
    } else {
        return Err("not root and no sudo: cannot run apt-get".into());
    };
    cmd.args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null());
    let line = format!("apt-get {}", args.join(" "));
    eprintln!("$ {line}");
    let mut child = cmd
        .spawn()
        .map_err(|err| format!("cannot run {line}: {err}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{line} failed ({status})")),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{line} did not finish within {timeout:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(err) => return Err(format!("waiting for {line}: {err}")),
        }
    }
}

/// Whether we run as root (`id -u` says 0).
pub(crate) fn is_root() -> bool {
    let mut cmd = Command::new("id");
    cmd.arg("-u");
    matches!(output_within(cmd, QUERY_TIMEOUT), Ok((true, uid)) if uid.trim() == "0")
}

/// Runs `cmd`, returning whether it succeeded and its stdout, killing it after `timeout`.
pub(crate) fn output_within(mut cmd: Command, timeout: Duration) -> Result<(bool, String), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|err| err.to_string())?;
    let stdout = child.stdout.take();
    // Read on a thread so a full pipe never blocks the child while we wait.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut out) = stdout {
            let _ = std::io::Read::read_to_string(&mut out, &mut text);
        }
        text
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {timeout:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(err) => return Err(err.to_string()),
        }
    };
    let text = reader.join().unwrap_or_default();
    Ok((status.success(), text))
}

/// Whether `program` is a file in a PATH directory.
/// Makes sure Debian `package` is installed and `program` is found (PATH, then `dirs`):
/// `"already present"` when it was, `"installed"` when this installed it (`apt-get update`,
/// then `install --no-install-recommends`); off Debian, the program from wherever it came.
pub(crate) fn ensure_debian_package(
    package: &str,
    program: &str,
    dirs: &[&str],
) -> Result<&'static str, String> {
    let found = || {
        on_path(program)
            || dirs
                .iter()
                .any(|dir| std::path::Path::new(dir).join(program).is_file())
    };
    if !on_path("dpkg-query") {
        return if found() {
            Ok("already present")
        } else {
            Err(format!(
                "no dpkg-query here (not Debian?): install {program} with the system's package \
                 manager"
            ))
        };
    }
    if is_installed(package) && found() {
        return Ok("already present");
    }
    eprintln!("{program}: installing {package}");
    apt_get(&["update", "-q"], UPDATE_TIMEOUT)?;
    apt_get(
        &["install", "-y", "-q", "--no-install-recommends", package],
        INSTALL_TIMEOUT,
    )?;
    if !is_installed(package) || !found() {
        return Err(format!("apt-get finished but {package} is still missing"));
    }
    Ok("installed")
}

pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
