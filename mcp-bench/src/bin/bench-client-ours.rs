//! Our client (`mcp-core` + `mcp-transport-stdio`, or `mcp-transport-http`'s Streamable HTTP
//! transport with `--transport http`) doing the benchmark calls; with `--tool` and
//! `--server-url`, through a gateway that renames tools or prints no address.

use mcp_core::McpServiceExt;
use mcp_core::RequestOptions;
use std::rc::Rc;

use mcp_bench::http_server::HttpServer;
use mcp_bench::{measure, ClientArgs, Transport};
use mcp_core::{ProtocolVersion, Transport as McpTransport};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = ClientArgs::from_env();
    match run(&args).await {
        Ok(()) => {}
        Err(e) => {
            eprintln!("bench-client-ours: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: &ClientArgs) -> Result<(), String> {
    match args.transport {
        Transport::Stdio => {
            let config = StdioServerConfig::new(&args.server).args(&args.server_args);
            let transport = StdioTransport::spawn(config).map_err(|e| e.to_string())?;
            bench(args, transport).await
        }
        Transport::Http => {
            let (server, endpoint) = match &args.server_url {
                Some(url) => (
                    HttpServer::spawn_at(&args.server, &args.server_args, url)?,
                    url.clone(),
                ),
                None => {
                    let server = HttpServer::start(&args.server, &args.server_args)?;
                    let endpoint = server.endpoint();
                    (server, endpoint)
                }
            };
            let transport = StreamableHttpTransport::new(HttpServerConfig::new(endpoint))
                .map_err(|e| e.to_string())?;
            let result = bench(args, transport).await;
            drop(server);
            result
        }
    }
}

async fn bench<T: McpTransport>(args: &ClientArgs, transport: T) -> Result<(), String> {
    let options = SessionOptions::default().with_protocol_version(ProtocolVersion::V2025_11_25);
    let session = ClientSession::connect(transport, (), options)
        .await
        .map_err(|e| e.to_string())?;
    let session = Rc::new(session);
    let payload = args.payload;
    let tool: Rc<str> = Rc::from(args.tool());
    let arguments = payload.arguments();
    let call = {
        let session = session.clone();
        move || {
            let session = session.clone();
            let arguments = arguments.clone();
            let tool = tool.clone();
            async move {
                let result = session
                    .call_tool(&tool, Some(arguments), RequestOptions::new())
                    .await
                    .map_err(|e| e.to_string())?;
                payload.check_result(&result)
            }
        }
    };
    let measurement = measure("ours", args, call).await?;
    session.close().await;
    measurement.print();
    Ok(())
}
