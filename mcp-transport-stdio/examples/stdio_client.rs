//! A complete MCP client on `mcp-core` + `mcp-session` + `mcp-transport-stdio`: start a server as a child
//! process, list its tools, call one, print the result, shut the server down.
//!
//! ```text
//! cargo run -p mcp-transport-stdio --example stdio_client -- [--tool NAME] [--args JSON] -- COMMAND [ARG...]
//! ```
//!
//! Without a command it runs this workspace's fixture server (`cargo run -p mcp-testkit`) and
//! calls its `echo` tool.

use mcp_core::McpServiceExt;
use std::process::ExitCode;

use mcp_core::RequestOptions;
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
use serde_json::Value;

struct Args {
    tool: Option<String>,
    arguments: Option<Value>,
    command: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        tool: None,
        arguments: None,
        command: Vec::new(),
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
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
            "--" => {
                parsed.command = args.collect();
                break;
            }
            "-h" | "--help" => {
                return Err(
                    "usage: stdio_client [--tool NAME] [--args JSON] -- COMMAND [ARG...]".into(),
                );
            }
            other => {
                return Err(format!(
                    "unexpected argument {other:?}; put the server command after --"
                ))
            }
        }
    }
    if parsed.command.is_empty() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        parsed.command = [
            cargo.as_str(),
            "run",
            "--quiet",
            "-p",
            "mcp-testkit",
            "--bin",
            "mcp-fixture-server",
        ]
        .map(String::from)
        .to_vec();
        if parsed.tool.is_none() {
            parsed.tool = Some("echo".into());
            parsed.arguments = Some(serde_json::json!({"text": "hello over stdio"}));
        }
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
    let config = StdioServerConfig::new(&args.command[0]).args(&args.command[1..]);
    let transport = StdioTransport::spawn(config)?;
    let options = SessionOptions::default()
        .with_client_info("stdio_client example", env!("CARGO_PKG_VERSION"));
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
        let result = session
            .call_tool(tool, args.arguments.clone(), options)
            .await;
        match result {
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
