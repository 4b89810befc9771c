//! Configuration: the MCP server files users already have, read into one model.
//!
//! | format | file | parser |
//! |---|---|---|
//! | Claude Desktop, Claude Code, Cursor | `{"mcpServers": {...}}` | [`parse_claude`] (`claude.rs`) |
//! | VS Code | `.vscode/mcp.json` `{"servers": {...}}` | [`parse_vscode`] (`vscode.rs`) |
//! | Codex | `~/.codex/config.toml` `[mcp_servers.<name>]` | [`parse_codex`] (`codex.rs`) |
//!
//! [`load`] / [`parse`] pick the format (`load.rs`); [`load_default`] finds the file (`default_file.rs`).
//! Everything lands in [`ClientConfig`] → [`ServerConfig`] → [`TransportConfig`] (`model.rs`) with
//! the harness extras in [`HarnessSettings`] (`settings.rs`, the seed's defaults). `${VAR}`
//! expansion is `expand.rs`; the parsed tree (file order, duplicate keys, JSONC, line/column of
//! syntax errors) is `node.rs`; typed field reading with error paths is `fields.rs`; one server
//! entry is `entry/`; [`ConfigError`] is `error.rs`. Every error about a server or field names
//! the line of the offending value: `locate.rs` follows the error's field path through a spanned
//! mirror of the file (`spans.rs`), built only when an error needs it.
//!
//! A remote server may list several addresses instead of one `url`: `endpoints: [{ url, region,
//! headers }]` (the same server, usually in other regions), read into
//! [`ServerConfig::endpoints`], and every format takes a top-level `region`, the client's own
//! ([`ClientConfig::region`]), that the endpoints' regions are compared with (`endpoints.rs`).
//! A top-level `store` says where a fleet shares its state ([`ClientConfig::store`],
//! `store.rs`).
//!
//! Limits: [`load`] reads at most [`MAX_CONFIG_BYTES`] (4 MiB) of a file — a longer file, a
//! device such as `/dev/zero` or a FIFO that never ends is refused with a
//! [`ConfigErrorKind::TooLarge`] error naming the file — and a file may list at most
//! [`MAX_SERVERS`] (1,000) servers.
//!
//! Secrets: `env` and `headers` values never appear in `Debug` output or in error messages.
//! Every `*_with_env` function reads variables through a closure instead of the process
//! environment (for tests and embedders).

mod claude;
mod codex;
mod default_file;
mod endpoints;
mod entry;
mod error;
mod expand;
mod fields;
mod load;
mod locate;
mod model;
mod node;
mod settings;
mod spans;
mod store;
mod vscode;

pub use claude::{parse_claude, parse_claude_with_env};
pub use codex::{parse_codex, parse_codex_with_env};
pub use default_file::{
    default_config_paths, default_config_paths_with_env, load_default, load_default_with_env,
};
#[allow(deprecated)]
pub use default_file::{discover, discover_with_env};
pub use entry::MAX_SERVERS;
pub use error::{ConfigError, ConfigErrorKind};
pub use expand::EnvLookup;
pub use load::{
    load, load_with_env, parse, parse_format_with_env, parse_with_env, ConfigFormat,
    MAX_CONFIG_BYTES,
};
pub use model::{
    AddressPolicySetting, ClientConfig, DpopSetting, EndpointConfig, OAuthSettings, ServerConfig,
    StoreConfig, TransportConfig,
};
pub use settings::{
    BreakerSettings, HarnessSettings, PoolSettings, RateLimitScope, RateLimitSettings,
    RetrySettings, DEFAULT_FAILBACK_AFTER, DEFAULT_IDLE_TIMEOUT, DEFAULT_PROBE_INTERVAL,
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT,
};
pub use store::check_url as check_store_url;
pub use vscode::{parse_vscode, parse_vscode_with_env};

/// Reads a variable from the process environment (non-UTF-8 values count as unset).
fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
