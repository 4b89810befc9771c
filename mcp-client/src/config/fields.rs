//! Typed reading of fields from a [`Node`] object, with errors that name the file, the line, the
//! server and the field path (`env.GITHUB_TOKEN`, `args[2]`, `pool.min`), and debug logging of
//! the fields nobody read.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::error::{wrong_type_message, ConfigError, ConfigErrorKind};
use super::expand::{expand_shell, expand_vscode, EnvLookup, ExpandError, VsCodeVars};
use super::locate::Locator;
use super::node::Node;

/// Which variable syntax string values use.
#[derive(Debug, Clone)]
pub(crate) enum Vars {
    /// `${VAR}` / `${VAR:-default}` (Claude, Cursor, Codex).
    Shell,
    /// VS Code's `${workspaceFolder}`, `${env:VAR}`, ….
    VsCode(VsCodeVars),
}

/// Where we are: the file and its text, the server (once known), the environment and the
/// variable syntax.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub file: &'a Path,
    /// Finds a field's line and column in the file's text, for errors.
    pub locator: &'a Locator<'a>,
    /// The keys of the object holding the servers (`["mcpServers"]`, `["mcp", "servers"]`);
    /// set with the server by [`Ctx::for_server`].
    pub servers_at: &'a [&'a str],
    pub server: Option<&'a str>,
    pub env: EnvLookup<'a>,
    pub vars: &'a Vars,
}

impl<'a> Ctx<'a> {
    /// The same context, about server `name`, an entry of the object at the keys `servers_at`.
    pub(crate) fn for_server(&self, servers_at: &'a [&'a str], name: &'a str) -> Ctx<'a> {
        Ctx {
            servers_at,
            server: Some(name),
            ..*self
        }
    }

    /// An error at `field` (empty: no field) of the current server (from the top of the file
    /// when there is none), positioned at the field's value in the text (see `locate.rs`).
    pub(crate) fn error(
        &self,
        kind: ConfigErrorKind,
        field: &str,
        message: impl Into<String>,
    ) -> ConfigError {
        let mut error = ConfigError::new(kind, self.file, message);
        if let Some((line, column)) = self.locator.position(self.servers_at, self.server, field) {
            error = error.with_position(line, column);
        }
        if let Some(server) = self.server {
            error = error.with_server(server);
        }
        if !field.is_empty() {
            error = error.with_field(field);
        }
        error
    }

    /// "expected {expected}, found {type of found}".
    pub(crate) fn wrong_type(&self, field: &str, expected: &str, found: &Node) -> ConfigError {
        self.error(
            ConfigErrorKind::WrongType,
            field,
            wrong_type_message(expected, found),
        )
    }

    /// Expands variables in `value` (the value of `field`).
    pub(crate) fn expand(&self, field: &str, value: &str) -> Result<String, ConfigError> {
        let result = match self.vars {
            Vars::Shell => expand_shell(value, self.env),
            Vars::VsCode(vars) => expand_vscode(value, vars, self.env),
        };
        result.map_err(|err| {
            let kind = match err {
                ExpandError::Unset { .. } | ExpandError::NoHome => ConfigErrorKind::UnsetVariable,
                ExpandError::Unterminated | ExpandError::InvalidName => ConfigErrorKind::Expansion,
                ExpandError::VsCodeInput | ExpandError::VsCodeUnsupported { .. } => {
                    ConfigErrorKind::Unsupported
                }
            };
            self.error(kind, field, err.message())
        })
    }
}

/// An object being read; remembers which keys were read so the rest can be logged.
pub(crate) struct Obj<'a> {
    entries: &'a [(String, Node)],
    prefix: String,
    used: RefCell<Vec<&'a str>>,
}

impl<'a> Obj<'a> {
    /// `node` as an object at field path `path` (empty for a server entry itself).
    pub(crate) fn new(
        node: &'a Node,
        ctx: &Ctx<'_>,
        path: &str,
        expected: &str,
    ) -> Result<Obj<'a>, ConfigError> {
        match node {
            Node::Object(entries) => Ok(Obj {
                entries,
                prefix: path.to_owned(),
                used: RefCell::new(Vec::new()),
            }),
            other => Err(ctx.wrong_type(path, expected, other)),
        }
    }

    /// The entries in file order.
    pub(crate) fn entries(&self) -> &'a [(String, Node)] {
        self.entries
    }

    /// The field path of `key` in this object.
    pub(crate) fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    /// The value of `key` (`null` counts as absent), marking it as read.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Node> {
        let (k, v) = self.entries.iter().find(|(k, _)| k == key)?;
        self.used.borrow_mut().push(k.as_str());
        match v {
            Node::Null => None,
            v => Some(v),
        }
    }

    /// Whether `key` is present and not `null` (does not mark it as read).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.entries
            .iter()
            .any(|(k, v)| k == key && !matches!(v, Node::Null))
    }

    pub(crate) fn string(&self, ctx: &Ctx<'_>, key: &str) -> Result<Option<String>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node::Str(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ctx.wrong_type(&self.path(key), "a string", other)),
        }
    }

    /// A string with variables expanded.
    pub(crate) fn expanded(&self, ctx: &Ctx<'_>, key: &str) -> Result<Option<String>, ConfigError> {
        match self.string(ctx, key)? {
            None => Ok(None),
            Some(s) => ctx.expand(&self.path(key), &s).map(Some),
        }
    }

    pub(crate) fn bool(&self, ctx: &Ctx<'_>, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(ctx.wrong_type(&self.path(key), "true or false", other)),
        }
    }

    pub(crate) fn number(&self, ctx: &Ctx<'_>, key: &str) -> Result<Option<f64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node::Int(i)) => Ok(Some(*i as f64)),
            Some(Node::Float(f)) => Ok(Some(*f)),
            Some(other) => Err(ctx.wrong_type(&self.path(key), "a number", other)),
        }
    }

    /// A whole number in `0..=u32::MAX`.
    pub(crate) fn u32(&self, ctx: &Ctx<'_>, key: &str) -> Result<Option<u32>, ConfigError> {
        let Some(n) = self.number(ctx, key)? else {
            return Ok(None);
        };
        if n.fract() != 0.0 || !n.is_finite() {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                &self.path(key),
                format!("expected a whole number, found {n}"),
            ));
        }
        if n < 0.0 || n > f64::from(u32::MAX) {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                &self.path(key),
                format!("expected a whole number from 0 to {}, found {n}", u32::MAX),
            ));
        }
        Ok(Some(n as u32))
    }

    /// A duration given in `unit_per_second` units (1 for `_sec`, 1000 for `_ms`); must be > 0.
    pub(crate) fn duration(
        &self,
        ctx: &Ctx<'_>,
        key: &str,
        units_per_second: f64,
    ) -> Result<Option<Duration>, ConfigError> {
        let Some(n) = self.number(ctx, key)? else {
            return Ok(None);
        };
        let unit = if units_per_second == 1.0 {
            "seconds"
        } else {
            "milliseconds"
        };
        if !n.is_finite() || n <= 0.0 {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                &self.path(key),
                format!("expected a number of {unit} greater than 0, found {n}"),
            ));
        }
        // A week is longer than any sensible timeout, and keeps every deadline computable.
        const LONGEST: Duration = Duration::from_secs(7 * 24 * 3600);
        if n / units_per_second > LONGEST.as_secs_f64() {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                &self.path(key),
                format!(
                    "expected at most a week ({} {unit}), found {n}",
                    LONGEST.as_secs_f64() * units_per_second
                ),
            ));
        }
        Duration::try_from_secs_f64(n / units_per_second)
            .map(Some)
            .map_err(|_| {
                ctx.error(
                    ConfigErrorKind::Invalid,
                    &self.path(key),
                    format!("expected a number of {unit} that fits a duration, found {n}"),
                )
            })
    }

    /// An array of strings, optionally with variables expanded.
    pub(crate) fn string_list(
        &self,
        ctx: &Ctx<'_>,
        key: &str,
        expand: bool,
    ) -> Result<Option<Vec<String>>, ConfigError> {
        let items = match self.get(key) {
            None => return Ok(None),
            Some(Node::Array(items)) => items,
            Some(other) => {
                return Err(ctx.wrong_type(&self.path(key), "an array of strings", other))
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("{}[{i}]", self.path(key));
            match item {
                Node::Str(s) if expand => out.push(ctx.expand(&path, s)?),
                Node::Str(s) => out.push(s.clone()),
                other => return Err(ctx.wrong_type(&path, "a string", other)),
            }
        }
        Ok(Some(out))
    }

    /// An object of string values (`env`, `headers`), variables expanded. Values are secret:
    /// errors name the key, never the value.
    pub(crate) fn string_map(
        &self,
        ctx: &Ctx<'_>,
        key: &str,
        expand: bool,
    ) -> Result<Option<BTreeMap<String, String>>, ConfigError> {
        let entries = match self.get(key) {
            None => return Ok(None),
            Some(Node::Object(entries)) => entries,
            Some(other) => {
                return Err(ctx.wrong_type(
                    &self.path(key),
                    "an object of names to string values",
                    other,
                ))
            }
        };
        let mut out = BTreeMap::new();
        for (name, value) in entries {
            let path = format!("{}.{name}", self.path(key));
            let value = match value {
                Node::Str(s) if expand => ctx.expand(&path, s)?,
                Node::Str(s) => s.clone(),
                other => return Err(ctx.wrong_type(&path, "a string", other)),
            };
            out.insert(name.clone(), value);
        }
        Ok(Some(out))
    }

    /// A nested object.
    pub(crate) fn object(&self, ctx: &Ctx<'_>, key: &str) -> Result<Option<Obj<'a>>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(node) => Obj::new(node, ctx, &self.path(key), "an object").map(Some),
        }
    }

    /// Logs (at debug) every key nobody read; other tools' files carry fields we do not use
    /// (`autoApprove`, `alwaysAllow`, …).
    pub(crate) fn log_unknown(&self, ctx: &Ctx<'_>) {
        let used = self.used.borrow();
        for (key, _) in self.entries {
            if !used.contains(&key.as_str()) {
                tracing::debug!(
                    file = %ctx.file.display(),
                    server = ctx.server.unwrap_or(""),
                    field = %self.path(key),
                    "ignoring a configuration field this client does not use"
                );
            }
        }
    }
}
