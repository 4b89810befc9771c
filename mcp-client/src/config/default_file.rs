//! Where configuration files are looked for, and loading the first one that exists.

use std::path::{Path, PathBuf};

use super::error::ConfigError;
use super::expand::EnvLookup;
use super::load::load_with_env;
use super::model::ClientConfig;

/// The files [`load_default`] tries, in order: `.mcp.json` in `cwd`, then `mcph/config.json` and
/// `mcph/config.toml` in the user's config folder (`$XDG_CONFIG_HOME`, else `$HOME/.config`).
pub fn default_config_paths(cwd: &Path) -> Vec<PathBuf> {
    default_config_paths_with_env(cwd, &super::process_env)
}

/// [`default_config_paths`] reading `XDG_CONFIG_HOME` and `HOME` through `env`.
pub fn default_config_paths_with_env(cwd: &Path, env: EnvLookup<'_>) -> Vec<PathBuf> {
    let mut paths = vec![cwd.join(".mcp.json")];
    let config_dir = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            env("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        });
    if let Some(dir) = config_dir {
        let dir = dir.join("mcph");
        paths.push(dir.join("config.json"));
        paths.push(dir.join("config.toml"));
    }
    paths
}

/// Loads the first of [`default_config_paths`] that exists; `Ok(None)` when none does.
pub fn load_default(cwd: &Path) -> Result<Option<ClientConfig>, ConfigError> {
    load_default_with_env(cwd, &super::process_env)
}

/// [`load_default`] reading variables through `env`.
pub fn load_default_with_env(
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Option<ClientConfig>, ConfigError> {
    for path in default_config_paths_with_env(cwd, env) {
        if path.is_file() {
            tracing::debug!(path = %path.display(), "loading MCP configuration");
            return load_with_env(&path, env).map(Some);
        }
    }
    Ok(None)
}

/// The name [`load_default`] had before: configuration files are *loaded*, not discovered.
#[deprecated(since = "0.1.0", note = "renamed `load_default`")]
pub fn discover(cwd: &Path) -> Result<Option<ClientConfig>, ConfigError> {
    load_default(cwd)
}

/// The name [`load_default_with_env`] had before.
#[deprecated(since = "0.1.0", note = "renamed `load_default_with_env`")]
pub fn discover_with_env(
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Option<ClientConfig>, ConfigError> {
    load_default_with_env(cwd, env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_xdg_then_home() {
        let xdg = |name: &str| match name {
            "XDG_CONFIG_HOME" => Some("/xdg".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        };
        assert_eq!(
            default_config_paths_with_env(Path::new("/proj"), &xdg),
            [
                PathBuf::from("/proj/.mcp.json"),
                PathBuf::from("/xdg/mcph/config.json"),
                PathBuf::from("/xdg/mcph/config.toml"),
            ]
        );
        let home = |name: &str| (name == "HOME").then(|| "/home/u".to_owned());
        assert_eq!(
            default_config_paths_with_env(Path::new("/proj"), &home),
            [
                PathBuf::from("/proj/.mcp.json"),
                PathBuf::from("/home/u/.config/mcph/config.json"),
                PathBuf::from("/home/u/.config/mcph/config.toml"),
            ]
        );
        let none = |_: &str| None;
        assert_eq!(
            default_config_paths_with_env(Path::new("/proj"), &none),
            [PathBuf::from("/proj/.mcp.json")]
        );
    }
}
