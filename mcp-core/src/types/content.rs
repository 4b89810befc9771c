//! Content blocks carried by tool results, prompt messages and sampling.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{Extra, ResourceContents};

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side.
    User,
    /// The model side.
    Assistant,
}

/// Hints about audience and priority of a content block or resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// 0.0 (least) to 1.0 (most important).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A resource embedded in a content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's contents.
    pub resource: ResourceContents,
    /// Optional annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Unknown members (including `_meta`), preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One content block. Types this crate does not know are kept whole in [`Content::Other`].
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// `{"type":"text"}`
    Text {
        /// The text.
        text: String,
        /// Everything else (annotations, `_meta`, unknown members).
        extra: Extra,
    },
    /// `{"type":"image"}`: base64 data.
    Image {
        /// Base64-encoded bytes.
        data: String,
        /// e.g. `image/png`.
        mime_type: String,
        /// Everything else.
        extra: Extra,
    },
    /// `{"type":"audio"}`: base64 data.
    Audio {
        /// Base64-encoded bytes.
        data: String,
        /// e.g. `audio/wav`.
        mime_type: String,
        /// Everything else.
        extra: Extra,
    },
    /// `{"type":"resource_link"}`: a pointer to a resource (kept as its members).
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// Everything else (name, mimeType, …).
        extra: Extra,
    },
    /// `{"type":"resource"}`: an embedded resource.
    Resource(Box<EmbeddedResource>),
    /// A content type this crate does not know (kept as received, including `type`).
    Other(Value),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text {
            text: text.into(),
            extra: Map::new(),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The block's `type` member.
    pub fn type_name(&self) -> &str {
        match self {
            Content::Text { .. } => "text",
            Content::Image { .. } => "image",
            Content::Audio { .. } => "audio",
            Content::ResourceLink { .. } => "resource_link",
            Content::Resource(_) => "resource",
            Content::Other(v) => v.get("type").and_then(Value::as_str).unwrap_or("unknown"),
        }
    }
}

/// Members block types read, taken while visiting (no map insert and remove); the rest: `extra`.
#[derive(Default)]
struct BlockMembers {
    text: Option<Value>,
    data: Option<Value>,
    mime_type: Option<Value>,
    uri: Option<Value>,
    extra: Map<String, Value>,
}

impl BlockMembers {
    fn take<E: serde::de::Error>(
        slot: &mut Option<Value>,
        key: &str,
        ty: &str,
    ) -> Result<String, E> {
        match slot.take() {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(E::custom(format!(
                "{ty} content: \"{key}\" must be a string"
            ))),
            None => Err(E::custom(format!("{ty} content: missing \"{key}\""))),
        }
    }

    /// Whatever known member a block type did not use goes back to `extra`.
    fn into_extra(mut self) -> Map<String, Value> {
        for (key, value) in [
            ("text", self.text),
            ("data", self.data),
            ("mimeType", self.mime_type),
            ("uri", self.uri),
        ] {
            if let Some(value) = value {
                self.extra.insert(key.to_owned(), value);
            }
        }
        self.extra
    }
}

impl<'de> Deserialize<'de> for Content {
    /// One pass over the members (no intermediate map of the whole block).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> serde::de::Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Content, A::Error> {
                let mut ty: Option<String> = None;
                let mut members = BlockMembers::default();
                while let Some(key) = map.next_key::<super::MemberKey<'de>>()?.map(|k| k.0) {
                    let slot = match key.as_ref() {
                        "type" => {
                            ty = Some(map.next_value()?);
                            continue;
                        }
                        "text" => &mut members.text,
                        "data" => &mut members.data,
                        "mimeType" => &mut members.mime_type,
                        "uri" => &mut members.uri,
                        _ => {
                            let value: Value = map.next_value()?;
                            members.extra.insert(key.into_owned(), value);
                            continue;
                        }
                    };
                    *slot = Some(map.next_value()?);
                }
                let ty =
                    ty.ok_or_else(|| A::Error::custom("content block without a string \"type\""))?;
                content_from_members(ty, members)
            }
        }
        deserializer.deserialize_map(ContentVisitor)
    }
}

fn content_from_members<E: serde::de::Error>(
    ty: String,
    mut m: BlockMembers,
) -> Result<Content, E> {
    match ty.as_str() {
        "text" => {
            let text = BlockMembers::take(&mut m.text, "text", "text")?;
            Ok(Content::Text {
                text,
                extra: m.into_extra(),
            })
        }
        "image" | "audio" => {
            let data = BlockMembers::take(&mut m.data, "data", &ty)?;
            let mime_type = BlockMembers::take(&mut m.mime_type, "mimeType", &ty)?;
            let extra = m.into_extra();
            Ok(if ty == "image" {
                Content::Image {
                    data,
                    mime_type,
                    extra,
                }
            } else {
                Content::Audio {
                    data,
                    mime_type,
                    extra,
                }
            })
        }
        "resource_link" => {
            let uri = BlockMembers::take(&mut m.uri, "uri", "resource_link")?;
            Ok(Content::ResourceLink {
                uri,
                extra: m.into_extra(),
            })
        }
        "resource" => {
            let embedded: EmbeddedResource =
                serde_json::from_value(Value::Object(m.into_extra())).map_err(E::custom)?;
            Ok(Content::Resource(Box::new(embedded)))
        }
        _ => {
            let mut map = m.into_extra();
            map.insert("type".into(), Value::String(ty));
            Ok(Content::Other(Value::Object(map)))
        }
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (fields, extra): (Vec<(&str, &str)>, &Extra) = match self {
            Content::Text { text, extra } => (vec![("text", text.as_str())], extra),
            Content::Image {
                data,
                mime_type,
                extra,
            }
            | Content::Audio {
                data,
                mime_type,
                extra,
            } => (
                vec![("data", data.as_str()), ("mimeType", mime_type.as_str())],
                extra,
            ),
            Content::ResourceLink { uri, extra } => (vec![("uri", uri.as_str())], extra),
            Content::Resource(embedded) => {
                let mut value =
                    serde_json::to_value(embedded).map_err(serde::ser::Error::custom)?;
                if let Value::Object(m) = &mut value {
                    m.insert("type".into(), Value::String("resource".into()));
                }
                return value.serialize(serializer);
            }
            Content::Other(value) => return value.serialize(serializer),
        };
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.type_name())?;
        for (k, v) in fields {
            map.serialize_entry(k, v)?;
        }
        for (k, v) in extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
