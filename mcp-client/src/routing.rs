//! Finding the server for a resource or prompt without asking every server on every call: each
//! server's resource and prompt lists are kept (mcp-session's `ListCache`) until the server says
//! they changed (`notifications/*/list_changed`) or a new session starts.

use mcp_core::{Error, ErrorKind};
use mcp_resources::ResourceListing;

/// How well a server's resources match a URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// The server lists the URI.
    Listed,
    /// The URI is an instance of one of its templates.
    ByTemplate,
    /// The URI only starts as one of its templates does (`file:///{path}` for
    /// `file:///a/b.txt`, which RFC 6570 cannot produce but servers mean).
    ByTemplateStart,
    /// Neither.
    No,
}

/// How well `listing` (one server's resources and templates) matches `uri`: listed, an
/// instance of one of its RFC 6570 templates (mcp-resources' matcher, the same the resource
/// manager uses), starting as one of them does, or none of these.
pub(crate) fn offer(listing: &ResourceListing, uri: &str) -> Offer {
    if listing.resource(uri).is_some() {
        Offer::Listed
    } else if listing.matches_template(uri) {
        Offer::ByTemplate
    } else if listing.matches_template_start(uri) {
        Offer::ByTemplateStart
    } else {
        Offer::No
    }
}

/// The one server among `offers` (server name, offer) that offers `uri`: a listing wins over a
/// template instance, which wins over a template's start; none, or several equally good, is an
/// error that says so.
pub(crate) fn pick_resource_server(uri: &str, offers: &[(String, Offer)]) -> Result<String, Error> {
    let candidates = [Offer::Listed, Offer::ByTemplate, Offer::ByTemplateStart]
        .into_iter()
        .map(|rank| -> Vec<&str> {
            offers
                .iter()
                .filter(|(_, o)| *o == rank)
                .map(|(s, _)| s.as_str())
                .collect()
        })
        .find(|servers| !servers.is_empty())
        .unwrap_or_default();
    match candidates.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(
            Error::new(ErrorKind::Resource, format!("no ready server offers {uri}"))
                .with_subject(uri),
        ),
        many => Err(Error::new(
            ErrorKind::Resource,
            format!(
                "several servers offer {uri} ({}); name the server",
                many.join(", ")
            ),
        )
        .with_subject(uri)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_listing_wins_over_a_template_and_ties_are_errors() {
        let offers = [
            ("a".to_owned(), Offer::ByTemplate),
            ("b".to_owned(), Offer::Listed),
        ];
        assert_eq!(pick_resource_server("x://1", &offers).unwrap(), "b");
        let offers = [
            ("a".to_owned(), Offer::ByTemplateStart),
            ("b".to_owned(), Offer::ByTemplate),
        ];
        assert_eq!(pick_resource_server("x://1", &offers).unwrap(), "b");
        let offers = [
            ("a".to_owned(), Offer::ByTemplate),
            ("b".to_owned(), Offer::ByTemplate),
        ];
        let err = pick_resource_server("x://1", &offers).unwrap_err();
        assert!(err.message().contains("several servers"), "{err}");
        let err = pick_resource_server("x://1", &[("a".to_owned(), Offer::No)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Resource);
    }

    #[test]
    fn a_template_instance_wins_over_a_template_start() {
        let template = |uri_template: &str| -> mcp_core::types::ResourceTemplate {
            serde_json::from_value(serde_json::json!({"uriTemplate": uri_template, "name": "t"}))
                .unwrap()
        };
        let files = ResourceListing::new(Vec::new(), vec![template("file:///{path}")]);
        let docs = ResourceListing::new(Vec::new(), vec![template("file:///docs/{+path}")]);
        // `{path}` cannot produce a `/`: only the template's start claims a nested file.
        assert_eq!(offer(&files, "file:///a/b.txt"), Offer::ByTemplateStart);
        assert_eq!(offer(&files, "file:///b.txt"), Offer::ByTemplate);
        assert_eq!(offer(&docs, "file:///docs/a/b.txt"), Offer::ByTemplate);
        assert_eq!(offer(&docs, "other://x"), Offer::No);
        let offers = [
            ("files".to_owned(), offer(&files, "file:///docs/a/b.txt")),
            ("docs".to_owned(), offer(&docs, "file:///docs/a/b.txt")),
        ];
        assert_eq!(
            pick_resource_server("file:///docs/a/b.txt", &offers).unwrap(),
            "docs"
        );
        assert_eq!(
            pick_resource_server(
                "file:///a/b.txt",
                &[("files".to_owned(), offer(&files, "file:///a/b.txt"))]
            )
            .unwrap(),
            "files"
        );
    }
}
