//! Reading the entries of `skills/list` and `skills/get` from JSON, one entry at a time, by
//! hand: a malformed entry is refused alone, with an error that names the skill, the field and
//! the index (`skill://b/SKILL.md: resources[0].size is missing`), where serde's untagged enum
//! said only "data did not match any variant" and took the whole page down with it.
//!
//! A malformed entry leaves out its whole skill, not only the bad file: the listing of a
//! skill's files must be complete for the skill to be verified (a file missing from it could
//! never be read), so a skill with an unreadable file entry cannot be used as listed. The
//! page's other skills are unaffected, and the refused ones are kept, with the reason, in
//! [`ListSkillsResult::invalid`].

use std::fmt;

use mcp_core::types::CacheHints;
use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::{Map, Value};

use crate::types::{ListSkillsResult, SkillEntry, SkillFile, SkillResources};

/// A `skills/list` entry that is not well-formed, left out of the page's skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidSkill {
    /// Its position in the page's `skills`.
    pub index: usize,
    /// Its `uri`, when it has one.
    pub uri: Option<String>,
    /// What is wrong: `resources[0].size is missing`.
    pub why: String,
}

impl fmt::Display for InvalidSkill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.uri {
            Some(uri) => write!(f, "{uri}: {}", self.why),
            None => write!(f, "skills[{}]: {}", self.index, self.why),
        }
    }
}

impl std::error::Error for InvalidSkill {}

/// What is wrong with an entry: its `uri` when it got that far, and why.
type EntryError = (Option<String>, String);

/// Reads one entry; unknown members are kept in [`SkillEntry::extra`].
fn read_entry(value: Value) -> Result<SkillEntry, EntryError> {
    let Value::Object(mut entry) = value else {
        return Err((
            None,
            format!("the entry is {}, not an object", what(&value)),
        ));
    };
    let uri = match entry.remove("uri") {
        Some(Value::String(uri)) => uri,
        Some(other) => return Err((None, format!("uri is {}, not a string", what(&other)))),
        None => return Err((None, "uri is missing".into())),
    };
    let fields = read_fields(&mut entry);
    match fields {
        Ok((frontmatter, resources)) => Ok(SkillEntry {
            uri,
            frontmatter,
            resources,
            extra: entry,
        }),
        Err(why) => Err((Some(uri), why)),
    }
}

fn read_fields(
    entry: &mut Map<String, Value>,
) -> Result<(Map<String, Value>, SkillResources), String> {
    let frontmatter = match entry.remove("frontmatter") {
        Some(Value::Object(frontmatter)) => frontmatter,
        Some(other) => return Err(format!("frontmatter is {}, not an object", what(&other))),
        None => return Err("frontmatter is missing".into()),
    };
    let resources = match entry.remove("resources") {
        Some(resources) => read_resources(resources)?,
        None => return Err("resources is missing".into()),
    };
    Ok((frontmatter, resources))
}

fn read_resources(value: Value) -> Result<SkillResources, String> {
    match value {
        Value::Array(files) => files
            .into_iter()
            .enumerate()
            .map(|(index, file)| read_file(file, &format!("resources[{index}]")))
            .collect::<Result<_, _>>()
            .map(SkillResources::Listed),
        Value::String(unlisted) => Ok(SkillResources::Unlisted(unlisted)),
        other => Err(format!(
            "resources is {}, neither a list of files nor \"dynamic\"",
            what(&other)
        )),
    }
}

/// Reads `{uri, digest, size}`; `at` names it in errors (`resources[2]`).
fn read_file(value: Value, at: &str) -> Result<SkillFile, String> {
    let Value::Object(mut file) = value else {
        return Err(format!("{at} is {}, not an object", what(&value)));
    };
    let mut text = |name: &str| match file.remove(name) {
        Some(Value::String(text)) => Ok(text),
        Some(other) => Err(format!("{at}.{name} is {}, not a string", what(&other))),
        None => Err(format!("{at}.{name} is missing")),
    };
    let uri = text("uri")?;
    let digest = text("digest")?;
    let size = match file.get("size") {
        Some(size) => size
            .as_u64()
            .ok_or_else(|| format!("{at}.size is {}, not a byte count", what(size)))?,
        None => return Err(format!("{at}.size is missing")),
    };
    Ok(SkillFile { uri, digest, size })
}

/// A value as an error names it: numbers as they are (`-1`), the rest by kind.
fn what(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => n.to_string(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

impl<'de> Deserialize<'de> for ListSkillsResult {
    /// Reads the page; only a page that is not an object with a `skills` array fails as a
    /// whole.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Page {
            #[serde(default)]
            skills: Vec<Value>,
            #[serde(default)]
            next_cursor: Option<String>,
            #[serde(flatten)]
            cache: CacheHints,
        }
        let page = Page::deserialize(deserializer)?;
        let mut skills = Vec::with_capacity(page.skills.len());
        let mut invalid = Vec::new();
        for (index, value) in page.skills.into_iter().enumerate() {
            match read_entry(value) {
                Ok(entry) => skills.push(entry),
                Err((uri, why)) => invalid.push(InvalidSkill { index, uri, why }),
            }
        }
        Ok(ListSkillsResult {
            skills,
            invalid,
            next_cursor: page.next_cursor,
            cache: page.cache,
        })
    }
}

impl<'de> Deserialize<'de> for SkillEntry {
    /// Reads one entry (a `skills/get` result's `skill`); the error names the field.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_entry(Value::deserialize(deserializer)?).map_err(|(uri, why)| match uri {
            Some(uri) => D::Error::custom(format!("{uri}: {why}")),
            None => D::Error::custom(format!("the skill entry: {why}")),
        })
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_resources(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for SkillFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_file(Value::deserialize(deserializer)?, "file").map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(uri: &str, resources: Value) -> Value {
        json!({"uri": uri, "frontmatter": {"name": "s", "description": "d"}, "resources": resources})
    }

    fn file(uri: &str) -> Value {
        json!({"uri": uri, "digest": "sha256:00", "size": 3})
    }

    #[test]
    fn each_malformed_entry_is_named_by_skill_field_and_index() {
        let cases = [
            (
                json!("text"),
                "skills[0]: the entry is a string, not an object",
            ),
            (json!({"frontmatter": {}}), "skills[0]: uri is missing"),
            (json!({"uri": 7}), "skills[0]: uri is 7, not a string"),
            (
                json!({"uri": "skill://s/SKILL.md", "resources": "dynamic"}),
                "skill://s/SKILL.md: frontmatter is missing",
            ),
            (
                json!({"uri": "skill://s/SKILL.md", "frontmatter": [], "resources": "dynamic"}),
                "skill://s/SKILL.md: frontmatter is an array, not an object",
            ),
            (
                json!({"uri": "skill://s/SKILL.md", "frontmatter": {}}),
                "skill://s/SKILL.md: resources is missing",
            ),
            (
                entry("skill://s/SKILL.md", json!(null)),
                "skill://s/SKILL.md: resources is null, neither a list of files nor \"dynamic\"",
            ),
            (
                entry("skill://s/SKILL.md", json!([file("skill://s/SKILL.md"), 5])),
                "skill://s/SKILL.md: resources[1] is 5, not an object",
            ),
            (
                entry(
                    "skill://s/SKILL.md",
                    json!([{"digest": "sha256:00", "size": 3}]),
                ),
                "skill://s/SKILL.md: resources[0].uri is missing",
            ),
            (
                entry(
                    "skill://s/SKILL.md",
                    json!([{"uri": "skill://s/SKILL.md", "size": 3}]),
                ),
                "skill://s/SKILL.md: resources[0].digest is missing",
            ),
            (
                entry(
                    "skill://s/SKILL.md",
                    json!([{"uri": "skill://s/SKILL.md", "digest": 1, "size": 3}]),
                ),
                "skill://s/SKILL.md: resources[0].digest is 1, not a string",
            ),
            (
                entry(
                    "skill://s/SKILL.md",
                    json!([{"uri": "skill://s/SKILL.md", "digest": "sha256:00"}]),
                ),
                "skill://s/SKILL.md: resources[0].size is missing",
            ),
            (
                entry(
                    "skill://s/SKILL.md",
                    json!([{"uri": "skill://s/SKILL.md", "digest": "sha256:00", "size": -1}]),
                ),
                "skill://s/SKILL.md: resources[0].size is -1, not a byte count",
            ),
            (
                entry(
                    "skill://s/SKILL.md",
                    json!([{"uri": "skill://s/SKILL.md", "digest": "sha256:00", "size": "3"}]),
                ),
                "skill://s/SKILL.md: resources[0].size is a string, not a byte count",
            ),
        ];
        for (bad, expected) in cases {
            let page: ListSkillsResult = serde_json::from_value(json!({"skills": [bad]})).unwrap();
            assert!(page.skills.is_empty(), "{expected}");
            assert_eq!(page.invalid.len(), 1, "{expected}");
            assert_eq!(page.invalid[0].to_string(), expected);
        }
    }

    #[test]
    fn a_malformed_entry_leaves_out_only_its_own_skill() {
        let page: ListSkillsResult = serde_json::from_value(json!({
            "skills": [
                entry("skill://a/SKILL.md", json!([file("skill://a/SKILL.md")])),
                entry("skill://b/SKILL.md", json!([file("skill://b/SKILL.md"), {"uri": "skill://b/x"}])),
                entry("skill://c/SKILL.md", json!("dynamic")),
            ],
            "nextCursor": "2",
            "ttlMs": 5
        }))
        .unwrap();
        let uris: Vec<&str> = page.skills.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!(uris, ["skill://a/SKILL.md", "skill://c/SKILL.md"]);
        assert_eq!(
            page.invalid,
            [InvalidSkill {
                index: 1,
                uri: Some("skill://b/SKILL.md".into()),
                why: "resources[1].digest is missing".into(),
            }]
        );
        assert_eq!(page.next_cursor.as_deref(), Some("2"));
        assert_eq!(page.cache.ttl_ms, Some(5));
        assert_eq!(
            page.skills[1].resources,
            SkillResources::Unlisted("dynamic".into())
        );
    }

    #[test]
    fn an_entry_round_trips_with_its_unknown_members() {
        let wire = json!({
            "uri": "skill://a/SKILL.md",
            "frontmatter": {"name": "a", "description": "d"},
            "resources": [file("skill://a/SKILL.md")],
            "_meta": {"x": 1}
        });
        let entry: SkillEntry = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(entry.extra["_meta"], json!({"x": 1}));
        assert_eq!(entry.listed_size(), Some(3));
        assert_eq!(serde_json::to_value(&entry).unwrap(), wire);
        let err =
            serde_json::from_value::<SkillEntry>(json!({"uri": "skill://a/SKILL.md"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "skill://a/SKILL.md: frontmatter is missing"
        );
    }
}
