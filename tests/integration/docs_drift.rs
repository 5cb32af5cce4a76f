//! Docs that cannot drift from the code. Four checks, each listing every offending item:
//!
//! 1. [`every_source_file_is_in_the_module_map`]: every `.rs` file under the source folders
//!    of the workspace's packages (`src/`, `cli/src/`, `server/src/`, `ballista/src/`,
//!    `python/src/`, `one-build/src/`; recursively) is in the module map of
//!    `docs/ARCHITECTURE.md`.
//! 2. [`every_module_map_path_exists`]: every path the module map names exists, so renaming
//!    or moving a mapped file fails until the map follows it.
//! 3. [`every_methods_reference_resolves`]: every reference to a section of
//!    `docs/METHODS.md` in `README.md`, `docs/*.md` and `src/**/*.rs` names a numbered
//!    heading of `docs/METHODS.md`.
//! 4. [`the_public_api_lists_every_root_name`]: the names the crate root exports
//!    (`src/lib.rs`: `pub use` items, under their `as` names, and `pub fn`/`pub mod`/`pub
//!    struct`/... items, except `#[doc(hidden)]` ones) are exactly the backticked names of
//!    the bullet list in `## Public API` of `docs/ARCHITECTURE.md`.
//!
//! Plain Rust on the files of the repository; run with
//! `cargo test --release --test integration docs_drift`.
//!
//! # The module map
//!
//! The map is the first fenced block opened by a line ```` ```text ```` after the line
//! `## Module map` of `docs/ARCHITECTURE.md` (before the next `## ` heading). In it:
//!
//! * a line that starts in column 0 is an **entry**; it starts with one path (its first
//!   word, relative to the crate root, a trailing `,` ignored), then what that file does;
//! * a path ending in `.rs` names a file (`src/method/ipa/mod.rs`), a path ending in `/` a
//!   folder (`src/testing/`, `sql/`);
//! * indented lines continue the entry above; blank lines separate groups.
//!
//! A `.rs` file under `src/` is **in the map** when an entry names exactly that file. A
//! folder entry never stands for the ordinary files inside it: each has its own entry. The
//! one exception are **test-only** files — named `tests.rs` or `*_tests.rs`, or anywhere
//! under `src/testing/` — which are also in the map when an entry names a folder that
//! contains them (`src/testing/`) or another file of their own folder (the entry
//! `src/method/ipa/mod.rs` covers `src/method/ipa/tests.rs` and
//! `src/method/ipa/utility_tests.rs`).
//!
//! Every entry's path must exist: a file entry as a file, a folder entry as a folder. An
//! unindented line that does not start with a path (a word containing `/`) is an error too.
//!
//! # References to METHODS.md
//!
//! A reference is `§` directly followed by a section number (`§8`, `§2.10`, `§1.12.3`; a
//! range `§2.4-2.5` or `§2.4–2.5` checks both ends). It resolves when `docs/METHODS.md` has
//! a heading with that number: `## 2. SafePub`, `### 2.10 Choosing δ ...`,
//! `#### 1.12.3 The reference implementation's NCP table`.
//!
//! Other documents also cite the papers' own sections ("SafePub §7.2", "Bild 2024,
//! §2.1.4"), so a `§` is taken as a reference to METHODS.md only when
//!
//! 1. it follows the word `METHODS.md` or `METHODS` (with any path in front, e.g.
//!    `docs/METHODS.md`); only whitespace, an opening `(` and, across a line break, a
//!    comment's `//!`, `///` or `//` may come between: "docs/METHODS.md §2.10",
//!    "METHODS §8", "METHODS.md (§2.6)", "[METHODS.md §2.13](METHODS.md)";
//! 2. or it is followed by `of METHODS` / `of METHODS.md` ("§2.13 of METHODS");
//! 3. or it continues a list or range whose previous item is a reference to METHODS.md,
//!    with only `,`, `-`, `–`, `and`, `or`, `to` and whitespace between: in
//!    "docs/METHODS.md §1.11, §1.13, §1.14", "§5.1 and §5.6" and "§1.13–§1.15" every item
//!    is checked;
//! 4. or it is in `docs/METHODS.md` itself and is none of the papers' sections there:
//!    those are every `§` under `### 0.1 Sources` (the table that says how each paper is
//!    cited), a `§` directly after a source's name — `SafePub`, or a name ending in a year
//!    such as "Bild 2024," or "Prasser 2020," — and the items of a list continuing one of
//!    these (as in rule 3).
//!
//! The plain-text form `METHODS.md section 2.10` (used in string literals) is checked too.
//! A bare `§` in any other file is not checked: nothing says whose section it is.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{rust_files, SOURCE_FOLDERS};

const ARCHITECTURE: &str = "docs/ARCHITECTURE.md";
const METHODS: &str = "docs/METHODS.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
}

/// `path` relative to the crate root, `/`-separated.
fn relative(path: &Path) -> String {
    let rel = path
        .strip_prefix(root())
        .expect("a path under the crate root");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// The 1-based line of byte offset `pos`.
fn line_of(text: &str, pos: usize) -> usize {
    text[..pos].matches('\n').count() + 1
}

/// The line holding byte offset `pos`, trimmed and shortened for a failure message.
fn line_text(text: &str, pos: usize) -> String {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    let line = text[start..end].trim();
    if line.chars().count() > 110 {
        format!("{}…", line.chars().take(110).collect::<String>())
    } else {
        line.to_string()
    }
}

// ---------------------------------------------------------------------------------------
// The module map
// ---------------------------------------------------------------------------------------

/// One entry of the module map: its line in docs/ARCHITECTURE.md and its path.
struct Entry {
    line: usize,
    path: String,
}

/// Every `.rs` file under [`SOURCE_FOLDERS`], relative to the repository.
fn source_files() -> Vec<String> {
    SOURCE_FOLDERS
        .iter()
        .flat_map(|folder| rust_files(&root().join(folder)))
        .map(|path| relative(&path))
        .collect()
}

/// The module map's entries, and its unindented lines that do not start with a path.
fn module_map() -> (Vec<Entry>, Vec<String>) {
    let text = read(ARCHITECTURE);
    let mut lines = text.lines().enumerate();
    lines
        .by_ref()
        .find(|(_, line)| line.trim_end() == "## Module map")
        .unwrap_or_else(|| panic!("{ARCHITECTURE} has no line `## Module map`"));
    for (i, line) in lines.by_ref() {
        if line.trim_end() == "```text" {
            break;
        }
        assert!(
            !line.starts_with("## "),
            "{ARCHITECTURE}:{}: the next section starts before the ```text block of `## Module map`",
            i + 1
        );
    }
    let mut entries = Vec::new();
    let mut malformed = Vec::new();
    let mut closed = false;
    for (i, line) in lines {
        if line.starts_with("```") {
            closed = true;
            break;
        }
        if line.trim().is_empty() || line.starts_with(char::is_whitespace) {
            continue;
        }
        let word = line
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches(',');
        if word.contains('/') {
            entries.push(Entry {
                line: i + 1,
                path: word.to_string(),
            });
        } else {
            malformed.push(format!(
                "{ARCHITECTURE}:{}: an unindented line must start with a path: {line}",
                i + 1
            ));
        }
    }
    assert!(
        closed,
        "{ARCHITECTURE}: the ```text block of `## Module map` is never closed"
    );
    assert!(
        entries.len() >= 20,
        "{ARCHITECTURE}: the module map has only {} entries; is it the ```text block under `## Module map`?",
        entries.len()
    );
    (entries, malformed)
}

/// Test-only files: `tests.rs`, `*_tests.rs` and everything under `src/testing/`.
fn is_test_only(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == "tests.rs" || name.ends_with("_tests.rs") || path.starts_with("src/testing/")
}

/// The folder of a file path, with its trailing `/`.
fn folder_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..=i])
}

/// Whether the map's entries cover `file` (see the rule at the top of this file).
fn covered(file: &str, entries: &BTreeSet<&str>) -> bool {
    entries.contains(file)
        || (is_test_only(file)
            && entries.iter().any(|entry| {
                if entry.ends_with('/') {
                    file.starts_with(entry)
                } else {
                    folder_of(entry) == folder_of(file) && *entry != file
                }
            }))
}

#[test]
fn every_source_file_is_in_the_module_map() {
    let (entries, _) = module_map();
    let named: BTreeSet<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    let files = source_files();
    assert!(
        files.len() >= 20,
        "found only {} .rs files under src/",
        files.len()
    );
    let missing: Vec<&String> = files.iter().filter(|f| !covered(f, &named)).collect();
    assert!(
        missing.is_empty(),
        "{} source file(s) are not in the module map of {ARCHITECTURE}. Give each an entry \
         (a line `src/.../file.rs  what it does` or `server/src/...` in the ```text block under `## Module map`; \
         test-only files are covered by an entry of their folder; rule: top of \
         tests/integration/docs_drift.rs):\n  {}",
        missing.len(),
        missing
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn every_module_map_path_exists() {
    let (entries, mut problems) = module_map();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in &entries {
        let on_disk = root().join(&entry.path);
        let exists = if entry.path.ends_with('/') {
            on_disk.is_dir()
        } else {
            on_disk.is_file()
        };
        if !exists {
            let kind = if entry.path.ends_with('/') {
                "folder"
            } else {
                "file"
            };
            problems.push(format!(
                "{ARCHITECTURE}:{}: no {kind} {} (renamed, moved or deleted?)",
                entry.line, entry.path
            ));
        }
        if let Some(first) = seen.insert(&entry.path, entry.line) {
            problems.push(format!(
                "{ARCHITECTURE}:{}: {} has an entry already, at line {first}",
                entry.line, entry.path
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the module map of {ARCHITECTURE} names {} path(s) that do not fit the tree \
         (update the map to the files under src/; rule: top of tests/integration/docs_drift.rs):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

// ---------------------------------------------------------------------------------------
// References to METHODS.md
// ---------------------------------------------------------------------------------------

/// A section number at the start of `s` (`8`, `2.10`, `1.12.3`; a trailing `.` is not part
/// of it) and its length in bytes.
fn section_number(s: &str) -> Option<(&str, usize)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    loop {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
            i += 1;
        } else {
            return Some((&s[..i], i));
        }
    }
}

/// A numbered heading of docs/METHODS.md: its number, line and byte range of its section
/// (up to the next heading of any level).
struct Heading {
    number: String,
    line: usize,
    start: usize,
    end: usize,
}

/// The numbered headings (`## 2. SafePub`, `### 2.10 ...`, `#### 1.12.3 ...`).
fn methods_headings(text: &str) -> Vec<Heading> {
    let mut headings: Vec<Heading> = Vec::new();
    let mut offset = 0;
    let mut in_fence = false;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        if line.starts_with("```") {
            in_fence = !in_fence;
        }
        let hashes = line.len() - line.trim_start_matches('#').len();
        if in_fence || hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        if let Some(last) = headings.last_mut() {
            if last.end == usize::MAX {
                last.end = start;
            }
        }
        let word = line[hashes..].split_whitespace().next().unwrap_or("");
        let number = word.strip_suffix('.').unwrap_or(word);
        if let Some((n, len)) = section_number(number) {
            if len == number.len() && hashes >= 2 {
                headings.push(Heading {
                    number: n.to_string(),
                    line: i + 1,
                    start,
                    end: usize::MAX,
                });
            }
        }
    }
    if let Some(last) = headings.last_mut() {
        if last.end == usize::MAX {
            last.end = text.len();
        }
    }
    headings
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Whose {
    /// A section of docs/METHODS.md: checked.
    Methods,
    /// A paper's section, or not known: not checked.
    Other,
}

/// One `§` reference (or `METHODS.md section N`) in a file.
struct Reference {
    /// Byte offset of the `§` (or of `section`).
    start: usize,
    /// Byte offset just after its number (or range).
    end: usize,
    numbers: Vec<String>,
    whose: Whose,
}

/// `s` without trailing whitespace, `(` and comment markers (`//!`, `///`, `//`).
fn trim_back(mut s: &str) -> &str {
    loop {
        let t = s.trim_end();
        match ["//!", "///", "//", "("]
            .iter()
            .find_map(|m| t.strip_suffix(m))
        {
            Some(rest) => s = rest,
            None => return t,
        }
    }
}

/// `s` without leading whitespace, `(` and comment markers.
fn trim_front(mut s: &str) -> &str {
    loop {
        let t = s.trim_start();
        match ["//!", "///", "//", "("]
            .iter()
            .find_map(|m| t.strip_prefix(m))
        {
            Some(rest) => s = rest,
            None => return t,
        }
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `s` ends with the word `METHODS` or `METHODS.md` (any path before it).
fn ends_with_methods(s: &str) -> bool {
    let s = s.strip_suffix(".md").unwrap_or(s);
    s.strip_suffix("METHODS")
        .is_some_and(|before| !before.chars().next_back().is_some_and(is_word_char))
}

/// Whether `s` starts with `of METHODS` or `of <path>/METHODS.md`.
fn starts_with_of_methods(s: &str) -> bool {
    let Some(rest) = s.trim_start().strip_prefix("of ") else {
        return false;
    };
    let word = rest
        .trim_start()
        .split(|c: char| c.is_whitespace() || ",;:)]".contains(c))
        .next()
        .unwrap_or("");
    ends_with_methods(word.trim_end_matches('.'))
}

/// Whether the text between two references only separates items of one list or range.
fn is_list_separator(between: &str) -> bool {
    let kept: String = between
        .replace("//!", "")
        .replace("///", "")
        .replace("//", "")
        .chars()
        .filter(|c| !c.is_whitespace() && !",-–".contains(*c))
        .collect();
    matches!(kept.as_str(), "" | "and" | "or" | "to")
}

/// Whether `before` (text before a `§`, trimmed) ends with a source's name as docs/METHODS.md
/// cites papers: `SafePub`, or a name ending in a year (`Bild 2024,`).
fn ends_with_paper_name(before: &str) -> bool {
    let s = before.strip_suffix(',').unwrap_or(before);
    if s.ends_with("SafePub") {
        return true;
    }
    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    digits == 4
        && !s[..s.len() - 4]
            .chars()
            .next_back()
            .is_some_and(is_word_char)
}

/// Every `§` reference of a file and whose section it is (rules at the top of this file).
/// `paper_ranges` are byte ranges whose `§` are all papers' sections (docs/METHODS.md §0.1).
fn references(text: &str, in_methods: bool, paper_ranges: &[(usize, usize)]) -> Vec<Reference> {
    let mut refs: Vec<Reference> = Vec::new();
    for (pos, sign) in text.match_indices('§') {
        let after = pos + sign.len();
        let Some((number, len)) = section_number(&text[after..]) else {
            continue;
        };
        let mut numbers = vec![number.to_string()];
        let mut end = after + len;
        for dash in ["-", "–"] {
            if let Some(rest) = text[end..].strip_prefix(dash) {
                if let Some((last, len)) = section_number(rest) {
                    numbers.push(last.to_string());
                    end += dash.len() + len;
                }
            }
        }
        let before = trim_back(&text[..pos]);
        let whose = match refs.last() {
            Some(prev) if is_list_separator(&text[prev.end..pos]) => prev.whose,
            _ if ends_with_methods(before) || starts_with_of_methods(&text[end..]) => {
                Whose::Methods
            }
            _ if in_methods
                && !paper_ranges.iter().any(|&(a, b)| a <= pos && pos < b)
                && !ends_with_paper_name(before) =>
            {
                Whose::Methods
            }
            _ => Whose::Other,
        };
        refs.push(Reference {
            start: pos,
            end,
            numbers,
            whose,
        });
    }
    // The plain-text form `METHODS.md section 2.10`.
    for (pos, word) in text.match_indices("METHODS") {
        let mut end = pos + word.len();
        if text[end..].starts_with(".md") {
            end += 3;
        }
        if !ends_with_methods(&text[..end]) || text[end..].starts_with(is_word_char) {
            continue;
        }
        let rest = trim_front(&text[end..]);
        let Some(number_text) = rest.strip_prefix("section ") else {
            continue;
        };
        if let Some((number, len)) = section_number(number_text) {
            let start = text.len() - rest.len();
            refs.push(Reference {
                start,
                end: text.len() - number_text.len() + len,
                numbers: vec![number.to_string()],
                whose: Whose::Methods,
            });
        }
    }
    refs
}

/// The files whose references to METHODS.md are checked.
fn referencing_files() -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    let docs = fs::read_dir(root().join("docs")).expect("list docs/");
    let mut md: Vec<String> = docs
        .map(|e| relative(&e.expect("a directory entry").path()))
        .filter(|p| p.ends_with(".md"))
        .collect();
    md.sort();
    files.extend(md);
    files.extend(source_files());
    files
}

#[test]
fn every_methods_reference_resolves() {
    let methods_text = read(METHODS);
    let headings = methods_headings(&methods_text);
    let mut problems = Vec::new();
    let mut sections: BTreeMap<&str, usize> = BTreeMap::new();
    for heading in &headings {
        if let Some(first) = sections.insert(&heading.number, heading.line) {
            problems.push(format!(
                "{METHODS}:{}: heading number {} is used twice (first at line {first}); \
                 references to it are ambiguous",
                heading.line, heading.number
            ));
        }
    }
    assert!(
        sections.len() >= 50,
        "{METHODS}: only {} numbered headings found (`## 2. SafePub`, `### 2.10 ...`); \
         has the heading style changed?",
        sections.len()
    );
    let paper_ranges: Vec<(usize, usize)> = headings
        .iter()
        .filter(|h| h.number == "0.1")
        .map(|h| (h.start, h.end))
        .collect();
    assert!(
        !paper_ranges.is_empty(),
        "{METHODS} has no heading `### 0.1 Sources`"
    );

    let mut checked = 0;
    for file in referencing_files() {
        let own;
        let text: &str = if file == METHODS {
            &methods_text
        } else {
            own = read(&file);
            &own
        };
        for reference in references(text, file == METHODS, &paper_ranges) {
            if reference.whose != Whose::Methods {
                continue;
            }
            for number in &reference.numbers {
                checked += 1;
                if !sections.contains_key(number.as_str()) {
                    problems.push(format!(
                        "{file}:{}: §{number} is not a heading of {METHODS}: {}",
                        line_of(text, reference.start),
                        line_text(text, reference.start)
                    ));
                }
            }
        }
    }
    assert!(
        checked >= 100,
        "only {checked} references to {METHODS} found; has the citation form changed \
         (rules: top of tests/integration/docs_drift.rs)?"
    );
    assert!(
        problems.is_empty(),
        "{} reference(s) to {METHODS} do not resolve (point each at the right section, \
         or number the heading; rules: top of tests/integration/docs_drift.rs):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The reference rules on the forms the documents use.
#[test]
fn reference_rules() {
    let whose = |text: &str, in_methods: bool| -> Vec<(String, Whose)> {
        references(text, in_methods, &[])
            .into_iter()
            .flat_map(|r| r.numbers.into_iter().map(move |n| (n, r.whose)))
            .collect()
    };
    let m = |n: &str| (n.to_string(), Whose::Methods);
    let o = |n: &str| (n.to_string(), Whose::Other);
    assert_eq!(whose("see docs/METHODS.md §2.10.", false), [m("2.10")]);
    assert_eq!(
        whose("the theorem of METHODS §2.12; the", false),
        [m("2.12")]
    );
    assert_eq!(whose("in docs/METHODS.md (§2.6).", false), [m("2.6")]);
    assert_eq!(
        whose("([METHODS.md §8](METHODS.md#8-who))", false),
        [m("8")]
    );
    assert_eq!(
        whose("//! docs/METHODS.md\n//! §5.3): every", false),
        [m("5.3")]
    );
    assert_eq!(whose("(§2.13 of METHODS; before", false), [m("2.13")]);
    assert_eq!(
        whose("(docs/METHODS.md §1.11, §1.13, §1.14)", false),
        [m("1.11"), m("1.13"), m("1.14")]
    );
    assert_eq!(
        whose("METHODS.md §5.1 and §5.6", false),
        [m("5.1"), m("5.6")]
    );
    assert_eq!(
        whose("METHODS.md §1.13–§1.15", false),
        [m("1.13"), m("1.15")]
    );
    assert_eq!(whose("METHODS.md §2.4-2.5", false), [m("2.4"), m("2.5")]);
    assert_eq!(whose("docs/METHODS.md section 2.10.", false), [m("2.10")]);
    assert_eq!(whose("the METHODS registry (§3)", false), [o("3")]);
    assert_eq!(
        whose("SafePub §7.2, bare §1.4", false),
        [o("7.2"), o("1.4")]
    );
    assert_eq!(
        whose("METHODS.md §7.6; Knuth §6.4", false),
        [m("7.6"), o("6.4")]
    );
    assert_eq!(
        whose("bounded in §2.5 (SafePub §8.4)", true),
        [m("2.5"), o("8.4")]
    );
    assert_eq!(
        whose("(Bild 2024, §2.1.4, §3.2) and §1.7", true),
        [o("2.1.4"), o("3.2"), m("1.7")]
    );
}

/// Whether `word` is a Rust identifier.
fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The names `lib` (the text of `src/lib.rs`) exports at the root: each `pub use` item
/// under its `as` name, and each `pub` item's name, except items after `#[doc(hidden)]`.
fn root_names(lib: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut hidden = false;
    let mut lines = lib.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_end();
        if line.starts_with("#[doc(hidden)]") {
            hidden = true;
            continue;
        }
        if line.starts_with("#[") || line.starts_with("//") {
            continue;
        }
        let was_hidden = std::mem::replace(&mut hidden, false);
        if let Some(rest) = line.strip_prefix("pub use ") {
            let mut statement = rest.to_string();
            while !statement.contains(';') {
                match lines.next() {
                    Some(next) => statement.push_str(next.trim()),
                    None => break,
                }
            }
            let statement = statement.trim_end_matches(';');
            let items = match (statement.find('{'), statement.rfind('}')) {
                (Some(open), Some(close)) => statement[open + 1..close].to_string(),
                _ => statement.rsplit("::").next().unwrap_or("").to_string(),
            };
            for item in items.split(',') {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                let name = item.rsplit(" as ").next().unwrap_or(item).trim();
                if !was_hidden {
                    names.insert(name.to_string());
                }
            }
            continue;
        }
        for kind in [
            "pub fn ",
            "pub async fn ",
            "pub mod ",
            "pub struct ",
            "pub enum ",
            "pub const ",
            "pub static ",
            "pub type ",
            "pub trait ",
        ] {
            if let Some(rest) = line.strip_prefix(kind) {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !was_hidden {
                    names.insert(name);
                }
            }
        }
    }
    names
}

/// The backticked identifiers of the bullet list in `## Public API` of `architecture` (a
/// bullet starts with `- ` in column 0; indented lines continue it).
fn documented_names(architecture: &str) -> BTreeSet<String> {
    let start = architecture
        .find("\n## Public API\n")
        .unwrap_or_else(|| panic!("{ARCHITECTURE} has no section `## Public API`"));
    let section = &architecture[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    let mut names = BTreeSet::new();
    let mut in_bullet = false;
    for line in section[..end].lines() {
        if line.starts_with("- ") {
            in_bullet = true;
        } else if !line.starts_with(' ') {
            in_bullet = false;
        }
        if !in_bullet {
            continue;
        }
        for (i, quoted) in line.split('`').enumerate() {
            if i % 2 == 1 && is_identifier(quoted) {
                names.insert(quoted.to_string());
            }
        }
    }
    names
}

#[test]
fn the_public_api_lists_every_root_name() {
    let exported = root_names(&read("src/lib.rs"));
    let documented = documented_names(&read(ARCHITECTURE));
    assert!(
        exported.len() > 20,
        "the root exports only {exported:?}: is src/lib.rs read right?"
    );
    let missing: Vec<_> = exported.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&exported).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "{ARCHITECTURE} `## Public API` and src/lib.rs differ.\n\
         Exported but not listed: {missing:?}\n\
         Listed but not exported: {stale:?}"
    );
}

#[test]
fn root_names_reads_uses_renames_and_hidden_items() {
    let lib = "pub mod shown;\n#[doc(hidden)]\npub mod internals;\nmod private;\n\
               pub use a::{B, c as d,\n    E};\npub use f::G;\npub fn h() {}\n\
               pub(crate) fn i() {}\n";
    let names: Vec<String> = root_names(lib).into_iter().collect();
    assert_eq!(names, ["B", "E", "G", "d", "h", "shown"]);
    let doc = "intro\n## Public API\n\ntext `notlisted`\n\n- one: `x`, `y()`,\n  `z`.\n\
               - `w`\n\nafter `after`\n## Next\n- `next`\n";
    let names: Vec<String> = documented_names(doc).into_iter().collect();
    assert_eq!(names, ["w", "x", "z"]);
}
