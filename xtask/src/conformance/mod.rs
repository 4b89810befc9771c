//! `cargo xtask conformance [--side client|server] [--suite VERSION] [--target NAME]
//! [--scenario S [--spec-version V]]`: run the official MCP conformance suites
//! (`@modelcontextprotocol/conformance`) — the client scenarios against
//! `mcp-conformance-client`, the server scenarios against every [`server::ServerTarget`] (today
//! the fixture server with `--conformance-content`; see `server.rs`).
//!
//! Two releases are pinned ([`SUITES`]): 0.1.16 (the 2025-11-25 suite) and 0.2.0-alpha.12 (the
//! 2026-07-28 revision). For each:
//! 1. Installs Node 22 (the npm package `node@22`; the suite does not start on Node 20) and the
//!    suite into `<workspace>/.interop/conformance-<version>/` unless its stamp matches.
//! 2. Builds `mcp-conformance-client` (`cargo build -p mcp-conformance`) and what the server
//!    targets run, once.
//! 3. Client side: runs `conformance client --command "exec <client>"` once per entry of its
//!    `runs` (0.2: `--suite all`, where each scenario runs at its own default version, and
//!    `--requirements 2026-07-28`, where every scenario the revision requires runs at
//!    2026-07-28), with its baseline, results in `target/conformance/<version>-<run>/`, and
//!    `node_modules/.bin` first on PATH.
//! 4. Server side: for each target and each entry of `server_runs` (0.1.16: `--suite all`;
//!    0.2: the active suite, each scenario at 2025-11-25, and `--requirements 2026-07-28`),
//!    starts the target on a free loopback port, runs `conformance server --url …` with the
//!    suite's server baseline, results in `target/conformance/server-<target>-<version>-<run>/`,
//!    and stops the target.
//! 5. Prints one line per scenario with its check counts (from `checks.json`).
//!
//! `--side` runs one side only (default both); `--scenario S` runs one scenario on one suite
//! (the newest unless `--suite` says otherwise), on the client side unless `--side server`.
//!
//! The exit code is the suites': 0 when every failure is in the baseline and no baseline entry
//! passes. The suite's mock servers call `listen(0)` without a host (all interfaces); a small
//! `--require` preload pins them to 127.0.0.1, and the run refuses to start if that does not hold.

pub mod server;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{interop, shell};

/// The suite package.
pub const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";

/// One pinned release of the suite and how CI runs it.
pub struct Suite {
    /// The npm version.
    pub version: &'static str,
    /// Its baseline of expected failures (workspace-relative).
    baseline: &'static str,
    /// `(label, arguments)` of each run (besides `--command`, the baseline and `-o`).
    runs: &'static [(&'static str, &'static [&'static str])],
    /// The baseline of the server scenarios (workspace-relative), shared by every target.
    server_baseline: &'static str,
    /// `(label, arguments)` of each server run (besides `--url`, the baseline and `-o`).
    server_runs: &'static [(&'static str, &'static [&'static str])],
    /// Scenarios that pass without the client doing anything: shown as such so nobody counts
    /// them as real passes.
    vacuous: &'static [&'static str],
}

/// The pinned suites, oldest first. Bump a version here (and re-check its baseline).
pub const SUITES: &[Suite] = &[
    Suite {
        version: "0.1.16",
        baseline: "conformance/expected-failures.yml",
        runs: &[("all", &["--suite", "all"])],
        // Its only check is "no authorization request was made".
        vacuous: &["auth/resource-mismatch"],
        server_baseline: "conformance/expected-failures-server.yml",
        server_runs: &[("all", &["--suite", "all"])],
    },
    Suite {
        version: "0.2.0-alpha.12",
        baseline: "conformance/expected-failures-0.2.yml",
        runs: &[
            ("all", &["--suite", "all"]),
            ("2026-07-28", &["--requirements", "2026-07-28"]),
        ],
        vacuous: &[],
        server_baseline: "conformance/expected-failures-server-0.2.yml",
        // The active suite runs each scenario at 2025-11-25 (`--suite all` would add the draft
        // and pending ones); the requirements run every scenario 2026-07-28 requires at
        // 2026-07-28, plus the not-scored ones (the Tasks extension, pending SEP-2243).
        server_runs: &[
            ("active", &["--suite", "active"]),
            ("2026-07-28", &["--requirements", "2026-07-28"]),
        ],
    },
];
/// The Node.js runtime, installed from the npm registry as a package.
pub const NODE_SPEC: &str = "node@22";
const NODE_MAJOR: &str = "v22.";

const STAMP: &str = ".xtask-stamp";
const PRELOAD: &str = "loopback.cjs";
/// Bump when the preload changes so old installs rewrite it.
const PRELOAD_VERSION: u32 = 1;

const PRELOAD_JS: &str = r#"// Written by `cargo xtask conformance`, loaded with NODE_OPTIONS=--require.
// The suite's mock servers call listen(0) with no host, which binds every interface (`::`);
// bind them to 127.0.0.1 instead. `_listen2` sees a null address exactly when no host was given;
// patching it keeps listen() synchronous (a host argument adds an async DNS lookup, and the
// suite reads server.address() right after listen()).
"use strict";
const net = require("net");
const listen2 = net.Server.prototype._listen2;
net.Server.prototype._listen2 = function (address, port, addressType, backlog, fd, flags) {
  if (!address && !(typeof fd === "number" && fd >= 0)) {
    address = "127.0.0.1";
    addressType = 4;
  }
  return listen2.call(this, address, port, addressType, backlog, fd, flags);
};
"#;

/// The outcome of a run, for `main` and the CI step.
pub struct Report {
    /// The suite's exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// e.g. "4 passed, 21 expected failures, 1 vacuous passes".
    pub summary: String,
}

/// Where one suite is installed.
pub fn conformance_dir(root: &Path, suite: &Suite) -> PathBuf {
    interop::interop_dir(root).join(format!("conformance-{}", suite.version))
}

fn stamp_text(suite: &Suite) -> String {
    format!(
        "{NODE_SPEC}\n{SUITE_PACKAGE}@{}\npreload-v{PRELOAD_VERSION}\n",
        suite.version
    )
}

/// Which scenarios: the client's, the servers', or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `conformance client` against `mcp-conformance-client`.
    Client,
    /// `conformance server` against the server targets.
    Server,
}

impl Side {
    /// Parses `client` or `server`.
    pub fn parse(name: &str) -> Option<Side> {
        match name {
            "client" => Some(Side::Client),
            "server" => Some(Side::Server),
            _ => None,
        }
    }
}

/// What `cargo xtask conformance` runs.
#[derive(Default)]
pub struct Selection<'a> {
    /// One suite version (default: all; with a scenario, the newest).
    pub suite: Option<&'a str>,
    /// One scenario.
    pub scenario: Option<&'a str>,
    /// With a scenario: the spec version to run it at.
    pub spec_version: Option<&'a str>,
    /// One side (default: both; with a scenario, the client's).
    pub side: Option<Side>,
    /// One server target by name (default: all).
    pub target: Option<&'a str>,
}

/// `cargo xtask conformance`: every selected suite and run, client side then server side; the
/// first failing exit code wins.
pub fn run(root: &Path, selection: &Selection<'_>) -> Result<Report, String> {
    let side = selection.side.or(selection.scenario.map(|_| Side::Client));
    let mut reports = Vec::new();
    if side != Some(Side::Server) {
        reports.push(run_client(root, selection)?);
    }
    if side != Some(Side::Client) {
        reports.push(run_server(root, selection)?);
    }
    let code = reports
        .iter()
        .map(|r| r.code)
        .find(|code| *code != Some(0))
        .unwrap_or(Some(0));
    let summary = reports
        .into_iter()
        .map(|r| r.summary)
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Report { code, summary })
}

/// The suites a selection names.
fn selected_suites(selection: &Selection<'_>) -> Result<Vec<&'static Suite>, String> {
    Ok(match (selection.suite, selection.scenario) {
        (Some(v), _) => vec![SUITES.iter().find(|s| s.version == v).ok_or_else(|| {
            format!(
                "unknown suite {v:?}; pinned: {}",
                SUITES
                    .iter()
                    .map(|s| s.version)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?],
        (None, Some(_)) => SUITES.last().into_iter().collect(),
        (None, None) => SUITES.iter().collect(),
    })
}

/// The runs of one suite for a selection: one `--scenario` run, or the suite's own.
fn selected_runs<'a>(
    selection: &Selection<'a>,
    runs: &'static [(&'static str, &'static [&'static str])],
) -> Vec<(&'a str, Vec<&'a str>)> {
    match selection.scenario {
        Some(s) => {
            let mut args = vec!["--scenario", s];
            if let Some(v) = selection.spec_version {
                args.extend(["--spec-version", v]);
            }
            vec![("scenario", args)]
        }
        None => runs
            .iter()
            .map(|(label, args)| (*label, args.to_vec()))
            .collect(),
    }
}

/// The server side: every selected suite, target and run.
fn run_server(root: &Path, selection: &Selection<'_>) -> Result<Report, String> {
    let suites = selected_suites(selection)?;
    let targets = server::select_targets(selection.target)?;
    server::build_targets(root, &targets)?;
    let mut code = Some(0);
    let mut summaries = Vec::new();
    for suite in suites {
        for target in &targets {
            for (label, args) in selected_runs(selection, suite.server_runs) {
                let report = server::run_one(root, suite, target, label, &args)?;
                if code == Some(0) {
                    code = report.code;
                }
                summaries.push(format!(
                    "server {} {} {label}: {}",
                    target.name, suite.version, report.summary
                ));
            }
        }
    }
    Ok(Report {
        code,
        summary: summaries.join("; "),
    })
}

/// The client side: every selected suite and run.
fn run_client(root: &Path, selection: &Selection<'_>) -> Result<Report, String> {
    let suites = selected_suites(selection)?;
    let client = build_client(root)?;
    let mut code = Some(0);
    let mut summaries = Vec::new();
    for suite in suites {
        for (label, args) in selected_runs(selection, suite.runs) {
            let report = run_one(root, suite, &client, label, &args)?;
            if code == Some(0) {
                code = report.code;
            }
            summaries.push(format!(
                "client {} {label}: {}",
                suite.version, report.summary
            ));
        }
    }
    Ok(Report {
        code,
        summary: summaries.join("; "),
    })
}

/// Builds `mcp-conformance-client`; returns its path.
fn build_client(root: &Path) -> Result<String, String> {
    let mut build = shell::command(
        shell::cargo(),
        &[
            "build",
            "-p",
            "mcp-conformance",
            "--bin",
            "mcp-conformance-client",
        ],
        root,
    );
    let status = shell::run(&mut build).map_err(|e| format!("could not start cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building mcp-conformance-client failed ({status})"));
    }
    let client = shell::target_dir(root).join("debug/mcp-conformance-client");
    let client = client.to_string_lossy().into_owned();
    // The suite splits --command on spaces.
    if client.contains(char::is_whitespace) {
        return Err(format!(
            "the client path {client:?} contains whitespace, which the suite cannot run"
        ));
    }
    Ok(client)
}

/// One run of one suite.
fn run_one(
    root: &Path,
    suite: &Suite,
    client: &str,
    label: &str,
    run_args: &[&str],
) -> Result<Report, String> {
    let start = Instant::now();
    let dir = conformance_dir(root, suite);
    let msg = ensure_installed(&dir, suite)?;
    println!(
        "conformance: {NODE_SPEC} + {SUITE_PACKAGE}@{}: {msg}; run {label}: {}",
        suite.version,
        run_args.join(" ")
    );
    let out = shell::target_dir(root)
        .join("conformance")
        .join(format!("{}-{label}", suite.version));
    if out.exists() {
        fs::remove_dir_all(&out).map_err(|e| format!("clearing {}: {e}", out.display()))?;
    }
    let out_arg = out.to_string_lossy().into_owned();
    let baseline = root.join(suite.baseline).to_string_lossy().into_owned();
    let command = format!("exec {client}");
    let mut args = vec!["client", "--command", &command];
    args.extend(run_args);
    args.extend(["--expected-failures", &baseline, "-o", &out_arg]);
    let mut cmd = node_command(&dir, dir.join("node_modules/.bin/conformance"), &args, root)?;
    assert_loopback_only(&dir, root)?;
    let status =
        shell::run(&mut cmd).map_err(|e| format!("could not start the conformance suite: {e}"))?;

    let expected = read_baseline(&root.join(suite.baseline), "client");
    let results = collect_results(&out, None);
    let summary = print_summary(&results, &expected, suite.vacuous);
    println!(
        "conformance: suite exit code {} in {:.1}s",
        status
            .code()
            .map_or_else(|| "none (signal)".to_owned(), |c| c.to_string()),
        start.elapsed().as_secs_f64()
    );
    Ok(Report {
        code: status.code(),
        summary,
    })
}

/// A command for `program` (a script run by `node`) with Node 22 first on PATH and the
/// loopback preload.
fn node_command(
    dir: &Path,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
    cwd: &Path,
) -> Result<Command, String> {
    let bin = dir.join("node_modules/.bin");
    let mut paths = vec![bin];
    if let Some(old) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    let path = std::env::join_paths(paths).map_err(|e| format!("building PATH: {e}"))?;
    let preload = dir.join(PRELOAD);
    let mut node_options = format!("--require \"{}\"", preload.display());
    if let Some(old) = std::env::var_os("NODE_OPTIONS") {
        node_options = format!("{} {node_options}", old.to_string_lossy());
    }
    let mut cmd = shell::command(program, args, cwd);
    cmd.env("PATH", path).env("NODE_OPTIONS", node_options);
    Ok(cmd)
}

/// Refuses to run when the preload does not pin `listen(0)` to loopback.
fn assert_loopback_only(dir: &Path, cwd: &Path) -> Result<(), String> {
    let script = "const s=require('http').createServer();s.listen(0);\
                  const a=s.address();process.stdout.write(a?a.address:'none');s.close();";
    let mut cmd = node_command(
        dir,
        dir.join("node_modules/.bin/node"),
        &["-e", script],
        cwd,
    )?;
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start node: {e}"))?;
    let address = String::from_utf8_lossy(&out.stdout).into_owned();
    if address == "127.0.0.1" {
        Ok(())
    } else {
        Err(format!(
            "the loopback preload is not effective (a mock server would bind {address:?}); \
             refusing to run the suite"
        ))
    }
}

/// Installs Node 22 + the suite unless the stamp matches; returns the status word.
fn ensure_installed(dir: &Path, pinned: &Suite) -> Result<&'static str, String> {
    let stamp = dir.join(STAMP);
    let current = fs::read_to_string(&stamp).ok();
    let mut word = "up to date";
    if current.as_deref() != Some(stamp_text(pinned).as_str()) || !installed_ok(dir) {
        if dir.exists() {
            fs::remove_dir_all(dir)
                .map_err(|e| format!("removing stale {}: {e}", dir.display()))?;
        }
        fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let suite = format!("{SUITE_PACKAGE}@{}", pinned.version);
        let prefix = dir.to_string_lossy().into_owned();
        let mut cmd = shell::command(
            "npm",
            &[
                "install",
                "--prefix",
                &prefix,
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                NODE_SPEC,
                &suite,
            ],
            dir,
        );
        let status = shell::run(&mut cmd).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                "`npm` not found on PATH; install Node.js with npm to run the conformance suite"
                    .to_owned()
            } else {
                format!("could not start `npm`: {e}")
            }
        })?;
        if !status.success() {
            return Err(format!(
                "`npm install {NODE_SPEC} {suite}` failed ({status})"
            ));
        }
        fs::write(dir.join(PRELOAD), PRELOAD_JS)
            .map_err(|e| format!("writing the loopback preload: {e}"))?;
        if !installed_ok(dir) {
            return Err(format!(
                "install finished but {} does not run Node 22 with the suite",
                dir.display()
            ));
        }
        let tmp = stamp.with_extension("tmp");
        fs::write(&tmp, stamp_text(pinned))
            .and_then(|()| fs::rename(&tmp, &stamp))
            .map_err(|e| format!("writing {}: {e}", stamp.display()))?;
        word = "installed";
    }
    Ok(word)
}

/// Node 22 runs from the prefix, and the suite and the preload are there.
fn installed_ok(dir: &Path) -> bool {
    let node = dir.join("node_modules/.bin/node");
    if !dir.join("node_modules/.bin/conformance").exists() || !dir.join(PRELOAD).exists() {
        return false;
    }
    shell::command(&node, &["--version"], dir)
        .stderr(Stdio::null())
        .output()
        .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).starts_with(NODE_MAJOR))
        .unwrap_or(false)
}

/// Scenario names listed under `section:` (`client` or `server`) in the baseline
/// (`- name  # why`; a per-check entry `- name:check-id` counts for its scenario).
fn read_baseline(path: &Path, section: &str) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let heading = format!("{section}:");
    let mut in_section = false;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        if !line.starts_with(' ') && !line.starts_with('-') && line.trim_end().ends_with(':') {
            in_section = line.trim() == heading;
            continue;
        }
        if let Some(name) = line.trim().strip_prefix("- ") {
            if in_section {
                let name = name.trim().trim_matches(['"', '\'']);
                let scenario = name.split_once(':').map_or(name, |(scenario, _)| scenario);
                if !names.iter().any(|n| n == scenario) {
                    names.push(scenario.to_owned());
                }
            }
        }
    }
    names
}

/// Check counts of one scenario.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Counts {
    success: u32,
    failure: u32,
    warning: u32,
    other: u32,
}

/// `(scenario, counts)` for every `checks.json` under `out`, sorted by scenario. `prefix`: what
/// the suite puts before the scenario in its result folders (`server-` for server runs).
fn collect_results(out: &Path, prefix: Option<&str>) -> Vec<(String, Counts)> {
    let mut files = Vec::new();
    find_checks(out, &mut files);
    let mut results: Vec<(String, Counts)> = files
        .into_iter()
        .filter_map(|file| {
            let rel = file.parent()?.strip_prefix(out).ok()?;
            let rel = rel.to_string_lossy().replace('\\', "/");
            let text = fs::read_to_string(&file).ok()?;
            let name = strip_timestamp(&rel);
            let name = prefix.and_then(|p| name.strip_prefix(p)).unwrap_or(name);
            Some((name.to_owned(), count_statuses(&text)))
        })
        .collect();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    results
}

fn find_checks(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            find_checks(&path, out);
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            out.push(path);
        }
    }
}

/// The suite names result folders `<scenario>-<ISO time with : and . as ->`, e.g.
/// `sse-retry-2026-12-02T16-27-27-113Z`.
fn strip_timestamp(dir: &str) -> &str {
    const LEN: usize = "-2026-12-02T16-27-27-113Z".len();
    if dir.len() > LEN && dir.ends_with('Z') && dir.is_char_boundary(dir.len() - LEN) {
        let (name, stamp) = dir.split_at(dir.len() - LEN);
        if stamp.starts_with('-') && stamp.as_bytes()[11] == b'T' {
            return name;
        }
    }
    dir
}

/// Counts the `"status"` members of the top-level check objects of a `checks.json` array
/// (xtask has no JSON dependency: a small scanner that tracks nesting and strings).
fn count_statuses(json: &str) -> Counts {
    let mut counts = Counts::default();
    let bytes = json.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    // The last string read at depth 2 and whether a ':' followed it (it was a key).
    let mut last_key: Option<String> = None;
    let mut after_colon = false;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => {
                depth += 1;
                last_key = None;
                after_colon = false;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                last_key = None;
                after_colon = false;
            }
            b':' => after_colon = true,
            b',' => {
                last_key = None;
                after_colon = false;
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let text = json.get(start..j.min(bytes.len())).unwrap_or("");
                if depth == 2 {
                    if after_colon {
                        if last_key.as_deref() == Some("status") {
                            match text {
                                "SUCCESS" => counts.success += 1,
                                "FAILURE" => counts.failure += 1,
                                "WARNING" => counts.warning += 1,
                                _ => counts.other += 1,
                            }
                        }
                        last_key = None;
                        after_colon = false;
                    } else {
                        last_key = Some(text.to_owned());
                    }
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    counts
}

/// One line per scenario; returns the short summary for the CI table.
fn print_summary(
    results: &[(String, Counts)],
    expected: &[String],
    vacuous_ones: &[&str],
) -> String {
    println!();
    println!(
        "{:<44} {:<14} {:>7} {:>7} {:>7} {:>7}",
        "scenario", "result", "success", "failure", "warning", "info"
    );
    println!("{}", "-".repeat(92));
    let (mut passed, mut expected_fail, mut unexpected, mut stale, mut vacuous) = (0, 0, 0, 0, 0);
    for (name, c) in results {
        let failing = c.failure > 0 || c.warning > 0;
        let listed = expected.iter().any(|e| e == name);
        let result = match (failing, listed) {
            (true, true) => {
                expected_fail += 1;
                "expected-fail"
            }
            (true, false) => {
                unexpected += 1;
                "FAIL"
            }
            (false, true) => {
                stale += 1;
                "STALE-BASELINE"
            }
            (false, false) if c.success == 0 || vacuous_ones.contains(&name.as_str()) => {
                vacuous += 1;
                "pass(vacuous)"
            }
            (false, false) => {
                passed += 1;
                "pass"
            }
        };
        println!(
            "{:<44} {:<14} {:>7} {:>7} {:>7} {:>7}",
            name, result, c.success, c.failure, c.warning, c.other
        );
    }
    println!("{}", "-".repeat(92));
    let mut summary = format!("{passed} passed, {expected_fail} expected failures");
    if vacuous > 0 {
        summary.push_str(&format!(", {vacuous} vacuous passes"));
    }
    if unexpected > 0 {
        summary.push_str(&format!(", {unexpected} FAILED"));
    }
    if stale > 0 {
        summary.push_str(&format!(", {stale} stale baseline entries"));
    }
    let total = results.iter().fold(Counts::default(), |mut sum, (_, c)| {
        sum.success += c.success;
        sum.failure += c.failure;
        sum.warning += c.warning;
        sum.other += c.other;
        sum
    });
    summary.push_str(&format!(
        " ({} scenarios; checks: {} success, {} failure, {} warning)",
        results.len(),
        total.success,
        total.failure,
        total.warning
    ));
    if results.is_empty() {
        summary = "no checks.json found".to_owned();
    }
    println!("conformance: {summary}");
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_top_level_statuses() {
        let json = r#"[
  {"id": "a", "status": "SUCCESS", "details": {"status": "FAILURE", "body": "x\"status\": \"WARNING\""}},
  {"id": "b", "name": "status", "status": "WARNING"},
  {"id": "c", "status": "INFO", "details": {"list": [{"status": "FAILURE"}]}},
  {"id": "d", "status": "FAILURE"}
]"#;
        assert_eq!(
            count_statuses(json),
            Counts {
                success: 1,
                failure: 1,
                warning: 1,
                other: 1
            }
        );
    }

    #[test]
    fn timestamps_are_stripped_from_result_folders() {
        assert_eq!(
            strip_timestamp("sse-retry-2026-12-02T16-27-27-113Z"),
            "sse-retry"
        );
        assert_eq!(
            strip_timestamp("auth/metadata-var1-2026-12-02T16-27-27-113Z"),
            "auth/metadata-var1"
        );
        assert_eq!(strip_timestamp("initialize"), "initialize");
    }

    #[test]
    fn baseline_entries_are_read_per_section() {
        let dir = std::env::temp_dir().join(format!("xtask-baseline-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("b.yml");
        fs::write(
            &file,
            "# c\nserver:\n  - s1\nclient:\n  # group\n  - auth/a   # why\n  - \"b\"\n",
        )
        .unwrap();
        assert_eq!(read_baseline(&file, "client"), vec!["auth/a", "b"]);
        assert_eq!(read_baseline(&file, "server"), vec!["s1"]);
        fs::write(
            &file,
            "server:\n  - tasks-a   # why\n  - http-b:check-1\n  - http-b:check-2\nclient: []\n",
        )
        .unwrap();
        assert_eq!(read_baseline(&file, "server"), vec!["tasks-a", "http-b"]);
        assert!(read_baseline(&file, "client").is_empty());
        let _ = fs::remove_dir_all(dir);
    }
}
