//! The SQL evaluator of `sql/paper_q1_q4.sql` on hand-made data: a k-anonymous release of
//! the paper's Tables 9-10 "Original" columns at the ages [0-30), [30-60), [60-100] gives the
//! paper's k-anonymization columns (docs/METHODS.md §1.12.2, ±0.05), and '*' and midpoints
//! are read as documented.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::internals::{NPS_TABLE10_FEMALE_COUNTS, NPS_TABLE9_MALE_COUNTS};
use datafusion_anonymize::run_script;

const PAPER_SQL: &str = include_str!("../../sql/paper_q1_q4.sql");

/// The evaluator section of `sql/paper_q1_q4.sql`.
fn evaluator() -> &'static str {
    let begin = PAPER_SQL.find("-- @evaluator begin").expect("begin marker");
    let end = PAPER_SQL.find("-- @evaluator end").expect("end marker");
    &PAPER_SQL[begin..end]
}

fn kanon_label(group: usize) -> &'static str {
    match group {
        0..=5 => "[0-30)",
        6..=11 => "[30-60)",
        _ => "[60-100]",
    }
}

/// (release, query, age group) -> (original, estimate), and (release, query) -> error.
type Compare = BTreeMap<(String, String, i64), (f64, f64)>;

async fn run() -> Result<(Compare, BTreeMap<(String, String), f64>)> {
    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    // Original: every stroke, no-surgery patient of Tables 9-10, aged 5i+2 in row i, stay 3;
    // the k-anonymous release has the same records with ages [0-30), [30-60), [60-100].
    let mut counts = Vec::new();
    for (sex, table) in [
        ("M", NPS_TABLE9_MALE_COUNTS),
        ("F", NPS_TABLE10_FEMALE_COUNTS),
    ] {
        for (i, &n) in table.iter().enumerate() {
            counts.push(format!("('{sex}', {i}, {n}, '{}')", kanon_label(i)));
        }
    }
    let statements = [
        format!(
            "CREATE TABLE counts(sex VARCHAR, row_index INT, n INT, label VARCHAR) AS VALUES {}",
            counts.join(", ")
        ),
        "CREATE TABLE patients AS SELECT c.* FROM counts c JOIN generate_series(1, 1000) s ON s.value <= c.n"
            .to_string(),
        "CREATE TABLE nps AS SELECT CAST(5 * row_index + 2 AS INT) AS age, sex, CAST(3 AS INT) AS los, \
         'N' AS surgery, CAST(11 AS INT) AS location, 'I634' AS disease FROM patients"
            .to_string(),
        // A second release: one suppressed stroke record and one non-stroke record.
        "CREATE TABLE releases AS \
         SELECT 'kanon' AS release, label AS age, sex, '[2-5)' AS los, 'N' AS surgery, '11' AS location, 'I634' AS disease FROM patients \
         UNION ALL SELECT 'star', '*', '*', '*', '*', '*', 'I634' \
         UNION ALL SELECT 'star', '37', 'M', '3', 'N', '11', 'J189' \
         UNION ALL SELECT 'means', label, sex, '[2-5)', 'N', '11', 'I634' FROM patients"
            .to_string(),
        // The third release publishes a mean of 4 for '[2-5)' (and one for a label it
        // does not use); the others publish none.
        "CREATE TABLE release_means(release VARCHAR, column_name VARCHAR, label VARCHAR, mean DOUBLE) AS \
         VALUES ('means', 'los', '[2-5)', 4.0), ('means', 'los', '[5-10)', 7.0), ('means', 'age', '[0-30)', 20.0)"
            .to_string(),
    ];
    for statement in statements {
        ctx.sql(&statement).await?.collect().await?;
    }
    run_script(&ctx, evaluator()).await?;
    let mut compare = Compare::new();
    for batch in ctx
        .sql("SELECT release, query, age_group, original, estimate FROM paper_compare")
        .await?
        .collect()
        .await?
    {
        let r = cast(batch.column(0), &DataType::Utf8)?;
        let r = r.as_string::<i32>();
        let q = cast(batch.column(1), &DataType::Utf8)?;
        let q = q.as_string::<i32>();
        let g = cast(batch.column(2), &DataType::Float64)?;
        let g = g.as_primitive::<Float64Type>();
        let o = batch.column(3).as_primitive::<Float64Type>();
        let e = batch.column(4).as_primitive::<Float64Type>();
        for i in 0..batch.num_rows() {
            assert!(!e.is_null(i));
            compare.insert(
                (
                    r.value(i).to_string(),
                    q.value(i).to_string(),
                    g.value(i) as i64,
                ),
                (o.value(i), e.value(i)),
            );
        }
    }
    let mut errors = BTreeMap::new();
    for batch in ctx
        .sql("SELECT release, query, rel_l1 FROM paper_error")
        .await?
        .collect()
        .await?
    {
        let r = cast(batch.column(0), &DataType::Utf8)?;
        let r = r.as_string::<i32>();
        let q = cast(batch.column(1), &DataType::Utf8)?;
        let q = q.as_string::<i32>();
        let x = batch.column(2).as_primitive::<Float64Type>();
        for i in 0..batch.num_rows() {
            errors.insert((r.value(i).to_string(), q.value(i).to_string()), x.value(i));
        }
    }
    Ok((compare, errors))
}

#[tokio::test]
async fn evaluator_reproduces_paper_k_anonymization_columns() -> Result<()> {
    let (compare, errors) = run().await?;
    // 18 rows for Q1 and Q2, 9 for Q3 and Q4, for each of the three releases.
    assert_eq!(compare.len(), 3 * (18 + 18 + 9 + 9));
    let paper_q1 = [6.3, 186.2, 329.8];
    let paper_q2 = [4.5, 101.7, 379.2];
    for (query, counts, paper) in [
        ("Q1", NPS_TABLE9_MALE_COUNTS, paper_q1),
        ("Q2", NPS_TABLE10_FEMALE_COUNTS, paper_q2),
    ] {
        for (i, &n) in counts.iter().enumerate() {
            let label = 5 * i as i64 + 5;
            let (original, estimate) = compare[&("kanon".to_string(), query.to_string(), label)];
            assert_eq!(original, n as f64, "{query} row {label}");
            assert!(
                (estimate - paper[i / 6]).abs() <= 0.05,
                "{query} row {label}: {estimate} vs paper {}",
                paper[i / 6]
            );
        }
    }
    // The paper's own k-anonymization errors, from its rounded columns: 0.500 and 0.345.
    assert!((errors[&("kanon".into(), "Q1".into())] - 0.500).abs() < 0.005);
    assert!((errors[&("kanon".into(), "Q2".into())] - 0.345).abs() < 0.005);
    // Mean stay: every stay is 3, released as '[2-5)' whose midpoint (over its integers 2..4)
    // is 3, so Q3/Q4 are exact wherever a group has patients.
    for query in ["Q3", "Q4"] {
        for label in (20..=90).step_by(10) {
            let (original, estimate) = compare[&("kanon".to_string(), query.to_string(), label)];
            assert_eq!(original, 3.0, "{query} {label}");
            assert!((estimate - 3.0).abs() < 1e-9, "{query} {label}: {estimate}");
        }
    }
    // The release that publishes interval means is read by them: every stay is 4, and
    // counts do not change.
    for query in ["Q3", "Q4"] {
        for label in (20..=90).step_by(10) {
            let (_, estimate) = compare[&("means".to_string(), query.to_string(), label)];
            assert!((estimate - 4.0).abs() < 1e-9, "{query} {label}: {estimate}");
        }
    }
    for query in ["Q1", "Q2"] {
        let (means, kanon) = (
            errors[&("means".into(), query.into())],
            errors[&("kanon".into(), query.into())],
        );
        // Equal up to the order of a parallel floating-point sum.
        assert!((means - kanon).abs() < 1e-12, "{query}: {means} vs {kanon}");
    }
    // A suppressed stroke record counts 1/2 (sex) x 1/2 (surgery), spread over the 18 rows;
    // the non-stroke record is ignored; '*' stays have no midpoint, so Q3 has no estimate (0).
    for label in (5..=90).step_by(5) {
        let (_, estimate) = compare[&("star".to_string(), "Q1".to_string(), label)];
        assert!(
            (estimate - 0.25 / 18.0).abs() < 1e-12,
            "row {label}: {estimate}"
        );
    }
    for label in (10..=90).step_by(10) {
        assert_eq!(
            compare[&("star".to_string(), "Q3".to_string(), label)].1,
            0.0
        );
    }
    assert_eq!(errors[&("star".into(), "Q3".into())], 1.0);
    Ok(())
}

/// The demo script's copy of the evaluator is the one of `sql/paper_q1_q4.sql`.
#[test]
fn demo_script_uses_the_same_evaluator() {
    let demo = include_str!("../../sql/demo.sql");
    let section = |sql: &'static str| {
        let begin = sql.find("-- @evaluator begin").expect("begin marker");
        let end = sql.find("-- @evaluator end").expect("end marker");
        &sql[begin..end]
    };
    assert_eq!(section(demo), section(PAPER_SQL));
}
