//! The committed Rust code (`src/generated/mcp.transport.v1.rs`) is what `tonic-prost-build`
//! makes of `proto/mcp/transport/v1/mcp.proto`, compiled by `protox` (pure Rust: no `protoc` on
//! the machine). Building the crate needs neither; this test regenerates the code and fails
//! when it differs. `MCP_GRPC_REGENERATE=1 cargo test -p mcp-transport-grpc --test
//! generated_code` rewrites the committed file instead.
//!
//! It also pins the wire format the npm package `mcp-grpc-transport` speaks: the package, the
//! message's field numbers and types, and a bidirectional streaming `Session` method.

use std::path::{Path, PathBuf};

use prost::Message as _;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn descriptors() -> prost_types::FileDescriptorSet {
    protox::compile(["mcp/transport/v1/mcp.proto"], [crate_dir().join("proto")])
        .expect("the proto compiles")
}

/// Generates the code into a fresh directory and returns its text.
fn generate() -> String {
    let out = std::env::temp_dir().join(format!("mcp-grpc-codegen-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // The crate builds its own channel (timeouts, keepalive, TLS): no `connect` helper.
        .build_transport(false)
        // The server half exists only with the `server` feature.
        .server_mod_attribute("mcp.transport.v1", "#[cfg(feature = \"server\")]")
        .out_dir(&out)
        .compile_fds(descriptors())
        .expect("tonic-prost-build generates the code");
    let text = std::fs::read_to_string(out.join("mcp.transport.v1.rs")).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    text
}

#[test]
fn the_committed_code_matches_the_proto() {
    let committed_path = crate_dir().join("src/generated/mcp.transport.v1.rs");
    let generated = generate();
    if std::env::var_os("MCP_GRPC_REGENERATE").is_some() {
        std::fs::write(&committed_path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date with proto/mcp/transport/v1/mcp.proto; regenerate it with \
         MCP_GRPC_REGENERATE=1 cargo test -p mcp-transport-grpc --test generated_code",
        Path::new("src/generated/mcp.transport.v1.rs").display()
    );
}

#[test]
fn the_proto_is_the_published_json_rpc_tunnel() {
    use prost_types::field_descriptor_proto::{Label, Type};
    let set = descriptors();
    let file = set
        .file
        .iter()
        .find(|f| f.name() == "mcp/transport/v1/mcp.proto")
        .expect("the file is in the set");
    assert_eq!(file.package(), "mcp.transport.v1");
    assert_eq!(file.syntax(), "proto3");
    assert_eq!(file.message_type.len(), 1);
    let message = &file.message_type[0];
    assert_eq!(message.name(), "JsonRpcLine");
    let fields: Vec<(&str, i32, Type, Label)> = message
        .field
        .iter()
        .map(|f| (f.name(), f.number(), f.r#type(), f.label()))
        .collect();
    assert_eq!(
        fields,
        vec![
            ("line", 1, Type::String, Label::Optional),
            ("related_request_id", 2, Type::String, Label::Optional),
            ("resumption_token", 3, Type::String, Label::Optional),
        ]
    );
    assert_eq!(file.service.len(), 1);
    let service = &file.service[0];
    assert_eq!(service.name(), "Mcp");
    assert_eq!(service.method.len(), 1);
    let method = &service.method[0];
    assert_eq!(method.name(), "Session");
    assert_eq!(method.input_type(), ".mcp.transport.v1.JsonRpcLine");
    assert_eq!(method.output_type(), ".mcp.transport.v1.JsonRpcLine");
    assert!(method.client_streaming() && method.server_streaming());
}

#[test]
fn a_line_encodes_as_field_one_and_empty_compatibility_fields_are_not_sent() {
    let line = mcp_transport_grpc::proto::JsonRpcLine {
        line: r#"{"jsonrpc":"2.0","method":"ping","id":1}"#.into(),
        ..Default::default()
    };
    let bytes = line.encode_to_vec();
    // Tag 1, wire type 2 (length-delimited) = 0x0a, then the length and the UTF-8 text.
    let mut expected = vec![0x0a, line.line.len() as u8];
    expected.extend_from_slice(line.line.as_bytes());
    assert_eq!(bytes, expected);
    // What a peer may send in the compatibility fields decodes and is simply there to ignore.
    let with_extras = [
        &bytes[..],
        &[0x12, 0x01, b'7'],
        &[0x1a, 0x03, b'a', b'b', b'c'],
    ]
    .concat();
    let decoded = mcp_transport_grpc::proto::JsonRpcLine::decode(&with_extras[..]).unwrap();
    assert_eq!(decoded.line, line.line);
    assert_eq!(decoded.related_request_id, "7");
    assert_eq!(decoded.resumption_token, "abc");
}
