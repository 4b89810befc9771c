//! Where a field is in the file: the line and column a [`ConfigError`](super::ConfigError) about
//! a server or field points at.
//!
//! Errors name a field by its path (`endpoints[1].region`, `env.GITHUB_TOKEN`; relative to the
//! server when there is one). [`Locator::position`] follows that path through the spanned mirror
//! of the file (`spans.rs`, built on the first error, so files that load pay nothing) and answers
//! with:
//! - where the value at the path starts, when it is there;
//! - the server's key, when the error is about the whole entry (no field);
//! - otherwise, the field being absent, the closest enclosing entry that exists: its key, or
//!   where its value starts when it has none (an array element, the whole file).
//!
//! Positions are in the text the user wrote (JSONC comments are blanked without moving a byte),
//! 1-based, columns counted in characters, as syntax errors' are. Only offsets are computed: no
//! text of the file is ever copied into an error.

use std::cell::OnceCell;

use super::node::{line_column, strip_jsonc};
use super::spans::{json_spans, toml_spans, Member, SpanContents, SpanNode};

/// The syntax of the text a [`Locator`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    /// JSON, with JSONC comments and trailing commas.
    Json,
    Toml,
}

/// Finds fields in the text a tree was parsed from.
pub(crate) struct Locator<'t> {
    text: &'t str,
    syntax: Syntax,
    /// The spanned mirror, built on the first call (`None`: the text could not be read again,
    /// so errors go without a position).
    tree: OnceCell<Option<SpanNode>>,
}

impl<'t> Locator<'t> {
    /// A locator for JSON (JSONC) text.
    pub(crate) fn json(text: &'t str) -> Self {
        Locator {
            text,
            syntax: Syntax::Json,
            tree: OnceCell::new(),
        }
    }

    /// A locator for TOML text.
    pub(crate) fn toml(text: &'t str) -> Self {
        Locator {
            text,
            syntax: Syntax::Toml,
            tree: OnceCell::new(),
        }
    }

    /// The 1-based (line, column) for an error about `field` of `server`, whose entry sits under
    /// the keys `servers` (`["mcpServers"]`, `["mcp", "servers"]`); with no server, `field` is
    /// read from the top of the file. `None` when the text cannot be read.
    pub(crate) fn position(
        &self,
        servers: &[&str],
        server: Option<&str>,
        field: &str,
    ) -> Option<(usize, usize)> {
        let tree = self
            .tree
            .get_or_init(|| match self.syntax {
                Syntax::Json => json_spans(&strip_jsonc(self.text)),
                Syntax::Toml => toml_spans(self.text),
            })
            .as_ref()?;
        Some(line_column(self.text, offset(tree, servers, server, field)))
    }
}

/// How far a path was followed: the last node reached, the key that named it (none for an
/// array element or the root), how many steps of the field led there, and whether that was all
/// of it.
struct Reached<'n> {
    node: &'n SpanNode,
    key_start: Option<usize>,
    steps: usize,
    complete: bool,
}

impl Reached<'_> {
    /// The key naming the node, or where the node starts when nothing names it.
    fn named_at(&self) -> usize {
        self.key_start.unwrap_or(self.node.start)
    }
}

/// The byte offset an error about `field` of `server` points at (the rules are the module's).
fn offset(tree: &SpanNode, servers: &[&str], server: Option<&str>, field: &str) -> usize {
    let mut entry = Reached {
        node: tree,
        key_start: None,
        steps: 0,
        complete: true,
    };
    if let Some(server) = server {
        for key in servers.iter().copied().chain([server]) {
            match member(entry.node, key) {
                Some(m) => {
                    entry.node = &m.value;
                    entry.key_start = Some(m.key_start);
                }
                None => return entry.named_at(),
            }
        }
    }
    let reached = follow(entry.node, entry.key_start, field, 0);
    if reached.complete && !field.is_empty() {
        reached.node.start
    } else {
        reached.named_at()
    }
}

fn member<'n>(node: &'n SpanNode, key: &str) -> Option<&'n Member> {
    match &node.contents {
        SpanContents::Object(members) => members.iter().find(|m| m.key == key),
        _ => None,
    }
}

/// Follows the field path `rest` (`pool.min`, `args[2]`, `headers.X.Y`) down from `node`,
/// `steps` steps in. Keys may themselves hold `.` or `[` (a header `X.Y`), so each key of an
/// object that the path starts with is tried, and the path that goes furthest wins.
fn follow<'n>(
    node: &'n SpanNode,
    key_start: Option<usize>,
    rest: &str,
    steps: usize,
) -> Reached<'n> {
    let here = Reached {
        node,
        key_start,
        steps,
        complete: rest.is_empty(),
    };
    if rest.is_empty() {
        return here;
    }
    match &node.contents {
        SpanContents::Object(members) => {
            // The first key of a path stands alone; later ones follow a dot.
            let rest = if steps == 0 {
                rest
            } else {
                match rest.strip_prefix('.') {
                    Some(rest) => rest,
                    None => return here,
                }
            };
            let mut best = here;
            for m in members {
                let Some(after) = rest.strip_prefix(m.key.as_str()) else {
                    continue;
                };
                if !(after.is_empty() || after.starts_with(['.', '['])) {
                    continue;
                }
                let reached = follow(&m.value, Some(m.key_start), after, steps + 1);
                if reached.complete {
                    return reached;
                }
                if reached.steps > best.steps {
                    best = reached;
                }
            }
            best
        }
        SpanContents::Array(items) => {
            match index_step(rest).and_then(|(i, after)| Some((items.get(i)?, after))) {
                Some((item, after)) => follow(item, None, after, steps + 1),
                None => here,
            }
        }
        SpanContents::Scalar => here,
    }
}

/// `[12]…` → (12, `…`).
fn index_step(path: &str) -> Option<(usize, &str)> {
    let (digits, after) = path.strip_prefix('[')?.split_once(']')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE: &[&str] = &["mcpServers"];

    /// A JSONC file with the traps a text walker falls into: braces, brackets, quotes and
    /// comment markers inside strings; comments holding braces and quotes; escapes; trailing
    /// commas; keys holding dots; multi-byte characters before a value on its line.
    const JSONC: &str = r#"{
  // "mcpServers": { "search": { "endpoints": [ "not", "here" ] } }
  /* a block comment with { braces } and "quotes" and ] brackets,
     over two lines */
  "notes": "a string with } and ] and \" and // and /* inside {",
  "mcpServers": {
    "other": { "command": "x", "args": ["{", "}", "[[", "\\", "\"\\\""] },
    "search": {
      "type": "http",
      "endpoints": [
        { "url": "https://eu.example.com/mcp", "region": "eu-west", },
        /* ü { */ { "url": "https://us.example.com/mcp", "region": 5,
          "headers": { "X.Key": "sekrit", "Plain": [[1, [2]], {"a": "}"}] } },
      ],
      "pool": {"min": 5, "max": 2},
    },
    "a.b": { "command": "y" },
  },
  "region": ["eu-west"],
}
"#;

    fn json_at(servers: &[&str], server: Option<&str>, field: &str) -> Option<(usize, usize)> {
        Locator::json(JSONC).position(servers, server, field)
    }

    #[test]
    fn json_values_are_found_past_comments_strings_and_escapes() {
        let search = Some("search");
        let cases: &[(&str, (usize, usize))] = &[
            ("type", (9, 15)),
            ("endpoints", (10, 20)),
            ("endpoints[0]", (11, 9)),
            ("endpoints[0].region", (11, 58)),
            ("endpoints[1]", (12, 19)),
            ("endpoints[1].url", (12, 28)),
            ("endpoints[1].region", (12, 68)),
            ("endpoints[1].headers", (13, 22)),
            ("endpoints[1].headers.X.Key", (13, 33)),
            ("endpoints[1].headers.Plain", (13, 52)),
            ("pool", (15, 15)),
            ("pool.max", (15, 33)),
        ];
        for (field, at) in cases {
            assert_eq!(json_at(CLAUDE, search, field), Some(*at), "{field}");
        }
        assert_eq!(json_at(CLAUDE, Some("other"), "args[4]"), Some((7, 63)));
        assert_eq!(json_at(CLAUDE, Some("a.b"), "command"), Some((17, 25)));
        // From the top of the file.
        assert_eq!(json_at(&[], None, "region"), Some((19, 13)));
        assert_eq!(json_at(&[], None, "mcpServers"), Some((6, 17)));
    }

    #[test]
    fn absent_fields_point_at_the_closest_entry_that_exists() {
        let search = Some("search");
        // The whole entry, or a field it lacks: the server's key.
        assert_eq!(json_at(CLAUDE, search, ""), Some((8, 5)));
        assert_eq!(json_at(CLAUDE, search, "command"), Some((8, 5)));
        // A field of a nested object: that object's key.
        assert_eq!(json_at(CLAUDE, search, "pool.min.x"), Some((15, 16)));
        assert_eq!(json_at(CLAUDE, search, "retry.jitter"), Some((8, 5)));
        assert_eq!(json_at(CLAUDE, search, "pool.nope"), Some((15, 7)));
        // A field of an array element: where the element starts.
        assert_eq!(
            json_at(CLAUDE, search, "endpoints[0].headers"),
            Some((11, 9))
        );
        // An element past the end: the array's key.
        assert_eq!(json_at(CLAUDE, search, "endpoints[7].url"), Some((10, 7)));
        assert_eq!(json_at(CLAUDE, search, "endpoints.url"), Some((10, 7)));
        // No such server, or no such container: the closest that exists.
        assert_eq!(json_at(CLAUDE, Some("nope"), "url"), Some((6, 3)));
        assert_eq!(json_at(&["servers"], search, "url"), Some((1, 1)));
        assert_eq!(json_at(&[], None, "servers"), Some((1, 1)));
        assert_eq!(json_at(&[], None, ""), Some((1, 1)));
    }

    #[test]
    fn keys_holding_dots_and_brackets_are_followed() {
        let text = r#"{"servers": {"s": {"env": {"A": {"C": 1}, "A.B": 2, "C[0]": 3, "": 4}}}}"#;
        let at = |field| Locator::json(text).position(&["servers"], Some("s"), field);
        // `A` leads nowhere (it has no `B`); the key `A.B` does.
        assert_eq!(at("env.A.B"), Some((1, 50)));
        assert_eq!(at("env.A.C"), Some((1, 39)));
        assert_eq!(at("env.C[0]"), Some((1, 61)));
        assert_eq!(at("env."), Some((1, 68)));
        // Only `A` exists of `A.D`: its key.
        assert_eq!(at("env.A.D"), Some((1, 28)));
        // The VS Code settings form: `mcp.servers`.
        let text = "{\"editor.fontSize\": 14,\n \"mcp\": {\"region\": 3, \"servers\": {\"s\": {\"url\": 5}}}}";
        let locator = Locator::json(text);
        assert_eq!(
            locator.position(&["mcp", "servers"], Some("s"), "url"),
            Some((2, 48))
        );
        assert_eq!(locator.position(&[], None, "mcp.region"), Some((2, 20)));
    }

    #[test]
    fn columns_count_characters() {
        let text = "{\"mcpServers\": {\"é\": {\"ü\": 1, /* ✓ */ \"url\": 5}}}";
        assert_eq!(
            Locator::json(text).position(CLAUDE, Some("é"), "url"),
            Some((1, 46))
        );
    }

    const TOML: &str = r#"region = 5
model = "o3" # a comment with [mcp_servers.fake] and "quotes"

[mcp_servers]
dotted.command = "x"
dotted.pool.min = 1
inline = { url = "https://a/mcp", endpoints = [
  { url = "https://b/mcp" },
  { url = "https://c/mcp", region = 1 },
] }
"quoted.name" = { command = "q", args = ["]", "[", 3] }

[mcp_servers.search]
http_headers = { "Authorization" = "Bearer sekrit", "X.Dot" = 1 }

[[mcp_servers.search.endpoints]]
url = "https://eu.example.com/mcp"

[[mcp_servers.search.endpoints]]
region = 7

[mcp_servers.search.rate_limit]
burst = 3
"#;

    fn toml_at(server: Option<&str>, field: &str) -> Option<(usize, usize)> {
        Locator::toml(TOML).position(&["mcp_servers"], server, field)
    }

    #[test]
    fn toml_values_in_every_table_form() {
        let cases: &[(Option<&str>, &str, (usize, usize))] = &[
            (None, "region", (1, 10)),
            (None, "mcp_servers", (4, 1)),
            (Some("dotted"), "command", (5, 18)),
            (Some("dotted"), "pool", (6, 8)),
            (Some("dotted"), "pool.min", (6, 19)),
            (Some("inline"), "endpoints[1].region", (9, 37)),
            (Some("inline"), "endpoints[1]", (9, 3)),
            (Some("quoted.name"), "args[2]", (11, 52)),
            (Some("search"), "http_headers.X.Dot", (14, 63)),
            (Some("search"), "endpoints[0].url", (17, 7)),
            (Some("search"), "endpoints[1].region", (20, 10)),
            (Some("search"), "rate_limit.burst", (23, 9)),
        ];
        for (server, field, at) in cases {
            assert_eq!(toml_at(*server, field), Some(*at), "{server:?} {field}");
        }
    }

    #[test]
    fn toml_absent_fields() {
        // A server from a `[header]`, a dotted key, an inline table: its key.
        assert_eq!(toml_at(Some("search"), ""), Some((13, 14)));
        assert_eq!(toml_at(Some("search"), "command"), Some((13, 14)));
        assert_eq!(toml_at(Some("dotted"), "url"), Some((5, 1)));
        assert_eq!(toml_at(Some("inline"), "command"), Some((7, 1)));
        assert_eq!(toml_at(Some("quoted.name"), "url"), Some((11, 1)));
        // An element of an array of tables: its `[[header]]`.
        assert_eq!(toml_at(Some("search"), "endpoints[1].url"), Some((19, 1)));
        // A table of its own: the key in its header.
        assert_eq!(
            toml_at(Some("search"), "rate_limit.calls_per_sec"),
            Some((22, 21))
        );
    }

    /// Every prefix of every sample, and every sample with any one byte replaced by a character
    /// that matters to a reader: never a panic, and a position within the text when there is one.
    #[test]
    fn never_panics_on_broken_text() {
        let fields: &[(&[&str], Option<&str>, &str)] = &[
            (CLAUDE, Some("search"), "endpoints[1].headers.X.Key"),
            (CLAUDE, Some("search"), "pool.min"),
            (CLAUDE, Some("search"), ""),
            (&["mcp_servers"], Some("search"), "endpoints[1].url"),
            (&["mcp_servers"], Some("inline"), "endpoints[1].region"),
            (&[], None, "region"),
            (&[], None, "[18446744073709551616]"),
            (
                CLAUDE,
                Some("search"),
                "endpoints[99999999999999999999].url",
            ),
        ];
        let check = |text: &str| {
            let lines = text.split('\n').count();
            for locator in [Locator::json(text), Locator::toml(text)] {
                for (servers, server, field) in fields {
                    if let Some((line, column)) = locator.position(servers, *server, field) {
                        assert!(line >= 1 && line <= lines && column >= 1, "{text}");
                    }
                }
            }
        };
        for sample in [JSONC, TOML] {
            for (end, _) in sample.char_indices() {
                check(&sample[..end]);
            }
            check(sample);
            for (i, c) in sample.char_indices().filter(|(_, c)| c.is_ascii()) {
                for replacement in [
                    "{", "}", "[", "]", "\"", "\\", "/", "*", ",", ":", "=", "\n", "é",
                ] {
                    let mut text = sample.to_owned();
                    text.replace_range(i..i + c.len_utf8(), replacement);
                    check(&text);
                }
            }
        }
    }
}
