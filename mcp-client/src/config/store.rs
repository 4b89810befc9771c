//! The fleet's shared store, the file's top-level `store` (next to `region`):
//! `{ "url": "redis://127.0.0.1:6379/0", "key_env": "MCPH_STORE_KEY", "password_env":
//! "MCPH_STORE_PASSWORD", "prefix": "mcph" }`. Only where the store is and which environment
//! variables hold its secrets: the encryption key and the Redis password never come from the file.

use super::entry::check_url_with;
use super::error::{ConfigError, ConfigErrorKind};
use super::fields::{Ctx, Obj};
use super::model::StoreConfig;

/// `store` of `obj` (the file's top level, or VS Code's `mcp` object).
pub(crate) fn read_store(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<Option<StoreConfig>, ConfigError> {
    let Some(store) = obj.object(ctx, "store")? else {
        return Ok(None);
    };
    let url_path = store.path("url");
    let Some(url) = store.expanded(ctx, "url")? else {
        return Err(ctx.error(
            ConfigErrorKind::Missing,
            &url_path,
            "a store needs `url` (such as \"redis://127.0.0.1:6379/0\"), found none",
        ));
    };
    check_url(&url).map_err(|message| ctx.error(ConfigErrorKind::Invalid, &url_path, &message))?;
    let defaults = StoreConfig::new(url.clone());
    let variable = |key: &str, default: String| -> Result<String, ConfigError> {
        match store.string(ctx, key)? {
            None => Ok(default),
            Some(name) if is_variable_name(&name) => Ok(name),
            // Not repeated: it may be the secret itself, put where its variable's name goes.
            Some(_) => Err(ctx.error(
                ConfigErrorKind::Invalid,
                &store.path(key),
                "expected the name of an environment variable (letters, digits and `_`), found \
                 other characters (the secret goes in the environment, its variable's name here)",
            )),
        }
    };
    let key_env = variable("key_env", defaults.key_env)?;
    let password_env = variable("password_env", defaults.password_env)?;
    let prefix = match store.expanded(ctx, "prefix")? {
        None => defaults.prefix,
        Some(prefix) if is_prefix(&prefix) => prefix,
        Some(prefix) => {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                &store.path("prefix"),
                format!(
                    "expected a key prefix of letters, digits, `-`, `_`, `.` and `:` (1 to 64), \
                     found {prefix:?}"
                ),
            ))
        }
    };
    store.log_unknown(ctx);
    Ok(Some(StoreConfig {
        url,
        key_env,
        password_env,
        prefix,
    }))
}

/// A store URL: `redis://` or `rediss://` (TLS), a host, no password (that comes from the
/// environment). Also what `MCPH_STORE` is checked with.
pub fn check_url(url: &str) -> Result<(), String> {
    check_url_with(
        url,
        &["redis", "rediss"],
        "expected a redis:// or rediss:// (TLS) URL with a host",
    )?;
    let authority = url.split_once("://").map_or("", |(_, rest)| {
        rest.split(['/', '?', '#']).next().unwrap_or("")
    });
    let has_password = authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'));
    if has_password {
        return Err(
            "the URL carries a password: put it in the environment variable named by \
             `password_env` (default MCPH_STORE_PASSWORD) instead"
                .into(),
        );
    }
    Ok(())
}

fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_prefix(prefix: &str) -> bool {
    (1..=64).contains(&prefix.len())
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls() {
        assert!(check_url("redis://127.0.0.1:6379/0").is_ok());
        assert!(check_url("rediss://cache.internal:6380").is_ok());
        assert!(check_url("redis://user@127.0.0.1:6379").is_ok());
        let password = check_url("redis://:hunter2@127.0.0.1:6379").unwrap_err();
        assert!(password.contains("MCPH_STORE_PASSWORD"), "{password}");
        assert!(!password.contains("hunter2"));
        assert!(check_url("http://127.0.0.1:6379")
            .unwrap_err()
            .contains("`http`"));
        assert!(check_url("redis://").is_err());
        assert!(check_url("127.0.0.1:6379").is_err());
    }
}
