//! The full default call stack doing the benchmark calls: `mcp-client`'s facade (catalog lookup,
//! the traced call, and the server's stack — metrics, timeout, retry, breaker, gate, and over
//! HTTP the pool (at most 10 sessions by default, so at most 10 calls in flight) — with the `enterprise` profile's defaults) in front of the same session
//! `bench-client-ours` calls directly. The difference between the two is the stack's cost.

use std::collections::BTreeMap;
use std::rc::Rc;

use mcp_bench::http_server::HttpServer;
use mcp_bench::{measure, ClientArgs, Transport};
use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
use mcp_client::{ClientOptions, McpClient};
use mcp_core::ProtocolVersion;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = ClientArgs::from_env();
    if let Err(e) = run(&args).await {
        eprintln!("bench-client-stack: {e}");
        std::process::exit(1);
    }
}

async fn run(args: &ClientArgs) -> Result<(), String> {
    match args.transport {
        Transport::Stdio => {
            let transport = TransportConfig::Stdio {
                command: args.server.clone(),
                args: args.server_args.clone(),
                env: BTreeMap::new(),
                cwd: None,
            };
            bench(args, transport).await
        }
        Transport::Http => {
            let server = HttpServer::start(&args.server, &args.server_args)?;
            let transport = TransportConfig::Http {
                url: server.endpoint(),
                headers: BTreeMap::new(),
            };
            let result = bench(args, transport).await;
            drop(server);
            result
        }
    }
}

async fn bench(args: &ClientArgs, transport: TransportConfig) -> Result<(), String> {
    let config = ClientConfig {
        servers: vec![ServerConfig::new("bench", transport)],
        source: None,
        region: None,
        store: None,
    };
    let client = McpClient::builder(config)
        .options(ClientOptions::default())
        .session_options(|_, options| options.with_protocol_version(ProtocolVersion::V2025_11_25))
        .start()
        .await;
    let report = &client.servers()[0];
    if !report.status.is_ready() {
        return Err(format!("the server did not start: {}", report.status));
    }
    let client = Rc::new(client);
    let payload = args.payload;
    let arguments = payload.arguments();
    let tool: Rc<str> = format!("bench__{}", payload.tool()).into();
    let call = {
        let client = client.clone();
        move || {
            let client = client.clone();
            let arguments = arguments.clone();
            let tool = tool.clone();
            async move {
                let result = client
                    .call_tool(&tool, Some(arguments))
                    .await
                    .map_err(|e| e.to_string())?;
                payload.check_result(&result)
            }
        }
    };
    let measurement = measure("stack", args, call).await?;
    client.shutdown().await;
    measurement.print();
    Ok(())
}
