//! The layers ARCHITECTURE.md draws, checked from the module graph as the compiler sees it:
//! every `crate::…` path of every crate's `src/` (use trees and paths alike, parsed with `syn`,
//! test code left out). Between crates, cargo refuses a wrong-way arrow; inside a crate, this
//! test does: no two top-level modules of a crate may import each other (directly or around a
//! cycle), and the `rounds` crate's modules import only their own layer or the ones below.
//! A new module must take its place in `LAYERS`, which is the picture.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The `rounds` crate's layers, top first. A module may import its own layer and those below;
/// the crates below (`rounds_base`, `rounds_process`, …) are the bottom layers, named by the
/// modules the `rounds` crate sees of them.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "face",
        &[
            "lib",
            "main",
            "commands",
            "batch",
            "render",
            "progress",
            "show",
            "step_summary",
        ],
    ),
    ("wiring", &["app", "embed", "otel"]),
    ("setup", &["config", "settings", "trust", "inventory"]),
    ("flags", &["cli"]),
    ("loop", &["agent"]),
    ("records", &["records", "runs"]),
    ("parts", &["provider", "tools", "store", "telemetry"]),
    ("process", &["process"]),
    (
        "base",
        &[
            "attachment",
            "conversation",
            "outcome",
            "transcript",
            "schema",
            "providers",
            "env",
            "net",
            "files",
            "redact",
            "terminal",
            "markdown",
            "pricing",
            "suggest",
        ],
    ),
];

/// The workspace's other crates (their folder under `crates/`) and the name the `rounds` crate
/// gives each (`use rounds_tools as tools;`): where each sits in `LAYERS`.
const CRATES: &[(&str, &str)] = &[
    ("process", "process"),
    ("providers", "provider"),
    ("tools", "tools"),
    ("store", "store"),
    ("telemetry", "telemetry"),
    ("base", "conversation"),
];

/// Top-level module → the top-level modules of the same crate it names.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<PathBuf>>>;

/// Collects the first segment after `crate::` of every path and use tree, skipping
/// `#[cfg(test)]` items.
#[derive(Default)]
struct Refs(BTreeSet<String>);

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

impl Refs {
    fn use_tree(&mut self, tree: &syn::UseTree, after_crate: bool) {
        match tree {
            syn::UseTree::Path(p) if !after_crate => self.use_tree(&p.tree, p.ident == "crate"),
            syn::UseTree::Path(p) => {
                self.0.insert(p.ident.to_string());
            }
            syn::UseTree::Name(n) if after_crate => {
                self.0.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(r) if after_crate => {
                self.0.insert(r.ident.to_string());
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, after_crate)),
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for Refs {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Trait(t) => &t.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree, false);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let mut segments = path.segments.iter();
        if let (Some(first), Some(second)) = (segments.next(), segments.next())
            && first.ident == "crate"
        {
            self.0.insert(second.ident.to_string());
        }
        syn::visit::visit_path(self, path);
    }
}

/// The top-level module a source file belongs to: `src/agent/round.rs` → `agent`.
fn module_of(src: &Path, file: &Path) -> String {
    let first = file
        .strip_prefix(src)
        .expect("under src")
        .components()
        .next()
        .expect("a file");
    let name = first.as_os_str().to_string_lossy();
    name.strip_suffix(".rs").unwrap_or(&name).to_owned()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module graph of the crate whose sources are in `src`, test files left out.
fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let name = file
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable source");
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut refs = Refs::default();
        refs.visit_file(&parsed);
        let from = module_of(src, &file);
        let edges = graph.entry(from.clone()).or_default();
        for to in refs.0.into_iter().filter(|to| *to != from) {
            edges.entry(to).or_default().insert(file.clone());
        }
    }
    graph
}

/// A cycle among the graph's modules, as the path that closes it, if there is one.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        graph: &Graph,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if !done.insert(node.to_owned()) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            if graph.contains_key(next)
                && let Some(found) = visit(graph, next, path, done)
            {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(graph, n, &mut Vec::new(), &mut done))
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// Every import of the graph that points up a layer, and every module no layer lists.
fn wrong_way(graph: &Graph) -> Vec<String> {
    let mut found = Vec::new();
    for (from, edges) in graph {
        let Some(here) = layer_of(from) else {
            found.push(format!("{from} is in no layer of LAYERS"));
            continue;
        };
        for (to, files) in edges {
            match layer_of(to) {
                Some(there) if there >= here => {}
                Some(there) => found.push(format!(
                    "{from} ({}) imports {to} ({}), a layer above it, in {files:?}",
                    LAYERS[here].0, LAYERS[there].0
                )),
                // A name that is no module of the crate: a function or type at its root
                // (`crate::runtime`), which is the face's.
                None if here == 0 => {}
                None => found.push(format!("{from} imports crate::{to}, which is in no layer")),
            }
        }
    }
    found
}

/// Every crate of the workspace: the `rounds` crate's `src/` and `crates/*/src`.
fn crate_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec![root.join("src")];
    if let Ok(entries) = std::fs::read_dir(root.join("crates")) {
        let mut crates: Vec<PathBuf> = entries
            .map(|e| e.expect("an entry").path().join("src"))
            .collect();
        crates.sort();
        sources.extend(crates.into_iter().filter(|p| p.is_dir()));
    }
    sources
}

#[test]
fn no_crate_has_a_cycle_between_its_modules() {
    let sources = crate_sources();
    for src in &sources {
        let graph = graph(src);
        assert!(
            graph.len() > 3,
            "{}: too few modules read: {graph:?}",
            src.display()
        );
        assert_eq!(
            cycle(&graph),
            None,
            "{}: a cycle between modules",
            src.display()
        );
    }
}

#[test]
fn the_rounds_crate_imports_only_down_its_layers() {
    let graph = graph(&crate_sources()[0]);
    // The reading must see the arrows it judges: the face names the loop, the loop the records.
    assert!(graph["app"].contains_key("agent"), "{:?}", graph["app"]);
    assert!(
        graph["agent"].contains_key("records"),
        "{:?}",
        graph["agent"]
    );
    let found = wrong_way(&graph);
    assert!(
        found.is_empty(),
        "imports against the layers:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_layer_names_modules_that_exist() {
    let mut modules: BTreeSet<String> = CRATES.iter().map(|(_, name)| (*name).to_owned()).collect();
    for src in crate_sources() {
        modules.extend(graph(&src).into_keys());
    }
    let stale: Vec<&str> = LAYERS
        .iter()
        .flat_map(|(_, m)| m.iter().copied())
        .filter(|m| !modules.contains(*m))
        .collect();
    assert!(
        stale.is_empty(),
        "LAYERS lists modules no crate has: {stale:?}"
    );
}

/// The control: the same reading finds a wrong-way import, a cycle, a module outside every
/// layer, and sees through use groups and paths in expressions, but not into test code.
#[test]
fn the_reading_catches_what_it_forbids() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |name: &str, text: &str| {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "agent.rs",
        "use crate::{conversation::Message, records::Records};",
    );
    write("records.rs", "fn f() { let _ = crate::agent::run(); }");
    write("conversation.rs", "fn f() -> crate::cli::Cli { todo!() }");
    write("cli.rs", "#[cfg(test)]\nmod tests { use crate::app::run; }");
    write("gadget/mod.rs", "use crate::conversation as c;");
    let graph = graph(src);
    assert!(graph["agent"].contains_key("records") && graph["agent"].contains_key("conversation"));
    assert!(
        graph["records"].contains_key("agent"),
        "a path in an expression"
    );
    assert!(
        graph["gadget"].contains_key("conversation"),
        "a renamed use"
    );
    assert!(
        !graph["cli"].contains_key("app"),
        "test code is not an import"
    );
    let found = cycle(&graph).expect("agent and records import each other");
    assert!(found.contains(&"agent".to_owned()) && found.contains(&"records".to_owned()));
    let wrong = wrong_way(&graph).join("\n");
    assert!(
        wrong.contains("conversation (base) imports cli (flags)"),
        "{wrong}"
    );
    assert!(
        wrong.contains("records (records) imports agent (loop)"),
        "{wrong}"
    );
    assert!(wrong.contains("gadget is in no layer"), "{wrong}");
    assert!(!wrong.contains("agent (loop) imports"), "{wrong}");
}

/// Between crates the arrows are cargo's: each crate's `rounds-*` dependencies must sit on its
/// own layer or below, so that the compiler refuses what `LAYERS` forbids.
#[test]
fn each_crate_depends_only_on_crates_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layer = |dir: &str| {
        let (_, name) = CRATES
            .iter()
            .find(|(d, _)| *d == dir)
            .expect("a crate of CRATES");
        layer_of(name).expect("a layer")
    };
    let mut read = 0;
    for (dir, _) in CRATES {
        let text =
            std::fs::read_to_string(root.join("crates").join(dir).join("Cargo.toml")).unwrap();
        let manifest: toml::Table = text.parse().unwrap();
        let deps = manifest
            .get("dependencies")
            .and_then(|d| d.as_table())
            .cloned()
            .unwrap_or_default();
        for dep in deps.keys().filter_map(|d| d.strip_prefix("rounds-")) {
            assert!(
                layer(dep) >= layer(dir),
                "{dir} ({}) depends on {dep} ({}), a layer above it",
                LAYERS[layer(dir)].0,
                LAYERS[layer(dep)].0
            );
            read += 1;
        }
    }
    assert!(read >= 4, "the crates' own dependencies were not read");
}
