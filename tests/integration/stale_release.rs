//! A cached release is served again only while its tables are unchanged: files added to or
//! rewritten in an external (listing) table's directory, or rows inserted into an
//! in-memory table, make the next scan compute (and charge) a new release.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// k-anonymity with k = 1 releases every input row (nothing suppressed): its row count is
/// the number of rows the release was computed from.
const KANON: &str = "SELECT COUNT(*) FROM anonymize('src', method => 'kanon', qi => 'age', informative => 'disease', k => 1)";

/// IPA charges epsilon = 1 per release it computes.
const IPA: &str = "SELECT COUNT(*) FROM anonymize('src', qi => 'age', informative => 'disease')";

async fn run(ctx: &SessionContext, sql: &str) -> Result<()> {
    ctx.sql(sql).await?.collect().await?;
    Ok(())
}

/// Rows of the k = 1 release, after running the IPA release too.
async fn released_input(ctx: &SessionContext) -> Result<i64> {
    run(ctx, IPA).await?;
    let batches = ctx.sql(KANON).await?.collect().await?;
    Ok(batches[0].column(0).as_primitive::<Int64Type>().value(0))
}

/// Epsilon spent on the source (IPA's releases; k-anonymity costs nothing).
async fn spent(ctx: &SessionContext) -> Result<f64> {
    let batches = ctx
        .sql("SELECT epsilon_spent FROM privacy_budget()")
        .await?
        .collect()
        .await?;
    Ok(batches[0].column(0).as_primitive::<Float64Type>().value(0))
}

async fn session() -> Result<SessionContext> {
    session_with(SessionContext::new()).await
}

/// A session whose listing tables list their directory on every scan: DataFusion's list-files
/// cache (on by default, without expiry) is turned off.
async fn uncached_listing_session() -> Result<SessionContext> {
    use datafusion::execution::cache::cache_manager::CacheManagerConfig;
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    let runtime = RuntimeEnvBuilder::new()
        .with_cache_manager(CacheManagerConfig::default().with_list_files_cache_limit(0))
        .build_arc()?;
    session_with(SessionContext::new_with_config_rt(
        datafusion::prelude::SessionConfig::new(),
        runtime,
    ))
    .await
}

async fn session_with(ctx: SessionContext) -> Result<SessionContext> {
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    run(
        &ctx,
        "CREATE TABLE src_hierarchy_age(v VARCHAR, l1 VARCHAR) AS VALUES ('30', '*'), ('40', '*'), ('50', '*')",
    )
    .await?;
    Ok(ctx)
}

#[tokio::test]
async fn files_changed_under_an_external_table() -> Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("part-1.csv"), "age,disease\n30,A\n40,B\n")?;
    let ctx = uncached_listing_session().await?;
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE src STORED AS CSV LOCATION '{}/' OPTIONS ('format.has_header' 'true')",
            dir.path().display()
        ),
    )
    .await?;

    assert_eq!(released_input(&ctx).await?, 2);
    assert_eq!(released_input(&ctx).await?, 2);
    assert_eq!(
        spent(&ctx).await?,
        1.0,
        "unchanged files: served from the cache"
    );

    // A new file: a new release.
    std::fs::write(dir.path().join("part-2.csv"), "age,disease\n50,A\n")?;
    assert_eq!(released_input(&ctx).await?, 3);
    assert_eq!(spent(&ctx).await?, 2.0, "a new file: a new release");

    // A file rewritten in place: a new release.
    std::fs::write(dir.path().join("part-2.csv"), "age,disease\n50,A\n30,B\n")?;
    assert_eq!(released_input(&ctx).await?, 4);
    assert_eq!(spent(&ctx).await?, 3.0, "a rewritten file: a new release");

    // The metadata describes the release of the current files.
    let batches = ctx
        .sql("SELECT value FROM anonymize_metadata('src', qi => 'age', informative => 'disease') WHERE key = 'source'")
        .await?
        .collect()
        .await?;
    assert_eq!(batches[0].column(0).as_string::<i32>().value(0), "src");
    assert_eq!(spent(&ctx).await?, 3.0, "the metadata of the same release");
    Ok(())
}

#[tokio::test]
async fn rows_inserted_into_a_memory_table() -> Result<()> {
    let ctx = session().await?;
    run(
        &ctx,
        "CREATE TABLE src(age INT, disease VARCHAR) AS VALUES (30, 'A'), (40, 'B')",
    )
    .await?;
    assert_eq!(released_input(&ctx).await?, 2);
    assert_eq!(released_input(&ctx).await?, 2);
    assert_eq!(spent(&ctx).await?, 1.0);
    run(&ctx, "INSERT INTO src VALUES (50, 'A')").await?;
    assert_eq!(released_input(&ctx).await?, 3);
    assert_eq!(spent(&ctx).await?, 2.0, "inserted rows: a new release");
    Ok(())
}

/// With DataFusion's default list-files cache a session keeps the first listing of a
/// directory: a file added later is seen by no query of the session, so the cached release
/// (of the table as the session sees it) is served again and nothing more is charged.
#[tokio::test]
async fn a_cached_listing_serves_the_release_of_the_table_the_session_sees() -> Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("part-1.csv"), "age,disease\n30,A\n40,B\n")?;
    let ctx = session().await?;
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE src STORED AS CSV LOCATION '{}/' OPTIONS ('format.has_header' 'true')",
            dir.path().display()
        ),
    )
    .await?;
    assert_eq!(released_input(&ctx).await?, 2);
    std::fs::write(dir.path().join("part-2.csv"), "age,disease\n50,A\n")?;
    let plain = ctx.sql("SELECT COUNT(*) FROM src").await?.collect().await?;
    assert_eq!(plain[0].column(0).as_primitive::<Int64Type>().value(0), 2);
    assert_eq!(released_input(&ctx).await?, 2);
    assert_eq!(spent(&ctx).await?, 1.0);
    Ok(())
}
