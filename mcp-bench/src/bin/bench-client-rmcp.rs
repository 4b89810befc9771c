//! The official Rust SDK (`rmcp`) doing the benchmark calls, set up the way its fastest users
//! do: child-process stdio transport, protocol 2025-11-25 pinned (its default is 2026-07-28,
//! which the fixture server does not speak), a current-thread runtime and the single-round
//! `Peer::call_tool`.
//!
//! With `--transport http`: rmcp's Streamable HTTP client (`StreamableHttpClientTransport`)
//! over a `reqwest::Client` with its default connection pool (rmcp's own default client turns
//! idle pooling off, which opens a TCP connection per POST), and `max_concurrent_requests`
//! raised to the calls in flight (its default, 16, would cap the ×64 scenario).

use mcp_bench::http_server::HttpServer;
use mcp_bench::{measure, ClientArgs, Transport};
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use tokio::process::Command;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = ClientArgs::from_env();
    match run(&args).await {
        Ok(()) => {}
        Err(e) => {
            eprintln!("bench-client-rmcp: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: &ClientArgs) -> Result<(), String> {
    // `serve` does the `initialize` handshake with this protocol version.
    let config = ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_11_25);
    match args.transport {
        Transport::Stdio => {
            let mut command = Command::new(&args.server);
            command.args(&args.server_args);
            let transport = TokioChildProcess::new(command).map_err(|e| e.to_string())?;
            let service = config.serve(transport).await.map_err(|e| e.to_string())?;
            bench(args, service).await
        }
        Transport::Http => {
            let server = HttpServer::start(&args.server, &args.server_args)?;
            let client = reqwest::Client::builder()
                .build()
                .map_err(|e| e.to_string())?;
            let transport = StreamableHttpClientTransport::with_client(
                client,
                StreamableHttpClientTransportConfig::with_uri(server.endpoint())
                    .max_concurrent_requests(args.inflight.max(16)),
            );
            let service = config.serve(transport).await.map_err(|e| e.to_string())?;
            let result = bench(args, service).await;
            drop(server);
            result
        }
    }
}

async fn bench(
    args: &ClientArgs,
    service: RunningService<RoleClient, ClientConfig>,
) -> Result<(), String> {
    let payload = args.payload;
    let arguments = match payload.arguments() {
        serde_json::Value::Object(map) => map,
        other => return Err(format!("arguments are not an object: {other}")),
    };
    let call = {
        let peer = service.peer().clone();
        move || {
            let peer = peer.clone();
            let params =
                CallToolRequestParams::new(payload.tool()).with_arguments(arguments.clone());
            async move {
                let result = peer.call_tool(params).await.map_err(|e| e.to_string())?;
                match result.content.first().and_then(|c| c.as_text()) {
                    Some(text) if payload.check_text(&text.text) => Ok(()),
                    _ => Err(format!("unexpected result: {:?}", result.content.first())),
                }
            }
        }
    };
    let measurement = measure("rmcp", args, call).await?;
    service.cancel().await.map_err(|e| e.to_string())?;
    measurement.print();
    Ok(())
}
