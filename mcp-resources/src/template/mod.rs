//! RFC 6570 URI templates: parse, [`expand`](UriTemplate::expand), and the reverse,
//! [`matches`](UriTemplate::matches) (which template a concrete URI came from, with the values).
//!
//! Written by hand: the Rust crates for URI templates (`iri-string`, `uritemplate-next`) only
//! expand; matching a URI against a template is what a client needs, and it is not in the RFC.
//!
//! What is supported, and how matching reads an expansion backwards, is on [`UriTemplate`].
//!
//! Parsing and expansion are here; matching, its search and its budget, in `matcher.rs`.

use std::collections::BTreeMap;
use std::fmt;

mod matcher;

/// An RFC 6570 URI template, parsed.
///
/// Supported: every operator of levels 1–3 (`{var}`, `{+var}`, `{#var}`, `{.var}`, `{/var}`,
/// `{;var}`, `{?var}`, `{&var}`, each with several variables) and the level 4 modifiers on
/// string values (`{var:3}` prefixes, `{/path*}` explode). Values are strings; lists and
/// associative arrays are not.
///
/// Matching is a reading of the expansion rules backwards, lenient where they leave room:
/// - `{var}` and `{+var}` match one or more characters (`{var}` none of `/`, `?`, `#`;
///   `{+var}` anything), so `fixture://items/{id}` does not match `fixture://items/`;
/// - `{/var}`, `{.var}`, `{;var}`, `{?var}`, `{&var}` and `{#var}` may match nothing
///   (their variables undefined);
/// - `{;x,y}`, `{?x,y}` and `{&x,y}` take their parameters in any order, each at most once,
///   and no name they do not list;
/// - a `{+var}` or `{#var}` followed somewhere by `{?…}` (or `{#…}`) stops at the `?` (`#`);
/// - values are percent-decoded.
///
/// A template comes from a server, so matching is bounded: the search gives up (no match)
/// after a fixed amount of work instead of backtracking without end on a pathological
/// template such as `{+a}{+b}{+c}{+d}`, or trying every end of every expression of one such
/// as `{&a,b}{&a,b}…` against a long URI.
///
/// ```
/// use std::collections::BTreeMap;
/// use mcp_resources::UriTemplate;
/// let template = UriTemplate::parse("file:///{+path}{?rev}").unwrap();
/// let vars = template.matches("file:///src/lib.rs?rev=7").unwrap();
/// assert_eq!(vars["path"], "src/lib.rs");
/// assert_eq!(vars["rev"], "7");
/// assert_eq!(template.expand(&vars), "file:///src/lib.rs?rev=7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expression(Expression),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Expression {
    operator: Operator,
    variables: Vec<VarSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    /// `{var:N}`: at most N characters of the value.
    prefix: Option<usize>,
    /// `{var*}`.
    explode: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParameter,
    Query,
    QueryContinuation,
}

/// The expansion table of RFC 6570 appendix A.
struct Rules {
    first: &'static str,
    separator: char,
    named: bool,
    if_empty: &'static str,
    allow_reserved: bool,
}

impl Operator {
    fn from_char(c: char) -> Option<Operator> {
        Some(match c {
            '+' => Operator::Reserved,
            '#' => Operator::Fragment,
            '.' => Operator::Label,
            '/' => Operator::Path,
            ';' => Operator::PathParameter,
            '?' => Operator::Query,
            '&' => Operator::QueryContinuation,
            _ => return None,
        })
    }

    fn rules(self) -> Rules {
        let (first, separator, named, if_empty, allow_reserved) = match self {
            Operator::Simple => ("", ',', false, "", false),
            Operator::Reserved => ("", ',', false, "", true),
            Operator::Fragment => ("#", ',', false, "", true),
            Operator::Label => (".", '.', false, "", false),
            Operator::Path => ("/", '/', false, "", false),
            Operator::PathParameter => (";", ';', true, "", false),
            Operator::Query => ("?", '&', true, "=", false),
            Operator::QueryContinuation => ("&", '&', true, "=", false),
        };
        Rules {
            first,
            separator,
            named,
            if_empty,
            allow_reserved,
        }
    }
}

/// Why a URI template could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// Byte offset in the template where the problem is.
    pub position: usize,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid URI template at byte {}: {}",
            self.position, self.message
        )
    }
}

impl std::error::Error for TemplateError {}

fn template_error(position: usize, message: impl Into<String>) -> TemplateError {
    TemplateError {
        position,
        message: message.into(),
    }
}

impl UriTemplate {
    /// Parses `template`. Refuses unclosed or empty expressions, the operators RFC 6570
    /// reserves for the future (`=`, `,`, `!`, `@`, `|`) and malformed variable names.
    pub fn parse(template: &str) -> Result<UriTemplate, TemplateError> {
        // Matching recurses once per part: a server's template must not be able to exhaust the
        // stack (or the matcher's budget) by its size alone.
        if template.len() > MAX_TEMPLATE_BYTES {
            return Err(template_error(
                MAX_TEMPLATE_BYTES,
                format!(
                    "the template is {} bytes long, more than the {MAX_TEMPLATE_BYTES} accepted",
                    template.len()
                ),
            ));
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = template.char_indices();
        while let Some((at, c)) = rest.next() {
            match c {
                '{' => {
                    let body_start = at + 1;
                    let close = template[body_start..]
                        .find('}')
                        .ok_or_else(|| template_error(at, "an expression is not closed"))?;
                    let body = &template[body_start..body_start + close];
                    if body.contains('{') {
                        return Err(template_error(at, "an expression contains `{`"));
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Expression(parse_expression(body, body_start)?));
                    if parts.len() > MAX_TEMPLATE_PARTS {
                        return Err(template_error(
                            at,
                            format!(
                                "more than {MAX_TEMPLATE_PARTS} parts (literals and expressions)"
                            ),
                        ));
                    }
                    // Skip the body and the closing brace.
                    for _ in 0..body.chars().count() + 1 {
                        rest.next();
                    }
                }
                '}' => return Err(template_error(at, "a `}` outside an expression")),
                _ => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(UriTemplate {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The names of its variables, in order of appearance.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts
            .iter()
            .flat_map(|part| match part {
                Part::Literal(_) => [].iter(),
                Part::Expression(e) => e.variables.iter(),
            })
            .map(|v| v.name.as_str())
    }

    /// The literal text the template starts with (empty when it starts with an expression).
    pub fn literal_prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Literal(literal)) => literal,
            _ => "",
        }
    }

    /// How many literal (non-expression) characters the template has: the more, the more
    /// specific it is (how [`ResourceListing::template_for`](crate::ResourceListing::template_for)
    /// chooses among several templates matching one URI).
    pub fn literal_len(&self) -> usize {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Literal(l) => l.chars().count(),
                Part::Expression(_) => 0,
            })
            .sum()
    }

    /// Expands the template with `variables` (RFC 6570 §3; a variable not in the map is
    /// undefined and left out, as the RFC says).
    pub fn expand(&self, variables: &BTreeMap<String, String>) -> String {
        let mut out = String::with_capacity(self.source.len());
        for part in &self.parts {
            match part {
                Part::Literal(l) => out.push_str(l),
                Part::Expression(e) => expand_expression(e, variables, &mut out),
            }
        }
        out
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for UriTemplate {
    type Err = TemplateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        UriTemplate::parse(s)
    }
}

/// The longest template accepted, in bytes.
pub const MAX_TEMPLATE_BYTES: usize = 8 * 1024;
/// The most parts (literals and expressions) a template may have.
pub const MAX_TEMPLATE_PARTS: usize = 256;
/// The most variables one expression may list: reading a `{?a,b,…}` compares each parameter
/// with every name, so the names of one expression are kept few (real templates list a handful).
pub const MAX_EXPRESSION_VARIABLES: usize = 32;

fn parse_expression(body: &str, offset: usize) -> Result<Expression, TemplateError> {
    let mut chars = body.chars();
    let (operator, list, list_offset) = match chars.next() {
        None => return Err(template_error(offset, "an empty expression")),
        Some(c @ ('=' | ',' | '!' | '@' | '|')) => {
            return Err(template_error(
                offset,
                format!("the operator `{c}` is reserved for future extensions"),
            ))
        }
        Some(c) => match Operator::from_char(c) {
            Some(operator) => (operator, &body[c.len_utf8()..], offset + c.len_utf8()),
            None => (Operator::Simple, body, offset),
        },
    };
    let mut variables = Vec::new();
    let mut at = list_offset;
    for spec in list.split(',') {
        if variables.len() == MAX_EXPRESSION_VARIABLES {
            return Err(template_error(
                at,
                format!("more than {MAX_EXPRESSION_VARIABLES} variables in one expression"),
            ));
        }
        variables.push(parse_varspec(spec, at)?);
        at += spec.len() + 1;
    }
    Ok(Expression {
        operator,
        variables,
    })
}

fn parse_varspec(spec: &str, offset: usize) -> Result<VarSpec, TemplateError> {
    let (name, prefix, explode) = if let Some(name) = spec.strip_suffix('*') {
        (name, None, true)
    } else if let Some((name, length)) = spec.split_once(':') {
        let prefix = length
            .parse::<usize>()
            .ok()
            .filter(|n| (1..10_000).contains(n) && !length.starts_with('0'))
            .ok_or_else(|| {
                template_error(
                    offset,
                    format!("`{length}` is not a prefix length (1–9999)"),
                )
            })?;
        (name, Some(prefix), false)
    } else {
        (spec, None, false)
    };
    if name.is_empty() {
        return Err(template_error(offset, "a variable without a name"));
    }
    let valid = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%'));
    if !valid || name.starts_with('.') || name.ends_with('.') {
        return Err(template_error(
            offset,
            format!("`{name}` is not a variable name"),
        ));
    }
    Ok(VarSpec {
        name: name.to_owned(),
        prefix,
        explode,
    })
}

fn expand_expression(e: &Expression, variables: &BTreeMap<String, String>, out: &mut String) {
    let rules = e.operator.rules();
    let mut first = true;
    for var in &e.variables {
        let Some(value) = variables.get(&var.name) else {
            continue;
        };
        if first {
            out.push_str(rules.first);
            first = false;
        } else {
            out.push(rules.separator);
        }
        let value = match var.prefix {
            Some(n) => value
                .char_indices()
                .nth(n)
                .map_or(value.as_str(), |(end, _)| &value[..end]),
            None => value.as_str(),
        };
        if rules.named {
            out.push_str(&var.name);
            if value.is_empty() {
                out.push_str(rules.if_empty);
                continue;
            }
            out.push('=');
        }
        encode_into(value, rules.allow_reserved, out);
    }
}

fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

fn is_reserved(c: char) -> bool {
    matches!(
        c,
        ':' | '/'
            | '?'
            | '#'
            | '['
            | ']'
            | '@'
            | '!'
            | '$'
            | '&'
            | '\''
            | '('
            | ')'
            | '*'
            | '+'
            | ','
            | ';'
            | '='
    )
}

fn encode_into(value: &str, allow_reserved: bool, out: &mut String) {
    let bytes = value.as_bytes();
    for (i, c) in value.char_indices() {
        let pct_triplet = c == '%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if is_unreserved(c) || (allow_reserved && (is_reserved(c) || pct_triplet)) {
            out.push(c);
            continue;
        }
        let mut buffer = [0u8; 4];
        for byte in c.encode_utf8(&mut buffer).bytes() {
            out.push('%');
            out.push(hex_digit(byte >> 4));
            out.push(hex_digit(byte & 0x0f));
        }
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789ABCDEF"[usize::from(nibble & 0x0f)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_templates_are_refused_before_matching() {
        let many = "{a}x".repeat(MAX_TEMPLATE_PARTS);
        let err = UriTemplate::parse(&many).unwrap_err();
        assert!(err.message.contains("parts"), "{err}");
        let long = format!("file:///{}", "a".repeat(MAX_TEMPLATE_BYTES));
        let err = UriTemplate::parse(&long).unwrap_err();
        assert!(err.message.contains("bytes"), "{err}");
        // The limits leave room for any real template.
        let fine = "{a}/".repeat(100);
        assert!(UriTemplate::parse(&fine).is_ok());
    }

    pub(super) fn rfc_variables() -> BTreeMap<String, String> {
        [
            ("var", "value"),
            ("hello", "Hello World!"),
            ("path", "/foo/bar"),
            ("empty", ""),
            ("x", "1024"),
            ("y", "768"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// RFC 6570 §1.2 (levels 1–3) and the string cases of level 4.
    pub(super) const RFC_EXAMPLES: &[(&str, &str)] = &[
        ("{var}", "value"),
        ("{hello}", "Hello%20World%21"),
        ("{+var}", "value"),
        ("{+hello}", "Hello%20World!"),
        ("{+path}/here", "/foo/bar/here"),
        ("here?ref={+path}", "here?ref=/foo/bar"),
        ("X{#var}", "X#value"),
        ("X{#hello}", "X#Hello%20World!"),
        ("map?{x,y}", "map?1024,768"),
        ("{x,hello,y}", "1024,Hello%20World%21,768"),
        ("{+x,hello,y}", "1024,Hello%20World!,768"),
        ("{+path,x}/here", "/foo/bar,1024/here"),
        ("{#x,hello,y}", "#1024,Hello%20World!,768"),
        ("{#path,x}/here", "#/foo/bar,1024/here"),
        ("X{.var}", "X.value"),
        ("X{.x,y}", "X.1024.768"),
        ("{/var}", "/value"),
        ("{/var,x}/here", "/value/1024/here"),
        ("{;x,y}", ";x=1024;y=768"),
        ("{;x,y,empty}", ";x=1024;y=768;empty"),
        ("{?x,y}", "?x=1024&y=768"),
        ("{?x,y,empty}", "?x=1024&y=768&empty="),
        ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
        ("{&x,y,empty}", "&x=1024&y=768&empty="),
        ("{var:3}", "val"),
        ("{+path:6}/here", "/foo/b/here"),
        ("{undef}", ""),
        ("X{.undef}Y", "XY"),
        ("{?undef,x}", "?x=1024"),
    ];

    #[test]
    fn expands_the_rfc_examples() {
        let vars = rfc_variables();
        for (template, expected) in RFC_EXAMPLES {
            let parsed = UriTemplate::parse(template).unwrap();
            assert_eq!(parsed.expand(&vars), *expected, "{template}");
        }
    }

    #[test]
    fn an_expression_lists_at_most_32_variables() {
        let names: Vec<String> = (0..=MAX_EXPRESSION_VARIABLES)
            .map(|i| format!("v{i}"))
            .collect();
        let error = UriTemplate::parse(&format!("x{{?{}}}", names.join(","))).unwrap_err();
        assert!(error.message.contains("more than 32 variables"), "{error}");
        let fine = &names[..MAX_EXPRESSION_VARIABLES];
        assert!(UriTemplate::parse(&format!("x{{?{}}}", fine.join(","))).is_ok());
    }

    #[test]
    fn refuses_malformed_templates() {
        for (template, position) in [
            ("a{b", 1),
            ("a}b", 1),
            ("{}", 1),
            ("{=x}", 1),
            ("{a{b}}", 0),
            ("{x:0}", 1),
            ("{x:10000}", 1),
            ("{x,}", 3),
            ("{a-b}", 1),
        ] {
            let error = UriTemplate::parse(template).unwrap_err();
            assert_eq!(error.position, position, "{template}: {error}");
        }
    }

    #[test]
    fn names_its_variables_and_literals() {
        let template = UriTemplate::parse("db://{schema}/{table}{?limit}").unwrap();
        assert_eq!(
            template.variables().collect::<Vec<_>>(),
            ["schema", "table", "limit"]
        );
        assert_eq!(template.literal_len(), "db:///".len());
        assert_eq!(template.to_string(), "db://{schema}/{table}{?limit}");
    }
}
