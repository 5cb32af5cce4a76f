//! A lean library, and one DataFusion build for the whole workspace.
//!
//! * The library (`datafusion-anonymize`, what an application embeds) depends on none of the
//!   tools' crates: no datafusion-cli (and its AWS SDK), no PostgreSQL or Flight SQL server,
//!   no Ballista, no protobuf plans.
//! * Every build of the workspace resolves each crate it shares with the others with the
//!   same features. When two builds resolve a crate differently, that crate and everything
//!   above it (all of DataFusion, about half an hour on two cores) is compiled twice:
//!   README's demo (`cargo run --release -p dfanon`), the tests (`cargo test --release
//!   --workspace`), `cargo bench`, the server run alone and the Python package's maturin
//!   build must all share one. `one-build/Cargo.toml` turns the features on; this test
//!   names what to add there when a dependency changes.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each package of a resolved graph (`name vX.Y.Z`, with ` (host)` for a build compiled
/// for the host: proc macros, build scripts and what they use), with its feature sets.
type Resolved = BTreeMap<String, BTreeSet<String>>;

/// The graph `cargo tree` resolves with `args`, over the edge kinds `edges`.
///
/// `cargo tree` prints a crate built for the target and the same crate built for the host
/// alike; they are told apart here from the tree: a crate is built for the host when it is
/// a proc macro, sits under a `[build-dependencies]` heading, or hangs below either.
fn resolved(args: &[&str], edges: &str) -> Resolved {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["tree", "--offline", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .args(args)
        .args(["-e", edges, "-f", "{p}|{f}", "--charset", "ascii"])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut graph = Resolved::new();
    // The path from the root to the current line: each node's depth and whether it is
    // built for the host; and the depths below which a `[build-dependencies]` heading
    // was the last heading.
    let mut path: Vec<(usize, bool)> = Vec::new();
    let mut build_section: BTreeMap<usize, bool> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if line.trim().is_empty() {
            path.clear();
            build_section.clear();
            continue;
        }
        let content = line.trim_start_matches(['|', '-', '`', ' ']);
        let depth = (line.len() - content.len()) / 4;
        if let Some(heading) = content.strip_prefix('[') {
            // A heading is indented one level less than the dependencies under it.
            build_section.insert(depth + 1, heading.starts_with("build-dependencies"));
            continue;
        }
        build_section.retain(|&d, _| d <= depth);
        while path.last().is_some_and(|&(d, _)| d >= depth) {
            path.pop();
        }
        let Some((package, features)) = content.split_once('|') else {
            continue;
        };
        let host = path.last().is_some_and(|&(_, host)| host)
            || package.contains("(proc-macro)")
            || build_section.get(&depth).copied().unwrap_or(false);
        path.push((depth, host));
        // `name vX.Y.Z`, without a local package's path or a proc macro's mark.
        let mut name: String = package.split(' ').take(2).collect::<Vec<_>>().join(" ");
        if host {
            name.push_str(" (host)");
        }
        graph
            .entry(name)
            .or_default()
            .insert(features.trim_end_matches(" (*)").to_string());
    }
    graph
}

/// The library's own dependencies, as an application that embeds it resolves them.
fn library() -> Resolved {
    resolved(&["-p", "datafusion-anonymize"], "normal,build")
}

/// The whole workspace, the tests' dev-dependencies included: `cargo test --release
/// --workspace`.
fn workspace() -> Resolved {
    resolved(&["--workspace"], "normal,build,dev")
}

/// The crates of `alone` (restricted to `only`, when given) that the workspace builds with
/// other features, each with the features of both.
fn differing(alone: &Resolved, all: &Resolved, only: Option<&Resolved>) -> Vec<String> {
    let mut out = Vec::new();
    for (package, sets) in alone {
        if only.is_some_and(|only| !only.contains_key(package)) {
            continue;
        }
        let Some(theirs) = all.get(package) else {
            continue;
        };
        if sets != theirs {
            let list = |sets: &BTreeSet<String>| {
                sets.iter()
                    .map(|f| format!("[{f}]"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            out.push(format!(
                "{package}: {} alone, the workspace: {}",
                list(sets),
                list(theirs)
            ));
        }
    }
    out
}

#[test]
fn the_library_depends_on_none_of_the_tools_crates() {
    let library = library();
    let tools = [
        "datafusion-cli ",
        "aws-",
        "pgwire ",
        "datafusion-postgres ",
        "tonic",
        "arrow-flight ",
        "ballista",
        "datafusion-proto ",
        "datafusion-ffi ",
        "pyo3",
        "clap ",
        "rustyline ",
    ];
    let found: Vec<&String> = library
        .keys()
        .filter(|package| tools.iter().any(|tool| package.starts_with(tool)))
        .collect();
    assert!(
        found.is_empty(),
        "the library depends on a tool's crate (move it to the tool's package, or behind a \
         feature that is off by default): {found:#?}"
    );
    // The library is DataFusion plus a few crates (265 builds, host builds counted apart,
    // when this was written): a count far above that means something big came back.
    assert!(
        library.len() < 300,
        "the library resolves {} packages",
        library.len()
    );
    assert!(library.contains_key("datafusion v55.2.0"));
}

/// The demo (`cargo run --release -p dfanon`) and the Python package's maturin build
/// (`-p dfanon-python`) build their whole graph exactly as the workspace's tests do.
#[test]
fn the_demo_and_the_python_package_share_the_workspace_build() {
    let all = workspace();
    for package in ["dfanon", "dfanon-python"] {
        let alone = resolved(&["-p", package], "normal,build");
        assert!(alone.contains_key("datafusion v55.2.0"));
        let differing = differing(&alone, &all, None);
        assert!(
            differing.is_empty(),
            "`-p {package}` alone resolves these with other features than `cargo test \
             --workspace` (turn the workspace's features on in one-build/Cargo.toml):\n  {}",
            differing.join("\n  ")
        );
    }
}

/// The server and the Ballista binaries built alone, and the library's own tests and
/// benchmarks (`cargo test -p datafusion-anonymize`, `cargo bench`), build every crate of
/// the library's graph (DataFusion and what it stands on) as the workspace does; only
/// their own tools' crates may differ.
#[test]
fn every_member_alone_shares_the_datafusion_build() {
    let all = workspace();
    let stack = library();
    let members: [(&str, &str); 3] = [
        ("dfanon-server", "normal,build"),
        ("dfanon-ballista", "normal,build"),
        ("datafusion-anonymize", "normal,build,dev"),
    ];
    for (package, edges) in members {
        let alone = resolved(&["-p", package], edges);
        let differing = differing(&alone, &all, Some(&stack));
        assert!(
            differing.is_empty(),
            "`-p {package}` alone resolves these crates of DataFusion's stack with other \
             features than `cargo test --workspace` (turn the workspace's features on in \
             one-build/Cargo.toml):\n  {}",
            differing.join("\n  ")
        );
    }
}
