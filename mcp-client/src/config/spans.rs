//! Where each key and value starts in the source text: a spanned mirror of the parsed tree,
//! built only when an error needs a line (`locate.rs` reads it).
//!
//! [`Node`](super::node::Node) keeps no positions (serde_json tells a `Deserialize` impl no
//! offsets, and files that load never need them), so they come from a second reading of the same
//! text: TOML through the `toml` crate's spanned [`DeTable`], JSON through the small reader
//! below, written by hand because no JSON crate we use reports offsets. It only finds where keys
//! and values start (keys are decoded to be compared; values are skipped, never copied); on text
//! it cannot read it returns `None`, and it never panics.

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// Nesting deeper than this gets no positions (serde_json refuses more than 128 levels anyway);
/// keeps the recursive readers from exhausting the stack on hostile input.
const MAX_DEPTH: usize = 256;

/// A value and the byte offset where it starts (for a TOML table written as a `[header]`, the
/// header; for one made by dotted keys, the first key naming it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpanNode {
    pub start: usize,
    pub contents: SpanContents,
}

/// What a [`SpanNode`] holds: only containers keep their children.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SpanContents {
    Scalar,
    Array(Vec<SpanNode>),
    Object(Vec<Member>),
}

/// An object entry: its key (decoded), where the key starts, and its value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    pub key: String,
    pub key_start: usize,
    pub value: SpanNode,
}

/// The spanned tree of a TOML document; `None` when it does not parse.
pub(crate) fn toml_spans(text: &str) -> Option<SpanNode> {
    let root = DeTable::parse(text).ok()?;
    Some(SpanNode {
        // The document's own span is empty; it starts where the text does.
        start: 0,
        contents: toml_table(root.get_ref(), 0),
    })
}

fn toml_table(table: &DeTable<'_>, depth: usize) -> SpanContents {
    if depth > MAX_DEPTH {
        return SpanContents::Scalar;
    }
    let members = table
        .iter()
        .map(|(key, value)| Member {
            key: key.get_ref().to_string(),
            key_start: key.span().start,
            value: toml_value(value, depth + 1),
        })
        .collect();
    SpanContents::Object(members)
}

fn toml_value(value: &Spanned<DeValue<'_>>, depth: usize) -> SpanNode {
    let contents = match value.get_ref() {
        DeValue::Table(table) => toml_table(table, depth),
        DeValue::Array(items) if depth <= MAX_DEPTH => SpanContents::Array(
            items
                .iter()
                .map(|item| toml_value(item, depth + 1))
                .collect(),
        ),
        _ => SpanContents::Scalar,
    };
    SpanNode {
        start: value.span().start,
        contents,
    }
}

/// The spanned tree of a JSON document. Comments must already be blanked out
/// ([`strip_jsonc`](super::node::strip_jsonc) keeps every byte offset); trailing commas are
/// accepted. `None` when the text is not a complete JSON value.
pub(crate) fn json_spans(text: &str) -> Option<SpanNode> {
    let mut reader = JsonReader { text, at: 0 };
    let root = reader.value(0)?;
    reader.skip_whitespace();
    (reader.at >= text.len()).then_some(root)
}

struct JsonReader<'t> {
    text: &'t str,
    /// Byte offset of the next unread byte. Only ever set to just after an ASCII byte or to the
    /// end, so slicing at it is always on a character boundary.
    at: usize,
}

impl<'t> JsonReader<'t> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    /// Consumes `byte` (after whitespace) or fails.
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_whitespace();
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<SpanNode> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_whitespace();
        let start = self.at;
        let contents = match self.peek()? {
            b'{' => SpanContents::Object(self.members(depth)?),
            b'[' => SpanContents::Array(self.items(depth)?),
            b'"' => {
                self.string()?;
                SpanContents::Scalar
            }
            _ => {
                self.literal()?;
                SpanContents::Scalar
            }
        };
        Some(SpanNode { start, contents })
    }

    /// `{ "key": value, … }` from its `{`; a trailing comma is accepted.
    fn members(&mut self, depth: usize) -> Option<Vec<Member>> {
        self.at += 1;
        let mut members = Vec::new();
        loop {
            self.skip_whitespace();
            if self.peek()? == b'}' {
                self.at += 1;
                return Some(members);
            }
            let key_start = self.at;
            let raw = self.string()?;
            // Decoded (escapes and all) to compare with the tree's keys; a value is never read.
            let key = serde_json::from_str(raw).ok()?;
            self.expect(b':')?;
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_start,
                value,
            });
            self.skip_whitespace();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {}
                _ => return None,
            }
        }
    }

    /// `[ value, … ]` from its `[`; a trailing comma is accepted.
    fn items(&mut self, depth: usize) -> Option<Vec<SpanNode>> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.skip_whitespace();
            if self.peek()? == b']' {
                self.at += 1;
                return Some(items);
            }
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {}
                _ => return None,
            }
        }
    }

    /// A string from its `"`, as written (quotes included); `None` unless it is one.
    fn string(&mut self) -> Option<&'t str> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at;
        let bytes = self.text.as_bytes();
        let mut i = start + 1;
        loop {
            match *bytes.get(i)? {
                // The escaped byte is skipped whatever it is. Landing inside a multi-byte
                // character is harmless: only ASCII bytes are matched, and slices end after `"`.
                b'\\' => i += 2,
                b'"' => break,
                _ => i += 1,
            }
        }
        self.at = i + 1;
        self.text.get(start..self.at)
    }

    /// A number, `true`, `false` or `null`: the bytes up to the next delimiter.
    fn literal(&mut self) -> Option<()> {
        let start = self.at;
        while let Some(b) = self.peek() {
            if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                break;
            }
            // Anything that is not ASCII cannot be part of a literal.
            if !b.is_ascii() || matches!(b, b'{' | b'[' | b'"' | b':') {
                return None;
            }
            self.at += 1;
        }
        (self.at > start).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key in the tree with the text at its key and at its value.
    fn flatten(text: &str, node: &SpanNode) -> Vec<(String, String)> {
        fn walk(text: &str, node: &SpanNode, path: &str, out: &mut Vec<(String, String)>) {
            match &node.contents {
                SpanContents::Scalar => {}
                SpanContents::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let path = format!("{path}[{i}]");
                        out.push((path.clone(), text[item.start..].chars().take(6).collect()));
                        walk(text, item, &path, out);
                    }
                }
                SpanContents::Object(members) => {
                    for m in members {
                        let path = format!("{path}/{}", m.key);
                        let key: String = text[m.key_start..].chars().take(4).collect();
                        let value: String = text[m.value.start..].chars().take(6).collect();
                        out.push((path.clone(), format!("{key}→{value}")));
                        walk(text, &m.value, &path, out);
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(text, node, "", &mut out);
        out
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn json_keys_and_values_start_where_written() {
        let text = r#" {"a": [1, {"b}": "x\"{"}], "c\u0064": null, "é": -2.5e3,}"#;
        let tree = json_spans(text).unwrap();
        assert_eq!(tree.start, 1);
        assert_eq!(
            flatten(text, &tree),
            pairs(&[
                ("/a", "\"a\":→[1, {\""),
                ("/a[0]", "1, {\"b"),
                ("/a[1]", "{\"b}\":"),
                ("/a[1]/b}", "\"b}\"→\"x\\\"{\""),
                ("/cd", "\"c\\u→null, "),
                ("/é", "\"é\":→-2.5e3"),
            ])
        );
    }

    #[test]
    fn json_refuses_what_is_not_json() {
        for text in [
            "",
            "{",
            "{\"a\" 1}",
            "{\"a\": }",
            "[1 2]",
            "{a: 1}",
            "\"open",
            "{\"a\": 1} x",
            "{\"\\é\": 1}",
            "[tru\u{e9}]",
        ] {
            assert_eq!(json_spans(text), None, "{text}");
        }
    }

    #[test]
    fn json_nesting_is_bounded() {
        let deep = "[".repeat(100_000);
        assert_eq!(json_spans(&deep), None);
        let ok = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(json_spans(&ok).is_some());
    }

    #[test]
    fn toml_tables_of_every_form() {
        let text = "top = 1\n\
                    [s.x]\n\
                    a = { b = [1, { c = 2 }] }\n\
                    d.e = 3\n\
                    [[s.x.list]]\n\
                    f = 4\n\
                    [[s.x.list]]\n\
                    \"g.h\" = 5\n";
        let tree = toml_spans(text).unwrap();
        let mut seen = flatten(text, &tree);
        seen.sort();
        assert_eq!(
            seen,
            pairs(&[
                ("/s", "s.x]→s.x]\na"),
                ("/s/x", "x]\na→[s.x]\n"),
                ("/s/x/a", "a = →{ b = "),
                ("/s/x/a/b", "b = →[1, { "),
                ("/s/x/a/b[0]", "1, { c"),
                ("/s/x/a/b[1]", "{ c = "),
                ("/s/x/a/b[1]/c", "c = →2 }] }"),
                ("/s/x/d", "d.e →d.e = "),
                ("/s/x/d/e", "e = →3\n[[s."),
                ("/s/x/list", "list→[[s.x."),
                ("/s/x/list[0]", "[[s.x."),
                ("/s/x/list[0]/f", "f = →4\n[[s."),
                ("/s/x/list[1]", "[[s.x."),
                ("/s/x/list[1]/g.h", "\"g.h→5\n"),
                ("/top", "top →1\n[s.x"),
            ])
        );
        assert_eq!(toml_spans("a = = 1"), None);
    }
}
