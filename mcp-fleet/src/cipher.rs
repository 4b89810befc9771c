//! AES-256-GCM of one store entry: a random 96-bit nonce per write, and the entry's Redis key
//! name and generation as associated data — so an entry copied under another key, or with its
//! `gen` field edited, fails to decrypt instead of being read as someone else's (or an older)
//! entry.
//!
//! The stored form is base64 of nonce ‖ ciphertext ‖ tag.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use zeroize::Zeroizing;

use crate::error::FleetError;
use crate::settings::StoreKeyMaterial;

/// Bytes of a GCM nonce.
const NONCE_LEN: usize = 12;

/// Bytes of a GCM tag.
const TAG_LEN: usize = 16;

/// The cipher of one key.
pub(crate) struct EntryCipher {
    cipher: Aes256Gcm,
    key_id: String,
}

impl EntryCipher {
    /// The cipher of `key`.
    pub(crate) fn new(key: &StoreKeyMaterial) -> EntryCipher {
        EntryCipher {
            cipher: Aes256Gcm::new(&(*key.bytes()).into()),
            key_id: key.key_id(),
        }
    }

    /// The key's id ([`StoreKeyMaterial::key_id`]).
    pub(crate) fn key_id(&self) -> &str {
        &self.key_id
    }

    /// `plaintext` sealed for the entry `redis_key` at `generation`, as base64.
    pub(crate) fn seal(
        &self,
        redis_key: &str,
        generation: u64,
        plaintext: &[u8],
    ) -> Result<String, FleetError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| FleetError::Random {
            what: "a nonce",
            reason: e.to_string(),
        })?;
        let aad = associated_data(redis_key, generation);
        let sealed = self
            .cipher
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .map_err(|_| FleetError::Malformed {
                entry: redis_key.to_owned(),
                reason: "the entry is too large to encrypt".into(),
            })?;
        let mut stored = Vec::with_capacity(NONCE_LEN + sealed.len());
        stored.extend_from_slice(&nonce);
        stored.extend_from_slice(&sealed);
        Ok(base64::engine::general_purpose::STANDARD.encode(stored))
    }

    /// The plaintext of `data` (from [`seal`](Self::seal)) for `redis_key` at `generation`;
    /// `None` when it does not decrypt (another key, another entry or generation, or edited).
    pub(crate) fn open(
        &self,
        redis_key: &str,
        generation: u64,
        data: &str,
    ) -> Result<Option<Zeroizing<Vec<u8>>>, FleetError> {
        let stored = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|_| FleetError::Malformed {
                entry: redis_key.to_owned(),
                reason: "its data is not base64".into(),
            })?;
        if stored.len() < NONCE_LEN + TAG_LEN {
            return Err(FleetError::Malformed {
                entry: redis_key.to_owned(),
                reason: format!("its data is {} bytes, too short to be sealed", stored.len()),
            });
        }
        let (nonce, sealed) = stored.split_at(NONCE_LEN);
        let nonce = Nonce::try_from(nonce).map_err(|_| FleetError::Malformed {
            entry: redis_key.to_owned(),
            reason: "its nonce is not 12 bytes".into(),
        })?;
        let aad = associated_data(redis_key, generation);
        Ok(self
            .cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: sealed,
                    aad: &aad,
                },
            )
            .ok()
            .map(Zeroizing::new))
    }
}

/// What a sealed entry is bound to: its Redis key name and its generation.
fn associated_data(redis_key: &str, generation: u64) -> Vec<u8> {
    format!("{redis_key}\n{generation}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_entries_open_only_for_their_key_name_generation_and_key() {
        let key = StoreKeyMaterial::from_bytes([1; 32]);
        let cipher = EntryCipher::new(&key);
        let sealed = cipher.seal("mcph:oauth:abc", 7, b"{\"tokens\":1}").unwrap();
        let opened = cipher.open("mcph:oauth:abc", 7, &sealed).unwrap().unwrap();
        assert_eq!(opened.as_slice(), b"{\"tokens\":1}");
        assert!(cipher.open("mcph:oauth:abd", 7, &sealed).unwrap().is_none());
        assert!(cipher.open("mcph:oauth:abc", 8, &sealed).unwrap().is_none());
        let other = EntryCipher::new(&StoreKeyMaterial::from_bytes([2; 32]));
        assert!(other.open("mcph:oauth:abc", 7, &sealed).unwrap().is_none());
        assert_ne!(
            cipher.seal("mcph:oauth:abc", 7, b"same").unwrap(),
            cipher.seal("mcph:oauth:abc", 7, b"same").unwrap(),
            "a fresh nonce every time"
        );
        assert!(
            cipher.open("mcph:oauth:abc", 7, "AAAA").is_err(),
            "too short"
        );
        assert!(
            cipher.open("mcph:oauth:abc", 7, "%%%").is_err(),
            "not base64"
        );
    }
}
