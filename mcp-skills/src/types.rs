//! The extension's names and limit, and the types of its listing: a skill's entry, its files,
//! a page of `skills/list`, and a skill loaded after verification. (How entries are read from
//! JSON is `listing.rs`.)

use mcp_core::types::CacheHints;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::listing::InvalidSkill;

/// The extension's identifier, in server capabilities.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
/// `skills/list`.
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get`.
pub const SKILLS_GET: &str = "skills/get";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The extension's total-size limit: the largest skill this client reads, in bytes (16 MiB),
/// summed over the sizes its listing gives for all its files. A skill over it is refused before
/// any of its files is read, and no file is used beyond the size the listing gives it, so no
/// skill costs more than this however its server lies.
pub const MAX_SKILL_SIZE: u64 = 16 * 1024 * 1024;

/// One file of a skill, as the listing describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillFile {
    /// Its resource URI (read with `resources/read`).
    pub uri: String,
    /// `sha256:<64 hex digits>` of its bytes.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
}

/// A skill's files: listed with their digests, or `"dynamic"` (served, but not listed; such a
/// skill's files cannot be verified).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SkillResources {
    /// Every file, with its size and digest.
    Listed(Vec<SkillFile>),
    /// The server lists no files (the wire value `"dynamic"`, or another string).
    Unlisted(String),
}

/// One skill of `skills/list` (or `skills/get`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillEntry {
    /// The skill's `SKILL.md` URI (`skill://<skill-path>/SKILL.md`).
    pub uri: String,
    /// The frontmatter of that `SKILL.md` (at least `name` and `description`).
    pub frontmatter: Map<String, Value>,
    /// The skill's files.
    pub resources: SkillResources,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SkillEntry {
    /// The frontmatter's `name`.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter's `description`.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The listed file `uri`, if the entry lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillResources::Listed(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Unlisted(_) => None,
        }
    }

    /// The skill's size as listed: the sum of its files' sizes (what [`MAX_SKILL_SIZE`]
    /// limits); `None` when it lists no files.
    pub fn listed_size(&self) -> Option<u64> {
        match &self.resources {
            SkillResources::Listed(files) => {
                Some(files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size)))
            }
            SkillResources::Unlisted(_) => None,
        }
    }
}

/// One page of `skills/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListSkillsResult {
    /// The skills whose entries are well-formed.
    pub skills: Vec<SkillEntry>,
    /// The entries that are not, and why; each leaves out its own skill and no other.
    pub invalid: Vec<InvalidSkill>,
    /// The next page's cursor.
    pub next_cursor: Option<String>,
    /// `ttlMs` / `cacheScope`.
    pub cache: CacheHints,
}

/// A skill whose `SKILL.md` was verified against its entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The entry it was verified against.
    pub entry: SkillEntry,
    /// The whole `SKILL.md`, verified.
    pub skill_md: String,
    /// Its parsed frontmatter (equal to the entry's).
    pub frontmatter: Map<String, Value>,
    /// The text after the frontmatter: the instructions.
    pub body: String,
}
