//! The one Redis connection of a [`Fleet`](crate::Fleet): redis-rs's [`ConnectionManager`]
//! (one multiplexed connection, replaced in the background when it breaks), created on first
//! use and created again later when that first connect failed. Every operation — connecting
//! included — is bounded by the fleet's timeout, and its error names Redis by its URL without
//! a password.
//!
//! A `ConnectionManager` hands the broken connection (or the failed reconnect attempt) to the
//! first command after an outage, then reconnects; a command that failed because the
//! connection was refused, dropped or broken is tried once more within the same bound — so a
//! Redis that is back answers the first command after it. Every command here may run twice
//! (see `RedisConnection::run`).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_auth::Secret;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisError, RedisResult};
use tokio::sync::OnceCell;
use tokio::time::Instant;

use crate::error::FleetError;
use crate::settings::FleetSettings;

/// Passwords shorter than this are not searched for in error messages (every `e` of a message
/// would be hidden for a one-letter password; such a password protects nothing anyway).
const MIN_SCRUBBED_PASSWORD: usize = 4;

/// A lazily connected, bounded Redis connection (see the module docs).
pub(crate) struct RedisConnection {
    client: redis::Client,
    manager: OnceCell<ConnectionManager>,
    op_timeout: Duration,
    /// The URL as shown: no password.
    shown_url: String,
    /// Only to remove it from the client library's error messages.
    password: Option<Secret>,
    /// Whether an outage was reported (one warning per outage; see [`Self::report_outage`]).
    outage_reported: AtomicBool,
}

impl RedisConnection {
    /// Parses the URL and applies the password; no I/O.
    pub(crate) fn new(settings: &FleetSettings) -> Result<RedisConnection, FleetError> {
        let invalid = |reason: String| FleetError::InvalidUrl {
            url: redact_url(&settings.url),
            reason,
        };
        let info: ConnectionInfo = settings
            .url
            .as_str()
            .into_connection_info()
            .map_err(|e| invalid(scrub(&e.to_string(), Some(&settings.url))))?;
        if info.redis_settings().password().is_some() {
            return Err(invalid(
                "it holds a password: give the password separately (the password setting), so \
                 the URL can be shown"
                    .into(),
            ));
        }
        let info = match &settings.password {
            Some(password) => {
                let redis = info
                    .redis_settings()
                    .clone()
                    .set_password(password.expose());
                info.set_redis_settings(redis)
            }
            None => info,
        };
        let shown_url = shown_url(&info);
        let is_tls = matches!(info.addr(), ConnectionAddr::TcpTls { .. });
        let client = match (&settings.tls_ca_pem, is_tls) {
            (Some(pem), true) => redis::Client::build_with_tls(
                info,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.clone()),
                },
            )
            .map_err(|e| {
                invalid(scrub(
                    &format!("its CA certificate: {e}"),
                    settings.password.as_ref().map(|p| p.expose()),
                ))
            })?,
            (Some(_), false) => {
                return Err(invalid(
                    "a TLS CA certificate is set, but the URL is not rediss://".into(),
                ))
            }
            (None, _) => redis::Client::open(info).map_err(|e| {
                invalid(scrub(
                    &e.to_string(),
                    settings.password.as_ref().map(|p| p.expose()),
                ))
            })?,
        };
        if is_tls {
            // redis-rs builds its TLS config with rustls's process-wide provider. Install
            // aws-lc-rs (the provider our transports use) unless the process chose one.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        Ok(RedisConnection {
            client,
            manager: OnceCell::new(),
            op_timeout: settings.op_timeout,
            shown_url,
            password: settings.password.clone(),
            outage_reported: AtomicBool::new(false),
        })
    }

    /// Redis's URL, without a password: `redis://127.0.0.1:6379/0`.
    pub(crate) fn url(&self) -> &str {
        &self.shown_url
    }

    /// Runs `operation` (described by `what`, for errors) on the connection, connecting first
    /// if need be, all within the timeout.
    pub(crate) async fn run<T, F, Fut>(&self, what: &str, operation: F) -> Result<T, FleetError>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let deadline = Instant::now() + self.op_timeout;
        let attempt = async {
            let mut result = self.attempt(&operation).await;
            if let Err(e) = &result {
                if e.is_connection_refusal() || e.is_connection_dropped() || e.is_io_error() {
                    // The connection was gone (Redis restarted, a proxy closed it): once more,
                    // on a fresh one. Every operation here may run twice — reads, the
                    // generation-checked write, the lock (its script knows its own token), the
                    // compare-and-delete release; a permit taken twice costs one permit.
                    result = self.attempt(&operation).await;
                }
            }
            result
        };
        match tokio::time::timeout_at(deadline, attempt).await {
            Ok(Ok(value)) => {
                self.answered();
                Ok(value)
            }
            Ok(Err(e)) => Err(self.error(what, &e)),
            Err(_) => Err(FleetError::Unreachable {
                url: self.shown_url.clone(),
                what: what.to_owned(),
                reason: format!("no answer within {:?}", self.op_timeout),
            }),
        }
    }

    async fn attempt<T, F, Fut>(&self, operation: &F) -> RedisResult<T>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let manager = self
            .manager
            .get_or_try_init(|| {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(self.op_timeout))
                    .set_response_timeout(Some(self.op_timeout))
                    // One connect per attempt: our caller's bound and its retry decide the rest.
                    .set_number_of_retries(0);
                ConnectionManager::new_with_config(self.client.clone(), config)
            })
            .await?
            .clone();
        operation(manager).await
    }

    /// Marks an outage as reported; true the first time in an outage (the caller warns then).
    pub(crate) fn report_outage(&self) -> bool {
        !self.outage_reported.swap(true, Ordering::Relaxed)
    }

    /// Redis answered: the outage, if one was reported, is over.
    fn answered(&self) {
        if self.outage_reported.swap(false, Ordering::Relaxed) {
            tracing::info!(redis = %self.shown_url, "Redis answers again");
        }
    }

    fn error(&self, what: &str, error: &RedisError) -> FleetError {
        let reason = scrub(
            &error.to_string(),
            self.password.as_ref().map(Secret::expose),
        );
        let unreachable = error.is_io_error()
            || error.is_connection_refusal()
            || error.is_connection_dropped()
            || error.is_timeout();
        if unreachable {
            FleetError::Unreachable {
                url: self.shown_url.clone(),
                what: what.to_owned(),
                reason,
            }
        } else {
            let wants_password = error.kind() == redis::ErrorKind::AuthenticationFailed
                || matches!(error.code(), Some("NOAUTH" | "WRONGPASS"));
            let hint = if wants_password {
                " (check the Redis password setting)"
            } else {
                ""
            };
            FleetError::Refused {
                url: self.shown_url.clone(),
                what: what.to_owned(),
                reason: format!("{reason}{hint}"),
            }
        }
    }
}

/// `info` as a URL without a password: `redis://[user@]host:port/db`, `rediss://…`,
/// `redis+unix:///path?db=N`.
fn shown_url(info: &ConnectionInfo) -> String {
    let settings = info.redis_settings();
    let user = settings
        .username()
        .map(|user| format!("{user}@"))
        .unwrap_or_default();
    let db = settings.db();
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("redis://{user}{host}:{port}/{db}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("rediss://{user}{host}:{port}/{db}"),
        ConnectionAddr::Unix(path) => format!("redis+unix://{}?db={db}", path.display()),
        other => format!("{other}"),
    }
}

/// `url` with the password of its user info (`scheme://user:PASSWORD@host`) replaced by
/// `<redacted>`, for messages about a URL that could not be parsed.
pub(crate) fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let authority_start = scheme_end + 3;
    let rest = &url[authority_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let user_info = &authority[..at];
    let Some(colon) = user_info.find(':') else {
        return url.to_owned();
    };
    format!(
        "{}{}:<redacted>{}",
        &url[..authority_start],
        &user_info[..colon],
        &url[authority_start + at..]
    )
}

/// `message` without `secret` in it (see [`MIN_SCRUBBED_PASSWORD`]).
fn scrub(message: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if secret.len() >= MIN_SCRUBBED_PASSWORD => {
            message.replace(secret, "<redacted>")
        }
        _ => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_from_urls() {
        assert_eq!(
            redact_url("redis://:hunter22@db.example:6379/0"),
            "redis://:<redacted>@db.example:6379/0"
        );
        assert_eq!(
            redact_url("rediss://app:p@ss:w@rd@db.example/1?x=1"),
            "rediss://app:<redacted>@db.example/1?x=1"
        );
        assert_eq!(
            redact_url("redis://app@db.example:6379"),
            "redis://app@db.example:6379"
        );
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn a_password_in_the_url_is_refused_without_showing_it() {
        let key = crate::StoreKeyMaterial::from_bytes([7; 32]);
        let settings = FleetSettings::new("redis://:hunter22@127.0.0.1:6379/0", key, "KEY");
        let Err(err) = RedisConnection::new(&settings) else {
            panic!("a URL with a password is refused");
        };
        let err = err.to_string();
        assert!(!err.contains("hunter22"), "{err}");
        assert!(err.contains("give the password separately"), "{err}");
    }

    #[test]
    fn urls_are_shown_with_user_host_port_and_db() {
        let key = crate::StoreKeyMaterial::from_bytes([7; 32]);
        for (url, shown) in [
            ("redis://127.0.0.1:6380/2", "redis://127.0.0.1:6380/2"),
            ("redis://app@db.example", "redis://app@db.example:6379/0"),
            ("rediss://db.example:6390", "rediss://db.example:6390/0"),
        ] {
            let settings =
                FleetSettings::new(url, key.clone(), "KEY").with_password(Secret::new("topsecret"));
            let connection = RedisConnection::new(&settings).unwrap();
            assert_eq!(connection.url(), shown);
        }
    }

    #[test]
    fn scrub_removes_the_password_from_messages() {
        assert_eq!(
            scrub("AUTH hunter22 failed", Some("hunter22")),
            "AUTH <redacted> failed"
        );
        assert_eq!(scrub("every e stays", Some("e")), "every e stays");
    }
}
