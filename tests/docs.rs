//! The docs say what is true now: every source file, link, config key, metric and command that
//! README.md, BENCHMARKS.md and `docs/` name exists, and every config key and metric docket has
//! is documented.
//! Reads the Markdown as text; asks the built binary (`docket --help`, `docket check-config`)
//! what its commands and keys are, so drift fails the build instead of misleading a reader.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, BENCHMARKS.md and every page under `docs/`, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md"), root().join("BENCHMARKS.md")];
    for entry in std::fs::read_dir(root().join("docs")).expect("docs/").flatten() {
        if entry.path().extension().is_some_and(|e| e == "md") {
            paths.push(entry.path());
        }
    }
    paths.sort();
    paths.into_iter().map(|p| (p.clone(), std::fs::read_to_string(&p).expect("read a page"))).collect()
}

/// The text outside fenced code blocks (examples of output, which may name anything).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The inline code spans (`like this`) of a page's prose.
fn code_spans(text: &str) -> Vec<String> {
    prose(text).split('`').skip(1).step_by(2).map(|s| s.trim().to_owned()).collect()
}

/// Every file under `dir`, recursively (`target/` and hidden folders left out).
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                files_under(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

fn source_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "crates", "scripts"] {
        files_under(&root().join(dir), &mut files);
    }
    files
}

/// Whether a span names a file or folder of the repository: a path of plain characters ending
/// in a known extension, or starting with one of the repository's top folders. A path that
/// climbs out (`../shared/…`, the team's workplace beside the checkout) is not the repository's.
fn names_a_repository_path(span: &str) -> bool {
    if span.starts_with("../") {
        return false;
    }
    const TOP: [&str; 11] = [
        "src/",
        "tests/",
        "benches/",
        "crates/",
        "docs/",
        "config/",
        "systemd/",
        "scripts/",
        "migrations/",
        "fixtures/",
        ".ci/",
    ];
    let plain = !span.is_empty() && span.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
    let extension = [".rs", ".toml", ".sql", ".service", ".sh"].iter().any(|e| span.ends_with(e));
    plain && (extension || TOP.iter().any(|top| span.starts_with(top)))
}

/// Whether `span` exists: as a path from the root, or below `src/`, `tests/`, `tests/it/` or
/// `benches/`; a bare file name may be anywhere among the sources.
fn path_exists(span: &str, sources: &[PathBuf]) -> bool {
    let span = span.trim_end_matches('/');
    if !span.contains('/') {
        return root().join(span).exists() || sources.iter().any(|f| f.file_name().is_some_and(|n| n == span));
    }
    ["", "src", "tests", "tests/it", "benches"].iter().any(|base| root().join(base).join(span).exists())
        || sources.iter().any(|f| f.to_string_lossy().ends_with(&format!("/{span}")))
}

#[test]
fn every_file_the_docs_name_exists() {
    let sources = source_files();
    let mut missing = Vec::new();
    for (page, text) in pages() {
        for span in code_spans(&text) {
            if names_a_repository_path(&span) && !path_exists(&span, &sources) {
                missing.push(format!("{}: `{span}`", page.file_name().unwrap_or_default().to_string_lossy()));
            }
        }
    }
    assert!(missing.is_empty(), "the docs name files that do not exist:\n{}", missing.join("\n"));
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .lines()
        .filter_map(|line| line.strip_prefix('#').map(|rest| anchor_of(rest.trim_start_matches('#'))))
        .collect()
}

/// The targets of a page's Markdown links, `[text](target)`.
fn link_targets(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_owned());
        }
    }
    out
}

#[test]
fn every_link_stays_in_the_repository_and_finds_its_heading() {
    let root = root().canonicalize().expect("root");
    let mut broken = Vec::new();
    for (page, text) in pages() {
        let name = page.file_name().unwrap_or_default().to_string_lossy().into_owned();
        for target in link_targets(&text) {
            if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if file.is_empty() { page.clone() } else { page.parent().expect("a folder").join(file) };
            let Ok(linked) = linked.canonicalize() else {
                broken.push(format!("{name}: ({target}) does not exist"));
                continue;
            };
            if !linked.starts_with(&root) {
                broken.push(format!("{name}: ({target}) points outside the repository"));
                continue;
            }
            if !anchor.is_empty() {
                let headings = anchors(&std::fs::read_to_string(&linked).unwrap_or_default());
                if !headings.contains(anchor) {
                    broken.push(format!("{name}: ({target}) names no heading of {file}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

fn docket(args: &[&str]) -> String {
    let scratch = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(args)
        .current_dir(scratch.path())
        .env_remove("DOCKET_CONFIG")
        .env_remove("TELOXIDE_TOKEN")
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .expect("run docket");
    assert!(out.status.success(), "docket {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Every `[section] key` docket has: what `docket check-config` prints, unset keys included.
fn config_keys() -> BTreeSet<(String, String)> {
    keys_of(&docket(&["check-config"]), false)
}

/// The `(section, key)` pairs of TOML text; with `commented`, keys written as `# key = …` count
/// too. Tables of named tools (`[processing.external.ocr]`) are examples, not keys.
fn keys_of(toml: &str, commented: bool) -> BTreeSet<(String, String)> {
    let mut keys = BTreeSet::new();
    let mut section = String::new();
    for line in toml.lines() {
        let bare = line.strip_prefix('#').map(str::trim_start).filter(|_| commented).unwrap_or(line);
        if let Some(name) = bare.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let bare = if line.starts_with("# ") && line.contains(" = (not set)") { &line[2..] } else { bare };
        let Some((key, _)) = bare.split_once(" = ") else { continue };
        let is_key = !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        if is_key && !section.is_empty() && !section.contains('.') {
            keys.insert((section.clone(), key.to_owned()));
        }
    }
    keys
}

#[test]
fn every_config_key_the_docs_name_exists_and_the_example_documents_every_key() {
    let known = config_keys();
    assert!(known.len() > 40, "check-config printed too few keys: {known:?}");
    let mut wrong = Vec::new();
    for (page, text) in pages() {
        for span in code_spans(&text) {
            let Some((section, rest)) = span.strip_prefix('[').and_then(|s| s.split_once("] ")) else { continue };
            let key: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            if !key.is_empty() && !known.contains(&(section.to_owned(), key.clone())) {
                let name = page.file_name().unwrap_or_default().to_string_lossy().into_owned();
                wrong.push(format!("{name}: `[{section}] {key}` is no key"));
            }
        }
    }
    let example = std::fs::read_to_string(root().join("config/docket.toml")).expect("config/docket.toml");
    let documented = keys_of(&example, true);
    for (section, key) in documented.difference(&known) {
        wrong.push(format!("config/docket.toml: [{section}] {key} is no key"));
    }
    for (section, key) in known.difference(&documented) {
        wrong.push(format!("config/docket.toml does not document [{section}] {key}"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The metrics docket records: the names given to `counter!`, `gauge!` and `histogram!`, and
/// the names chosen before such a call (`"docket_download_seconds"`, by their unit's suffix).
fn recorded_metrics() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in source_files().into_iter().filter(|f| f.starts_with(root().join("src"))) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for word in metric_words(&text) {
            let quoted = text.contains(&format!("\"{word}\""));
            if quoted && ["_seconds", "_total", "_bytes"].iter().any(|unit| word.ends_with(unit)) {
                names.insert(word);
            }
        }
        for macro_name in ["counter!(", "gauge!(", "histogram!("] {
            for (at, _) in text.match_indices(macro_name) {
                let args = text[at + macro_name.len()..].trim_start();
                if let Some(name) = args.strip_prefix('"').and_then(|a| a.split('"').next())
                    && name.starts_with("docket_")
                {
                    names.insert(name.to_owned());
                }
            }
        }
    }
    names
}

/// The `docket_…` words of a text.
fn metric_words(text: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for (at, _) in text.match_indices("docket_") {
        let word: String = text[at..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
        words.insert(word.trim_end_matches('_').to_owned());
    }
    words
}

#[test]
fn every_metric_is_in_the_metrics_table_and_every_metric_named_is_recorded() {
    let recorded = recorded_metrics();
    assert!(recorded.len() > 20, "found too few metrics: {recorded:?}");
    let operating = std::fs::read_to_string(root().join("docs/OPERATING.md")).expect("OPERATING.md");
    let documented = metric_words(&operating);
    let mut wrong: Vec<String> =
        recorded.difference(&documented).map(|m| format!("OPERATING.md does not describe {m}")).collect();
    for (page, text) in pages() {
        for span in code_spans(&text) {
            for word in metric_words(&span) {
                // The benches' scratch databases (`docket_bench_queue`) are named so too.
                if span.starts_with(&word) && !recorded.contains(&word) && !word.starts_with("docket_bench_") {
                    let name = page.file_name().unwrap_or_default().to_string_lossy().into_owned();
                    wrong.push(format!("{name}: `{span}` is no metric docket records"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// docket's commands and, for each, the long options its help lists.
fn commands() -> BTreeMap<String, BTreeSet<String>> {
    let help = docket(&["--help"]);
    let listed = help
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("Options:").next())
        .expect("a Commands: section in --help");
    let mut commands = BTreeMap::new();
    for line in listed.lines() {
        let Some(name) = line.split_whitespace().next() else { continue };
        if line.starts_with("  ") && !line.starts_with("   ") && name != "help" {
            let options = docket(&[name, "--help"])
                .split_whitespace()
                .filter(|w| w.starts_with("--"))
                .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned())
                .collect();
            commands.insert(name.to_owned(), options);
        }
    }
    commands
}

#[test]
fn every_command_the_docs_name_exists_with_its_options() {
    let commands = commands();
    assert!(commands.contains_key("run") && commands.contains_key("janitor"), "{commands:?}");
    let global: BTreeSet<String> =
        docket(&["--help"]).split_whitespace().filter(|w| w.starts_with("--")).map(str::to_owned).collect();
    let sources: String = source_files().iter().map(|f| std::fs::read_to_string(f).unwrap_or_default()).collect();
    let mut wrong = Vec::new();
    for (page, text) in pages() {
        let name = page.file_name().unwrap_or_default().to_string_lossy().into_owned();
        for span in code_spans(&text) {
            let Some(rest) = span.strip_prefix("docket ") else { continue };
            // Global options come first (`docket --config PATH run`).
            let mut words = rest.split_whitespace().peekable();
            while let Some(word) = words.next_if(|w| w.starts_with('-')) {
                if word == "--config" {
                    words.next();
                }
            }
            let Some(command) = words.next() else { continue };
            match commands.get(command) {
                Some(options) => {
                    for option in words.filter(|w| w.starts_with("--")) {
                        let option = option
                            .split('=')
                            .next()
                            .unwrap_or(option)
                            .trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
                        // A hidden option is one docket passes itself (`--contained`).
                        let hidden = sources.contains(&format!("\"{option}\""));
                        if !options.contains(option) && !global.contains(option) && !hidden {
                            wrong.push(format!("{name}: `{span}`: `docket {command}` has no {option}"));
                        }
                    }
                }
                // Words docket prints (a log line), not a command.
                None if sources.contains(&span) => {}
                None => wrong.push(format!("{name}: `{span}`: docket has no command {command}")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
