//! The names downstream clients see: an upstream's own names when they are unambiguous (one
//! server fronted transparently), qualified names (`server__tool`, with a configurable
//! separator) when they are not or when asked for.

use mcp_client::naming::qualify_all_with;

/// When tool and prompt names carry their server's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prefixing {
    /// Only when two servers offer the same name: with one server, or names that never
    /// collide, each is served under its own name (a single server fronted transparently).
    /// When a collision appears, every name of the list gets its server's prefix, so that a
    /// name never means two things.
    #[default]
    Auto,
    /// Always `server{separator}name`.
    Always,
}

/// The separator the facade uses (`server__tool`).
pub const DEFAULT_SEPARATOR: &str = mcp_client::naming::SEPARATOR;

/// Whether `separator` can stand in a tool name (`[A-Za-z0-9_.-]`, 1 to 8 characters: MCP's
/// rule for tool names, and short enough to leave room for the parts).
pub(crate) fn check_separator(separator: &str) -> Result<(), String> {
    let fine = !separator.is_empty()
        && separator.len() <= 8
        && separator
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "the name separator {separator:?} must be 1 to 8 characters of A-Z, a-z, 0-9, '_', \
             '.' or '-' (MCP's tool-name characters)"
        ))
    }
}

/// The names a list of `(server, name)` pairs is served under, in their order.
pub(crate) fn exposed_names(
    pairs: &[(&str, &str)],
    prefixing: Prefixing,
    separator: &str,
) -> Vec<String> {
    if prefixing == Prefixing::Auto && !collides(pairs) {
        return pairs.iter().map(|(_, name)| (*name).to_owned()).collect();
    }
    qualify_all_with(pairs.iter().copied(), separator)
}

/// Whether two different servers offer the same name.
fn collides(pairs: &[(&str, &str)]) -> bool {
    let mut seen = std::collections::HashMap::with_capacity(pairs.len());
    pairs.iter().any(
        |(server, name)| matches!(seen.insert(*name, *server), Some(other) if other != *server),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_their_own_until_two_servers_share_one() {
        let one = [("files", "read"), ("files", "write")];
        assert_eq!(
            exposed_names(&one, Prefixing::Auto, "__"),
            vec!["read", "write"]
        );
        let apart = [("files", "read"), ("git", "log")];
        assert_eq!(
            exposed_names(&apart, Prefixing::Auto, "__"),
            vec!["read", "log"]
        );
        let clash = [("files", "read"), ("git", "read")];
        assert_eq!(
            exposed_names(&clash, Prefixing::Auto, "__"),
            vec!["files__read", "git__read"]
        );
    }

    #[test]
    fn always_prefixes_with_the_chosen_separator() {
        let one = [("files", "read")];
        assert_eq!(
            exposed_names(&one, Prefixing::Always, "."),
            vec!["files.read"]
        );
    }

    #[test]
    fn separators_are_tool_name_characters() {
        assert!(check_separator("__").is_ok());
        assert!(check_separator(".").is_ok());
        let refused = check_separator(":").unwrap_err();
        assert!(refused.contains("\":\""), "{refused}");
        assert!(check_separator("").is_err());
        assert!(check_separator("_________").is_err());
    }
}
