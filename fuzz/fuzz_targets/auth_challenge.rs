//! `WWW-Authenticate` challenges (mcp-auth `metadata.rs`): the `Bearer` and `DPoP` schemes,
//! their auth-params (tokens and quoted strings with escapes), other schemes skipped. What is
//! read never holds more text than the header had, and the scope and algorithm lists are
//! words.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_auth::{ResourceChallenge, TokenType};

fuzz_target!(|data: &[u8]| {
    // Header values reach the parser as text (`HeaderValue::to_str`).
    let Ok(header) = std::str::from_utf8(data) else {
        return;
    };
    let _ = TokenType::parse(header);
    let Some(challenge) = ResourceChallenge::parse(header) else {
        return;
    };
    let lower = header.to_ascii_lowercase();
    assert!(
        lower.contains("bearer") || lower.contains("dpop"),
        "a challenge found without its scheme"
    );
    let words = |list: &Option<Vec<String>>| -> usize {
        list.iter()
            .flatten()
            .inspect(|word| {
                assert!(!word.is_empty(), "an empty word in a list");
                assert!(
                    !word.contains(char::is_whitespace),
                    "a word with a blank: {word:?}"
                );
            })
            .map(String::len)
            .sum()
    };
    // Each parameter is taken once (the first wins), so the parts add up to at most the
    // header itself.
    let kept = challenge.resource_metadata.as_ref().map_or(0, String::len)
        + challenge.error.as_ref().map_or(0, String::len)
        + challenge.error_description.as_ref().map_or(0, String::len)
        + words(&challenge.scope)
        + words(&challenge.dpop_algs);
    assert!(
        kept <= header.len(),
        "{kept} bytes read out of a {}-byte header",
        header.len()
    );
    assert_eq!(
        challenge.is_insufficient_scope(),
        challenge.error.as_deref() == Some("insufficient_scope")
    );
    assert_eq!(
        challenge.is_dpop_nonce(),
        challenge.error.as_deref() == Some("use_dpop_nonce")
    );
    assert!(
        !challenge.dpop || lower.contains("dpop"),
        "DPoP offered without the scheme"
    );
});
