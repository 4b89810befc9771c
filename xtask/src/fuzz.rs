//! `cargo xtask fuzz [--seconds N] [TARGET]`: builds the fuzz targets of `fuzz/` with
//! cargo-fuzz (libFuzzer, sanitizer off: stable Rust has no `-Zsanitizer`, see README.md,
//! "Fuzzing") and runs each for N seconds, or TARGET alone.
//!
//! Each run starts from the committed seeds (`fuzz/corpus/<target>/`, read only) and a
//! working corpus that grows between runs (`fuzz/target/corpus/<target>/`, ignored), so the
//! repository's corpora stay small. libFuzzer's output goes to `fuzz/target/logs/<target>.log`;
//! a summary line per target gives its executions, coverage (`cov`: edges, `ft`: features) and
//! corpus. A crash, timeout or memory blow-up fails the run and names the input libFuzzer
//! saved (`fuzz/artifacts/<target>/…`); replay it with
//! `cargo fuzz run -s none <target> <file>` in `fuzz/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::shell;
use crate::tools::{self, Tool};

/// The pinned cargo-fuzz.
pub const CARGO_FUZZ: Tool = Tool {
    name: "cargo-fuzz",
    version: "0.13.2",
};

/// Seconds per target of `cargo xtask fuzz`.
pub const DEFAULT_SECONDS: u64 = 60;

/// Seconds per target of CI's smoke run: every target reached, the step kept to a few minutes
/// (the build of the instrumented crates takes most of it).
pub const CI_SECONDS: u64 = 5;

/// libFuzzer's per-input limits: an input that runs longer or takes more memory fails the run
/// (a hostile peer must not be able to do it either).
const INPUT_TIMEOUT_SECS: u32 = 10;
const RSS_LIMIT_MB: u32 = 2048;

/// What one target's run gave.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub target: String,
    pub ok: bool,
    /// Inputs executed.
    pub execs: Option<u64>,
    pub execs_per_sec: Option<u64>,
    /// Edges covered.
    pub cov: Option<u64>,
    /// Features (edges, counters and compared values) covered.
    pub ft: Option<u64>,
    /// The working corpus at the end (`files/size`).
    pub corpus: Option<String>,
    /// The input libFuzzer saved for a failure.
    pub artifact: Option<PathBuf>,
    /// Why it failed, when it did.
    pub failure: Option<String>,
}

/// A whole `cargo xtask fuzz`: the build and every target's run.
#[derive(Debug, Default)]
pub struct Run {
    /// How long the instrumented build took.
    pub build_time: Duration,
    /// How long the targets ran, together.
    pub run_time: Duration,
    pub reports: Vec<Report>,
}

impl Run {
    /// No target failed.
    pub fn ok(&self) -> bool {
        self.reports.iter().all(|r| r.ok)
    }
}

/// The `fuzz/` directory.
pub fn fuzz_dir(root: &Path) -> PathBuf {
    root.join("fuzz")
}

/// The targets: `fuzz/fuzz_targets/*.rs`, by name.
pub fn targets(root: &Path) -> Result<Vec<String>, String> {
    let dir = fuzz_dir(root).join("fuzz_targets");
    let entries = fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// Builds the targets (`only`, or all) and runs each for `seconds`; prints a summary and
/// returns the reports with the build and run times. `Err` when nothing could be run at all.
pub fn run(root: &Path, seconds: u64, only: Option<&str>) -> Result<Run, String> {
    let all = targets(root)?;
    let chosen: Vec<String> = match only {
        Some(name) if all.iter().any(|t| t == name) => vec![name.to_owned()],
        Some(name) => {
            return Err(format!(
                "no fuzz target {name:?}; the targets are: {}",
                all.join(", ")
            ))
        }
        None => all,
    };
    tools::ensure(root, &CARGO_FUZZ)?;
    let build_time = build(root, only)?;
    let running = Instant::now();
    let mut reports = Vec::new();
    for target in &chosen {
        eprintln!("==> fuzz {target} for {seconds} s");
        let report = run_target(root, target, seconds)?;
        eprintln!("    {}", summary_line(&report));
        reports.push(report);
    }
    print_summary(&reports, seconds);
    Ok(Run {
        build_time,
        run_time: running.elapsed(),
        reports,
    })
}

/// The directory libFuzzer's logs are written to (`fuzz/target/logs/`); kept by
/// [`remove_build_output`], since a failure's report points into it.
fn logs_dir(root: &Path) -> PathBuf {
    fuzz_dir(root).join("target").join("logs")
}

/// Removes everything under `fuzz/target/` but the logs: the instrumented build (several GB)
/// and the working corpora. Returns the bytes freed. For CI, whose clone is thrown away after
/// the run and whose disk the later release build needs; a developer keeps the build (the next
/// `cargo xtask fuzz` would rebuild from scratch) and the corpora (they carry coverage over).
pub fn remove_build_output(root: &Path) -> Result<u64, String> {
    let target = fuzz_dir(root).join("target");
    let logs = logs_dir(root);
    let entries = match fs::read_dir(&target) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("cannot list {}: {e}", target.display())),
    };
    let mut freed = 0;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list {}: {e}", target.display()))?
            .path();
        if path == logs {
            continue;
        }
        freed += size_of(&path);
        let removed = if path.is_dir() && !path.is_symlink() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    }
    Ok(freed)
}

/// The bytes of the files under `path` (symbolic links not followed; unreadable parts count 0).
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(path).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .map(|entry| size_of(&entry.path()))
            .sum()
    })
}

/// A `cargo fuzz` command in `fuzz/`, with the pinned cargo-fuzz on `PATH` and the fuzz
/// crate's own target directory.
fn cargo_fuzz(root: &Path, args: &[&str]) -> std::process::Command {
    let mut cmd = shell::command(shell::cargo(), args, &fuzz_dir(root));
    cmd.env("PATH", tools::path_with_tools(root));
    // cargo-fuzz sets its own flags; a target directory from outside would mix its
    // instrumented build with the workspace's.
    cmd.env_remove("CARGO_TARGET_DIR");
    cmd.env_remove("RUSTFLAGS");
    cmd
}

/// `-s none`: no sanitizer (stable Rust). More codegen units than cargo-fuzz's default of one:
/// the build takes a third of the time, which CI's budget needs, for a few percent fewer
/// executions per second.
const BUILD_FLAGS: &[&str] = &["-s", "none", "--codegen-units", "16"];

fn build(root: &Path, only: Option<&str>) -> Result<Duration, String> {
    let mut args = vec!["fuzz", "build"];
    args.extend_from_slice(BUILD_FLAGS);
    args.extend(only);
    let mut cmd = cargo_fuzz(root, &args);
    let started = Instant::now();
    let status = shell::run(&mut cmd).map_err(|e| format!("could not run cargo fuzz: {e}"))?;
    if !status.success() {
        return Err(format!("cargo fuzz build failed ({status})"));
    }
    let took = started.elapsed();
    eprintln!("==> fuzz targets built in {:.0} s", took.as_secs_f64());
    Ok(took)
}

fn run_target(root: &Path, target: &str, seconds: u64) -> Result<Report, String> {
    let fuzz = fuzz_dir(root);
    let work = fuzz.join("target").join("corpus").join(target);
    let seeds = fuzz.join("corpus").join(target);
    let artifacts = fuzz.join("artifacts").join(target);
    let logs = logs_dir(root);
    for dir in [&work, &seeds, &artifacts, &logs] {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let max_time = format!("-max_total_time={seconds}");
    let timeout = format!("-timeout={INPUT_TIMEOUT_SECS}");
    let rss = format!("-rss_limit_mb={RSS_LIMIT_MB}");
    let prefix = format!("-artifact_prefix={}/", artifacts.display());
    let work_arg = work.to_string_lossy();
    let seeds_arg = seeds.to_string_lossy();
    let mut args = vec!["fuzz", "run"];
    args.extend_from_slice(BUILD_FLAGS);
    args.extend([
        target,
        &*work_arg,
        &*seeds_arg,
        "--",
        &*max_time,
        "-print_final_stats=1",
        &*timeout,
        &*rss,
        &*prefix,
    ]);
    let mut cmd = cargo_fuzz(root, &args);
    let output = cmd
        .output()
        .map_err(|e| format!("could not run cargo fuzz: {e}"))?;
    let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stderr));
    let log_path = logs.join(format!("{target}.log"));
    if let Err(e) = fs::write(&log_path, &log) {
        eprintln!("fuzz: cannot write {}: {e}", log_path.display());
    }
    let mut report = parse_log(target, &log);
    report.ok = output.status.success() && report.artifact.is_none();
    if !report.ok {
        let why = failure_reason(&log).unwrap_or_else(|| format!("exited with {}", output.status));
        report.failure = Some(format!("{why} (log: {})", log_path.display()));
        // The panic message and backtrace, for CI logs.
        let tail: Vec<&str> = log.lines().rev().take(60).collect();
        for line in tail.iter().rev() {
            eprintln!("    | {line}");
        }
    }
    Ok(report)
}

/// Reads libFuzzer's status lines (`#N DONE cov: C ft: F corp: K/S …`), final stats
/// (`-print_final_stats=1`) and the saved artifact.
fn parse_log(target: &str, log: &str) -> Report {
    let mut report = Report {
        target: target.to_owned(),
        ..Report::default()
    };
    for line in log.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            let mut words = line.split_whitespace();
            while let Some(word) = words.next() {
                match word {
                    "cov:" => report.cov = words.next().and_then(|w| w.parse().ok()),
                    "ft:" => report.ft = words.next().and_then(|w| w.parse().ok()),
                    "corp:" => report.corpus = words.next().map(str::to_owned),
                    _ => {}
                }
            }
        } else if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
            report.execs = n.trim().parse().ok();
        } else if let Some(n) = line.strip_prefix("stat::average_exec_per_sec:") {
            report.execs_per_sec = n.trim().parse().ok();
        } else if let Some(rest) = line.split("Test unit written to ").nth(1) {
            report.artifact = rest.split_whitespace().next().map(PathBuf::from);
        }
    }
    report
}

/// libFuzzer's one-line reason (`ERROR: libFuzzer: deadly signal`, `… timeout after 10
/// seconds`, `… out-of-memory …`) and the panic message before it, if any.
fn failure_reason(log: &str) -> Option<String> {
    let error = log
        .lines()
        .find_map(|l| l.split("ERROR: libFuzzer: ").nth(1))
        .map(str::trim);
    let panic = log
        .lines()
        .skip_while(|l| !l.contains("panicked at"))
        .nth(1)
        .map(str::trim);
    match (panic, error) {
        (Some(p), Some(e)) => Some(format!("{e}: {p}")),
        (None, Some(e)) => Some(e.to_owned()),
        (Some(p), None) => Some(p.to_owned()),
        (None, None) => None,
    }
}

fn number(n: Option<u64>) -> String {
    n.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

fn summary_line(r: &Report) -> String {
    let outcome = match (&r.failure, &r.artifact) {
        (None, _) => "ok".to_owned(),
        (Some(why), Some(file)) => format!("FAILED: {why}; input saved to {}", file.display()),
        (Some(why), None) => format!("FAILED: {why}"),
    };
    format!(
        "{}: {} execs ({}/s), cov {}, ft {}, corpus {}: {outcome}",
        r.target,
        number(r.execs),
        number(r.execs_per_sec),
        number(r.cov),
        number(r.ft),
        r.corpus.as_deref().unwrap_or("?"),
    )
}

fn print_summary(reports: &[Report], seconds: u64) {
    println!();
    println!(
        "{:<20} {:>12} {:>9} {:>7} {:>8} {:>12}  result ({seconds} s each)",
        "target", "execs", "execs/s", "cov", "ft", "corpus"
    );
    println!("{}", "-".repeat(84));
    for r in reports {
        println!(
            "{:<20} {:>12} {:>9} {:>7} {:>8} {:>12}  {}",
            r.target,
            number(r.execs),
            number(r.execs_per_sec),
            number(r.cov),
            number(r.ft),
            r.corpus.as_deref().unwrap_or("?"),
            if r.ok { "ok" } else { "FAILED" }
        );
    }
    for r in reports.iter().filter(|r| !r.ok) {
        println!("{}", summary_line(r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_the_build_output_keeps_the_logs() {
        let root = std::env::temp_dir().join(format!("xtask-fuzz-clean-{}", std::process::id()));
        let target = fuzz_dir(&root).join("target");
        let build = target.join("x86_64-unknown-linux-gnu").join("release");
        fs::create_dir_all(&build).unwrap();
        fs::create_dir_all(logs_dir(&root)).unwrap();
        fs::create_dir_all(target.join("corpus").join("sse")).unwrap();
        fs::write(build.join("sse"), vec![0u8; 1000]).unwrap();
        fs::write(target.join("corpus").join("sse").join("a"), b"12345").unwrap();
        fs::write(target.join("CACHEDIR.TAG"), b"tag").unwrap();
        fs::write(logs_dir(&root).join("sse.log"), b"log").unwrap();

        let freed = remove_build_output(&root).unwrap();

        let left: Vec<_> = fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("logs")]);
        assert!(logs_dir(&root).join("sse.log").is_file());
        assert_eq!(freed, 1000 + 5 + 3);
        // Nothing to remove is not an error.
        fs::remove_dir_all(&root).unwrap();
        assert_eq!(remove_build_output(&root), Ok(0));
    }

    #[test]
    fn reads_libfuzzer_final_stats() {
        let log = "\
INFO: Seed: 42
#2\tINITED cov: 10 ft: 11 corp: 1/1b exec/s: 0 rss: 28Mb
#1048576\tpulse  cov: 220 ft: 1030 corp: 450/150Kb lim: 4096 exec/s: 349525 rss: 28Mb
#5132141\tDONE   cov: 221 ft: 1037 corp: 457/155Kb lim: 4096 exec/s: 320758 rss: 28Mb
Done 5132141 runs in 16 second(s)
stat::number_of_executed_units: 5132141
stat::average_exec_per_sec:     320758
stat::new_units_added:          4379
";
        let r = parse_log("t", log);
        assert_eq!(r.execs, Some(5_132_141));
        assert_eq!(r.execs_per_sec, Some(320_758));
        assert_eq!(r.cov, Some(221));
        assert_eq!(r.ft, Some(1037));
        assert_eq!(r.corpus.as_deref(), Some("457/155Kb"));
        assert_eq!(r.artifact, None);
    }

    #[test]
    fn reads_a_crash_and_its_reason() {
        let log = "\
thread '<unnamed>' (8155) panicked at fuzz_targets/x.rs:108:9:
assertion failed: a == b
==8155== ERROR: libFuzzer: deadly signal
artifact_prefix='/w/fuzz/artifacts/x/'; Test unit written to /w/fuzz/artifacts/x/crash-665f66b0
Base64: WyIiXQ==
";
        let r = parse_log("x", log);
        assert_eq!(
            r.artifact,
            Some(PathBuf::from("/w/fuzz/artifacts/x/crash-665f66b0"))
        );
        assert_eq!(
            failure_reason(log).as_deref(),
            Some("deadly signal: assertion failed: a == b")
        );
    }
}
