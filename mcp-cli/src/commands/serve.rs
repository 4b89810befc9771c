//! `mcph serve`: every configured server as one MCP server (the gateway of `mcp-gateway`) on
//! stdin/stdout until the harness closes stdin, or over Streamable HTTP (`--http ADDR`) until
//! Ctrl-C.

use mcp_client::McpClient;
use mcp_gateway::admin::{AdminOptions, AdminPanel};
use mcp_gateway::{Gateway, GatewayOptions, Prefixing, Relay};

use crate::commands::bridge::{
    read_tls_file, serve_grpc, token_from_env, Options as BridgeOptions,
};
use crate::errors::CliError;
use mcp_gateway::http::{tls_from_pem, BearerToken, HttpOptions, HttpServeError};

/// What `mcph serve` was asked.
#[derive(Debug)]
pub struct ServeOptions {
    /// Serve Streamable HTTP on this address instead of stdio.
    pub http: Option<std::net::SocketAddr>,
    /// Serve the gRPC tunnel on this address instead of stdio.
    pub grpc: Option<std::net::SocketAddr>,
    /// Serve the operations panel on this address too.
    pub admin: Option<std::net::SocketAddr>,
    /// The environment variable holding the bearer token HTTP clients must present.
    pub token_env: Option<String>,
    /// The TLS certificate chain and key (PEM files) to serve HTTP with.
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// When names carry their server's name.
    pub prefixing: Prefixing,
    /// Between a server's name and a tool's or prompt's.
    pub separator: String,
}

/// Serves `client`'s catalog on stdio until stdin ends, or over HTTP until the future is
/// dropped (Ctrl-C).
pub async fn run(client: &McpClient, relay: Relay, options: ServeOptions) -> Result<(), CliError> {
    let gateway = Gateway::start(
        client.clone(),
        relay,
        GatewayOptions {
            prefixing: options.prefixing,
            separator: options.separator,
            ..GatewayOptions::default()
        },
    )
    .await
    .map_err(|e| CliError::Other(e.to_string()))?;
    // Owned here: the panel ends with the command.
    let _panel = match options.admin {
        Some(addr) => {
            let panel = AdminPanel::bind(addr, client.clone(), AdminOptions::default())
                .await
                .map_err(|e| CliError::Other(e.to_string()))?;
            // stderr: stdout is the MCP stream on stdio.
            eprintln!("serving the operations panel at {}", panel.url());
            Some(panel)
        }
        None => None,
    };
    if let Some(address) = options.grpc {
        // The bridge of `mcph bridge`, with a new connection to the gateway per gRPC call.
        let (tls_cert, tls_key) = options.tls.clone().unzip();
        let bridge = BridgeOptions {
            address,
            server: "mcph-gateway".to_owned(),
            token_env: options.token_env.clone(),
            max_message_size: None,
            max_calls: None,
            tls_cert,
            tls_key,
        };
        // Until Ctrl-C drops this future (and with it the bridge and the gateway).
        let mut stop = std::pin::pin!(std::future::pending::<()>());
        return serve_grpc(
            gateway.server().connector(),
            bridge,
            "the gateway",
            false,
            &mut stop,
        )
        .await;
    }
    if let Some(addr) = options.http {
        let mut http = HttpOptions::default();
        if let Some(variable) = &options.token_env {
            http.bearer_token =
                BearerToken::new(token_from_env(variable, "clients of the gateway")?);
        }
        if let Some((cert_file, key_file)) = &options.tls {
            let chain = read_tls_file(cert_file, "certificate")?;
            let key = read_tls_file(key_file, "key")?;
            http.tls = Some(tls_from_pem(&chain, &key).map_err(|e| {
                CliError::Other(format!(
                    "{e} ({} and {})",
                    cert_file.display(),
                    key_file.display()
                ))
            })?);
        }
        let scheme = if http.tls.is_some() { "https" } else { "http" };
        let server = mcp_gateway::http::serve_http(&gateway, addr, http)
            .await
            .map_err(|e| match e {
                HttpServeError::Exposed { addr, missing } => CliError::Other(format!(
                    "refusing to serve MCP on {addr}, which is beyond loopback: every client \
                     would use the servers with your credentials; {missing} are needed: add \
                     --token-env VAR and --tls-cert PATH --tls-key PATH, or listen on 127.0.0.1"
                )),
                other => CliError::Other(other.to_string()),
            })?;
        // The one line on stdout: where to connect (what a script waits for).
        println!("listening on {scheme}://{}/mcp", server.local_addr());
        // Until Ctrl-C drops this future (and with it the server and the gateway).
        std::future::pending::<()>().await;
        Ok(())
    } else {
        let served = mcp_gateway::serve_stdio(&gateway).await;
        gateway.shutdown();
        served.map_err(|e| CliError::Other(format!("serving on stdio failed: {e}")))
    }
}
