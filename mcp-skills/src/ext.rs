//! The extension's requests on any [`McpService`]: listing skills, and loading one (or one of
//! its files) only after verifying it against its entry.

use std::future::Future;

use mcp_core::service::pagination::{collect_pages, DEFAULT_MAX_PAGES};
use mcp_core::types::{methods, ReadResourceRequestParams, ServerCapabilities};
use mcp_core::{Delivery, Error, ErrorKind, McpService, Operation, Payload, RequestOptions};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::file_text::{file_text, FileText};
use crate::frontmatter::{frontmatter_of, same_frontmatter};
use crate::types::{
    ListSkillsResult, LoadedSkill, SkillEntry, MAX_SKILL_SIZE, SKILLS_EXTENSION, SKILLS_GET,
    SKILLS_LIST,
};
use crate::verify::{self, VerifyError};

/// The Skills extension's requests, on any [`McpService`].
pub trait SkillsExt: McpService {
    /// `skills/list`: one page. A malformed entry does not fail the page: it is left out of
    /// [`skills`](ListSkillsResult::skills) and reported in
    /// [`invalid`](ListSkillsResult::invalid), naming the skill, the field and the index.
    fn list_skills(
        &self,
        cursor: Option<String>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<ListSkillsResult, Error>> + Send {
        let mut params = Map::new();
        if let Some(cursor) = cursor {
            params.insert("cursor".into(), Value::String(cursor));
        }
        let operation = Operation::new(SKILLS_LIST, Some(Payload::Value(Value::Object(params))))
            .with_options(options);
        async move {
            let answer = self.call(operation).await?;
            answer.into_typed().map_err(|e| invalid(SKILLS_LIST, e))
        }
    }

    /// Every well-formed skill, following cursors (at most [`RequestOptions::max_pages`] pages,
    /// default 100; a repeated cursor is an error). Malformed entries are left out; read the
    /// pages with [`list_skills`](Self::list_skills) to see which, and why.
    fn list_all_skills(
        &self,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Vec<SkillEntry>, Error>> + Send {
        async move {
            let max_pages = options.max_pages.unwrap_or(DEFAULT_MAX_PAGES);
            let options = &options;
            collect_pages(SKILLS_LIST, max_pages, |cursor| async move {
                let page = self.list_skills(cursor, options.clone()).await?;
                Ok((page.skills, page.next_cursor))
            })
            .await
        }
    }

    /// `skills/get`: the entry of one skill by its `SKILL.md` URI (a malformed entry is an
    /// error that names the field).
    fn get_skill(
        &self,
        uri: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<SkillEntry, Error>> + Send {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        let operation = Operation::new(SKILLS_GET, Some(Payload::Value(Value::Object(params))))
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
    /// not list, or a skill whose files are not listed, cannot be verified and is refused; so
    /// is a skill whose listed files add up to more than [`MAX_SKILL_SIZE`] (before anything
    /// is read), and a text longer than listed (without copying it out of the message).
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
            let total = entry.listed_size().unwrap_or(0);
            if total > MAX_SKILL_SIZE {
                return Err(verify_failed(VerifyError::TooLarge {
                    skill: entry.uri.clone(),
                    total,
                }));
            }
            // `resources/read`, but the result stays a payload: `file_text` takes the one text
            // out of it, bounded by the listed size.
            let params = ReadResourceRequestParams {
                uri: uri.to_owned(),
            };
            let operation = Operation::with_params(methods::RESOURCES_READ, &params)?
                .with_options(options)
                .with_subject(uri);
            let result = self.call(operation).await?;
            let text = match file_text(&result, uri, file.size) {
                Ok(FileText::Text(text)) => text,
                Ok(FileText::TooLong(got)) => {
                    return Err(verify_failed(VerifyError::SizeMismatch {
                        uri: uri.to_owned(),
                        expected: file.size,
                        got,
                    }))
                }
                Ok(FileText::Absent) => {
                    return Err(Error::new(
                        ErrorKind::Resource,
                        format!("{uri}: the server returned no text content for the skill file"),
                    )
                    .with_subject(uri)
                    .with_delivery(Delivery::Answered))
                }
                Err(e) => return Err(invalid(methods::RESOURCES_READ, e).with_subject(uri)),
            };
            verify::check(file, text.as_bytes()).map_err(verify_failed)?;
            Ok(text)
        }
    }
}

impl<S: McpService + ?Sized> SkillsExt for S {}

/// Whether a server offers the extension (its capabilities' `extensions`).
pub fn offers_skills(capabilities: &ServerCapabilities) -> bool {
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
