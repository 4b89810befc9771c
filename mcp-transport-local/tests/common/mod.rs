//! What the tests share: a server with tools for every behaviour, a client handler that answers
//! the server's requests, sessions over either path, and bounded waits.

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::jsonrpc::ErrorObject;
use mcp_core::types::{
    ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult, LoggingLevel,
    RootsCapability,
};
use mcp_core::Era;
use mcp_session::{ClientHandler, ClientSession, ServerNotification, SessionOptions};
use mcp_transport_local::{
    Json, LocalPrompt, LocalResource, LocalResourceTemplate, LocalServer, LocalTool, NoArguments,
    ReadRequest, RequestContext, ToolError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The longest any wait in these tests may take.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// How a request reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Answered in the caller's task (the default).
    InPlace,
    /// Sent through the connection's task and answered through the session's reader.
    Ordinary,
}

impl Path {
    pub const BOTH: [Path; 2] = [Path::InPlace, Path::Ordinary];
}

/// What the test tools record.
#[derive(Default)]
pub struct Seen {
    /// A `watch_cancel` call saw its cancellation token fire.
    pub cancellation_reached: AtomicBool,
    /// A `watch_cancel` call's future was dropped.
    pub handler_dropped: AtomicBool,
}

#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// Text to echo back.
    pub text: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct AddArgs {
    /// First addend.
    pub a: f64,
    /// Second addend.
    pub b: f64,
}

#[derive(Serialize, JsonSchema)]
pub struct Sum {
    /// a + b.
    pub sum: f64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// At most this many results.
    pub limit: u32,
    pub filter: Option<Filter>,
}

#[derive(Deserialize, JsonSchema)]
pub struct Filter {
    pub year: u16,
}

#[derive(Deserialize, JsonSchema)]
pub struct ProgressArgs {
    pub steps: u32,
}

#[derive(Deserialize, JsonSchema)]
pub struct LogArgs {
    pub message: String,
}

/// Sets a flag when dropped (the handler's future was dropped).
struct DropFlag(Arc<Seen>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.handler_dropped.store(true, Ordering::SeqCst);
    }
}

/// The test server: its tools cover every behaviour the tests look at.
pub fn test_server(path: Path, seen: Arc<Seen>) -> LocalServer {
    test_builder(path, seen)
        .build()
        .expect("valid registrations")
}

pub fn test_builder(path: Path, seen: Arc<Seen>) -> mcp_transport_local::LocalServerBuilder {
    LocalServer::builder("test-server", "1.2.3")
        .instructions("Tools for the tests.")
        .answer_in_place(path == Path::InPlace)
        .tool(
            LocalTool::new("echo", |_ctx: RequestContext, args: EchoArgs| async move {
                args.text
            })
            .description("Echoes the text")
            .read_only(),
        )
        .tool(
            LocalTool::new("add", |_ctx: RequestContext, args: AddArgs| async move {
                Ok::<_, ToolError>(Json(Sum {
                    sum: args.a + args.b,
                }))
            })
            .description("Adds two numbers"),
        )
        .tool(
            LocalTool::new(
                "search",
                |_ctx: RequestContext, args: SearchArgs| async move {
                    format!("{} (up to {})", args.query, args.limit)
                },
            )
            .description("Searches"),
        )
        .tool(
            LocalTool::new(
                "progress",
                |ctx: RequestContext, args: ProgressArgs| async move {
                    for step in 1..=args.steps {
                        ctx.progress(
                            f64::from(step),
                            Some(f64::from(args.steps)),
                            Some("working"),
                        )
                        .await;
                        // A real await between reports, as real work would have.
                        tokio::task::yield_now().await;
                    }
                    format!("{} steps", args.steps)
                },
            )
            .description("Reports progress"),
        )
        .tool(
            LocalTool::new("log", |ctx: RequestContext, args: LogArgs| async move {
                ctx.log(LoggingLevel::Info, Some("tests"), &args.message)
                    .await;
                ctx.log(
                    LoggingLevel::Error,
                    Some("tests"),
                    format!("error: {}", args.message),
                )
                .await;
                "logged"
            })
            .description("Logs at info and error"),
        )
        .tool(LocalTool::new(
            "ask",
            |ctx: RequestContext, _args: NoArguments| async move {
                let params = ElicitRequestParams {
                    mode: None,
                    message: "Who are you?".into(),
                    requested_schema: Some(json!({
                        "type": "object",
                        "properties": { "name": { "type": "string" } }
                    })),
                    url: None,
                    elicitation_id: None,
                    extra: Default::default(),
                };
                let answer = ctx.elicit(params).await?;
                let name = answer
                    .content
                    .and_then(|c| c.get("name").cloned())
                    .unwrap_or_default();
                Ok::<_, ToolError>(format!("hello {name}"))
            },
        ))
        .tool(LocalTool::new(
            "roots",
            |ctx: RequestContext, _args: NoArguments| async move {
                let roots = ctx.list_roots().await?;
                Ok::<_, ToolError>(format!("{} roots", roots.roots.len()))
            },
        ))
        .tool(LocalTool::new("watch_cancel", {
            let seen = seen.clone();
            move |ctx: RequestContext, _args: NoArguments| {
                let seen = seen.clone();
                async move {
                    let _dropped = DropFlag(seen.clone());
                    let token = ctx.cancellation_token();
                    let watcher = seen.clone();
                    // Work handed elsewhere sees the cancellation through the token.
                    tokio::spawn(async move {
                        token.cancelled().await;
                        watcher.cancellation_reached.store(true, Ordering::SeqCst);
                    });
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    "never"
                }
            }
        }))
        .tool(LocalTool::new(
            "stubborn",
            |_ctx: RequestContext, _args: NoArguments| async move {
                // Ignores its context entirely.
                loop {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                #[allow(unreachable_code)]
                "never"
            },
        ))
        .tool(LocalTool::new(
            "explode",
            |_ctx: RequestContext, _args: NoArguments| async move {
                let fuse: Option<&str> = std::hint::black_box(None);
                fuse.expect("the fuse was lit")
            },
        ))
        .tool(LocalTool::new(
            "explode_early",
            |_ctx: RequestContext, _args: NoArguments| {
                // Before the async block: in the caller's task, not in the handler's future.
                let fuse: Option<&str> = std::hint::black_box(None);
                let lit = fuse.expect("lit before the call began");
                async move { lit }
            },
        ))
        .tool(LocalTool::new(
            "refuse",
            |_ctx: RequestContext, _args: NoArguments| async move {
                Err::<String, _>(ToolError::failed("no, thank you"))
            },
        ))
        .tool(LocalTool::new(
            "crash",
            |ctx: RequestContext, _args: NoArguments| async move {
                ctx.server().crash();
                std::future::pending::<String>().await
            },
        ))
        .resource(
            LocalResource::new(
                "test://hello",
                "hello",
                |_ctx: RequestContext, _r: ReadRequest| async move { "hello, world".to_owned() },
            )
            .description("A greeting"),
        )
        .resource_template(
            LocalResourceTemplate::new(
                "test://items/{id}",
                "item",
                |_ctx: RequestContext, r: ReadRequest| async move {
                    format!("item {}", r.variable("id").unwrap_or("?"))
                },
            )
            .mime_type("text/markdown"),
        )
        .prompt(
            LocalPrompt::new(
                "greet",
                |_ctx: RequestContext, args: GreetArgs| async move {
                    format!("Say hello to {}.", args.name)
                },
            )
            .description("Greets someone"),
        )
}

#[derive(Deserialize, JsonSchema)]
pub struct GreetArgs {
    /// Who to greet.
    pub name: String,
}

/// Answers the server's requests (elicitation, roots) and records the notifications it sees.
#[derive(Default)]
pub struct TestHandler {
    pub notifications: Mutex<Vec<ServerNotification>>,
    pub elicitations: AtomicUsize,
}

#[async_trait]
impl ClientHandler for TestHandler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            roots: Some(RootsCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.elicitations.fetch_add(1, Ordering::SeqCst);
        let mut content = serde_json::Map::new();
        content.insert("name".into(), json!("tester"));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        })
    }

    async fn list_roots(&self) -> Result<mcp_core::types::ListRootsResult, ErrorObject> {
        Ok(mcp_core::types::ListRootsResult {
            roots: vec![mcp_core::types::Root::new("file:///tmp", "tmp")],
        })
    }

    fn on_notification(&self, notification: &ServerNotification) {
        self.notifications
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(notification.clone());
    }
}

/// Session options for an era (`None`: the session picks).
pub fn options(era: Option<Era>) -> SessionOptions {
    let options = SessionOptions {
        request_timeout: DEADLINE,
        ..SessionOptions::default()
    };
    match era {
        Some(era) => options.with_era(era),
        None => options,
    }
}

/// A session to `server` with `handler`.
pub async fn connect(
    server: &LocalServer,
    handler: Arc<TestHandler>,
    era: Option<Era>,
) -> ClientSession {
    let transport = server.connect().expect("connects");
    tokio::time::timeout(
        DEADLINE,
        ClientSession::connect_shared(transport, handler, options(era)),
    )
    .await
    .expect("connects in time")
    .expect("the handshake succeeds")
}

/// The runtime's live tasks.
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}
