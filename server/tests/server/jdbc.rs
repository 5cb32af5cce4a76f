//! pgJDBC, the driver of Java programs and of the BI tools built on it (DBeaver, Metabase,
//! Tableau's PostgreSQL connector): Debian's `libpostgresql-jdbc-java`, run from a Java
//! source file (`clients/Jdbc.java`) by Debian's JDK, both installed when missing.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use super::{from_the_distribution, outcome, psql, publish_nps_kanon, script, Rows, Site, Q1};

/// `java`, able to run a source file (the JDK's compiler module).
fn java() -> &'static PathBuf {
    static JAVA: OnceLock<PathBuf> = OnceLock::new();
    JAVA.get_or_init(|| {
        from_the_distribution(&["/usr/bin/javac"], "default-jdk-headless");
        PathBuf::from("/usr/bin/java")
    })
}

fn driver() -> &'static PathBuf {
    static JAR: OnceLock<PathBuf> = OnceLock::new();
    JAR.get_or_init(|| {
        from_the_distribution(
            &["/usr/share/java/postgresql.jar"],
            "libpostgresql-jdbc-java",
        )
    })
}

/// What `Jdbc.java --file` printed for the `count` statements of `file`.
fn jdbc_file(
    port: u16,
    user: &str,
    release: &str,
    file: &std::path::Path,
    count: usize,
) -> Vec<(String, Result<Rows, String>)> {
    let out = Command::new(java())
        .arg("-cp")
        .arg(driver())
        .arg(script("Jdbc.java"))
        .args([
            &port.to_string(),
            user,
            &format!("{user}-pw"),
            release,
            "--file",
        ])
        .arg(file)
        .output()
        .expect("java runs");
    let steps = parse(&out);
    assert_eq!(
        steps.len(),
        6 + count,
        "a line per step; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    steps
}

fn parse(out: &std::process::Output) -> Vec<(String, Result<Rows, String>)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            let step = value["step"].as_str().unwrap_or_default().to_string();
            (step, outcome(line))
        })
        .collect()
}

/// What `Jdbc.java` printed: each step's name and its rows or error.
fn jdbc(
    port: u16,
    user: &str,
    release: &str,
    statements: &[&[&str]],
) -> Vec<(String, Result<Rows, String>)> {
    let mut command = Command::new(java());
    command
        .arg("-cp")
        .arg(driver())
        .arg(script("Jdbc.java"))
        .args([&port.to_string(), user, &format!("{user}-pw"), release]);
    for (i, statement) in statements.iter().enumerate() {
        if i > 0 {
            command.arg("--");
        }
        command.args(statement.iter());
    }
    let out = command.output().expect("java runs");
    let steps = parse(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        steps.len(),
        6 + statements.len(),
        "a line per step; stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    steps
}

#[test]
fn pgjdbc_lists_the_published_release_and_binds_prepared_statements() {
    let site = Site::new();
    let server = site.start();
    publish_nps_kanon(&server);
    let count = "SELECT COUNT(*) FROM nps_kanon WHERE sex = 'M'";
    let by_psql = psql(server.postgres, "analyst", "analyst-pw", count).expect("psql counts");
    let q1 = psql(server.postgres, "analyst", "analyst-pw", Q1).expect("psql runs Q1");
    let q1_marked = Q1
        .replace("qi => 'age, sex, surgery'", "qi => ?")
        .replace("epsilon => 1.0", "epsilon => ?")
        .replace("sex = 'M'", "sex = ?");
    let steps = jdbc(
        server.postgres,
        "analyst2",
        "nps_kanon",
        &[
            &["SELECT COUNT(*) FROM nps_kanon WHERE sex = ?", "M"],
            &[&q1_marked, "age, sex, surgery", "double:1.0", "M"],
        ],
    );
    let rows = |name: &str| -> Rows {
        let (_, outcome) = steps
            .iter()
            .find(|(step, _)| step == name)
            .unwrap_or_else(|| panic!("no step {name}"));
        outcome
            .clone()
            .unwrap_or_else(|e| panic!("{name} failed: {e}"))
    };
    let text = |rows: &[&[&str]]| -> Rows {
        rows.iter()
            .map(|row| row.iter().map(|v| v.to_string()).collect())
            .collect()
    };
    assert_eq!(rows("schemas"), text(&[&["pg_catalog"], &["public"]]));
    // The public user sees the release and the policy's tables, not the source.
    let tables = rows("tables");
    assert!(tables.contains(&vec!["public".to_string(), "nps_kanon".to_string()]));
    assert!(!tables.iter().any(|t| t[1] == "nps"), "{tables:?}");
    assert_eq!(
        rows("columns"),
        text(&[
            &["age", "text"],
            &["sex", "text"],
            &["los", "text"],
            &["surgery", "text"],
            &["location", "text"],
            &["disease", "text"],
        ])
    );
    assert_eq!(rows("primary_keys"), Rows::new());
    let types: usize = rows("type_info")[0][0].parse().expect("a count");
    assert!(types > 10, "{types} types");
    assert_eq!(
        rows("SELECT COUNT(*) FROM nps_kanon WHERE sex = ?"),
        by_psql
    );
    assert_eq!(rows(&q1_marked), q1);
}

/// The catalog statements pgJDBC, DBeaver and Metabase send when they connect and list
/// schemas, tables and columns (`clients/catalog_statements.sql`) all answer, for the
/// owner and for a public user, whose listings hold the release and not the source.
#[test]
fn the_catalog_statements_of_dbeaver_metabase_and_pgjdbc_answer() {
    let site = Site::new();
    let server = site.start();
    publish_nps_kanon(&server);
    let file = script("catalog_statements.sql");
    let count = std::fs::read_to_string(&file)
        .expect("the statements")
        .lines()
        .filter(|l| {
            l.starts_with("-- ")
                && l.as_bytes().get(3).is_some_and(|c| b"ACM".contains(c))
                && l.as_bytes().get(4).is_some_and(u8::is_ascii_digit)
        })
        .count();
    for user in ["owner", "analyst2"] {
        let steps = jdbc_file(server.postgres, user, "nps_kanon", &file, count);
        let failed: Vec<_> = steps.iter().filter(|(_, o)| o.is_err()).collect();
        assert!(failed.is_empty(), "{user}: {failed:#?}");
        let rows = |name: &str| {
            steps
                .iter()
                .find(|(s, _)| s == name)
                .and_then(|(_, o)| o.clone().ok())
                .unwrap_or_else(|| panic!("no step {name}"))
        };
        // DBeaver's and Metabase's table lists hold the release; the source only for the owner.
        for list in ["A9", "M6"] {
            let at = if list == "A9" { 2 } else { 1 };
            let listed = rows(list);
            let names: Vec<&str> = listed.iter().map(|r| r[at].as_str()).collect();
            assert!(names.contains(&"nps_kanon"), "{user} {list}: {names:?}");
            assert_eq!(
                names.contains(&"nps"),
                user == "owner",
                "{user} {list}: {names:?}"
            );
        }
        // DBeaver's columns of the release: one row each.
        assert_eq!(rows("A10").len(), 6, "{user}");
        // Metabase's fields: the release's first column at position 0 (PostgreSQL's 1
        // less 1), its type in PostgreSQL's name; the source's only for the owner.
        let fields = rows("M9");
        assert!(
            fields
                .iter()
                .any(|f| f[..5] == ["age", "text", "0", "public", "nps_kanon"]),
            "{user}: {fields:?}"
        );
        assert_eq!(
            fields.iter().any(|f| f[4] == "nps"),
            user == "owner",
            "{user}: {fields:?}"
        );
    }
}
