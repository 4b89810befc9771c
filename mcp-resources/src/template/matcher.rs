//! Matching a URI against a parsed template ([`UriTemplate::matches`]): a backtracking search
//! bounded by a budget of steps, and the reading of an expression's text back into its
//! variables (the expansion rules applied backwards).

use std::collections::BTreeMap;

use super::{Expression, Operator, Part, UriTemplate};

/// How much work [`UriTemplate::matches`] may do before it gives up, in steps: a step is one
/// part of the template tried at one position, or one candidate end of an expression tried
/// there (only ends where the next literal begins, when one follows), plus one more for every
/// [`BYTES_PER_STEP`] bytes of the URI read while doing it. A match of a real template costs
/// a few steps per expression and one per 64 bytes of URI it reads; the budget bounds what a
/// hostile template can cost whatever its shape.
const MATCH_BUDGET: u32 = 20_000;

/// The bytes of the URI read for one step of [`MATCH_BUDGET`].
const BYTES_PER_STEP: usize = 64;

impl UriTemplate {
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

impl Operator {
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
    use crate::template::tests::{rfc_variables, RFC_EXAMPLES};

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
            include_bytes!("../../tests/data/uri_template-timeout.bin"),
            include_bytes!("../../tests/data/uri_template-slow.bin"),
            include_bytes!("../../tests/data/uri_template-timeout-3vars.bin"),
            include_bytes!("../../tests/data/uri_template-slow-3vars.bin"),
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
}
