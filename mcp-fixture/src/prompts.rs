//! The `greeting` prompt and `completion/complete` (and, with `--conformance-content`, the
//! `test_*` prompts of [`crate::conformance`]).

use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::jsonrpc::{opt_str, params_object, req_str, RpcError};
use crate::pagination::{page_result, paginate};
use crate::resources::ITEM_TEMPLATE;
use crate::server::FixtureServer;

/// The only prompt.
pub const GREETING: &str = "greeting";
/// Allowed values of the `style` argument (also its completions).
pub const STYLES: &[&str] = &["casual", "formal"];
/// Completions offered for the `name` argument.
pub const NAMES: &[&str] = &["Alice", "Bob", "Carol", "Dave"];
/// Completions offered for the `id` variable of `fixture://items/{id}`.
pub const ITEM_IDS: &[&str] = &["1", "2", "3", "42"];
/// Style used when `style` is omitted.
pub const DEFAULT_STYLE: &str = "casual";

fn prompts() -> &'static [Value] {
    static PROMPTS: OnceLock<Vec<Value>> = OnceLock::new();
    PROMPTS.get_or_init(|| {
        vec![json!({
            "name": GREETING,
            "title": "Greeting",
            "description": "Asks the model to greet someone in a given style.",
            "arguments": [
                { "name": "name", "description": "Who to greet", "required": true },
                { "name": "style", "description": "\"formal\" or \"casual\" (default casual)", "required": false }
            ]
        })]
    })
}

/// `prompts/list`.
pub(crate) fn list(server: &FixtureServer, params: Option<&RawValue>) -> Result<Value, RpcError> {
    let params = params_object(params)?;
    let page_size = server.options().page_size;
    if server.options().conformance_content {
        let mut all = prompts().to_vec();
        all.extend(crate::conformance::prompt_list().iter().cloned());
        let (page, next) = paginate(&all, page_size, &params)?;
        return Ok(page_result("prompts", page, next));
    }
    let (page, next) = paginate(prompts(), page_size, &params)?;
    Ok(page_result("prompts", page, next))
}

/// `prompts/get`.
pub(crate) fn get(server: &FixtureServer, raw: Option<&RawValue>) -> Result<Value, RpcError> {
    let params = params_object(raw)?;
    let name = req_str(&params, "name")?;
    if server.options().conformance_content {
        if let Some(result) = crate::conformance::get_prompt(name, raw) {
            return result;
        }
    }
    if name != GREETING {
        return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")));
    }
    let empty = Map::new();
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(map)) => map,
        Some(_) => return Err(RpcError::bad_field("arguments", "an object")),
    };
    let who = req_str(arguments, "name")?;
    let style = match opt_str(arguments, "style")? {
        None => DEFAULT_STYLE,
        Some(style) if STYLES.contains(&style) => style,
        Some(_) => return Err(RpcError::bad_field("style", "\"formal\" or \"casual\"")),
    };
    Ok(json!({
        "description": format!("Greeting for {who} ({style})"),
        "messages": [{
            "role": "user",
            "content": { "type": "text", "text": format!("Please greet {who} in a {style} way.") }
        }]
    }))
}

/// `completion/complete` for the `greeting` arguments and the item template.
pub(crate) fn complete(
    server: &FixtureServer,
    params: Option<&RawValue>,
) -> Result<Value, RpcError> {
    let params = params_object(params)?;
    let reference = match params.get("ref") {
        Some(Value::Object(map)) => map,
        None | Some(Value::Null) => return Err(RpcError::missing_field("ref")),
        Some(_) => return Err(RpcError::bad_field("ref", "an object")),
    };
    let argument = match params.get("argument") {
        Some(Value::Object(map)) => map,
        None | Some(Value::Null) => return Err(RpcError::missing_field("argument")),
        Some(_) => return Err(RpcError::bad_field("argument", "an object")),
    };
    let arg_name =
        req_str(argument, "name").map_err(|_| RpcError::missing_field("argument.name"))?;
    let prefix = match argument.get("value") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(RpcError::bad_field("argument.value", "a string")),
    };
    let candidates: &[&str] = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name =
                req_str(reference, "name").map_err(|_| RpcError::missing_field("ref.name"))?;
            let conformance = server
                .options()
                .conformance_content
                .then(|| crate::conformance::complete_prompt(name, arg_name))
                .flatten();
            if let Some(candidates) = conformance {
                candidates
            } else if name != GREETING {
                return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")));
            } else {
                match arg_name {
                    "style" => STYLES,
                    "name" => NAMES,
                    _ => &[],
                }
            }
        }
        Some("ref/resource") => {
            let uri = req_str(reference, "uri").map_err(|_| RpcError::missing_field("ref.uri"))?;
            if uri != ITEM_TEMPLATE {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: no completions for `ref.uri` {uri}"
                )));
            }
            match arg_name {
                "id" => ITEM_IDS,
                _ => &[],
            }
        }
        _ => {
            return Err(RpcError::bad_field(
                "ref.type",
                "\"ref/prompt\" or \"ref/resource\"",
            ))
        }
    };
    let values: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| c.starts_with(prefix))
        .collect();
    Ok(json!({
        "completion": { "values": values, "total": values.len(), "hasMore": false }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> FixtureServer {
        FixtureServer::new(crate::options::ServerOptions::default()).0
    }

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).expect("raw")
    }

    #[test]
    fn greeting_messages() {
        let v = get(
            &server(),
            Some(&raw(
                json!({"name": "greeting", "arguments": {"name": "Ada", "style": "formal"}}),
            )),
        )
        .expect("prompt");
        assert_eq!(
            v["messages"][0]["content"]["text"],
            "Please greet Ada in a formal way."
        );
        let err = get(
            &server(),
            Some(&raw(json!({"name": "greeting", "arguments": {}}))),
        )
        .expect_err("missing");
        assert!(err.message.contains("`name`"));
        let err = get(
            &server(),
            Some(&raw(
                json!({"name": "greeting", "arguments": {"name": "A", "style": "loud"}}),
            )),
        )
        .expect_err("bad style");
        assert!(err.message.contains("`style`"));
    }

    #[test]
    fn completes_by_prefix() {
        let v = complete(
            &server(),
            Some(&raw(json!({
                "ref": {"type": "ref/prompt", "name": "greeting"},
                "argument": {"name": "style", "value": "f"}
            }))),
        )
        .expect("completion");
        assert_eq!(v["completion"]["values"], json!(["formal"]));
        let v = complete(
            &server(),
            Some(&raw(json!({
                "ref": {"type": "ref/resource", "uri": ITEM_TEMPLATE},
                "argument": {"name": "id", "value": "4"}
            }))),
        )
        .expect("completion");
        assert_eq!(v["completion"]["values"], json!(["42"]));
        assert!(complete(
            &server(),
            Some(&raw(
                json!({"ref": {"type": "ref/x"}, "argument": {"name": "a"}})
            ))
        )
        .is_err());
    }
}
