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

/// CPU time and peak memory of the processes this one started: its children (the server it
/// talks to — a gateway, or the fixture when direct) and their children (what a gateway runs
/// upstream), read from `/proc`.
///
/// Take one [`ServerUsage::snapshot`] before the measured calls and one after; [`ServerUsage::since`]
/// gives the CPU each level spent in between, counting only the processes that were there at the
/// start (servers start before the warm-up). Per process it sums its threads'
/// `se.sum_exec_runtime` (`/proc/<pid>/task/<tid>/sched`, nanoseconds) when the same threads were
/// there both times; otherwise (a thread came or went, or the kernel has no `sched` file) it
/// falls back to `/proc/<pid>/stat`'s utime + stime, which counts in clock ticks (10 ms at the
/// usual 100 Hz), so then the figures need many calls to mean anything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerUsage {
    /// Each child.
    pub children: Vec<ProcessCpu>,
    /// Each grandchild.
    pub grandchildren: Vec<ProcessCpu>,
    /// The children's summed peak resident set (`VmHWM`), KiB.
    pub children_max_rss_kib: u64,
}

/// One process's CPU so far.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessCpu {
    /// Its pid.
    pub pid: u32,
    /// utime + stime, clock ticks (`/proc/<pid>/stat`; threads that ended included).
    pub ticks: u64,
    /// `(tid, sum_exec_runtime in ns)` of each live thread, when readable.
    pub threads: Option<Vec<(u32, u64)>>,
}

impl ProcessCpu {
    fn read(stat: &ProcStat) -> ProcessCpu {
        ProcessCpu {
            pid: stat.pid,
            ticks: stat.ticks,
            threads: thread_runtimes(stat.pid),
        }
    }

    /// The CPU spent from `before` to `self` (the same process).
    fn since(&self, before: &ProcessCpu, tick: Duration) -> Duration {
        match (&before.threads, &self.threads) {
            (Some(b), Some(a))
                if b.len() == a.len() && b.iter().zip(a).all(|(x, y)| x.0 == y.0) =>
            {
                let ns: u64 = b.iter().zip(a).map(|(x, y)| y.1.saturating_sub(x.1)).sum();
                Duration::from_nanos(ns)
            }
            _ => tick * self.ticks.saturating_sub(before.ticks) as u32,
        }
    }
}

/// CPU spent by the server processes between two [`ServerUsage`] snapshots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerCpu {
    /// By the children (the server the client talks to).
    pub server: Duration,
    /// By the grandchildren, or `None` when there were none (the server runs nothing upstream).
    pub upstream: Option<Duration>,
}

impl ServerUsage {
    /// The current figures of this process's children and grandchildren; `None` without
    /// `/proc` (not Linux) or without a child.
    pub fn snapshot() -> Option<ServerUsage> {
        let me = std::process::id();
        let processes = proc_stats()?;
        let children: Vec<ProcessCpu> = processes
            .iter()
            .filter(|p| p.ppid == me)
            .map(ProcessCpu::read)
            .collect();
        if children.is_empty() {
            return None;
        }
        let grandchildren = processes
            .iter()
            .filter(|p| children.iter().any(|c| c.pid == p.ppid))
            .map(ProcessCpu::read)
            .collect();
        let children_max_rss_kib = children.iter().map(|c| peak_rss_kib(c.pid)).sum();
        Some(ServerUsage {
            children,
            grandchildren,
            children_max_rss_kib,
        })
    }

    /// The CPU each level spent from `before` to `self`, over the processes of `before` that
    /// are still there.
    pub fn since(&self, before: &ServerUsage) -> ServerCpu {
        let tick = Duration::from_secs(1) / clock_ticks_per_sec();
        let delta = |before: &[ProcessCpu], after: &[ProcessCpu]| -> Duration {
            before
                .iter()
                .filter_map(|b| {
                    let a = after.iter().find(|a| a.pid == b.pid)?;
                    Some(a.since(b, tick))
                })
                .sum()
        };
        ServerCpu {
            server: delta(&before.children, &self.children),
            upstream: (!before.grandchildren.is_empty())
                .then(|| delta(&before.grandchildren, &self.grandchildren)),
        }
    }
}

/// `(tid, se.sum_exec_runtime in ns)` of each thread of `pid`, sorted by tid; `None` when a
/// thread's `sched` file cannot be read (no `CONFIG_SCHED_DEBUG`, or the process ended).
fn thread_runtimes(pid: u32) -> Option<Vec<(u32, u64)>> {
    let mut threads = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let entry = entry.ok()?;
        let tid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let sched = std::fs::read_to_string(entry.path().join("sched")).ok()?;
        threads.push((tid, parse_sum_exec_runtime(&sched)?));
    }
    threads.sort_unstable();
    Some(threads)
}

/// `se.sum_exec_runtime : 2.175916` (milliseconds) in nanoseconds.
fn parse_sum_exec_runtime(sched: &str) -> Option<u64> {
    let line = sched
        .lines()
        .find(|l| l.trim_start().starts_with("se.sum_exec_runtime"))?;
    let ms: f64 = line.split(':').nth(1)?.trim().parse().ok()?;
    Some((ms * 1e6).round() as u64)
}

/// One process's line of `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProcStat {
    pid: u32,
    ppid: u32,
    /// utime + stime, clock ticks.
    ticks: u64,
}

/// Parses `/proc/<pid>/stat`: `pid (comm) state ppid … utime stime …` (fields 14 and 15);
/// `comm` may hold spaces and parentheses, so the fields are counted after the last `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let (head, tail) = text.rsplit_once(')')?;
    let pid = head.split_once('(')?.0.trim().parse().ok()?;
    let fields: Vec<&str> = tail.split_whitespace().collect();
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        ticks: utime + stime,
    })
}

/// Every process's stat line that could be read.
fn proc_stats() -> Option<Vec<ProcStat>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    Some(
        entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter_map(|text| parse_stat(&text))
            .collect(),
    )
}

/// `VmHWM` of `/proc/<pid>/status`, KiB (0 when unreadable).
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// `sysconf(_SC_CLK_TCK)`, the unit of `/proc/<pid>/stat`'s times (100 when unknown).
fn clock_ticks_per_sec() -> u32 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u32::try_from(ticks).ok().filter(|&t| t > 0).unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_whose_name_holds_spaces_and_parentheses() {
        let line = "4242 (mcp (x) y) S 4200 4242 4200 0 -1 4194304 200 0 0 0 37 5 0 0 20 0 1 0 \
                    100 1000000 300 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                pid: 4242,
                ppid: 4200,
                ticks: 42
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    fn process(pid: u32, ticks: u64, threads: Option<Vec<(u32, u64)>>) -> ProcessCpu {
        ProcessCpu {
            pid,
            ticks,
            threads,
        }
    }

    #[test]
    fn cpu_since_counts_the_processes_present_at_the_start() {
        let before = ServerUsage {
            children: vec![process(10, 100, Some(vec![(10, 5_000), (20, 1_000)]))],
            grandchildren: vec![process(11, 50, None), process(12, 7, None)],
            children_max_rss_kib: 0,
        };
        let after = ServerUsage {
            children: vec![
                process(10, 150, Some(vec![(10, 9_000), (20, 1_500)])),
                process(13, 1000, None),
            ],
            grandchildren: vec![process(11, 60, Some(vec![(11, 1)]))],
            children_max_rss_kib: 0,
        };
        let tick = Duration::from_secs(1) / clock_ticks_per_sec();
        let cpu = after.since(&before);
        // The same threads both times: their runtimes, to the nanosecond.
        assert_eq!(cpu.server, Duration::from_nanos(4_500));
        // No thread figures before: the ticks.
        assert_eq!(cpu.upstream, Some(tick * 10));
        let none = ServerUsage {
            grandchildren: vec![],
            ..before.clone()
        };
        assert_eq!(after.since(&none).upstream, None);
        // A thread went: the ticks.
        let fewer = ServerUsage {
            children: vec![process(10, 150, Some(vec![(10, 9_000)]))],
            ..after.clone()
        };
        assert_eq!(fewer.since(&before).server, tick * 50);
    }

    #[test]
    fn parses_the_sum_exec_runtime() {
        let sched = "mcph (6711, #threads: 1)\n----\nse.exec_start   :  45168686.858223\n\
                     se.sum_exec_runtime                          :             2.175916\n";
        assert_eq!(parse_sum_exec_runtime(sched), Some(2_175_916));
        assert_eq!(parse_sum_exec_runtime("nothing"), None);
    }

    #[test]
    fn a_snapshot_sees_a_child_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        let snapshot = ServerUsage::snapshot();
        let _ = child.kill();
        let _ = child.wait();
        let snapshot = snapshot.expect("a child is seen");
        assert!(snapshot.children.iter().any(|c| c.pid == child.id()));
    }
}
