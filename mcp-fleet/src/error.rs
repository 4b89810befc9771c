//! [`FleetError`]: what went wrong, naming Redis by its URL without a password and an entry by
//! its Redis key (a hash), never a token, key or password.

use mcp_auth::StoreError;

/// A fleet operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FleetError {
    /// The Redis URL cannot be used (the URL shown has any password replaced).
    #[error("invalid Redis URL {url}: {reason}")]
    InvalidUrl {
        /// The URL, password redacted.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A setting other than the URL cannot be used.
    #[error("invalid fleet setting: {0}")]
    InvalidSetting(String),

    /// The store key is not 32 bytes in a form this crate reads.
    #[error("{origin} is not a usable store key: {reason}")]
    InvalidKey {
        /// Where the key came from ("MCPH_STORE_KEY").
        origin: String,
        /// What was found instead (lengths, never the value).
        reason: String,
    },

    /// Redis did not answer: it cannot be connected to, the connection broke, or the operation
    /// took longer than the timeout.
    #[error("Redis at {url} is unreachable ({what}): {reason}")]
    Unreachable {
        /// Redis's URL, without a password.
        url: String,
        /// What was being done.
        what: String,
        /// Why (the client library's words, any password removed).
        reason: String,
    },

    /// Redis answered with an error (a wrong password, a refused command).
    #[error("Redis at {url} refused {what}: {reason}")]
    Refused {
        /// Redis's URL, without a password.
        url: String,
        /// What was being done.
        what: String,
        /// Redis's answer (any password removed).
        reason: String,
    },

    /// A stored entry cannot be decrypted with the configured key.
    #[error(
        "the token store entry {entry} cannot be decrypted: it was written with key id \
         {entry_key_id}, {key_origin} has id {key_id}{hint}"
    )]
    Undecryptable {
        /// The entry's Redis key.
        entry: String,
        /// The id of the key the entry says it was written with (`kid`).
        entry_key_id: String,
        /// Where the configured key came from.
        key_origin: String,
        /// The configured key's id.
        key_id: String,
        /// What probably happened.
        hint: &'static str,
    },

    /// A stored entry is not in this crate's format (a field missing or malformed).
    #[error("the token store entry {entry} is malformed: {reason}")]
    Malformed {
        /// The entry's Redis key.
        entry: String,
        /// What is wrong (never a value).
        reason: String,
    },

    /// The operating system gave no random bytes.
    #[error("no random bytes for {what}: {reason}")]
    Random {
        /// What they were for.
        what: &'static str,
        /// The system's error.
        reason: String,
    },
}

impl FleetError {
    /// Whether Redis could not be reached (rather than answering with an error): the cases a
    /// lock or a rate limit falls back to this machine for.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, FleetError::Unreachable { .. })
    }
}

impl From<FleetError> for StoreError {
    fn from(error: FleetError) -> StoreError {
        StoreError(error.to_string())
    }
}
