//! The layering of `src/` (docs/design.md), read from the code's own imports:
//! no folder imports one that imports it back, directly or round a cycle, but
//! for `openapi` ↔ `routes` (the document lists the handlers, the handlers name
//! its schemas).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Which top-level modules each top-level module names as `crate::<module>`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let module = first.trim_end_matches(".rs").to_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("crate::") {
                let rest = &text[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    graph.entry(module.clone()).or_default().insert(name);
                }
            }
        }
    }
    graph
}

/// Whether `to` is reachable from `from`.
fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(node) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == to {
                return true;
            }
            if seen.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    false
}

#[test]
fn folders_import_only_downward() {
    let mut graph = imports();
    // The one accepted cycle: take out one of its arrows, then none may remain.
    graph.get_mut("openapi").unwrap().remove("routes");
    let mut cycles = Vec::new();
    for (module, targets) in &graph {
        for target in targets {
            if reaches(&graph, target, module) {
                cycles.push(format!("{module} -> {target} -> … -> {module}"));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles between folders:\n{}",
        cycles.join("\n")
    );
    // The domain is the bottom: it names nothing of the crate but `geo`.
    let below: Vec<_> = graph
        .get("domain")
        .into_iter()
        .flatten()
        .filter(|m| *m != "geo")
        .collect();
    assert!(below.is_empty(), "domain imports {below:?}");
}

/// The floors of `src/`, bottom first, as docs/design.md lists them. The leaf
/// utilities below are imported from anywhere and import only each other and
/// the domain.
const FLOORS: [&str; 13] = [
    "domain",
    "ingest",
    "views",
    "storage",
    "webhooks",
    "actors",
    "services",
    "api",
    "openapi",
    "routes",
    "dashboard",
    "server",
    "cli",
];
const LEAVES: [&str; 6] = [
    "clock",
    "geo",
    "telemetry",
    "unavailable",
    "cpu_placement",
    "shared_map",
];

#[test]
fn each_floor_imports_only_the_floors_below_it() {
    let graph = imports();
    let floor = |module: &str| FLOORS.iter().position(|f| *f == module);
    let mut upward = Vec::new();
    for (module, targets) in &graph {
        if LEAVES.contains(&module.as_str()) {
            continue;
        }
        let here = floor(module).unwrap_or_else(|| {
            panic!("src/{module} is on no floor: add it to FLOORS and to docs/design.md")
        });
        for target in targets {
            if LEAVES.contains(&target.as_str()) || (module == "openapi" && target == "routes") {
                continue;
            }
            match floor(target) {
                Some(there) if there < here => {}
                _ => upward.push(format!("{module} imports {target}")),
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that do not go down the floors (docs/design.md):\n{}",
        upward.join("\n")
    );
}
