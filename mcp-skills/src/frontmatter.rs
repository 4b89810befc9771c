//! The YAML frontmatter of a `SKILL.md` (a `---` line, YAML, a `---` line), as JSON values, and
//! its field-by-field comparison with a listing's frontmatter.
//!
//! The YAML comes from the server, so it is read defensively: aliases are refused before
//! anything is loaded (`YamlLoader` replaces each alias with a full copy of its anchor's value,
//! so nested aliases — "billion laughs" — grow exponentially: 300 bytes became 400 KB of JSON),
//! and so is nesting deeper than [`MAX_DEPTH`] (loading, converting and dropping a value recurse
//! once per level; a few hundred KB of `- - - …` overflowed the stack). The listing's size and
//! digest do not protect the host here: the listing comes from the same server.

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::{Yaml, YamlLoader};

/// The deepest nesting of mappings and sequences a frontmatter may have. The extension's
/// fields nest two levels deep (`metadata.version`); 64 leaves room for any honest skill.
const MAX_DEPTH: usize = 64;

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
    let yaml = &rest[..yaml_end];
    refuse_aliases_and_deep_nesting(yaml)?;
    let documents = YamlLoader::load_from_str(yaml).map_err(|e| format!("invalid YAML: {e}"))?;
    let value = match documents.into_iter().next() {
        Some(doc) => to_json(doc)?,
        None => Value::Object(Map::new()),
    };
    let Value::Object(map) = value else {
        return Err("the frontmatter is not a mapping".into());
    };
    Ok((map, &rest[body_start..]))
}

/// Reads the YAML's events (without building anything) and refuses the first alias, or the first
/// mapping or sequence nested deeper than [`MAX_DEPTH`]; positions are the file's (the YAML
/// starts on its second line).
fn refuse_aliases_and_deep_nesting(yaml: &str) -> Result<(), String> {
    let mut parser = Parser::new_from_str(yaml);
    let mut depth = 0usize;
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|e| format!("invalid YAML: {e}"))?;
        let at = || format!("line {}, column {}", mark.line() + 1, mark.col() + 1);
        match event {
            Event::StreamEnd => return Ok(()),
            Event::Alias(_) => {
                return Err(format!(
                    "a YAML alias at {}: aliases are refused in a skill's frontmatter (each one \
                     copies its anchor's value, so nested aliases grow exponentially)",
                    at()
                ))
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!(
                        "mappings or sequences nested more than {MAX_DEPTH} deep at {}",
                        at()
                    ));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
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
        // Refused before loading (the loader expands aliases, so this is not reached).
        Yaml::Alias(_) => return Err("a YAML alias".into()),
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

        // "Billion laughs": each level an anchored list of nine aliases of the level below,
        // 9^levels copies once expanded (6 levels: 367 bytes that the loader expanded into half
        // a million nodes, 90 MB allocated; ~10 levels exhaust memory). Refused at the first
        // alias, at once and in about 2 KB, whatever the number of levels.
        let mut laughs = String::from("---\nname: x\ndescription: y\nl0: &l0 lol\n");
        for level in 1..=6 {
            let below = vec![format!("*l{}", level - 1); 9].join(", ");
            laughs.push_str(&format!("l{level}: &l{level} [{below}]\n"));
        }
        laughs.push_str("---\nbody\n");
        assert!(laughs.len() < 400, "{}", laughs.len());
        let started = std::time::Instant::now();
        let (refused, allocated) = crate::allocations::counted(|| frontmatter_of(&laughs));
        let why = refused.unwrap_err();
        assert!(why.contains("a YAML alias at line 5, column 10"), "{why}");
        assert!(allocated < 64 * 1024, "{allocated} bytes allocated");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // One alias is refused as well: aliases have no place in a frontmatter.
        let why = frontmatter_of("---\nname: &n x\ndescription: *n\n---\n").unwrap_err();
        assert!(why.contains("a YAML alias at line 3"), "{why}");
        // Harmless YAML features stay readable: an anchor nothing refers to, a tag.
        let (front, _) = frontmatter_of("---\nname: &n x\nversion: !!str 2\n---\n").unwrap();
        assert_eq!(Value::Object(front), json!({"name": "x", "version": "2"}));
    }

    #[test]
    fn deeply_nested_yaml_is_refused_without_recursing() {
        // 200,000 levels of block sequences in 400 KB: loading it overflowed the stack.
        let deep = format!("---\nname: x\nk:\n{}x\n---\n", "- ".repeat(200_000));
        let why = frontmatter_of(&deep).unwrap_err();
        assert!(why.contains("nested more than 64 deep"), "{why}");
        let flow = format!("---\nk: {}{}\n---\n", "[".repeat(65), "]".repeat(65));
        assert!(frontmatter_of(&flow).unwrap_err().contains("nested"));
        let ok = format!("---\nk: {}{}\n---\n", "[".repeat(63), "]".repeat(63));
        assert!(frontmatter_of(&ok).is_ok());
    }
}
