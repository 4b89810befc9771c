//! `mcph serve`: every configured server as one MCP server on stdin/stdout (the gateway of
//! `mcp-gateway`), until the harness closes stdin.

use mcp_client::McpClient;
use mcp_gateway::{Gateway, GatewayOptions, Prefixing};

use crate::errors::CliError;

/// What `mcph serve` was asked.
#[derive(Debug)]
pub struct ServeOptions {
    /// When names carry their server's name.
    pub prefixing: Prefixing,
    /// Between a server's name and a tool's or prompt's.
    pub separator: String,
}

/// Serves `client`'s catalog on stdio until stdin ends.
pub async fn run(client: &McpClient, options: ServeOptions) -> Result<(), CliError> {
    let gateway = Gateway::start(
        client.clone(),
        GatewayOptions {
            prefixing: options.prefixing,
            separator: options.separator,
            ..GatewayOptions::default()
        },
    )
    .await
    .map_err(|e| CliError::Other(e.to_string()))?;
    let served = mcp_gateway::serve_stdio(&gateway).await;
    gateway.shutdown();
    served.map_err(|e| CliError::Other(format!("serving on stdio failed: {e}")))
}
