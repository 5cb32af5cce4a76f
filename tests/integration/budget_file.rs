//! The privacy ledger kept in a file (`SET anonymize.ledger_path = '...'`): spending
//! survives the session, later sessions are held to it, and a corrupt file stops every
//! release instead of resetting the budget.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, UInt64Type};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;

async fn session(ledger: &std::path::Path) -> Result<SessionContext> {
    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    for sql in [
        "CREATE TABLE t(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B'), (50, 'M', 'A'), (30, 'F', 'A')",
        "CREATE TABLE t_hierarchy_age(v VARCHAR, l1 VARCHAR) AS VALUES ('30', '*'), ('40', '*'), ('50', '*')",
        "CREATE TABLE t_hierarchy_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*')",
    ] {
        ctx.sql(sql).await?.collect().await?;
    }
    ctx.sql(&format!(
        "SET anonymize.ledger_path = '{}'",
        ledger.display()
    ))
    .await?
    .collect()
    .await?;
    Ok(ctx)
}

async fn release(ctx: &SessionContext, epsilon: f64) -> Result<usize> {
    let batches = ctx
        .sql(&format!(
            "SELECT * FROM anonymize('t', qi => 'age, sex', informative => 'disease', epsilon => {epsilon})"
        ))
        .await?
        .collect()
        .await?;
    Ok(batches.iter().map(|b| b.num_rows()).sum())
}

/// `(table, releases, epsilon_spent)` rows of `privacy_budget()`.
async fn budget(ctx: &SessionContext) -> Result<Vec<(String, u64, f64)>> {
    let batches = ctx
        .sql("SELECT table_name, releases, epsilon_spent FROM privacy_budget()")
        .await?
        .collect()
        .await?;
    let mut out = Vec::new();
    for b in &batches {
        let names = b.column(0).as_string::<i32>();
        let releases = b.column(1).as_primitive::<UInt64Type>();
        let spent = b.column(2).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            out.push((
                names.value(i).to_string(),
                releases.value(i),
                spent.value(i),
            ));
        }
        assert_eq!(names.null_count(), 0);
    }
    Ok(out)
}

#[tokio::test]
async fn spending_survives_the_session_and_binds_the_next() -> Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.json");

    let first = session(&path).await?;
    assert!(release(&first, 1.0).await? >= 4);
    assert!(path.exists(), "the first charge creates the ledger file");
    assert_eq!(
        budget(&first).await?,
        vec![("datafusion.public.t".to_string(), 1, 1.0)]
    );
    drop(first);

    let second = session(&path).await?;
    assert_eq!(
        budget(&second).await?,
        vec![("datafusion.public.t".to_string(), 1, 1.0)]
    );
    second
        .sql("SET anonymize.epsilon_budget = 1.5")
        .await?
        .collect()
        .await?;
    // The first session's release is kept beside the ledger: asked again, it is drawn
    // again from its kept seed and not charged again.
    assert!(release(&second, 1.0).await? >= 4);
    assert_eq!(
        budget(&second).await?,
        vec![("datafusion.public.t".to_string(), 1, 1.0)]
    );
    let err = release(&second, 0.75).await.expect_err("must overspend");
    let msg = err.to_string();
    assert!(
        msg.contains("privacy budget exceeded for table 'datafusion.public.t'")
            && msg.contains("has spent epsilon = 1, delta = 0 in 1 release(s)")
            && msg.contains("remaining epsilon = 0.5"),
        "{msg}"
    );
    assert!(release(&second, 0.5).await? >= 4);
    assert_eq!(
        budget(&second).await?,
        vec![("datafusion.public.t".to_string(), 2, 1.5)]
    );

    // Two sessions on one file see each other's charges immediately.
    let third = session(&path).await?;
    assert_eq!(budget(&third).await?[0].1, 2);
    Ok(())
}

#[tokio::test]
async fn a_corrupt_ledger_stops_releases_and_is_left_alone() -> Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.json");
    std::fs::write(
        &path,
        "{\"format\": \"datafusion-anonymize privacy ledger\", \"vers",
    )
    .expect("write");
    let ctx = session(&path).await?;
    let err = release(&ctx, 1.0).await.expect_err("corrupt ledger");
    assert!(
        err.to_string().contains("is corrupt") && err.to_string().contains("ledger.json"),
        "{err}"
    );
    let err = budget(&ctx).await.expect_err("corrupt ledger");
    assert!(err.to_string().contains("is corrupt"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "{\"format\": \"datafusion-anonymize privacy ledger\", \"vers"
    );
    // Pointing the session back at memory releases again (the in-memory ledger is separate).
    ctx.sql("SET anonymize.ledger_path = ''")
        .await?
        .collect()
        .await?;
    assert!(release(&ctx, 1.0).await? >= 4);
    Ok(())
}
