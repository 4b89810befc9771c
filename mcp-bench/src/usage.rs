//! CPU time and peak memory of this process.

use std::time::Duration;

/// User + system CPU time of this process so far, and its peak resident set size in KiB.
pub fn process_usage() -> (Duration, u64) {
    // SAFETY: getrusage writes into the struct we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    (
        tv(usage.ru_utime) + tv(usage.ru_stime),
        usage.ru_maxrss as u64,
    )
}
