//! Taking one skill file's text out of a `resources/read` result without copying more than the
//! listing says the file holds.
//!
//! The transport hands over the whole message (as large as its own message limit allows; a
//! request cannot ask it for less), so a server that lists 100 bytes and sends 60 MB has been
//! received by then. What this crate can refuse is the rest: parsing the result into
//! `ReadResourceResult` would copy every text and blob out of the message (twice, through its
//! flattened members) before the size could be compared. Here the result is walked with serde
//! visitors instead: other members, other contents and blobs are skipped, and a text longer
//! than the limit is measured where it lies and never copied.

use std::fmt;

use mcp_core::Payload;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What a `resources/read` result holds for a file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FileText {
    /// Its text, no longer than the limit.
    Text(String),
    /// A text of this many bytes, over the limit (not copied).
    TooLong(u64),
    /// No text for it (no contents for its URI, or only a blob).
    Absent,
}

/// The text of `uri` in `result`: the first contents whose `uri` is `uri` (or empty) and that
/// carries a `text`, refused when longer than `limit` bytes.
pub(crate) fn file_text(
    result: &Payload,
    uri: &str,
    limit: u64,
) -> Result<FileText, serde_json::Error> {
    let seed = ReadResult { uri, limit };
    match result {
        Payload::Value(value) => seed.deserialize(value),
        Payload::Raw(raw) => from_json(raw.get(), seed),
        Payload::Shared(shared) => from_json(shared.as_str(), seed),
        Payload::Typed(typed) => seed.deserialize(&typed.to_value()?),
    }
}

fn from_json(json: &str, seed: ReadResult<'_>) -> Result<FileText, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let found = seed.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(found)
}

/// The members this reader looks at; any other is skipped unread.
#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Member {
    Contents,
    Uri,
    Text,
    #[serde(other)]
    Other,
}

/// The result object: `{"contents": [...], ...}`.
#[derive(Clone, Copy)]
struct ReadResult<'a> {
    uri: &'a str,
    limit: u64,
}

impl<'de> DeserializeSeed<'de> for ReadResult<'_> {
    type Value = FileText;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<FileText, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ReadResult<'_> {
    type Value = FileText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a resources/read result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FileText, A::Error> {
        let mut found = FileText::Absent;
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::Contents if found == FileText::Absent => {
                    found = map.next_value_seed(Contents(self))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// The `contents` array: the first item that holds the file decides.
struct Contents<'a>(ReadResult<'a>);

impl<'de> DeserializeSeed<'de> for Contents<'_> {
    type Value = FileText;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<FileText, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Contents<'_> {
    type Value = FileText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the result's contents (an array)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FileText, A::Error> {
        let mut found = FileText::Absent;
        loop {
            if found == FileText::Absent {
                match seq.next_element_seed(Item(self.0))? {
                    Some(item) => found = item,
                    None => return Ok(found),
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(found);
            }
        }
    }
}

/// One contents item: `{"uri", "text" | "blob", ...}`, in any member order.
struct Item<'a>(ReadResult<'a>);

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = FileText;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<FileText, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Item<'_> {
    type Value = FileText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a resource's contents (an object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FileText, A::Error> {
        // A missing `uri` counts as an empty one: this file's (the digest decides anyway).
        let mut ours = true;
        let mut text = FileText::Absent;
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::Uri => ours = map.next_value_seed(UriIs(self.0.uri))?,
                Member::Text if text == FileText::Absent => {
                    text = map.next_value_seed(Bounded(self.0.limit))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(if ours { text } else { FileText::Absent })
    }
}

/// Whether a contents item's `uri` is the file's (or empty), compared where it lies.
struct UriIs<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for UriIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for UriIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a resource URI (a string)")
    }

    fn visit_str<E: de::Error>(self, uri: &str) -> Result<bool, E> {
        Ok(uri.is_empty() || uri == self.0)
    }
}

/// A `text` of at most this many bytes; a longer one is measured, not copied.
struct Bounded(u64);

impl Bounded {
    fn fits(&self, text: &str) -> bool {
        text.len() as u64 <= self.0
    }
}

impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = FileText;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<FileText, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded {
    type Value = FileText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the file's text (a string)")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<FileText, E> {
        Ok(if self.fits(text) {
            FileText::Text(text.to_owned())
        } else {
            FileText::TooLong(text.len() as u64)
        })
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<FileText, E> {
        Ok(if self.fits(&text) {
            FileText::Text(text)
        } else {
            FileText::TooLong(text.len() as u64)
        })
    }

    /// `"text": null` is no text.
    fn visit_unit<E: de::Error>(self) -> Result<FileText, E> {
        Ok(FileText::Absent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocations::counted;
    use serde_json::json;

    const URI: &str = "skill://s/SKILL.md";

    /// The same result as each kind of payload a transport may hand over.
    fn payloads(result: serde_json::Value) -> [Payload; 2] {
        let raw = serde_json::value::to_raw_value(&result).unwrap();
        [Payload::Value(result), Payload::Raw(raw)]
    }

    #[test]
    fn the_first_text_for_the_file_is_taken() {
        let cases = [
            (
                json!({"contents": [{"uri": URI, "text": "abc"}]}),
                FileText::Text("abc".into()),
            ),
            // Member order does not matter; a missing or empty uri is the file's.
            (
                json!({"contents": [{"text": "abc", "uri": URI}]}),
                FileText::Text("abc".into()),
            ),
            (
                json!({"contents": [{"uri": "", "text": "abc"}]}),
                FileText::Text("abc".into()),
            ),
            (
                json!({"contents": [{"text": "abc"}]}),
                FileText::Text("abc".into()),
            ),
            // Another URI's text, a blob, a null text: skipped.
            (
                json!({"ttlMs": 1, "contents": [
                    {"uri": "skill://s/other", "text": "no"},
                    {"uri": URI, "blob": "YWJj"},
                    {"uri": URI, "text": null},
                    {"uri": URI, "mimeType": "text/markdown", "text": "abc", "_meta": {}},
                    {"uri": URI, "text": "later"}
                ], "_meta": {"k": [1, 2]}}),
                FileText::Text("abc".into()),
            ),
            (json!({"contents": []}), FileText::Absent),
            (json!({"resultType": "complete"}), FileText::Absent),
            (
                json!({"contents": [{"uri": URI, "blob": "YWJj"}]}),
                FileText::Absent,
            ),
            // Over the limit of 3 bytes: measured, refused.
            (
                json!({"contents": [{"uri": URI, "text": "abcd"}]}),
                FileText::TooLong(4),
            ),
            (
                json!({"contents": [{"uri": URI, "text": "é\n\u{1}é"}]}),
                FileText::TooLong(6),
            ),
        ];
        for (result, expected) in cases {
            for payload in payloads(result.clone()) {
                assert_eq!(file_text(&payload, URI, 3).unwrap(), expected, "{result}");
            }
        }
    }

    #[test]
    fn a_result_of_the_wrong_shape_is_an_error() {
        for result in [
            json!([]),
            json!({"contents": {}}),
            json!({"contents": ["text"]}),
            json!({"contents": [{"uri": 5, "text": "a"}]}),
            json!({"contents": [{"uri": URI, "text": 5}]}),
        ] {
            for payload in payloads(result.clone()) {
                assert!(file_text(&payload, URI, 3).is_err(), "{result}");
            }
        }
    }

    #[test]
    fn a_text_longer_than_listed_is_measured_but_not_copied() {
        // 8 MiB where the listing says 17 bytes; escaped or not, in raw JSON or in a value.
        const LEN: usize = 8 << 20;
        for text in ["x".repeat(LEN), "\n".repeat(LEN)] {
            let escaped = text.starts_with('\n');
            let result =
                json!({"contents": [{"uri": URI, "mimeType": "text/markdown", "text": text}]});
            for payload in payloads(result) {
                let (found, allocated) = counted(|| file_text(&payload, URI, 17));
                assert_eq!(found.unwrap(), FileText::TooLong(LEN as u64));
                // Nothing is copied; only a raw text with escapes is decoded, once, into
                // serde_json's scratch buffer (parsing into `ReadResourceResult` copied the
                // text on top of that).
                let scratch = if escaped && matches!(payload, Payload::Raw(_)) {
                    LEN
                } else {
                    0
                };
                assert!(allocated <= scratch + 4096, "{allocated} bytes allocated");
            }
        }
    }
}
