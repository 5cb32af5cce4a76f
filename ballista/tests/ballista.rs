//! Releases through an Apache DataFusion Ballista cluster (a scheduler and two executors
//! started in this process, on loopback): the same seeded release as a local session, row
//! for row, charged once to the client's ledger.

use datafusion::arrow::array::{AsArray, RecordBatch};
use std::sync::Arc;

use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::run_script;
use datafusion_anonymize::{register_with, RegisterOptions};
use dfanon_ballista::{connect, start_standalone};

const HIERARCHIES: &str = include_str!("../../sql/nps_hierarchies.sql");

/// A seeded IPA release of the demo data over all five quasi-identifiers.
const RELEASE: &str = "anonymize('nps', method => 'ipa', qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0, seed => 11)";

async fn run(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

/// Every row of `batches`, in order, as one batch of text columns. (A cluster session
/// reads Parquet strings as Utf8 where a local one reads Utf8View: the values are compared,
/// not the string layout.)
fn one(batches: &[RecordBatch]) -> RecordBatch {
    let batch = concat_batches(&batches[0].schema(), batches).expect("same schema");
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| Field::new(f.name(), DataType::Utf8, true))
        .collect();
    let columns = batch
        .columns()
        .iter()
        .map(|c| cast(c, &DataType::Utf8).expect("castable to text"))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("text batch")
}

/// The demo data as Parquet, written by a local session; its path.
async fn demo_parquet(dir: &std::path::Path) -> Result<String> {
    let ctx = SessionContext::new();
    register_with(&ctx, RegisterOptions::owner())?;
    let path = dir.join("nps.parquet").display().to_string();
    run(
        &ctx,
        &format!(
            "COPY (SELECT * FROM nps_demo(rows => 60000, seed => 5)) TO '{path}' STORED AS PARQUET"
        ),
    )
    .await?;
    Ok(path)
}

/// Registers the demo table and its hierarchies on `ctx`.
async fn tables(ctx: &SessionContext, path: &str) -> Result<()> {
    run(
        ctx,
        &format!("CREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION '{path}'"),
    )
    .await?;
    run_script(ctx, HIERARCHIES).await?;
    Ok(())
}

async fn cluster_session(options: RegisterOptions) -> Result<SessionContext> {
    let url = start_standalone(2).await?;
    connect(&url, SessionContext::new().state(), options).await
}

/// The release read through the cluster equals the local one row for row, in order, and
/// so do a GROUP BY over it (the paper's Q1 shape) and its metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ballista_seeded_release_equals_local_row_for_row() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = demo_parquet(dir.path()).await?;

    let local = SessionContext::new();
    register_with(&local, RegisterOptions::owner())?;
    tables(&local, &path).await?;
    let cluster = cluster_session(RegisterOptions::owner()).await?;
    tables(&cluster, &path).await?;

    // The release reaches the cluster as a ShippedExec inside a stage the scheduler plans.
    let explained = run(&cluster, &format!("EXPLAIN SELECT COUNT(*) FROM {RELEASE}")).await?;
    let text = format!(
        "{}",
        datafusion::arrow::util::pretty::pretty_format_batches(&explained)?
    );
    let stages = text.split("distributed_plan").nth(1).unwrap_or_default();
    assert!(stages.contains("ShuffleWriterExec"), "{text}");
    assert!(stages.contains("ShippedExec: release of"), "{text}");

    let rows = format!("SELECT * FROM {RELEASE}");
    let here = one(&run(&local, &rows).await?);
    let there = one(&run(&cluster, &rows).await?);
    assert!(here.num_rows() > 50_000, "{} rows", here.num_rows());
    assert_eq!(here, there);
    let released = there.num_rows();

    let q1 = format!(
        "SELECT age, COUNT(*) AS n FROM {RELEASE} WHERE sex = 'M' AND surgery = 'N' AND disease LIKE 'I6%' GROUP BY age ORDER BY age"
    );
    let here = one(&run(&local, &q1).await?);
    let there = one(&run(&cluster, &q1).await?);
    assert!(here.num_rows() > 0);
    assert_eq!(here, there);

    let metadata = format!(
        "SELECT key, value FROM {} ORDER BY key",
        RELEASE.replace("anonymize(", "anonymize_metadata(")
    );
    assert_eq!(
        one(&run(&local, &metadata).await?),
        one(&run(&cluster, &metadata).await?)
    );

    // A release kept in the client's memory is scanned on the cluster too.
    run(
        &cluster,
        &format!("CREATE TABLE kept AS SELECT * FROM {RELEASE}"),
    )
    .await?;
    let counted = run(&cluster, "SELECT COUNT(*) FROM kept").await?;
    let counted = counted[0].column(0).as_primitive::<Int64Type>().value(0);
    assert_eq!(counted as usize, released);
    Ok(())
}

/// Epsilon spent on the source, as the client's ledger reports it.
async fn spent(ctx: &SessionContext) -> Result<f64> {
    let batches = run(ctx, "SELECT epsilon_spent FROM privacy_budget()").await?;
    Ok(batches[0].column(0).as_primitive::<Float64Type>().value(0))
}

/// Reading a release through the cluster any number of times charges it once; a new
/// release that would overspend is refused before anything is drawn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ballista_budget_is_charged_once() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = demo_parquet(dir.path()).await?;
    let mut options = RegisterOptions::owner();
    options.budget.epsilon_budget = 1.5;
    let cluster = cluster_session(options).await?;
    tables(&cluster, &path).await?;

    // Unseeded: a seeded release charges nothing.
    let release = RELEASE.replace(", seed => 11", "");
    run(&cluster, &format!("SELECT COUNT(*) FROM {release}")).await?;
    run(
        &cluster,
        &format!("SELECT age, COUNT(*) FROM {release} GROUP BY age"),
    )
    .await?;
    run(&cluster, &format!("SELECT * FROM {release} LIMIT 3")).await?;
    assert_eq!(spent(&cluster).await?, 1.0);

    let other = release.replace("epsilon => 1.0", "epsilon => 0.9");
    let err = run(&cluster, &format!("SELECT COUNT(*) FROM {other}"))
        .await
        .expect_err("a second release of epsilon 1 overspends 1.5");
    assert!(err.to_string().contains("budget"), "{err}");
    assert_eq!(spent(&cluster).await?, 1.0);
    Ok(())
}

/// Each shipped table is read once however a query combines it: a UNION ALL of shipped
/// tables and files, and a join.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ballista_union_reads_each_shipped_table_once() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = demo_parquet(dir.path()).await?;
    let cluster = cluster_session(RegisterOptions::owner()).await?;
    tables(&cluster, &path).await?;
    let count =
        |batches: Vec<RecordBatch>| batches[0].column(0).as_primitive::<Int64Type>().value(0);

    let union = "SELECT COUNT(*) FROM (SELECT value FROM generate_series(1, 10) UNION ALL SELECT value FROM generate_series(1, 5))";
    assert_eq!(count(run(&cluster, union).await?), 15);
    let values = run(
        &cluster,
        "SELECT value FROM generate_series(1, 2) UNION ALL SELECT value FROM generate_series(100, 101) ORDER BY value",
    )
    .await?;
    let values: Vec<i64> = values
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    assert_eq!(values, vec![1, 2, 100, 101]);

    let released = count(run(&cluster, &format!("SELECT COUNT(*) FROM {RELEASE}")).await?);
    let source = count(run(&cluster, "SELECT COUNT(*) FROM nps").await?);
    let mixed = format!(
        "SELECT COUNT(*) FROM (SELECT age FROM {RELEASE} UNION ALL SELECT CAST(age AS VARCHAR) FROM nps UNION ALL SELECT age FROM {RELEASE})"
    );
    assert_eq!(count(run(&cluster, &mixed).await?), 2 * released + source);
    let joined = format!(
        "SELECT COUNT(*) FROM {RELEASE} r JOIN (SELECT DISTINCT disease FROM nps) d ON r.disease = d.disease"
    );
    assert_eq!(count(run(&cluster, &joined).await?), released);
    Ok(())
}
