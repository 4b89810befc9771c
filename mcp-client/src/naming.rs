//! Qualified names (`server__tool`) that LLM APIs accept.
//!
//! Model APIs restrict tool names to `^[a-zA-Z0-9_-]{1,64}$`. A qualified name is the server name
//! and the tool name, each reduced to those characters, joined by `__`. When that is too long, or
//! when two different (server, tool) pairs would get the same name, the name is cut and given a
//! suffix derived from a stable hash of the original pair, so the mapping is deterministic (the
//! same config always yields the same names, whatever the order servers answer in) and
//! collision-free. The original names are kept for the wire.

use std::collections::HashMap;

/// The longest name model APIs accept.
pub const MAX_QUALIFIED_LEN: usize = 64;
/// Between the server and the tool part.
pub const SEPARATOR: &str = "__";

fn sanitize(part: &str) -> String {
    let cleaned: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}

/// FNV-1a 64: stable across runs and platforms (std's hasher is randomized).
fn stable_hash(server: &str, name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in server.bytes().chain([0u8]).chain(name.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn with_suffix(base: &str, server: &str, name: &str) -> String {
    let suffix = format!("_{:08x}", stable_hash(server, name) as u32);
    let keep = MAX_QUALIFIED_LEN - suffix.len();
    let mut cut = base.len().min(keep);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &base[..cut])
}

/// The qualified name of one (server, name) pair, ignoring collisions.
pub fn qualify(server: &str, name: &str) -> String {
    qualify_with(server, name, SEPARATOR)
}

/// [`qualify`] with another separator between the parts (a gateway's choice; the parts are
/// reduced as always, the separator is kept as given).
pub fn qualify_with(server: &str, name: &str, separator: &str) -> String {
    let base = format!("{}{separator}{}", sanitize(server), sanitize(name));
    if base.len() <= MAX_QUALIFIED_LEN {
        base
    } else {
        with_suffix(&base, server, name)
    }
}

/// Qualified names for a whole set of pairs, collision-free: pairs whose plain names clash all get
/// hash suffixes. Returns names in the order of `pairs`.
pub fn qualify_all<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    qualify_all_with(pairs, SEPARATOR)
}

/// [`qualify_all`] with another separator between the parts.
pub fn qualify_all_with<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    separator: &str,
) -> Vec<String> {
    let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
    let plain: Vec<String> = pairs
        .iter()
        .map(|(s, n)| qualify_with(s, n, separator))
        .collect();
    let mut owners: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, name) in plain.iter().enumerate() {
        owners.entry(name.as_str()).or_default().push(i);
    }
    let mut names = plain.clone();
    for indices in owners.values() {
        let distinct = indices
            .iter()
            .map(|&i| pairs[i])
            .collect::<std::collections::HashSet<_>>();
        if distinct.len() > 1 {
            for &i in indices {
                let (server, name) = pairs[i];
                names[i] = with_suffix(&plain[i], server, name);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_QUALIFIED_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_join_server_and_tool() {
        assert_eq!(qualify("github", "create_issue"), "github__create_issue");
        assert_eq!(qualify("my server", "get.sum"), "my_server__get_sum");
        assert_eq!(qualify("everything", "get-sum"), "everything__get-sum");
        assert_eq!(qualify("", "x"), "___x");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_suffix() {
        let server = "a-very-long-server-name-for-a-very-particular-purpose";
        let tool = "and_an_even_longer_tool_name_that_goes_on_and_on";
        let name = qualify(server, tool);
        assert!(valid(&name), "{name}");
        assert_eq!(name.len(), MAX_QUALIFIED_LEN);
        assert_eq!(name, qualify(server, tool), "deterministic");
        assert_ne!(
            name,
            qualify(server, "and_an_even_longer_tool_name_that_goes_on_and_oN")
        );
    }

    #[test]
    fn colliding_pairs_get_distinct_deterministic_names() {
        let pairs = [("a b", "t"), ("a_b", "t"), ("c", "u"), ("c", "u")];
        let names = qualify_all(pairs);
        assert_ne!(names[0], names[1]);
        assert!(names[0].starts_with("a_b__t_") && names[1].starts_with("a_b__t_"));
        assert_eq!(names[2], "c__u", "the same pair twice is not a collision");
        let reversed = qualify_all([pairs[1], pairs[0]]);
        assert_eq!(
            reversed,
            vec![names[1].clone(), names[0].clone()],
            "order does not matter"
        );
        assert!(names.iter().all(|n| valid(n)));
    }

    #[test]
    fn unicode_is_replaced_not_split() {
        let name = qualify("сервер", "ツール");
        assert!(valid(&name), "{name}");
    }
}
