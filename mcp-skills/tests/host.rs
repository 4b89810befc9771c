//! A host against a scripted in-process server that offers the Skills extension: listing reads
//! no file, a skill loads only when its `SKILL.md` matches the listing (size, digest,
//! frontmatter), other files are read verified and only when listed; a malformed entry leaves
//! out its own skill and no other; a skill over the size limit, or a file longer than listed,
//! is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_core::jsonrpc::{ErrorObject, Message, Payload, Response};
use mcp_core::{ErrorKind, RequestOptions};
use mcp_session::{ChannelTransport, ClientSession, ServerEnd, SessionOptions};
use mcp_skills::{digest_of, SkillsExt, MAX_SKILL_SIZE};
use serde_json::{json, Value};

const SKILL_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";
const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: 2\n---\n\nUse the forms reference.\n";
const FORMS: &str = "Forms reference.\n";

/// What the scripted server serves: its listing, and the files `resources/read` answers with
/// (which may differ from what the listing says of them).
struct Served {
    skills: Vec<Value>,
    files: HashMap<String, String>,
    reads: Mutex<Vec<String>>,
    /// A `nextCursor` every `skills/list` page carries (a server that loops).
    next_cursor: Option<&'static str>,
}

impl Served {
    /// The pdf-processing skill, listed as it is served.
    fn honest() -> Served {
        Served {
            skills: vec![listed(
                SKILL_URI,
                json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents", "metadata": {"version": 2}}),
                &[(SKILL_URI, SKILL_MD), (FORMS_URI, FORMS)],
            )],
            files: HashMap::from([
                (SKILL_URI.to_owned(), SKILL_MD.to_owned()),
                (FORMS_URI.to_owned(), FORMS.to_owned()),
            ]),
            reads: Mutex::new(Vec::new()),
            next_cursor: None,
        }
    }

    fn serving(mut self, uri: &str, text: String) -> Served {
        self.files.insert(uri.to_owned(), text);
        self
    }

    fn reads(&self) -> Vec<String> {
        self.reads.lock().unwrap().clone()
    }
}

/// A listing entry whose files are listed with the size and digest of `files`' texts.
fn listed(uri: &str, frontmatter: Value, files: &[(&str, &str)]) -> Value {
    let resources: Vec<Value> = files
        .iter()
        .map(|(uri, text)| json!({"uri": uri, "digest": digest_of(text.as_bytes()), "size": text.len()}))
        .collect();
    json!({"uri": uri, "frontmatter": frontmatter, "resources": resources})
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
        let uri = params["uri"].as_str().unwrap_or_default().to_owned();
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
                "serverInfo": {"name": "skills", "version": "1"}
            }),
            "skills/list" => match served.next_cursor {
                Some(next) => json!({"skills": served.skills, "nextCursor": next}),
                None => json!({"skills": served.skills}),
            },
            "skills/get" => match served.skills.iter().find(|s| s["uri"] == uri.as_str()) {
                Some(skill) => json!({"skill": skill}),
                None => {
                    let error = ErrorObject::new(-32602, format!("no skill {uri}"));
                    let _ = end
                        .outgoing
                        .send(Response::error(Some(request.id), error).into())
                        .await;
                    continue;
                }
            },
            "resources/read" => {
                served.reads.lock().unwrap().push(uri.clone());
                let text = served.files.get(&uri).cloned().unwrap_or_default();
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

#[tokio::test]
async fn a_verified_skill_loads_and_its_files_are_read_on_request() {
    let (session, served) = host(Served::honest()).await;
    assert!(mcp_skills::offers_skills(
        &session.server_info().capabilities
    ));
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].name(), Some("pdf-processing"));
    assert!(served.reads().is_empty(), "listing read a file");
    let loaded = session
        .load_skill(&skills[0], RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(loaded.body, "\nUse the forms reference.\n");
    assert_eq!(loaded.frontmatter["metadata"]["version"], 2);
    let forms = session
        .read_skill_file(&skills[0], FORMS_URI, RequestOptions::new())
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
    assert_eq!(served.reads().len(), 2);
    session.close().await;
}

/// `skills/list` pages go through the one pagination loop of `mcp-core`: a cursor handed back
/// again ends the listing at the second page with the protocol error every listing gives.
#[tokio::test]
async fn a_skills_listing_that_repeats_its_cursor_ends_at_once() {
    let mut looping = Served::honest();
    looping.next_cursor = Some("again");
    let (session, _) = host(looping).await;
    let err = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert_eq!(
        err.message(),
        "skills/list: the server repeated cursor \"again\"; stopping to avoid an endless loop"
    );
    session.close().await;
}

#[tokio::test]
async fn a_tampered_or_mislabelled_skill_is_refused() {
    // The file changed after it was listed: same size, other bytes.
    let tampered = Served::honest().serving(SKILL_URI, SKILL_MD.replace("forms", "FORMS"));
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
    let longer = Served::honest().serving(SKILL_URI, format!("{SKILL_MD}more"));
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
    let mut mislabelled = Served::honest();
    mislabelled.skills[0]["frontmatter"]["name"] = json!("pdf-tools");
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

#[tokio::test]
async fn a_malformed_entry_leaves_out_its_own_skill_and_no_other() {
    // skill://b lists a file without its size; the pdf skill after it is intact.
    let mut served = Served::honest();
    let broken = json!({
        "uri": "skill://b/SKILL.md",
        "frontmatter": {"name": "b", "description": "Broken"},
        "resources": [{"uri": "skill://b/SKILL.md", "digest": digest_of(b"x")}]
    });
    served.skills.insert(0, broken);
    let (session, served) = host(served).await;

    let page = session
        .list_skills(None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(page.skills.len(), 1);
    assert_eq!(page.skills[0].uri, SKILL_URI);
    assert_eq!(page.invalid.len(), 1);
    assert_eq!(page.invalid[0].index, 0);
    assert_eq!(
        page.invalid[0].to_string(),
        "skill://b/SKILL.md: resources[0].size is missing"
    );

    // The other skill is whole: listed, loaded, verified.
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(skills.len(), 1);
    session
        .load_skill(&skills[0], RequestOptions::new())
        .await
        .unwrap();

    // Asked for by name, the broken skill is an error that says what is wrong with it.
    let err = session
        .get_skill("skill://b/SKILL.md", RequestOptions::new())
        .await
        .unwrap_err();
    assert!(
        err.message()
            .contains("skill://b/SKILL.md: resources[0].size is missing"),
        "{err}"
    );
    let pdf = session
        .get_skill(SKILL_URI, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(pdf, skills[0]);
    assert_eq!(served.reads(), [SKILL_URI]);
    session.close().await;
}

#[tokio::test]
async fn a_skill_whose_files_add_up_to_more_than_the_limit_is_not_read() {
    // Every file is under the limit, but together they are over it.
    let half = "x".repeat(usize::try_from(MAX_SKILL_SIZE / 2).unwrap());
    let mut served = Served::honest()
        .serving("skill://pdf-processing/a.bin", half.clone())
        .serving("skill://pdf-processing/b.bin", half.clone());
    served.skills[0] = listed(
        SKILL_URI,
        served.skills[0]["frontmatter"].clone(),
        &[
            (SKILL_URI, SKILL_MD),
            ("skill://pdf-processing/a.bin", &half),
            ("skill://pdf-processing/b.bin", &half),
        ],
    );
    let (session, served) = host(served).await;
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap();
    let err = session
        .load_skill(&skills[0], RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Resource);
    assert!(
        err.message().contains(&format!(
            "its files add up to {} bytes",
            MAX_SKILL_SIZE + SKILL_MD.len() as u64
        )),
        "{err}"
    );
    assert!(err.message().contains("16777216-byte limit"), "{err}");
    assert!(
        served.reads().is_empty(),
        "read a file of an oversized skill"
    );
    session.close().await;
}

#[tokio::test]
async fn a_file_longer_than_listed_is_refused_whatever_its_size() {
    // The listing says 110 bytes; the server sends more than the whole size limit.
    let flood = format!("{SKILL_MD}{}", "x".repeat(MAX_SKILL_SIZE as usize + 1));
    let (session, _) = host(Served::honest().serving(SKILL_URI, flood.clone())).await;
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .unwrap();
    let err = session
        .load_skill(&skills[0], RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Resource);
    assert!(
        err.message().contains(&format!(
            "{} bytes received, the listing says {}",
            flood.len(),
            SKILL_MD.len()
        )),
        "{err}"
    );
    session.close().await;
}
