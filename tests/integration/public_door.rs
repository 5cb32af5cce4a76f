//! What a public user may run, through each door of the library: a statement outside the
//! allow-list is refused by `public_sql` and `script_dataframe` (what Python's `dfanon.sql`
//! runs), a setting changed through a door without that check (`ctx.sql`) stops every
//! release instead of steering it, and the budget stays with the table the owner's
//! registration resolves.

use datafusion::arrow::array::AsArray;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{
    public_session, public_sql, register_with, run_script, script_dataframe, PublicRefusal,
    RegisterOptions,
};

const SETUP: &str = "
CREATE TABLE t(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B'), (50, 'M', 'A'), (30, 'F', 'A'), (40, 'M', 'C'), (50, 'F', 'B'), (30, 'M', 'B'), (40, 'F', 'A');
CREATE TABLE t_plus AS SELECT * FROM t UNION ALL VALUES (50, 'M', 'C');
CREATE TABLE h_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES ('30', '[30-50)', '*'), ('40', '[30-50)', '*'), ('50', '[50-70)', '*');
CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
CREATE TABLE h_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*'), ('C', '*');
";

/// A public session over the tables of [`SETUP`] with an ε budget of 1 per table.
async fn session() -> Result<SessionContext> {
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    run_script(&owner, SETUP).await?;
    let policy = crate::common::h_policy(&["t", "t_plus"]);
    public_session(&owner, RegisterOptions::public(policy, 1.0))
}

/// A release of `source` at ε = 1; `variant` (0 to 3) changes only how a hierarchy's name
/// is written, so that each call is a new request (a new draw and a new charge). The names
/// are qualified: they resolve whatever the session's default schema.
fn release(source: &str, variant: usize) -> String {
    let age = ["datafusion.public.h_age", "public.h_age"][variant % 2];
    let sex = ["datafusion.public.h_sex", "public.h_sex"][variant / 2 % 2];
    format!(
        "SELECT COUNT(*) FROM anonymize('{source}', method => 'dp_histogram', qi => 'age:{age}, sex:{sex}', informative => 'disease:datafusion.public.h_disease', epsilon => 1)"
    )
}

async fn run(ctx: &SessionContext, sql: &str) -> std::result::Result<(), String> {
    let run = async { ctx.sql(sql).await?.collect().await };
    run.await.map(|_| ()).map_err(|e| e.strip_backtrace())
}

async fn run_public(ctx: &SessionContext, sql: &str) -> std::result::Result<(), String> {
    let run = async { public_sql(ctx, sql).await?.collect().await };
    run.await.map(|_| ()).map_err(|e| e.strip_backtrace())
}

/// The ledger's accounts, as `table=epsilon` lines.
async fn accounts(ctx: &SessionContext) -> Result<Vec<String>> {
    let batches = ctx
        .sql("SELECT table_name || '=' || CAST(epsilon_spent AS VARCHAR) FROM privacy_budget() ORDER BY 1")
        .await?
        .collect()
        .await?;
    let mut out = Vec::new();
    for batch in &batches {
        let column = datafusion::arrow::compute::cast(
            batch.column(0),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )?;
        out.extend(
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string),
        );
    }
    Ok(out)
}

fn refusal(what: &str) -> String {
    format!("Error during planning: {}", PublicRefusal::of(what))
}

/// The review's first attack: a `SET datafusion.catalog.default_schema` between releases
/// sent each charge to a fresh account. Through `public_sql` the `SET` is refused; through
/// `ctx.sql` it runs, and then no release is made until the setting is the owner's again,
/// when the charge goes to the one account of `t`.
#[tokio::test]
async fn a_schema_setting_neither_resets_nor_moves_the_budget() -> Result<()> {
    let ctx = session().await?;
    assert_eq!(run_public(&ctx, &release("t", 0)).await, Ok(()));
    let set = "SET datafusion.catalog.default_schema = 'fresh1'";
    assert_eq!(
        run_public(&ctx, set).await,
        Err(refusal("SET datafusion.catalog.default_schema"))
    );
    assert_eq!(run(&ctx, set).await, Ok(()));
    let refused = run(&ctx, &release("t", 1)).await;
    assert_eq!(
        refused,
        Err("Error during planning: anonymize(): the session's setting datafusion.catalog.default_schema was changed after the data owner set it up; releases for public users run only with the owner's settings".to_string())
    );
    assert_eq!(
        run(&ctx, "SET datafusion.catalog.default_schema = 'public'").await,
        Ok(())
    );
    let over = run(&ctx, &release("t", 2)).await.unwrap_err();
    assert!(
        over.contains("privacy budget exceeded for table 'datafusion.public.t'"),
        "{over}"
    );
    assert_eq!(
        accounts(&ctx).await?,
        vec!["datafusion.public.t=1.0".to_string()]
    );
    Ok(())
}

/// The review's runtime attack: a memory limit the user chooses. Refused by `public_sql`;
/// set through `ctx.sql`, it stops every release with the same text on a table and on its
/// neighbour, and nothing is charged.
#[tokio::test]
async fn a_public_user_cannot_choose_the_runtime() -> Result<()> {
    for (setting, text) in [
        (
            "SET datafusion.runtime.memory_limit = '28K'",
            "SET datafusion.runtime.memory_limit",
        ),
        (
            "SET datafusion.execution.target_partitions = 1",
            "SET datafusion.execution.target_partitions",
        ),
    ] {
        let ctx = session().await?;
        assert_eq!(run_public(&ctx, setting).await, Err(refusal(text)));
        assert_eq!(run(&ctx, setting).await, Ok(()));
        let on_t = run(&ctx, &release("t", 0)).await;
        let on_t_plus = run(&ctx, &release("t_plus", 0)).await;
        assert!(on_t.is_err(), "{setting}: released");
        assert_eq!(on_t, on_t_plus, "{setting}");
        assert!(accounts(&ctx).await?.is_empty(), "{setting}: charged");
    }
    Ok(())
}

/// `public_sql` and `script_dataframe` in a public session run reads and refuse the rest,
/// naming it; a script with one refused statement runs none.
#[tokio::test]
async fn the_doors_run_only_what_public_users_may_run() -> Result<()> {
    let ctx = session().await?;
    assert_eq!(run_public(&ctx, "SELECT * FROM h_age").await, Ok(()));
    assert_eq!(
        run_public(&ctx, "EXPLAIN SELECT * FROM h_age").await,
        Ok(())
    );
    for (sql, what) in [
        (
            "SET anonymize.epsilon_budget = 100",
            "SET anonymize.epsilon_budget",
        ),
        ("RESET datafusion.execution.batch_size", "RESET"),
        ("COPY (SELECT 1) TO '/tmp/public_door_probe.csv'", "COPY"),
        ("CREATE TABLE x AS SELECT 1", "CREATE TABLE"),
        (
            "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '/tmp/public_door_probe.csv'",
            "CREATE EXTERNAL TABLE",
        ),
        ("INSERT INTO h_age VALUES ('60', '*', '*')", "INSERT"),
    ] {
        assert_eq!(run_public(&ctx, sql).await, Err(refusal(what)), "{sql}");
    }
    let script = format!("CREATE TABLE y AS SELECT 1; {}", release("t", 0));
    let refused = script_dataframe(&ctx, &script).await.map(|_| ());
    assert_eq!(
        refused.map_err(|e| e.strip_backtrace()),
        Err(refusal("CREATE TABLE"))
    );
    assert!(accounts(&ctx).await?.is_empty(), "the script's release ran");
    Ok(())
}

/// SafePub's options whose guarantee is not proven are the owner's only.
#[tokio::test]
async fn unproven_safepub_options_are_for_the_owner_only() -> Result<()> {
    let ctx = session().await?;
    for option in ["final_selection => 'best'", "search_sample => 'shared'"] {
        let sql = format!(
            "SELECT COUNT(*) FROM anonymize('t', method => 'safepub', qi => 'age:h_age, sex:h_sex', epsilon => 1, delta => 1e-5, {option})"
        );
        let error = run_public(&ctx, &sql).await.unwrap_err();
        assert!(
            error.contains("has no proven guarantee"),
            "{option}: {error}"
        );
    }
    assert!(accounts(&ctx).await?.is_empty());
    Ok(())
}

/// A release of a method that is not differentially private reaches public users only as
/// the owner published it: drawn once, charged once, read as a table with its metadata,
/// never with arguments the public user chooses; taken away by the owner.
#[tokio::test]
async fn published_releases_are_read_not_chosen() -> Result<()> {
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    run_script(&owner, SETUP).await?;
    let publish = "SELECT name, method, released_rows FROM anonymize_publish('t_release', 't', method => 'kanon', qi => 'age:h_age, sex:h_sex', sensitive => 'disease', k => 2)";
    let published = owner.sql(publish).await?.collect().await?;
    assert_eq!(published[0].num_rows(), 1);
    let policy = crate::common::h_policy(&["t", "t_plus"]);
    let public = public_session(&owner, RegisterOptions::public(policy, 1.0))?;
    // The public user reads the owner's release, the same rows the owner sees.
    let rows = |ctx: SessionContext| async move {
        let batches = ctx
            .sql("SELECT age, sex, disease FROM t_release ORDER BY 1, 2, 3")
            .await?
            .collect()
            .await?;
        datafusion::arrow::util::pretty::pretty_format_batches(&batches).map(|t| t.to_string())
    };
    let seen = rows(public.clone()).await?;
    assert_eq!(seen, rows(owner.clone()).await?);
    assert!(
        seen.contains('*') || seen.contains('['),
        "generalized: {seen}"
    );
    assert_eq!(
        run_public(
            &public,
            "SELECT value FROM published_metadata('t_release') WHERE key = 'method'"
        )
        .await,
        Ok(())
    );
    let method = public_sql(
        &public,
        "SELECT value FROM published_metadata('t_release') WHERE key = 'method'",
    )
    .await?
    .collect()
    .await?;
    assert_eq!(
        datafusion::arrow::util::pretty::pretty_format_batches(&method)?.to_string(),
        "+-------+\n| value |\n+-------+\n| kanon |\n+-------+"
    );
    // The public user cannot publish, nor call kanon with arguments of their own.
    let refused = run_public(&public, publish).await.unwrap_err();
    assert!(
        refused.contains("anonymize_publish() is an owner-only function (it publishes releases for public users)"),
        "{refused}"
    );
    let own = run_public(
        &public,
        "SELECT * FROM anonymize('t', method => 'kanon', qi => 'age:h_age, sex:h_sex', sensitive => 'disease', k => 1)",
    )
    .await
    .unwrap_err();
    assert!(
        own.contains("method 'kanon' is not enabled for public users"),
        "{own}"
    );
    // Publishing the same request again changes nothing; another request under the name
    // is refused; a seeded one cannot be published.
    owner.sql(publish).await?.collect().await?;
    let other = owner
        .sql("SELECT * FROM anonymize_publish('t_release', 't', method => 'kanon', qi => 'age:h_age, sex:h_sex', sensitive => 'disease', k => 3)")
        .await;
    let other = match other {
        Ok(frame) => frame.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(other.is_err_and(|e| e
        .to_string()
        .contains("a release with other arguments is published as 't_release'")),);
    let seeded = owner
        .sql("SELECT * FROM anonymize_publish('t_seeded', 't', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', seed => 1)")
        .await;
    assert!(seeded.is_err_and(|e| e
        .to_string()
        .contains("a seeded release has no privacy guarantee")));
    // Unpublished: gone for both.
    owner
        .sql("SELECT * FROM anonymize_unpublish('t_release')")
        .await?
        .collect()
        .await?;
    let gone = run_public(&public, "SELECT * FROM t_release")
        .await
        .unwrap_err();
    assert!(gone.contains("t_release' not found"), "{gone}");
    assert!(owner.sql("SELECT * FROM t_release").await.is_err());
    Ok(())
}

/// A publication's charge goes to the ledger public users share: a DP release published
/// by the owner spends the table's budget like a public user's release.
#[tokio::test]
async fn a_publication_is_charged_to_the_shared_budget() -> Result<()> {
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    run_script(&owner, SETUP).await?;
    owner
        .sql("SELECT * FROM anonymize_publish('t_histogram', 't', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease:h_disease', epsilon => 1)")
        .await?
        .collect()
        .await?;
    let policy = crate::common::h_policy(&["t", "t_plus"]);
    let public = public_session(&owner, RegisterOptions::public(policy, 1.0))?;
    assert_eq!(
        accounts(&public).await?,
        vec!["datafusion.public.t=1.0".to_string()]
    );
    let over = run_public(&public, &release("t", 0)).await.unwrap_err();
    assert!(
        over.contains("privacy budget exceeded for table 'datafusion.public.t'"),
        "{over}"
    );
    assert_eq!(
        run_public(&public, "SELECT COUNT(*) FROM t_histogram").await,
        Ok(())
    );
    Ok(())
}
