//! `mcph bridge --grpc ADDR SERVER`: serves a configured server over gRPC (the
//! `mcp.transport.v1.Mcp/Session` tunnel of `mcp-transport-grpc`) until Ctrl-C. Each gRPC call
//! gets its own connection to the server through the facade's transport registry — a child
//! process for a stdio server — so any server mcph can reach can be reached over gRPC.
//!
//! Every caller acts as the user (the bridge reaches the server with the user's own
//! credentials), so an address beyond loopback is refused unless callers must present a token
//! and that token travels over TLS.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use mcp_client::config::ClientConfig;
use mcp_client::{GrpcBridge, TransportRegistry};
use serde_json::json;

use crate::errors::{CliError, Missing};

/// How long a stopping bridge waits for its calls and their servers to end.
const SHUTDOWN: Duration = Duration::from_secs(5);

/// What `mcph bridge` was asked.
#[derive(Debug)]
pub struct Options {
    /// Where to listen.
    pub address: SocketAddr,
    /// The configured server to serve.
    pub server: String,
    /// The environment variable holding the bearer token callers must present.
    pub token_env: Option<String>,
    /// The largest message either way.
    pub max_message_size: Option<usize>,
    /// The most calls (each with its own server connection) at once.
    pub max_calls: Option<usize>,
    /// The TLS certificate chain (PEM) to serve with; set together with `tls_key`.
    pub tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM).
    pub tls_key: Option<PathBuf>,
}

/// Refuses an address beyond loopback unless callers need a token and it is sent over TLS.
fn check_exposure(options: &Options) -> Result<(), CliError> {
    let address = options.address;
    if address.ip().is_loopback() {
        return Ok(());
    }
    let mut missing = Vec::new();
    if options.token_env.is_none() {
        missing.push("--token-env VAR (a bearer token callers must present)");
    }
    if options.tls_cert.is_none() || options.tls_key.is_none() {
        missing.push("--tls-cert PATH --tls-key PATH (so the token is not sent in cleartext)");
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(CliError::Other(format!(
        "refusing to serve gRPC on {address}, which is beyond loopback: every caller would use \
         the server with your credentials; add {}, or listen on 127.0.0.1",
        missing.join(" and ")
    )))
}

/// Reads one TLS file, naming it (and what it is) when it cannot be read (`mcph bridge`,
/// `mcph serve --http`).
pub(crate) fn read_tls_file(path: &Path, what: &str) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| {
        CliError::Other(format!(
            "cannot read the TLS {what} {}: {e}",
            path.display()
        ))
    })
}

/// The bearer token `who` must present, from the environment variable `variable` (set and not
/// empty, else an error naming it).
pub(crate) fn token_from_env(variable: &str, who: &str) -> Result<String, CliError> {
    std::env::var(variable)
        .ok()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            CliError::Other(format!(
                "environment variable {variable} is not set (it should hold the bearer token \
                 {who} must present)"
            ))
        })
}

/// Serves `options.server` over gRPC until `stop` (Ctrl-C) resolves.
pub async fn grpc(
    config: &ClientConfig,
    options: Options,
    json: bool,
    stop: &mut Pin<&mut impl Future>,
) -> Result<(), CliError> {
    check_exposure(&options)?;
    let server = config
        .server(&options.server)
        .ok_or_else(|| CliError::NotFound {
            what: Missing::Server,
            name: options.server.clone(),
        })?;
    let oauth = super::auth::policy(config)?;
    let auth = oauth
        .provider_for(server)
        .map(|p| p as Arc<dyn mcp_client::transports::AuthProvider>);
    let connector = TransportRegistry::with_profile()
        .transport_connector(server, auth)
        .map_err(CliError::Mcp)?;
    let label = options.server.clone();
    serve_grpc(connector, options, &label, json, stop).await
}

/// Serves `connector` (a new connection per gRPC call) over gRPC as `options` say until `stop`
/// resolves; `label` names what is served (`mcph bridge`'s server, or `mcph serve`'s gateway).
pub(crate) async fn serve_grpc(
    connector: Arc<dyn mcp_core::TransportConnector>,
    options: Options,
    label: &str,
    json: bool,
    stop: &mut Pin<&mut impl Future>,
) -> Result<(), CliError> {
    check_exposure(&options)?;
    let mut bridge = GrpcBridge::new(connector);
    if let Some(variable) = &options.token_env {
        bridge = bridge.require_bearer(token_from_env(variable, "callers of the bridge")?);
    }
    if let Some(bytes) = options.max_message_size {
        bridge = bridge.max_message_size(bytes);
    }
    if let Some(calls) = options.max_calls {
        bridge = bridge.max_calls(calls);
    }
    if let (Some(cert), Some(key)) = (&options.tls_cert, &options.tls_key) {
        let chain = read_tls_file(cert, "certificate")?;
        let private_key = read_tls_file(key, "key")?;
        bridge = bridge.tls(chain, private_key);
    }
    let handle = bridge.serve(options.address).await.map_err(|e| {
        let tls = match (&options.tls_cert, &options.tls_key) {
            (Some(cert), Some(key)) if e.kind() == std::io::ErrorKind::InvalidInput => format!(
                " (check --tls-cert {} and --tls-key {})",
                cert.display(),
                key.display()
            ),
            _ => String::new(),
        };
        CliError::Other(format!(
            "cannot listen for gRPC on {}: {e}{tls}",
            options.address
        ))
    })?;
    if json {
        println!(
            "{}",
            json!({ "server": label, "transport": "grpc", "url": handle.url() })
        );
    } else {
        println!("{}", handle.url());
        eprintln!(
            "serving \"{label}\" over gRPC at {} (Ctrl-C stops)",
            handle.url()
        );
    }
    stop.as_mut().await;
    let _ = tokio::time::timeout(SHUTDOWN, handle.shutdown()).await;
    Ok(())
}
