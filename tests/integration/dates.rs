//! Hospital-shaped dates: a `DATE` birth date and a `TIMESTAMP` admission as
//! quasi-identifiers through `date_hierarchy` (k-anonymity and SafePub, read back with
//! GROUP BY on the released labels and checked against the source), and per-patient date
//! shifting (every interval within a patient kept, the same shift under the same key,
//! another under another key, never more than `max_days`).

use std::collections::{BTreeMap, BTreeSet};

use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{register_with, PseudonymKey, RegisterOptions};

/// 600 admissions of 200 patients (three each, a week and a month apart), born in the
/// 1950s, admitted in 2019 at various hours.
const SETUP: &str = "
CREATE TABLE admissions AS SELECT
  CAST(value % 200 AS INT) AS patient_id,
  CAST(CAST(CAST('1950-01-01' AS DATE) AS INT) + CAST((value % 200) * 17 % 3650 AS INT) AS DATE) AS birth_date,
  to_timestamp_seconds(1546329600 + ((value % 200) * 7 % 300 + (value / 200) * 20) * 86400 + (8 + value % 9) * 3600) AS admission,
  to_timestamp_seconds(1546329600 + ((value % 200) * 7 % 300 + (value / 200) * 20 + value % 5 + 1) * 86400 + 8 * 3600) AS discharge,
  CASE WHEN value % 200 < 100 THEN 'F' ELSE 'M' END AS sex
FROM range(0, 600);
CREATE TABLE birth_years AS SELECT * FROM date_hierarchy('1950-01-01..1959-12-31', levels => 'year|5y');
CREATE TABLE admission_months AS SELECT * FROM date_hierarchy('2018-11-01..2020-02-28', levels => 'month|quarter|year');
CREATE TABLE admissions_hierarchy_sex(value VARCHAR, level_1 VARCHAR) AS VALUES ('F', '*'), ('M', '*');
";

async fn owner(key: Option<&[u8]>) -> Result<SessionContext> {
    let ctx = SessionContext::new();
    let mut options = RegisterOptions::owner();
    options.pseudonym_key = key.map(PseudonymKey::new).transpose()?;
    register_with(&ctx, options)?;
    datafusion_anonymize::run_script(&ctx, SETUP).await?;
    Ok(ctx)
}

async fn rows(ctx: &SessionContext, sql: &str) -> Result<Vec<Vec<String>>> {
    crate::common::text_rows(ctx, sql).await
}

/// (label, count) pairs of a two-column query.
async fn counts(ctx: &SessionContext, sql: &str) -> Result<BTreeMap<String, i64>> {
    Ok(rows(ctx, sql)
        .await?
        .into_iter()
        .map(|r| (r[0].clone(), r[1].parse().expect("a count")))
        .collect())
}

const QI: &str = "qi => 'birth_date:birth_years, admission:admission_months, sex'";

/// k-anonymity at a fixed node (birth years in 5-year spans, admissions by month): the
/// released month labels, counted with GROUP BY, are exactly the source's admissions per
/// calendar month, and the birth spans the source's per 5 years.
#[tokio::test]
async fn kanon_releases_dates_and_timestamps_as_labels_that_count_back() -> Result<()> {
    let ctx = owner(None).await?;
    let release = format!(
        "anonymize('admissions', method => 'kanon', {QI}, k => 2, suppression_limit => 0, min_levels => 'birth_date=2, admission=1', max_levels => 'birth_date=2, admission=1, sex=0')"
    );
    let months = counts(
        &ctx,
        &format!("SELECT admission, COUNT(*) FROM {release} GROUP BY 1 ORDER BY 1"),
    )
    .await?;
    let source_months = counts(
        &ctx,
        "SELECT to_char(admission, '%Y-%m'), COUNT(*) FROM admissions GROUP BY 1 ORDER BY 1",
    )
    .await?;
    assert_eq!(months, source_months);
    assert_eq!(months.values().sum::<i64>(), 600);
    assert_eq!(months.get("2019-03"), Some(&64));
    let spans = counts(
        &ctx,
        &format!("SELECT birth_date, COUNT(*) FROM {release} GROUP BY 1 ORDER BY 1"),
    )
    .await?;
    assert_eq!(
        spans,
        BTreeMap::from([
            ("1950-1954".to_string(), 324),
            ("1955-1959".to_string(), 276)
        ])
    );
    // The labels read back as days: every admission lies within its month's first and last
    // day (checked on the source through the same labels).
    let outside = rows(
        &ctx,
        "SELECT COUNT(*) FROM admissions WHERE CAST(admission AS DATE) < gen_first_day(to_char(admission, '%Y-%m')) OR CAST(admission AS DATE) > gen_last_day(to_char(admission, '%Y-%m'))",
    )
    .await?;
    assert_eq!(outside, [["0"]]);
    // The risk of the timestamps is assessed on their days.
    let assessed = counts(
        &ctx,
        &format!("SELECT key, CAST(value AS BIGINT) FROM anonymize_assess('admissions', {QI}) WHERE key IN ('rows', 'classes')"),
    )
    .await?;
    let days = rows(
        &ctx,
        "SELECT COUNT(*) FROM (SELECT DISTINCT birth_date, CAST(admission AS DATE), sex FROM admissions)",
    )
    .await?;
    assert_eq!(assessed.get("rows"), Some(&600));
    assert_eq!(
        assessed.get("classes").map(|c| c.to_string()),
        Some(days[0][0].clone())
    );
    Ok(())
}

/// SafePub (seeded; at least 5-year birth spans and admission years, as k = 73 for 600
/// rows leaves nothing finer) on the same dates: every released admission label is one of
/// date_hierarchy's, and no class holds more rows than the source has there (its rows are
/// truthful source rows, sampled).
#[tokio::test]
async fn safepub_releases_date_labels_of_truthful_rows() -> Result<()> {
    let ctx = owner(None).await?;
    let released = rows(
        &ctx,
        &format!(
            "SELECT birth_date, admission, sex, COUNT(*) FROM anonymize('admissions', method => 'safepub', {QI}, epsilon => 2.0, delta => 1e-4, min_levels => 'birth_date=2, admission=3', seed => 7) GROUP BY 1, 2, 3"
        ),
    )
    .await?;
    let why = rows(&ctx, &format!("SELECT key, value FROM anonymize_metadata('admissions', method => 'safepub', {QI}, epsilon => 2.0, delta => 1e-4, min_levels => 'birth_date=2, admission=3', seed => 7)")).await?;
    assert!(!released.is_empty(), "SafePub released rows: {why:?}");
    let levels = rows(
        &ctx,
        &format!("SELECT value FROM anonymize_metadata('admissions', method => 'safepub', {QI}, epsilon => 2.0, delta => 1e-4, min_levels => 'birth_date=2, admission=3', seed => 7) WHERE key = 'node'"),
    )
    .await?;
    let node = &levels[0][0];
    let labels: BTreeSet<String> = rows(
        &ctx,
        "SELECT level_1 FROM admission_months UNION SELECT level_2 FROM admission_months UNION SELECT level_3 FROM admission_months UNION SELECT '*'",
    )
    .await?
    .into_iter()
    .map(|r| r[0].clone())
    .collect();
    for row in &released {
        assert!(labels.contains(&row[1]), "{row:?} at node {node}");
        if row[1] != "*" {
            let (first, last) = (
                format!("gen_first_day('{}')", row[1]),
                format!("gen_last_day('{}')", row[1]),
            );
            let source = rows(
                &ctx,
                &format!("SELECT COUNT(*) FROM admissions WHERE CAST(admission AS DATE) BETWEEN {first} AND {last} AND sex = '{}'", row[2]),
            )
            .await?;
            let source: i64 = source[0][0].parse().expect("a count");
            let released: i64 = row[3].parse().expect("a count");
            assert!(
                released <= source,
                "{row:?}: {released} > {source} in the source"
            );
        }
    }
    Ok(())
}

const KEY_A: &[u8] = &[11u8; 32];
const KEY_B: &[u8] = &[12u8; 32];

const SHIFTED: &str = "SELECT patient_id, admission, discharge FROM anonymize('admissions', method => 'kanon', qi => 'sex', k => 2, sensitive => 'admission, discharge', person => 'patient_id', identifiers => 'patient_id', identifier_mode => 'pseudonym', date_shift => 'admission, discharge', max_days => 30)";

/// Per patient (by pseudonym): the sorted (admission, discharge) pairs.
async fn shifted(ctx: &SessionContext) -> Result<BTreeMap<String, Vec<(String, String)>>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for r in rows(ctx, SHIFTED).await? {
        out.entry(r[0].clone())
            .or_default()
            .push((r[1].clone(), r[2].clone()));
    }
    for v in out.values_mut() {
        v.sort();
    }
    Ok(out)
}

fn seconds(text: &str) -> i64 {
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .expect("a timestamp")
        .and_utc()
        .timestamp()
}

/// Date shifting keeps every interval within a patient, moves all of a patient's dates
/// by one whole number of days within ±max_days, is the same under the same key (another
/// registration) and differs under another key.
#[tokio::test]
async fn date_shifting_keeps_intervals_and_follows_the_key() -> Result<()> {
    let ctx = owner(Some(KEY_A)).await?;
    let key = PseudonymKey::new(KEY_A)?;
    let released = shifted(&ctx).await?;
    assert_eq!(released.len(), 200);
    let mut source: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for r in rows(
        &ctx,
        "SELECT patient_id, admission, discharge FROM admissions",
    )
    .await?
    {
        source
            .entry(key.pseudonym(&r[0]))
            .or_default()
            .push((r[1].clone(), r[2].clone()));
    }
    let mut offsets = BTreeSet::new();
    for (patient, mut original) in source {
        original.sort();
        let moved = &released[&patient];
        assert_eq!(moved.len(), original.len());
        let delta = seconds(&moved[0].0) - seconds(&original[0].0);
        assert_eq!(delta % 86_400, 0, "whole days");
        assert!(
            (delta / 86_400).abs() <= 30,
            "{patient}: {} days",
            delta / 86_400
        );
        offsets.insert(delta / 86_400);
        for ((ma, md), (oa, od)) in moved.iter().zip(&original) {
            assert_eq!(seconds(ma) - seconds(oa), delta, "{patient}");
            assert_eq!(seconds(md) - seconds(od), delta, "{patient}");
        }
    }
    // 200 patients over 61 offsets: many distinct ones (fewer than 30 has probability
    // below 10⁻¹²).
    assert!(offsets.len() >= 30, "{} distinct offsets", offsets.len());
    // The same key in another registration: the same release.
    assert_eq!(shifted(&owner(Some(KEY_A)).await?).await?, released);
    // Another key: other pseudonyms and other offsets; compared through each key's own
    // pseudonyms, at most a few patients keep their offset.
    let other = shifted(&owner(Some(KEY_B)).await?).await?;
    let key_b = PseudonymKey::new(KEY_B)?;
    let same = (0..200)
        .filter(|p| {
            let (a, b) = (
                &released[&key.pseudonym(&p.to_string())],
                &other[&key_b.pseudonym(&p.to_string())],
            );
            a == b
        })
        .count();
    assert!(
        same < 25,
        "{same} of 200 patients kept their dates under another key"
    );
    // The metadata and the guarantee say it is masking.
    let metadata = counts_text(
        &ctx,
        &SHIFTED.replace(
            "SELECT patient_id, admission, discharge FROM anonymize(",
            "SELECT key, value FROM anonymize_metadata(",
        ),
    )
    .await?;
    assert!(
        metadata["date_shift"]
            .starts_with("admission, discharge moved by one offset per patient_id in -30..30 days"),
        "{}",
        metadata["date_shift"]
    );
    assert!(
        metadata["guarantee"]
            .contains("shifted per person by up to 30 days before the method ran: masking"),
        "{}",
        metadata["guarantee"]
    );
    Ok(())
}

async fn counts_text(ctx: &SessionContext, sql: &str) -> Result<BTreeMap<String, String>> {
    Ok(rows(ctx, sql)
        .await?
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect())
}

/// Shifted admissions generalize like any date (shifted before the hierarchy): the
/// release's months count the shifted days.
#[tokio::test]
async fn shifted_dates_are_generalized_after_shifting() -> Result<()> {
    let ctx = owner(Some(KEY_A)).await?;
    let months = counts(
        &ctx,
        "SELECT admission, COUNT(*) FROM anonymize('admissions', method => 'kanon', qi => 'admission:admission_months, sex', k => 2, suppression_limit => 0, min_levels => 'admission=1', max_levels => 'admission=1, sex=0', person => 'patient_id', date_shift => 'admission', max_days => 30) GROUP BY 1",
    )
    .await?;
    assert_eq!(months.values().sum::<i64>(), 600);
    // Shifted by up to 30 days, some admissions of January 2019 land in December 2018.
    assert!(months.contains_key("2018-12"), "{months:?}");
    Ok(())
}

#[tokio::test]
async fn bad_date_shift_arguments_are_named() -> Result<()> {
    let keyed = owner(Some(KEY_A)).await?;
    let unkeyed = owner(None).await?;
    let release = |extra: &str| {
        format!("SELECT * FROM anonymize('admissions', method => 'kanon', qi => 'sex', k => 2, {extra})")
    };
    let cases = [
        (&keyed, release("date_shift => 'admission'"), "date_shift moves every date of one person by the same offset, so it needs person => '<column identifying a person>'"),
        (&unkeyed, release("date_shift => 'admission', person => 'patient_id'"), "date_shift draws each person's offset with the owner's secret key"),
        (&keyed, release("date_shift => 'sex', person => 'patient_id'"), "date_shift column 'sex' is Utf8, not a DATE or TIMESTAMP"),
        (&keyed, release("date_shift => 'admision', person => 'patient_id'"), "admision"),
        (&keyed, release("date_shift => 'admission', person => 'patient_id', max_days => 4000"), "max_days must be between 1 and 3650 days, got 4000"),
        (&keyed, release("max_days => 10"), "argument 'max_days' applies only with date_shift"),
    ];
    for (ctx, sql, expected) in cases {
        let error = match ctx.sql(&sql).await {
            Ok(frame) => frame.collect().await.expect_err(&sql).to_string(),
            Err(e) => e.to_string(),
        };
        assert!(error.contains(expected), "{sql}\n{error}");
    }
    Ok(())
}

/// `anonymize_safe_harbor` on the source and on two releases of it: the source breaks the
/// rule with its patient id and its three date columns; a release with years passes; one
/// with admission months is named, with every row.
#[tokio::test]
async fn safe_harbor_findings_name_what_to_mend() -> Result<()> {
    let ctx = owner(None).await?;
    let findings = |table: &str| {
        let ctx = ctx.clone();
        let sql = format!("SELECT column_name, rule, rows FROM anonymize_safe_harbor('{table}') ORDER BY column_name");
        async move { rows(&ctx, &sql).await }
    };
    let row = |c: &str, r: &str, n: &str| vec![c.to_string(), r.to_string(), n.to_string()];
    assert_eq!(
        findings("admissions").await?,
        [
            row("admission", "(C) dates other than the year", "600"),
            row("birth_date", "(C) dates other than the year", "600"),
            row("discharge", "(C) dates other than the year", "600"),
            row("patient_id", "(R) other unique numbers or codes", "600"),
        ]
    );
    let release = |admission_level: u8| {
        format!("SELECT * FROM anonymize('admissions', method => 'kanon', {QI}, k => 1, min_levels => 'birth_date=1, admission={admission_level}', max_levels => 'birth_date=1, admission={admission_level}, sex=0')")
    };
    ctx.sql(&format!("CREATE VIEW by_year AS {}", release(3)))
        .await?
        .collect()
        .await?;
    ctx.sql(&format!("CREATE VIEW by_month AS {}", release(1)))
        .await?
        .collect()
        .await?;
    assert_eq!(findings("by_year").await?, Vec::<Vec<String>>::new());
    assert_eq!(
        findings("by_month").await?,
        [row("admission", "(C) dates other than the year", "600")]
    );
    let finding = rows(
        &ctx,
        "SELECT finding FROM anonymize_safe_harbor('by_month')",
    )
    .await?;
    assert_eq!(
        finding[0][0],
        "600 rows hold a date or a date label finer than a year; generalize to years"
    );
    Ok(())
}

/// The release report reads the timestamps as days too: its distributions bin the admission
/// column by month and the birth dates by year (the finest levels of at most 40 labels),
/// and no timestamp appears as it is.
#[tokio::test]
async fn the_report_shows_dates_by_their_labels() -> Result<()> {
    let ctx = owner(None).await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("dates.html");
    rows(
        &ctx,
        &format!(
            "SELECT * FROM anonymize_report('admissions', method => 'kanon', {QI}, k => 2, suppression_limit => 0, min_levels => 'birth_date=2, admission=1', max_levels => 'birth_date=2, admission=1, sex=0', path => '{}')",
            path.display()
        ),
    )
    .await?;
    let html = std::fs::read_to_string(&path)?;
    for label in ["2019-01", "2019-03", "1953"] {
        assert!(html.contains(label), "the report shows {label}");
    }
    assert!(
        !html.contains("T08:00:00"),
        "no timestamp is shown as it is"
    );
    Ok(())
}
