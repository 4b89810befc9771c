//! RFC 6570 URI templates: parse, [`expand`](UriTemplate::expand), and the reverse,
//! [`matches`](UriTemplate::matches) (which template a concrete URI came from, with the values).
//!
//! Written by hand: the Rust crates for URI templates (`iri-string`, `uritemplate-next`) only
//! expand; matching a URI against a template is what a client needs, and it is not in the RFC.
//!
//! What is supported, and how matching reads an expansion backwards, is on [`UriTemplate`].

use std::collections::BTreeMap;
use std::fmt;

/// How much work [`UriTemplate::matches`] may do before it gives up, in steps: a step is one
/// part of the template tried at one position, or one candidate end of an expression tried
/// there (only ends where the next literal begins, when one follows), plus one more for every
/// [`BYTES_PER_STEP`] bytes of the URI read while doing it. A match of a real template costs
/// a few steps per expression and one per 64 bytes of URI it reads; the budget bounds what a
/// hostile template can cost whatever its shape.
const MATCH_BUDGET: u32 = 20_000;

/// The bytes of the URI read for one step of [`MATCH_BUDGET`].
const BYTES_PER_STEP: usize = 64;

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

    /// Whether `c` may appear in the text an expression of this operator expands to (when
    /// matching: how far the expression's text can reach).
    fn may_contain(self, c: char) -> bool {
        match self {
            Operator::Simple | Operator::Label | Operator::PathParameter => {
                !matches!(c, '/' | '?' | '#')
            }
            Operator::Path => !matches!(c, '?' | '#'),
            Operator::Query | Operator::QueryContinuation => c != '#',
            Operator::Reserved | Operator::Fragment => true,
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

    /// How many literal (non-expression) characters the template has: the more, the more
    /// specific it is (how [`Discovery::template_for`](crate::Discovery::template_for)
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

    /// The variables that expand this template to `uri`, or `None` when it cannot (see the
    /// [type docs](UriTemplate) for how lenient matching is).
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut matcher = Matcher::new(&self.parts, uri);
        if !matcher.match_from(0, 0) {
            return None;
        }
        Some(
            matcher
                .found
                .into_iter()
                .map(|(name, value)| (name, percent_decode(&value)))
                .collect(),
        )
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

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` triplets; anything malformed is kept as it is.
fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = (bytes[i] == b'%')
            .then(|| {
                let high = hex_value(*bytes.get(i + 1)?)?;
                let low = hex_value(*bytes.get(i + 2)?)?;
                Some(high << 4 | low)
            })
            .flatten();
        match decoded {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The backtracking search of [`UriTemplate::matches`], within [`MATCH_BUDGET`].
struct Matcher<'a> {
    parts: &'a [Part],
    uri: &'a str,
    /// Steps left.
    budget: u32,
    /// Tries made (parts tried at a position, candidate ends read), counted apart from the
    /// budget so that a test can check the budget pays for every one.
    #[cfg(test)]
    tries: u64,
    /// Variables assigned so far (raw text), undone on backtracking.
    found: Vec<(String, String)>,
}

impl<'a> Matcher<'a> {
    fn new(parts: &'a [Part], uri: &'a str) -> Self {
        Matcher {
            parts,
            uri,
            budget: MATCH_BUDGET,
            found: Vec::new(),
            #[cfg(test)]
            tries: 0,
        }
    }

    /// Takes the steps of one try that reads `bytes` bytes of the URI; false (and nothing
    /// left) when the budget cannot pay for it.
    fn spend(&mut self, bytes: usize) -> bool {
        let steps = u32::try_from(1 + bytes / BYTES_PER_STEP).unwrap_or(u32::MAX);
        match self.budget.checked_sub(steps) {
            Some(left) => {
                self.budget = left;
                true
            }
            None => {
                self.budget = 0;
                false
            }
        }
    }

    fn match_from(&mut self, part: usize, pos: usize) -> bool {
        if !self.spend(0) {
            return false;
        }
        #[cfg(test)]
        {
            self.tries += 1;
        }
        let Some(current) = self.parts.get(part) else {
            return pos == self.uri.len();
        };
        let rest = &self.uri[pos..];
        match current {
            Part::Literal(literal) => {
                rest.starts_with(literal.as_str()) && self.match_from(part + 1, pos + literal.len())
            }
            Part::Expression(e) => {
                // The longest text this expression could cover, then shorter ones (greedy,
                // backtracking to char boundaries only).
                // A `{+path}` followed by `{?query}` or `{#fragment}` leaves the `?` or `#`
                // to them.
                let later = &self.parts[part + 1..];
                let later_has = |op: Operator| {
                    later
                        .iter()
                        .any(|p| matches!(p, Part::Expression(x) if x.operator == op))
                };
                let (stop_at_query, stop_at_fragment) =
                    (later_has(Operator::Query), later_has(Operator::Fragment));
                let reach = rest
                    .char_indices()
                    .find(|&(_, c)| {
                        !e.operator.may_contain(c)
                            || (c == '?' && stop_at_query)
                            || (c == '#' && stop_at_fragment)
                    })
                    .map_or(rest.len(), |(i, _)| i);
                // Reading up to `reach` once, and walking back from it, is paid for here.
                if !self.spend(reach) {
                    return false;
                }
                let next = self.parts.get(part + 1);
                let mut end = reach;
                loop {
                    // Only the ends the next part can start at: where its literal begins, the
                    // URI's end when nothing follows, any character when an expression does.
                    let viable = rest.is_char_boundary(end)
                        && match next {
                            None => end == rest.len(),
                            Some(Part::Literal(literal)) => match literal.as_bytes().first() {
                                Some(first) if rest.as_bytes().get(end) != Some(first) => false,
                                _ => {
                                    if !self.spend(literal.len()) {
                                        return false;
                                    }
                                    rest[end..].starts_with(literal.as_str())
                                }
                            },
                            Some(Part::Expression(_)) => true,
                        };
                    if viable {
                        // Every candidate is paid for, not only those that get as far as
                        // the next part: reading it may take as many bytes as it is long.
                        if !self.spend(end) {
                            return false;
                        }
                        #[cfg(test)]
                        {
                            self.tries += 1;
                        }
                        let mark = self.found.len();
                        if read_expression(e, &rest[..end], &mut self.found)
                            && self.match_from(part + 1, pos + end)
                        {
                            return true;
                        }
                        self.found.truncate(mark);
                    }
                    if end == 0 || self.budget == 0 {
                        return false;
                    }
                    end -= 1;
                }
            }
        }
    }
}

/// Reads `text` as the expansion of `e`, pushing the variables it defines; false when it
/// cannot be one.
fn read_expression(e: &Expression, text: &str, found: &mut Vec<(String, String)>) -> bool {
    let rules = e.operator.rules();
    match e.operator {
        Operator::Simple | Operator::Reserved => {
            !text.is_empty() && read_positional(e, text, rules.separator, found)
        }
        Operator::Fragment | Operator::Label | Operator::Path => {
            if text.is_empty() {
                return true;
            }
            match text.strip_prefix(rules.first) {
                Some(values) => read_positional(e, values, rules.separator, found),
                None => false,
            }
        }
        Operator::PathParameter | Operator::Query | Operator::QueryContinuation => {
            if text.is_empty() {
                return true;
            }
            match text.strip_prefix(rules.first) {
                Some(pairs) => read_named(e, pairs, rules.separator, found),
                None => false,
            }
        }
    }
}

/// Values in order, `separator` between them; a single variable (or an exploded last one)
/// takes the rest of the text whole.
fn read_positional(
    e: &Expression,
    text: &str,
    separator: char,
    found: &mut Vec<(String, String)>,
) -> bool {
    let mut rest = text;
    for (i, var) in e.variables.iter().enumerate() {
        let last = i + 1 == e.variables.len();
        let (value, more) = if last && (var.explode || e.variables.len() == 1) {
            (rest, None)
        } else {
            match rest.split_once(separator) {
                Some((value, more)) => (value, Some(more)),
                None => (rest, None),
            }
        };
        found.push((var.name.clone(), value.to_owned()));
        match more {
            Some(more) => rest = more,
            None => return true,
        }
    }
    // More values than variables.
    false
}

/// `name=value` pairs (or a bare `name` for `;`), each a listed variable, each at most once.
fn read_named(
    e: &Expression,
    text: &str,
    separator: char,
    found: &mut Vec<(String, String)>,
) -> bool {
    let mut seen = Vec::new();
    for pair in text.split(separator) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(var) = e.variables.iter().find(|v| v.name == name) else {
            return false;
        };
        if seen.contains(&name) {
            return false;
        }
        seen.push(name);
        found.push((var.name.clone(), value.to_owned()));
    }
    true
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

    fn rfc_variables() -> BTreeMap<String, String> {
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
    const RFC_EXAMPLES: &[(&str, &str)] = &[
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
    fn matching_reads_back_what_expansion_wrote() {
        let all = rfc_variables();
        // Every example whose expansion is unambiguous reads back to the variables it used
        // (prefixes and undefined variables lose information by design).
        for (template, expected) in RFC_EXAMPLES {
            let parsed = UriTemplate::parse(template).unwrap();
            if template.contains(':') || template.contains("undef") {
                continue;
            }
            let vars = parsed
                .matches(expected)
                .unwrap_or_else(|| panic!("{template} should match {expected}"));
            for (name, value) in &vars {
                assert_eq!(Some(value), all.get(name), "{template}: {name}");
            }
            assert_eq!(parsed.expand(&vars), *expected, "{template}");
        }
    }

    #[test]
    fn matches_mcp_style_templates() {
        let items = UriTemplate::parse("fixture://items/{id}").unwrap();
        assert_eq!(
            items.matches("fixture://items/42").unwrap()["id"],
            "42".to_owned()
        );
        assert_eq!(items.matches("fixture://items/"), None, "a value is needed");
        assert_eq!(
            items.matches("fixture://items/4/2"),
            None,
            "{{id}} is one segment"
        );
        assert_eq!(items.matches("fixture://other/42"), None);

        let file = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(
            file.matches("file:///a/b%20c.txt").unwrap()["path"],
            "a/b c.txt"
        );

        let repo = UriTemplate::parse("github://{owner}/{repo}/issues/{number}").unwrap();
        let vars = repo.matches("github://rust-lang/rust/issues/1").unwrap();
        assert_eq!(vars["owner"], "rust-lang");
        assert_eq!(vars["repo"], "rust");
        assert_eq!(vars["number"], "1");

        let search = UriTemplate::parse("search://{index}{?q,limit}").unwrap();
        let vars = search.matches("search://docs?limit=5&q=a%26b").unwrap();
        assert_eq!(vars["index"], "docs");
        assert_eq!(vars["q"], "a&b");
        assert_eq!(vars["limit"], "5");
        assert_eq!(search.matches("search://docs").unwrap().len(), 1);
        assert_eq!(search.matches("search://docs?other=1"), None);
        assert_eq!(search.matches("search://docs?q=1&q=2"), None);

        let segments = UriTemplate::parse("tree://root{/path*}").unwrap();
        assert_eq!(
            segments.matches("tree://root/a/b/c").unwrap()["path"],
            "a/b/c"
        );
        assert_eq!(
            segments.expand(&[("path".to_owned(), "a".to_owned())].into()),
            "tree://root/a"
        );
    }

    #[test]
    fn pathological_templates_give_up_instead_of_spinning() {
        let template = UriTemplate::parse(&"{+a}x".repeat(12)).unwrap();
        let uri = "x".repeat(200) + "y";
        assert_eq!(template.matches(&uri), None);
    }

    /// The URIs the `uri_template` fuzz target matches for one input (the template, a NUL, a
    /// URI): the URI itself, the template expanded with values cut from it (4 characters a
    /// variable, in order), and expanded with values of 1–3 unreserved characters made from its
    /// bytes.
    fn fuzz_target_uris(template: &UriTemplate, uri: &str) -> Vec<String> {
        const SAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~";
        let names: Vec<&str> = template.variables().collect();
        let mut values = BTreeMap::new();
        let mut rest = uri;
        for name in &names {
            let cut = rest.char_indices().nth(4).map_or(rest.len(), |(i, _)| i);
            values.insert(name.to_string(), rest[..cut].to_owned());
            rest = &rest[cut..];
        }
        let mut safe = BTreeMap::new();
        let mut bytes = uri.bytes().cycle();
        for (i, name) in names.iter().enumerate() {
            let len = 1 + (i + names.len()) % 3;
            let value: String = (0..len)
                .map(|_| char::from(SAFE[usize::from(bytes.next().unwrap_or(0)) % SAFE.len()]))
                .collect();
            safe.insert(name.to_string(), value);
        }
        vec![
            uri.to_owned(),
            template.expand(&values),
            template.expand(&safe),
        ]
    }

    /// Found by the `uri_template` fuzz target: dozens of `{&…}` expressions took 12 s per
    /// input, because only the parts tried were paid for, not the candidate ends of each
    /// expression (as many as the URI has bytes, at every position).
    #[test]
    fn every_candidate_end_is_paid_for() {
        // The two inputs as found (now refused: an expression of each lists hundreds of
        // variables), and the same with each expression cut to its first three variables.
        let inputs: [&[u8]; 4] = [
            include_bytes!("../tests/data/uri_template-timeout.bin"),
            include_bytes!("../tests/data/uri_template-slow.bin"),
            include_bytes!("../tests/data/uri_template-timeout-3vars.bin"),
            include_bytes!("../tests/data/uri_template-slow-3vars.bin"),
        ];
        for input in inputs {
            let mut halves = input.splitn(2, |&b| b == 0);
            let template = String::from_utf8_lossy(halves.next().unwrap_or_default());
            let uri = String::from_utf8_lossy(halves.next().unwrap_or_default());
            let template = match UriTemplate::parse(&template) {
                Ok(template) => template,
                // Refused before matching: an expression with too many variables.
                Err(error) => {
                    assert!(error.message.contains("variables in one"), "{error}");
                    continue;
                }
            };
            for candidate in fuzz_target_uris(&template, &uri) {
                let mut matcher = Matcher::new(&template.parts, &candidate);
                matcher.match_from(0, 0);
                assert!(
                    matcher.tries <= u64::from(MATCH_BUDGET),
                    "{} tries against a budget of {MATCH_BUDGET}",
                    matcher.tries
                );
            }
        }
    }

    #[test]
    fn long_uris_match_within_the_budget() {
        // What the work accounting must not refuse: real templates against long URIs, one
        // read in one go, one that needs the literal after an expression found.
        let path = "src/".repeat(1500) + "lib.rs";
        let template = UriTemplate::parse("file:///{+path}{?rev,blame}").unwrap();
        let vars = template
            .matches(&format!("file:///{path}?rev=7&blame=yes"))
            .unwrap();
        assert_eq!(vars["path"], path);
        assert_eq!(vars["blame"], "yes");
        let template = UriTemplate::parse("github://{+repo}/blob/{+path}").unwrap();
        let vars = template
            .matches(&format!("github://acme/tools/blob/{path}"))
            .unwrap();
        assert_eq!(vars["repo"], "acme/tools");
        assert_eq!(vars["path"], path);
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
    fn unicode_values_are_encoded_and_decoded() {
        let template = UriTemplate::parse("note://{title}").unwrap();
        let vars: BTreeMap<String, String> =
            [("title".to_owned(), "café au lait".to_owned())].into();
        let uri = template.expand(&vars);
        assert_eq!(uri, "note://caf%C3%A9%20au%20lait");
        assert_eq!(template.matches(&uri).unwrap(), vars);
        // Unencoded non-ASCII text from a lenient server matches too.
        assert_eq!(template.matches("note://café").unwrap()["title"], "café");
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
