//! `mcp-skills`: the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) for MCP
//! clients, on any [`McpService`](mcp_core::McpService) (a session, or a stack of layers around
//! one).
//!
//! A server that offers the extension lists its skills with `skills/list`: each entry names the
//! skill's `SKILL.md` (`skill://<path>/SKILL.md`), carries the frontmatter of that file, and lists
//! the skill's files with their size and `sha256:` digest. A host loads a skill only when it needs
//! it, and uses nothing it has not verified.
//!
//! - **Requests** ([`SkillsExt`], `ext.rs`):
//!   [`list_skills`](SkillsExt::list_skills) / [`list_all_skills`](SkillsExt::list_all_skills)
//!   read the listing and nothing else (no file is fetched ahead of need);
//!   [`get_skill`](SkillsExt::get_skill) reads one entry;
//!   [`load_skill`](SkillsExt::load_skill) reads `SKILL.md`, checks its size and digest against
//!   the entry, parses its frontmatter and compares it field by field with the entry's (any
//!   difference is an error and nothing of the file is returned);
//!   [`read_skill_file`](SkillsExt::read_skill_file) reads one more file the entry lists,
//!   verified the same way (text files; a URI the entry does not list is refused).
//!   [`offers_skills`] reads a server's capabilities.
//! - **Types** (`types.rs`): [`SkillEntry`], [`SkillFile`], [`SkillResources`],
//!   [`ListSkillsResult`], [`LoadedSkill`]; the names ([`SKILLS_EXTENSION`], [`SKILLS_LIST`],
//!   [`SKILLS_GET`], [`SKILL_MD`]) and the total-size limit of a skill, [`MAX_SKILL_SIZE`].
//! - **Reading the listing** (`listing.rs`): entry by entry, so that a malformed one leaves out
//!   its own skill only, reported as an [`InvalidSkill`] naming the skill, field and index.
//! - **Verification** (`verify.rs`): size, then digest ([`digest_of`]); every refusal is a
//!   [`VerifyError`].
//! - **Frontmatter** (`frontmatter.rs`): [`frontmatter_of`] reads the YAML (refusing aliases
//!   and deep nesting before loading it) as JSON; [`same_frontmatter`] compares two.
//! - **A file's text** (`file_text.rs`, internal): taken out of a `resources/read` result
//!   without copying more than the listed size.
//!
//! ```no_run
//! # async fn run(session: mcp_session::ClientSession) -> Result<(), mcp_core::Error> {
//! use mcp_core::RequestOptions;
//! use mcp_skills::SkillsExt;
//! for entry in session.list_all_skills(RequestOptions::new()).await? {
//!     println!("{}: {}", entry.name().unwrap_or("?"), entry.description().unwrap_or(""));
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

#[cfg(test)]
mod allocations;
mod ext;
mod file_text;
mod frontmatter;
mod listing;
mod types;
mod verify;

pub use ext::{offers_skills, SkillsExt};
pub use frontmatter::{frontmatter_of, same_frontmatter};
pub use listing::InvalidSkill;
pub use types::{
    ListSkillsResult, LoadedSkill, SkillEntry, SkillFile, SkillResources, MAX_SKILL_SIZE,
    SKILLS_EXTENSION, SKILLS_GET, SKILLS_LIST, SKILL_MD,
};
pub use verify::{digest_of, VerifyError};
