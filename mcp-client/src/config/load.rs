//! The dispatcher: which format a file is, then the matching parser.

use std::path::Path;

use super::error::{ConfigError, ConfigErrorKind};
use super::expand::EnvLookup;
use super::model::ClientConfig;
use super::node::{parse_json, Node};
use super::{claude, codex, vscode};

/// The configuration file formats this module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfigFormat {
    /// `{"mcpServers": {...}}`: Claude Desktop, Claude Code `.mcp.json`, Cursor.
    Claude,
    /// `{"servers": {...}}`: VS Code `.vscode/mcp.json` (or `mcp.servers` in settings).
    VsCode,
    /// `[mcp_servers.<name>]` in TOML: Codex `config.toml`.
    Codex,
}

/// Reads and parses the file at `path`, expanding variables from the process environment.
pub fn load(path: &Path) -> Result<ClientConfig, ConfigError> {
    load_with_env(path, &super::process_env)
}

/// [`load`] reading variables through `env`.
pub fn load_with_env(path: &Path, env: EnvLookup<'_>) -> Result<ClientConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        ConfigError::new(
            ConfigErrorKind::Io,
            path,
            format!("cannot read the file: {err}"),
        )
    })?;
    parse_with_env(&text, path, env)
}

/// Parses `text` (the content of `source`): a `.toml` file is Codex; JSON with `mcpServers` is
/// Claude / Cursor; JSON with `servers` (or `mcp.servers`) is VS Code.
pub fn parse(text: &str, source: &Path) -> Result<ClientConfig, ConfigError> {
    parse_with_env(text, source, &super::process_env)
}

/// [`parse`] reading variables through `env`.
pub fn parse_with_env(
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<ClientConfig, ConfigError> {
    if is_toml(source) {
        return codex::parse_codex_with_env(text, source, env);
    }
    let node = parse_json(text, source)?;
    match detect_json(&node) {
        Some(ConfigFormat::Claude) => claude::from_node(&node, text, source, env),
        Some(ConfigFormat::VsCode) => vscode::from_node(&node, text, source, env),
        Some(ConfigFormat::Codex) | None => Err(ConfigError::new(
            ConfigErrorKind::UnknownFormat,
            source,
            format!(
                "expected a top-level `mcpServers` object (Claude Desktop, Claude Code, Cursor) \
                 or `servers` object (VS Code), found {}; Codex files must end in .toml",
                found_keys(&node)
            ),
        )),
    }
}

/// Parses `text` as `format`, reading variables through `env`.
pub fn parse_format_with_env(
    format: ConfigFormat,
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<ClientConfig, ConfigError> {
    match format {
        ConfigFormat::Claude => claude::parse_claude_with_env(text, source, env),
        ConfigFormat::VsCode => vscode::parse_vscode_with_env(text, source, env),
        ConfigFormat::Codex => codex::parse_codex_with_env(text, source, env),
    }
}

fn is_toml(source: &Path) -> bool {
    source
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

fn detect_json(node: &Node) -> Option<ConfigFormat> {
    if node.get("mcpServers").is_some() {
        Some(ConfigFormat::Claude)
    } else if node.get("servers").is_some()
        || node.get("mcp").and_then(|m| m.get("servers")).is_some()
    {
        Some(ConfigFormat::VsCode)
    } else {
        None
    }
}

/// "keys `a`, `b`" / "no keys" / "an array" — the top-level shape, for the unknown-format error.
fn found_keys(node: &Node) -> String {
    match node {
        Node::Object(entries) if entries.is_empty() => "an empty object".to_owned(),
        Node::Object(entries) => {
            let mut names: Vec<String> = entries
                .iter()
                .take(5)
                .map(|(k, _)| format!("`{k}`"))
                .collect();
            if entries.len() > 5 {
                names.push("…".to_owned());
            }
            format!("keys {}", names.join(", "))
        }
        other => other.type_name().to_owned(),
    }
}
