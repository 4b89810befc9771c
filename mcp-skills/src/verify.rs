//! Verifying a skill file against its entry: the byte size, then the `sha256:` digest.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::types::{SkillFile, MAX_SKILL_SIZE};

/// Why a skill (or one of its files) was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The file is not among the entry's listed files (or the skill lists none).
    NotListed {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The file asked for.
        uri: String,
    },
    /// The entry lists files that add up to more than [`MAX_SKILL_SIZE`]; none is read.
    TooLarge {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The sum of its files' listed sizes.
        total: u64,
    },
    /// The bytes read are not as many as the entry says (a longer text is measured where it
    /// lies in the message, never copied out of it).
    SizeMismatch {
        /// The file.
        uri: String,
        /// The entry's size.
        expected: u64,
        /// The bytes received.
        got: u64,
    },
    /// The bytes read do not have the entry's digest (or the entry's digest is malformed).
    DigestMismatch {
        /// The file.
        uri: String,
        /// The entry's digest.
        expected: String,
        /// The digest of the bytes received.
        got: String,
    },
    /// `SKILL.md` has no readable YAML frontmatter.
    Frontmatter {
        /// The file.
        uri: String,
        /// What is wrong with it.
        why: String,
    },
    /// The frontmatter of `SKILL.md` differs from the entry's.
    FrontmatterMismatch {
        /// The file.
        uri: String,
        /// The first field that differs.
        field: String,
    },
}

impl VerifyError {
    /// The file the error is about (the skill's `SKILL.md` for [`TooLarge`](Self::TooLarge)).
    pub fn uri(&self) -> &str {
        match self {
            VerifyError::TooLarge { skill, .. } => skill,
            VerifyError::NotListed { uri, .. }
            | VerifyError::SizeMismatch { uri, .. }
            | VerifyError::DigestMismatch { uri, .. }
            | VerifyError::Frontmatter { uri, .. }
            | VerifyError::FrontmatterMismatch { uri, .. } => uri,
        }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::NotListed { skill, uri } => write!(
                f,
                "{uri} is not a file the skill {skill} lists, so it cannot be verified; not read"
            ),
            VerifyError::TooLarge { skill, total } => write!(
                f,
                "{skill}: the listing says its files add up to {total} bytes, over the \
                 {MAX_SKILL_SIZE}-byte limit of a skill; not read"
            ),
            VerifyError::SizeMismatch { uri, expected, got } => write!(
                f,
                "{uri}: skill file verification failed: {got} bytes received, the listing says {expected}; not used"
            ),
            VerifyError::DigestMismatch { uri, expected, got } => write!(
                f,
                "{uri}: skill file verification failed: digest {got}, the listing says {expected}; not used"
            ),
            VerifyError::Frontmatter { uri, why } => {
                write!(f, "{uri}: the skill's frontmatter is unreadable: {why}; not loaded")
            }
            VerifyError::FrontmatterMismatch { uri, field } => write!(
                f,
                "{uri}: the frontmatter field {field:?} differs from the listing's; not loaded"
            ),
        }
    }
}

impl std::error::Error for VerifyError {}

/// `sha256:<hex>` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for byte in hash {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

/// Checks `bytes` against the listing's size, then digest.
pub(crate) fn check(file: &SkillFile, bytes: &[u8]) -> Result<(), VerifyError> {
    let got = bytes.len() as u64;
    if got != file.size {
        return Err(VerifyError::SizeMismatch {
            uri: file.uri.clone(),
            expected: file.size,
            got,
        });
    }
    let digest = digest_of(bytes);
    if !digest.eq_ignore_ascii_case(&file.digest) {
        return Err(VerifyError::DigestMismatch {
            uri: file.uri.clone(),
            expected: file.digest.clone(),
            got: digest,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> SkillFile {
        SkillFile {
            uri: "skill://s/SKILL.md".into(),
            digest: digest_of(text.as_bytes()),
            size: text.len() as u64,
        }
    }

    #[test]
    fn size_then_digest_are_checked() {
        assert_eq!(
            digest_of(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let listed = file("body");
        assert!(check(&listed, b"body").is_ok());
        let err = check(&listed, b"body!").unwrap_err();
        assert!(
            matches!(
                err,
                VerifyError::SizeMismatch {
                    expected: 4,
                    got: 5,
                    ..
                }
            ),
            "{err}"
        );
        let err = check(&listed, b"bodY").unwrap_err();
        assert!(matches!(err, VerifyError::DigestMismatch { .. }), "{err}");
        assert!(err.to_string().contains("not used"), "{err}");
        let mut malformed = listed.clone();
        malformed.digest = "md5:00".into();
        assert!(check(&malformed, b"body").is_err());
    }
}
