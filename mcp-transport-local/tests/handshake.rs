//! Opening a session in the era the session picks, and what the server shows: tools with their
//! generated schemas, resources, templates, prompts.

mod common;

use std::sync::Arc;

use common::{connect, test_builder, test_server, Path, Seen, TestHandler};
use mcp_core::{Era, ErrorKind, McpServiceExt, ProtocolVersion, RequestOptions};
use mcp_session::ClientSession;
use mcp_transport_local::Eras;
use serde_json::json;

#[tokio::test]
async fn the_session_opens_the_modern_era_with_server_discover() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let session = connect(&server, Arc::default(), None).await;
        assert_eq!(session.era(), Era::Modern, "{path:?}");
        assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
        let info = session.server_info();
        assert_eq!(info.server_info.name, "test-server");
        assert_eq!(info.server_info.version, "1.2.3");
        assert_eq!(info.instructions.as_deref(), Some("Tools for the tests."));
        assert_eq!(
            info.capabilities.tools.as_ref().unwrap().list_changed,
            Some(true)
        );
        assert!(info.capabilities.resources.is_some() && info.capabilities.prompts.is_some());
        let discovered = session.discover_result().expect("a discover result");
        assert!(discovered
            .supported_versions
            .contains(&"2025-11-25".to_owned()));
        assert_eq!(session.transport_name(), "inproc");
        session.close().await;
    }
}

#[tokio::test]
async fn a_legacy_session_opens_with_initialize() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let session = connect(&server, Arc::default(), Some(Era::Legacy)).await;
        assert_eq!(session.era(), Era::Legacy, "{path:?}");
        assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
        assert_eq!(session.server_info().server_info.name, "test-server");
        let answer = session
            .call_tool(
                "echo",
                Some(json!({"text": "legacy"})),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(answer.text(), "legacy");
        session.close().await;
    }
}

#[tokio::test]
async fn a_legacy_only_server_makes_the_probing_session_fall_back() {
    let server = test_builder(Path::InPlace, Arc::default())
        .eras(Eras::LegacyOnly)
        .build()
        .unwrap();
    let session = connect(&server, Arc::default(), None).await;
    assert_eq!(session.era(), Era::Legacy);
    assert!(session.discover_result().is_none());
    session.close().await;
}

#[tokio::test]
async fn a_modern_only_server_refuses_a_session_pinned_to_legacy() {
    let server = test_builder(Path::InPlace, Arc::default())
        .eras(Eras::ModernOnly)
        .build()
        .unwrap();
    let transport = server.connect().unwrap();
    let error = ClientSession::connect(transport, (), common::options(Some(Era::Legacy)))
        .await
        .expect_err("initialize is refused");
    assert!(error.message().contains("2026-07-28 only"), "{error}");
    // A probing session is served.
    let session = connect(&server, Arc::default(), None).await;
    assert_eq!(session.era(), Era::Modern);
    session.close().await;
}

#[tokio::test]
async fn tools_list_shows_generated_schemas_descriptions_and_annotations() {
    let server = test_server(Path::InPlace, Arc::default());
    for era in [Era::Modern, Era::Legacy] {
        let session = connect(&server, Arc::new(TestHandler::default()), Some(era)).await;
        let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
        let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap();
        let search = tool("search");
        assert_eq!(search.description.as_deref(), Some("Searches"));
        assert_eq!(search.input_schema["type"], "object");
        assert_eq!(search.input_schema["required"], json!(["query", "limit"]));
        assert_eq!(
            search.input_schema["properties"]["limit"]["type"],
            "integer"
        );
        assert_eq!(
            search.input_schema["properties"]["query"]["description"],
            "What to look for."
        );
        assert_eq!(search.input_schema["additionalProperties"], false);
        let add = tool("add");
        let output = add
            .output_schema
            .as_ref()
            .expect("Json<Sum> has an output schema");
        assert_eq!(output["properties"]["sum"]["type"], "number");
        assert!(tool("echo").is_replay_safe());
        assert!(!tool("add").is_replay_safe());
        assert_eq!(
            tool("ask").input_schema,
            json!({"type": "object", "properties": {}})
        );
        session.close().await;
    }
}

#[tokio::test]
async fn resources_templates_and_prompts_are_listed_and_served() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let session = connect(&server, Arc::default(), None).await;
        let resources = session
            .list_all_resources(RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(resources.len(), 1);
        assert_eq!(resources[0].uri, "test://hello");
        let templates = session
            .list_all_resource_templates(RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(templates[0].uri_template, "test://items/{id}");

        let hello = session
            .read_resource("test://hello", RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(hello.contents[0].text.as_deref(), Some("hello, world"));
        assert_eq!(hello.contents[0].mime_type.as_deref(), Some("text/plain"));
        let item = session
            .read_resource("test://items/7", RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(item.contents[0].text.as_deref(), Some("item 7"));
        assert_eq!(item.contents[0].uri, "test://items/7");
        assert_eq!(item.contents[0].mime_type.as_deref(), Some("text/markdown"));
        let missing = session
            .read_resource("test://nowhere", RequestOptions::new())
            .await
            .expect_err("no such resource");
        assert_eq!(missing.kind(), ErrorKind::Resource, "{missing}");
        assert_eq!(missing.subject(), Some("test://nowhere"));

        let prompts = session
            .list_all_prompts(RequestOptions::new())
            .await
            .unwrap();
        let arguments = prompts[0].arguments.as_ref().unwrap();
        assert_eq!(arguments[0].name, "name");
        assert_eq!(arguments[0].required, Some(true));
        let args = [("name".to_owned(), "Ada".to_owned())]
            .into_iter()
            .collect();
        let greeting = session
            .get_prompt("greet", Some(args), RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(
            greeting.messages[0].content.as_text(),
            Some("Say hello to Ada.")
        );
        let bad = session
            .get_prompt("greet", None, RequestOptions::new())
            .await
            .expect_err("the name is required");
        assert_eq!(bad.kind(), ErrorKind::InvalidParams, "{bad}");
        assert_eq!(bad.field(), Some("name"));
        session.close().await;
    }
}

#[tokio::test]
async fn ping_and_set_level_are_answered_in_both_eras() {
    let server = test_server(Path::InPlace, Arc::new(Seen::default()));
    for era in [Era::Modern, Era::Legacy] {
        let session = connect(&server, Arc::default(), Some(era)).await;
        session.ping(RequestOptions::new()).await.unwrap();
        session
            .set_logging_level(
                mcp_core::types::LoggingLevel::Warning,
                RequestOptions::new(),
            )
            .await
            .unwrap();
        session.close().await;
    }
}

#[tokio::test]
async fn registrations_that_cannot_be_served_are_refused_when_built() {
    use mcp_transport_local::{
        BuildError, LocalResourceTemplate, LocalServer, LocalTool, ReadRequest, RequestContext,
    };
    let echo = || {
        LocalTool::new(
            "echo",
            |_ctx: RequestContext, a: common::EchoArgs| async move { a.text },
        )
    };
    let error = LocalServer::builder("s", "1")
        .tool(echo())
        .tool(echo())
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        BuildError::Duplicate {
            what: "tool",
            name: "echo".into()
        }
    );
    let scalar = LocalTool::new("scalar", |_ctx: RequestContext, n: u32| async move {
        n.to_string()
    });
    let error = LocalServer::builder("s", "1")
        .tool(scalar)
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("JSON object"), "{error}");
    let template = LocalResourceTemplate::new(
        "items/{id}",
        "item",
        |_ctx: RequestContext, _r: ReadRequest| async move { String::new() },
    );
    let error = LocalServer::builder("s", "1")
        .resource_template(template)
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("scheme"), "{error}");
}
