//! Opaque cursors for `tools/list`, `resources/list` and `prompts/list`.

use serde_json::{Map, Value};

use crate::jsonrpc::{opt_str, RpcError};

const CURSOR_PREFIX: &str = "fixture-page-";

/// Encodes the offset of the next page as an opaque cursor.
pub fn encode_cursor(offset: usize) -> String {
    format!("{CURSOR_PREFIX}{offset}")
}

/// Decodes a cursor produced by [`encode_cursor`]; `len` is the list length.
pub fn decode_cursor(cursor: &str, len: usize) -> Result<usize, RpcError> {
    cursor
        .strip_prefix(CURSOR_PREFIX)
        .and_then(|rest| rest.parse::<usize>().ok())
        .filter(|&offset| offset <= len)
        .ok_or_else(|| {
            RpcError::invalid_params(format!("Invalid params: invalid `cursor` {cursor:?}"))
        })
}

/// Returns the page of `items` selected by the `cursor` in `params` and the
/// `nextCursor` if more items follow. `page_size == 0` returns everything.
pub fn paginate<'a, T>(
    items: &'a [T],
    page_size: usize,
    params: &Map<String, Value>,
) -> Result<(&'a [T], Option<String>), RpcError> {
    let start = match opt_str(params, "cursor")? {
        Some(cursor) => decode_cursor(cursor, items.len())?,
        None => 0,
    };
    let rest = &items[start..];
    if page_size == 0 || rest.len() <= page_size {
        return Ok((rest, None));
    }
    Ok((&rest[..page_size], Some(encode_cursor(start + page_size))))
}

/// Builds `{KEY: [page...], "nextCursor"?: ...}`.
pub fn page_result<T: Clone + Into<Value>>(key: &str, page: &[T], next: Option<String>) -> Value {
    let mut result = Map::new();
    result.insert(
        key.to_owned(),
        Value::Array(page.iter().cloned().map(Into::into).collect()),
    );
    if let Some(next) = next {
        result.insert("nextCursor".to_owned(), Value::String(next));
    }
    Value::Object(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn walks_all_pages() {
        let items: Vec<u32> = (0..7).collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let p = match &cursor {
                Some(c) => params(json!({ "cursor": c })),
                None => Map::new(),
            };
            let (page, next) = paginate(&items, 3, &p).expect("page");
            assert!(page.len() <= 3);
            seen.extend_from_slice(page);
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, items);
    }

    #[test]
    fn no_pagination_returns_all() {
        let items = [1, 2, 3];
        let (page, next) = paginate(&items, 0, &Map::new()).expect("page");
        assert_eq!(page, &items);
        assert!(next.is_none());
    }

    #[test]
    fn invalid_cursors() {
        let items = [1, 2, 3];
        for bad in [json!("nope"), json!("fixture-page-99"), json!(5)] {
            let err = paginate(&items, 2, &params(json!({ "cursor": bad }))).expect_err("invalid");
            assert_eq!(err.code, crate::jsonrpc::INVALID_PARAMS);
            assert!(err.message.contains("cursor"));
        }
    }
}
