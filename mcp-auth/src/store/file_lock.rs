//! The lock processes on one machine take around a refresh: an OS file lock per store entry.
//!
//! The lock is the kernel's (`flock` on Unix, `LockFileEx` on Windows, through the standard
//! library's `File::try_lock`), so it ends with its holder: a holder that crashes or is killed
//! (even with SIGKILL) frees it at once, and no stale lock file can block anyone — the file stays
//! (deleting lock files races with the processes opening them) but an unlocked file is no lock.
//! A holder that hangs is waited for at most the caller's bound ([`ENTRY_LOCK_TTL`] for a
//! refresh); then the caller goes on without it.
//!
//! [`ENTRY_LOCK_TTL`]: super::ENTRY_LOCK_TTL

use std::fmt;
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::{EntryLock, HeldLock, StoreError, StoreKey};

/// The first wait between two tries at a lock someone holds; doubled up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(5);
/// The longest wait between two tries.
const MAX_POLL: Duration = Duration::from_millis(50);

/// The directory of one application's lock files: `$XDG_CACHE_HOME/<service>/locks`, else
/// `~/.cache/<service>/locks`, else `$XDG_RUNTIME_DIR/<service>/locks`, else
/// `<temp>/<service>-locks` — created (mode 0700 on Unix) when the first lock is taken. The
/// cache directory comes first because every process of the user finds the same one (a cron job
/// or a service may run without `XDG_RUNTIME_DIR` while sharing the desktop's credential
/// store).
#[derive(Clone, PartialEq, Eq)]
pub struct LockDir {
    dir: PathBuf,
}

impl fmt::Debug for LockDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LockDir").field(&self.dir).finish()
    }
}

impl LockDir {
    /// The lock directory of `service` (e.g. `"mcp-client"`), as the type's docs say.
    pub fn for_service(service: &str) -> LockDir {
        let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let base = non_empty("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .or_else(|| non_empty("XDG_RUNTIME_DIR").map(PathBuf::from))
            .or_else(|| non_empty("LOCALAPPDATA").map(PathBuf::from));
        let dir = match base {
            Some(base) => base.join(service).join("locks"),
            None => std::env::temp_dir().join(format!("{service}-locks")),
        };
        LockDir { dir }
    }

    /// Lock files in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> LockDir {
        LockDir { dir: dir.into() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The lock file of `key`: a hash of the server and account (no server URL in a file name).
    pub fn file_of(&self, key: &StoreKey) -> PathBuf {
        let mut hash = Sha256::new();
        hash.update(key.server.as_bytes());
        hash.update([0]);
        hash.update(key.account.as_bytes());
        let digest = hash.finalize();
        let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.lock"))
    }

    /// Takes the lock of `key`, trying again (every 5 ms at first, then up to every 50 ms) while
    /// another process holds it, for at most `wait`.
    pub async fn lock(&self, key: &StoreKey, wait: Duration) -> Result<FileLock, StoreError> {
        let path = self.file_of(key);
        let file = self.open(&path).map_err(|e| {
            StoreError(format!("cannot open the lock file {}: {e}", path.display()))
        })?;
        let started = Instant::now();
        let mut poll = FIRST_POLL;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(FileLock { file, path }),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    return Err(StoreError(format!("cannot lock {}: {e}", path.display())))
                }
            }
            let waited = started.elapsed();
            if waited >= wait {
                return Err(StoreError(format!(
                    "another process has held the lock {} for longer than {wait:?}",
                    path.display()
                )));
            }
            tokio::time::sleep(poll.min(wait - waited)).await;
            poll = (poll * 2).min(MAX_POLL);
        }
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        create_private_dir(&self.dir)?;
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        options.open(path)
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// A held file lock: given back by [`release`](HeldLock::release), on drop, or when its
/// process ends.
pub struct FileLock {
    file: File,
    path: PathBuf,
}

impl fmt::Debug for FileLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileLock")
            .field("path", &self.path)
            .finish()
    }
}

impl FileLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// As an [`EntryLock`].
    pub fn into_entry_lock(self) -> EntryLock {
        EntryLock::held(Box::new(self))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the file gives the lock back as well; unlocking first says so explicitly.
        let _ = self.file.unlock();
    }
}

#[async_trait]
impl HeldLock for FileLock {
    async fn release(self: Box<Self>) {
        drop(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcp-auth-file-lock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[tokio::test]
    async fn a_second_holder_waits_until_the_first_lets_go() {
        let dir = temp_dir("wait");
        let locks = LockDir::at(&dir);
        let key = StoreKey::new("https://a.example/mcp", "default");
        let first = locks.lock(&key, Duration::from_secs(1)).await.unwrap();
        // Another open file description: the kernel treats it as another holder.
        let refused = locks
            .lock(&key, Duration::from_millis(30))
            .await
            .unwrap_err();
        assert!(refused.0.contains("for longer than 30ms"), "{refused}");
        let other = StoreKey::new("https://b.example/mcp", "default");
        let unrelated = locks.lock(&other, Duration::ZERO).await;
        assert!(unrelated.is_ok(), "one lock per entry");
        let mut waiter = {
            let locks = locks.clone();
            let key = key.clone();
            tokio::spawn(async move { locks.lock(&key, Duration::from_secs(5)).await })
        };
        assert!(
            tokio::time::timeout(Duration::from_millis(20), &mut waiter)
                .await
                .is_err(),
            "the waiter waits while the lock is held"
        );
        first.into_entry_lock().release().await;
        let second = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("the waiter gets the lock once it is given back")
            .unwrap();
        assert!(second.is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn lock_files_are_named_by_a_hash_of_the_entry() {
        let locks = LockDir::at("/locks");
        let a = locks.file_of(&StoreKey::new(
            "https://a.example/mcp?key=secret",
            "default",
        ));
        let b = locks.file_of(&StoreKey::new("https://a.example/mcp?key=secret", "other"));
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), 32 + ".lock".len());
        assert!(!name.contains("secret"));
    }
}
