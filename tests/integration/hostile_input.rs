//! Statements built to exhaust a thread's stack are refused by name before they are
//! parsed, through every door of the library; statements just under the bound run. A
//! public call cannot ask for more cells than a release may have rows.

use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{
    public_session, public_sql, register_with, run_script, script_dataframe, RegisterOptions,
    MAX_EXPRESSION_DEPTH,
};

/// `SELECT 1+1+…+1` with `terms` terms.
fn chain(terms: usize) -> String {
    format!("SELECT {}", vec!["1"; terms].join("+"))
}

/// The `WHERE v = '0' OR v = '1' OR …` a BI tool writes for `terms` chosen values.
fn or_list(terms: usize) -> String {
    let list: Vec<String> = (0..terms).map(|i| format!("v = '{i}'")).collect();
    format!(
        "SELECT COUNT(*) FROM (VALUES ('1'), ('2')) AS t(v) WHERE {}",
        list.join(" OR ")
    )
}

fn refused(result: Result<impl Sized>) -> String {
    match result {
        Ok(_) => "ran".to_string(),
        Err(e) => e.strip_backtrace(),
    }
}

#[tokio::test]
async fn deep_statements_are_refused_through_every_door() -> Result<()> {
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    let public = public_session(&owner, RegisterOptions::public(Default::default(), 1.0))?;
    for sql in [chain(5_000), or_list(2_000), chain(50_000)] {
        for (door, outcome) in [
            ("run_script", refused(run_script(&owner, &sql).await)),
            (
                "script_dataframe",
                refused(script_dataframe(&owner, &sql).await),
            ),
            ("public_sql", refused(public_sql(&public, &sql).await)),
        ] {
            assert!(
                outcome.starts_with("Error during planning: expression nested too deeply: ")
                    && outcome.contains(&format!("at most {MAX_EXPRESSION_DEPTH}")),
                "{door}: {}",
                &outcome[..outcome.len().min(200)]
            );
        }
    }
    // The session still answers, and shallower statements of the same shapes run, as do
    // long lists that are not deep.
    let batches = run_script(&owner, &chain(400)).await?;
    assert_eq!(batches[0].num_rows(), 1);
    let batches = run_script(&owner, &or_list(300)).await?;
    assert_eq!(batches[0].num_rows(), 1);
    let values: Vec<String> = (0..20_000).map(|i| format!("'{i}'")).collect();
    let in_list = format!(
        "SELECT COUNT(*) FROM (VALUES ('1'), ('2')) AS t(v) WHERE v IN ({})",
        values.join(", ")
    );
    let batches = run_script(&owner, &in_list).await?;
    assert_eq!(batches[0].num_rows(), 1);
    Ok(())
}

/// A public dp_histogram call asking for more cells than a public release may have rows
/// (`max_cells` above the policy's `max_release_rows`, or the default if larger) is refused
/// before anything is read or drawn, and charges nothing; at the limit it runs.
#[tokio::test]
async fn a_public_call_cannot_ask_for_more_cells_than_rows() -> Result<()> {
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    run_script(
        &owner,
        "CREATE TABLE t(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B');
         CREATE TABLE h_age(v VARCHAR, l1 VARCHAR) AS VALUES ('30', '*'), ('40', '*');
         CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
         CREATE TABLE h_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*');",
    )
    .await?;
    let policy = datafusion_anonymize::PublicPolicy {
        max_release_rows: 20_000_000,
        ..crate::common::h_policy(&["t"])
    };
    let public = public_session(&owner, RegisterOptions::public(policy, 10.0))?;
    let call = |cells: &str| {
        format!("SELECT COUNT(*) FROM anonymize('t', method => 'dp_histogram', qi => 'age, sex', informative => 'disease', epsilon => 1, max_cells => {cells})")
    };
    for cells in ["20000001", "1000000000000"] {
        let outcome = refused(public_sql(&public, &call(cells)).await);
        assert_eq!(
            outcome,
            format!("Error during planning: anonymize(): argument 'max_cells' of method 'dp_histogram' is {cells}; public users may give at most 20000000 (the larger of its default and the rows a public release may have)")
        );
    }
    let spent = public_sql(&public, "SELECT COUNT(*) AS n FROM privacy_budget()")
        .await?
        .collect()
        .await?;
    assert_eq!(spent[0].num_rows(), 1);
    assert_eq!(
        datafusion::arrow::util::pretty::pretty_format_batches(&spent)?.to_string(),
        "+---+\n| n |\n+---+\n| 0 |\n+---+"
    );
    let batches = public_sql(&public, &call("20000000"))
        .await?
        .collect()
        .await?;
    assert_eq!(batches[0].num_rows(), 1);
    Ok(())
}
