//! The two eras of the protocol behind one session (see [`Era`]).
//!
//! One engine serves both: the era decides only how a session opens and how each request is
//! shaped, never what callers or policy layers see.
//!
//! - Opening: a pinned or remembered legacy era goes straight to `initialize`. Otherwise the
//!   session probes with `server/discover`: a `DiscoverResult` (or a modern error such as
//!   `UnsupportedProtocolVersion` naming a version both sides speak) makes it modern; any other
//!   error, or silence past [`SessionOptions::discover_timeout`](super::SessionOptions), means a
//!   legacy server, and the session falls back to `initialize`.
//! - What a modern request carries is in `meta.rs`; how modern requests and their results are
//!   handled (removed methods, multi round-trip requests, task handles) in `modern.rs`.

use std::sync::{Arc, Mutex};

use serde_json::Map;

use super::{ClientSession, RequestOptions};
use mcp_core::error::{Delivery, Error, ErrorKind};
use mcp_core::types::{
    error_codes, methods, DiscoverResult, InitializeResult, UnsupportedVersionData,
};
use mcp_core::version::{Era, ProtocolVersion};

/// Remembers the era a server was found to speak; share one per server across connections
/// (like the HTTP flavor memo), so reconnecting to a legacy server skips the probe.
#[derive(Debug, Clone, Default)]
pub struct EraMemo(Arc<Mutex<Option<Era>>>);

impl EraMemo {
    /// What was detected, if anything yet.
    pub fn get(&self) -> Option<Era> {
        *mcp_core::sync::lock(&self.0)
    }

    /// Records what a connection found.
    pub fn set(&self, era: Era) {
        *mcp_core::sync::lock(&self.0) = Some(era);
    }
}

/// How the `server/discover` probe ended.
pub(super) enum Probe {
    /// A modern server: the session is open.
    Modern,
    /// Not a modern server (why, for the log): fall back to `initialize`.
    Legacy(String),
}

/// The versions this client speaks, for error messages.
fn our_versions() -> String {
    ProtocolVersion::SUPPORTED
        .iter()
        .map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first modern version both sides speak.
fn mutual_modern(supported: &[String]) -> Option<ProtocolVersion> {
    ProtocolVersion::SUPPORTED
        .into_iter()
        .filter(|v| v.is_modern())
        .find(|v| supported.iter().any(|s| s == v.as_str()))
}

/// Whether any legacy version in `supported` is one this client speaks.
fn speaks_a_legacy_one(supported: &[String]) -> bool {
    supported
        .iter()
        .filter_map(|s| s.parse::<ProtocolVersion>().ok())
        .any(|v| !v.is_modern())
}

/// A clear error for "the server speaks other versions".
pub(super) fn no_mutual_version(supported: &[String], requested: &str) -> Error {
    Error::protocol(format!(
        "the server does not speak protocol version {requested}; it speaks {}, and this client speaks {}",
        if supported.is_empty() {
            "no version it named".to_owned()
        } else {
            supported.join(", ")
        },
        our_versions()
    ))
}

/// An `UnsupportedProtocolVersion` error whose `supported` list names the modern version this
/// client asked for: worth one retry.
pub(super) fn names_our_version(error: &Error) -> bool {
    error.code() == Some(error_codes::UNSUPPORTED_PROTOCOL_VERSION)
        && mutual_modern(&unsupported_data(error).supported).is_some()
}

/// The `supported` list of an `UnsupportedProtocolVersion` error.
pub(super) fn unsupported_data(error: &Error) -> UnsupportedVersionData {
    error
        .data()
        .and_then(|d| serde_json::from_value(d.clone()).ok())
        .unwrap_or_default()
}

impl ClientSession {
    /// Opens the session in the era the options pin, the memo remembers, or the probe finds.
    pub(super) async fn open(&self) -> Result<(), Error> {
        let options = &self.shared.options;
        let remembered = options.era_memo.as_ref().and_then(EraMemo::get);
        let legacy_transport = !self.shared.sender.capabilities().speaks_modern_era;
        let era = match (options.era, remembered) {
            (Some(Era::Legacy), _) => self.initialize().await.map(|()| Era::Legacy)?,
            _ if legacy_transport && options.era.is_none() => {
                self.initialize().await.map(|()| Era::Legacy)?
            }
            (Some(Era::Modern), _) => match self.discover().await? {
                Probe::Modern => Era::Modern,
                Probe::Legacy(why) => {
                    return Err(Error::protocol(format!(
                        "the server does not speak the modern protocol (2026-07-28), which the configuration requires: {why}"
                    )))
                }
            },
            // Remembered as legacy: straight to initialize. Should the server have moved on
            // (it refuses initialize with a JSON-RPC error), the memo was wrong: probe.
            (None, Some(Era::Legacy)) => match self.initialize().await {
                Ok(()) => Era::Legacy,
                Err(e) if e.code().is_some() && !self.is_closed() => {
                    tracing::debug!(error = %e, "initialize refused where a legacy server was remembered; probing again");
                    self.probe_then_initialize().await?
                }
                Err(e) => return Err(e),
            },
            // Remembered as modern, or unknown: probe (a remembered era is only a hint).
            (None, _) => self.probe_then_initialize().await?,
        };
        if let Some(memo) = &options.era_memo {
            memo.set(era);
        }
        Ok(())
    }

    /// Probes; falls back to `initialize` for a legacy server.
    async fn probe_then_initialize(&self) -> Result<Era, Error> {
        match self.discover().await? {
            Probe::Modern => Ok(Era::Modern),
            Probe::Legacy(why) => {
                tracing::debug!(why, "not a modern server; initializing a legacy session");
                self.shared.sender.set_protocol_version(None);
                self.initialize().await?;
                Ok(Era::Legacy)
            }
        }
    }

    /// The `server/discover` probe.
    async fn discover(&self) -> Result<Probe, Error> {
        let shared = &self.shared;
        shared
            .sender
            .set_protocol_version(Some(ProtocolVersion::V2026_07_28));
        let limit = shared.options.discover_timeout;
        let mut retried = false;
        let answer = loop {
            let request = self.round_trip_adding(
                methods::SERVER_DISCOVER,
                None,
                RequestOptions::new().with_timeout(limit),
                super::request::MetaToAdd {
                    progress_token: true,
                    modern: true,
                },
            );
            match request.await {
                Ok(answer) => break answer,
                // Refused although it lists the version asked for: once more.
                Err(e) if !retried && names_our_version(&e) => {
                    tracing::debug!(error = %e, "server/discover refused a version it lists; retrying");
                    retried = true;
                }
                Err(e) => return self.classify_probe_error(e),
            }
        };
        // Anything but a discover result (a legacy server answering `{}`) means legacy.
        let result: DiscoverResult = match answer.into_typed() {
            Ok(result) => result,
            Err(e) => {
                return Ok(Probe::Legacy(format!(
                    "server/discover answered with something else than a discover result ({e})"
                )))
            }
        };
        let Some(version) = mutual_modern(&result.supported_versions) else {
            if speaks_a_legacy_one(&result.supported_versions) {
                return Ok(Probe::Legacy(format!(
                    "server/discover lists only legacy versions ({})",
                    result.supported_versions.join(", ")
                )));
            }
            return Err(no_mutual_version(
                &result.supported_versions,
                ProtocolVersion::V2026_07_28.as_str(),
            ));
        };
        let info = result
            .server_info()
            .unwrap_or_else(|| mcp_core::types::Implementation::new("unknown", "unknown"));
        tracing::debug!(server = %info.name, version = %version, "modern MCP server discovered");
        let summary = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: result.capabilities.clone(),
            server_info: info,
            instructions: result.instructions.clone(),
            extra: Map::new(),
        };
        let _ = shared.initialize_result.set(summary);
        let _ = shared.protocol_version.set(version);
        let _ = shared.discover_result.set(result);
        Ok(Probe::Modern)
    }

    fn classify_probe_error(&self, e: Error) -> Result<Probe, Error> {
        if self.is_closed() || e.kind() == ErrorKind::Auth {
            return Err(e);
        }
        match e.code() {
            Some(error_codes::UNSUPPORTED_PROTOCOL_VERSION) => {
                let data = unsupported_data(&e);
                if speaks_a_legacy_one(&data.supported) {
                    Ok(Probe::Legacy(format!(
                        "the server speaks {} but not 2026-07-28",
                        data.supported.join(", ")
                    )))
                } else {
                    Err(no_mutual_version(
                        &data.supported,
                        ProtocolVersion::V2026_07_28.as_str(),
                    ))
                }
            }
            Some(code) if error_codes::is_modern(code) => Err(e),
            Some(code) => Ok(Probe::Legacy(format!(
                "server/discover was refused with error {code}: {}",
                e.message()
            ))),
            None if e.kind() == ErrorKind::Timeout => Ok(Probe::Legacy(format!(
                "no answer to server/discover within {}",
                super::human_duration(self.shared.options.discover_timeout)
            ))),
            // It never reached a server (refused, unreachable): not evidence of an era.
            None if e.delivery() == Some(Delivery::NotSent) => Err(e),
            None => Ok(Probe::Legacy(format!(
                "server/discover failed: {}",
                e.message()
            ))),
        }
    }

    /// Whether this session speaks the modern era.
    pub fn is_modern(&self) -> bool {
        self.shared
            .protocol_version
            .get()
            .is_some_and(|v| v.is_modern())
    }

    /// The server's `server/discover` result (modern sessions only).
    pub fn discover_result(&self) -> Option<&DiscoverResult> {
        self.shared.discover_result.get()
    }

    /// Whether the server offers extension `id` (e.g. [`TASKS_EXTENSION`](crate::TASKS_EXTENSION))
    /// in its `server/discover` capabilities; a legacy-era session has no extensions.
    pub fn server_offers_extension(&self, id: &str) -> bool {
        self.discover_result()
            .is_some_and(|discovered| discovered.capabilities.extension(id).is_some())
    }
}
