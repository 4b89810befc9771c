//! The two protocol eras, server side: which eras the server speaks ([`Eras`]), what one
//! request's `params._meta` says (its era, progress token, log level, the client's
//! capabilities), and the answers that open a session — `server/discover` (modern, 2026-07-28)
//! and `initialize` (legacy).

use mcp_core::jsonrpc::{codes, ErrorObject, Payload, RequestId};
use mcp_core::types::{
    error_codes, meta, methods, ClientCapabilities, DiscoverResult, Implementation,
    InitializeResult, LoggingLevel, ServerCapabilities,
};
use mcp_core::ProtocolVersion;
use std::sync::Arc;

use serde::de::{Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Which protocol eras a [`LocalServer`](crate::LocalServer) speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Eras {
    /// Both (the default): `server/discover` opens a modern session, `initialize` a legacy one,
    /// so a client of either era is served.
    #[default]
    Both,
    /// Only the legacy era (2025-11-25 and older): `server/discover` is an unknown method, so
    /// a probing client falls back to `initialize`.
    LegacyOnly,
    /// Only 2026-07-28: `initialize` is an unknown method.
    ModernOnly,
}

impl Eras {
    pub(crate) fn modern(self) -> bool {
        self != Eras::LegacyOnly
    }

    pub(crate) fn legacy(self) -> bool {
        self != Eras::ModernOnly
    }

    /// The versions `server/discover` lists.
    fn supported_versions(self) -> Vec<String> {
        ProtocolVersion::SUPPORTED
            .into_iter()
            .filter(|v| {
                if v.is_modern() {
                    self.modern()
                } else {
                    self.legacy()
                }
            })
            .map(|v| v.as_str().to_owned())
            .collect()
    }
}

/// The protocol version a request names in `_meta`, read without allocating for the one
/// version this server speaks there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VersionField {
    /// 2026-07-28.
    Modern,
    /// Anything else.
    Other(String),
}

impl<'de> Deserialize<'de> for VersionField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VersionVisitor;
        impl Visitor<'_> for VersionVisitor {
            type Value = VersionField;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a protocol version string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<VersionField, E> {
                Ok(if v == ProtocolVersion::V2026_07_28.as_str() {
                    VersionField::Modern
                } else {
                    VersionField::Other(v.to_owned())
                })
            }
        }
        deserializer.deserialize_str(VersionVisitor)
    }
}

/// Which server→client requests the client can answer (from its capabilities).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClientAbilities {
    pub(crate) elicitation: bool,
    pub(crate) sampling: bool,
    pub(crate) roots: bool,
}

impl ClientAbilities {
    pub(crate) fn of(capabilities: &ClientCapabilities) -> ClientAbilities {
        ClientAbilities {
            elicitation: capabilities.elicitation.is_some(),
            sampling: capabilities.sampling.is_some(),
            roots: capabilities.roots.is_some(),
        }
    }

    /// Whether the client can answer `method`.
    pub(crate) fn answers(self, method: &str) -> bool {
        use mcp_core::types::methods;
        match method {
            methods::ELICITATION_CREATE => self.elicitation,
            methods::SAMPLING_CREATE_MESSAGE => self.sampling,
            methods::ROOTS_LIST => self.roots,
            // Anything else is the client's business (its handler answers or refuses).
            _ => true,
        }
    }
}

impl<'de> Deserialize<'de> for ClientAbilities {
    /// Only whether each capability is there: its settings are skipped, not built.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Present {
            elicitation: Option<IgnoredAny>,
            sampling: Option<IgnoredAny>,
            roots: Option<IgnoredAny>,
        }
        let present = Present::deserialize(deserializer)?;
        Ok(ClientAbilities {
            elicitation: present.elicitation.is_some(),
            sampling: present.sampling.is_some(),
            roots: present.roots.is_some(),
        })
    }
}

/// What a request's own `params._meta` tells the server; members it does not need are skipped.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct MetaFields {
    #[serde(rename = "progressToken")]
    progress_token: Option<RequestId>,
    /// Present on modern requests only.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<VersionField>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Option<ClientAbilities>,
    #[serde(rename = "io.modelcontextprotocol/logLevel")]
    log_level: Option<LoggingLevel>,
}

/// What the session adds to `_meta`, handed over as values by an in-place request (see
/// `mcp_core::transport::RequestMeta`).
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionMeta {
    progress_token: Option<i64>,
    modern: Option<Arc<Map<String, Value>>>,
    log_level: Option<LoggingLevel>,
}

impl SessionMeta {
    pub(crate) fn of(meta: mcp_core::transport::RequestMeta<'_>) -> SessionMeta {
        SessionMeta {
            progress_token: meta.progress_token,
            modern: meta.modern.cloned(),
            log_level: meta.log_level,
        }
    }
}

/// Where the client's capabilities of one modern request are.
#[derive(Debug, Clone, Default)]
pub(crate) enum Abilities {
    /// Not given.
    #[default]
    Absent,
    /// Read from the request's `_meta`.
    Read(ClientAbilities),
    /// In the session's protocol members (read when a handler asks the client something).
    InMembers(Arc<Map<String, Value>>),
}

impl Abilities {
    pub(crate) fn resolve(&self) -> ClientAbilities {
        match self {
            Abilities::Absent => ClientAbilities::default(),
            Abilities::Read(abilities) => *abilities,
            Abilities::InMembers(members) => members
                .get(meta::CLIENT_CAPABILITIES)
                .and_then(|c| ClientAbilities::deserialize(c).ok())
                .unwrap_or_default(),
        }
    }
}

/// What the server knows of one request from `_meta`: its own members, with the session's
/// additions when they came as values — merged as splicing would (the caller's progress token
/// and log level win, the session's protocol members win).
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestFacts {
    pub(crate) progress_token: Option<RequestId>,
    /// Present on modern requests only.
    version: Option<VersionField>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) abilities: Abilities,
}

impl RequestFacts {
    pub(crate) fn new(own: Option<MetaFields>, session: Option<&SessionMeta>) -> RequestFacts {
        let own = own.unwrap_or_default();
        let mut facts = RequestFacts {
            progress_token: own.progress_token,
            version: own.protocol_version,
            log_level: own.log_level,
            abilities: own
                .client_capabilities
                .map_or(Abilities::Absent, Abilities::Read),
        };
        if let Some(session) = session {
            if facts.progress_token.is_none() {
                facts.progress_token = session.progress_token.map(RequestId::Number);
            }
            if let Some(members) = &session.modern {
                facts.version = Some(VersionField::Modern);
                facts.abilities = Abilities::InMembers(members.clone());
                facts.log_level = facts.log_level.or(session.log_level);
            }
        }
        facts
    }

    /// Whether the request is of the modern era.
    pub(crate) fn is_modern(&self) -> bool {
        self.version.is_some()
    }

    /// Refuses a modern request naming a version this server does not speak (`-32022`, with
    /// the versions it does).
    pub(crate) fn check_version(&self, eras: Eras) -> Result<(), ErrorObject> {
        match &self.version {
            Some(VersionField::Other(requested)) => {
                let mut error = ErrorObject::new(
                    error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                    format!("Unsupported protocol version {requested:?}"),
                );
                error.data = Some(json!({
                    "supported": eras.supported_versions(),
                    "requested": requested,
                }));
                Err(error)
            }
            _ => Ok(()),
        }
    }
}

/// The `server/discover` result.
pub(crate) fn discover(
    eras: Eras,
    info: &Implementation,
    capabilities: ServerCapabilities,
    instructions: Option<&str>,
) -> Result<Value, ErrorObject> {
    let mut result_meta = Map::new();
    result_meta.insert(
        meta::SERVER_INFO.into(),
        serde_json::to_value(info).map_err(|e| ErrorObject::internal(e.to_string()))?,
    );
    let mut extra = Map::new();
    extra.insert("_meta".into(), Value::Object(result_meta));
    let result = DiscoverResult {
        supported_versions: eras.supported_versions(),
        capabilities,
        instructions: instructions.map(str::to_owned),
        cache: Default::default(),
        extra,
    };
    serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string()))
}

/// The `initialize` answer: the version the client asked for when this server speaks it,
/// else the newest legacy one.
pub(crate) fn initialize(
    requested: &str,
    info: &Implementation,
    capabilities: ServerCapabilities,
    instructions: Option<&str>,
) -> Result<(ProtocolVersion, Value), ErrorObject> {
    let version = requested
        .parse::<ProtocolVersion>()
        .ok()
        .filter(|v| !v.is_modern())
        .unwrap_or(ProtocolVersion::LATEST_LEGACY);
    let result = InitializeResult {
        protocol_version: version.as_str().to_owned(),
        capabilities,
        server_info: info.clone(),
        instructions: instructions.map(str::to_owned),
        extra: Map::new(),
    };
    let value = serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok((version, value))
}

/// What a 2026-07-28 answer to `method` must carry that a handler (or the server a gateway
/// forwards to, of either era) may have left out: every result its `resultType`
/// (`complete`), a list or a read its cache hints (`ttlMs` 0 and `cacheScope` `private`: a
/// server whose lists change says nothing about how long they last, nor who may share them);
/// "resource not found" is `-32602` in this revision (it was `-32002`).
pub(crate) fn complete_modern(
    method: &str,
    outcome: Result<Payload, ErrorObject>,
) -> Result<Payload, ErrorObject> {
    match outcome {
        Ok(payload) => Ok(complete_modern_result(method, payload)),
        Err(mut error) => {
            if error.code == codes::RESOURCE_NOT_FOUND {
                error.code = codes::INVALID_PARAMS;
            }
            Err(error)
        }
    }
}

fn complete_modern_result(method: &str, payload: Payload) -> Payload {
    let cached = matches!(
        method,
        methods::TOOLS_LIST
            | methods::PROMPTS_LIST
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ
    );
    let mut map = match payload {
        Payload::Value(Value::Object(map)) => map,
        other => match other.deserialize::<Value>() {
            Ok(Value::Object(map)) => map,
            // Not an object: nothing to complete.
            _ => return other,
        },
    };
    if !map.contains_key("resultType") {
        map.insert("resultType".to_owned(), json!("complete"));
    }
    if cached {
        if !map.contains_key("ttlMs") {
            map.insert("ttlMs".to_owned(), json!(0));
        }
        if !map.contains_key("cacheScope") {
            map.insert("cacheScope".to_owned(), json!("private"));
        }
    }
    Payload::Value(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_reads_the_era_token_level_and_abilities() {
        let meta: MetaFields = serde_json::from_value(json!({
            "progressToken": 7,
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "extensions": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"},
            "io.modelcontextprotocol/logLevel": "warning"
        }))
        .unwrap();
        let facts = RequestFacts::new(Some(meta), None);
        assert_eq!(facts.progress_token, Some(RequestId::Number(7)));
        assert!(facts.is_modern());
        assert_eq!(facts.log_level, Some(LoggingLevel::Warning));
        let abilities = facts.abilities.resolve();
        assert!(abilities.elicitation && !abilities.sampling && !abilities.roots);
        assert!(facts.check_version(Eras::Both).is_ok());
    }

    #[test]
    fn session_values_merge_as_splicing_would() {
        let mut members = Map::new();
        members.insert(meta::PROTOCOL_VERSION.into(), json!("2026-07-28"));
        members.insert(meta::CLIENT_CAPABILITIES.into(), json!({"sampling": {}}));
        let session = SessionMeta {
            progress_token: Some(3),
            modern: Some(Arc::new(members)),
            log_level: Some(LoggingLevel::Error),
        };
        let facts = RequestFacts::new(None, Some(&session));
        assert_eq!(facts.progress_token, Some(RequestId::Number(3)));
        assert!(facts.is_modern());
        assert_eq!(facts.log_level, Some(LoggingLevel::Error));
        assert!(facts.abilities.resolve().sampling);
        // The caller's own progress token and log level win; the session's protocol wins.
        let own: MetaFields = serde_json::from_value(json!({
            "progressToken": "mine",
            "io.modelcontextprotocol/protocolVersion": "1999-01-01",
            "io.modelcontextprotocol/logLevel": "debug"
        }))
        .unwrap();
        let facts = RequestFacts::new(Some(own), Some(&session));
        assert_eq!(facts.progress_token, Some(RequestId::from("mine")));
        assert_eq!(facts.log_level, Some(LoggingLevel::Debug));
        assert!(facts.check_version(Eras::Both).is_ok());
        let legacy = SessionMeta {
            progress_token: Some(4),
            ..SessionMeta::default()
        };
        let facts = RequestFacts::new(None, Some(&legacy));
        assert!(!facts.is_modern());
        assert_eq!(facts.progress_token, Some(RequestId::Number(4)));
    }

    #[test]
    fn other_versions_are_refused_with_the_supported_list() {
        let meta: MetaFields = serde_json::from_value(
            json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
        )
        .unwrap();
        let error = RequestFacts::new(Some(meta), None)
            .check_version(Eras::Both)
            .unwrap_err();
        assert_eq!(error.code, error_codes::UNSUPPORTED_PROTOCOL_VERSION);
        let data = error.data.unwrap();
        assert_eq!(data["requested"], "2099-01-01");
        assert!(data["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")));
    }

    #[test]
    fn initialize_keeps_a_legacy_version_and_replaces_others() {
        let info = Implementation::new("s", "1");
        let caps = ServerCapabilities::default();
        let (v, _) = initialize("2025-03-26", &info, caps.clone(), None).unwrap();
        assert_eq!(v, ProtocolVersion::V2025_03_26);
        let (v, _) = initialize("2026-07-28", &info, caps.clone(), None).unwrap();
        assert_eq!(v, ProtocolVersion::LATEST_LEGACY);
        let (v, result) = initialize("1999-01-01", &info, caps, Some("hi")).unwrap();
        assert_eq!(v, ProtocolVersion::LATEST_LEGACY);
        assert_eq!(result["instructions"], "hi");
    }

    #[test]
    fn eras_list_what_they_speak() {
        assert_eq!(Eras::ModernOnly.supported_versions(), vec!["2026-07-28"]);
        assert!(!Eras::LegacyOnly
            .supported_versions()
            .contains(&"2026-07-28".to_owned()));
        assert_eq!(Eras::Both.supported_versions().len(), 5);
    }
}
