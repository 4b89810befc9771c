//! `mcph bridge --grpc ADDR SERVER`: serves a configured server over gRPC (the
//! `mcp.transport.v1.Mcp/Session` tunnel of `mcp-transport-grpc`) until Ctrl-C. Each gRPC call
//! gets its own connection to the server through the facade's transport registry — a child
//! process for a stdio server — so any server mcph can reach can be reached over gRPC.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use mcp_client::config::ClientConfig;
use mcp_client::TransportRegistry;
use mcp_transport_grpc::GrpcBridge;
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
}

/// Serves `options.server` over gRPC until `stop` (Ctrl-C) resolves.
pub async fn grpc(
    config: &ClientConfig,
    options: Options,
    json: bool,
    stop: &mut Pin<&mut impl Future>,
) -> Result<(), CliError> {
    let server = config
        .server(&options.server)
        .ok_or_else(|| CliError::NotFound {
            what: Missing::Server,
            name: options.server.clone(),
        })?;
    let oauth = super::auth::policy();
    let auth = oauth
        .provider_for(server)
        .map(|p| p as Arc<dyn mcp_core::AuthProvider>);
    let connector = TransportRegistry::with_profile()
        .transport_connector(server, auth)
        .map_err(CliError::Mcp)?;
    let mut bridge = GrpcBridge::new(connector);
    if let Some(variable) = &options.token_env {
        let token = std::env::var(variable)
            .ok()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                CliError::Other(format!(
                    "environment variable {variable} is not set (it should hold the bearer token \
                     callers of the bridge must present)"
                ))
            })?;
        bridge = bridge.require_bearer(token);
    }
    if let Some(bytes) = options.max_message_size {
        bridge = bridge.max_message_size(bytes);
    }
    let handle = bridge.serve(options.address).await.map_err(|e| {
        CliError::Other(format!(
            "cannot listen for gRPC on {}: {e}",
            options.address
        ))
    })?;
    let address = handle.local_addr();
    if json {
        println!(
            "{}",
            json!({ "server": options.server, "transport": "grpc", "url": handle.url() })
        );
    } else {
        println!("{}", handle.url());
        eprintln!(
            "serving \"{}\" over gRPC at {} (Ctrl-C stops)",
            options.server,
            handle.url()
        );
    }
    if !address.ip().is_loopback() && options.token_env.is_none() {
        eprintln!(
            "warning: listening on {address} beyond loopback without --token-env: anyone who can \
             reach it can use the server"
        );
    }
    stop.as_mut().await;
    let _ = tokio::time::timeout(SHUTDOWN, handle.shutdown()).await;
    Ok(())
}
