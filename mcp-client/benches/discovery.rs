//! `discovery`: what the discovery cache costs a harness per agent turn and per tool call.
//!
//! Rows (a catalog of 1,000 tools over 10 servers, realistic schemas):
//! - `catalog/lookup_hit`: finding a tool by its qualified name in the catalog — what every
//!   `call_tool` does instead of listing tools (target < 100 ns).
//! - `catalog/snapshot_and_lookup`: the same behind the client's `RwLock<Arc<Catalog>>`
//!   snapshot, as `McpClient::tools()` + `get` does it.
//! - `llm/build_1000`: building the model's tool list (Anthropic format, canonical bytes) for
//!   the 1,000 tools — done once per catalog change; every other turn gets the same `Arc`.
//!   The summary checks that two builds, and a build from a catalog whose schemas were
//!   written with their members in another order, give identical bytes.
//!
//! ```text
//! cargo bench -p mcp-client --bench discovery
//! ```
//!
//! After the criterion group it times plain loops and prints one line per row:
//! `discovery: <row> … ns`.

use std::hint::black_box;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use criterion::Criterion;
use mcp_client::{Catalog, CatalogTool, LlmToolFormat, LlmToolList};
use serde_json::{json, Value};

const SERVERS: usize = 10;
const TOOLS_PER_SERVER: usize = 100;

/// A tool definition of a typical size (a few properties, descriptions, an enum).
fn tool(server: usize, index: usize, reversed_members: bool) -> CatalogTool {
    let mut properties = vec![
        (
            "path",
            json!({"type": "string", "description": "Where to look, relative to the workspace root"}),
        ),
        (
            "limit",
            json!({"type": "integer", "minimum": 1, "maximum": 1000, "description": "How many results at most"}),
        ),
        (
            "mode",
            json!({"type": "string", "enum": ["fast", "thorough", "exact"], "description": "How hard to try"}),
        ),
        (
            "include_hidden",
            json!({"type": "boolean", "default": false}),
        ),
    ];
    if reversed_members {
        properties.reverse();
    }
    let properties: serde_json::Map<String, Value> = properties
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let definition = json!({
        "name": format!("tool_{index}"),
        "description": format!("Tool {index} of server {server}: searches things and reports what it found, with enough words to look like a real description."),
        "inputSchema": {"type": "object", "properties": properties, "required": ["path"]},
    });
    CatalogTool {
        qualified_name: String::new(),
        server: format!("server{server}"),
        tool: serde_json::from_value(definition).expect("a tool"),
    }
}

fn catalog(reversed_members: bool) -> Catalog<CatalogTool> {
    Catalog::build(
        (0..SERVERS)
            .flat_map(|s| (0..TOOLS_PER_SERVER).map(move |t| tool(s, t, reversed_members)))
            .collect(),
    )
}

fn names(catalog: &Catalog<CatalogTool>) -> Vec<String> {
    catalog
        .entries()
        .iter()
        .map(|t| t.qualified_name.clone())
        .collect()
}

fn criterion_rows(c: &mut Criterion) {
    let catalog = catalog(false);
    let names = names(&catalog);
    let mut group = c.benchmark_group("discovery");
    let mut i = 0;
    group.bench_function("catalog/lookup_hit", |b| {
        b.iter(|| {
            i = (i + 1) % names.len();
            black_box(catalog.get(black_box(&names[i])).is_some())
        })
    });
    let shared = RwLock::new(Arc::new(catalog.clone()));
    group.bench_function("catalog/snapshot_and_lookup", |b| {
        b.iter(|| {
            i = (i + 1) % names.len();
            let snapshot = shared.read().expect("not poisoned").clone();
            black_box(snapshot.get(black_box(&names[i])).is_some())
        })
    });
    group.bench_function("llm/build_1000", |b| {
        b.iter(|| {
            black_box(LlmToolList::build(
                catalog.entries(),
                LlmToolFormat::Anthropic,
            ))
        })
    });
    group.finish();
}

/// Median ns per iteration of `f` over `iterations`, five runs.
fn median_ns(iterations: u32, mut f: impl FnMut(u32)) -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            for i in 0..iterations {
                f(i);
            }
            started.elapsed().as_nanos() as f64 / f64::from(iterations)
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

fn summary() {
    let catalog = catalog(false);
    let names = names(&catalog);
    let count = u32::try_from(names.len()).expect("small");
    let lookup = median_ns(2_000_000, |i| {
        black_box(
            catalog
                .get(black_box(&names[(i % count) as usize]))
                .is_some(),
        );
    });
    println!("discovery: catalog/lookup_hit {lookup:.1} ns/lookup (target < 100 ns)");
    let shared = RwLock::new(Arc::new(catalog.clone()));
    let snapshot = median_ns(2_000_000, |i| {
        let snapshot = shared.read().expect("not poisoned").clone();
        black_box(
            snapshot
                .get(black_box(&names[(i % count) as usize]))
                .is_some(),
        );
    });
    println!("discovery: catalog/snapshot_and_lookup {snapshot:.1} ns/lookup (target < 100 ns)");
    let build = median_ns(50, |_| {
        black_box(LlmToolList::build(
            catalog.entries(),
            LlmToolFormat::Anthropic,
        ));
    });
    let first = LlmToolList::build(catalog.entries(), LlmToolFormat::Anthropic).to_json();
    let second = LlmToolList::build(catalog.entries(), LlmToolFormat::Anthropic).to_json();
    let reordered = catalog_reordered_bytes();
    let identical = first == second && first == reordered;
    assert!(
        identical,
        "the model's tool list must not depend on member order"
    );
    println!(
        "discovery: llm/build_1000 {:.1} µs per build, {} bytes, identical across builds and member orders: {identical}",
        build / 1000.0,
        first.len()
    );
}

/// The list built from a catalog whose schemas were written with their members reversed.
fn catalog_reordered_bytes() -> String {
    LlmToolList::build(catalog(true).entries(), LlmToolFormat::Anthropic).to_json()
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    criterion_rows(&mut criterion);
    criterion.final_summary();
    summary();
}
