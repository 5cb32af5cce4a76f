//! The `dfanon` binary: exports through stdout keep every row, `--public` registers for
//! public users, and Ctrl-C stops a running statement.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn dfanon() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dfanon"));
    command.arg("-q").arg("--no-progress");
    command
}

fn run(args: &[&str]) -> (bool, String, String) {
    let output = dfanon().args(args).output().expect("run dfanon");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const ROWS: &str = "SELECT value FROM generate_series(1, 20000)";

#[test]
fn non_table_formats_write_every_row() {
    for (format, expected_lines) in [("csv", 20_001), ("tsv", 20_001), ("nd-json", 20_000)] {
        let (ok, stdout, stderr) = run(&["--format", format, "-c", ROWS]);
        assert!(ok, "{format}: {stderr}");
        let lines = stdout.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(lines, expected_lines, "{format}");
    }
    let (ok, stdout, stderr) = run(&["--format", "json", "-c", ROWS]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.matches("\"value\"").count(), 20_000);
    // An explicit --maxrows still limits them.
    let (ok, stdout, _) = run(&["--format", "csv", "--maxrows", "10", "-c", ROWS]);
    assert!(ok);
    assert!(stdout.lines().count() < 20_000);
}

#[test]
fn table_format_says_how_many_rows_it_did_not_show() {
    let output = Command::new(env!("CARGO_BIN_EXE_dfanon"))
        .args(["--no-progress", "--format", "table", "-c", ROWS])
        .output()
        .expect("run dfanon");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("20000 row(s) fetched. (First 40 displayed."),
        "{stdout}"
    );
}

#[test]
fn public_mode_withholds_owner_functions_and_settings() {
    let (ok, _, stderr) = run(&["--public", "-c", "SET anonymize.epsilon_budget = 5"]);
    assert!(!ok);
    assert!(stderr.contains("registered for public users"), "{stderr}");
    let (ok, stdout, stderr) = run(&[
        "--public",
        "--epsilon-budget",
        "0.5",
        "--format",
        "csv",
        "-c",
        "SELECT value FROM information_schema.df_settings WHERE name = 'anonymize.epsilon_budget'",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("0.5"), "{stdout}");
    let (ok, stdout, stderr) = run(&[
        "--public",
        "--format",
        "csv",
        "-c",
        "SELECT DISTINCT function FROM anonymize_help() WHERE function = 'anonymize_diagnostics'",
    ]);
    assert!(ok, "{stderr}");
    assert!(!stdout.contains("anonymize_diagnostics"), "{stdout}");
    // The owner (the default) has them.
    let (ok, _, stderr) = run(&["-c", "SET anonymize.epsilon_budget = 5"]);
    assert!(ok, "{stderr}");
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_a_running_statement() {
    let mut child = dfanon()
        .args([
            "-c",
            "SELECT COUNT(*) FROM generate_series(1, 100000000000) a WHERE a.value % 7 = 3",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dfanon");
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert_eq!(status.code(), Some(130), "{status:?}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "dfanon still running 20 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
