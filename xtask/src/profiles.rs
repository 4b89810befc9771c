//! The profile checks (R-PROFILE): `mcp-client`'s `minimal` profile must keep HTTP, TLS, gRPC,
//! OAuth, pool and cache crates out of its dependency tree, and every profile must build and pass
//! its tests.

use std::path::Path;
use std::process::Command;

use crate::shell;

/// The profiles, smallest first.
pub const PROFILES: &[&str] = &["minimal", "professional", "enterprise"];

/// Crates that must not appear in the `minimal` tree (normal dependencies).
pub const FORBIDDEN_IN_MINIMAL: &[&str] = &[
    "reqwest",
    "hyper",
    "rustls",
    "openssl",
    "tonic",
    "prost",
    "tokio-tungstenite",
    "oauth2",
    "keyring",
    "keyring-core",
    "mcp-auth",
    "zbus",
    "bb8",
    "moka",
    "governor",
];

/// Crate names (without versions) in a `cargo tree --prefix none --format {p}` listing.
pub fn crate_names(tree: &str) -> Vec<&str> {
    tree.lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect()
}

/// Forbidden crates found in a tree listing.
pub fn forbidden_in(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = crate_names(tree)
        .into_iter()
        .filter(|name| FORBIDDEN_IN_MINIMAL.contains(name))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

fn cargo(root: &Path, args: &[&str]) -> Command {
    shell::command(shell::cargo(), args, root)
}

/// Runs every check; returns (ok, note for the summary).
pub fn check(root: &Path) -> (bool, String) {
    let mut failures = Vec::new();
    let tree = cargo(
        root,
        &[
            "tree",
            "-p",
            "mcp-client",
            "-e",
            "normal",
            "--no-default-features",
            "--features",
            "minimal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ],
    )
    .output();
    match tree {
        Ok(out) if out.status.success() => {
            let listing = String::from_utf8_lossy(&out.stdout);
            let found = forbidden_in(&listing);
            let count = crate_names(&listing).len();
            if found.is_empty() {
                eprintln!(
                    "profiles: minimal tree has {count} entries and none of: {}",
                    FORBIDDEN_IN_MINIMAL.join(", ")
                );
            } else {
                eprintln!(
                    "profiles: the minimal tree contains forbidden crates: {}",
                    found.join(", ")
                );
                failures.push(format!("minimal tree has {}", found.join(",")));
            }
        }
        Ok(out) => {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            failures.push("cargo tree failed".to_owned());
        }
        Err(e) => failures.push(format!("cargo tree: {e}")),
    }
    // nextest runs each test in its own process, as the main test step does: tests that
    // install a tracing subscriber do not race other tests' subscribers for the global
    // level filter, as they may when `cargo test` runs them as threads of one process.
    let nextest = cargo(root, &["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    for profile in PROFILES {
        // The workspace test step already runs everything with all features (enterprise, and
        // the gRPC bridge, which is in no profile):
        // here the smaller profiles run their tests, and every profile must build on its own.
        let verb: &[&str] = match (*profile == "enterprise", nextest) {
            (true, _) => &["build"],
            (false, true) => &["nextest", "run"],
            (false, false) => &["test"],
        };
        let mut args = verb.to_vec();
        args.extend([
            "-p",
            "mcp-client",
            "--no-default-features",
            "--features",
            profile,
        ]);
        let verb = verb.join(" ");
        let mut cmd = cargo(root, &args);
        match shell::run(&mut cmd) {
            Ok(status) if status.success() => {}
            _ => failures.push(format!("{profile} {verb} failed")),
        }
    }
    if failures.is_empty() {
        (true, "minimal tree clean; 3 profiles ok".to_owned())
    } else {
        (false, failures.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_forbidden_crates_by_exact_name() {
        let tree = "mcp-client v0.1.0 (/x)\nserde v1.0.0\nhyper v1.0.0\nhyper-util v0.1.0\nrustls v0.23.0\nrustls v0.23.0\n";
        assert_eq!(
            forbidden_in(tree),
            vec!["hyper".to_owned(), "rustls".to_owned()]
        );
        assert!(forbidden_in("mcp-core v0.1.0\ntokio v1.0.0\n").is_empty());
    }
}
