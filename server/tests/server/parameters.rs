//! Statements with parameters (`$1`, …) that the client library binds on the server:
//! psycopg's default cursor (a prepared statement) and ADBC's Flight SQL prepared statement,
//! inside `anonymize(...)`'s arguments too, with the public door checking the bound
//! statement.

use std::process::Command;

use serde_json::{json, Value};

use super::{budget, outcome, psql, python, script, Rows, Site, Q1};

/// The outcomes of `statements` run by psycopg with server-side binding, the nth with the
/// nth list of `params`; each a named prepared statement when `prepare`.
fn bound(
    port: u16,
    user: &str,
    statements: &[&str],
    params: &[Value],
    prepare: bool,
) -> Vec<Result<Rows, String>> {
    bound_by("psycopg-bound", port, user, statements, params, prepare)
}

/// [`bound`] with the client `kind` (`psycopg-bound`, or `adbc-bound` on the Flight SQL
/// port).
fn bound_by(
    kind: &str,
    port: u16,
    user: &str,
    statements: &[&str],
    params: &[Value],
    prepare: bool,
) -> Vec<Result<Rows, String>> {
    let out = Command::new(python())
        .env("DFANON_PARAMS", Value::Array(params.to_vec()).to_string())
        .env("DFANON_PREPARE", if prepare { "1" } else { "0" })
        .arg(script("clients.py"))
        .args([kind, "127.0.0.1", &port.to_string(), user])
        .arg(format!("{user}-pw"))
        .args(statements)
        .output()
        .expect("python runs");
    let outcomes: Vec<Result<Rows, String>> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(outcome)
        .collect();
    assert_eq!(
        outcomes.len(),
        statements.len(),
        "one outcome per statement; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    outcomes
}

#[test]
fn parameters_bound_on_the_server_reach_anonymize_and_pass_the_public_door() {
    let site = Site::new();
    let server = site.start();
    let by_psql = psql(server.postgres, "analyst", "analyst-pw", Q1).expect("psql runs Q1");
    let women = Q1.replace("sex = 'M'", "sex = 'F'");
    let by_psql_women = psql(server.postgres, "analyst", "analyst-pw", &women).expect("Q1 for F");
    assert_ne!(by_psql, by_psql_women);

    // One named statement, parsed once and bound twice: a string, a float and the outer
    // WHERE's value, the last one different each time.
    let q1_bound = Q1
        .replace("epsilon => 1.0", "epsilon => %s")
        .replace("qi => 'age, sex, surgery'", "qi => %s")
        .replace("sex = 'M'", "sex = %s");
    let params = [
        json!(["age, sex, surgery", 1.0, "M"]),
        json!(["age, sex, surgery", 1.0, "F"]),
    ];
    let outcomes = bound(
        server.postgres,
        "analyst2",
        &[&q1_bound, &q1_bound],
        &params,
        true,
    );
    assert_eq!(outcomes, vec![Ok(by_psql.clone()), Ok(by_psql_women)]);
    // The same without naming the statement (an unnamed statement bound at once).
    let unnamed = bound(
        server.postgres,
        "analyst2",
        &[&q1_bound],
        &params[..1],
        false,
    );
    assert_eq!(unnamed, vec![Ok(by_psql)]);

    // The public door sees the bound statement: a method and a table the policy does not
    // publish are refused with the same words as when written in the statement.
    let kanon = Q1.replace("'dp_histogram'", "'kanon'");
    let raw = "SELECT COUNT(*) FROM nps WHERE sex = 'M'";
    let refused_literal = [
        psql(server.postgres, "analyst2", "analyst2-pw", &kanon),
        psql(server.postgres, "analyst2", "analyst2-pw", raw),
    ];
    let refused_bound = bound(
        server.postgres,
        "analyst2",
        &[
            &Q1.replace("'dp_histogram'", "%s"),
            &raw.replace("'M'", "%s"),
        ],
        &[json!(["kanon"]), json!(["M"])],
        false,
    );
    for (literal, bound) in refused_literal.iter().zip(&refused_bound) {
        let literal = literal
            .as_ref()
            .expect_err("refused when written in the statement");
        let bound = bound.as_ref().expect_err("refused when bound");
        assert!(
            literal.contains(bound.trim()),
            "the same refusal: psql said {literal:?}, psycopg {bound:?}"
        );
    }

    // The owner's integer argument, bound; a value of the wrong type is refused naming
    // its parameter, and nothing is charged for it.
    let count = "SELECT COUNT(*) FROM anonymize('nps', method => 'kanon', \
        qi => 'age, sex, surgery', k => %s) WHERE sex = %s";
    let owner = bound(
        server.postgres,
        "owner",
        &[count, count, count],
        &[json!([5, "M"]), json!([5, "M"]), json!([5.5, "M"])],
        true,
    );
    let literal = psql(
        server.postgres,
        "owner",
        "owner-pw",
        &count.replacen("%s", "5", 1).replacen("%s", "'M'", 1),
    )
    .expect("the owner's k-anonymous count");
    assert_eq!(owner[0], Ok(literal.clone()));
    assert_eq!(owner[1], Ok(literal));
    let wrong = owner[2].as_ref().expect_err("k = 5.5 is refused");
    assert!(wrong.contains("k"), "{wrong}");

    // The same over Flight SQL: ADBC prepares each statement and puts its values as one
    // Arrow row; the server makes them literals and hands the bound statement back as the
    // handle to run.
    let by_flight = bound_by(
        "adbc-bound",
        server.flight,
        "analyst2",
        &[&q1_bound, &q1_bound],
        &params,
        false,
    );
    assert_eq!(
        by_flight,
        vec![
            psql(server.postgres, "analyst", "analyst-pw", Q1),
            psql(server.postgres, "analyst", "analyst-pw", &women),
        ]
    );
    let refused_by_flight = bound_by(
        "adbc-bound",
        server.flight,
        "analyst2",
        &[
            &Q1.replace("'dp_histogram'", "%s"),
            &raw.replace("'M'", "%s"),
        ],
        &[json!(["kanon"]), json!(["M"])],
        false,
    );
    for (literal, bound) in refused_literal.iter().zip(&refused_by_flight) {
        let literal = literal.as_ref().expect_err("refused when written");
        let core = literal
            .trim()
            .trim_start_matches("ERROR:")
            .lines()
            .next()
            .unwrap_or_default()
            .trim();
        let bound = bound
            .as_ref()
            .expect_err("refused when bound over Flight SQL");
        assert!(
            !core.is_empty() && bound.contains(core),
            "the same refusal: psql said {literal:?}, ADBC {bound:?}"
        );
    }
    let owner_by_flight = bound_by(
        "adbc-bound",
        server.flight,
        "owner",
        &[count, count],
        &[json!([5, "M"]), json!([5.5, "M"])],
        false,
    );
    assert_eq!(owner_by_flight[0], owner[0]);
    let wrong = owner_by_flight[1].as_ref().expect_err("k = 5.5 is refused");
    assert!(wrong.contains("k"), "{wrong}");

    // Two releases in the ledger, ε 1 in all: the bound Q1s read the release psql drew,
    // and the owner's two k-anonymous counts are one release, at no ε.
    assert_eq!(
        budget(&server),
        vec![vec!["2".to_string(), "1.0".to_string()]]
    );
}
