//! Finding the server for a resource or prompt without asking every server on every call: each
//! server's resource and prompt lists are kept (mcp-session's `ListCache`) until the server says
//! they changed (`notifications/*/list_changed`) or a new session starts.

use mcp_core::{Error, ErrorKind};
use mcp_resources::Discovery;

/// How well a server's resources match a URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// The server lists the URI.
    Listed,
    /// The URI is an instance of one of its templates.
    ByTemplate,
    /// Neither.
    No,
}

/// How well `discovery` (one server's resources and templates) matches `uri`: listed, an
/// instance of one of its RFC 6570 templates (mcp-resources' matcher, the same the resource
/// manager uses), or neither.
pub(crate) fn offer(discovery: &Discovery, uri: &str) -> Offer {
    if discovery.resource(uri).is_some() {
        Offer::Listed
    } else if discovery.template_for(uri).is_some() {
        Offer::ByTemplate
    } else {
        Offer::No
    }
}

/// The one server among `offers` (server name, offer) that offers `uri`: a listing wins over a
/// template; none, or several equally good, is an error that says so.
pub(crate) fn pick_resource_server(uri: &str, offers: &[(String, Offer)]) -> Result<String, Error> {
    let listed: Vec<&str> = offers
        .iter()
        .filter(|(_, o)| *o == Offer::Listed)
        .map(|(s, _)| s.as_str())
        .collect();
    let candidates = if listed.is_empty() {
        offers
            .iter()
            .filter(|(_, o)| *o == Offer::ByTemplate)
            .map(|(s, _)| s.as_str())
            .collect()
    } else {
        listed
    };
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
            ("a".to_owned(), Offer::ByTemplate),
            ("b".to_owned(), Offer::ByTemplate),
        ];
        let err = pick_resource_server("x://1", &offers).unwrap_err();
        assert!(err.message().contains("several servers"), "{err}");
        let err = pick_resource_server("x://1", &[("a".to_owned(), Offer::No)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Resource);
    }
}
