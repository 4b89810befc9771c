//! One catalog of tools (and prompts) across servers, under qualified names.
//!
//! Order is stable: servers in configuration order, each server's entries in the order the server
//! listed them — so the tool definitions handed to a model keep the same bytes across turns while
//! nothing changes (prompt-cache prefixes survive).

use std::collections::HashMap;

use mcp_core::types::{Prompt, Tool};

use crate::naming::qualify_all;

/// A tool as the harness sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogTool {
    /// `server__tool`, unique in the catalog, at most 64 characters of `[A-Za-z0-9_-]`.
    pub qualified_name: String,
    /// The configured server name.
    pub server: String,
    /// The tool as the server described it (its `name` is the one used on the wire).
    pub tool: Tool,
}

/// A prompt as the harness sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogPrompt {
    /// `server__prompt`, unique among prompts.
    pub qualified_name: String,
    /// The configured server name.
    pub server: String,
    /// The prompt as the server described it.
    pub prompt: Prompt,
}

/// Entries under qualified names with a lookup index.
#[derive(Debug, Clone)]
pub struct Catalog<T> {
    entries: Vec<T>,
    /// By qualified name; foldhash (seeded per process), as the metrics' series: a lookup is on
    /// every call's path.
    index: HashMap<String, usize, foldhash::fast::RandomState>,
}

impl<T> Default for Catalog<T> {
    fn default() -> Self {
        Catalog {
            entries: Vec::new(),
            index: HashMap::default(),
        }
    }
}

/// Something with a server and an original name, that can carry a qualified name.
pub trait CatalogEntry {
    /// The configured server name.
    fn server(&self) -> &str;
    /// The name on the wire.
    fn original_name(&self) -> &str;
    /// The qualified name.
    fn qualified_name(&self) -> &str;
    /// Sets the qualified name.
    fn set_qualified_name(&mut self, name: String);
}

impl CatalogEntry for CatalogTool {
    fn server(&self) -> &str {
        &self.server
    }
    fn original_name(&self) -> &str {
        &self.tool.name
    }
    fn qualified_name(&self) -> &str {
        &self.qualified_name
    }
    fn set_qualified_name(&mut self, name: String) {
        self.qualified_name = name;
    }
}

impl CatalogEntry for CatalogPrompt {
    fn server(&self) -> &str {
        &self.server
    }
    fn original_name(&self) -> &str {
        &self.prompt.name
    }
    fn qualified_name(&self) -> &str {
        &self.qualified_name
    }
    fn set_qualified_name(&mut self, name: String) {
        self.qualified_name = name;
    }
}

impl<T: CatalogEntry> Catalog<T> {
    /// Builds the catalog from entries in their stable order, assigning qualified names.
    pub fn build(mut entries: Vec<T>) -> Self {
        let names = qualify_all(entries.iter().map(|e| (e.server(), e.original_name())));
        let mut index = HashMap::with_capacity_and_hasher(
            entries.len(),
            foldhash::fast::RandomState::default(),
        );
        let mut kept = Vec::with_capacity(entries.len());
        for (mut entry, name) in entries.drain(..).zip(names) {
            // The same (server, name) twice (a buggy server): keep the first.
            if index.contains_key(&name) {
                continue;
            }
            index.insert(name.clone(), kept.len());
            entry.set_qualified_name(name);
            kept.push(entry);
        }
        Catalog {
            entries: kept,
            index,
        }
    }

    /// Every entry, in stable order.
    pub fn entries(&self) -> &[T] {
        &self.entries
    }

    /// The entry with this qualified name.
    pub fn get(&self, qualified_name: &str) -> Option<&T> {
        self.index.get(qualified_name).map(|&i| &self.entries[i])
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// What changed between two tool catalogs, by qualified name (each list in catalog order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogChange {
    /// New tools.
    pub added: Vec<String>,
    /// Tools that are gone.
    pub removed: Vec<String>,
    /// Tools whose definition (description, schema, annotations, …) changed.
    pub changed: Vec<String>,
}

impl CatalogChange {
    /// The difference from `old` to `new`.
    pub fn between(old: &Catalog<CatalogTool>, new: &Catalog<CatalogTool>) -> CatalogChange {
        let (added, removed, changed) = diff(
            old.entries(),
            new.entries(),
            |entry| entry.qualified_name.clone(),
            |a, b| a.tool == b.tool,
        );
        CatalogChange {
            added,
            removed,
            changed,
        }
    }

    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Which of a server's lists changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// Its prompts (named by qualified name, `server__prompt`).
    Prompts,
    /// Its resources (named by URI).
    Resources,
    /// Its resource templates (named by URI template).
    ResourceTemplates,
}

/// What changed in one server's prompt or resource list when it was listed again (after a
/// `list_changed` or a new session). Tool changes are [`CatalogChange`]s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListChange {
    /// The configured server name.
    pub server: String,
    /// Which list.
    pub kind: ListKind,
    /// New entries, in the server's order.
    pub added: Vec<String>,
    /// Entries that are gone.
    pub removed: Vec<String>,
    /// Entries whose description changed.
    pub changed: Vec<String>,
}

impl ListChange {
    /// The difference between two lists of one server, entries named by `key`.
    pub(crate) fn between<T: PartialEq>(
        server: &str,
        kind: ListKind,
        old: &[T],
        new: &[T],
        key: impl Fn(&T) -> String,
    ) -> ListChange {
        let (added, removed, changed) = diff(old, new, key, |a, b| a == b);
        ListChange {
            server: server.to_owned(),
            kind,
            added,
            removed,
            changed,
        }
    }

    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Added, removed and changed entries from `old` to `new`, by `key` (added and changed in
/// `new`'s order, removed in `old`'s).
fn diff<T, K: AsRef<str>>(
    old: &[T],
    new: &[T],
    key: impl Fn(&T) -> K,
    same: impl Fn(&T, &T) -> bool,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let before: HashMap<String, &T> = old
        .iter()
        .map(|entry| (key(entry).as_ref().to_owned(), entry))
        .collect();
    let mut seen = std::collections::HashSet::with_capacity(new.len());
    let (mut added, mut changed) = (Vec::new(), Vec::new());
    for entry in new {
        let name = key(entry).as_ref().to_owned();
        match before.get(&name) {
            None => added.push(name.clone()),
            Some(previous) if !same(previous, entry) => changed.push(name.clone()),
            Some(_) => {}
        }
        seen.insert(name);
    }
    let removed = old
        .iter()
        .map(|entry| key(entry).as_ref().to_owned())
        .filter(|name| !seen.contains(name))
        .collect();
    (added, removed, changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_lists_added_removed_and_changed_tools() {
        let old = Catalog::build(vec![tool("a", "x"), tool("a", "y"), tool("b", "z")]);
        let mut y = tool("a", "y");
        y.tool.description = Some("now documented".into());
        let new = Catalog::build(vec![tool("a", "x"), y, tool("b", "w")]);
        let change = CatalogChange::between(&old, &new);
        assert_eq!(
            change,
            CatalogChange {
                added: vec!["b__w".into()],
                removed: vec!["b__z".into()],
                changed: vec!["a__y".into()],
            }
        );
        assert!(CatalogChange::between(&new, &new).is_empty());
    }

    #[test]
    fn a_list_change_names_entries_by_key() {
        let old = vec![("a", 1), ("b", 2), ("c", 3)];
        let new = vec![("d", 4), ("b", 5), ("a", 1)];
        let change = ListChange::between("s", ListKind::Resources, &old, &new, |e| e.0.to_owned());
        assert_eq!(change.added, ["d"]);
        assert_eq!(change.changed, ["b"]);
        assert_eq!(change.removed, ["c"]);
        assert!(
            ListChange::between("s", ListKind::Prompts, &old, &old, |e| e.0.to_owned()).is_empty()
        );
    }

    fn tool(server: &str, name: &str) -> CatalogTool {
        CatalogTool {
            qualified_name: String::new(),
            server: server.into(),
            tool: serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}}))
                .unwrap(),
        }
    }

    #[test]
    fn builds_qualified_names_in_stable_order() {
        let catalog = Catalog::build(vec![tool("b", "x"), tool("a", "y"), tool("b", "x")]);
        let names: Vec<&str> = catalog
            .entries()
            .iter()
            .map(|t| t.qualified_name.as_str())
            .collect();
        assert_eq!(names, ["b__x", "a__y"]);
        assert_eq!(catalog.get("a__y").unwrap().tool.name, "y");
        assert!(catalog.get("nope").is_none());
    }
}
