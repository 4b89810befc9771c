//! The layering rules of ARCHITECTURE.md, checked against the manifests (a tidy test, as
//! rust-analyzer's `xtask` has): the table between `<!-- layering-table -->` markers must say
//! exactly which crates of the workspace each member depends on, and the rules hold for what
//! the manifests say. `cargo test -p xtask` runs the checks; nothing here runs in `cargo xtask`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A member's normal dependencies on crates of the workspace, optional and target-specific
/// ones included, dev- and build-dependencies left out.
pub type Dependencies = BTreeMap<String, BTreeSet<String>>;

/// The workspace's root (this crate's parent).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The members listed in the root manifest's `members = [...]` (a line of its own that starts
/// with `members`, so `default-members` or a comment is not read instead).
pub fn members(root_manifest: &str) -> Result<Vec<String>, String> {
    let line = root_manifest
        .lines()
        .scan(0, |offset, line| {
            let at = *offset;
            *offset += line.len() + 1;
            Some((at, line))
        })
        .find(|(_, line)| {
            let line = line.trim_start();
            line.strip_prefix("members")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|(at, _)| at)
        .ok_or("the root Cargo.toml has no `members = [...]`")?;
    let start = root_manifest[line..]
        .find('[')
        .map(|j| line + j + 1)
        .ok_or("the root Cargo.toml's `members` has no list")?;
    let end = root_manifest[start..]
        .find(']')
        .map(|j| start + j)
        .ok_or("the root Cargo.toml's `members` list is not closed")?;
    Ok(root_manifest[start..end]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect())
}

/// Whether a `[section]` header names normal dependencies (`[dependencies]`,
/// `[target.'cfg(…)'.dependencies]`); a sub-table `[dependencies.name]` returns its name.
fn dependency_section(header: &str) -> Option<Option<&str>> {
    let header = header.trim();
    let rest = match header.strip_prefix("target.") {
        // `target.'cfg(unix)'.dependencies…`: the part after the target's quoted name.
        Some(target) => target
            .rsplit_once("'.")
            .or_else(|| target.rsplit_once("\"."))
            .map(|(_, r)| r)?,
        None => header,
    };
    let rest = rest.strip_prefix("dependencies")?;
    match rest.strip_prefix('.') {
        Some(name) => Some(Some(name.trim_matches('"'))),
        None if rest.is_empty() => Some(None),
        None => None,
    }
}

/// The workspace crates among a manifest's normal dependencies: the keys of the dependency
/// sections (`name = …`, `name.workspace = true`, `[dependencies.name]`), or the `package` a key
/// renames, that are members.
pub fn workspace_dependencies(manifest: &str, members: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    // In a `[dependencies.name]` sub-table: its name (a `package = …` line there renames it).
    let mut section: Option<Option<String>> = None;
    for line in manifest.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = dependency_section(header).map(|sub| sub.map(str::to_owned));
            if let Some(Some(name)) = &section {
                found.insert(name.clone());
            }
            continue;
        }
        let Some(sub_table) = &section else {
            continue;
        };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = line
            .split(|c: char| c == '=' || c == '.' || c.is_whitespace())
            .next()
            .unwrap_or_default()
            .trim_matches('"');
        match sub_table {
            Some(name) if key == "package" => {
                found.remove(name);
                found.insert(package_of(line).unwrap_or_default().to_owned());
            }
            Some(_) => {}
            None => {
                found.insert(package_of(line).unwrap_or(key).to_owned());
            }
        }
    }
    found.retain(|name| members.contains(name));
    found
}

/// The value of a `package = "…"` in `line` (`foo = { package = "bar", … }`, or the line
/// `package = "bar"` of a sub-table).
fn package_of(line: &str) -> Option<&str> {
    let at = line.find("package")?;
    let rest = line[at + "package".len()..]
        .trim_start()
        .strip_prefix('=')?;
    let rest = rest.trim_start().strip_prefix('"')?;
    rest.split('"').next()
}

/// What the manifests say.
pub fn from_manifests(root: &Path) -> Result<Dependencies, String> {
    let read = |path: PathBuf| {
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let members = members(&read(root.join("Cargo.toml"))?)?;
    let names: BTreeSet<String> = members.iter().cloned().collect();
    members
        .iter()
        .map(|member| {
            let manifest = read(root.join(member).join("Cargo.toml"))?;
            Ok((member.clone(), workspace_dependencies(&manifest, &names)))
        })
        .collect()
}

/// What the table of ARCHITECTURE.md says: rows `| \`crate\` | \`dep\`, \`dep\` |` (`—` for
/// none) between the markers.
pub fn from_architecture(text: &str) -> Result<Dependencies, String> {
    let start = text
        .find("<!-- layering-table -->")
        .ok_or("ARCHITECTURE.md has no `<!-- layering-table -->` marker")?;
    let end = text
        .find("<!-- /layering-table -->")
        .ok_or("ARCHITECTURE.md has no `<!-- /layering-table -->` marker")?;
    let mut layers = Dependencies::new();
    for line in text[start..end].lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [name, depends_on] = cells[..] else {
            return Err(format!(
                "a row of the layering table is not two cells: {line}"
            ));
        };
        let name = name.trim_matches('`').to_owned();
        let dependencies = depends_on
            .split(',')
            .map(|d| d.trim().trim_matches('`').to_owned())
            .filter(|d| !d.is_empty() && d != "—")
            .collect();
        if layers.insert(name.clone(), dependencies).is_some() {
            return Err(format!("the layering table has two rows for {name}"));
        }
    }
    Ok(layers)
}

/// The rules of ARCHITECTURE.md's "Layering rules" that the manifests must keep; each broken
/// rule is one line.
pub fn broken_rules(layers: &Dependencies) -> Vec<String> {
    let mut broken = Vec::new();
    // A rule about a crate that is not a member (renamed, removed) is a broken rule too.
    let deps = |name: &str, broken: &mut Vec<String>| match layers.get(name) {
        Some(deps) => deps.clone(),
        None => {
            broken.push(format!(
                "a layering rule names {name}, which is not a member"
            ));
            BTreeSet::new()
        }
    };
    let only = |name: &str, allowed: &[&str], broken: &mut Vec<String>| {
        for dep in deps(name, broken) {
            if !allowed.contains(&dep.as_str()) {
                broken.push(format!(
                    "{name} depends on {dep}; it may depend on {} only",
                    if allowed.is_empty() {
                        "no crate of the workspace".to_owned()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
    };
    only("mcp-core", &[], &mut broken);
    // The fixture is a second reading of the specification: it knows no crate of the client.
    only("mcp-fixture", &[], &mut broken);
    only("mcp-testkit", &["mcp-fixture"], &mut broken);
    only("mcp-session", &["mcp-core"], &mut broken);
    only("mcp-wire", &["mcp-core"], &mut broken);
    for name in layers.keys() {
        if name.starts_with("mcp-transport-") && name != "mcp-transport-contract" {
            only(name, &["mcp-core", "mcp-wire"], &mut broken);
        }
    }
    for name in ["mcp-resilience", "mcp-metrics"] {
        only(name, &["mcp-core"], &mut broken);
    }
    // The OAuth crate implements the transports' credentials seam, and knows nothing else of them.
    only("mcp-auth", &["mcp-core", "mcp-wire"], &mut broken);
    // Extensions: on the core, and on the session only where they answer through its handler.
    only("mcp-skills", &["mcp-core"], &mut broken);
    only("mcp-tasks", &["mcp-core", "mcp-session"], &mut broken);
    for name in ["mcp-pool", "mcp-resources"] {
        only(name, &["mcp-core", "mcp-session"], &mut broken);
    }
    only("mcp-fleet", &["mcp-auth", "mcp-resilience"], &mut broken);
    // `mcph` composes through the facade (auth, the fleet store and the gRPC bridge are its
    // re-exports), plus the core types it prints and the stdio fixture it embeds.
    only(
        "mcp-cli",
        &["mcp-client", "mcp-core", "mcp-fixture", "mcp-gateway"],
        &mut broken,
    );
    // The gateway serves the facade's catalog through an in-process server (upstream servers'
    // requests reach it through the session's handler trait), and renders the metrics
    // snapshot on its panel.
    only(
        "mcp-gateway",
        &[
            "mcp-client",
            "mcp-core",
            "mcp-metrics",
            "mcp-session",
            "mcp-transport-local",
            "mcp-wire",
        ],
        &mut broken,
    );
    // Only the composing crates use the facade, and no published crate depends on a
    // support crate.
    let support = [
        "mcp-bench",
        "mcp-conformance",
        "mcp-transport-contract",
        "xtask",
    ];
    for (name, dependencies) in layers {
        if dependencies.contains("mcp-client")
            && !["mcp-cli", "mcp-bench", "mcp-gateway"].contains(&name.as_str())
        {
            broken.push(format!("{name} depends on the facade (mcp-client)"));
        }
        // The fixture is test support, published for harness authors: no library ships it.
        // `mcph` embeds the stdio fixture (mcp-fixture) as its built-in server, so only the
        // stdio fixture may be a normal dependency of a published crate, of mcp-cli alone; the
        // full testkit (HTTP, OAuth, DPoP, Redis and D-Bus helpers) of support crates only.
        let supporting = support.contains(&name.as_str());
        if dependencies.contains("mcp-testkit") && !supporting {
            broken.push(format!(
                "{name} depends on the testkit (mcp-testkit); only support crates may"
            ));
        }
        if dependencies.contains("mcp-fixture")
            && !supporting
            && !["mcp-cli", "mcp-testkit"].contains(&name.as_str())
        {
            broken.push(format!(
                "{name} depends on the fixture (mcp-fixture); only mcp-cli (its built-in \
                 server), mcp-testkit and support crates may"
            ));
        }
        if !support.contains(&name.as_str()) {
            for dep in dependencies
                .iter()
                .filter(|d| support.contains(&d.as_str()))
            {
                broken.push(format!("{name} depends on the support crate {dep}"));
            }
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_architecture_table_is_what_the_manifests_say() {
        let root = workspace_root();
        let manifests = from_manifests(&root).unwrap();
        let text = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
        let table = from_architecture(&text).unwrap();
        let mut differences = Vec::new();
        for name in manifests
            .keys()
            .chain(table.keys())
            .collect::<BTreeSet<_>>()
        {
            match (manifests.get(name), table.get(name)) {
                (Some(real), Some(said)) if real != said => differences.push(format!(
                    "{name}: the manifest says {real:?}, ARCHITECTURE.md {said:?}"
                )),
                (Some(_), None) => differences.push(format!("{name}: no row in ARCHITECTURE.md")),
                (None, Some(_)) => {
                    differences.push(format!("{name}: a row in ARCHITECTURE.md, not a member"))
                }
                _ => {}
            }
        }
        assert!(differences.is_empty(), "{}", differences.join("\n"));
    }

    #[test]
    fn every_member_is_published_or_says_it_is_not() {
        let root = workspace_root();
        let members = members(&fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
        let mut unaccounted = Vec::new();
        for member in &members {
            let manifest = fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap();
            let private = manifest.lines().any(|l| l.trim() == "publish = false");
            let published = crate::ci::PUBLISHED.contains(&member.as_str());
            if private == published {
                unaccounted.push(format!(
                    "{member} (published: {published}, publish = false: {private})"
                ));
            }
        }
        assert!(
            unaccounted.is_empty(),
            "each member must be in xtask's PUBLISHED list or say `publish = false`, not both \
             nor neither: {unaccounted:?}"
        );
    }

    #[test]
    fn the_manifests_keep_the_layering_rules() {
        let broken = broken_rules(&from_manifests(&workspace_root()).unwrap());
        assert!(broken.is_empty(), "{}", broken.join("\n"));
    }

    #[test]
    fn reads_dependencies_of_every_form() {
        let members: BTreeSet<String> = [
            "mcp-core",
            "mcp-session",
            "mcp-pool",
            "mcp-auth",
            "mcp-fleet",
            "mcp-metrics",
            "mcp-client",
        ]
        .map(String::from)
        .into();
        let manifest = "\
[package]
name = \"x\"

[dependencies]
mcp-core.workspace = true
mcp-pool = { workspace = true, optional = true }
metrics = { package = \"mcp-metrics\", path = \"../mcp-metrics\" }
tokio = \"1\"

[target.'cfg(unix)'.dependencies]
\"mcp-auth\" = { path = \"../mcp-auth\" }

[dependencies.mcp-fleet]
workspace = true

[dependencies.facade]
package = \"mcp-client\"
path = \"../mcp-client\"

[dev-dependencies]
mcp-session.workspace = true

[dev-dependencies.mcp-session]
workspace = true
";
        let found = workspace_dependencies(manifest, &members);
        let expected = [
            "mcp-auth",
            "mcp-client",
            "mcp-core",
            "mcp-fleet",
            "mcp-metrics",
            "mcp-pool",
        ];
        assert_eq!(found, expected.map(String::from).into());
    }

    #[test]
    fn reads_the_members_line_not_another() {
        let root = "\
# members = [\"a comment\"]
[workspace]
default-members = [\"mcp-cli\"]
members = [\"mcp-core\", \"mcp-cli\"]
";
        assert_eq!(members(root).unwrap(), ["mcp-core", "mcp-cli"]);
    }

    #[test]
    fn a_broken_rule_is_named() {
        // Every crate a rule names, depending on nothing: no rule is broken.
        let mut layers: Dependencies = [
            "mcp-cli",
            "mcp-core",
            "mcp-fixture",
            "mcp-testkit",
            "mcp-session",
            "mcp-wire",
            "mcp-resilience",
            "mcp-metrics",
            "mcp-auth",
            "mcp-skills",
            "mcp-tasks",
            "mcp-pool",
            "mcp-resources",
            "mcp-fleet",
            "mcp-gateway",
        ]
        .into_iter()
        .map(|name| (name.to_owned(), BTreeSet::new()))
        .collect();
        assert_eq!(broken_rules(&layers), Vec::<String>::new());
        layers.insert(
            "mcp-transport-ws".into(),
            ["mcp-core", "mcp-session"].map(String::from).into(),
        );
        layers.insert("mcp-pool".into(), ["mcp-client"].map(String::from).into());
        layers.insert(
            "mcp-skills".into(),
            ["mcp-transport-contract"].map(String::from).into(),
        );
        layers.insert(
            "mcp-tasks".into(),
            ["mcp-core", "mcp-pool"].map(String::from).into(),
        );
        layers.remove("mcp-fleet");
        layers.insert(
            "mcp-cli".into(),
            ["mcp-client", "mcp-fixture", "mcp-auth"]
                .map(String::from)
                .into(),
        );
        layers.insert(
            "mcp-client".into(),
            ["mcp-testkit"].map(String::from).into(),
        );
        layers.insert(
            "mcp-resources".into(),
            ["mcp-core", "mcp-fixture"].map(String::from).into(),
        );
        let broken = broken_rules(&layers);
        assert_eq!(
            broken,
            vec![
                "mcp-transport-ws depends on mcp-session; it may depend on mcp-core, mcp-wire only",
                "mcp-skills depends on mcp-transport-contract; it may depend on mcp-core only",
                "mcp-tasks depends on mcp-pool; it may depend on mcp-core, mcp-session only",
                "mcp-pool depends on mcp-client; it may depend on mcp-core, mcp-session only",
                "mcp-resources depends on mcp-fixture; it may depend on mcp-core, mcp-session only",
                "a layering rule names mcp-fleet, which is not a member",
                "mcp-cli depends on mcp-auth; it may depend on mcp-client, mcp-core, mcp-fixture, mcp-gateway only",
                "mcp-client depends on the testkit (mcp-testkit); only support crates may",
                "mcp-pool depends on the facade (mcp-client)",
                "mcp-resources depends on the fixture (mcp-fixture); only mcp-cli (its built-in \
                 server), mcp-testkit and support crates may",
                "mcp-skills depends on the support crate mcp-transport-contract",
            ]
        );
    }

    #[test]
    fn reads_the_table() {
        let text = "intro\n<!-- layering-table -->\n| crate | depends on |\n|---|---|\n| `mcp-core` | — |\n| `mcp-pool` | `mcp-core`, `mcp-session` |\n<!-- /layering-table -->\n";
        let table = from_architecture(text).unwrap();
        assert_eq!(table["mcp-core"], BTreeSet::new());
        assert_eq!(
            table["mcp-pool"],
            ["mcp-core", "mcp-session"].map(String::from).into()
        );
    }
}
