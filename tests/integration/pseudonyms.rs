//! Direct identifiers (`identifiers => ..., identifier_mode => 'pseudonym'`): pseudonyms are
//! stable across the releases of one registration, keyed (another key, another pseudonym),
//! never the value itself, and refused where they would break a guarantee.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{register_with, PseudonymKey, RegisterOptions};

const SETUP: &str = "
CREATE TABLE v(pid INT, name VARCHAR, age INT, sex VARCHAR, disease VARCHAR) AS VALUES
  (101, 'Ann', 31, 'M', 'flu'), (101, 'Ann', 31, 'M', 'cold'), (102, 'Bo', 32, 'M', 'flu'),
  (103, 'Cy', 36, 'F', 'cold'), (104, 'Di', 37, 'F', 'flu'), (105, 'Ed', 33, 'M', 'flu'),
  (106, 'Fa', 38, 'F', 'cold');
CREATE TABLE v_hierarchy_age AS SELECT * FROM interval_hierarchy('30..49', '5', '10');
CREATE TABLE v_hierarchy_sex(a VARCHAR, b VARCHAR) AS VALUES ('M', '*'), ('F', '*');
";

async fn owner(key: Option<&[u8]>) -> Result<SessionContext> {
    let ctx = SessionContext::new();
    let mut options = RegisterOptions::owner();
    options.pseudonym_key = key.map(PseudonymKey::new).transpose()?;
    register_with(&ctx, options)?;
    datafusion_anonymize::run_script(&ctx, SETUP).await?;
    Ok(ctx)
}

/// `(age, sex, pid)` of every released row, sorted.
async fn rows(ctx: &SessionContext, sql: &str) -> Result<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    for batch in ctx.sql(sql).await?.collect().await? {
        let col = |i: usize| cast(batch.column(i), &DataType::Utf8);
        let (a, s, p) = (col(0)?, col(1)?, col(2)?);
        for r in 0..batch.num_rows() {
            out.push((
                a.as_string::<i32>().value(r).to_string(),
                s.as_string::<i32>().value(r).to_string(),
                p.as_string::<i32>().value(r).to_string(),
            ));
        }
    }
    out.sort();
    Ok(out)
}

const K2: &str = "SELECT age, sex, pid FROM anonymize('v', method => 'kanon', qi => 'age, sex', k => 2, identifiers => 'pid, name', identifier_mode => 'pseudonym')";
const K3: &str = "SELECT age, sex, pid FROM anonymize('v', method => 'kanon', qi => 'age, sex', k => 3, identifiers => 'pid', identifier_mode => 'pseudonym', sensitive => 'disease')";

#[tokio::test]
async fn pseudonyms_are_stable_keyed_and_never_the_value() -> Result<()> {
    let a = owner(Some(&[1u8; 32])).await?;
    let first = rows(&a, K2).await?;
    let second = rows(&a, K3).await?;
    assert_eq!(first.len(), 7);
    // The same persons get the same pseudonyms in two different releases.
    let ids = |r: &[(String, String, String)]| {
        let mut p: Vec<String> = r.iter().map(|x| x.2.clone()).collect();
        p.sort();
        p
    };
    assert_eq!(ids(&first), ids(&second));
    let distinct: std::collections::BTreeSet<String> = ids(&first).into_iter().collect();
    assert_eq!(distinct.len(), 6, "six persons, six pseudonyms");
    for p in &distinct {
        assert_eq!(p.len(), 32);
        assert!(p.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(!["101", "102", "103", "104", "105", "106"].contains(&p.as_str()));
    }
    // Another key, other pseudonyms; the same key in another registration, the same.
    let b = owner(Some(&[2u8; 32])).await?;
    let other: std::collections::BTreeSet<String> = ids(&rows(&b, K2).await?).into_iter().collect();
    assert!(distinct.is_disjoint(&other));
    let a2 = owner(Some(&[1u8; 32])).await?;
    assert_eq!(rows(&a2, K2).await?, first);
    // The name is an identifier too, pseudonymized as well; the release's columns say so.
    let batches = a
        .sql("SELECT value FROM anonymize_metadata('v', method => 'kanon', qi => 'age, sex', k => 2, identifiers => 'pid, name', identifier_mode => 'pseudonym') WHERE key = 'identifiers'")
        .await?
        .collect()
        .await?;
    let shown = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
    assert!(shown.contains("pid, name: pseudonyms (HMAC-SHA-256 under the owner's key, first 128 bits as 32 hex digits)"), "{shown}");
    Ok(())
}

/// Per person with the person's own id released as a pseudonym: every released class holds
/// two persons, and a person's rows carry one pseudonym.
#[tokio::test]
async fn a_person_can_be_released_as_a_pseudonym() -> Result<()> {
    let a = owner(Some(&[1u8; 32])).await?;
    let released = rows(
        &a,
        "SELECT age, sex, pid FROM anonymize('v', method => 'kanon', qi => 'age, sex', k => 2, suppression_limit => 0.5, person => 'pid', identifiers => 'pid', identifier_mode => 'pseudonym')",
    )
    .await?;
    assert_eq!(released.len(), 7);
    let mut persons: std::collections::BTreeMap<
        (String, String),
        std::collections::BTreeSet<String>,
    > = Default::default();
    for (age, sex, pid) in &released {
        persons
            .entry((age.clone(), sex.clone()))
            .or_default()
            .insert(pid.clone());
    }
    for ((age, sex), pids) in &persons {
        if age != "*" || sex != "*" {
            assert!(pids.len() >= 2, "class {age}, {sex}: {pids:?}");
        }
    }
    // Person 101's two rows share their class and their pseudonym: six pseudonyms in all.
    let all: std::collections::BTreeSet<&String> = released.iter().map(|r| &r.2).collect();
    assert_eq!(all.len(), 6);
    Ok(())
}

async fn error(ctx: &SessionContext, sql: &str) -> String {
    match ctx.sql(sql).await {
        Ok(df) => match df.collect().await {
            Ok(_) => "no error".into(),
            Err(e) => e.strip_backtrace(),
        },
        Err(e) => e.strip_backtrace(),
    }
}

#[tokio::test]
async fn pseudonyms_are_refused_where_they_break_a_guarantee() -> Result<()> {
    let none = owner(None).await?;
    assert_eq!(
        error(&none, K2).await,
        "Error during planning: anonymize(): identifier_mode 'pseudonym' needs the owner's secret key: RegisterOptions::pseudonym_key, or dfanon --pseudonym-key-file PATH"
    );
    let a = owner(Some(&[1u8; 32])).await?;
    assert_eq!(
        error(&a, "SELECT * FROM anonymize('v', method => 'dp_histogram', qi => 'age, sex', identifiers => 'pid', identifier_mode => 'pseudonym')").await,
        "Error during planning: anonymize(): identifier_mode 'pseudonym' applies to method 'kanon' only: a pseudonym links every released row across releases, which 'dp_histogram' cannot allow (its rows are noisy or counterfeit, or its guarantee is differential privacy); leave the identifiers dropped"
    );
    assert_eq!(
        error(&a, "SELECT * FROM anonymize('v', method => 'kanon', qi => 'age, sex', k => 2, identifiers => 'disease', identifier_mode => 'pseudonym', sensitive => 'disease')").await,
        "Error during planning: anonymize(): column 'disease' cannot be both an identifier and a sensitive column"
    );
    // Dropping is the default; an identifier cannot also be a quasi-identifier (it would
    // be released, generalized at most, while the metadata says it was dropped).
    assert_eq!(
        error(&a, "SELECT * FROM anonymize('v', method => 'kanon', qi => 'age, sex', k => 2, identifiers => 'name')").await,
        "no error"
    );
    assert_eq!(
        error(&a, "SELECT * FROM anonymize('v', method => 'kanon', qi => 'age, sex', k => 2, identifiers => 'age')").await,
        "Error during planning: anonymize(): column 'age' cannot be both a quasi-identifier and a direct identifier: an identifier is dropped, so leave it out of 'qi' (or out of 'identifiers' if it is not one)"
    );
    Ok(())
}
