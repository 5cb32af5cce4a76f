//! The Python package (`python/`) across the real FFI boundary: builds its wheel with
//! maturin into this build directory (so it shares this build's DataFusion), installs it
//! with the PyPI `datafusion` wheel in a virtual environment under the build directory
//! (made once, reused by later runs), and runs its pytest suite (`python/tests`).
//!
//! The suite compares a seeded release with the one the `dfanon` binary makes, so both
//! are handed to it: `DFANON_BIN` (the binary) and `DFANON_WHEEL` (the wheel, which one
//! test installs beside a `datafusion` of another major version).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The packages the suite runs with; `datafusion` is the major version this crate uses.
const PACKAGES: &[&str] = &[
    "maturin>=1.9,<2",
    "pytest>=8",
    "pandas>=2",
    "pyarrow>=16",
    "datafusion>=55,<56",
];

fn target_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is <target dir>/tmp.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the build directory")
        .to_path_buf()
}

fn run(command: &mut Command, what: &str) {
    let status = command.status().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(status.success(), "{what} failed: {status}");
}

/// A virtual environment with [`PACKAGES`]; its Python.
fn venv() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv");
    let python = venv.join("bin/python");
    let check = "import maturin, pytest, pandas, pyarrow, datafusion; \
        assert datafusion.__version__.startswith('55.')";
    let ready = || {
        python.exists()
            && Command::new(&python)
                .args(["-c", check])
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
    };
    if !ready() {
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        );
        run(
            Command::new(&python)
                .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
                .args(PACKAGES),
            "pip install of the test packages",
        );
        assert!(ready(), "the test packages do not import");
    }
    python
}

/// Builds the wheel with maturin (release profile, this build directory) and installs it.
fn wheel(python: &Path) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-wheels");
    let _ = std::fs::remove_dir_all(&out);
    // cargo gives this test process variables of its own (CARGO_MANIFEST_DIR, CARGO_PKG_*,
    // ...), and build scripts under DataFusion rerun when such a variable changes: with
    // them, the nested build would compile DataFusion again, and the next `cargo test` once
    // more. So maturin gets the environment cargo was started with.
    let mut maturin = Command::new(python);
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(set_by_cargo_for_tests) {
            maturin.env_remove(key);
        }
    }
    run(
        maturin
            .args([
                "-m",
                "maturin",
                "build",
                "--release",
                "--quiet",
                "--manifest-path",
            ])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/Cargo.toml"))
            .arg("--out")
            .arg(&out)
            .env("CARGO_TARGET_DIR", target_dir()),
        "maturin build",
    );
    let wheel = std::fs::read_dir(&out)
        .expect("the wheel folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("maturin made a wheel");
    run(
        Command::new(python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(["--force-reinstall", "--no-deps"])
            .arg(&wheel),
        "pip install of the wheel",
    );
    wheel
}

/// Whether cargo sets the variable `key` for the test processes it runs (and not the user).
fn set_by_cargo_for_tests(key: &str) -> bool {
    [
        "CARGO",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ]
    .contains(&key)
        || key.starts_with("CARGO_PKG_")
        || key.starts_with("CARGO_BIN_EXE_")
}

#[test]
fn the_python_package_passes_its_tests() {
    let python = venv();
    let wheel = wheel(&python);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository holds this package");
    run(
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(root.join("python/tests"))
            .current_dir(root)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("DFANON_BIN", env!("CARGO_BIN_EXE_dfanon"))
            .env("DFANON_WHEEL", &wheel)
            .env(
                "DFANON_SCRATCH",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-scratch"),
            ),
        "pytest python/tests",
    );
}
