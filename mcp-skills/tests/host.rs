//! A host against a scripted in-process server that offers the Skills extension: listing reads
//! no file, a skill loads only when its `SKILL.md` matches the listing (size, digest,
//! frontmatter), other files are read verified and only when listed.

use std::sync::{Arc, Mutex};

use mcp_core::jsonrpc::{Message, Payload, Response};
use mcp_core::{
    ChannelTransport, ClientSession, ErrorKind, RequestOptions, ServerEnd, SessionOptions,
};
use mcp_skills::{digest_of, SkillsExt};
use serde_json::{json, Value};

const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: 2\n---\n\nUse the forms reference.\n";
const FORMS: &str = "Forms reference.\n";

/// What the scripted server serves: the files as they are, and the listing's view of them.
struct Served {
    skill_md: String,
    listed_skill_md: String,
    listed_name: String,
    reads: Mutex<Vec<String>>,
}

async fn serve(mut end: ServerEnd, served: Arc<Served>) {
    while let Some(message) = end.incoming.recv().await {
        let Message::Request(request) = message else {
            continue;
        };
        let params: Value = request
            .params
            .clone()
            .map(|p| p.into_value().unwrap())
            .unwrap_or(Value::Null);
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
                "serverInfo": {"name": "skills", "version": "1"}
            }),
            "skills/list" => json!({"skills": [{
                "uri": "skill://pdf-processing/SKILL.md",
                "frontmatter": {"name": served.listed_name, "description": "Extract, fill, and assemble PDF documents", "metadata": {"version": 2}},
                "resources": [
                    {"uri": "skill://pdf-processing/SKILL.md", "digest": digest_of(served.listed_skill_md.as_bytes()), "size": served.listed_skill_md.len()},
                    {"uri": "skill://pdf-processing/references/FORMS.md", "digest": digest_of(FORMS.as_bytes()), "size": FORMS.len()}
                ]
            }]}),
            "resources/read" => {
                let uri = params["uri"].as_str().unwrap_or_default().to_owned();
                served.reads.lock().unwrap().push(uri.clone());
                let text = if uri.ends_with("FORMS.md") {
                    FORMS
                } else {
                    served.skill_md.as_str()
                };
                json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
            }
            _ => json!({}),
        };
        let reply = Response::success(request.id, Payload::Value(result));
        if end.outgoing.send(reply.into()).await.is_err() {
            return;
        }
    }
}

async fn host(served: Served) -> (ClientSession, Arc<Served>) {
    let served = Arc::new(served);
    let (transport, end) = ChannelTransport::pair(16);
    tokio::spawn(serve(end, served.clone()));
    let options = SessionOptions::default().with_era(mcp_core::Era::Legacy);
    let session = ClientSession::connect(transport, (), options)
        .await
        .unwrap();
    (session, served)
}

fn honest() -> Served {
    Served {
        skill_md: SKILL_MD.into(),
        listed_skill_md: SKILL_MD.into(),
        listed_name: "pdf-processing".into(),
        reads: Mutex::new(Vec::new()),
    }
}

#[tokio::test]
async fn a_verified_skill_loads_and_its_files_are_read_on_request() {
    let (session, served) = host(honest()).await;
    assert!(mcp_skills::offers_skills(
        &session.server_info().capabilities
    ));
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].name(), Some("pdf-processing"));
    assert!(
        served.reads.lock().unwrap().is_empty(),
        "listing read a file"
    );
    let loaded = session
        .load_skill(&skills[0], RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(loaded.body, "\nUse the forms reference.\n");
    assert_eq!(loaded.frontmatter["metadata"]["version"], 2);
    let forms = session
        .read_skill_file(
            &skills[0],
            "skill://pdf-processing/references/FORMS.md",
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(forms, FORMS);
    // A file the listing does not name is never fetched.
    let err = session
        .read_skill_file(
            &skills[0],
            "skill://pdf-processing/../secrets",
            RequestOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(err.message().contains("not a file the skill"), "{err}");
    assert_eq!(served.reads.lock().unwrap().len(), 2);
    session.close().await;
}

#[tokio::test]
async fn a_tampered_or_mislabelled_skill_is_refused() {
    // The file changed after it was listed: same size, other bytes.
    let mut tampered = honest();
    tampered.skill_md = SKILL_MD.replace("forms", "FORMS");
    let (session, _) = host(tampered).await;
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap();
    let err = session
        .load_skill(&skills[0], RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Resource);
    assert!(err.message().contains("digest"), "{err}");
    session.close().await;

    // Extra bytes: a size mismatch.
    let mut longer = honest();
    longer.skill_md = format!("{SKILL_MD}more");
    let (session, _) = host(longer).await;
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap();
    let err = session
        .load_skill(&skills[0], RequestOptions::new())
        .await
        .unwrap_err();
    assert!(err.message().contains("bytes received"), "{err}");
    session.close().await;

    // Verified bytes whose frontmatter says something else than the listing.
    let mut mislabelled = honest();
    mislabelled.listed_name = "pdf-tools".into();
    let (session, _) = host(mislabelled).await;
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap();
    let err = session
        .load_skill(&skills[0], RequestOptions::new())
        .await
        .unwrap_err();
    assert!(err.message().contains("\"name\" differs"), "{err}");
    session.close().await;
}
