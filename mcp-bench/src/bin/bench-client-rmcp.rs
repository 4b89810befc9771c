//! The official Rust SDK (`rmcp`) doing the benchmark calls, set up the way its fastest users
//! do: child-process stdio transport, protocol 2025-11-25 pinned (its default is 2026-07-28,
//! which the fixture server does not speak), a current-thread runtime and the single-round
//! `Peer::call_tool`.

use mcp_bench::{measure, ClientArgs};
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
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
    let mut command = Command::new(&args.server);
    command.args(&args.server_args);
    let transport = TokioChildProcess::new(command).map_err(|e| e.to_string())?;
    // `serve` does the `initialize` handshake with this protocol version.
    let config = ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_11_25);
    let service = config.serve(transport).await.map_err(|e| e.to_string())?;
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
