//! What the server offers: its resources and resource templates ([`ResourceListing`]), kept in
//! mcp-session's `ListCache` until `notifications/resources/list_changed` or a reconnect.

use std::collections::BTreeMap;

use mcp_core::types::{Resource, ResourceTemplate};

use crate::template::UriTemplate;

/// A server's resources and resource templates, as
/// [`discover_resources`](crate::ResourceManager::discover_resources) returns them.
#[derive(Debug, Clone)]
pub struct ResourceListing {
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    /// Each template parsed (`None`: malformed, never matched).
    parsed: Vec<Option<UriTemplate>>,
}

/// A URI matched against one of the server's templates
/// ([`ResourceListing::template_for`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateMatch {
    /// The server's template.
    pub template: ResourceTemplate,
    /// Its URI template, parsed.
    pub uri_template: UriTemplate,
    /// The values of its variables in the URI.
    pub variables: BTreeMap<String, String>,
}

impl ResourceListing {
    /// A listing of `resources` and `templates` (templates that do not parse are kept in
    /// [`templates`](Self::templates) but never match).
    pub fn new(resources: Vec<Resource>, templates: Vec<ResourceTemplate>) -> Self {
        let parsed = templates
            .iter()
            .map(|t| match UriTemplate::parse(&t.uri_template) {
                Ok(parsed) => Some(parsed),
                Err(e) => {
                    tracing::debug!(template = %t.uri_template, error = %e, "a resource template does not parse; it will match nothing");
                    None
                }
            })
            .collect();
        ResourceListing {
            resources,
            templates,
            parsed,
        }
    }

    /// The resources (`resources/list`, every page).
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// The resource templates (`resources/templates/list`, every page; empty when the server
    /// does not implement the method).
    pub fn templates(&self) -> &[ResourceTemplate] {
        &self.templates
    }

    /// The listed resource with this URI.
    pub fn resource(&self, uri: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| r.uri == uri)
    }

    /// Whether `uri` is an instance of one of the templates (as
    /// [`template_for`](Self::template_for) finds, without building the match).
    pub fn matches_template(&self, uri: &str) -> bool {
        self.parsed
            .iter()
            .flatten()
            .any(|t| t.matches(uri).is_some())
    }

    /// Whether `uri` starts with the fixed start of one of the templates: the weakest claim a
    /// server makes on a URI, for servers that put paths in simple expressions
    /// (`file:///{path}` cannot produce `file:///a/b`: `{path}` percent-encodes the `/`).
    pub fn matches_template_start(&self, uri: &str) -> bool {
        self.parsed.iter().flatten().any(|t| {
            let start = t.literal_prefix();
            !start.is_empty() && uri.starts_with(start)
        })
    }

    /// The template `uri` is an instance of, with its variables. When several match, the
    /// most specific wins (the most literal characters), then the server's order.
    pub fn template_for(&self, uri: &str) -> Option<TemplateMatch> {
        let mut best: Option<(
            usize,
            &ResourceTemplate,
            &UriTemplate,
            BTreeMap<String, String>,
        )> = None;
        for (template, parsed) in self.templates.iter().zip(&self.parsed) {
            let Some(parsed) = parsed else { continue };
            let Some(variables) = parsed.matches(uri) else {
                continue;
            };
            let specificity = parsed.literal_len();
            if best.as_ref().is_none_or(|(s, ..)| specificity > *s) {
                best = Some((specificity, template, parsed, variables));
            }
        }
        best.map(|(_, template, uri_template, variables)| TemplateMatch {
            template: template.clone(),
            uri_template: uri_template.clone(),
            variables,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(uri_template: &str, name: &str) -> ResourceTemplate {
        serde_json::from_value(serde_json::json!({"uriTemplate": uri_template, "name": name}))
            .unwrap()
    }

    #[test]
    fn the_most_specific_template_wins() {
        let listing = ResourceListing::new(
            Vec::new(),
            vec![
                template("docs://{+path}", "any"),
                template("docs://api/{name}", "api"),
                template("docs://{broken", "broken"),
            ],
        );
        let api = listing.template_for("docs://api/Vec").unwrap();
        assert_eq!(api.template.name, "api");
        assert_eq!(api.variables["name"], "Vec");
        let any = listing.template_for("docs://guide/intro").unwrap();
        assert_eq!(any.template.name, "any");
        assert_eq!(any.variables["path"], "guide/intro");
        assert!(listing.template_for("other://x").is_none());
        assert_eq!(
            listing.templates().len(),
            3,
            "a broken template is kept, unmatched"
        );
    }
}
