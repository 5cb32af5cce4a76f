//! Several tables of one patient: a view joining patients with their stays, released per
//! person. k-anonymity counts patients (each released class holds at least k distinct
//! patients, counted through pseudonyms); SafePub keeps at most `max_rows_per_person` rows
//! of each patient.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{register_with, PseudonymKey, RegisterOptions};

/// 150 patients with 1 to 3 stays each (330 stays), joined into one row per stay.
const SETUP: &str = "
CREATE TABLE patients AS SELECT CAST(value AS INT) AS patient_id, CAST(1940 + value * 7 % 50 AS INT) AS birth_year,
  CASE WHEN value % 3 = 0 THEN 'F' ELSE 'M' END AS sex FROM range(0, 150);
CREATE TABLE stays AS SELECT CAST(value % 150 AS INT) AS patient_id,
  CAST(CAST(CAST('2019-01-01' AS DATE) AS INT) + CAST(value * 13 % 365 AS INT) AS DATE) AS admitted,
  CASE WHEN value % 4 = 0 THEN 'I63' ELSE 'J18' END AS diagnosis
FROM range(0, 450) WHERE value % 150 < 150 - (value / 150) * 40;
CREATE VIEW patient_stays AS SELECT p.patient_id, p.birth_year, p.sex, s.admitted, s.diagnosis
  FROM stays s JOIN patients p ON p.patient_id = s.patient_id;
CREATE TABLE years AS SELECT * FROM interval_hierarchy('1940..1989', '5', '10', '20');
CREATE TABLE sexes(value VARCHAR, level_1 VARCHAR) AS VALUES ('F', '*'), ('M', '*');
CREATE TABLE months AS SELECT * FROM date_hierarchy('2019-01-01..2019-12-31', levels => 'month|quarter|year');
";

const KEY: &[u8] = &[21u8; 32];

async fn owner() -> Result<SessionContext> {
    let ctx = SessionContext::new();
    let mut options = RegisterOptions::owner();
    options.pseudonym_key = Some(PseudonymKey::new(KEY)?);
    register_with(&ctx, options)?;
    datafusion_anonymize::run_script(&ctx, SETUP).await?;
    Ok(ctx)
}

async fn rows(ctx: &SessionContext, sql: &str) -> Result<Vec<Vec<String>>> {
    crate::common::text_rows(ctx, sql).await
}

const QI: &str = "qi => 'birth_year:years, sex:sexes, admitted:months'";

#[tokio::test]
async fn kanon_on_a_joined_view_counts_patients_per_class() -> Result<()> {
    let ctx = owner().await?;
    let stays = rows(&ctx, "SELECT SUM(n), COUNT(*), MAX(n) FROM (SELECT patient_id, COUNT(*) AS n FROM patient_stays GROUP BY 1)").await?;
    let (rows_total, patients): (usize, usize) = (
        stays[0][0].parse().expect("n"),
        stays[0][1].parse().expect("n"),
    );
    assert_eq!(patients, 150);
    assert!(rows_total > 300, "{rows_total} stays");
    assert!(
        stays[0][2].parse::<usize>().expect("n") >= 3,
        "patients with several stays"
    );
    let released = rows(
        &ctx,
        &format!("SELECT birth_year, sex, admitted, patient_id FROM anonymize('patient_stays', method => 'kanon', {QI}, sensitive => 'diagnosis', k => 3, person => 'patient_id', identifiers => 'patient_id', identifier_mode => 'pseudonym')"),
    )
    .await?;
    assert_eq!(
        released.len(),
        rows_total,
        "kanon keeps every row (suppressed ones as '*')"
    );
    let mut classes: BTreeMap<(String, String, String), BTreeSet<String>> = BTreeMap::new();
    for r in &released {
        classes
            .entry((r[0].clone(), r[1].clone(), r[2].clone()))
            .or_default()
            .insert(r[3].clone());
    }
    for (class, patients) in &classes {
        let suppressed = class.0 == "*" && class.1 == "*" && class.2 == "*";
        assert!(
            suppressed || patients.len() >= 3,
            "{class:?} holds {} patients",
            patients.len()
        );
    }
    // The metadata's figure is the smallest count of distinct patients in a class.
    let smallest = classes
        .iter()
        .filter(|(c, _)| !(c.0 == "*" && c.1 == "*" && c.2 == "*"))
        .map(|(_, p)| p.len())
        .min()
        .expect("a class");
    let stated = rows(
        &ctx,
        &format!("SELECT value FROM anonymize_metadata('patient_stays', method => 'kanon', {QI}, sensitive => 'diagnosis', k => 3, person => 'patient_id') WHERE key = 'min_persons_per_class'"),
    )
    .await?;
    assert_eq!(stated, [[smallest.to_string()]]);
    Ok(())
}

#[tokio::test]
async fn safepub_on_a_joined_view_bounds_each_patient() -> Result<()> {
    let ctx = owner().await?;
    // Released rows carry no patient id (SafePub takes no pseudonyms), so the bound is
    // checked on the total: at most one row per patient of the 150, where the 330 stays
    // sampled without the bound would give about 280. (Every column fully generalized:
    // SafePub's k for epsilon 2 needs one large class.)
    let released = rows(
        &ctx,
        &format!("SELECT COUNT(*) FROM anonymize('patient_stays', method => 'safepub', {QI}, epsilon => 2, delta => 1e-4, min_levels => 'birth_year=4, sex=1, admitted=4', person => 'patient_id', max_rows_per_person => 1, seed => 3)"),
    )
    .await?;
    let n: usize = released[0][0].parse().expect("a count");
    assert!(
        n > 0 && n <= 150,
        "{n} rows released from 150 patients at one row each"
    );
    let metadata: BTreeMap<String, String> = rows(
        &ctx,
        &format!("SELECT key, value FROM anonymize_metadata('patient_stays', method => 'safepub', {QI}, epsilon => 2, delta => 1e-4, min_levels => 'birth_year=4, sex=1, admitted=4', person => 'patient_id', max_rows_per_person => 1, seed => 3)"),
    )
    .await?
    .into_iter()
    .map(|r| (r[0].clone(), r[1].clone()))
    .collect();
    assert_eq!(metadata["max_rows_per_person"], "1");
    assert_eq!(metadata["epsilon_per_person"], "2");
    assert!(
        metadata["privacy_unit"].contains("patient_id"),
        "{}",
        metadata["privacy_unit"]
    );
    Ok(())
}
