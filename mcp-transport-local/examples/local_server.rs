//! An MCP server in the same process as its client, with nothing but `mcp-core`,
//! `mcp-session` and `mcp-transport-local`: tools, a resource and a prompt written as async
//! Rust functions, reached through an ordinary `ClientSession`.
//!
//! ```text
//! cargo run -p mcp-transport-local --example local_server
//! ```

use std::time::Duration;

use async_trait::async_trait;
use mcp_core::jsonrpc::ErrorObject;
use mcp_core::types::{ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use mcp_transport_local::{
    Json, LocalPrompt, LocalResource, LocalServer, LocalTool, NoArguments, ReadRequest,
    RequestContext, ToolError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct ConvertArgs {
    /// Degrees Celsius.
    celsius: f64,
}

#[derive(Serialize, JsonSchema)]
struct Converted {
    fahrenheit: f64,
    kelvin: f64,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How far to count.
    to: u32,
}

#[derive(Deserialize, JsonSchema)]
struct SummaryArgs {
    /// The topic to summarize.
    topic: String,
}

/// The harness's side: answers the server's questions (here, always with the same name).
struct Harness;

#[async_trait]
impl ClientHandler for Harness {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        println!("  the server asks: {}", params.message);
        let mut content = serde_json::Map::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        })
    }
}

fn server() -> Result<LocalServer, mcp_transport_local::BuildError> {
    LocalServer::builder("units", "1.0.0")
        .instructions("Converts temperatures and counts.")
        .tool(
            LocalTool::new(
                "convert",
                |_ctx: RequestContext, args: ConvertArgs| async move {
                    if args.celsius < -273.15 {
                        return Err(ToolError::invalid_params("celsius", "below absolute zero"));
                    }
                    Ok(Json(Converted {
                        fahrenheit: args.celsius * 9.0 / 5.0 + 32.0,
                        kelvin: args.celsius + 273.15,
                    }))
                },
            )
            .description("Converts degrees Celsius to Fahrenheit and Kelvin")
            .read_only(),
        )
        .tool(
            LocalTool::new("count", |ctx: RequestContext, args: CountArgs| async move {
                for n in 1..=args.to {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    ctx.progress(f64::from(n), Some(f64::from(args.to)), None)
                        .await;
                }
                format!("counted to {}", args.to)
            })
            .description("Counts slowly, reporting progress"),
        )
        .tool(
            LocalTool::new(
                "greet",
                |ctx: RequestContext, _args: NoArguments| async move {
                    let question = ElicitRequestParams {
                        mode: None,
                        message: "What is your name?".into(),
                        requested_schema: Some(json!({
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"]
                        })),
                        url: None,
                        elicitation_id: None,
                        extra: Default::default(),
                    };
                    let answer = ctx.elicit(question).await?;
                    let name = answer
                        .content
                        .and_then(|c| c.get("name").and_then(|n| n.as_str()).map(str::to_owned))
                        .unwrap_or_else(|| "stranger".into());
                    Ok::<_, ToolError>(format!("Hello, {name}!"))
                },
            )
            .description("Asks the user's name and greets them"),
        )
        .resource(
            LocalResource::new(
                "units://scales",
                "scales",
                |_ctx: RequestContext, _read: ReadRequest| async move {
                    "Celsius, Fahrenheit, Kelvin".to_owned()
                },
            )
            .description("The scales this server knows"),
        )
        .prompt(
            LocalPrompt::new(
                "summarize",
                |_ctx: RequestContext, args: SummaryArgs| async move {
                    format!(
                        "Summarize what you know about {} in three sentences.",
                        args.topic
                    )
                },
            )
            .description("Asks for a short summary"),
        )
        .build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = server()?;
    let session =
        ClientSession::connect(server.connect()?, Harness, SessionOptions::default()).await?;
    println!(
        "connected to {} {} ({} era, over {})",
        session.server_info().server_info.name,
        session.server_info().server_info.version,
        session.era(),
        session.transport_name()
    );

    for tool in session.list_all_tools(RequestOptions::new()).await? {
        println!("tool {}: {}", tool.name, tool.input_schema);
    }

    let converted = session
        .call_tool(
            "convert",
            Some(json!({"celsius": 21.5})),
            RequestOptions::new(),
        )
        .await?;
    println!(
        "convert: {}",
        converted.structured_content.unwrap_or_default()
    );

    let refused = session
        .call_tool(
            "convert",
            Some(json!({"celsius": "warm"})),
            RequestOptions::new(),
        )
        .await
        .expect_err("not a number");
    println!(
        "convert with a bad argument: {refused} (field {:?})",
        refused.field()
    );

    let progress = RequestOptions::new()
        .on_progress(|p| println!("  progress {}/{}", p.progress, p.total.unwrap_or_default()));
    let counted = session
        .call_tool("count", Some(json!({"to": 3})), progress)
        .await?;
    println!("count: {}", counted.text());

    let greeted = session
        .call_tool("greet", Some(json!({})), RequestOptions::new())
        .await?;
    println!("greet: {}", greeted.text());

    let scales = session
        .read_resource("units://scales", RequestOptions::new())
        .await?;
    println!("units://scales: {:?}", scales.contents[0].text);

    let prompt = session
        .get_prompt(
            "summarize",
            Some([("topic".to_owned(), "thermometers".to_owned())].into()),
            RequestOptions::new(),
        )
        .await?;
    println!("summarize: {:?}", prompt.messages[0].content.as_text());

    session.close().await;
    server.shutdown();
    Ok(())
}
