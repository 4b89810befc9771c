//! RFC 6570 URI templates (mcp-resources `template/`): parse, expand and match. Parsing is
//! deterministic, an expansion is bounded by the template's size and its values', matching
//! names only the template's variables, and matching a pathological template gives up
//! instead of running on.
//!
//! Round trips. "A URI expanded from the template matches it" does not hold for every
//! template and every value, by design of the matcher (`UriTemplate` docs):
//! - `{x}` / `{+x}` match one character or more, so an empty or undefined value does not
//!   read back;
//! - a value holding its expression's separator (`.` in `{.x,y}`, or `,` kept by `{+x,y}`,
//!   `{#x,y}`) reads back as more values than variables;
//! - an expression stops at a `?` (`#`) when a `{?…}` (`{#…}`) follows, so `{?a}{?b}` and
//!   `{#a}/{#b}` never match their own expansion, nor does `{+x}{?q}` with a `?` in x;
//! - `{?x,x}` repeats a name, which a query reading refuses;
//! - the search has a budget of 20 000 steps (`MATCH_BUDGET`, the work of trying parts and
//!   candidate ends and reading the URI) and gives up past it, so a template with many
//!   expressions can miss a URI it expanded.
//!
//! So the target asserts the precise invariant that does hold: for a template without those
//! shapes (no `{?…}` followed by another `{?…}`, no `{#…}` by another `{#…}`, no name twice in
//! one `{;…}`/`{?…}`/`{&…}`), values that are non-empty, defined for every variable and made
//! of unreserved characters other than `.` (`A-Z a-z 0-9 - _ ~`), and a search small enough to
//! be exhaustive within the budget ([`search_fits_budget`]), the expansion matches. It is
//! checked on values made from the input, and again on the values a match of the input's URI
//! found whenever they are of that kind (those re-expand to a URI that matches).
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use mcp_resources::{
    UriTemplate, MAX_EXPRESSION_VARIABLES, MAX_TEMPLATE_BYTES, MAX_TEMPLATE_PARTS,
};

/// `MATCH_BUDGET` of mcp-resources `template/matcher.rs`: the most steps a match may take.
const MATCH_BUDGET: u64 = 20_000;
/// `BYTES_PER_STEP` of mcp-resources `template/matcher.rs`: the URI bytes read for one step.
const BYTES_PER_STEP: u64 = 64;

/// The characters of values that read back unchanged from any expression: RFC 3986's
/// unreserved characters (never percent-encoded) without `.` (the label separator).
const SAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~";

fuzz_target!(|data: &[u8]| {
    // The template, a NUL, then a URI to match.
    let mut halves = data.splitn(2, |&b| b == 0);
    let template = String::from_utf8_lossy(halves.next().unwrap_or_default());
    let uri = String::from_utf8_lossy(halves.next().unwrap_or_default());
    let parsed = match UriTemplate::parse(&template) {
        Ok(parsed) => parsed,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "an error without a message");
            assert!(
                e.position <= template.len(),
                "an error at byte {} of a {}-byte template",
                e.position,
                template.len()
            );
            return;
        }
    };
    assert!(template.len() <= MAX_TEMPLATE_BYTES);
    assert_eq!(UriTemplate::parse(&template).ok().as_ref(), Some(&parsed));
    assert!(parsed.literal_len() <= template.chars().count());

    // Values taken from the URI, one slice per variable: any text, so the encoding is tried.
    let names: Vec<String> = parsed.variables().map(str::to_owned).collect();
    assert!(names.len() <= MAX_TEMPLATE_PARTS * MAX_EXPRESSION_VARIABLES);
    let mut values = BTreeMap::new();
    let mut rest = uri.as_ref();
    for name in &names {
        let cut = rest.char_indices().nth(4).map_or(rest.len(), |(i, _)| i);
        values.insert(name.clone(), rest[..cut].to_owned());
        rest = &rest[cut..];
    }
    let expanded = parsed.expand(&values);
    // Each variable occurrence writes its name, `=`, and its value percent-encoded at most.
    let bound: usize = template.len()
        + names
            .iter()
            .map(|n| n.len() + 2 + 3 * values.get(n).map_or(0, String::len))
            .sum::<usize>();
    assert!(
        expanded.len() <= bound,
        "{} bytes expanded from a {}-byte template",
        expanded.len(),
        template.len()
    );
    let _ = parsed.matches(&expanded);

    // Safe values made from the same bytes: the expansion must match.
    let shape = Shape::of(&template);
    let mut safe = BTreeMap::new();
    let mut bytes = uri.bytes().cycle();
    for (i, name) in names.iter().enumerate() {
        let len = 1 + (i + names.len()) % 3;
        let value: String = (0..len)
            .map(|_| char::from(SAFE[usize::from(bytes.next().unwrap_or(0)) % SAFE.len()]))
            .collect();
        safe.insert(name.clone(), value);
    }
    assert_round_trip(&parsed, &shape, &names, &safe, "values made from the input");

    if let Some(found) = parsed.matches(&uri) {
        for name in found.keys() {
            assert!(
                names.contains(name),
                "matching found an unknown variable {name}"
            );
        }
        // Values a match found re-expand to a URI that matches, when they are of the kind the
        // invariant covers.
        assert_round_trip(&parsed, &shape, &names, &found, "values a match found");
        let _ = parsed.matches(&parsed.expand(&found));
    }
});

/// Asserts that `template` expanded with `values` matches, when the invariant of the module
/// docs covers them.
fn assert_round_trip(
    template: &UriTemplate,
    shape: &Shape,
    names: &[String],
    values: &BTreeMap<String, String>,
    which: &str,
) {
    let covered = shape.reads_back
        && names.iter().all(|name| {
            values
                .get(name)
                .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| SAFE.contains(&b)))
        });
    if !covered {
        return;
    }
    let uri = template.expand(values);
    if !search_fits_budget(shape.expressions, uri.len()) {
        return;
    }
    assert!(
        template.matches(&uri).is_some(),
        "{template} expanded with {which} {values:?} to {uri:?}, which it does not match"
    );
}

/// Whether matching a `uri_len`-byte URI against a template of `expressions` expressions is
/// sure to finish within [`MATCH_BUDGET`], so that it is an exhaustive search (it finds the
/// reading an expansion came from when there is one). The matcher pays a step for each part
/// it tries at a position (a literal — literals are merged, so at most one between two
/// expressions — or an expression), and an expression pays one more for reading the URI up to
/// where it may reach and for each end it tries (at most `uri_len + 1`), plus a step per
/// [`BYTES_PER_STEP`] bytes each of those reads. So one position costs at most
/// `c = 2 + (uri_len + 2)·(1 + uri_len / BYTES_PER_STEP)`, after `d` expressions there are at
/// most `(uri_len + 1)^d` positions, and the whole search costs at most
/// `Σ_{d=0}^{e} c·(uri_len + 1)^d` steps.
fn search_fits_budget(expressions: usize, uri_len: usize) -> bool {
    let len = uri_len as u64;
    let ends = len + 1;
    let per_position = 2 + (len + 2) * (1 + len / BYTES_PER_STEP);
    let mut steps: u64 = 0;
    let mut level: u64 = 1;
    for _ in 0..=expressions {
        steps = steps.saturating_add(level.saturating_mul(per_position));
        level = level.saturating_mul(ends);
    }
    steps <= MATCH_BUDGET
}

/// What of a (valid) template's shape the round trip depends on.
struct Shape {
    /// The number of expressions.
    expressions: usize,
    /// No expression is cut short by a later one, and no named expression lists a name twice
    /// (the module docs).
    reads_back: bool,
}

impl Shape {
    /// Reads the expressions of a template that parsed: `{` to `}`, the operator first.
    fn of(template: &str) -> Shape {
        let mut operators = Vec::new();
        let mut repeats_a_name = false;
        for piece in template.split('{').skip(1) {
            let body = piece.split('}').next().unwrap_or_default();
            let operator = body
                .chars()
                .next()
                .filter(|c| "+#./;?&".contains(*c))
                .unwrap_or(' ');
            let list = body.strip_prefix(operator).unwrap_or(body);
            if matches!(operator, ';' | '?' | '&') {
                let mut seen = Vec::new();
                for spec in list.split(',') {
                    // As the parser reads a varspec: `name*`, else `name:N`, else `name`.
                    let name = spec
                        .strip_suffix('*')
                        .unwrap_or_else(|| spec.split(':').next().unwrap_or(spec));
                    repeats_a_name |= seen.contains(&name);
                    seen.push(name);
                }
            }
            operators.push(operator);
        }
        let followed_by = |i: usize, op: char| operators[i + 1..].contains(&op);
        let cut_short = operators
            .iter()
            .enumerate()
            .any(|(i, &op)| matches!(op, '?' | '#') && followed_by(i, op));
        Shape {
            expressions: operators.len(),
            reads_back: !cut_short && !repeats_a_name,
        }
    }
}
