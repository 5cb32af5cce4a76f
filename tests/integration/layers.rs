//! Imports go one way. Two checks on the library's source files (`src/**/*.rs`), read as
//! text, each listing every offence:
//!
//! 1. [`no_file_reaches_back`]: no import circle among files. File `a` **reaches** file `b`
//!    when `a` names an item that is defined in `b`: a `use` path or a path in the code
//!    (`crate::budget::Cost`, `super::request::resolve_column`, `base::load_base`), followed
//!    through re-exports (`pub use account::Cost` in `budget/mod.rs` sends `budget::Cost` on
//!    to `budget/account.rs`). A folder's `mod.rs` (and `lib.rs`) is the front of its own
//!    parts: what it names inside its folder is not counted, so its parts may use what it
//!    defines. Any other pair of files that reach each other, directly or round a longer
//!    loop, is a circle.
//! 2. [`lower_layers_never_name_upper_ones`]: the layer rules of `docs/ARCHITECTURE.md`: no
//!    file of a lower area names a file of an area above it (the table [`FORBIDDEN`]).
//! 3. [`only_the_methods_name_a_method`]: no string literal outside `src/method/` is a
//!    method's name (a folder of `src/method/`): what a method is and does is declared in
//!    its `MethodSpec`, which the other layers read.
//! 4. [`no_production_file_is_long`]: no source file of the workspace's packages is over
//!    [`MAX_LINES`] lines before its inline test module: a longer one has more than one job.
//!
//! Test-only files (`tests.rs`, `*_tests.rs`, `src/testing/`) and inline `#[cfg(test)]`
//! modules are left out: a test may reach anything. Run with
//! `cargo test --release --test integration layers`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::{rust_files, SOURCE_FOLDERS};

/// Pairs (lower area, upper area): no file under the first may reach a file under the
/// second.
const FORBIDDEN: &[(&str, &str)] = &[
    ("src/method/", "src/sql/"),
    ("src/method/", "src/engine/"),
    ("src/method/", "src/releases/"),
    ("src/method/", "src/access.rs"),
    ("src/privacy/", "src/sql/"),
    ("src/privacy/", "src/engine/"),
    ("src/privacy/", "src/method/"),
    ("src/privacy/", "src/releases/"),
    ("src/budget/", "src/sql/"),
    ("src/budget/", "src/engine/"),
    ("src/budget/", "src/method/"),
    ("src/budget/", "src/privacy_unit/"),
    ("src/budget/", "src/releases/"),
    ("src/mechanism/", "src/sql/"),
    ("src/mechanism/", "src/engine/"),
    ("src/mechanism/", "src/method/"),
    ("src/privacy_unit/", "src/sql/"),
    ("src/privacy_unit/", "src/engine/"),
    ("src/privacy_unit/", "src/method/"),
    ("src/engine/", "src/sql/"),
    ("src/engine/", "src/releases/"),
    ("src/engine/", "src/access.rs"),
    ("src/releases/", "src/sql/"),
    ("src/releases/", "src/access.rs"),
    ("src/public/", "src/sql/"),
    ("src/public/", "src/access.rs"),
    ("src/public/", "src/releases/"),
    ("src/report/", "src/sql/"),
    ("src/attack/", "src/sql/"),
    ("src/attack/", "src/releases/"),
    ("src/utility/", "src/sql/"),
    ("src/utility/", "src/releases/"),
    ("src/metric/", "src/sql/"),
    ("src/metric/", "src/engine/"),
    ("src/hierarchy/", "src/sql/"),
    ("src/hierarchy/", "src/engine/"),
    ("src/release/", "src/sql/"),
    ("src/release/", "src/engine/"),
    ("src/release/", "src/method/"),
];

#[test]
fn no_file_reaches_back() {
    let graph = Graph::read(&root().join("src"));
    let circles = graph.circles();
    let mut report = String::new();
    for circle in &circles {
        report.push_str(&format!("a circle of {} files:\n", circle.len()));
        for from in circle {
            for (to, via) in &graph.edges[from] {
                if circle.contains(to) {
                    report.push_str(&format!("  {from} -> {to}  ({via})\n"));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "{} import circle(s) among src/ files; move the shared item to a file both can use:\n{report}",
        circles.len()
    );
}

#[test]
fn lower_layers_never_name_upper_ones() {
    let graph = Graph::read(&root().join("src"));
    let mut offences = Vec::new();
    for (from, edges) in &graph.edges {
        for (to, via) in edges {
            for (lower, upper) in FORBIDDEN {
                if from.starts_with(lower) && to.starts_with(upper) {
                    offences.push(format!("{from} -> {to} ({via}): {lower} is below {upper}"));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "imports that point upward:\n{}",
        offences.join("\n")
    );
}

#[test]
fn only_the_methods_name_a_method() {
    let src = root().join("src");
    let methods: Vec<String> = std::fs::read_dir(src.join("method"))
        .expect("src/method")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
        .collect();
    assert!(methods.len() >= 6, "{methods:?}");
    let paths = rust_files(&src);
    let mut offences = Vec::new();
    for path in paths {
        let (name, test_only) = file_name_of(&path, &root());
        if test_only || name.starts_with("src/method/") {
            continue;
        }
        let code = code_with_strings(&std::fs::read_to_string(&path).expect("read"));
        for (n, line) in code.lines().enumerate() {
            for method in &methods {
                if line.contains(&format!("\"{method}\"")) {
                    offences.push(format!("{name}:{}: \"{method}\"", n + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "method names outside src/method/ (declare the fact in the method's MethodSpec):\n{}",
        offences.join("\n")
    );
}

/// The checker itself, on a small tree written for the purpose: it must find a circle
/// through a re-export and a sibling, ignore a folder front's own parts and test modules,
/// and see an upward import.
#[test]
fn the_checker_sees_what_it_should() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let src = dir.path().join("src");
    let write = |path: &str, text: &str| {
        let file = src.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("folder");
        std::fs::write(file, text).expect("write");
    };
    write("lib.rs", "mod a;\nmod b;\nmod sql;\nuse a::Thing;\n");
    write(
        "a/mod.rs",
        "mod part;\npub use part::Thing;\npub const LIMIT: u8 = 1;\n",
    );
    write(
        "a/part.rs",
        "use super::LIMIT;\npub struct Thing;\nfn f() { crate::b::g(); }\n",
    );
    write(
        "b/mod.rs",
        "use crate::{a::Thing as T, sql::Binder};\npub fn g() {}\n#[cfg(test)]\nmod tests {\n    use crate::sql::Other;\n}\n",
    );
    write(
        "sql/mod.rs",
        "pub struct Binder;\n// crate::a::part::Thing in a comment\n",
    );
    let graph = Graph::read(&src);
    let circles = graph.circles();
    assert_eq!(
        circles,
        vec![BTreeSet::from([
            "src/a/part.rs".to_string(),
            "src/b/mod.rs".to_string()
        ])],
        "{:#?}",
        graph.edges
    );
    // a/mod.rs names its own part (not counted); part.rs names its front (counted, one way).
    assert!(graph.edges["src/a/mod.rs"].is_empty());
    assert!(graph.edges["src/a/part.rs"].contains_key("src/a/mod.rs"));
    assert!(graph.edges["src/b/mod.rs"].contains_key("src/sql/mod.rs"));
    assert!(
        graph.edges["src/sql/mod.rs"].is_empty(),
        "a comment is not an import"
    );
}

/// The most lines a production file may have before its inline test module.
const MAX_LINES: usize = 600;

/// The lines of `text` before its inline test module (a `#[cfg(test)]` line followed by a
/// `mod … {` line).
fn production_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|w| {
            w[0].trim() == "#[cfg(test)]"
                && w[1].trim_start().starts_with("mod ")
                && w[1].trim_end().ends_with('{')
        })
        .unwrap_or(lines.len())
}

#[test]
fn no_production_file_is_long() {
    let root = root();
    let mut long = Vec::new();
    let mut seen = 0;
    for folder in SOURCE_FOLDERS {
        let files = rust_files(&root.join(folder));
        for path in files {
            let (name, test_only) = file_name_of(&path, &root);
            if test_only {
                continue;
            }
            seen += 1;
            let text = std::fs::read_to_string(&path).expect("read a source file");
            let lines = production_lines(&text);
            if lines > MAX_LINES {
                long.push(format!("{name}: {lines} lines"));
            }
        }
    }
    assert!(seen > 100, "only {seen} source files found");
    assert!(
        long.is_empty(),
        "production files over {MAX_LINES} lines (split each along its seams):\n{}",
        long.join("\n")
    );
    let sample = "fn a() {}\n#[cfg(test)]\nfn only_in_tests() {}\n#[cfg(test)]\nmod tests {\n}\n";
    assert_eq!(
        production_lines(sample),
        3,
        "a cfg(test) item is not the test module"
    );
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One source file: its module path and its text without comments and test modules.
struct SourceFile {
    /// Relative name, `src/budget/mod.rs`.
    name: String,
    /// Module path from the crate root, `["budget"]`.
    module: Vec<String>,
    /// Whether it is a folder's front (`mod.rs`, `lib.rs`).
    front: bool,
    code: String,
}

struct Graph {
    files: BTreeMap<String, SourceFile>,
    by_module: BTreeMap<Vec<String>, String>,
    /// from → (to → the first path that made the edge)
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn read(src: &Path) -> Self {
        let paths = rust_files(src);
        let base = src.parent().expect("src has a parent");
        let mut files = BTreeMap::new();
        let mut by_module = BTreeMap::new();
        for path in paths {
            let (name, test_only) = file_name_of(&path, base);
            if test_only {
                continue;
            }
            let file_name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let inner = name.trim_start_matches("src/").trim_end_matches(".rs");
            let mut module: Vec<String> = inner.split('/').map(str::to_string).collect();
            let front = matches!(file_name, "mod.rs" | "lib.rs" | "main.rs");
            if front {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).expect("read a source file");
            by_module.insert(module.clone(), name.clone());
            files.insert(
                name.clone(),
                SourceFile {
                    name,
                    module,
                    front,
                    code: code_of(&text),
                },
            );
        }
        let mut graph = Graph {
            files,
            by_module,
            edges: BTreeMap::new(),
        };
        let mut edges = BTreeMap::new();
        for file in graph.files.values() {
            let mut out = BTreeMap::new();
            for path in paths_named(&file.code) {
                let Some(absolute) = graph.absolute(file, &path) else {
                    continue;
                };
                let Some(to) = graph.resolve(absolute, 0) else {
                    continue;
                };
                if to == file.name || graph.owns(file, &to) {
                    continue;
                }
                out.entry(to).or_insert(path);
            }
            edges.insert(file.name.clone(), out);
        }
        graph.edges = edges;
        graph
    }

    /// Whether `to` is one of the parts of the folder that `file` fronts.
    fn owns(&self, file: &SourceFile, to: &str) -> bool {
        if !file.front {
            return false;
        }
        let folder = &file.name[..file.name.rfind('/').map_or(0, |i| i + 1)];
        to.starts_with(folder)
    }

    /// The path from the crate root, or `None` for another crate's path.
    fn absolute(&self, file: &SourceFile, path: &str) -> Option<Vec<String>> {
        let mut segments: Vec<&str> = path.split("::").collect();
        let mut base = file.module.clone();
        match segments[0] {
            "crate" => {
                base.clear();
                segments.remove(0);
            }
            "super" | "self" => {
                while let Some(&first) = segments.first() {
                    match first {
                        "super" => {
                            base.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    segments.remove(0);
                }
            }
            first => {
                let mut child = base.clone();
                child.push(first.to_string());
                if !self.by_module.contains_key(&child) {
                    return None;
                }
            }
        }
        base.extend(
            segments
                .into_iter()
                .filter(|s| *s != "self")
                .map(str::to_string),
        );
        Some(base)
    }

    /// The file that defines the item a path names, following `use` re-exports.
    fn resolve(&self, path: Vec<String>, depth: usize) -> Option<String> {
        for n in (0..=path.len()).rev() {
            let Some(name) = self.by_module.get(&path[..n]) else {
                continue;
            };
            let file = &self.files[name];
            let rest = &path[n..];
            let Some(item) = rest.first().filter(|item| *item != "*") else {
                return Some(name.clone());
            };
            if depth < 8 && !defines(&file.code, item) {
                for (target, alias) in use_trees(&file.code) {
                    let last = target.rsplit("::").next().unwrap_or_default();
                    if alias.as_deref().unwrap_or(last) == item && last != "*" {
                        if let Some(mut next) = self.absolute(file, &target) {
                            next.extend(rest[1..].iter().cloned());
                            if let Some(found) = self.resolve(next, depth + 1) {
                                return Some(found);
                            }
                        }
                    } else if last == "*" {
                        let module = target.trim_end_matches("::*");
                        if let Some(module) = self.absolute(file, module) {
                            if let Some(glob) = self.by_module.get(&module) {
                                if defines(&self.files[glob].code, item) {
                                    return Some(glob.clone());
                                }
                            }
                        }
                    }
                }
            }
            return Some(name.clone());
        }
        None
    }

    /// Strongly connected groups of more than one file (Tarjan's algorithm).
    fn circles(&self) -> Vec<BTreeSet<String>> {
        struct State<'a> {
            graph: &'a Graph,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            found: Vec<BTreeSet<String>>,
        }
        fn visit<'a>(state: &mut State<'a>, node: &'a str) {
            let next = state.index.len();
            state.index.insert(node, next);
            state.low.insert(node, next);
            state.stack.push(node);
            state.on_stack.insert(node);
            let graph = state.graph;
            for to in graph.edges[node].keys() {
                let to = to.as_str();
                if !state.index.contains_key(to) {
                    visit(state, to);
                    let low = state.low[node].min(state.low[to]);
                    state.low.insert(node, low);
                } else if state.on_stack.contains(to) {
                    let low = state.low[node].min(state.index[to]);
                    state.low.insert(node, low);
                }
            }
            if state.low[node] == state.index[node] {
                let mut group = BTreeSet::new();
                while let Some(member) = state.stack.pop() {
                    state.on_stack.remove(member);
                    group.insert(member.to_string());
                    if member == node {
                        break;
                    }
                }
                if group.len() > 1 {
                    state.found.push(group);
                }
            }
        }
        let mut state = State {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for node in self.edges.keys() {
            if !state.index.contains_key(node.as_str()) {
                visit(&mut state, node);
            }
        }
        state.found
    }
}

/// A source file's name relative to `base` (`src/budget/mod.rs`), and whether it is
/// test-only (`tests.rs`, `*_tests.rs`, under `src/testing/`).
fn file_name_of(path: &Path, base: &Path) -> (String, bool) {
    let name = path
        .strip_prefix(base)
        .expect("under the root")
        .to_string_lossy()
        .replace('\\', "/");
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let test_only = file_name == "tests.rs"
        || file_name.ends_with("_tests.rs")
        || name.starts_with("src/testing/");
    (name, test_only)
}

/// The text without comments, string literals' contents and the inline test modules
/// (a `#[cfg(test)]` line followed by `mod … {`: the rest of the file).
fn code_of(text: &str) -> String {
    strip(text, false)
}

/// The text without comments and the inline test modules, string literals kept.
fn code_with_strings(text: &str) -> String {
    strip(text, true)
}

fn strip(text: &str, keep_strings: bool) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut in_block_comment = false;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("#[cfg(test)]") {
            let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or_default();
            let declares = next.starts_with("mod ")
                || next.starts_with("pub mod ")
                || next.starts_with("pub(crate) mod ");
            if declares && next.ends_with('{') {
                break;
            }
        }
        let mut chars = line.chars().peekable();
        let mut in_string = false;
        while let Some(c) = chars.next() {
            if in_block_comment {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    in_block_comment = false;
                }
                continue;
            }
            if in_string {
                if c == '\\' {
                    let escaped = chars.next();
                    if keep_strings {
                        out.push(c);
                        out.extend(escaped);
                    }
                } else if c == '"' {
                    in_string = false;
                    out.push('"');
                } else if keep_strings {
                    out.push(c);
                }
                continue;
            }
            match c {
                '/' if chars.peek() == Some(&'/') => break,
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    in_block_comment = true;
                }
                '"' => {
                    in_string = true;
                    out.push('"');
                }
                _ => out.push(c),
            }
        }
        out.push('\n');
    }
    out
}

/// Every path the code names that may lead into this crate: each leaf of every `use`
/// tree, and every path in the code that starts with `crate::`, `super::` or `self::`.
fn paths_named(code: &str) -> Vec<String> {
    let mut paths: Vec<String> = use_trees(code)
        .into_iter()
        .map(|(target, _)| target)
        .collect();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let before = at.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| at + e);
            let path = code[at..end].trim_end_matches(':');
            if path.contains("::") {
                paths.push(path.to_string());
            }
        }
    }
    paths
}

/// Each leaf of each `use` item: (path, alias).
fn use_trees(code: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find("use ") {
        let at = from + at;
        from = at + 4;
        let before = at.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        expand(&code[at + 4..at + end], "", &mut out);
        from = at + end;
    }
    out
}

fn expand(tree: &str, prefix: &str, out: &mut Vec<(String, Option<String>)>) {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.trim().trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let head = &tree[..open];
        let inner = tree[open + 1..].trim_end().trim_end_matches('}');
        let mut depth = 0;
        let mut part = String::new();
        let mut parts = Vec::new();
        for c in inner.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(std::mem::take(&mut part));
                    continue;
                }
                _ => {}
            }
            part.push(c);
        }
        parts.push(part);
        let head = format!("{prefix}{}", head.replace(' ', ""));
        for part in parts {
            let part = part.trim();
            if part == "self" {
                out.push((head.trim_end_matches("::").to_string(), None));
            } else if !part.is_empty() {
                expand(part, &head, out);
            }
        }
    } else if let Some((path, alias)) = tree.split_once(" as ") {
        out.push((
            format!("{prefix}{}", path.replace(' ', "")),
            Some(alias.trim().to_string()),
        ));
    } else if !tree.is_empty() {
        out.push((format!("{prefix}{}", tree.replace(' ', "")), None));
    }
}

/// Whether the code defines an item of this name (not only imports it).
fn defines(code: &str, item: &str) -> bool {
    [
        "fn",
        "struct",
        "enum",
        "const",
        "static",
        "type",
        "trait",
        "mod",
        "union",
        "macro_rules!",
    ]
    .iter()
    .any(|kind| {
        let needle = format!("{kind} {item}");
        code.match_indices(&needle).any(|(at, _)| {
            let after = code[at + needle.len()..].chars().next();
            let before = code[..at].chars().next_back();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}
