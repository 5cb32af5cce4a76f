//! A session for public users answers neighbouring sources alike: every error and refusal
//! a public user can provoke has the same text on a source and on the same source with one
//! record added (a new class, a NULL, a value outside the hierarchy), and the only
//! data-dependent outcome is the release itself.

use datafusion::arrow::array::AsArray;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{
    public_session, register_with, PolicyValue, PublicPolicy, RegisterOptions, SourcePolicy,
};

const SETUP: &str = "
CREATE TABLE t(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B'), (50, 'M', 'A'), (30, 'F', 'A'), (40, 'M', 'C'), (50, 'F', 'B'), (30, 'M', 'B'), (40, 'F', 'A');
CREATE TABLE t_new_class AS SELECT * FROM t UNION ALL VALUES (50, 'M', 'Z');
CREATE TABLE t_one_more AS SELECT * FROM t UNION ALL VALUES (30, 'M', 'A');
CREATE TABLE t_null AS SELECT * FROM t UNION ALL VALUES (CAST(NULL AS INT), 'M', 'A');
CREATE TABLE t_missing AS SELECT * FROM t UNION ALL VALUES (99, 'M', 'A');
CREATE TABLE t_null_disease AS SELECT * FROM t UNION ALL VALUES (30, 'M', CAST(NULL AS VARCHAR));
CREATE TABLE h_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES ('30', '[30-50)', '*'), ('40', '[30-50)', '*'), ('50', '[50-70)', '*');
CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
CREATE TABLE h_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*'), ('C', '*');
CREATE TABLE secret(v VARCHAR, l1 VARCHAR) AS VALUES ('30', '*'), ('40', '*'), ('50', '*');
";

const NEIGHBOURS: [&str; 5] = [
    "t_new_class",
    "t_one_more",
    "t_null",
    "t_missing",
    "t_null_disease",
];

async fn session(policy: PublicPolicy, epsilon_budget: f64) -> Result<SessionContext> {
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    datafusion_anonymize::run_script(&owner, SETUP).await?;
    public_session(&owner, RegisterOptions::public(policy, epsilon_budget))
}

fn declared() -> PublicPolicy {
    let mut sources = vec!["t"];
    sources.extend(NEIGHBOURS);
    crate::common::h_policy(&sources)
}

/// [`declared`] with the non-DP `method` enabled (`allow_non_dp`) and its arguments
/// `fixed` for every source.
fn with_non_dp(method: &str, fixed: &[(&str, PolicyValue)]) -> PublicPolicy {
    let mut policy = declared();
    policy.methods.push(method.into());
    policy.allow_non_dp = true;
    for source in policy.sources.values_mut() {
        let arguments = source.fixed.entry(method.into()).or_default();
        for (name, value) in fixed {
            arguments.insert(name.to_string(), value.clone());
        }
    }
    policy
}

/// `Ok(())` when the statement ran to the end, else its error text.
async fn outcome(ctx: &SessionContext, sql: &str) -> std::result::Result<(), String> {
    let run = async { ctx.sql(sql).await?.collect().await };
    run.await.map(|_| ()).map_err(|e| e.strip_backtrace())
}

/// Probes whose outcome must not depend on the data at all: `{}` is the source.
const REFUSED_PROBES: &[&str] = &[
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease', seed => 1)",
    "SELECT * FROM anonymize('{}', method => 'safepub', qi => 'age:h_age, sex:h_sex', delta => 1e-5, seed => 7)",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease', max_release_rows => 1)",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease', max_release_rows => 30000000000)",
    "SELECT * FROM anonymize('{}', method => 'kanon', qi => 'age:h_age, sex:h_sex', k => 1, suppression_limit => 0)",
    "SELECT * FROM anonymize('{}', method => 'ipa', qi => 'age:h_age, sex:h_sex', informative => 'disease')",
    "SELECT * FROM anonymize('{}', method => 'upa', qi => 'age:h_age, sex:h_sex', informative => 'disease')",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:{}, sex:h_sex', informative => 'disease')",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:secret, sex:h_sex', informative => 'disease')",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:nothing_here, sex:h_sex', informative => 'disease')",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:h_sex', informative => 'disease')",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'disease', informative => 'age')",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease:secret')",
    "SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease', epsilon => 2e-8)",
    "SELECT * FROM {}",
    "SELECT COUNT(*) FROM {}",
    "DESCRIBE {}",
    "COPY (SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease')) TO '/tmp/public_access_probe.csv'",
    "CREATE VIEW v AS SELECT * FROM anonymize('{}', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease')",
];

/// `text` with every mention of the source name (an argument the user typed, alone or in
/// a default hierarchy name) replaced by `<source>`.
fn without_source(text: &str, source: &str) -> String {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(source) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + source.len()..].chars().next();
        let whole = !before.is_some_and(ident)
            && (!after.is_some_and(ident) || rest[at + source.len()..].starts_with("_hierarchy_"));
        out.push_str(&rest[..at]);
        out.push_str(if whole { "<source>" } else { source });
        rest = &rest[at + source.len()..];
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn refusals_are_the_same_on_neighbouring_sources() -> Result<()> {
    let ctx = session(declared(), 1000.0).await?;
    for probe in REFUSED_PROBES {
        let base = outcome(&ctx, &probe.replace("{}", "t")).await;
        assert!(base.is_err(), "{probe} ran for a public user");
        for neighbour in NEIGHBOURS {
            let other = outcome(&ctx, &probe.replace("{}", neighbour)).await;
            let base = base.clone().map_err(|e| without_source(&e, "t"));
            let shown = other.map_err(|e| without_source(&e, neighbour));
            assert_eq!(base, shown, "{probe} on t and {neighbour}");
        }
    }
    Ok(())
}

/// Releases of neighbouring sources: each either succeeds or fails with the ceiling's text,
/// which depends only on the released rows (a function of the release); no other error.
#[tokio::test]
async fn releases_of_neighbours_fail_only_on_the_ceiling() -> Result<()> {
    for ceiling in [1u64, 5, 8, 9, 10, 1_000] {
        let policy = PublicPolicy {
            max_release_rows: ceiling,
            ..declared()
        };
        let ctx = session(policy, 1000.0).await?;
        for source in std::iter::once("t").chain(NEIGHBOURS) {
            for method in [
                "method => 'dp_histogram', informative => 'disease:h_disease'",
                "method => 'safepub', epsilon => 2, delta => 1e-5",
                "method => 'safepub', informative => 'disease', epsilon => 2, delta => 1e-5",
            ] {
                let sql = format!(
                    "SELECT COUNT(*) FROM anonymize('{source}', qi => 'age:h_age, sex:h_sex', {method})"
                );
                match outcome(&ctx, &sql).await {
                    Ok(()) => {}
                    Err(e) => assert_eq!(
                        e,
                        format!(
                            "Execution error: anonymize(): this release has more rows than public users may receive in this session ({ceiling}); its budget was spent. Methods that add noise or counterfeit rows add fewer with a larger epsilon (ipa, dp_histogram) or a smaller k (upa); the others release at most the source's rows"
                        ),
                        "{sql}"
                    ),
                }
            }
        }
    }
    Ok(())
}

/// A dp_histogram draw stops as soon as its release passes the public row limit (the
/// draw's memory is bounded by the limit, not by the cells the user chose): the refusal
/// is the ceiling's, and the charge stays, since the refusal is a function of the drawn
/// release (a refund would give it for free). The same request draws, and is charged, again.
#[tokio::test]
async fn a_draw_past_the_row_limit_stops_and_keeps_its_charge() -> Result<()> {
    let policy = PublicPolicy {
        max_release_rows: 1,
        ..declared()
    };
    let ctx = session(policy, 12.0).await?;
    // t's 8 records are in 8 of the 18 cells; at epsilon = 5 a record's cell loses it with
    // probability e^-5 / (1 + e^-5) < 0.0068, so fewer than 2 released rows (7 of the 8
    // lost) has a probability below 8 * 0.0068^7 < 1e-14: the test's false-failure rate.
    let sql = "SELECT COUNT(*) FROM anonymize('t', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease:h_disease', epsilon => 5)";
    let spent = |ctx: SessionContext| async move {
        let batches = ctx
            .sql("SELECT releases, epsilon_spent FROM privacy_budget() WHERE table_name = 'datafusion.public.t'")
            .await?
            .collect()
            .await?;
        let batch = &batches[0];
        let releases = batch
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
            .value(0);
        let epsilon = batch
            .column(1)
            .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
            .value(0);
        Result::<(u64, f64)>::Ok((releases, epsilon))
    };
    let refusal = "Execution error: anonymize(): this release has more rows than public users may receive in this session (1); its budget was spent. Methods that add noise or counterfeit rows add fewer with a larger epsilon (ipa, dp_histogram) or a smaller k (upa); the others release at most the source's rows";
    assert_eq!(outcome(&ctx, sql).await, Err(refusal.to_string()));
    assert_eq!(spent(ctx.clone()).await?, (1, 5.0));
    assert_eq!(outcome(&ctx, sql).await, Err(refusal.to_string()));
    assert_eq!(spent(ctx.clone()).await?, (2, 10.0));
    Ok(())
}

#[tokio::test]
async fn a_public_session_without_a_budget_releases_nothing() -> Result<()> {
    let ctx = session(declared(), f64::INFINITY).await?;
    let err = outcome(
        &ctx,
        "SELECT * FROM anonymize('t', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease')",
    )
    .await;
    assert_eq!(
        err,
        Err("Error during planning: anonymize(): this session has no privacy budget, so it releases nothing: the data owner sets one with dfanon --epsilon-budget or RegisterOptions::budget".to_string())
    );
    Ok(())
}

/// Enabling a syntactic method without the owner's k and quasi-identifiers is the owner's
/// mistake: refused when the public session is built, not at each public call.
/// A method whose release is not differentially private reaches public users only with
/// the owner's explicit consent (`allow_non_dp`) and with every argument fixed by the
/// owner's policy; each gap is named at registration.
#[tokio::test]
async fn non_dp_methods_need_the_owners_consent_and_arguments() -> Result<()> {
    for method in ["ipa", "kanon", "upa", "microaggregation"] {
        let fixed = [("qi", PolicyValue::Text("age".into()))];
        let policy = PublicPolicy {
            allow_non_dp: false,
            ..with_non_dp(method, &fixed)
        };
        let err = session(policy, 1.0)
            .await
            .map(|_| ())
            .map_err(|e| e.strip_backtrace());
        assert!(
            err.as_ref().is_err_and(|e| e.starts_with(&format!("Invalid or Unsupported Configuration: public method '{method}' does not release differentially private data"))),
            "{method}: {err:?}"
        );
        let unfixed = with_non_dp(method, &[]);
        let err = session(unfixed, 1.0)
            .await
            .map(|_| ())
            .map_err(|e| e.strip_backtrace());
        assert_eq!(
            err,
            Err(format!("Invalid or Unsupported Configuration: public policy, source 't': method '{method}' is not differentially private, so its public calls take every argument from the owner: give them in fixed.{method} (qi at least)")),
            "{method}"
        );
        assert!(
            session(with_non_dp(method, &fixed), 1.0).await.is_ok(),
            "{method}"
        );
    }
    Ok(())
}

/// A public call of a syntactic method names the source and the method only: k, the
/// quasi-identifiers and every other argument are the owner's.
#[tokio::test]
async fn syntactic_methods_take_only_the_owners_arguments() -> Result<()> {
    let policy = with_non_dp(
        "kanon",
        &[
            ("qi", PolicyValue::Text("sex, age".into())),
            ("k", PolicyValue::Integer(3)),
        ],
    );
    let ctx = session(policy, 1000.0).await?;
    assert_eq!(
        outcome(&ctx, "SELECT * FROM anonymize('t', method => 'kanon', k => 3)").await,
        Err("Error during planning: anonymize(): method 'kanon' is not differentially private, so public users call it with the data owner's arguments only: argument 'k' cannot be given (give only the source and the method)".into())
    );
    assert_eq!(
        outcome(&ctx, "SELECT * FROM anonymize('t', method => 'kanon', qi => 'age')").await,
        Err("Error during planning: anonymize(): method 'kanon' is not differentially private, so public users call it with the data owner's arguments only: argument 'qi' cannot be given (give only the source and the method)".into())
    );
    let rows = ctx
        .sql("SELECT * FROM anonymize('t', method => 'kanon')")
        .await?
        .collect()
        .await?;
    let released: Vec<String> = rows[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(released, ["sex", "age"]);
    // The owner's k: every released class holds at least 3 records.
    let sizes = ctx
        .sql("SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM anonymize('t', method => 'kanon') GROUP BY sex, age)")
        .await?
        .collect()
        .await?;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&sizes)?.to_string();
    assert!(!text.contains("| 1 ") && !text.contains("| 2 "), "{text}");
    Ok(())
}

/// The owner keeps detailed errors: the same NULL that a public release leaves out is
/// named to the owner.
#[tokio::test]
async fn the_owner_still_sees_why() -> Result<()> {
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    datafusion_anonymize::run_script(&owner, SETUP).await?;
    let err = outcome(
        &owner,
        "SELECT * FROM anonymize('t_null', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease')",
    )
    .await;
    assert!(
        err.as_ref()
            .is_err_and(|e| e.contains("contains NULL values")),
        "{err:?}"
    );
    Ok(())
}

/// The privacy unit of public releases is the owner's: without `PublicPolicy::person` a
/// public user cannot make releases per person (a person-level release of a table whose
/// rows are its individuals protects a row only at twice its epsilon); with it, every
/// public release is per person, whether or not the call names the column, and a row
/// without its person is left out like any other unusable record.
#[tokio::test]
async fn public_releases_are_per_person_only_as_the_owner_says() -> Result<()> {
    let setup = "
CREATE TABLE p(pid INT, age INT, sex VARCHAR) AS VALUES (1, 30, 'M'), (1, 30, 'M'), (1, 40, 'M'), (2, 40, 'F'), (3, 50, 'M'), (4, 30, 'F');
CREATE TABLE p_null AS SELECT * FROM p UNION ALL VALUES (CAST(NULL AS INT), 30, 'M');
CREATE TABLE h_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES ('30', '[30-50)', '*'), ('40', '[30-50)', '*'), ('50', '[50-70)', '*');
CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
";
    let public = |person: Option<&str>| {
        let source = SourcePolicy::default()
            .qi("age", "h_age")
            .qi("sex", "h_sex");
        let policy = PublicPolicy {
            person: person.map(str::to_string),
            tables: vec!["h_*".into()],
            ..PublicPolicy::default()
        }
        .with_source("p", source.clone())
        .with_source("p_null", source);
        async move {
            let owner = SessionContext::new();
            register_with(&owner, RegisterOptions::owner())?;
            datafusion_anonymize::run_script(&owner, setup).await?;
            public_session(&owner, RegisterOptions::public(policy, 100.0))
        }
    };
    let call = |source: &str, extra: &str| {
        format!("SELECT value FROM anonymize_metadata('{source}', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex'{extra}) WHERE key = 'privacy_unit'")
    };
    let rows = public(None).await?;
    assert_eq!(
        outcome(&rows, &call("p", ", person => 'pid'")).await,
        Err("Error during planning: anonymize_metadata(): argument 'person' is set by the data owner in this session, and none is set: each row is one individual".into())
    );
    let unit = |ctx: SessionContext, sql: String| async move {
        let batches = ctx.sql(&sql).await?.collect().await?;
        Ok::<String, datafusion::error::DataFusionError>(
            datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string(),
        )
    };
    assert!(unit(rows.clone(), call("p", ""))
        .await?
        .contains("row: each row of the source is one individual"));

    let persons = public(Some("pid")).await?;
    for extra in [
        "",
        ", person => 'pid'",
        ", person => 'pid', max_rows_per_person => 2",
    ] {
        let shown = unit(persons.clone(), call("p", extra)).await?;
        assert!(
            shown.contains("person (column 'pid'), at most"),
            "{extra}: {shown}"
        );
    }
    assert_eq!(
        outcome(&persons, &call("p", ", person => 'sex'")).await,
        Err("Error during planning: anonymize_metadata(): releases in this session are per person 'pid', set by the data owner: leave out 'person' or name that column".into())
    );
    // A row without a person is left out, as a NULL quasi-identifier is.
    assert_eq!(outcome(&persons, &call("p_null", "")).await, Ok(()));
    let budget = unit(
        persons.clone(),
        "SELECT table_name, privacy_unit FROM privacy_budget() ORDER BY table_name".into(),
    )
    .await?;
    assert!(
        budget.contains("| datafusion.public.p      | person pid   |"),
        "{budget}"
    );
    Ok(())
}

/// Microaggregation for public users: the owner's k and quasi-identifiers apply; a record
/// a release cannot use (a NULL) is left out, not named; too few records fail with the one
/// public text; neighbouring sources differ only in their releases.
#[tokio::test]
async fn public_microaggregation_follows_the_owners_settings() -> Result<()> {
    let call = |source: &str| {
        format!("SELECT COUNT(*) FROM anonymize('{source}', method => 'microaggregation')")
    };
    for (k, released) in [
        (3, Ok(())),
        (
            100,
            Err(format!(
                "Execution error: {}",
                datafusion_anonymize_public_failure()
            )),
        ),
    ] {
        let policy = with_non_dp(
            "microaggregation",
            &[
                ("qi", PolicyValue::Text("age".into())),
                ("k", PolicyValue::Integer(k)),
                ("sensitive", PolicyValue::Text("disease".into())),
            ],
        );
        // Microaggregation releases the informative column as it is: a plain column.
        let mut policy = policy;
        for source in policy.sources.values_mut() {
            source.informative.clear();
            source.plain.push("disease".into());
        }
        let ctx = session(policy, 1000.0).await?;
        for source in std::iter::once("t").chain(NEIGHBOURS) {
            assert_eq!(
                outcome(&ctx, &call(source)).await,
                released,
                "{source}, k = {k}"
            );
        }
        if k == 3 {
            let rows = ctx.sql(&call("t_null")).await?.collect().await?;
            let n = datafusion::arrow::util::pretty::pretty_format_batches(&rows)?.to_string();
            assert!(n.contains("| 8 "), "the NULL record is left out: {n}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn public_users_make_demo_tables_of_at_most_the_papers_size() -> Result<()> {
    let ctx = session(declared(), 3.0).await?;
    assert_eq!(
        outcome(&ctx, "SELECT COUNT(*) FROM nps_demo(1361001)").await,
        Err("Error during planning: nps_demo(): rows must be at most 1361000 in this session, got 1361001".to_string())
    );
    assert_eq!(
        outcome(&ctx, "SELECT COUNT(*) FROM nps_demo(1000, 3)").await,
        Ok(())
    );
    // The data owner may make larger ones.
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    assert!(owner.sql("SELECT * FROM nps_demo(1361001)").await.is_ok());
    Ok(())
}

fn datafusion_anonymize_public_failure() -> &'static str {
    "anonymize(): the release could not be computed with these arguments; the data owner sees the reason by making the same call in an owner session"
}
