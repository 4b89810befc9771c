//! Watches one resource of a stdio MCP server: reads it, then prints it again on every update,
//! with the state transitions, for up to a minute (or until Ctrl-C).
//!
//! ```text
//! cargo run -p mcp-resources --example watch_resource -- fixture://counter
//! cargo run -p mcp-resources --example watch_resource -- file:///tmp/notes.md npx -y @modelcontextprotocol/server-filesystem /tmp
//! ```
//!
//! Without a server command it starts the project's fixture server; call its `bump_resource`
//! tool (e.g. with `mcph`) to see updates, or let the example bump it once itself.

use std::time::Duration;

use mcp_core::{McpServiceExt, RequestOptions};
use mcp_resources::{ResourceConfig, ResourceHandler, ResourceManager};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
use tokio::sync::mpsc;

const WATCH_FOR: Duration = Duration::from_secs(60);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let uri = args
        .next()
        .unwrap_or_else(|| "fixture://counter".to_owned());
    let command: Vec<String> = args.collect();
    let fixture = command.is_empty();
    let config = match command.split_first() {
        Some((program, rest)) => StdioServerConfig::new(program).args(rest),
        None => StdioServerConfig::new(mcp_testkit::fixture_server_bin()),
    };

    let handler = ResourceHandler::new(());
    let relay = handler.relay();
    let transport = StdioTransport::spawn(config)?;
    let session = ClientSession::connect(transport, handler, SessionOptions::default()).await?;
    let resources = ResourceManager::for_session(&session, ResourceConfig::default());
    relay.attach(&resources);

    let mut transitions = resources.transitions();
    let (updated, mut updates) = mpsc::unbounded_channel();
    let _guard = resources.on_update(&uri, move |_| {
        let _ = updated.send(());
    });

    print_contents(&resources, &uri).await?;
    if fixture {
        session
            .call_tool("bump_resource", None, RequestOptions::new())
            .await?;
    }
    let deadline = tokio::time::Instant::now() + WATCH_FOR;
    loop {
        tokio::select! {
            Some(()) = updates.recv() => print_contents(&resources, &uri).await?,
            Ok(transition) = transitions.recv() => println!("  [{transition}]"),
            _ = tokio::signal::ctrl_c() => break,
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    println!("{:?}", resources.stats());
    resources.close().await;
    session.close().await;
    Ok(())
}

async fn print_contents(resources: &ResourceManager, uri: &str) -> Result<(), mcp_core::Error> {
    let result = resources.read(uri).await?;
    for content in &result.contents {
        match (&content.text, &content.blob) {
            (Some(text), _) => println!("{}: {text}", content.uri),
            (None, Some(blob)) => println!("{}: <{} bytes of base64>", content.uri, blob.len()),
            (None, None) => println!("{}: <empty>", content.uri),
        }
    }
    Ok(())
}
