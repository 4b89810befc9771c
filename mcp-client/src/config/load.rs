//! The dispatcher: which format a file is, then the matching parser.

use std::io::Read;
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
    let text = read_config_file(path)?;
    parse_with_env(&text, path, env)
}

/// The largest configuration file [`load`] reads: 4 MiB. Real files are a few KiB (1,000
/// servers of a few lines each stay far below it); the cap keeps `--config /dev/zero`, an
/// endless FIFO or a wrong multi-gigabyte file from taking the memory.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// Reads at most [`MAX_CONFIG_BYTES`] of `path` as UTF-8 text. A longer file (or a device or
/// FIFO that never ends) is refused once one byte past the cap has been read, without reading
/// the rest.
fn read_config_file(path: &Path) -> Result<String, ConfigError> {
    let io_error = |err: std::io::Error| {
        ConfigError::new(
            ConfigErrorKind::Io,
            path,
            format!("cannot read the file: {err}"),
        )
    };
    let file = std::fs::File::open(path).map_err(io_error)?;
    // Sized from the metadata for a regular file; devices and pipes report 0 and grow.
    let announced = file.metadata().map(|m| m.len()).unwrap_or(0);
    let initial = usize::try_from(announced.min(MAX_CONFIG_BYTES) + 1).unwrap_or(0);
    let mut bytes = Vec::with_capacity(initial);
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::new(
            ConfigErrorKind::TooLarge,
            path,
            format!(
                "the file is larger than {} MiB, the limit for configuration files; \
                 is it the right file?",
                MAX_CONFIG_BYTES / (1024 * 1024)
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|err| {
        ConfigError::new(
            ConfigErrorKind::Syntax,
            path,
            format!(
                "the file is not UTF-8 text (invalid byte at offset {})",
                err.utf8_error().valid_up_to()
            ),
        )
    })
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
