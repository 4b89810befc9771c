//! Our client (`mcp-core` + `mcp-transport-stdio`) doing the benchmark calls.

use std::rc::Rc;

use mcp_bench::{measure, ClientArgs};
use mcp_core::{ClientSession, ProtocolVersion, SessionOptions};
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
    let config = StdioServerConfig::new(&args.server).args(&args.server_args);
    let transport = StdioTransport::spawn(config).map_err(|e| e.to_string())?;
    let options = SessionOptions::default().with_protocol_version(ProtocolVersion::V2025_11_25);
    let session = ClientSession::connect(transport, (), options)
        .await
        .map_err(|e| e.to_string())?;
    let session = Rc::new(session);
    let payload = args.payload;
    let arguments = payload.arguments();
    let call = {
        let session = session.clone();
        move || {
            let session = session.clone();
            let arguments = arguments.clone();
            async move {
                let result = session
                    .call_tool(payload.tool(), Some(arguments))
                    .await
                    .map_err(|e| e.to_string())?;
                match result.content.first().and_then(|c| c.as_text()) {
                    Some(text) if payload.check_text(text) => Ok(()),
                    _ => Err(format!(
                        "unexpected result: {:?}",
                        result.content.first().map(|c| c.type_name())
                    )),
                }
            }
        }
    };
    let measurement = measure("ours", args, call).await?;
    session.close().await;
    measurement.print();
    Ok(())
}
