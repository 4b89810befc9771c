//! The refresh lock of the processes on one machine ([`LockDir`]): a holder killed with SIGKILL
//! in the middle of its refresh does not hold anyone else up — the kernel gives its lock back
//! with the process, well inside the bound a waiter keeps to.
//!
//! The holder is this test binary run again as a child (`MCP_AUTH_LOCK_HOLDER` names the lock
//! directory), so it takes the lock through the same code as a refreshing process.

#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_auth::store::{LockDir, ENTRY_LOCK_TTL};
use mcp_auth::StoreKey;

const HOLDER_VARIABLE: &str = "MCP_AUTH_LOCK_HOLDER";

fn key() -> StoreKey {
    StoreKey::new("https://mcp.example.com/mcp", "default")
}

/// As the child of the test below: takes the lock, says so, and holds it until killed. Run on
/// its own: a lock dropped by its holder is free at once.
#[tokio::test]
async fn lock_holder_child() {
    let Some(dir) = std::env::var_os(HOLDER_VARIABLE) else {
        let dir = std::env::temp_dir().join(format!("mcp-auth-drop-{}", std::process::id()));
        let locks = LockDir::at(&dir);
        let held = locks
            .lock(&key(), Duration::ZERO)
            .await
            .expect("a free lock");
        assert!(locks.lock(&key(), Duration::ZERO).await.is_err(), "held");
        drop(held);
        assert!(
            locks.lock(&key(), Duration::ZERO).await.is_ok(),
            "free once dropped"
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let lock = LockDir::at(PathBuf::from(dir))
        .lock(&key(), Duration::from_secs(5))
        .await
        .expect("the child takes the free lock");
    println!("locked {}", lock.path().display());
    tokio::time::sleep(Duration::from_secs(300)).await;
    drop(lock);
}

#[tokio::test]
async fn a_holder_killed_with_sigkill_does_not_block_the_next_refresh() {
    let dir = std::env::temp_dir().join(format!("mcp-auth-sigkill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "lock_holder_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLDER_VARIABLE, &dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the holder");
    let mut child = Holder(child);
    let stdout = child.0.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("locked /") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the holder takes the lock");
    let locks = LockDir::at(&dir);
    // Held: another process cannot have it.
    let refused = locks.lock(&key(), Duration::from_millis(100)).await;
    assert!(refused.is_err(), "the child holds the lock");

    child.0.kill().expect("SIGKILL the holder"); // std's kill is SIGKILL on Unix
    child.0.wait().expect("reap the holder");
    let started = Instant::now();
    let lock = locks
        .lock(&key(), ENTRY_LOCK_TTL)
        .await
        .expect("the lock is free once its holder is gone");
    let waited = started.elapsed();
    assert!(
        waited < ENTRY_LOCK_TTL / 4,
        "waited {waited:?} for a dead holder's lock (the bound is {ENTRY_LOCK_TTL:?})"
    );
    drop(lock);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The holder process, killed and reaped on drop (a failed assertion leaves nothing behind).
struct Holder(std::process::Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
