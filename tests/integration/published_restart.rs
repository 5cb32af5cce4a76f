//! A publication outlives the process when the ledger is a file: a new registration over
//! that ledger serves the same table, rows and metadata, nothing drawn or charged again;
//! the owner's setup that publishes the same request again at start gets the kept release;
//! unpublishing removes it for good.

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{
    public_session, register_with, run_script, AnonymizeOptions, RegisterOptions,
};

const SETUP: &str = "
CREATE TABLE t(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B'), (50, 'M', 'A'), (30, 'F', 'A'), (40, 'M', 'C'), (50, 'F', 'B'), (30, 'M', 'B'), (40, 'F', 'A');
CREATE TABLE h_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES ('30', '[30-50)', '*'), ('40', '[30-50)', '*'), ('50', '[50-70)', '*');
CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
CREATE TABLE h_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*'), ('C', '*');
";

const PUBLISH: &str = "SELECT name, released_rows, epsilon FROM anonymize_publish('t_histogram', 't', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease:h_disease', epsilon => 1)";

/// A new owner session over the ledger file `ledger` (as a process started again would
/// make): the functions registered, then the owner's setup run.
async fn owner(ledger: &std::path::Path) -> Result<SessionContext> {
    let ctx = SessionContext::new();
    register_with(
        &ctx,
        RegisterOptions {
            budget: AnonymizeOptions {
                ledger_path: Some(ledger.to_path_buf()),
                ..AnonymizeOptions::default()
            },
            ..RegisterOptions::owner()
        },
    )?;
    run_script(&ctx, SETUP).await?;
    Ok(ctx)
}

async fn text(ctx: &SessionContext, sql: &str) -> Result<String> {
    Ok(pretty_format_batches(&ctx.sql(sql).await?.collect().await?)?.to_string())
}

const BUDGET: &str =
    "SELECT releases, epsilon_spent FROM privacy_budget() WHERE table_name = 'datafusion.public.t'";
const ROWS: &str = "SELECT * FROM t_histogram ORDER BY 1, 2, 3";

#[tokio::test]
async fn a_publication_outlives_the_process_with_its_ledger() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.json");
    let first = owner(&ledger).await?;
    let published = text(&first, PUBLISH).await?;
    assert!(published.contains("| t_histogram | "), "{published}");
    let rows = text(&first, ROWS).await?;
    let metadata = text(
        &first,
        "SELECT * FROM published_metadata('t_histogram') ORDER BY key",
    )
    .await?;
    let spent = text(&first, BUDGET).await?;
    assert!(spent.contains("| 1        | 1.0           |"), "{spent}");
    drop(first);

    // Started again: the same table, rows and metadata, nothing charged again, also when
    // the setup publishes the same request again.
    let again = owner(&ledger).await?;
    assert_eq!(text(&again, ROWS).await?, rows);
    assert_eq!(
        text(
            &again,
            "SELECT * FROM published_metadata('t_histogram') ORDER BY key"
        )
        .await?,
        metadata
    );
    assert_eq!(text(&again, PUBLISH).await?, published);
    assert_eq!(text(&again, BUDGET).await?, spent);
    assert_eq!(text(&again, ROWS).await?, rows);
    // Another request under the name is refused before anything is drawn.
    let other = again
        .sql("SELECT * FROM anonymize_publish('t_histogram', 't', method => 'dp_histogram', qi => 'age:h_age', informative => 'disease:h_disease', epsilon => 1)")
        .await?
        .collect()
        .await
        .map(|_| ())
        .map_err(|e| e.strip_backtrace());
    assert!(
        other.as_ref().is_err_and(
            |e| e.contains("a release with other arguments is published as 't_histogram'")
        ),
        "{other:?}"
    );
    assert_eq!(text(&again, BUDGET).await?, spent);
    // Public users read it as the owner published it.
    let policy = crate::common::h_policy(&["t"]);
    let public = public_session(&again, RegisterOptions::public(policy, 3.0))?;
    assert_eq!(text(&public, ROWS).await?, rows);

    // Unpublished: gone now and after the next start.
    text(&again, "SELECT * FROM anonymize_unpublish('t_histogram')").await?;
    drop((again, public));
    let third = owner(&ledger).await?;
    assert!(third.sql(ROWS).await.is_err(), "t_histogram is back");
    assert_eq!(text(&third, BUDGET).await?, spent);
    let kept: Vec<_> = std::fs::read_dir(dir.path().join("ledger.json.published"))?.collect();
    assert!(kept.is_empty(), "{kept:?}");
    Ok(())
}

const RELEASE: &str = "SELECT * FROM anonymize('t', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease:h_disease', epsilon => 1) ORDER BY 1, 2, 3";
const SAFEPUB: &str = "SELECT * FROM anonymize('t', method => 'safepub', qi => 'age:h_age, sex:h_sex', epsilon => 1, delta => 0.001) ORDER BY 1, 2";

/// A release drawn (not published) is drawn again from its kept seed after a restart over
/// the same data — the same rows, no new charge — for every method that draws; once the
/// data change, or the kept draw does not give the release it recorded, it is drawn afresh
/// and charged.
#[tokio::test]
async fn a_release_drawn_before_a_restart_is_the_same_release_after_it() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.json");
    let first = owner(&ledger).await?;
    let rows = text(&first, RELEASE).await?;
    let safepub = text(&first, SAFEPUB).await?;
    let spent = text(&first, BUDGET).await?;
    assert!(spent.contains("| 2        | 2.0           |"), "{spent}");
    drop(first);

    // Started again (the setup makes the tables anew, with the same contents): the same
    // releases, nothing charged.
    let again = owner(&ledger).await?;
    assert_eq!(text(&again, RELEASE).await?, rows);
    assert_eq!(text(&again, SAFEPUB).await?, safepub);
    assert_eq!(text(&again, BUDGET).await?, spent);
    drop(again);

    // A kept draw that does not give the release it recorded (here: the digest recorded
    // for the dp_histogram is not the one its seed gives, as after a build that draws
    // differently) is not served: the release is drawn afresh and charged.
    let file = dir.path().join("ledger.json.draws");
    let kept = std::fs::read_to_string(&file)?;
    let draws: serde_json::Value = serde_json::from_str(&kept).expect("json");
    let digest = draws
        .as_object()
        .and_then(|m| {
            m.iter()
                .find(|(key, _)| key.to_lowercase().contains("histogram"))
                .and_then(|(_, d)| d[0]["release"].as_str())
        })
        .expect("the dp_histogram's digest kept")
        .to_string();
    std::fs::write(&file, kept.replace(&digest, &"0".repeat(64)))?;
    let third = owner(&ledger).await?;
    let _ = text(&third, RELEASE).await?;
    let _ = text(&third, SAFEPUB).await?;
    let spent_now = text(&third, BUDGET).await?;
    assert!(
        spent_now.contains("| 3        | 3.0           |"),
        "{spent_now}"
    );

    // Other data: drawn afresh and charged.
    third
        .sql("INSERT INTO t VALUES (50, 'M', 'C')")
        .await?
        .collect()
        .await?;
    let _ = text(&third, RELEASE).await?;
    let spent_now = text(&third, BUDGET).await?;
    assert!(
        spent_now.contains("| 4        | 4.0           |"),
        "{spent_now}"
    );
    Ok(())
}
