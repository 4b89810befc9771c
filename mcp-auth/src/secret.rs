//! [`Secret`]: a string that is never shown — not in `Debug`, `Display`, logs or errors.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A token, code, verifier or client secret. `Debug` and `Display` print `<redacted>`; the value
/// is read only through [`Secret::expose`], at the point where it goes on the wire or into the
/// credential store. It serializes as the plain string, so only the store's own format (an OS
/// credential store entry) ever holds it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself — for the wire or the store only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_shown() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?} {s}"), "<redacted> <redacted>");
        assert_eq!(s.expose(), "hunter2");
        assert_eq!(
            serde_json::to_string(&s).ok().as_deref(),
            Some("\"hunter2\"")
        );
    }
}
