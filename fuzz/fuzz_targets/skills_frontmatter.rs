//! The YAML frontmatter of a `SKILL.md` (mcp-skills `frontmatter.rs`), which comes from the
//! server: it reads as a map and a body that is the rest of the file, or fails with a reason;
//! what it reads is bounded by the file's size (no alias expansion, no deep nesting), and it
//! compares equal to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_skills::{frontmatter_of, same_frontmatter};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match frontmatter_of(text) {
        Ok((map, body)) => {
            assert!(text.ends_with(body), "the body is not the end of the file");
            let json = serde_json::to_string(&map).expect("a JSON map is JSON");
            // YAML's shortest forms grow a little as JSON (`~` is `null`, `0x1` is `1`,
            // `.inf` is a string…), never by a multiple of the input.
            assert!(
                json.len() <= 8 * text.len() + 64,
                "{} bytes of JSON from a {}-byte file",
                json.len(),
                text.len()
            );
            assert_eq!(
                same_frontmatter(&map, &map),
                None,
                "a frontmatter differs from itself"
            );
        }
        Err(reason) => assert!(!reason.is_empty(), "an error without a reason"),
    }
});
