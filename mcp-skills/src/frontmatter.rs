//! The YAML frontmatter of a `SKILL.md` (a `---` line, YAML, a `---` line), as JSON values, and
//! its field-by-field comparison with a listing's frontmatter.

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// Splits a `SKILL.md` into its frontmatter (a YAML mapping, as JSON) and the body after it.
pub fn frontmatter_of(text: &str) -> Result<(Map<String, Value>, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\r\n")
        .or_else(|| text.strip_prefix("---\n"))
        .ok_or("the file does not start with a `---` line")?;
    // The closing delimiter: a line that is `---` (trailing blanks allowed).
    let mut offset = 0;
    let mut end = None;
    for line in rest.split_inclusive('\n') {
        if line
            .trim_end_matches(['\n', '\r'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let (yaml_end, body_start) = end.ok_or("no closing `---` line after the frontmatter")?;
    let documents =
        YamlLoader::load_from_str(&rest[..yaml_end]).map_err(|e| format!("invalid YAML: {e}"))?;
    let value = match documents.into_iter().next() {
        Some(doc) => to_json(doc)?,
        None => Value::Object(Map::new()),
    };
    let Value::Object(map) = value else {
        return Err("the frontmatter is not a mapping".into());
    };
    Ok((map, &rest[body_start..]))
}

/// The first field (by name) in which two frontmatters differ, `None` when they agree; an absent
/// field equals `null`, and numbers compare by value.
pub fn same_frontmatter(a: &Map<String, Value>, b: &Map<String, Value>) -> Option<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .find(|key| {
            !same_value(
                a.get(*key).unwrap_or(&Value::Null),
                b.get(*key).unwrap_or(&Value::Null),
            )
        })
        .cloned()
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(x), Value::Object(y)) => same_frontmatter(x, y).is_none(),
        _ => a == b,
    }
}

fn to_json(yaml: Yaml) -> Result<Value, String> {
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(text) => text
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or(Value::String(text), Value::Number),
        Yaml::String(s) => Value::String(s),
        Yaml::Array(items) => {
            Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        Yaml::Hash(hash) => {
            let mut map = Map::new();
            for (key, value) in hash {
                let key = match key {
                    Yaml::String(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Real(r) => r,
                    other => return Err(format!("a mapping key is not a scalar: {other:?}")),
                };
                map.insert(key, to_json(value)?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) => return Err("YAML aliases are not supported".into()),
        Yaml::BadValue => return Err("a value YAML cannot represent".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frontmatter_is_parsed_and_the_body_kept() {
        let text = "---\nname: pdf-processing\ndescription: \"Extract: fill\"\nmetadata:\n  version: 1.0\n  tags: [a, b]\n---\n\nSkill body.\n";
        let (front, body) = frontmatter_of(text).unwrap();
        assert_eq!(
            Value::Object(front.clone()),
            json!({"name": "pdf-processing", "description": "Extract: fill",
                   "metadata": {"version": 1.0, "tags": ["a", "b"]}})
        );
        assert_eq!(body, "\nSkill body.\n");
        let entry = json!({"name": "pdf-processing", "description": "Extract: fill",
                           "metadata": {"version": 1, "tags": ["a", "b"]}});
        assert_eq!(same_frontmatter(&front, entry.as_object().unwrap()), None);
        let other = json!({"name": "pdf-processing", "description": "Something else"});
        assert_eq!(
            same_frontmatter(&front, other.as_object().unwrap()).as_deref(),
            Some("description")
        );
    }

    #[test]
    fn files_without_frontmatter_are_refused() {
        assert!(frontmatter_of("no frontmatter").is_err());
        assert!(frontmatter_of("---\nname: x\n")
            .unwrap_err()
            .contains("closing"));
        assert!(frontmatter_of("---\n- a\n- b\n---\n")
            .unwrap_err()
            .contains("mapping"));
        assert!(frontmatter_of("---\nname: [unclosed\n---\n").is_err());
        assert!(frontmatter_of("\u{feff}---\r\nname: x\r\n---\r\nbody").is_ok());
    }
}
