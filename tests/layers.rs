//! The layering `src/lib.rs` describes, checked: a module may import from its own layer and the
//! layers below it, never from a layer above. Reads every `crate::…` path in `src/` as text.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-level modules, bottom layer first. A module not listed here fails the test, so a new
/// module must be placed.
const LAYERS: &[(&str, &[&str])] = &[
    ("domain", &["domain"]),
    ("runtime and presentation", &["runtime", "texts"]),
    ("adapters", &["store", "telegram", "pdf", "detect", "spool", "operations", "sealing"]),
    ("services", &["intake", "pipeline", "outbox", "janitor"]),
    ("wiring", &["app", "cli", "config", "telemetry"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

/// The top-level module a source file belongs to (`src/pipeline/download.rs` → `pipeline`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_owned())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every top-level module named by a `crate::<module>` path in `text`, including those inside
/// `use crate::{a, b::c}` groups. Comments count too: a doc link upward is a dependency upward.
fn imported_modules(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut upward = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else { continue };
        let own = layer_of(&module).unwrap_or_else(|| panic!("module `{module}` is in no layer: add it to LAYERS"));
        let text = std::fs::read_to_string(file).expect("read a source file");
        for imported in imported_modules(&text) {
            let Some(theirs) = layer_of(&imported) else { continue };
            if theirs > own {
                upward.push(format!(
                    "{} ({}) imports `{imported}` ({})",
                    file.strip_prefix(&src).unwrap_or(file).display(),
                    LAYERS[own].0,
                    LAYERS[theirs].0
                ));
            }
        }
    }
    assert!(upward.is_empty(), "imports from a layer above:\n{}", upward.join("\n"));
}

#[test]
fn the_checker_sees_plain_grouped_and_nested_paths() {
    let text = "use crate::store::Job;\nuse crate::{config::Config, domain};\nlet x = crate::app::start;";
    let found: Vec<String> = imported_modules(text).into_iter().collect();
    assert_eq!(found, ["app", "config", "domain", "store"]);
}
