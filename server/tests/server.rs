//! `dfanon-server` with real clients: `psql`, psycopg 3 (PostgreSQL wire protocol),
//! adbc-driver-flightsql (Arrow Flight SQL) and Chromium (the studio), against a server
//! this test starts on loopback.
//!
//! The clients are installed when missing: `psql` and `chromium` from the distribution
//! (Debian's `postgresql-client` and `chromium`, when this runs as root with apt-get), the
//! Python packages with pip in a virtual environment under the build directory (made once,
//! reused by later runs).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_dfanon-server");

/// The README's analyst query: men without surgery by age, over a differentially private
/// histogram release (a method public users may call by default).
const Q1: &str =
    "SELECT age, COUNT(*) AS patients FROM anonymize('nps', method => 'dp_histogram', \
    qi => 'age, sex, surgery', epsilon => 1.0) \
    WHERE sex = 'M' AND surgery = 'N' GROUP BY age ORDER BY age";

const BUDGET: &str =
    "SELECT releases, epsilon_spent FROM privacy_budget() WHERE table_name = 'datafusion.public.nps'";

type Rows = Vec<Vec<String>>;

/// The warning of a `ROLLBACK` after statements ran in its block (`src/blocks.rs`).
const NOTHING_UNDONE: &str = "ROLLBACK ended the transaction block but undid nothing: this \
     server applies each statement when it runs (a release's privacy-budget charge, a \
     publication and a changed setting stay; a charge is never given back)";

/// The studio over HTTP.
#[path = "server/audit.rs"]
mod audit;
#[path = "server/directory.rs"]
mod directory;
#[path = "server/flight_metadata.rs"]
mod flight_metadata;
#[path = "server/jdbc.rs"]
mod jdbc;
#[path = "server/parameters.rs"]
mod parameters;
#[path = "server/studio.rs"]
mod studio;

/// The public door's attacks, shared with every door's test (`tests/doors/`).
#[path = "../../tests/doors/attacks.rs"]
mod doors;

/// A server process, killed when dropped.
struct Running {
    child: Child,
    postgres: u16,
    flight: u16,
    /// The studio's port, when the configuration has one.
    studio: Option<u16>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A folder with the setup script and a configuration; the users' passwords are their
/// names followed by "-pw".
struct Site {
    dir: tempfile::TempDir,
}

fn hash(password: &str) -> String {
    let mut child = Command::new(SERVER)
        .arg("hash-password")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("dfanon-server runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{password}\n").as_bytes())
        .expect("password written");
    let out = child.wait_with_output().expect("hash-password ends");
    assert!(out.status.success(), "hash-password failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

impl Site {
    fn new() -> Self {
        Self::with_settings("")
    }

    /// A site whose configuration also has `settings` (top-level keys, one per line).
    fn with_settings(settings: &str) -> Self {
        let setup = format!(
            "CREATE TABLE nps AS SELECT * FROM nps_demo(20000, 7);\n{}",
            include_str!("../../sql/nps_hierarchies.sql")
        );
        let settings = format!("epsilon_budget = 3\n{settings}");
        let public = r#"tables = ["nps_hierarchy_*"]
methods = ["ipa", "dp_histogram"]
allow_non_dp = true

[sources.nps]
qi = { age = "nps_hierarchy_age", sex = "nps_hierarchy_sex", los = "nps_hierarchy_los", surgery = "nps_hierarchy_surgery", location = "nps_hierarchy_location" }
informative = { disease = "nps_hierarchy_disease" }

[sources.nps.fixed.ipa]
qi = "age, sex, los, surgery, location"
informative = "disease"
epsilon = 1.0
"#;
        Self::with_parts(&setup, &settings, public)
    }

    /// A site from the owner's `setup` script, top-level `settings` and a release `policy`
    /// (a policy file's TOML, put under `[public]`).
    fn with_parts(setup: &str, settings: &str, policy: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("setup.sql"), setup).expect("setup written");
        let policy = policy.replace("\n[sources.", "\n[public.sources.");
        let config = format!(
            r#"postgres = "127.0.0.1:0"
flight_sql = "127.0.0.1:0"
init = ["setup.sql"]
ledger = "ledger.json"
{settings}

[public]
{policy}

[[user]]
name = "owner"
role = "owner"
password_hash = "{}"

[[user]]
name = "analyst"
role = "public"
password_hash = "{}"
epsilon_quota = 1.5

[[user]]
name = "analyst2"
role = "public"
password_hash = "{}"
"#,
            hash("owner-pw"),
            hash("analyst-pw"),
            hash("analyst2-pw")
        );
        std::fs::write(dir.path().join("server.toml"), config).expect("config written");
        Self { dir }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("server.toml")
    }

    fn start(&self) -> Running {
        start(&self.config()).unwrap_or_else(|log| panic!("the server did not start:\n{log}"))
    }
}

/// Starts the server with `config`; waits for its "listening" line (or its exit).
fn start(config: &Path) -> Result<Running, String> {
    start_under(config, &[])
}

/// [`start`], the server run by the command `wrapper` (e.g. `prlimit --nofile=…`) when
/// one is given.
fn start_under(config: &Path, wrapper: &[&str]) -> Result<Running, String> {
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(SERVER);
            command
        }
        None => Command::new(SERVER),
    };
    let mut child = command
        .arg("--config")
        .arg(config)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("dfanon-server runs");
    let stderr = child.stderr.take().expect("stderr");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("listening:") {
                let _ = tx.send(line.clone());
            }
            let mut log = sink.lock().unwrap_or_else(|p| p.into_inner());
            log.push_str(&line);
            log.push('\n');
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            let port = |name: &str| -> u16 {
                let rest = &line[line.find(name).expect("protocol named") + name.len()..];
                let address: String = rest
                    .chars()
                    .take_while(|c| !matches!(c, ',' | ' '))
                    .collect();
                address
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("a port")
            };
            let studio = line.find("studio on http").map(|at| {
                let rest = &line[at..];
                let address: String = rest
                    .split("://")
                    .nth(1)
                    .unwrap_or_default()
                    .chars()
                    .take_while(|c| *c != '/')
                    .collect();
                address
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("the studio's port")
            });
            return Ok(Running {
                postgres: port("PostgreSQL on "),
                flight: port("Flight SQL on "),
                studio,
                child,
            });
        }
        if let Ok(Some(_)) = child.try_wait() {
            std::thread::sleep(Duration::from_millis(200));
            return Err(log.lock().map(|l| l.clone()).unwrap_or_default());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(log.lock().map(|l| l.clone()).unwrap_or_default());
        }
    }
}

/// `psql`, installed from the distribution when missing.
fn psql_path() -> &'static PathBuf {
    static PSQL: OnceLock<PathBuf> = OnceLock::new();
    PSQL.get_or_init(|| {
        from_the_distribution(
            &["/usr/bin/psql", "/usr/local/bin/psql"],
            "postgresql-client",
        )
    })
}

/// The first of `paths` that exists, after installing Debian's `package` with apt-get
/// when none does (this must then run as root).
fn from_the_distribution(paths: &[&str], package: &str) -> PathBuf {
    // One apt-get at a time: tests that install run in parallel, and dpkg has one lock.
    static APT: Mutex<()> = Mutex::new(());
    let found = || paths.iter().map(PathBuf::from).find(|p| p.exists());
    if let Some(path) = found() {
        return path;
    }
    let _apt = APT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(path) = found() {
        return path;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    assert!(
        root && Path::new("/usr/bin/apt-get").exists(),
        "{} is not installed and this is not root with apt-get: install {package}",
        paths[0]
    );
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !install() {
        let _ = Command::new("apt-get").args(["update", "-q"]).status();
        assert!(install(), "apt-get install {package} failed");
    }
    found().unwrap_or_else(|| panic!("apt-get installed {package}, but {} is missing", paths[0]))
}

/// Runs `sql` with psql as `user`: its rows, or the error psql printed.
fn psql(port: u16, user: &str, password: &str, sql: &str) -> Result<Rows, String> {
    psql_with(psql_command("127.0.0.1"), port, user, password, sql)
}

/// psql for the server on `host`, with the environment of this process.
fn psql_command(host: &str) -> Command {
    let mut command = Command::new(psql_path());
    command.args(["-h", host]);
    command
}

/// Runs `sql` with `psql` (from [`psql_command`]) as `user`.
fn psql_with(
    mut psql: Command,
    port: u16,
    user: &str,
    password: &str,
    sql: &str,
) -> Result<Rows, String> {
    let out = psql
        .args(["-p", &port.to_string(), "-U", user, "-d", "datafusion"])
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-F",
            "|",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            sql,
        ])
        .env("PGPASSWORD", password)
        .env("PGCONNECT_TIMEOUT", "20")
        .output()
        .expect("psql runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect())
}

/// The Python of a virtual environment with psycopg, adbc-driver-flightsql and
/// websocket-client, made once under the build directory.
fn python() -> &'static PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("server-clients-venv");
        let python = venv.join("bin/python");
        let ready = || {
            python.exists()
                && Command::new(&python)
                    .args([
                        "-c",
                        "import psycopg, adbc_driver_flightsql.dbapi, cryptography, websocket",
                    ])
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false)
        };
        if ready() {
            return python.clone();
        }
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(made, "python3 -m venv failed");
        let installed = Command::new(&python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args([
                "psycopg[binary]>=3.2,<4",
                "adbc-driver-flightsql>=1.3,<2",
                "adbc-driver-manager>=1.3,<2",
                "pyarrow>=16",
                "cryptography>=42",
                // The DevTools protocol's socket, to drive Chromium (clients/browser.py).
                "websocket-client>=1.6,<2",
            ])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            installed && ready(),
            "pip install of the client libraries failed"
        );
        python.clone()
    })
}

/// The Python script `name` of `tests/clients`.
fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
}

/// The repository's top folder (this package is `server/` in it).
fn repository() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/..")
}

/// Runs `statements` with the Python client `kind` (`psycopg` or `adbc`) as `user`, one
/// connection for all of them.
fn client(
    kind: &str,
    port: u16,
    user: &str,
    password: &str,
    statements: &[&str],
) -> Vec<Result<Rows, String>> {
    client_with(kind, None, port, user, password, statements)
}

/// [`client`], with TLS checked against the authority `tls_root` when given.
fn client_with(
    kind: &str,
    tls_root: Option<&Path>,
    port: u16,
    user: &str,
    password: &str,
    statements: &[&str],
) -> Vec<Result<Rows, String>> {
    let mut command = Command::new(python());
    if let Some(root) = tls_root {
        command.env("DFANON_TLS_ROOT", root);
    }
    let out = command
        .arg(script("clients.py"))
        .args([kind, "127.0.0.1", &port.to_string(), user, password])
        .args(statements)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcomes: Vec<Result<Rows, String>> = stdout.lines().map(outcome).collect();
    assert_eq!(
        outcomes.len(),
        statements.len(),
        "{kind} printed {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    outcomes
}

/// One JSON line a client script printed: `{"rows": …}` or `{"error": "…"}`.
fn outcome(line: &str) -> Result<Rows, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
    match value.get("rows") {
        Some(rows) => Ok(serde_json::from_value(rows.clone()).expect("rows")),
        None => Err(value["error"].as_str().unwrap_or_default().to_string()),
    }
}

/// The owner publishes the k-anonymous release `nps_kanon` of the site's `nps`.
fn publish_nps_kanon(server: &Running) {
    let published = psql(
        server.postgres,
        "owner",
        "owner-pw",
        "SELECT name FROM anonymize_publish('nps_kanon', 'nps', method => 'kanon', \
         qi => 'age, sex, los, surgery, location', sensitive => 'disease', k => 10)",
    );
    assert_eq!(published, Ok(vec![vec!["nps_kanon".to_string()]]));
}

fn one(kind: &str, port: u16, user: &str, sql: &str) -> Result<Rows, String> {
    client(kind, port, user, &format!("{user}-pw"), &[sql]).remove(0)
}

fn budget(server: &Running) -> Rows {
    psql(server.postgres, "owner", "owner-pw", BUDGET).expect("the owner reads the budget")
}

#[test]
fn public_users_get_the_same_q1_rows_through_every_client_and_one_charge() {
    let site = Site::new();
    let server = site.start();
    assert_eq!(
        psql(
            server.postgres,
            "owner",
            "owner-pw",
            "SELECT COUNT(*) FROM nps"
        ),
        Ok(vec![vec!["20000".to_string()]])
    );
    let by_psql = psql(server.postgres, "analyst", "analyst-pw", Q1).expect("psql runs Q1");
    assert!(by_psql.len() >= 2, "Q1 has rows: {by_psql:?}");
    let by_psycopg = one("psycopg", server.postgres, "analyst2", Q1).expect("psycopg runs Q1");
    let by_adbc = one("adbc", server.flight, "analyst", Q1).expect("ADBC runs Q1");
    assert_eq!(by_psycopg, by_psql);
    assert_eq!(by_adbc, by_psql);
    // psycopg's default cursor binds its parameters on the server (a prepared statement,
    // whose `name => value` arguments the PostgreSQL dialect parses apart).
    let bound = Q1.replace("sex = 'M'", "sex = %s");
    assert_ne!(bound, Q1);
    assert_eq!(
        one("psycopg-bound", server.postgres, "analyst2", &bound),
        Ok(by_psql.clone())
    );
    // The same statement in upper case and through a prepared statement is the same release.
    let upper = Q1
        .replace("anonymize(", "ANONYMIZE(")
        .replace("SELECT", "select");
    assert_eq!(
        one("adbc", server.flight, "analyst2", &upper),
        Ok(by_psql.clone())
    );
    assert_eq!(
        budget(&server),
        vec![vec!["1".to_string(), "1.0".to_string()]]
    );
}

/// The public door's attacks (`tests/doors/`) through both protocols: psql (a connection
/// per statement), psycopg and ADBC over Flight SQL (one connection for all), one after the
/// other on one server, whose ledger they share (a release one client drew is the same
/// release for the next, with no new charge).
#[test]
fn the_reviewed_attacks_fail_through_both_protocols() {
    let settings = format!("epsilon_budget = {}", doors::EPSILON_BUDGET);
    let site = Site::with_parts(doors::SETUP, &settings, doors::POLICY);
    let server = site.start();
    let text = |outcome: Result<Rows, String>| outcome.map(|rows| format!("{rows:?}"));
    let attacks = doors::attacks();
    let psql_outcomes = doors::SOURCES.map(|source| {
        attacks
            .iter()
            .map(|attack| {
                text(psql(
                    server.postgres,
                    "analyst2",
                    "analyst2-pw",
                    &attack.on(source),
                ))
            })
            .collect()
    });
    doors::check("psql", &psql_outcomes);
    for (kind, port) in [("psycopg", server.postgres), ("adbc", server.flight)] {
        let outcomes = doors::SOURCES.map(|source| {
            let statements: Vec<String> = attacks.iter().map(|a| a.on(source)).collect();
            let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
            client(kind, port, "analyst2", "analyst2-pw", &statements)
                .into_iter()
                .map(text)
                .collect()
        });
        doors::check(kind, &outcomes);
    }
}

#[test]
fn public_users_cannot_write_set_or_reach_owner_functions() {
    let site = Site::new();
    let server = site.start();
    let refused = [
        ("SELECT * FROM nps", "nps"),
        ("CREATE TABLE copy AS SELECT 1 AS a", "not available to public users"),
        ("CREATE VIEW v AS SELECT 1 AS a", "not available to public users"),
        ("DROP TABLE nps", "not available to public users"),
        ("INSERT INTO nps_hierarchy_sex VALUES ('X', '*')", "not available to public users"),
        ("SET anonymize.epsilon_budget = 100", "not available to public users"),
        ("SET datafusion.execution.batch_size = 1", "not available to public users"),
        ("SELECT * FROM anonymize_diagnostics('nps', method => 'ipa', qi => 'age, sex', informative => 'disease', epsilon => 1.0)", "anonymize_diagnostics"),
        ("SELECT COUNT(*) FROM anonymize('nps', method => 'ipa', qi => 'age, sex', informative => 'disease', epsilon => 1.0, seed => 7)", "seed"),
        ("SELECT COUNT(*) FROM anonymize('nps', method => 'kanon', qi => 'age, sex', informative => 'disease', k => 2)", "kanon"),
    ];
    for (sql, says) in refused {
        let by_psql = psql(server.postgres, "analyst", "analyst-pw", sql);
        assert!(
            by_psql.as_ref().is_err_and(|e| e.contains(says)),
            "psql: {sql} gave {by_psql:?}"
        );
        let by_adbc = one("adbc", server.flight, "analyst", sql);
        assert!(
            by_adbc.as_ref().is_err_and(|e| e.contains(says)),
            "ADBC: {sql} gave {by_adbc:?}"
        );
    }
    // Nothing was drawn or charged, and the owner's tables are as they were.
    assert_eq!(budget(&server), Vec::<Vec<String>>::new());
    assert_eq!(
        psql(
            server.postgres,
            "owner",
            "owner-pw",
            "SELECT COUNT(*) FROM nps_hierarchy_sex"
        ),
        Ok(vec![vec!["2".to_string()]])
    );
    // psql's relation listing (`\d`, read from pg_catalog) shows the published tables only.
    let listed = psql(server.postgres, "analyst", "analyst-pw", "\\d")
        .expect("psql lists tables")
        .into_iter()
        .map(|row| row.get(1).cloned().unwrap_or_default())
        .collect::<Vec<_>>();
    assert!(
        listed.contains(&"nps_hierarchy_sex".to_string()),
        "{listed:?}"
    );
    assert!(!listed.contains(&"nps".to_string()), "{listed:?}");
    let listed = psql(server.postgres, "owner", "owner-pw", "\\d").expect("psql lists tables");
    assert!(
        listed
            .iter()
            .any(|row| row.get(1).is_some_and(|t| t == "nps")),
        "{listed:?}"
    );
    // Reads of published tables work through both protocols.
    let published = "SELECT value FROM nps_hierarchy_sex ORDER BY value";
    let rows = vec![vec!["F".to_string()], vec!["M".to_string()]];
    assert_eq!(
        psql(server.postgres, "analyst", "analyst-pw", published),
        Ok(rows.clone())
    );
    assert_eq!(one("adbc", server.flight, "analyst", published), Ok(rows));
}

#[test]
fn wrong_passwords_and_unknown_users_are_refused_alike() {
    let site = Site::new();
    let server = site.start();
    // pgwire's message leaves the user name out; the words are the same for both.
    let refused = |outcome: &Result<Rows, String>| {
        outcome.as_ref().is_err_and(|e| {
            e.to_lowercase()
                .contains("password authentication failed for user")
        })
    };
    for (user, password) in [
        ("analyst", "wrong"),
        ("nobody", "analyst-pw"),
        ("owner", "analyst-pw"),
    ] {
        let by_psql = psql(server.postgres, user, password, "SELECT 1");
        assert!(refused(&by_psql), "psql as {user}: {by_psql:?}");
        let outcomes = [
            client("psycopg", server.postgres, user, password, &["SELECT 1"]).remove(0),
            client("adbc", server.flight, user, password, &["SELECT 1"]).remove(0),
        ];
        for outcome in outcomes {
            assert!(refused(&outcome), "{user}: {outcome:?}");
        }
    }
    assert_eq!(
        psql(server.postgres, "analyst", "analyst-pw", "SELECT 1"),
        Ok(vec![vec!["1".to_string()]])
    );
}

#[test]
fn quotas_and_the_table_budget_hold_across_both_protocols_and_a_kill() {
    let site = Site::new();
    let server = site.start();
    let dp = |epsilon: &str, levels: &str| {
        format!(
            "SELECT COUNT(*) FROM anonymize('nps', method => 'dp_histogram', qi => 'age, sex, los, surgery, location', informative => 'disease:nps_hierarchy_disease', epsilon => {epsilon}, levels => '{levels}')"
        )
    };
    let coarse = "age=3, sex=1, los=3, surgery=1, location=3";
    let fine = "age=2, sex=1, los=3, surgery=1, location=3";
    // analyst's quota is 1.5: one release of epsilon 1, then a second is refused.
    let first = psql(server.postgres, "analyst", "analyst-pw", &dp("1.0", coarse));
    assert!(first.is_ok(), "{first:?}");
    let second = one("adbc", server.flight, "analyst", &dp("1.0", fine));
    assert!(
        second
            .as_ref()
            .is_err_and(|e| e.contains("privacy quota exceeded for user 'analyst'")),
        "{second:?}"
    );
    // The same request as analyst's first is served to analyst2 without a charge.
    assert!(one("psycopg", server.postgres, "analyst2", &dp("1.0", coarse)).is_ok());
    assert_eq!(
        budget(&server),
        vec![vec!["1".to_string(), "1.0".to_string()]]
    );
    // analyst2 has no quota; the table's budget of 3 is for everyone together.
    assert!(one("adbc", server.flight, "analyst2", &dp("1.5", fine)).is_ok());
    let over = psql(
        server.postgres,
        "analyst2",
        "analyst2-pw",
        &dp("1.0", "age=1, sex=1, los=3, surgery=1, location=3"),
    );
    assert!(
        over.as_ref()
            .is_err_and(|e| e.contains("privacy budget exceeded")),
        "{over:?}"
    );
    assert_eq!(
        budget(&server),
        vec![vec!["2".to_string(), "2.5".to_string()]]
    );
    // The ledger is a file: killed (SIGKILL) and started again, the server still knows the
    // spending, and a release drawn before is the same release, drawn again from its kept
    // seed with no new charge (for both users); a new request is still refused.
    let mut server = server;
    let _ = server.child.kill();
    let _ = server.child.wait();
    let again = site.start();
    assert_eq!(
        budget(&again),
        vec![vec!["2".to_string(), "2.5".to_string()]]
    );
    assert_eq!(
        one("adbc", again.flight, "analyst2", &dp("1.0", coarse)),
        first
    );
    assert_eq!(
        psql(again.postgres, "analyst", "analyst-pw", &dp("1.0", coarse)),
        first
    );
    assert_eq!(
        budget(&again),
        vec![vec!["2".to_string(), "2.5".to_string()]]
    );
    let over = one(
        "adbc",
        again.flight,
        "analyst2",
        &dp("1.0", "age=1, sex=1, los=2, surgery=1, location=3"),
    );
    assert!(over.is_err(), "{over:?}");
}

#[test]
fn the_owners_failed_settings_are_errors() {
    let site = Site::new();
    let server = site.start();
    let bad = psql(
        server.postgres,
        "owner",
        "owner-pw",
        "SET anonymize.epsilon_budget = 'lots'",
    );
    assert!(
        bad.as_ref().is_err_and(|e| e.contains("epsilon_budget")),
        "{bad:?}"
    );
    let unknown = psql(
        server.postgres,
        "owner",
        "owner-pw",
        "SET anonymize.budget = 1",
    );
    assert!(unknown.is_err(), "{unknown:?}");
    assert_eq!(
        psql(
            server.postgres,
            "owner",
            "owner-pw",
            "SET anonymize.epsilon_budget = 2"
        ),
        Ok(vec![])
    );
}

#[test]
fn a_plaintext_password_in_the_configuration_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("server.toml");
    std::fs::write(
        &config,
        "postgres = \"127.0.0.1:0\"\n[[user]]\nname = \"owner\"\nrole = \"owner\"\npassword_hash = \"hunter2\"\n",
    )
    .expect("written");
    let log = match start(&config) {
        Ok(_) => panic!("the server started with a plaintext password"),
        Err(log) => log,
    };
    assert!(
        log.contains("user 'owner': password_hash is not of the form scram-sha-256$4096$<salt>$<hash>; store the hash that `dfanon-server hash-password` prints, never the password"),
        "{log}"
    );
}

/// README's example configuration, on free ports and with its ledger in a temporary
/// folder: psql and ADBC get the same Q1 rows over the 1.36 M-row NPS demo data, and the
/// owner's ledger shows one charge. Then the server is killed (`kill -9`) while it computes
/// another release, and started again: its ledger reads back, with that release's charge
/// or without it, and Q1 is the same release again, not charged again.
#[test]
fn the_readme_example_serves_q1_to_psql_and_adbc_with_one_charge() {
    let root = repository();
    let dir = tempfile::tempdir().expect("temp dir");
    let example = std::fs::read_to_string(format!("{root}/examples/server/server.toml"))
        .expect("the example configuration");
    let config = example
        .replace("\"127.0.0.1:5433\"", "\"127.0.0.1:0\"")
        .replace("\"127.0.0.1:50061\"", "\"127.0.0.1:0\"")
        .replace("\"127.0.0.1:8080\"", "\"127.0.0.1:0\"")
        .replace(
            "[\"../../sql/nps_hierarchies.sql\", \"setup.sql\"]",
            &format!("[\"{root}/sql/nps_hierarchies.sql\", \"{root}/examples/server/setup.sql\"]"),
        )
        .replace(
            "\"../../tests/data/adult\"",
            &format!("\"{root}/tests/data/adult\""),
        )
        .replace("\"server-ledger.json\"", "\"ledger.json\"")
        .replace("\"server-audit.jsonl\"", "\"audit.jsonl\"");
    assert_ne!(config, example);
    let path = dir.path().join("server.toml");
    std::fs::write(&path, config).expect("written");
    let server = start(&path).unwrap_or_else(|log| panic!("the example did not start:\n{log}"));
    let by_psql = psql(server.postgres, "analyst", "analyst-demo", Q1).expect("psql runs Q1");
    assert!(by_psql.len() >= 5, "{by_psql:?}");
    let by_adbc = client("adbc", server.flight, "analyst2", "analyst2-demo", &[Q1]).remove(0);
    assert_eq!(by_adbc, Ok(by_psql.clone()));
    // The example keeps an audit trail: both statements are in it.
    let trail = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("the audit trail");
    assert_eq!(
        trail
            .lines()
            .filter(|l| l.contains("\"event\":\"statement\"") && l.contains("dp_histogram"))
            .count(),
        2,
        "{trail}"
    );
    assert_eq!(
        psql(server.postgres, "owner", "owner-demo", BUDGET),
        Ok(vec![vec!["1".to_string(), "1.0".to_string()]])
    );
    assert!(dir.path().join("ledger.json").exists());

    let mut server = server;
    let port = server.postgres;
    let slow = Q1.replace("epsilon => 1.0", "epsilon => 0.5");
    let running = std::thread::spawn(move || psql(port, "analyst", "analyst-demo", &slow));
    std::thread::sleep(Duration::from_millis(1500));
    let _ = server.child.kill();
    let _ = server.child.wait();
    let cut = running.join().expect("the client thread ends");
    let again = start(&path).unwrap_or_else(|log| panic!("the restart failed:\n{log}"));
    let after_kill =
        psql(again.postgres, "owner", "owner-demo", BUDGET).expect("the ledger reads back");
    let charged = match after_kill.as_slice() {
        [row] if row == &vec!["1".to_string(), "1.0".to_string()] => 1,
        [row] if row == &vec!["2".to_string(), "1.5".to_string()] => 2,
        other => panic!("the ledger after kill -9: {other:?}"),
    };
    // A release that was delivered was charged (the charge precedes the draw).
    assert!(cut.is_err() || charged == 2, "{cut:?} with {after_kill:?}");
    // Q1's draw was kept beside the ledger: the restarted server draws it again from its
    // seed, the same rows, and charges nothing more.
    assert_eq!(
        psql(again.postgres, "analyst2", "analyst2-demo", Q1),
        Ok(by_psql)
    );
    let after = psql(again.postgres, "owner", "owner-demo", BUDGET).expect("budget");
    assert_eq!(after, after_kill);
}

/// Server CPU time (user + system) in seconds, from `/proc`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) end with ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds the server spends over `wait`.
fn cpu_over(server: &Running, wait: Duration) -> f64 {
    let before = cpu_seconds(server.child.id());
    std::thread::sleep(wait);
    cpu_seconds(server.child.id()) - before
}

/// A statement that runs for ever: rows streamed, or one count at the end.
const ENDLESS_ROWS: &str = "SELECT * FROM generate_series(1, 9223372036854775807)";
const ENDLESS_COUNT: &str = "SELECT COUNT(*) FROM generate_series(1, 9223372036854775807)";

/// After `warm_up`, the server works for `client` (over 0.3 s of CPU in 1 s); once
/// `client` is killed, it stops (under 0.2 s in 2 s).
fn stops_when_killed(server: &Running, mut client: Child, warm_up: Duration, who: &str) {
    std::thread::sleep(warm_up);
    let busy = cpu_over(server, Duration::from_millis(1000));
    assert!(
        busy > 0.3,
        "the server works for {who}: {busy} s of CPU in 1 s"
    );
    let _ = client.kill();
    let _ = client.wait();
    std::thread::sleep(Duration::from_millis(700));
    let idle = cpu_over(server, Duration::from_millis(2000));
    assert!(idle < 0.2, "the server stopped: {idle} s of CPU in 2 s");
}

#[test]
fn a_client_that_goes_away_stops_its_statement() {
    let site = Site::new();
    let server = site.start();
    // psql reading an endless stream of rows, then killed.
    let reader = psql_command("127.0.0.1")
        .args([
            "-p",
            &server.postgres.to_string(),
            "-U",
            "analyst",
            "-d",
            "datafusion",
        ])
        .args(["-X", "-q", "-A", "-t", "-c", ENDLESS_ROWS])
        .env("PGPASSWORD", "analyst-pw")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("psql runs");
    stops_when_killed(&server, reader, Duration::from_millis(1000), "psql");

    // ADBC waiting for an endless count (nothing sent yet), then killed.
    let counter = Command::new(python())
        .arg(script("clients.py"))
        .args([
            "adbc",
            "127.0.0.1",
            &server.flight.to_string(),
            "analyst",
            "analyst-pw",
        ])
        .arg(ENDLESS_COUNT)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python runs");
    stops_when_killed(&server, counter, Duration::from_millis(3000), "ADBC");
    // The server serves on.
    assert_eq!(
        psql(server.postgres, "analyst", "analyst-pw", "SELECT 1"),
        Ok(vec![vec!["1".to_string()]])
    );
}

#[test]
fn ctrl_c_in_psql_cancels_the_statement_under_way() {
    let site = Site::new();
    let server = site.start();
    for (user, password) in [("analyst", "analyst-pw"), ("owner", "owner-pw")] {
        let counter = psql_command("127.0.0.1")
            .args([
                "-p",
                &server.postgres.to_string(),
                "-U",
                user,
                "-d",
                "datafusion",
            ])
            .args(["-X", "-q", "-A", "-t", "-c", ENDLESS_COUNT])
            .env("PGPASSWORD", password)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("psql runs");
        std::thread::sleep(Duration::from_millis(1500));
        let busy = cpu_over(&server, Duration::from_millis(1000));
        assert!(
            busy > 0.3,
            "{user}: the server works: {busy} s of CPU in 1 s"
        );
        // What Ctrl-C does: psql sends a cancel request on a second connection.
        let interrupted = Command::new("kill")
            .args(["-INT", &counter.id().to_string()])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(interrupted, "kill -INT psql");
        let out = counter.wait_with_output().expect("psql ends");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("canceling statement due to user request"),
            "{user}: psql said {said}"
        );
        std::thread::sleep(Duration::from_millis(500));
        let idle = cpu_over(&server, Duration::from_millis(2000));
        assert!(
            idle < 0.2,
            "{user}: the server stopped: {idle} s of CPU in 2 s"
        );
    }
}

#[test]
fn a_public_statement_past_its_time_is_stopped_and_gives_its_slot_back() {
    let site = Site::with_settings(
        "public_statement_timeout_seconds = 2\npublic_concurrent_statements = 1",
    );
    let server = site.start();
    let says = "canceling statement due to statement timeout: a public user's statement may run 2 s (public_statement_timeout_seconds)";
    for (name, outcome) in [
        (
            "psql",
            psql(server.postgres, "analyst", "analyst-pw", ENDLESS_ROWS),
        ),
        (
            "psql",
            psql(server.postgres, "analyst", "analyst-pw", ENDLESS_COUNT),
        ),
        ("ADBC", one("adbc", server.flight, "analyst", ENDLESS_COUNT)),
    ] {
        assert!(
            outcome.as_ref().is_err_and(|e| e.contains(says)),
            "{name}: {outcome:?}"
        );
    }
    // The one slot is free again: a public statement runs at once.
    let started = Instant::now();
    assert_eq!(
        one("psycopg", server.postgres, "analyst", "SELECT 1"),
        Ok(vec![vec!["1".to_string()]])
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The owner has no time limit and no slot to wait for.
    let owner = std::thread::spawn({
        let port = server.postgres;
        move || {
            psql(
                port,
                "owner",
                "owner-pw",
                "SELECT COUNT(*) FROM generate_series(1, 300000000)",
            )
        }
    });
    assert_eq!(
        owner.join().expect("the owner's thread ends"),
        Ok(vec![vec!["300000000".to_string()]])
    );
}

#[test]
fn a_failed_login_runs_nothing_sent_after_it() {
    let site = Site::new();
    let server = site.start();
    let out = Command::new(python())
        .arg(script("failed_login.py"))
        .args(["127.0.0.1", &server.postgres.to_string(), "owner"])
        .arg("CREATE TABLE broken_in AS SELECT 1 AS a")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcome: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(
        outcome["login"]
            .as_str()
            .is_some_and(|l| l.starts_with("FATAL 28P01")),
        "{outcome}"
    );
    // Whatever the server answered after the refusal, it was no success.
    for answer in outcome["after"].as_array().cloned().unwrap_or_default() {
        let answer = answer.as_str().unwrap_or_default();
        assert!(!matches!(answer, "C" | "T" | "D"), "{outcome}");
    }
    assert_eq!(
        psql(
            server.postgres,
            "owner",
            "owner-pw",
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'broken_in'"
        ),
        Ok(vec![vec!["0".to_string()]])
    );
}

#[test]
fn with_tls_both_protocols_are_encrypted_and_checked_and_plaintext_is_refused() {
    let site = Site::with_settings("tls_cert = \"cert.pem\"\ntls_key = \"key.pem\"");
    let made = Command::new(python())
        .arg(script("make_cert.py"))
        .arg(site.dir.path())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(made, "make_cert.py failed");
    let ca = site.dir.path().join("ca.pem");
    let server = site.start();
    let mut verified = psql_command("localhost");
    verified
        .env("PGSSLMODE", "verify-full")
        .env("PGSSLROOTCERT", &ca);
    let by_psql = psql_with(
        verified,
        server.postgres,
        "analyst",
        "analyst-pw",
        "SELECT value FROM nps_hierarchy_sex ORDER BY value",
    );
    let rows = vec![vec!["F".to_string()], vec!["M".to_string()]];
    assert_eq!(by_psql, Ok(rows.clone()));
    for (kind, port) in [("psycopg", server.postgres), ("adbc", server.flight)] {
        let outcome = client_with(
            kind,
            Some(&ca),
            port,
            "analyst",
            "analyst-pw",
            &["SELECT value FROM nps_hierarchy_sex ORDER BY value"],
        )
        .remove(0);
        assert_eq!(outcome, Ok(rows.clone()), "{kind}");
    }
    // Without TLS: refused by the server (PostgreSQL) or not understood (Flight SQL).
    let mut plain = psql_command("127.0.0.1");
    plain.env("PGSSLMODE", "disable");
    let refused = psql_with(plain, server.postgres, "analyst", "analyst-pw", "SELECT 1");
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("this server accepts only connections with TLS")),
        "{refused:?}"
    );
    let plain_flight = one("adbc", server.flight, "analyst", "SELECT 1");
    assert!(plain_flight.is_err(), "{plain_flight:?}");
    // A client that trusts another authority does not connect.
    let other = tempfile::tempdir().expect("temp dir");
    let made = Command::new(python())
        .arg(script("make_cert.py"))
        .arg(other.path())
        .arg("another authority")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(made, "make_cert.py failed");
    let mut untrusted = psql_command("localhost");
    untrusted
        .env("PGSSLMODE", "verify-full")
        .env("PGSSLROOTCERT", other.path().join("ca.pem"));
    let refused = psql_with(
        untrusted,
        server.postgres,
        "analyst",
        "analyst-pw",
        "SELECT 1",
    );
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("certificate verify failed")),
        "{refused:?}"
    );
    let untrusted_flight = client_with(
        "adbc",
        Some(&other.path().join("ca.pem")),
        server.flight,
        "analyst",
        "analyst-pw",
        &["SELECT 1"],
    )
    .remove(0);
    assert!(untrusted_flight.is_err(), "{untrusted_flight:?}");
}

#[test]
fn public_statements_fuzzed_through_both_protocols_leave_the_server_serving() {
    fuzz_both_protocols(1500, 400, None);
}

/// The fuzzing of public statements for a while (`FUZZ_SECONDS`, default 600 per
/// protocol): `cargo test --release -p dfanon-server --test server -- --ignored`.
#[test]
#[ignore = "long fuzzing run; see its documentation"]
fn fuzz_public_statements_for_a_while() {
    let seconds: f64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600.0);
    fuzz_both_protocols(usize::MAX, usize::MAX, Some(seconds));
}

fn fuzz_both_protocols(psycopg: usize, adbc: usize, seconds: Option<f64>) {
    let site = Site::with_settings(
        "public_statement_timeout_seconds = 3\npublic_concurrent_statements = 2",
    );
    let mut server = site.start();
    for (kind, port, count, seed) in [
        ("psycopg", server.postgres, psycopg, "11"),
        ("adbc", server.flight, adbc, "12"),
    ] {
        let mut command = Command::new(python());
        command
            .arg(script("fuzz.py"))
            .args([
                kind,
                "127.0.0.1",
                &port.to_string(),
                "analyst",
                "analyst-pw",
                seed,
            ])
            .arg(count.to_string());
        if let Some(seconds) = seconds {
            command.arg(seconds.to_string());
        }
        let out = command.output().expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
            panic!("{kind}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr))
        });
        eprintln!("fuzz {kind}: {summary}");
        assert_eq!(summary["lost"], serde_json::json!([]), "{kind}: {summary}");
        assert!(summary["rows"].as_u64() > Some(10), "{kind}: {summary}");
        assert!(summary["errors"].as_u64() > Some(10), "{kind}: {summary}");
        assert!(
            matches!(server.child.try_wait(), Ok(None)),
            "the server ended during the {kind} run"
        );
    }
    // The owner's tables are as they were, and Q1 still runs for a public user.
    assert_eq!(
        psql(
            server.postgres,
            "owner",
            "owner-pw",
            "SELECT COUNT(*) FROM nps"
        ),
        Ok(vec![vec!["20000".to_string()]])
    );
    assert_eq!(
        psql(
            server.postgres,
            "owner",
            "owner-pw",
            "SELECT COUNT(*) FROM nps_hierarchy_sex"
        ),
        Ok(vec![vec!["2".to_string()]])
    );
    assert!(psql(server.postgres, "analyst2", "analyst2-pw", Q1).is_ok());
    let _ = server.child.kill();
}

/// Resident memory of the server in MB, from `/proc`.
fn rss_mb(server: &Running) -> f64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

#[test]
fn connections_that_ended_leave_nothing_behind() {
    let site = Site::new();
    let server = site.start();
    let connect = |user: &str| {
        let sql = "SELECT COUNT(*) FROM nps_hierarchy_sex";
        assert!(psql(server.postgres, user, &format!("{user}-pw"), sql).is_ok());
    };
    // The first connections make what every later one shares.
    for _ in 0..8 {
        connect("analyst");
        connect("owner");
    }
    let before = rss_mb(&server);
    for _ in 0..32 {
        connect("analyst");
        connect("owner");
    }
    let after = rss_mb(&server);
    // A public session kept after its connection ended held about 5 MB (its pg_catalog):
    // 32 of them would add 160 MB.
    assert!(
        after - before < 24.0,
        "64 connections later the server holds {:.0} MB more ({before:.0} -> {after:.0} MB)",
        after - before
    );
}

/// What the review's hostile clients did, as tests: far more sockets than the server may
/// hold, none of them logging in, against a server started under a small open-file limit;
/// statements nested deep enough to exhaust a stack, through both protocols (logins past a
/// user's limit: `logins_past_a_users_limit_are_refused_by_name`). The server refuses each
/// by name, never exits, closes the idle sockets at the login timeout, and then serves a
/// normal query.
#[test]
fn hostile_connections_and_statements_leave_the_server_serving() {
    let site = Site::with_settings(
        "max_connections = 40\nmax_connections_per_user = 2\nlogin_timeout_seconds = 8",
    );
    let server = start_under(&site.config(), &["prlimit", "--nofile=96:96"])
        .unwrap_or_else(|log| panic!("the server did not start:\n{log}"));
    let sql = "SELECT COUNT(*) FROM nps_hierarchy_sex";
    // 300 sockets that never log in: 40 are held, the others refused at once (and some
    // not even accepted while the open-file limit is reached).
    let mut idle = Vec::new();
    for _ in 0..300 {
        if let Ok(socket) = std::net::TcpStream::connect(("127.0.0.1", server.postgres)) {
            idle.push(socket);
        }
        if let Ok(socket) = std::net::TcpStream::connect(("127.0.0.1", server.flight)) {
            idle.push(socket);
        }
    }
    let full = psql(server.postgres, "analyst", "analyst-pw", sql);
    assert!(
        full.as_ref().is_err_and(|e| e.contains("too many clients")),
        "{full:?}"
    );
    // At the login timeout the idle ones are closed, and the server serves again.
    std::thread::sleep(Duration::from_secs(10));
    assert!(psql(server.postgres, "analyst", "analyst-pw", sql).is_ok());
    drop(idle);
    // Statements built to exhaust a stack: refused by name, over both protocols.
    let deep = format!("SELECT {}", vec!["1"; 2_000].join("+"));
    let or_list: Vec<String> = (0..2_000).map(|i| format!("v = '{i}'")).collect();
    let bi = format!(
        "SELECT COUNT(*) FROM (VALUES ('1')) AS t(v) WHERE {}",
        or_list.join(" OR ")
    );
    for statement in [&deep, &bi] {
        let refused = psql(server.postgres, "analyst", "analyst-pw", statement);
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("expression nested too deeply")),
            "{:?}",
            refused.map_err(|e| e.chars().take(300).collect::<String>())
        );
        let by_adbc = one("adbc", server.flight, "analyst", statement);
        assert!(
            by_adbc
                .as_ref()
                .is_err_and(|e| e.contains("expression nested too deeply")),
            "{:?}",
            by_adbc.map_err(|e| e.chars().take(300).collect::<String>())
        );
    }
    assert!(psql(server.postgres, "analyst", "analyst-pw", sql).is_ok());
    assert!(server_alive(&server));
}

/// A user's logins past `max_connections_per_user` are refused by name, on a server no
/// flood has touched (after the flood of the hostile test, CI twice let a third login in).
#[test]
fn logins_past_a_users_limit_are_refused_by_name() {
    let site = Site::with_settings("max_connections_per_user = 2");
    let server = site.start();
    let sql = "SELECT COUNT(*) FROM nps_hierarchy_sex";
    // psql is started again until it has answered a statement on its login.
    let holding: Vec<Child> = (0..2)
        .map(|_| hold_login(server.postgres, "analyst2", "analyst2-pw"))
        .collect();
    let third = psql(server.postgres, "analyst2", "analyst2-pw", sql);
    // Refused while connecting ("connection to server … failed: FATAL: …"), never told
    // it logged in first.
    assert!(
        third.as_ref().is_err_and(|e| e.contains("failed: FATAL:")
            && e.contains("too many connections for user \"analyst2\"")),
        "{third:?}"
    );
    for mut child in holding {
        let _ = child.kill();
        let _ = child.wait();
    }
    // Once they are gone (the server sees their sockets close), the user logs in again.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut again = psql(server.postgres, "analyst2", "analyst2-pw", sql);
    while again.is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        again = psql(server.postgres, "analyst2", "analyst2-pw", sql);
    }
    assert_eq!(again, Ok(vec![vec!["2".to_string()]]));
}

/// A psql session of `user`, logged in and waiting for statements on its standard input:
/// psql is started again (for up to 30 s) until it answers a first statement.
fn hold_login(port: u16, user: &str, password: &str) -> Child {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut child = psql_command("127.0.0.1")
            .args(["-p", &port.to_string(), "-U", user, "-d", "datafusion"])
            .args(["-X", "-A", "-t", "-f", "-"])
            .env("PGPASSWORD", password)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("psql runs");
        let mut stdin = child.stdin.take().expect("psql's input");
        let answered = writeln!(stdin, "SELECT 'held';").is_ok() && {
            let mut line = String::new();
            let stdout = child.stdout.take().expect("psql's output");
            // psql either answers or ends (its output closes) when the login is refused.
            BufReader::new(stdout).read_line(&mut line).is_ok() && line.trim() == "held"
        };
        if answered {
            child.stdin = Some(stdin);
            return child;
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            Instant::now() < deadline,
            "{user} could not log in for 30 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn server_alive(server: &Running) -> bool {
    std::path::Path::new(&format!("/proc/{}", server.child.id())).exists()
}

/// `SET statement_timeout` is honoured for the whole statement, owner and public user
/// alike (it was accepted and ignored): a statement past it stops with PostgreSQL's text,
/// and the connection goes on.
#[test]
fn a_connections_statement_timeout_is_honoured() {
    let site = Site::new();
    let server = site.start();
    for (user, password) in [("owner", "owner-pw"), ("analyst", "analyst-pw")] {
        let started = Instant::now();
        let out = psql_command("127.0.0.1")
            .args([
                "-p",
                &server.postgres.to_string(),
                "-U",
                user,
                "-d",
                "datafusion",
                "-X",
                "-q",
            ])
            .args([
                "-c",
                "SET statement_timeout = 1000",
                "-c",
                ENDLESS_COUNT,
                "-c",
                "SELECT 'still here'",
            ])
            .env("PGPASSWORD", password)
            .output()
            .expect("psql runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stderr.contains(
                "canceling statement due to statement timeout (statement_timeout = 1000 ms)"
            ),
            "{user}: {stderr}"
        );
        assert!(stdout.contains("still here"), "{user}: {stdout}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{user}: {:?}",
            started.elapsed()
        );
    }
}

/// Runs `blocks.py` (psycopg in its default mode: a named cursor, rollback, a change inside
/// a block) as `user`; what the client saw.
fn blocks(port: u16, user: &str, query: &str, change: Option<&str>) -> serde_json::Value {
    let out = Command::new(python())
        .arg(script("blocks.py"))
        .args(["127.0.0.1", &port.to_string(), user, &format!("{user}-pw")])
        .arg(query)
        .args(change)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "blocks.py printed {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// psql's stderr for `statements`, each its own `-c` on one connection.
fn psql_stderr(port: u16, statements: &[&str]) -> String {
    let mut command = psql_command("127.0.0.1");
    command.args([
        "-p",
        &port.to_string(),
        "-U",
        "owner",
        "-d",
        "datafusion",
        "-X",
        "-q",
    ]);
    for sql in statements {
        command.args(["-c", sql]);
    }
    let out = command
        .env("PGPASSWORD", "owner-pw")
        .output()
        .expect("psql runs");
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn named_cursors_describe_their_columns_and_rollback_says_it_undid_nothing() {
    let site = Site::new();
    let server = site.start();
    let by_psql = psql(server.postgres, "analyst", "analyst-pw", Q1).expect("psql runs Q1");
    assert!(by_psql.len() >= 3, "Q1 has rows: {by_psql:?}");

    // psycopg's named cursor reads the same release, two rows at a time, with its columns;
    // the block psycopg opened is rolled back with a warning, and the charge stays.
    let seen = blocks(server.postgres, "analyst2", Q1, None);
    assert_eq!(seen["columns"], serde_json::json!(["age", "patients"]));
    let first_two: Rows = serde_json::from_value(seen["first_two"].clone()).expect("rows");
    let rest: Rows = serde_json::from_value(seen["rest"].clone()).expect("rows");
    assert_eq!([first_two, rest].concat(), by_psql);
    assert_eq!(seen["status_in_block"], "INTRANS");
    assert_eq!(seen["status_after_rollback"], "IDLE");
    assert_eq!(
        seen["rollback_notices"],
        serde_json::json!([["WARNING", NOTHING_UNDONE]])
    );
    assert_eq!(
        budget(&server),
        vec![vec!["1".to_string(), "1.0".to_string()]]
    );

    // The owner's change of tables is refused inside a block, and runs outside one.
    let change = "CREATE TABLE kept AS SELECT 1 AS one";
    let seen = blocks(server.postgres, "owner", "SELECT 1 AS one", Some(change));
    assert_eq!(
        seen["change_in_block"],
        serde_json::json!([
            "25001",
            "CREATE TABLE cannot run inside a transaction block: this server cannot roll it \
             back; run it after COMMIT or ROLLBACK"
        ])
    );
    assert_eq!(seen["change_outside"], "ran");
    assert_eq!(
        psql(server.postgres, "owner", "owner-pw", "SELECT one FROM kept"),
        Ok(vec![vec!["1".to_string()]])
    );

    // A connection's open cursors are bounded (each holds a running query).
    let declares: Vec<String> = (0..65)
        .map(|i| format!("DECLARE c{i} CURSOR FOR SELECT {i}"))
        .collect();
    let declares: Vec<&str> = declares.iter().map(String::as_str).collect();
    assert_eq!(
        psql_stderr(server.postgres, &declares),
        "ERROR:  a connection may have at most 64 cursors open; CLOSE one first\n"
    );

    // A block that ran nothing ends quietly; one that ran a statement warns (psql).
    assert_eq!(psql_stderr(server.postgres, &["BEGIN", "ROLLBACK"]), "");
    assert_eq!(
        psql_stderr(server.postgres, &["BEGIN", "SELECT 1", "ROLLBACK"]),
        format!("WARNING:  {NOTHING_UNDONE}\n")
    );
}

/// The server's peak resident memory so far (`VmHWM`), in MB.
fn peak_rss_mb(server: &Running) -> f64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The soak: under an open-file limit of 1,024, 2,000 sockets that never log in, then 300
/// logins that stay idle, then 50 clients querying at once (20 queries each) — all held
/// open together. The server stays up, every querying client is answered, its p99 latency
/// and its peak memory stay within the bounds asserted here (the figures are printed, and
/// docs/SERVER.md quotes them).
#[test]
fn a_soak_of_idle_sockets_idle_logins_and_busy_clients_leaves_the_server_serving() {
    let site = Site::with_settings(
        "max_connections = 500\nmax_connections_per_user = 400\nlogin_timeout_seconds = 5",
    );
    let server = start_under(&site.config(), &["prlimit", "--nofile=1024:1024"])
        .unwrap_or_else(|log| panic!("the server did not start:\n{log}"));
    let started_mb = peak_rss_mb(&server);
    let out = Command::new("prlimit")
        .arg("--nofile=8192:8192")
        .arg(python())
        .arg(script("soak.py"))
        .args([
            "127.0.0.1",
            &server.postgres.to_string(),
            "analyst2",
            "analyst2-pw",
        ])
        .args(["2000", "12", "300", "50", "20"])
        .arg("SELECT value, level_1 FROM nps_hierarchy_age ORDER BY value")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "soak.py printed {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let peak_mb = peak_rss_mb(&server);
    eprintln!(
        "soak: {report} server_rss_at_start_mb={started_mb:.0} server_peak_rss_mb={peak_mb:.0}"
    );
    assert!(server_alive(&server));
    assert_eq!(report["sockets"], 2000, "{report}");
    assert_eq!(report["logins"], 300, "{report}");
    assert_eq!(report["queries"], 50 * 20, "{report}");
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    let p99 = report["p99_ms"].as_f64().unwrap_or(f64::MAX);
    // Measured: p99 165 and 204 ms, peak 366 and 365 MB (docs/SERVER.md); the bounds leave
    // room for a slower machine, and fail if an idle login costs megabytes again (the
    // review's 5.7 MB each would be 1.7 GB for these 300).
    assert!(p99 < 1_500.0, "p99 {p99} ms: {report}");
    assert!(peak_mb < 800.0, "peak {peak_mb:.0} MB: {report}");
    // And it answers a fresh client afterwards.
    assert_eq!(
        psql(
            server.postgres,
            "analyst",
            "analyst-pw",
            "SELECT COUNT(*) FROM nps_hierarchy_sex"
        ),
        Ok(vec![vec!["2".to_string()]])
    );
}
