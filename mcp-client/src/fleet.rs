//! A fleet's shared state (feature `fleet`, in the `enterprise` profile): when the configuration
//! has a top-level `store` (or `MCPH_STORE` is set), OAuth tokens live encrypted in that Redis,
//! shared by every process and replica that points at it, and `rate_limit.scope: "fleet"` limits
//! count there. [`open`] is the one place the configuration and the environment become an
//! [`mcp_fleet::Fleet`], so `mcph auth` and the facade agree on it.

use std::sync::Arc;

use mcp_auth::Secret;
use mcp_fleet::{Fleet, FleetSettings, StoreKeyMaterial};

use crate::config::{check_store_url, ClientConfig, StoreConfig};

/// A PEM file of the certificate authority a `rediss://` store's certificate is checked
/// against, when it is not one the system trusts.
pub const CA_FILE_VARIABLE: &str = "MCPH_STORE_CA_FILE";

/// The fleet store `config` (or the environment) names, opened (no I/O: Redis is connected to
/// on first use); `None` when there is none. Errors name what is missing or wrong — the key's
/// variable, never its value.
pub fn open(config: &ClientConfig) -> Result<Option<Arc<Fleet>>, String> {
    open_with_env(config, &|name| std::env::var(name).ok())
}

/// [`open`], reading variables through `env`.
pub fn open_with_env(
    config: &ClientConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Arc<Fleet>>, String> {
    let Some(store) = store_config(config, env)? else {
        return Ok(None);
    };
    let key_text = env(&store.key_env)
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| {
            format!(
            "the store {} needs its encryption key in the environment variable {} (32 bytes as \
             64 hex digits or base64; `mcph auth store-key` makes one, and every replica needs the \
             same)",
            store.url, store.key_env
        )
        })?;
    let key = StoreKeyMaterial::parse(&store.key_env, &key_text).map_err(|e| e.to_string())?;
    let password = env(&store.password_env)
        .filter(|p| !p.is_empty())
        .map(Secret::new);
    let mut settings = FleetSettings::new(store.url.clone(), key, store.key_env.clone());
    settings.password = password;
    settings.prefix = store.prefix.clone();
    if let Some(path) = env(CA_FILE_VARIABLE).filter(|p| !p.trim().is_empty()) {
        let pem = std::fs::read(path.trim()).map_err(|e| {
            format!("{CA_FILE_VARIABLE}: cannot read the CA certificate file {path}: {e}")
        })?;
        settings.tls_ca_pem = Some(pem);
    }
    let fleet = Fleet::new(settings).map_err(|e| e.to_string())?;
    Ok(Some(Arc::new(fleet)))
}

/// The store's configuration: the file's `store`, with `MCPH_STORE` setting (or overriding) the
/// URL.
pub fn store_config(
    config: &ClientConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<StoreConfig>, String> {
    let from_env = env(StoreConfig::URL_VARIABLE).filter(|u| !u.trim().is_empty());
    let store = match (config.store.clone(), from_env) {
        (store, None) => store,
        (Some(store), Some(url)) => Some(StoreConfig {
            url: url.trim().to_owned(),
            ..store
        }),
        (None, Some(url)) => Some(StoreConfig::new(url.trim())),
    };
    if let Some(store) = &store {
        check_store_url(&store.url).map_err(|e| format!("{}: {e}", StoreConfig::URL_VARIABLE))?;
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn no_store_no_fleet() {
        let config = ClientConfig::default();
        assert!(open_with_env(&config, &env(&[])).unwrap().is_none());
    }

    #[test]
    fn the_environment_names_or_overrides_the_store() {
        let mut config = ClientConfig::default();
        let vars = env(&[("MCPH_STORE", "redis://127.0.0.1:7000/1")]);
        let store = store_config(&config, &vars).unwrap().unwrap();
        assert_eq!(store.url, "redis://127.0.0.1:7000/1");
        assert_eq!(store.key_env, "MCPH_STORE_KEY");
        config.store = Some(StoreConfig {
            prefix: "team-a".into(),
            ..StoreConfig::new("redis://127.0.0.1:6379/0")
        });
        let store = store_config(&config, &vars).unwrap().unwrap();
        assert_eq!(store.url, "redis://127.0.0.1:7000/1");
        assert_eq!(store.prefix, "team-a");
        let bad = store_config(&config, &env(&[("MCPH_STORE", "http://x")])).unwrap_err();
        assert!(bad.starts_with("MCPH_STORE: "), "{bad}");
    }

    #[test]
    fn a_store_without_its_key_is_an_error_naming_the_variable() {
        let config = ClientConfig {
            store: Some(StoreConfig::new("redis://127.0.0.1:6379/0")),
            ..ClientConfig::default()
        };
        let missing = open_with_env(&config, &env(&[])).unwrap_err();
        assert!(missing.contains("MCPH_STORE_KEY"), "{missing}");
        let wrong =
            open_with_env(&config, &env(&[("MCPH_STORE_KEY", "short-and-secret")])).unwrap_err();
        assert!(wrong.contains("MCPH_STORE_KEY"), "{wrong}");
        assert!(!wrong.contains("short-and-secret"), "{wrong}");
        let key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let vars = move |name: &str| (name == "MCPH_STORE_KEY").then(|| key.to_owned());
        let fleet = open_with_env(&config, &vars).unwrap().expect("a fleet");
        assert!(fleet.describe().contains("redis://127.0.0.1:6379/0"));
    }
}
