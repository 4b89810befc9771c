//! The parsed document tree shared by all formats: objects keep file order and reject duplicate
//! keys; JSON may carry comments and trailing commas (VS Code files are JSONC); syntax errors
//! carry line and column.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::error::{ConfigError, ConfigErrorKind};

/// The key under which the `toml` crate hands a date-time to a generic visitor.
const TOML_DATETIME_KEY: &str = "$__toml_private_datetime";

/// A value from a JSON or TOML document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Datetime(String),
    Array(Vec<Node>),
    /// Entries in file order.
    Object(Vec<(String, Node)>),
}

impl Node {
    /// "a number", "a string", … — what an error says it found (never the value itself).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Int(_) | Node::Float(_) => "a number",
            Node::Str(_) => "a string",
            Node::Datetime(_) => "a date-time",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }

    /// The value under `key` when this is an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(i64::try_from(v).map_or(Node::Float(v as f64), Node::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == TOML_DATETIME_KEY {
                let text: String = map.next_value()?;
                return Ok(Node::Datetime(text));
            }
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!(
                    "duplicate key \"{key}\" (each name may appear once per object)"
                )));
            }
            let value = map.next_value::<Node>()?;
            entries.push((key, value));
        }
        Ok(Node::Object(entries))
    }
}

/// Parses JSON (with `//` and `/* */` comments and trailing commas allowed) into a [`Node`].
pub(crate) fn parse_json(text: &str, file: &Path) -> Result<Node, ConfigError> {
    let cleaned = strip_jsonc(text);
    serde_json::from_str::<Node>(&cleaned).map_err(|err| {
        let full = err.to_string();
        let suffix = format!(" at line {} column {}", err.line(), err.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full);
        let error = ConfigError::new(
            ConfigErrorKind::Syntax,
            file,
            format!("invalid JSON: {message}"),
        );
        if err.line() == 0 {
            error
        } else {
            let (line, column) = line_column(text, json_offset(text, err.line(), err.column()));
            error.with_position(line, column)
        }
    })
}

/// The byte offset in `text` of serde_json's error position: a 1-based line, and the bytes of
/// that line read up to and including the offending one (0 before any).
fn json_offset(text: &str, line: usize, bytes_into_line: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    line_start + bytes_into_line.saturating_sub(1)
}

/// Parses TOML into a [`Node`] (tables come back sorted by key; see [`toml_server_order`]).
pub(crate) fn parse_toml(text: &str, file: &Path) -> Result<Node, ConfigError> {
    toml::from_str::<Node>(text).map_err(|err| {
        let error = ConfigError::new(
            ConfigErrorKind::Syntax,
            file,
            format!(
                "invalid TOML: {}",
                err.message().trim_end().replace('\n', "; ")
            ),
        );
        match err.span() {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                error.with_position(line, column)
            }
            None => error,
        }
    })
}

/// The names of the tables under `[mcp_servers]`, in file order (empty when the shape is not a
/// table of tables; the tree walk reports that). The `toml` crate without `preserve_order` sorts
/// keys, so the order is recovered from the spans.
pub(crate) fn toml_server_order(text: &str) -> Vec<String> {
    use std::collections::BTreeMap;
    use toml::Spanned;
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        mcp_servers: BTreeMap<String, Spanned<serde::de::IgnoredAny>>,
    }
    let Ok(probe) = toml::from_str::<Probe>(text) else {
        return Vec::new();
    };
    let mut names: Vec<(usize, String)> = probe
        .mcp_servers
        .into_iter()
        .map(|(name, spanned)| (spanned.span().start, name))
        .collect();
    names.sort();
    names.into_iter().map(|(_, name)| name).collect()
}

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    // Inside a character: the character's own position.
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Replaces JSONC comments and trailing commas with spaces (newlines kept, so line numbers of
/// errors stay true). Every byte keeps its offset (each blanked byte becomes one space), so
/// positions found in the result hold for `text` (`locate.rs` relies on it). Strict JSON comes
/// back unchanged.
pub(crate) fn strip_jsonc(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("//") && !text.contains("/*") && !text.contains(',') {
        return std::borrow::Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut changed = false;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = skip_string(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'/') || bytes.get(i + 1) == Some(&b'*') => {
                let end = comment_end(bytes, i);
                blank(&mut out[i..end]);
                changed = true;
                i = end;
            }
            b',' => {
                if matches!(next_significant(bytes, i + 1), Some(b'}') | Some(b']')) {
                    out[i] = b' ';
                    changed = true;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    if !changed {
        return std::borrow::Cow::Borrowed(text);
    }
    // Only ASCII bytes were replaced (whole comments, including any multi-byte characters in
    // them, became spaces), so the result is valid UTF-8.
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| text.to_owned()))
}

/// Index just past the string starting at `start` (a `"`), or the end of input.
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Index just past the comment starting at `start` (`//` or `/*`); a line comment ends before
/// its newline.
fn comment_end(bytes: &[u8], start: usize) -> usize {
    if bytes[start + 1] == b'/' {
        bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| start + p)
    } else {
        bytes[start + 2..]
            .windows(2)
            .position(|w| w == b"*/")
            .map_or(bytes.len(), |p| start + 2 + p + 2)
    }
}

/// The next byte that is neither whitespace nor inside a comment.
fn next_significant(bytes: &[u8], mut i: usize) -> Option<u8> {
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') || bytes.get(i + 1) == Some(&b'*') => {
                i = comment_end(bytes, i);
            }
            b => return Some(b),
        }
    }
    None
}

fn blank(bytes: &mut [u8]) {
    for b in bytes {
        if *b != b'\n' && *b != b'\r' {
            *b = b' ';
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Result<Node, ConfigError> {
        parse_json(text, Path::new("t.json"))
    }

    #[test]
    fn objects_keep_file_order() {
        let node = json(r#"{"z": 1, "a": 2, "m": 3}"#).unwrap();
        let Node::Object(entries) = node else {
            panic!()
        };
        let keys: Vec<_> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }

    #[test]
    fn duplicate_keys_are_rejected_with_a_position() {
        let err = json("{\n \"a\": 1,\n \"a\": 2\n}").unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::Syntax);
        assert!(err.message().contains("duplicate key \"a\""), "{err}");
        assert!(err.position().is_some());
    }

    #[test]
    fn comments_and_trailing_commas_are_accepted() {
        let text = "{\n // a comment, with \"quotes\"\n \"a\": [1, 2,], /* b */ \"s\": \"x // not, a comment\",\n}";
        let node = json(text).unwrap();
        assert_eq!(
            node.get("a"),
            Some(&Node::Array(vec![Node::Int(1), Node::Int(2)]))
        );
        assert_eq!(
            node.get("s"),
            Some(&Node::Str("x // not, a comment".into()))
        );
    }

    #[test]
    fn stripping_comments_keeps_every_offset() {
        let text = "{ /* ü { \" */ \"a\": [1, 2,], // ✓ }\n \"b\": \"//\", }";
        let stripped = strip_jsonc(text);
        assert_eq!(stripped.len(), text.len());
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' || b.is_ascii_digit() {
                assert_eq!(stripped.as_bytes()[i], b, "byte {i}");
            }
        }
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&stripped).unwrap(),
            serde_json::json!({"a": [1, 2], "b": "//"})
        );
    }

    #[test]
    fn json_syntax_errors_carry_line_and_column() {
        let err = json("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!(err.position(), Some((3, 3)));
        assert!(!err.message().contains("at line"), "{}", err.message());
    }

    /// Found by the `config` fuzz target: serde_json counts bytes, from 0 at a line's start.
    #[test]
    fn json_error_columns_count_characters_from_one() {
        assert_eq!(json("").unwrap_err().position(), Some((1, 1)));
        assert_eq!(json("{\n").unwrap_err().position(), Some((2, 1)));
        // `x` is the 7th character of the line (and its 8th byte).
        assert_eq!(json("{\"é\": x}").unwrap_err().position(), Some((1, 7)));
        assert_eq!(
            json("{\"a\": \"é\" x}").unwrap_err().position(),
            Some((1, 11))
        );
    }

    #[test]
    fn toml_errors_carry_line_and_column() {
        let err = parse_toml("a = 1\nb = = 2\n", Path::new("t.toml")).unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::Syntax);
        assert_eq!(err.position().map(|p| p.0), Some(2));
    }

    #[test]
    fn toml_datetimes_and_table_order() {
        let text =
            "when = 1979-05-27T07:32:00Z\n[mcp_servers.zeta]\nx = 1\n[mcp_servers.alpha]\nx = 2\n";
        let node = parse_toml(text, Path::new("t.toml")).unwrap();
        assert!(matches!(node.get("when"), Some(Node::Datetime(_))));
        assert_eq!(toml_server_order(text), ["zeta", "alpha"]);
    }
}
