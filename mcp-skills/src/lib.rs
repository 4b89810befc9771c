//! `mcp-skills`: the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) for MCP
//! clients, on any [`McpService`] (a session, or a stack of layers around one).
//!
//! A server that offers the extension lists its skills with `skills/list`: each entry names the
//! skill's `SKILL.md` (`skill://<path>/SKILL.md`), carries the frontmatter of that file, and lists
//! the skill's files with their size and `sha256:` digest. A host loads a skill only when it needs
//! it, and uses nothing it has not verified:
//!
//! - [`SkillsExt::list_skills`] / [`list_all_skills`](SkillsExt::list_all_skills) read the
//!   listing and nothing else (no file is fetched ahead of need);
//! - [`SkillsExt::load_skill`] reads `SKILL.md`, checks its byte size and digest against the
//!   entry, parses its YAML frontmatter and compares it field by field with the entry's; any
//!   difference is an error ([`VerifyError`]) and nothing of the file is returned;
//! - [`SkillsExt::read_skill_file`] reads one more file the entry lists, verified the same way,
//!   and refuses a URI the entry does not list (text files; a file served only as a binary
//!   blob is an error).
//!
//! ```no_run
//! # async fn run(session: mcp_core::ClientSession) -> Result<(), mcp_core::Error> {
//! use mcp_core::RequestOptions;
//! use mcp_skills::SkillsExt;
//! for entry in session.list_all_skills(RequestOptions::new()).await? {
//!     println!("{}: {}", entry.name().unwrap_or("?"), entry.description().unwrap_or(""));
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod frontmatter;
mod verify;

use std::future::Future;

use mcp_core::types::{CacheHints, ReadResourceResult};
use mcp_core::{Delivery, Error, ErrorKind, McpService, McpServiceExt, Operation, RequestOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use frontmatter::{frontmatter_of, same_frontmatter};
pub use verify::{digest_of, VerifyError};

/// The extension's identifier, in server capabilities.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
/// `skills/list`.
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get`.
pub const SKILLS_GET: &str = "skills/get";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The largest skill file this client reads (the extension's total-size limit, 16 MiB).
pub const MAX_SKILL_FILE: usize = 16 * 1024 * 1024;

/// One file of a skill, as the listing describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillResources {
    /// Every file, with its size and digest.
    Listed(Vec<SkillFile>),
    /// The server lists no files (the wire value `"dynamic"`, or another string).
    Unlisted(String),
}

/// One skill of `skills/list` (or `skills/get`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The skill's `SKILL.md` URI (`skill://<skill-path>/SKILL.md`).
    pub uri: String,
    /// The frontmatter of that `SKILL.md` (at least `name` and `description`).
    #[serde(default)]
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
}

/// One page of `skills/list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The skills.
    #[serde(default)]
    pub skills: Vec<SkillEntry>,
    /// The next page's cursor.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// `ttlMs` / `cacheScope`.
    #[serde(flatten)]
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

/// The Skills extension's requests, on any [`McpService`].
pub trait SkillsExt: McpService {
    /// `skills/list`: one page.
    fn list_skills(
        &self,
        cursor: Option<String>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<ListSkillsResult, Error>> + Send {
        let mut params = Map::new();
        if let Some(cursor) = cursor {
            params.insert("cursor".into(), Value::String(cursor));
        }
        let operation = Operation::new(
            SKILLS_LIST,
            Some(mcp_core::Payload::Value(Value::Object(params))),
        )
        .with_options(options);
        async move {
            let answer = self.call(operation).await?;
            answer.into_typed().map_err(|e| invalid(SKILLS_LIST, e))
        }
    }

    /// Every skill, following cursors (at most [`RequestOptions::max_pages`] pages, default
    /// 100; a repeated cursor is an error).
    fn list_all_skills(
        &self,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Vec<SkillEntry>, Error>> + Send {
        async move {
            let max_pages = options.max_pages.unwrap_or(100).max(1);
            let mut skills = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let mut cursor = None;
            for _ in 0..max_pages {
                let page = self.list_skills(cursor.take(), options.clone()).await?;
                skills.extend(page.skills);
                match page.next_cursor {
                    None => return Ok(skills),
                    Some(next) if !seen.insert(next.clone()) => {
                        return Err(Error::protocol(format!(
                            "skills/list: the server repeated cursor {next:?}"
                        )))
                    }
                    Some(next) => cursor = Some(next),
                }
            }
            Err(Error::protocol(format!(
                "skills/list: more than {max_pages} pages; raise max_pages to read them all"
            )))
        }
    }

    /// `skills/get`: the entry of one skill by its `SKILL.md` URI.
    fn get_skill(
        &self,
        uri: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<SkillEntry, Error>> + Send {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        let operation = Operation::new(
            SKILLS_GET,
            Some(mcp_core::Payload::Value(Value::Object(params))),
        )
        .with_subject(uri)
        .with_options(options);
        async move {
            #[derive(Deserialize)]
            struct GetSkillResult {
                skill: SkillEntry,
            }
            let answer = self.call(operation).await?;
            answer
                .into_typed::<GetSkillResult>()
                .map(|r| r.skill)
                .map_err(|e| invalid(SKILLS_GET, e))
        }
    }

    /// Loads a skill: reads its `SKILL.md`, verifies size and digest against the entry, parses
    /// the frontmatter and compares it with the entry's. Nothing unverified is returned; other
    /// files are read only on request ([`read_skill_file`](Self::read_skill_file)).
    fn load_skill(
        &self,
        entry: &SkillEntry,
        options: RequestOptions,
    ) -> impl Future<Output = Result<LoadedSkill, Error>> + Send {
        async move {
            let text = self.read_skill_file(entry, &entry.uri, options).await?;
            let (frontmatter, body) = frontmatter_of(&text).map_err(|why| {
                verify_failed(VerifyError::Frontmatter {
                    uri: entry.uri.clone(),
                    why,
                })
            })?;
            if let Some(field) = same_frontmatter(&frontmatter, &entry.frontmatter) {
                return Err(verify_failed(VerifyError::FrontmatterMismatch {
                    uri: entry.uri.clone(),
                    field,
                }));
            }
            let body = body.to_owned();
            Ok(LoadedSkill {
                entry: entry.clone(),
                skill_md: text,
                frontmatter,
                body,
            })
        }
    }

    /// Reads one file the entry lists and verifies its size and digest. A URI the entry does
    /// not list, or a skill whose files are not listed, cannot be verified and is refused.
    fn read_skill_file(
        &self,
        entry: &SkillEntry,
        uri: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<String, Error>> + Send {
        async move {
            let file = entry.file(uri).ok_or_else(|| {
                verify_failed(VerifyError::NotListed {
                    skill: entry.uri.clone(),
                    uri: uri.to_owned(),
                })
            })?;
            if file.size > MAX_SKILL_FILE as u64 {
                return Err(verify_failed(VerifyError::TooLarge {
                    uri: uri.to_owned(),
                    size: file.size,
                }));
            }
            let read: ReadResourceResult = self.read_resource(uri, options).await?;
            let text = read
                .contents
                .into_iter()
                .find_map(|c| c.text.filter(|_| c.uri == uri || c.uri.is_empty()))
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Resource,
                        format!("{uri}: the server returned no text content for the skill file"),
                    )
                    .with_subject(uri)
                    .with_delivery(Delivery::Answered)
                })?;
            verify::check(file, text.as_bytes()).map_err(verify_failed)?;
            Ok(text)
        }
    }
}

impl<S: McpService + ?Sized> SkillsExt for S {}

/// Whether a server offers the extension (its capabilities' `extensions`).
pub fn offers_skills(capabilities: &mcp_core::types::ServerCapabilities) -> bool {
    capabilities.extension(SKILLS_EXTENSION).is_some()
}

fn invalid(method: &str, e: serde_json::Error) -> Error {
    Error::protocol(format!("invalid {method} result: {e}")).with_delivery(Delivery::Answered)
}

fn verify_failed(e: VerifyError) -> Error {
    Error::new(ErrorKind::Resource, e.to_string())
        .with_subject(e.uri().to_owned())
        .with_delivery(Delivery::Answered)
}
