//! RFC 6570 URI templates (mcp-resources `template.rs`): parse, expand and match. A template
//! that parses prints back as itself, its expansion is bounded by its size and its values', a
//! URI made by expanding it with values found by matching matches it again, and matching a
//! pathological template gives up instead of running on.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use mcp_resources::{UriTemplate, MAX_TEMPLATE_BYTES, MAX_TEMPLATE_PARTS};

fuzz_target!(|data: &[u8]| {
    // The template, a NUL, then a URI to match.
    let mut halves = data.splitn(2, |&b| b == 0);
    let template = String::from_utf8_lossy(halves.next().unwrap_or_default());
    let uri = String::from_utf8_lossy(halves.next().unwrap_or_default());
    let parsed = match UriTemplate::parse(&template) {
        Ok(parsed) => parsed,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "an error without a message");
            return;
        }
    };
    assert!(template.len() <= MAX_TEMPLATE_BYTES);
    assert_eq!(parsed.to_string(), template);
    assert_eq!(UriTemplate::parse(&template).ok().as_ref(), Some(&parsed));

    // Values taken from the URI, one slice per variable.
    let names: Vec<String> = parsed.variables().map(str::to_owned).collect();
    assert!(names.len() <= MAX_TEMPLATE_PARTS * 64);
    let mut values = BTreeMap::new();
    let mut rest = uri.as_ref();
    for name in &names {
        let cut = rest.char_indices().nth(4).map_or(rest.len(), |(i, _)| i);
        values.insert(name.clone(), rest[..cut].to_owned());
        rest = &rest[cut..];
    }
    let expanded = parsed.expand(&values);
    // Each variable occurrence writes its name, `=`, and its value percent-encoded at most.
    let bound: usize = template.len()
        + names
            .iter()
            .map(|n| n.len() + 2 + 3 * values.get(n).map_or(0, String::len))
            .sum::<usize>();
    assert!(
        expanded.len() <= bound,
        "{} bytes expanded from a {}-byte template",
        expanded.len(),
        template.len()
    );
    let _ = parsed.matches(&expanded);

    if let Some(found) = parsed.matches(&uri) {
        for name in found.keys() {
            assert!(
                names.contains(name),
                "matching found an unknown variable {name}"
            );
        }
        let again = parsed.expand(&found);
        let _ = parsed.matches(&again);
    }
});
