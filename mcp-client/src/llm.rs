//! The tool list handed to a model: the catalog's tools as one JSON array in a stable order with
//! stable bytes, after the harness's own tools — so a provider's prompt-cache prefix survives
//! from one agent turn to the next.
//!
//! - **Order.** At start-up, the catalog's order (servers in configuration order, each server's
//!   tools in the order it listed them). A tool that appears later (a `list_changed`, a server
//!   added or back from an outage) goes to the end; a removed tool leaves its place; a changed
//!   tool keeps its place. So a change costs the cached prefix only from the first changed
//!   definition on, and an addition costs none of it.
//! - **Bytes.** Each definition is written canonically: object members sorted by key at every
//!   depth, no whitespace, numbers and strings as `serde_json` writes them. The same catalog
//!   gives the same bytes in every run and in every process.
//! - **Reuse.** [`McpClient::llm_tools`](crate::McpClient::llm_tools) builds a list once per
//!   catalog and format and hands out the same `Arc` until the catalog changes.

use std::collections::HashMap;

use serde_json::Value;

use crate::catalog::{Catalog, CatalogTool};

/// How each tool definition is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LlmToolFormat {
    /// `{"description","input_schema","name"}` — the Anthropic Messages API's `tools`.
    Anthropic,
    /// `{"function":{"description","name","parameters"},"type":"function"}` — the OpenAI Chat
    /// Completions API's `tools`.
    OpenAi,
    /// The tool as the server described it (every member, `outputSchema` and annotations
    /// included), under its qualified name.
    Mcp,
}

impl LlmToolFormat {
    /// The format by name: `anthropic`, `openai` or `mcp`.
    pub fn from_name(name: &str) -> Option<LlmToolFormat> {
        match name.to_ascii_lowercase().as_str() {
            "anthropic" => Some(LlmToolFormat::Anthropic),
            "openai" => Some(LlmToolFormat::OpenAi),
            "mcp" => Some(LlmToolFormat::Mcp),
            _ => None,
        }
    }
}

/// The catalog's tools for a model: definitions in a stable order with stable bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmToolList {
    format: LlmToolFormat,
    names: Vec<String>,
    /// The definitions, canonical JSON, comma-separated (no brackets).
    members: String,
}

impl LlmToolList {
    /// Writes `tools`, in the order given, in `format`.
    pub fn build<'a>(
        tools: impl IntoIterator<Item = &'a CatalogTool>,
        format: LlmToolFormat,
    ) -> LlmToolList {
        let mut names = Vec::new();
        let mut members = Vec::new();
        for tool in tools {
            if !members.is_empty() {
                members.push(b',');
            }
            write_definition(&mut members, tool, format);
            names.push(tool.qualified_name.clone());
        }
        LlmToolList {
            format,
            names,
            // Only JSON text was written, from valid strings.
            members: String::from_utf8(members).unwrap_or_default(),
        }
    }

    /// The format of the definitions.
    pub fn format(&self) -> LlmToolFormat {
        self.format
    }

    /// The qualified names, in list order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The MCP tools alone, as a JSON array.
    pub fn to_json(&self) -> String {
        format!("[{}]", self.members)
    }

    /// One JSON array: the harness's own tool definitions first (as given, written
    /// canonically), then the MCP tools — the exact bytes to send as a request's `tools`.
    pub fn after_harness_tools(&self, harness_tools: &[Value]) -> String {
        let mut out = Vec::with_capacity(self.members.len() + 2 + 256 * harness_tools.len());
        out.push(b'[');
        for (i, tool) in harness_tools.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_canonical(&mut out, tool);
        }
        if !harness_tools.is_empty() && !self.members.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(self.members.as_bytes());
        out.push(b']');
        String::from_utf8(out).unwrap_or_default()
    }
}

/// A member's value: text, or JSON written canonically.
enum Member<'a> {
    Text(&'a str),
    Json(&'a Value),
    Object(Vec<(&'static str, Member<'a>)>),
}

/// Writes one tool's definition in `format`, members sorted by key.
fn write_definition(out: &mut Vec<u8>, tool: &CatalogTool, format: LlmToolFormat) {
    let description = tool
        .tool
        .description
        .as_deref()
        .or(tool.tool.title.as_deref())
        .unwrap_or_default();
    let name = Member::Text(&tool.qualified_name);
    let schema = Member::Json(&tool.tool.input_schema);
    match format {
        LlmToolFormat::Anthropic => write_members(
            out,
            vec![
                ("name", name),
                ("description", Member::Text(description)),
                ("input_schema", schema),
            ],
        ),
        LlmToolFormat::OpenAi => write_members(
            out,
            vec![
                ("type", Member::Text("function")),
                (
                    "function",
                    Member::Object(vec![
                        ("name", name),
                        ("description", Member::Text(description)),
                        ("parameters", schema),
                    ]),
                ),
            ],
        ),
        LlmToolFormat::Mcp => {
            // Every member the server gave (unknown ones too), under the qualified name.
            let mut value = serde_json::to_value(&tool.tool).unwrap_or(Value::Null);
            if let Value::Object(members) = &mut value {
                members.insert("name".into(), Value::String(tool.qualified_name.clone()));
            }
            write_canonical(out, &value);
        }
    }
}

fn write_members(out: &mut Vec<u8>, members: Vec<(&'static str, Member<'_>)>) {
    write_object(out, members, |out, member| match member {
        Member::Text(text) => write_string(out, text),
        Member::Json(value) => write_canonical(out, value),
        Member::Object(inner) => write_members(out, inner),
    });
}

/// Writes an object of `members` sorted by key, each value by `write`.
fn write_object<K: AsRef<str> + Ord, V>(
    out: &mut Vec<u8>,
    mut members: Vec<(K, V)>,
    write: impl Fn(&mut Vec<u8>, V),
) {
    members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out.push(b'{');
    for (i, (key, member)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(out, key.as_ref());
        out.push(b':');
        write(out, member);
    }
    out.push(b'}');
}

/// Writes `value` with object members sorted by key at every depth and no whitespace (whatever
/// order `serde_json`'s map keeps).
pub(crate) fn write_canonical(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(members) => write_object(out, members.iter().collect(), write_canonical),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        // Strings, numbers, booleans and null: serde_json's own text (writing to a Vec cannot
        // fail).
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

fn write_string(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

/// The place of every tool in the model's list: the catalog's order at first sight, later
/// tools appended, removed ones forgotten.
#[derive(Debug, Default)]
pub(crate) struct ToolOrder {
    places: HashMap<String, u64>,
    next: u64,
}

impl ToolOrder {
    /// The catalog's tools in list order (new ones placed at the end, in catalog order).
    pub(crate) fn arrange<'a>(
        &mut self,
        catalog: &'a Catalog<CatalogTool>,
    ) -> Vec<&'a CatalogTool> {
        if self.places.len() != catalog.len()
            || catalog
                .entries()
                .iter()
                .any(|t| !self.places.contains_key(&t.qualified_name))
        {
            self.places.retain(|name, _| catalog.get(name).is_some());
            for tool in catalog.entries() {
                if !self.places.contains_key(&tool.qualified_name) {
                    self.places.insert(tool.qualified_name.clone(), self.next);
                    self.next += 1;
                }
            }
        }
        let mut tools: Vec<(u64, &CatalogTool)> = catalog
            .entries()
            .iter()
            .map(|t| {
                (
                    self.places
                        .get(&t.qualified_name)
                        .copied()
                        .unwrap_or(u64::MAX),
                    t,
                )
            })
            .collect();
        tools.sort_by_key(|(place, _)| *place);
        tools.into_iter().map(|(_, t)| t).collect()
    }

    /// Forgets every place (the next arrangement follows the catalog's order).
    pub(crate) fn reset(&mut self) {
        self.places.clear();
        self.next = 0;
    }
}

/// The lists built for the current catalog, per format, and the tools' places.
#[derive(Debug, Default)]
pub(crate) struct LlmLists {
    pub(crate) order: ToolOrder,
    built: HashMap<LlmToolFormat, std::sync::Arc<LlmToolList>>,
}

impl LlmLists {
    /// The list for `catalog` in `format`: built once, then the same `Arc` until
    /// [`catalog_changed`](Self::catalog_changed).
    pub(crate) fn get(
        &mut self,
        catalog: &Catalog<CatalogTool>,
        format: LlmToolFormat,
    ) -> std::sync::Arc<LlmToolList> {
        if let Some(list) = self.built.get(&format) {
            return list.clone();
        }
        let list = std::sync::Arc::new(LlmToolList::build(self.order.arrange(catalog), format));
        self.built.insert(format, list.clone());
        list
    }

    /// The catalog changed: places follow it, and lists are built again on demand.
    pub(crate) fn catalog_changed(&mut self, catalog: &Catalog<CatalogTool>) {
        self.order.arrange(catalog);
        self.built.clear();
    }

    /// True when no list was built and no tool placed.
    pub(crate) fn is_empty(&self) -> bool {
        self.built.is_empty() && self.order.places.is_empty()
    }

    /// Forgets every place and list (the next ones follow the catalog's order).
    pub(crate) fn reset(&mut self) {
        self.order.reset();
        self.built.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(server: &str, name: &str, schema: Value) -> CatalogTool {
        CatalogTool {
            qualified_name: String::new(),
            server: server.into(),
            tool: serde_json::from_value(json!({
                "name": name, "description": format!("{name} things"), "inputSchema": schema
            }))
            .unwrap(),
        }
    }

    #[test]
    fn definitions_are_canonical_in_every_format() {
        let catalog = Catalog::build(vec![tool(
            "s",
            "t",
            json!({"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}}),
        )]);
        let schema =
            r#"{"properties":{"a":{"type":"integer"},"z":{"type":"string"}},"type":"object"}"#;
        let anthropic = LlmToolList::build(catalog.entries(), LlmToolFormat::Anthropic);
        assert_eq!(
            anthropic.to_json(),
            format!(r#"[{{"description":"t things","input_schema":{schema},"name":"s__t"}}]"#)
        );
        let openai = LlmToolList::build(catalog.entries(), LlmToolFormat::OpenAi);
        assert_eq!(
            openai.to_json(),
            format!(
                r#"[{{"function":{{"description":"t things","name":"s__t","parameters":{schema}}},"type":"function"}}]"#
            )
        );
        let mcp = LlmToolList::build(catalog.entries(), LlmToolFormat::Mcp);
        assert_eq!(
            mcp.to_json(),
            format!(r#"[{{"description":"t things","inputSchema":{schema},"name":"s__t"}}]"#)
        );
    }

    #[test]
    fn harness_tools_come_first() {
        let catalog = Catalog::build(vec![tool("s", "t", json!({"type": "object"}))]);
        let list = LlmToolList::build(catalog.entries(), LlmToolFormat::Anthropic);
        let own =
            [json!({"name": "bash", "input_schema": {"type": "object"}, "description": "run"})];
        assert_eq!(
            list.after_harness_tools(&own),
            r#"[{"description":"run","input_schema":{"type":"object"},"name":"bash"},{"description":"t things","input_schema":{"type":"object"},"name":"s__t"}]"#
        );
        let empty = LlmToolList::build([], LlmToolFormat::Anthropic);
        assert_eq!(empty.after_harness_tools(&own).matches("bash").count(), 1);
        assert_eq!(empty.after_harness_tools(&[]), "[]");
        assert_eq!(list.after_harness_tools(&[]), list.to_json());
    }

    #[test]
    fn new_tools_go_to_the_end_and_removed_ones_leave() {
        let schema = json!({"type": "object"});
        let first = Catalog::build(vec![
            tool("a", "x", schema.clone()),
            tool("b", "y", schema.clone()),
        ]);
        let mut order = ToolOrder::default();
        let names = |tools: Vec<&CatalogTool>| {
            tools
                .into_iter()
                .map(|t| t.qualified_name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(order.arrange(&first)), ["a__x", "b__y"]);
        // Server a gains a tool listed before x: it still goes last.
        let second = Catalog::build(vec![
            tool("a", "w", schema.clone()),
            tool("a", "x", schema.clone()),
            tool("b", "y", schema.clone()),
        ]);
        assert_eq!(names(order.arrange(&second)), ["a__x", "b__y", "a__w"]);
        // x leaves; coming back later it goes last too.
        let third = Catalog::build(vec![
            tool("a", "w", schema.clone()),
            tool("b", "y", schema.clone()),
        ]);
        assert_eq!(names(order.arrange(&third)), ["b__y", "a__w"]);
        assert_eq!(names(order.arrange(&second)), ["b__y", "a__w", "a__x"]);
        order.reset();
        assert_eq!(names(order.arrange(&second)), ["a__w", "a__x", "b__y"]);
    }

    #[test]
    fn lists_are_reused_until_the_catalog_changes() {
        let catalog = Catalog::build(vec![tool("a", "x", json!({"type": "object"}))]);
        let mut lists = LlmLists::default();
        let one = lists.get(&catalog, LlmToolFormat::Anthropic);
        let two = lists.get(&catalog, LlmToolFormat::Anthropic);
        assert!(std::sync::Arc::ptr_eq(&one, &two));
        lists.catalog_changed(&catalog);
        let three = lists.get(&catalog, LlmToolFormat::Anthropic);
        assert!(!std::sync::Arc::ptr_eq(&one, &three));
        assert_eq!(one, three);
    }

    #[test]
    fn canonical_text_sorts_nested_keys_and_escapes() {
        let mut out = Vec::new();
        write_canonical(
            &mut out,
            &json!({"b": [1, {"d": null, "c": true}], "a": "q\"\n", "n": 1.5}),
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":"q\"\n","b":[1,{"c":true,"d":null}],"n":1.5}"#
        );
    }
}
