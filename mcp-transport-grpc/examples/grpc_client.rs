//! A complete MCP client on `mcp-core` + `mcp-session` + `mcp-transport-grpc`: connect to an MCP server
//! over gRPC (`mcp.transport.v1.Mcp/Session`), list its tools, call one, print the result,
//! close.
//!
//! ```text
//! cargo run -p mcp-transport-grpc --example grpc_client -- ADDRESS [--token TOKEN] [--header NAME=VALUE]... [--tool NAME] [--args JSON]
//! ```
//!
//! ADDRESS is `host:port` (plaintext), or a URL: `grpc://`, `grpcs://` (TLS), `http://`,
//! `https://`. The token may also come from `MCP_GRPC_TOKEN`. Any MCP server behind
//! `mcph bridge --grpc ADDR SERVER` (this crate's `GrpcBridge`) or the npm package
//! `mcp-grpc-transport` answers.

use std::process::ExitCode;
use std::sync::Arc;

use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_grpc::{GrpcServerConfig, GrpcTransport};
use mcp_wire::StaticBearer;
use serde_json::Value;

const USAGE: &str = "usage: grpc_client ADDRESS [--token TOKEN] [--header NAME=VALUE]... [--tool NAME] [--args JSON]";

struct Args {
    address: String,
    token: Option<String>,
    headers: Vec<(String, String)>,
    tool: Option<String>,
    arguments: Option<Value>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        address: String::new(),
        token: std::env::var("MCP_GRPC_TOKEN").ok(),
        headers: Vec::new(),
        tool: None,
        arguments: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--token" => parsed.token = Some(args.next().ok_or("--token needs a value")?),
            "--header" => {
                let header = args.next().ok_or("--header needs NAME=VALUE")?;
                let (name, value) = header.split_once('=').ok_or("--header needs NAME=VALUE")?;
                parsed.headers.push((name.to_owned(), value.to_owned()));
            }
            "--tool" => parsed.tool = Some(args.next().ok_or("--tool needs a tool name")?),
            "--args" => {
                let json = args.next().ok_or("--args needs a JSON object")?;
                let value: Value = serde_json::from_str(&json)
                    .map_err(|e| format!("--args is not valid JSON: {e}"))?;
                if !value.is_object() {
                    return Err("--args must be a JSON object".into());
                }
                parsed.arguments = Some(value);
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other if parsed.address.is_empty() && !other.starts_with('-') => {
                parsed.address = other.to_owned()
            }
            other => return Err(format!("unexpected argument {other:?}\n{USAGE}")),
        }
    }
    if parsed.address.is_empty() {
        return Err(format!("the server's address is missing\n{USAGE}"));
    }
    Ok(parsed)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), mcp_core::Error> {
    let endpoint = if args.address.contains("://") {
        args.address.clone()
    } else {
        format!("grpc://{}", args.address)
    };
    let mut config = GrpcServerConfig::new(endpoint);
    for (name, value) in &args.headers {
        config = config.header(name, value);
    }
    if let Some(token) = &args.token {
        config = config.auth(Arc::new(StaticBearer::new(token)));
    }
    let transport = GrpcTransport::connect(config).await?;
    let options = SessionOptions::default()
        .with_client_info("grpc_client example", env!("CARGO_PKG_VERSION"));
    let session = ClientSession::connect(transport, (), options).await?;
    let info = session.server_info();
    println!(
        "connected to {} {} (protocol {})",
        info.server_info.name,
        info.server_info.version,
        session.protocol_version()
    );
    let tools = session.list_all_tools(RequestOptions::new()).await?;
    println!("{} tools:", tools.len());
    for tool in &tools {
        let description = tool
            .description
            .as_deref()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        println!("  {:<24} {description}", tool.name);
    }
    if let Some(tool) = &args.tool {
        let options = RequestOptions::new().on_progress(|p| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            eprintln!(
                "  progress {}{total} {}",
                p.progress,
                p.message.as_deref().unwrap_or("")
            );
        });
        match session
            .call_tool(tool, args.arguments.clone(), options)
            .await
        {
            Ok(result) if result.is_error() => {
                println!("{tool} reported an error: {}", result.text())
            }
            Ok(result) => println!("{tool} → {}", result.text()),
            Err(e) => println!("{tool} failed: {}", e.agent_message()),
        }
    }
    session.close().await;
    Ok(())
}
