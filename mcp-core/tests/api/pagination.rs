use mcp_core::service::pagination::*;

#[tokio::test]
async fn follows_cursors_until_the_last_page() {
    let pages = collect_pages("tools/list", 10, |cursor| async move {
        Ok(match cursor.as_deref() {
            None => (vec![1, 2], Some("a".to_owned())),
            Some("a") => (vec![3], Some("b".to_owned())),
            Some("b") => (vec![4], None),
            Some(other) => panic!("unexpected cursor {other}"),
        })
    })
    .await
    .unwrap();
    assert_eq!(pages, vec![1, 2, 3, 4]);
}

#[tokio::test]
async fn stops_at_the_page_cap() {
    let mut n = 0;
    let err = collect_pages("tools/list", 3, |_| {
        n += 1;
        let next = format!("c{n}");
        async move { Ok((vec![0u8], Some(next))) }
    })
    .await
    .unwrap_err();
    assert!(err.message().contains("more than 3 pages"), "{err}");
}

#[tokio::test]
async fn detects_a_repeated_cursor() {
    let err = collect_pages("prompts/list", 10, |_| async {
        Ok((vec![0u8], Some("same".to_owned())))
    })
    .await
    .unwrap_err();
    assert_eq!(
        err.message(),
        "prompts/list: the server repeated cursor \"same\"; stopping to avoid an endless loop"
    );
}

#[tokio::test]
async fn a_cursor_seen_pages_earlier_ends_the_listing_when_it_comes_back() {
    let mut fetched = Vec::new();
    let err = collect_pages("resources/list", 100, |cursor| {
        fetched.push(cursor.clone());
        let next = match cursor.as_deref() {
            None => "a",
            Some("a") => "b",
            _ => "a",
        };
        async move { Ok((vec![0u8], Some(next.to_owned()))) }
    })
    .await
    .unwrap_err();
    assert!(err.message().contains("repeated cursor \"a\""), "{err}");
    assert_eq!(fetched, [None, Some("a".to_owned()), Some("b".to_owned())]);
}

#[tokio::test]
async fn a_long_repeated_cursor_is_quoted_in_part() {
    let long = "x".repeat(100_000);
    let err = collect_pages("tools/list", 10, |_| {
        let next = long.clone();
        async move { Ok((vec![0u8], Some(next))) }
    })
    .await
    .unwrap_err();
    assert!(err.message().len() < 300, "{}", err.message().len());
    assert!(err.message().contains("(100000 bytes in all)"), "{err}");
}
