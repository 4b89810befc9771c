use serde_json::{json, Value};

use mcp_core::types::*;

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(v: Value) -> Value {
    let typed: T = serde_json::from_value(v).expect("parses");
    serde_json::to_value(typed).expect("serializes")
}

#[test]
fn unknown_members_are_preserved_on_tools_and_results() {
    let tool = json!({
        "name": "echo", "description": "Echo", "inputSchema": {"type":"object"},
        "icons": [{"src":"https://x/icon.png"}], "execution": {"taskSupport":"optional"},
        "annotations": {"readOnlyHint": true, "futureHint": 1}, "_meta": {"k": "v"}
    });
    assert_eq!(round_trip::<Tool>(tool.clone()), tool);
    let result = json!({
        "content": [
            {"type":"text","text":"hi","annotations":{"priority":0.5}},
            {"type":"image","data":"AAAA","mimeType":"image/png"},
            {"type":"resource_link","uri":"file:///a","name":"a"},
            {"type":"resource","resource":{"uri":"x://y","text":"t","mimeType":"text/plain"}},
            {"type":"hologram","depth":3}
        ],
        "structuredContent": {"sum": 3}, "isError": false, "_meta": {"trace": 1}
    });
    assert_eq!(round_trip::<CallToolResult>(result.clone()), result);
}

#[test]
fn content_blocks_parse_into_their_variants() {
    let r: CallToolResult = serde_json::from_value(json!({
        "content": [{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"audio","data":"x","mimeType":"audio/wav"},{"type":"new"}]
    }))
    .unwrap();
    assert_eq!(r.text(), "a\nb");
    assert_eq!(r.content[2].type_name(), "audio");
    assert_eq!(r.content[3].type_name(), "new");
    assert!(!r.is_error());
    let bad: Result<CallToolResult, _> =
        serde_json::from_value(json!({"content":[{"type":"text"}]}));
    assert!(bad.unwrap_err().to_string().contains("missing \"text\""));
}

#[test]
fn initialize_result_keeps_capabilities_it_does_not_know() {
    let v = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true},
                          "tasks": {"list": {}}, "logging": {}},
        "serverInfo": {"name": "s", "version": "1", "websiteUrl": "https://example.com"},
        "instructions": "be nice"
    });
    assert_eq!(round_trip::<InitializeResult>(v.clone()), v);
}

#[test]
fn other_types_round_trip() {
    type RoundTrip = fn(Value) -> Value;
    let cases: Vec<(Value, RoundTrip)> = vec![
        (
            json!({"resources":[{"uri":"a://b","name":"b","mimeType":"text/plain","size":3}],"nextCursor":"c"}),
            round_trip::<ListResourcesResult>,
        ),
        (
            json!({"resourceTemplates":[{"uriTemplate":"a://{x}","name":"x"}]}),
            round_trip::<ListResourceTemplatesResult>,
        ),
        (
            json!({"contents":[{"uri":"a://b","blob":"AA=="}]}),
            round_trip::<ReadResourceResult>,
        ),
        (
            json!({"prompts":[{"name":"p","arguments":[{"name":"a","required":true}]}]}),
            round_trip::<ListPromptsResult>,
        ),
        (
            json!({"description":"d","messages":[{"role":"user","content":{"type":"text","text":"t"}}]}),
            round_trip::<GetPromptResult>,
        ),
        (
            json!({"progressToken":1,"progress":0.5,"total":1.0,"message":"half"}),
            round_trip::<ProgressNotificationParams>,
        ),
        (
            json!({"requestId":"a","reason":"timeout"}),
            round_trip::<CancelledNotificationParams>,
        ),
        (
            json!({"level":"warning","logger":"l","data":{"x":1}}),
            round_trip::<LoggingMessageNotificationParams>,
        ),
        (
            json!({"roots":[{"uri":"file:///tmp","name":"tmp"}]}),
            round_trip::<ListRootsResult>,
        ),
        (
            json!({"messages":[{"role":"user","content":{"type":"text","text":"q"}}],"maxTokens":10,"modelPreferences":{}}),
            round_trip::<CreateMessageRequestParams>,
        ),
        (
            json!({"role":"assistant","content":{"type":"text","text":"a"},"model":"m","stopReason":"endTurn"}),
            round_trip::<CreateMessageResult>,
        ),
        (
            json!({"action":"accept","content":{"name":"x"}}),
            round_trip::<ElicitResult>,
        ),
        (
            json!({"completion":{"values":["a"],"total":1,"hasMore":false}}),
            round_trip::<CompleteResult>,
        ),
    ];
    for (value, f) in cases {
        assert_eq!(f(value.clone()), value);
    }
}

#[test]
fn elicitation_schema_defaults_are_collected() {
    let p: ElicitRequestParams = serde_json::from_value(json!({
        "message": "m",
        "requestedSchema": {"type":"object","properties":{
            "name": {"type":"string","default":"Ada"},
            "age": {"type":"integer"},
            "color": {"type":"string","enum":["r","g"],"default":"g"}
        }}
    }))
    .unwrap();
    let d = p.schema_defaults();
    assert_eq!(d.len(), 2);
    assert_eq!(d["name"], json!("Ada"));
    assert_eq!(d["color"], json!("g"));
}

#[test]
fn replay_safety_follows_annotations() {
    let t: Tool = serde_json::from_value(
        json!({"name":"a","inputSchema":{},"annotations":{"idempotentHint":true}}),
    )
    .unwrap();
    assert!(t.is_replay_safe());
    let t: Tool = serde_json::from_value(json!({"name":"a","inputSchema":{}})).unwrap();
    assert!(!t.is_replay_safe());
}
