//! `mcph serve`: every configured server as one MCP server (the gateway of `mcp-gateway`) on
//! stdin/stdout until the harness closes stdin, or over Streamable HTTP (`--http ADDR`) until
//! Ctrl-C.

use mcp_client::McpClient;
use mcp_gateway::admin::{AdminOptions, AdminPanel};
use mcp_gateway::{Gateway, GatewayOptions, Prefixing, Relay};

use crate::errors::CliError;

/// What `mcph serve` was asked.
#[derive(Debug)]
pub struct ServeOptions {
    /// Serve Streamable HTTP on this address instead of stdio.
    pub http: Option<std::net::SocketAddr>,
    /// Serve the operations panel on this address too.
    pub admin: Option<std::net::SocketAddr>,
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
    if let Some(addr) = options.http {
        let server = mcp_gateway::http::serve_http(&gateway, addr, Default::default())
            .await
            .map_err(|e| CliError::Other(e.to_string()))?;
        // The one line on stdout: where to connect (what a script waits for).
        println!("listening on http://{}/mcp", server.local_addr());
        // Until Ctrl-C drops this future (and with it the server and the gateway).
        std::future::pending::<()>().await;
    }
    let served = mcp_gateway::serve_stdio(&gateway).await;
    gateway.shutdown();
    served.map_err(|e| CliError::Other(format!("serving on stdio failed: {e}")))
}
