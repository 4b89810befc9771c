//! The one poison-tolerant lock of the workspace.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking it over if a panicking thread held it: every critical section in this
/// workspace is a single map or field operation, which a panic cannot leave half done.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
