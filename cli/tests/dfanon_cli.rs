//! The `dfanon` binary: exports through stdout stream every row (or exactly `--maxrows`),
//! `--public` registers for public users, Ctrl-C stops a running statement, the printing
//! and a COPY (removing its partial output), and `--memory-limit` bounds the
//! anonymization's aggregate.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The demo's hierarchies, in the repository's `sql/` (this package is `cli/` in it).
const HIERARCHIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sql/nps_hierarchies.sql");

fn dfanon() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dfanon"));
    command.arg("-q").arg("--no-progress");
    command
}

/// The public door's attacks, shared with every door's test (`tests/doors/`).
#[path = "../../tests/doors/attacks.rs"]
mod doors;

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
    // An explicit --maxrows writes exactly that many rows.
    for (format, lines) in [("csv", 11), ("tsv", 11), ("nd-json", 10)] {
        let (ok, stdout, stderr) = run(&["--format", format, "--maxrows", "10", "-c", ROWS]);
        assert!(ok, "{stderr}");
        assert_eq!(stdout.lines().count(), lines, "{format}: {stdout}");
    }
    let (ok, stdout, _) = run(&["--format", "json", "--maxrows", "1", "-c", ROWS]);
    assert!(ok);
    assert_eq!(stdout, "[{\"value\":1}]\n");
    // No rows: the header alone, an empty array.
    let empty = "SELECT value FROM generate_series(1, 0)";
    assert_eq!(run(&["--format", "csv", "-c", empty]).1, "value\n");
    assert_eq!(run(&["--format", "json", "-c", empty]).1, "[]\n");
}

/// Without `-q`, the banner, the row count and the statements between the queries print
/// nothing to stdout: an export redirected to a file holds only the rows.
#[test]
fn exports_through_stdout_hold_only_the_rows() {
    let output = Command::new(env!("CARGO_BIN_EXE_dfanon"))
        .args([
            "--no-progress",
            "--format",
            "csv",
            "-c",
            "SELECT 1 AS a; CREATE TABLE t AS SELECT 2 AS c; SELECT 'x;y' AS b",
        ])
        .output()
        .expect("run dfanon");
    assert!(output.status.success());
    // Nothing of the CREATE between the queries: no "0 row(s) fetched" line.
    assert_eq!(String::from_utf8_lossy(&output.stdout), "a\n1\nb\nx;y\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("dfanon "), "{stderr}");
    assert!(stderr.contains("1 row(s) written."), "{stderr}");
}

/// A query streams: its first rows reach a reader that stops after one line (`| head -1`)
/// long before the query could end, and dfanon then ends quietly.
#[test]
fn an_export_streams_and_ends_when_the_reader_goes() {
    let mut child = start(&["--format", "csv", "-c", ENDLESS], Stdio::piped());
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 8];
    std::io::Read::read_exact(&mut stdout, &mut first).expect("first bytes");
    assert_eq!(&first, b"value\n1\n");
    drop(stdout);
    let status = wait_at_most(&mut child, Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
}

/// Starts dfanon with `args`, its stdout to `stdout`.
fn start(args: &[&str], stdout: Stdio) -> std::process::Child {
    dfanon()
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dfanon")
}

/// Rows that would take hours to write.
const ENDLESS: &str = "SELECT value FROM generate_series(1, 100000000000)";

/// Waits for `child`, failing the test after `limit`.
fn wait_at_most(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("dfanon still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGINT to `child`.
#[cfg(unix)]
fn interrupt(child: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
}

/// Ctrl-C while rows are printed stops the printing and exits with status 130.
#[cfg(unix)]
#[test]
fn ctrl_c_stops_printing() {
    let mut child = start(&["--format", "csv", "-c", ENDLESS], Stdio::null());
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let status = wait_at_most(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{status:?}");
}

/// Ctrl-C, `kill` (SIGTERM) and a closed terminal (SIGHUP) during `COPY … TO 'x.csv'`
/// remove the partial file the copy was writing, and exit with the shell's status for the
/// signal.
#[cfg(unix)]
#[test]
fn an_interrupted_copy_leaves_no_partial_file() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129)] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let target = dir.path().join("x.csv");
        let copy = format!("COPY ({ENDLESS}) TO '{}'", target.to_string_lossy());
        let mut child = start(&["-c", &copy], Stdio::null());
        let listing = || -> Vec<String> {
            std::fs::read_dir(dir.path())
                .expect("list")
                .flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        };
        // Wait until the copy has written something.
        let start = Instant::now();
        while listing().is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "COPY wrote nothing"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        let status = wait_at_most(&mut child, Duration::from_secs(20));
        assert_eq!(status.code(), Some(code), "{signal}: {status:?}");
        assert_eq!(listing(), Vec::<String>::new(), "{signal}");
    }
}

/// Options are checked as their `SET` counterparts are, in the option's words, negative
/// numbers included; `RESET` of a budget setting says what to do.
#[test]
fn budget_and_size_options_say_what_is_wrong() {
    for (args, expected) in [
        (
            vec!["--memory-limit", "-1"],
            "memory limit '-1': expected a number",
        ),
        (
            vec!["--epsilon-budget", "-1"],
            "--epsilon-budget must be a number >= 0",
        ),
        (
            vec!["--delta-budget", "2"],
            "--delta-budget must be at most 1",
        ),
        (
            vec!["--ledger", " "],
            "--ledger must be a file path without leading or trailing spaces",
        ),
        (
            vec!["-c", "RESET anonymize.epsilon_budget"],
            "RESET is not supported for anonymize.* settings",
        ),
    ] {
        let mut all = args.clone();
        if !all.contains(&"-c") {
            all.extend(["-c", "SELECT 1"]);
        }
        let (ok, _, stderr) = run(&all);
        assert!(!ok, "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
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
    assert!(
        stderr.contains("SET anonymize.epsilon_budget is not available to public users"),
        "{stderr}"
    );
    // Without --ledger the budget lasts one process, and dfanon says so.
    let noted = |extra: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_dfanon"))
            .args(["--no-progress", "--public", "--epsilon-budget", "1"])
            .args(extra)
            .args(["-c", "SELECT 1"])
            .output()
            .expect("run dfanon");
        String::from_utf8_lossy(&output.stderr).contains("no --ledger file was given")
    };
    let ledger = tempfile::tempdir().expect("temp dir");
    let ledger = ledger.path().join("ledger.json");
    assert!(noted(&[]));
    assert!(!noted(&["--ledger", &ledger.to_string_lossy()]));
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

/// `dfanon --public --init setup.sql --policy policy.toml --epsilon-budget 1`: the owner's
/// setup runs first; the public session then releases what the policy allows and refuses
/// seeds, raw scans, DDL, COPY, kanon, the source as a hierarchy and a pairing the policy
/// does not make, and releases with a budget only.
#[test]
fn public_session_from_an_owner_setup() {
    let dir = tempfile::tempdir().expect("temp dir");
    let setup = dir.path().join("setup.sql");
    std::fs::write(
        &setup,
        "CREATE TABLE x(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B'), (50, 'M', 'A'), (30, 'F', 'A');
         CREATE VIEW x_hierarchy_age AS SELECT * FROM interval_hierarchy('0..100', '10', '50');
         CREATE TABLE x_hierarchy_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
         CREATE TABLE x_hierarchy_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*');",
    )
    .expect("write setup");
    let setup = setup.to_string_lossy().into_owned();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        r#"tables = ["x_hierarchy_*"]

[sources.x]
qi = { age = "x_hierarchy_age", sex = "x_hierarchy_sex" }
informative = { disease = "x_hierarchy_disease" }
max_epsilon = 0.5
"#,
    )
    .expect("write policy");
    let policy = policy.to_string_lossy().into_owned();
    let copy_target = dir.path().join("copy.csv").to_string_lossy().into_owned();
    let public = |budget: bool, sql: &str| {
        let mut args = vec!["--public", "--init", &setup, "--policy", &policy];
        if budget {
            args.extend(["--epsilon-budget", "1"]);
        }
        args.extend(["--format", "csv", "-c", sql]);
        run(&args)
    };
    let release = "SELECT COUNT(*) > 0 AS released FROM anonymize('x', method => 'dp_histogram', qi => 'age, sex', informative => 'disease:x_hierarchy_disease', epsilon => 0.5)";
    let (ok, stdout, stderr) = public(true, release);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("true"), "{stdout}");
    let copy = format!("COPY (SELECT * FROM x_hierarchy_sex) TO '{copy_target}'");
    for (sql, expected) in [
        (
            "SELECT * FROM anonymize('x', method => 'dp_histogram', qi => 'age, sex', informative => 'disease', seed => 1)",
            "argument 'seed' is not available to public users",
        ),
        ("SELECT * FROM x", "table 'datafusion.public.x' not found"),
        ("CREATE TABLE y AS SELECT 1", "CREATE TABLE is not available to public users"),
        (copy.as_str(), "COPY is not available to public users"),
        (
            "CREATE EXTERNAL TABLE z STORED AS CSV LOCATION 'z.csv'",
            "CREATE EXTERNAL TABLE is not available to public users",
        ),
        (
            "SET datafusion.catalog.default_schema = 'fresh1'",
            "SET datafusion.catalog.default_schema is not available to public users",
        ),
        (
            "SET datafusion.runtime.memory_limit = '28K'",
            "SET datafusion.runtime.memory_limit is not available to public users",
        ),
        ("RESET datafusion.execution.batch_size", "RESET is not available to public users"),
        (
            "SELECT * FROM anonymize('x', method => 'kanon', qi => 'age, sex', k => 1)",
            "method 'kanon' is not enabled for public users",
        ),
        (
            "SELECT * FROM anonymize('x', method => 'dp_histogram', qi => 'age:x, sex', informative => 'disease')",
            "hierarchy table 'x' for column 'age' is not one of the tables the data owner declared public",
        ),
        (
            "SELECT * FROM anonymize('x', method => 'dp_histogram', qi => 'age:x_hierarchy_sex, sex', informative => 'disease', epsilon => 0.5)",
            "quasi-identifier 'age' is generalized with the hierarchy 'x_hierarchy_age' for public users",
        ),
        (
            "SELECT * FROM anonymize('x', method => 'dp_histogram', qi => 'age, sex', informative => 'disease', epsilon => 0.6)",
            "epsilon must be at most 0.5 for public users of this source",
        ),
    ] {
        let (ok, _, stderr) = public(true, sql);
        assert!(!ok, "{sql} ran");
        assert!(stderr.contains(expected), "{sql}: {stderr}");
        assert!(!stderr.contains("guard"), "an internal name in {stderr}");
    }
    assert!(!std::path::Path::new(&copy_target).exists());
    let (ok, _, stderr) = public(false, release);
    assert!(!ok);
    assert!(
        stderr.contains("this session has no privacy budget"),
        "{stderr}"
    );
    // A policy with a mistake is named before anything runs.
    std::fs::write(
        &policy,
        "tables = [\"x_hierarchy_*\"]\n[sources.x]\nqi = { age = \"secret\" }\n",
    )
    .expect("write policy");
    let (ok, _, stderr) = public(true, release);
    assert!(!ok);
    assert!(
        stderr.contains("source 'x': column 'age' is bound to table 'secret', which is not among the public tables"),
        "{stderr}"
    );
}

/// The demo's release policy (`examples/nps_policy.toml`, what README shows) over the demo
/// data: a dp_histogram release within its ε range runs; one above it, or over a pairing
/// the policy does not make, is refused.
#[test]
fn the_demo_policy_releases_what_it_declares() {
    let dir = tempfile::tempdir().expect("temp dir");
    let setup = dir.path().join("setup.sql");
    std::fs::write(
        &setup,
        "CREATE TABLE nps AS SELECT * FROM nps_demo(5000, 3);",
    )
    .expect("write setup");
    let setup = setup.to_string_lossy().into_owned();
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/nps_policy.toml");
    let public = |sql: &str| {
        run(&[
            "--public",
            "--init",
            HIERARCHIES,
            "--init",
            &setup,
            "--policy",
            policy,
            "--epsilon-budget",
            "2",
            "--format",
            "csv",
            "-c",
            sql,
        ])
    };
    let (ok, stdout, stderr) = public(
        "SELECT COUNT(*) > 0 AS released FROM anonymize('nps', method => 'dp_histogram', qi => 'age, sex', informative => 'disease', epsilon => 0.5)",
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("true"), "{stdout}");
    for (sql, expected) in [
        (
            "SELECT * FROM anonymize('nps', method => 'dp_histogram', qi => 'age, sex', informative => 'disease', epsilon => 1.5)",
            "epsilon must be at most 1 for public users of this source",
        ),
        (
            "SELECT * FROM anonymize('nps', method => 'dp_histogram', qi => 'age:nps_hierarchy_los', informative => 'disease')",
            "quasi-identifier 'age' is generalized with the hierarchy 'nps_hierarchy_age' for public users",
        ),
        (
            "SELECT * FROM anonymize('nps', method => 'dp_histogram', qi => 'age', informative => 'disease', max_cells => 5)",
            "argument 'max_cells' of method 'dp_histogram' is fixed by the data owner for public users (max_cells => 2000000)",
        ),
    ] {
        let (ok, _, stderr) = public(sql);
        assert!(!ok, "{sql} ran");
        assert!(stderr.contains(expected), "{sql}: {stderr}");
    }
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_a_running_statement() {
    let mut child = start(
        &[
            "-c",
            "SELECT COUNT(*) FROM generate_series(1, 100000000000) a WHERE a.value % 7 = 3",
        ],
        Stdio::null(),
    );
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let status = wait_at_most(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{status:?}");
}

/// `--memory-limit` reaches the anonymization's aggregate over the source: far too little
/// memory fails with DataFusion's "Resources exhausted"; a limit under which that aggregate
/// spills to disk (checked with EXPLAIN ANALYZE) gives exactly the unlimited run's seeded
/// release; a malformed size is refused by name.
#[test]
fn memory_limit_bounds_the_anonymization() {
    // Two partitions whatever the machine, so the aggregate's memory needs are the same.
    let partitions = "SET datafusion.execution.target_partitions = 2";
    let setup = "CREATE VIEW nps AS SELECT * FROM nps_demo(rows => 200000)";
    let query =
        "SELECT COUNT(*) AS n, COUNT(DISTINCT age) AS ages, COUNT(DISTINCT disease) AS diseases, \
                 SUM(CASE WHEN sex = 'M' THEN 1 ELSE 0 END) AS males \
                 FROM anonymize('nps', method => 'ipa', qi => 'age, sex, los, surgery, location', \
                 informative => 'disease', epsilon => 1.0, seed => 7)";
    let run_with = |limit: Option<&str>, commands: &[&str]| {
        let mut args = vec!["--format", "csv", "-f", HIERARCHIES];
        if let Some(limit) = limit {
            // The fair pool gives each spilling operator its share, so whether the
            // aggregate spills does not depend on how its two partitions interleave (the
            // greedy pool spilled in about half of the runs at this limit).
            args.extend(["--memory-limit", limit, "--mem-pool-type", "fair"]);
        }
        args.push("-c");
        args.push(partitions);
        args.extend(commands);
        run(&args)
    };
    let (ok, unlimited, stderr) = run_with(None, &[setup, query]);
    assert!(ok, "{stderr}");
    assert!(unlimited.contains("\n2"), "{unlimited}");

    // The phase-1 aggregate (the quasi-identifiers and the informative column) spills
    // under SPILL_LIMIT ...
    let (ok, plan, stderr) = run_with(
        Some(SPILL_LIMIT),
        &[
            "EXPLAIN ANALYZE SELECT age, sex, los, surgery, location, disease, COUNT(*) \
           FROM nps_demo(rows => 200000) GROUP BY age, sex, los, surgery, location, disease",
        ],
    );
    assert!(ok, "{stderr}");
    let spills: u64 = plan
        .split("spill_count=")
        .skip(1)
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum();
    assert!(spills > 0, "no spill under {SPILL_LIMIT}: {plan}");
    // ... and the release computed under it is the unlimited one.
    for limit in ["64m", SPILL_LIMIT] {
        let (ok, limited, stderr) = run_with(Some(limit), &[setup, query]);
        assert!(ok, "--memory-limit {limit}: {stderr}");
        assert_eq!(limited, unlimited, "--memory-limit {limit}");
    }

    let (ok, _, stderr) = run_with(Some("4k"), &[setup, query]);
    assert!(!ok);
    assert!(stderr.contains("Resources exhausted"), "{stderr}");
    assert!(
        stderr.contains("more memory than --memory-limit allows"),
        "the option is named: {stderr}"
    );
    let (ok, _, stderr) = run(&["--memory-limit", "lots", "-c", "SELECT 1"]);
    assert!(!ok);
    assert!(stderr.contains("memory limit 'lots'"), "{stderr}");
}

/// A memory limit under which the 200,000-row phase-1 aggregate has to spill, with the fair
/// pool: 4 to 7 spills in each of ten runs (the greedy pool at 8 MB sometimes found no room
/// left, and at 12 MB spilled in only half of the runs).
const SPILL_LIMIT: &str = "12m";

#[test]
fn a_failing_script_statement_stops_the_script_and_exits_non_zero() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let script = dir.path().join("steps.sql");
    std::fs::write(
        &script,
        "#!/usr/bin/env dfanon\nSELECT 'ran' AS first;\nSELECT * FROM no_such_table;\nSELECT 'never' AS third;\n",
    )
    .expect("write script");
    let path = script.to_string_lossy().to_string();
    let (ok, stdout, stderr) = run(&["--format", "csv", "-f", &path]);
    assert!(!ok, "a failed statement makes dfanon fail: {stdout}");
    assert!(stdout.contains("ran"), "{stdout}");
    assert!(
        !stdout.contains("never"),
        "nothing runs after the failure: {stdout}"
    );
    assert!(
        stderr.contains("steps.sql") && stderr.contains("no_such_table"),
        "{stderr}"
    );
    // A missing file is an error naming it, not a panic.
    let (ok, _, stderr) = run(&["-f", "/nonexistent/steps.sql"]);
    assert!(!ok);
    assert!(
        stderr.contains("no such file: '/nonexistent/steps.sql'"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Statements piped in (`dfanon < script.sql`) run as a script: the first failing statement
/// stops it and dfanon exits non-zero, as with `-f`.
#[test]
fn piped_statements_stop_at_the_first_failure() {
    use std::io::Write;
    let mut child = dfanon()
        .args(["--format", "csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dfanon");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(
            b"SELECT 'ran' AS first;\nSELECT * FROM no_such_table;\nSELECT 'never' AS third;\n",
        )
        .expect("write statements");
    let output = child.wait_with_output().expect("wait for dfanon");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}");
    assert!(
        stdout.contains("ran") && !stdout.contains("never"),
        "{stdout}"
    );
    assert!(stderr.contains("no_such_table"), "{stderr}");
}

/// On a terminal, the interactive shell answers `RESET anonymize.*` as `-c` and `-f` do, not
/// with DataFusion's "Could not find config namespace". The terminal is a pseudo-terminal
/// from util-linux's `script`, which forwards our stdin to it.
#[test]
fn the_interactive_shell_explains_reset() {
    use std::io::Write;
    let command = format!("{} -q --no-progress", env!("CARGO_BIN_EXE_dfanon"));
    // The REPL keeps its history in `.history` of the working directory: a temporary one.
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut child = Command::new("script")
        .current_dir(dir.path())
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dfanon under script (util-linux)");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"RESET anonymize.epsilon_budget;\n")
        .expect("write");
    std::thread::sleep(Duration::from_millis(1500));
    stdin.write_all(b"\\q\n").expect("write");
    drop(stdin);
    let status = wait_at_most(&mut child, Duration::from_secs(30));
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut stdout)
        .expect("read");
    assert!(status.success(), "{stdout}");
    assert!(
        stdout.contains("RESET is not supported for anonymize.* settings")
            && !stdout.contains("Could not find config namespace"),
        "{stdout}"
    );
}

/// A folder of the working directory named like a table does not shadow it: `CREATE TABLE
/// big` and `SELECT * FROM big` mean the table, and the folder is read by its path.
#[test]
fn a_folder_named_like_a_table_does_not_shadow_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("big")).expect("folder");
    let output = dfanon()
        .current_dir(dir.path())
        .args([
            "-c",
            "COPY (SELECT 99 AS age, 'folder' AS dis) TO 'big/a.parquet' STORED AS PARQUET",
            "CREATE TABLE big(age INT, dis VARCHAR) AS VALUES (1, 'memory')",
            "SELECT dis FROM big",
            "SELECT dis FROM 'big/'",
        ])
        .output()
        .expect("run dfanon");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let memory = stdout.find("memory").expect("the table's row");
    let folder = stdout.find("folder").expect("the folder's row");
    assert!(memory < folder, "{stdout}");
}

/// `--pseudonym-key-file` gives the owner's key: the same patient gets the same pseudonym in
/// two runs with the same file and another one under another file; a short or missing file
/// is refused, naming it.
#[test]
fn a_pseudonym_key_file_keys_the_pseudonyms() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let key = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write key");
        path.to_string_lossy().into_owned()
    };
    let (a, b, short) = (
        key("a.key", &[3u8; 32]),
        key("b.key", &[4u8; 32]),
        key("s.key", b"tiny"),
    );
    let sql = "CREATE TABLE v(pid INT, age INT) AS VALUES (7, 31), (8, 32), (9, 33); \
               CREATE TABLE v_hierarchy_age AS SELECT * FROM interval_hierarchy('30..39', '10'); \
               SELECT pid FROM anonymize('v', method => 'kanon', qi => 'age', k => 3, identifiers => 'pid', identifier_mode => 'pseudonym') ORDER BY pid";
    let pseudonyms = |file: &str| {
        let (ok, stdout, stderr) =
            run(&["--pseudonym-key-file", file, "--format", "csv", "-c", sql]);
        assert!(ok, "{stderr}");
        let rows: Vec<String> = stdout.lines().skip(1).map(str::to_string).collect();
        assert_eq!(rows.len(), 3, "{stdout}");
        assert!(
            rows.iter()
                .all(|r| r.len() == 32 && !["7", "8", "9"].contains(&r.as_str())),
            "{stdout}"
        );
        rows
    };
    assert_eq!(pseudonyms(&a), pseudonyms(&a));
    assert_ne!(pseudonyms(&a), pseudonyms(&b));
    let (ok, _, stderr) = run(&["--pseudonym-key-file", &short, "-c", "SELECT 1"]);
    assert!(!ok);
    assert!(
        stderr.contains("a pseudonym key needs at least 16 bytes, got 4"),
        "{stderr}"
    );
    let missing = dir.path().join("missing.key");
    let (ok, _, stderr) = run(&[
        "--pseudonym-key-file",
        &missing.to_string_lossy(),
        "-c",
        "SELECT 1",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("--pseudonym-key-file: cannot read"),
        "{stderr}"
    );
}

/// A statement built to exhaust the stack (`1+1+…` with 20,000 terms, 40 KB) is refused by
/// name, with `-c` and piped in; dfanon exits with an error, not a crash, and a statement
/// after it in the REPL's own parsing path still runs on its large stack.
#[test]
fn a_deep_statement_is_refused_not_fatal() {
    use std::io::Write;
    let deep = format!("SELECT {}", vec!["1"; 20_000].join("+"));
    let (ok, _, stderr) = run(&["-c", &deep]);
    assert!(!ok);
    assert!(
        stderr.contains("expression nested too deeply: ") && stderr.contains("at most 1000"),
        "{}",
        &stderr[..stderr.len().min(300)]
    );
    let mut child = dfanon()
        .args(["--format", "csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dfanon");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{deep};\n").as_bytes())
        .expect("write statements");
    let output = child.wait_with_output().expect("wait for dfanon");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        &stderr[..stderr.len().min(300)]
    );
    assert!(
        stderr.contains("expression nested too deeply: "),
        "{}",
        &stderr[..stderr.len().min(300)]
    );
}

/// The public door's attacks (`tests/doors/`) through `dfanon --public`: one process per
/// statement, the owner's setup and the policy from the same files as every door, the
/// budget kept in a ledger file (so a refused `SET` cannot carry into the next statement,
/// and the budget holds across processes).
#[test]
fn the_reviewed_attacks_fail_through_dfanon_public() {
    let dir = tempfile::tempdir().expect("temp dir");
    let setup = dir.path().join("setup.sql");
    std::fs::write(&setup, doors::SETUP).expect("write setup");
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, doors::POLICY).expect("write policy");
    let (setup, policy) = (setup.to_string_lossy(), policy.to_string_lossy());
    let budget = doors::EPSILON_BUDGET.to_string();
    let outcomes = doors::SOURCES.map(|source| {
        let ledger = dir.path().join(format!("{source}.ledger.json"));
        let ledger = ledger.to_string_lossy();
        doors::attacks()
            .iter()
            .map(|attack| {
                let (ok, stdout, stderr) = run(&[
                    "--public",
                    "--init",
                    &setup,
                    "--policy",
                    &policy,
                    "--epsilon-budget",
                    &budget,
                    "--ledger",
                    &ledger,
                    "--format",
                    "csv",
                    "-c",
                    &attack.on(source),
                ]);
                if ok {
                    Ok(stdout)
                } else {
                    Err(stderr)
                }
            })
            .collect()
    });
    doors::check("dfanon --public", &outcomes);
}

/// A `COPY` of a release from dfanon writes its guarantee card beside the output, keyed by
/// the key file; a `COPY` of other rows over the same target removes it again.
#[test]
fn a_copy_of_a_release_writes_its_card() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let key = dir.path().join("k.key");
    std::fs::write(&key, [9u8; 32]).expect("write key");
    let setup = "CREATE TABLE v(pid INT, age INT) AS VALUES (7, 31), (8, 32), (9, 33), (10, 36); \
                 CREATE TABLE v_hierarchy_age AS SELECT * FROM interval_hierarchy('30..39', '5', '10')";
    let copy = "COPY (SELECT * FROM anonymize('v', method => 'kanon', qi => 'age', k => 2)) TO 'r.csv' STORED AS CSV";
    let output = dfanon()
        .current_dir(dir.path())
        .args([
            "--pseudonym-key-file",
            &key.to_string_lossy(),
            "-c",
            setup,
            copy,
        ])
        .output()
        .expect("run dfanon");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(dir.path().join("r.csv.manifest.json")).expect("the card");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let card = &manifest["releases"][0];
    assert_eq!(card["method"], "kanon");
    assert_eq!(card["released_rows"], 4);
    let fingerprint = card["source"]["fingerprint"].as_str().expect("keyed");
    assert!(fingerprint.starts_with("hmac-sha256:"), "{fingerprint}");
    let output = dfanon()
        .current_dir(dir.path())
        .args(["-c", "COPY (SELECT 1 AS x) TO 'r.csv' STORED AS CSV"])
        .output()
        .expect("run dfanon");
    assert!(output.status.success());
    assert!(!dir.path().join("r.csv.manifest.json").exists());
}
