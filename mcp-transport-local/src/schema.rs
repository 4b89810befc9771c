//! JSON Schemas of arguments and results, generated from Rust types with `schemars` (1.x,
//! JSON Schema 2020-12, the default dialect of MCP 2025-11-25), and [`NoArguments`] for tools
//! that take none.

use std::borrow::Cow;

use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{Deserialize, Deserializer, IgnoredAny};
use serde_json::Value;

/// The arguments of a tool that takes none: its schema is an empty object, and whatever
/// object the caller sends is accepted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoArguments;

impl<'de> Deserialize<'de> for NoArguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| NoArguments)
    }
}

impl JsonSchema for NoArguments {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("NoArguments")
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({ "type": "object", "properties": {} })
    }
}

fn schema_with(contract: Contract, generate: impl FnOnce(SchemaGenerator) -> Schema) -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        // The dialect is MCP's default; naming it in every tool only adds bytes.
        s.meta_schema = None;
        s.contract = contract;
    });
    let mut schema = generate(settings.into_generator());
    // The root's title is the Rust type's name: noise to a model (the tool has its own).
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
    }
    schema.to_value()
}

/// The schema of what `T` accepts (a tool's `inputSchema`, a prompt's arguments).
pub(crate) fn input_schema_of<T: JsonSchema>() -> Value {
    schema_with(Contract::Deserialize, |g| g.into_root_schema_for::<T>())
}

/// The schema of what `T` produces (a tool's `outputSchema`).
pub(crate) fn output_schema_of<T: JsonSchema>() -> Value {
    schema_with(Contract::Serialize, |g| g.into_root_schema_for::<T>())
}

/// The schema's top-level `type` when it is not `"object"` (MCP needs objects).
pub(crate) fn non_object_type(schema: &Value) -> Option<String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => None,
        Some(other) => Some(match other {
            Value::String(t) => t.clone(),
            other => other.to_string(),
        }),
        None => Some("(none)".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// The text.
        text: String,
        count: Option<u32>,
    }

    #[test]
    fn input_schemas_are_objects_with_required_fields_and_descriptions() {
        let schema = input_schema_of::<Args>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["text"]["type"], "string");
        assert_eq!(schema["properties"]["text"]["description"], "The text.");
        assert_eq!(schema["required"], serde_json::json!(["text"]));
        assert!(schema.get("$schema").is_none());
        assert!(schema.get("title").is_none());
        assert_eq!(non_object_type(&schema), None);
        assert_eq!(
            non_object_type(&input_schema_of::<u32>()).as_deref(),
            Some("integer")
        );
    }

    #[test]
    fn no_arguments_is_an_empty_object_accepting_anything() {
        let schema = input_schema_of::<NoArguments>();
        assert_eq!(schema["type"], "object");
        let parsed: NoArguments = serde_json::from_str(r#"{"x":1}"#).unwrap();
        assert_eq!(parsed, NoArguments);
    }
}
