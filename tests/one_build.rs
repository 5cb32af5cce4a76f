//! One build: the dev-dependencies must not change the features of any normal dependency.
//!
//! When they do, `cargo build --release` and `cargo test --release` / `cargo bench` compile
//! DataFusion twice (each build takes about half an hour on two cores). This test compares
//! the resolved features of every package with and without the dev-dependencies.

use std::collections::BTreeSet;
use std::process::Command;

fn resolved(edges: &str) -> BTreeSet<String> {
    resolved_for("datafusion-anonymize", edges)
}

/// The packages and features `package` of the workspace resolves, one line each.
fn resolved_for(package: &str, edges: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--manifest-path",
            concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
            "-p",
            package,
            "-e",
            edges,
            "-f",
            "{p} {f}",
            "--prefix",
            "none",
        ])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| l.trim_end_matches(" (*)").to_string())
        .collect()
}

#[test]
fn dev_dependencies_change_no_feature_of_a_normal_dependency() {
    let normal = resolved("normal,build");
    let with_dev = resolved("normal,build,dev");
    let changed: Vec<&String> = normal.difference(&with_dev).collect();
    assert!(
        changed.is_empty(),
        "the dev-dependencies change these packages' features (turn the same features on in \
         [dependencies] so release and test builds share artifacts): {changed:#?}"
    );
}

/// The binaries behind features (`dfanon-server`, the Ballista scheduler and executor) are
/// built in the same cargo invocation as the tests, with the same features: their features
/// are on by default, so `cargo build --release`, `cargo test --release` and `cargo bench`
/// resolve one feature set (the server's crates change features of crates under
/// DataFusion, so a separate build of it would compile DataFusion again).
#[test]
fn the_feature_gated_binaries_are_in_the_default_build() {
    let normal = resolved("normal,build");
    let root = normal
        .iter()
        .find(|line| line.starts_with("datafusion-anonymize "))
        .expect("the package itself is listed");
    let features: Vec<&str> = root
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .split(',')
        .collect();
    for feature in ["ballista", "server"] {
        assert!(
            features.contains(&feature),
            "feature '{feature}' is not on by default: {root}"
        );
    }
}

/// The Python package (`python/`, built by maturin into the same build directory) resolves
/// every crate of the DataFusion stack with the features this crate's build has, so it
/// compiles only itself, pyo3 and datafusion-ffi on top of the build `cargo test --release`
/// made (arrow's `ffi` feature, which datafusion-ffi needs, is on in this crate for that).
#[test]
fn the_python_package_shares_the_datafusion_build() {
    let main = resolved("normal,build");
    let python = resolved_for("dfanon-python", "normal,build");
    let stack = |line: &&String| {
        [
            "datafusion",
            "arrow",
            "parquet",
            "object_store",
            "sqlparser",
            "tokio ",
            "ballista",
            "tonic",
            "prost",
            "petgraph",
            "indexmap",
        ]
        .iter()
        .any(|p| line.starts_with(p))
            && !line.starts_with("datafusion-ffi ")
    };
    let differing: Vec<&String> = python
        .iter()
        .filter(stack)
        .filter(|line| !main.contains(*line))
        .collect();
    assert!(
        differing.is_empty(),
        "the Python package resolves these with other features than this crate: {differing:#?}"
    );
    assert!(python.iter().any(|l| l.starts_with("datafusion v55.2.0 ")));
}
