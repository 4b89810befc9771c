//! [`FleetSettings`] and [`StoreKeyMaterial`].

use std::fmt;
use std::time::Duration;

use base64::Engine;
use mcp_auth::store::{LockDir, ENTRY_LOCK_TTL};
use mcp_auth::Secret;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::error::FleetError;

/// The key prefix when none is configured.
pub const DEFAULT_PREFIX: &str = "mcph";

/// The longest one Redis operation (connecting included) may take when none is configured.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(2);

/// The service whose lock directory the refresh lock falls back to
/// ([`LockDir::for_service`]): the one the OS credential store's lock uses, so a replica
/// whose Redis is down and a local `mcph` on the same machine still exclude each other.
pub const FALLBACK_LOCK_SERVICE: &str = "mcp-client";

/// Where a fleet's Redis is and how to use it.
///
/// `Debug` shows neither the key (only its id) nor the password.
#[derive(Clone)]
pub struct FleetSettings {
    /// `redis://host:port/db`, `rediss://…` (TLS) or `redis+unix:///path`; an ACL user name may
    /// be in it, a password may not (give it as [`password`](Self::password), so the URL can be
    /// shown).
    pub url: String,
    /// The Redis password (`AUTH`), if it wants one.
    pub password: Option<Secret>,
    /// The key the token store encrypts with; every replica needs the same one.
    pub key: StoreKeyMaterial,
    /// Where the key came from, for messages ("MCPH_STORE_KEY").
    pub key_source: String,
    /// What every key name starts with, so several fleets can share one Redis. Default `mcph`.
    pub prefix: String,
    /// The longest one Redis operation may take, connecting included. Default 2 s.
    pub op_timeout: Duration,
    /// How long a refresh lock lives on Redis when its holder never gives it back. Default
    /// [`ENTRY_LOCK_TTL`] (40 s).
    pub lock_ttl: Duration,
    /// Where the refresh lock falls back to while Redis is unreachable. Default
    /// `LockDir::for_service("mcp-client")`.
    pub lock_dir: LockDir,
    /// The CA certificate(s), PEM, that a `rediss://` server's certificate must chain to —
    /// instead of the system's roots (a private Redis with its own CA). Default: none, the
    /// system's roots.
    pub tls_ca_pem: Option<Vec<u8>>,
}

impl FleetSettings {
    /// Settings for the Redis at `url` with `key` (read from `key_source`), everything else
    /// default.
    pub fn new(
        url: impl Into<String>,
        key: StoreKeyMaterial,
        key_source: impl Into<String>,
    ) -> FleetSettings {
        FleetSettings {
            url: url.into(),
            password: None,
            key,
            key_source: key_source.into(),
            prefix: DEFAULT_PREFIX.to_owned(),
            op_timeout: DEFAULT_OP_TIMEOUT,
            lock_ttl: ENTRY_LOCK_TTL,
            lock_dir: LockDir::for_service(FALLBACK_LOCK_SERVICE),
            tls_ca_pem: None,
        }
    }

    /// Sets the password.
    pub fn with_password(mut self, password: Secret) -> Self {
        self.password = Some(password);
        self
    }

    /// Sets the key prefix.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets the per-operation timeout.
    pub fn with_op_timeout(mut self, op_timeout: Duration) -> Self {
        self.op_timeout = op_timeout;
        self
    }

    /// Sets the refresh lock's time-to-live.
    pub fn with_lock_ttl(mut self, lock_ttl: Duration) -> Self {
        self.lock_ttl = lock_ttl;
        self
    }

    /// Sets the fallback lock directory.
    pub fn with_lock_dir(mut self, lock_dir: LockDir) -> Self {
        self.lock_dir = lock_dir;
        self
    }

    /// Trusts only `pem`'s CA certificate(s) for `rediss://`.
    pub fn with_tls_ca_pem(mut self, pem: Vec<u8>) -> Self {
        self.tls_ca_pem = Some(pem);
        self
    }

    /// Checks what [`Fleet::new`](crate::Fleet::new) cannot check through the URL.
    pub(crate) fn check(&self) -> Result<(), FleetError> {
        if self.prefix.is_empty()
            || self
                .prefix
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(FleetError::InvalidSetting(format!(
                "the key prefix {:?} must be non-empty, without spaces or control characters",
                self.prefix
            )));
        }
        if self.op_timeout.is_zero() {
            return Err(FleetError::InvalidSetting(
                "the Redis operation timeout must be above zero".into(),
            ));
        }
        if self.lock_ttl < Duration::from_millis(1) {
            return Err(FleetError::InvalidSetting(
                "the refresh lock's time-to-live must be at least 1 ms".into(),
            ));
        }
        Ok(())
    }
}

impl fmt::Debug for FleetSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetSettings")
            .field("url", &crate::connection::redact_url(&self.url))
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("key", &self.key)
            .field("key_source", &self.key_source)
            .field("prefix", &self.prefix)
            .field("op_timeout", &self.op_timeout)
            .field("lock_ttl", &self.lock_ttl)
            .field("lock_dir", &self.lock_dir)
            .field("tls_ca_pem", &self.tls_ca_pem.as_ref().map(Vec::len))
            .finish()
    }
}

/// The 32-byte AES-256 key a fleet's token store is encrypted with.
///
/// Written as 64 hex characters or as base64 (standard or URL-safe, padded or not) of 32
/// bytes. `Debug` shows only its [id](Self::key_id); the bytes are wiped when dropped.
///
/// ```
/// use mcp_fleet::StoreKeyMaterial;
///
/// let key = StoreKeyMaterial::generate()?;
/// let text = key.to_base64();
/// let again = StoreKeyMaterial::parse("MCPH_STORE_KEY", text.expose())?;
/// assert_eq!(again.key_id(), key.key_id());
/// assert!(StoreKeyMaterial::parse("MCPH_STORE_KEY", "too short").is_err());
/// # Ok::<(), mcp_fleet::FleetError>(())
/// ```
#[derive(Clone)]
pub struct StoreKeyMaterial {
    bytes: Zeroizing<[u8; 32]>,
}

impl StoreKeyMaterial {
    /// The key of these 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> StoreKeyMaterial {
        StoreKeyMaterial {
            bytes: Zeroizing::new(bytes),
        }
    }

    /// A new random key (from the operating system's generator).
    pub fn generate() -> Result<StoreKeyMaterial, FleetError> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        getrandom::fill(bytes.as_mut_slice()).map_err(|e| FleetError::Random {
            what: "a store key",
            reason: e.to_string(),
        })?;
        Ok(StoreKeyMaterial { bytes })
    }

    /// Reads a key: 64 hex characters, or base64 of 32 bytes (standard or URL-safe alphabet,
    /// with or without padding); surrounding whitespace is ignored. The error names `origin`
    /// (e.g. `"MCPH_STORE_KEY"`) and what was found — its length, never its value.
    pub fn parse(origin: &str, text: &str) -> Result<StoreKeyMaterial, FleetError> {
        let text = text.trim();
        let invalid = |reason: String| FleetError::InvalidKey {
            origin: origin.to_owned(),
            reason: format!(
                "{reason}; a store key is 64 hex characters or the base64 of 32 bytes \
                 (`mcph auth store-key` makes one)"
            ),
        };
        if text.is_empty() {
            return Err(invalid("it is empty".into()));
        }
        if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut bytes = Zeroizing::new([0u8; 32]);
            for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
                *byte = (hex_value(pair[0]) << 4) | hex_value(pair[1]);
            }
            return Ok(StoreKeyMaterial { bytes });
        }
        let engines = [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ];
        let decoded = engines
            .iter()
            .find_map(|engine| engine.decode(text).ok().map(Zeroizing::new));
        match decoded {
            Some(decoded) => match <[u8; 32]>::try_from(decoded.as_slice()) {
                Ok(bytes) => Ok(StoreKeyMaterial::from_bytes(bytes)),
                Err(_) => Err(invalid(format!(
                    "it is base64 of {} bytes, not 32",
                    decoded.len()
                ))),
            },
            None => Err(invalid(format!(
                "found {} characters that are neither 64 hex characters nor base64",
                text.chars().count()
            ))),
        }
    }

    /// The key as standard, padded base64 (44 characters) — to hand to the other replicas.
    /// A [`Secret`]: shown only through [`Secret::expose`].
    pub fn to_base64(&self) -> Secret {
        Secret::new(base64::engine::general_purpose::STANDARD.encode(self.bytes.as_slice()))
    }

    /// The key's id: the first 8 hex characters of its SHA-256. Stored with every entry (`kid`)
    /// so a replica with another key can say so; it reveals nothing usable about the key.
    pub fn key_id(&self) -> String {
        let digest = Sha256::digest(self.bytes.as_slice());
        hex(&digest[..4])
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }
}

impl fmt::Debug for StoreKeyMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreKeyMaterial")
            .field("id", &self.key_id())
            .finish()
    }
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of one hex digit (the caller checked it is one).
fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        b'A'..=b'F' => digit - b'A' + 10,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "MCPH_STORE_KEY";

    #[test]
    fn keys_parse_from_hex_and_every_base64_form() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 7 + 250) as u8);
        let key = StoreKeyMaterial::from_bytes(bytes);
        let hex_text = hex(&bytes);
        let forms = [
            hex_text.clone(),
            hex_text.to_uppercase(),
            format!("  {hex_text}\n"),
            base64::engine::general_purpose::STANDARD.encode(bytes),
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes),
            base64::engine::general_purpose::URL_SAFE.encode(bytes),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
            key.to_base64().expose().to_owned(),
        ];
        for form in forms {
            let parsed = StoreKeyMaterial::parse(ORIGIN, &form).unwrap();
            assert_eq!(parsed.bytes(), &bytes, "{form}");
        }
    }

    #[test]
    fn a_bad_key_names_its_origin_and_length_but_never_its_value() {
        let cases = [
            ("", "it is empty"),
            ("0123456789abcdef", "it is base64 of 12 bytes, not 32"),
            ("not a key at all!", "found 17 characters"),
            (&"ab".repeat(31), "found 62 characters"),
            (&"zz".repeat(32), "base64 of 48 bytes"),
        ];
        for (text, expected) in cases {
            let err = StoreKeyMaterial::parse(ORIGIN, text)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("MCPH_STORE_KEY is not a usable store key"),
                "{err}"
            );
            assert!(err.contains(expected), "{text:?}: {err}");
            if !text.is_empty() {
                assert!(!err.contains(text), "the value is never shown: {err}");
            }
        }
    }

    #[test]
    fn debug_shows_the_key_id_only() {
        let key = StoreKeyMaterial::generate().unwrap();
        let settings = FleetSettings::new("redis://127.0.0.1:6379", key.clone(), ORIGIN)
            .with_password(Secret::new("pa55word-xyz"));
        let shown = format!("{settings:?}");
        let secret = key.to_base64();
        assert!(!shown.contains(secret.expose()), "{shown}");
        assert!(!shown.contains(&hex(key.bytes())), "{shown}");
        assert!(!shown.contains("pa55word"), "{shown}");
        assert!(shown.contains(&key.key_id()), "{shown}");
        assert_eq!(key.key_id().len(), 8);
        assert_ne!(
            StoreKeyMaterial::generate().unwrap().key_id(),
            key.key_id(),
            "random keys differ"
        );
    }
}
