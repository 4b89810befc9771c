//! Start-up fault injection: `--exit-on-start`, `--refuse-start-while`, `--ignore-sigterm`,
//! `--stderr-noise` and `--spawn-grandchild`.

use std::io::{self, Write};
use std::process::{Child, Command, Stdio};

use crate::options::ServerOptions;

/// Applies the start-up flags, in this order: exit on start (does not
/// return), ignore SIGTERM, stderr noise, spawn the grandchild.
///
/// Returns the grandchild (keep it alive; it is deliberately never reaped so
/// that it outlives the server unless its process group is killed).
pub fn apply_startup_faults(options: &ServerOptions) -> io::Result<Option<Child>> {
    let refused = options
        .refuse_start_while
        .as_ref()
        .is_some_and(|path| path.exists())
        .then_some(3);
    if let Some(code) = options.exit_on_start.or(refused) {
        eprintln!("fixture server refusing to start");
        std::process::exit(code);
    }
    if options.ignore_sigterm {
        ignore_sigterm()?;
    }
    if options.stderr_noise > 0 {
        let stderr = io::stderr();
        let mut stderr = stderr.lock();
        for k in 1..=options.stderr_noise {
            writeln!(stderr, "stderr noise line {k}")?;
        }
        stderr.flush()?;
    }
    if options.spawn_grandchild {
        let child = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        eprintln!("grandchild pid {}", child.id());
        return Ok(Some(child));
    }
    Ok(None)
}

fn ignore_sigterm() -> io::Result<()> {
    // SAFETY: installing SIG_IGN for SIGTERM has no preconditions and runs no
    // handler code.
    let previous = unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    if previous == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
