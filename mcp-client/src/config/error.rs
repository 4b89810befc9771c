//! [`ConfigError`]: where a configuration problem is (file, line, server, field) and what it is.
//!
//! Errors never carry the value of an `env` or `headers` entry (those hold tokens): they name the
//! field and describe the *type* of what was found ("found a number"), never its text.

use std::fmt;
use std::path::{Path, PathBuf};

use super::node::Node;

/// What kind of problem a [`ConfigError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file could not be read.
    Io,
    /// The text is not valid JSON / TOML; the error carries a line and column.
    Syntax,
    /// A field holds a value of the wrong type ("expected a string, found a number").
    WrongType,
    /// A required field is absent (e.g. a stdio server without `command`).
    Missing,
    /// A value of the right type that is out of range or malformed (bad URL, `pool.min > pool.max`).
    Invalid,
    /// `${VAR}` names an environment variable that is not set and has no default.
    UnsetVariable,
    /// A malformed `${...}` reference (unterminated, bad variable name).
    Expansion,
    /// A feature of the source format this loader does not support (VS Code `${input:...}`, `envFile`).
    Unsupported,
    /// The file is none of the known formats (no `mcpServers`, `servers` or `[mcp_servers]`).
    UnknownFormat,
    /// The file is larger than [`MAX_CONFIG_BYTES`](super::MAX_CONFIG_BYTES), or lists more
    /// than [`MAX_SERVERS`](super::MAX_SERVERS) servers.
    TooLarge,
}

/// A configuration error: the file, the line/column, the server and the field (each when known),
/// and a message saying what was expected and what was found.
///
/// Display: the location from the outside in, then the message, `: `-separated:
/// `` <file>: line 12, column 20: server "search": field `endpoints[1].region`: expected a region
/// name (a non-empty string), found a number ``. The line and column are those of the offending
/// value in the file as written (1-based, columns in characters); for an absent field, of the
/// closest enclosing entry that exists (the server's key, a nested object's key, an array
/// element). Syntax errors read `` <file>: line 3, column 7: invalid JSON: expected `,` or `}` ``;
/// errors about the whole file (unreadable, unknown format) name only the file.
///
/// Boxed inside, so a `Result<_, ConfigError>` stays one pointer wide on the error side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(Box<Inner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    kind: ConfigErrorKind,
    file: PathBuf,
    position: Option<(usize, usize)>,
    server: Option<String>,
    field: Option<String>,
    message: String,
}

impl ConfigError {
    /// A new error about `file` (no server, field or position yet).
    pub fn new(kind: ConfigErrorKind, file: &Path, message: impl Into<String>) -> Self {
        ConfigError(Box::new(Inner {
            kind,
            file: file.to_path_buf(),
            position: None,
            server: None,
            field: None,
            message: message.into(),
        }))
    }

    /// Sets the server the error is about.
    pub fn with_server(mut self, server: impl Into<String>) -> Self {
        self.0.server = Some(server.into());
        self
    }

    /// Sets the field path (relative to the server when there is one, e.g. `env.GITHUB_TOKEN`,
    /// `args[2]`, `pool.min`; from the top of the file otherwise, e.g. `mcpServers`).
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.0.field = Some(field.into());
        self
    }

    /// Sets the 1-based line and column.
    pub fn with_position(mut self, line: usize, column: usize) -> Self {
        self.0.position = Some((line, column));
        self
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> ConfigErrorKind {
        self.0.kind
    }

    /// The configuration file.
    pub fn file(&self) -> &Path {
        &self.0.file
    }

    /// 1-based (line, column, in characters) of the problem: where the syntax error is, or the
    /// value (for an absent field, the closest enclosing entry) the error is about. `None` for
    /// errors about the whole file.
    pub fn position(&self) -> Option<(usize, usize)> {
        self.0.position
    }

    /// The server the error is about, when known.
    pub fn server(&self) -> Option<&str> {
        self.0.server.as_deref()
    }

    /// The field path, when known.
    pub fn field(&self) -> Option<&str> {
        self.0.field.as_deref()
    }

    /// The message alone (what was expected and what was found), without the location.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        write!(f, "{}", e.file.display())?;
        if let Some((line, column)) = e.position {
            write!(f, ": line {line}, column {column}")?;
        }
        if let Some(server) = &e.server {
            write!(f, ": server \"{server}\"")?;
        }
        if let Some(field) = &e.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", e.message)
    }
}

impl std::error::Error for ConfigError {}

/// "expected {expected}, found {a number}" — describes the found value by its type only.
pub(crate) fn wrong_type_message(expected: &str, found: &Node) -> String {
    format!("expected {expected}, found {}", found.type_name())
}
