//! The system package the fleet tests need (`mcp-fleet/tests/`, through
//! `mcp_testkit::redis::RedisServer`): a real `redis-server`, started by each test on a port
//! of its own.
//!
//! [`ensure_package`] checks Debian package `redis-server` with `dpkg-query` and installs it
//! with `apt-get` when missing (run as root, or with `sudo` on PATH); with it present it runs
//! nothing. Debian starts (and enables) a system Redis on port 6379 when the package is
//! installed; the tests never use it, so when this step installed the package it also stops
//! and disables that service — a Redis that was installed before is left as it is.

use std::path::Path;
use std::process::Command;

use crate::secret_service::{
    ensure_debian_package, is_root, on_path, output_within, QUERY_TIMEOUT,
};

/// The Debian package, and the program the tests run.
const PACKAGE: &str = "redis-server";
const PROGRAM: &str = "redis-server";

/// Where Debian's service keeps its process id while it runs (`pidfile` in
/// `/etc/redis/redis.conf`).
const SERVICE_PID_FILE: &str = "/run/redis/redis-server.pid";

/// Makes sure `redis-server` is installed: `"already present"` when it was, `"installed"` when
/// this installed it (and stopped the system service the package starts); otherwise what went
/// wrong.
pub fn ensure_package() -> Result<&'static str, String> {
    // Where `mcp_testkit::redis::RedisServer` looks: PATH, then `/usr/bin` and `/usr/sbin`
    // (root's PATH has them; a user's may lack `/usr/sbin`).
    let done = ensure_debian_package(PACKAGE, PROGRAM, &["/usr/bin", "/usr/sbin"])?;
    if done == "installed" {
        stop_system_service()?;
    }
    Ok(done)
}

/// Stops and disables the system Redis the package's install scripts may have started: with
/// systemd, `systemctl disable --now`; without it, the init script's `stop` when its process
/// runs (in a container whose `policy-rc.d` forbids starting services, nothing ran), and both
/// the unit and the init script disabled for the next boot.
fn stop_system_service() -> Result<(), String> {
    if Path::new("/run/systemd/system").is_dir() {
        return run_as_root(&["systemctl", "disable", "--now", "redis-server.service"]);
    }
    let running = std::fs::read_to_string(SERVICE_PID_FILE)
        .ok()
        .and_then(|pid| pid.trim().parse::<u32>().ok())
        .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
    if running {
        run_as_root(&["/etc/init.d/redis-server", "stop"])?;
    }
    // Keep a later boot from starting it (systemd's unit and the init script); harmless when
    // it is not enabled.
    if on_path("deb-systemd-helper") {
        let _ = run_as_root(&["deb-systemd-helper", "disable", "redis-server.service"]);
    }
    if on_path("update-rc.d") {
        let _ = run_as_root(&["update-rc.d", "redis-server", "disable"]);
    }
    Ok(())
}

/// Runs `args` as root (directly, or through `sudo -n`), bounded by [`QUERY_TIMEOUT`].
fn run_as_root(args: &[&str]) -> Result<(), String> {
    let line = args.join(" ");
    let Some((program, rest)) = args.split_first() else {
        return Err("no command to run".into());
    };
    let mut cmd = if is_root() {
        let mut cmd = Command::new(program);
        cmd.args(rest);
        cmd
    } else if on_path("sudo") {
        let mut cmd = Command::new("sudo");
        cmd.arg("-n").args(args);
        cmd
    } else {
        return Err(format!("not root and no sudo: cannot run {line}"));
    };
    cmd.env("DEBIAN_FRONTEND", "noninteractive");
    eprintln!("$ {line}");
    match output_within(cmd, QUERY_TIMEOUT) {
        Ok((true, _)) => Ok(()),
        Ok((false, _)) => Err(format!("{line} failed")),
        Err(err) => Err(format!("{line}: {err}")),
    }
}
