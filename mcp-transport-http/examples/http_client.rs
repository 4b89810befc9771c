//! A complete MCP client over HTTP on `mcp-core` + `mcp-session` + `mcp-transport-http`: connect to a URL
//! (Streamable HTTP, falling back to HTTP+SSE), list the tools, call one, close.
//!
//! ```text
//! cargo run -p mcp-transport-http --example http_client -- URL [TOOL [JSON-ARGUMENTS]]
//! ```
//! Set `MCP_BEARER_TOKEN` to send `Authorization: Bearer …`.

use mcp_core::McpServiceExt;
use mcp_core::RequestOptions;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_http::{HttpFlavorMemo, HttpServerConfig, HttpTransport};
use mcp_wire::StaticBearer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: http_client URL [TOOL [JSON-ARGUMENTS]]");
        return ExitCode::from(2);
    };
    let tool = args.next();
    let arguments = match args.next().map(|a| serde_json::from_str(&a)) {
        Some(Ok(value)) => Some(value),
        Some(Err(e)) => {
            eprintln!("the arguments are not JSON: {e}");
            return ExitCode::from(2);
        }
        None => None,
    };
    let mut config = HttpServerConfig::new(url);
    if let Ok(token) = std::env::var("MCP_BEARER_TOKEN") {
        config = config.auth(Arc::new(StaticBearer::new(&token)));
    }
    match run(config, tool, arguments).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    config: HttpServerConfig,
    tool: Option<String>,
    arguments: Option<serde_json::Value>,
) -> Result<(), mcp_core::Error> {
    let memo = HttpFlavorMemo::default();
    let transport = HttpTransport::new(config, memo.clone())?;
    let session = ClientSession::connect(transport, (), SessionOptions::default()).await?;
    // Output errors (a closed pipe) are ignored: this is a demo, not a tool to pipe from.
    let mut out = std::io::stdout().lock();
    let info = &session.server_info().server_info;
    let _ = writeln!(
        out,
        "connected to {} {} over {:?} (protocol {})",
        info.name,
        info.version,
        memo.get().expect("detected by the handshake"),
        session.protocol_version()
    );
    for t in session.list_all_tools(RequestOptions::new()).await? {
        let _ = writeln!(out, "  {}", t.name);
    }
    if let Some(tool) = tool {
        let result = session
            .call_tool(&tool, arguments, RequestOptions::new())
            .await?;
        let _ = writeln!(out, "{tool} → {}", result.text());
    }
    drop(out);
    session.close().await;
    Ok(())
}
