//! The guarantee card of a release (`anonymize_manifest(...)`) and the manifest a `COPY … TO`
//! of a release writes beside its output: the card states what the public metadata states,
//! the source's fingerprint is keyed (another key or a neighbouring table, another
//! fingerprint; no key, none), and a COPY that fails leaves no card behind.

use std::collections::BTreeMap;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{
    manifest_path, register_with, run_script, CopyManifest, GuaranteeCard, PseudonymKey,
    RegisterOptions,
};

use crate::common::text_rows;

const SETUP: &str = "
CREATE TABLE v(pid INT, age INT, sex VARCHAR, disease VARCHAR) AS VALUES
  (101, 31, 'M', 'flu'), (102, 32, 'M', 'flu'), (103, 36, 'F', 'cold'), (104, 37, 'F', 'flu'),
  (105, 33, 'M', 'flu'), (106, 38, 'F', 'cold'), (107, 41, 'M', 'cold'), (108, 43, 'F', 'flu');
CREATE TABLE v_hierarchy_age AS SELECT * FROM interval_hierarchy('30..49', '5', '10');
CREATE TABLE v_hierarchy_sex(a VARCHAR, b VARCHAR) AS VALUES ('M', '*'), ('F', '*');
";

const KANON: &str = "'v', method => 'kanon', qi => 'age, sex', k => 2, sensitive => 'disease'";
const DP: &str =
    "'v', method => 'dp_histogram', qi => 'age, sex', informative => 'disease', epsilon => 0.5";

async fn owner(key: Option<u8>) -> Result<SessionContext> {
    let ctx = SessionContext::new();
    let mut options = RegisterOptions::owner();
    options.pseudonym_key = key.map(|k| PseudonymKey::new(&[k; 32])).transpose()?;
    register_with(&ctx, options)?;
    run_script(&ctx, SETUP).await?;
    Ok(ctx)
}

async fn card(ctx: &SessionContext, args: &str) -> Result<GuaranteeCard> {
    let rows = text_rows(
        ctx,
        &format!("SELECT manifest FROM anonymize_manifest({args})"),
    )
    .await?;
    assert_eq!(rows.len(), 1);
    Ok(serde_json::from_str(&rows[0][0]).expect("the card is JSON"))
}

async fn metadata(ctx: &SessionContext, args: &str) -> Result<Vec<(String, String)>> {
    let rows = text_rows(
        ctx,
        &format!("SELECT key, value FROM anonymize_metadata({args})"),
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect())
}

fn methods_has_section(section: &str) -> bool {
    let number = section.trim_start_matches("docs/METHODS.md §");
    let methods = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/METHODS.md"))
        .expect("docs/METHODS.md");
    methods
        .lines()
        .any(|l| l.starts_with('#') && l.contains(&format!(" {number} ")))
}

#[tokio::test]
async fn the_card_states_what_the_metadata_and_the_ledger_state() -> Result<()> {
    let ctx = owner(Some(7)).await?;
    for (args, method, kind, section) in [
        (
            DP,
            "dp_histogram",
            "differential privacy",
            "docs/METHODS.md §4.3",
        ),
        (KANON, "kanon", "syntactic", "docs/METHODS.md §3.5"),
    ] {
        let card = card(&ctx, args).await?;
        let meta = metadata(&ctx, args).await?;
        let get = |key: &str| meta.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        assert_eq!(card.format, "datafusion-anonymize guarantee card");
        assert_eq!(card.method, method);
        assert_eq!(card.guarantee_kind, kind);
        assert_eq!(card.methods_section, section);
        assert!(methods_has_section(&card.methods_section), "{section}");
        assert_eq!(
            card.metadata
                .iter()
                .map(|e| (e.key.clone(), e.value.clone()))
                .collect::<Vec<_>>(),
            meta
        );
        assert_eq!(Some(card.proven.clone()), get("guarantee"));
        assert_eq!(Some(card.privacy_unit.clone()), get("privacy_unit"));
        assert_eq!(Some(card.released_rows.to_string()), get("released_rows"));
        let released = text_rows(&ctx, &format!("SELECT COUNT(*) FROM anonymize({args})")).await?;
        assert_eq!(released[0][0], card.released_rows.to_string());
        assert!(!card.seeded);
        assert_eq!(card.source.table, "v");
        assert!(card.software.starts_with("datafusion-anonymize "));
        // Both hierarchies, fingerprinted in the clear.
        let columns: Vec<&str> = card.hierarchies.iter().map(|h| h.column.as_str()).collect();
        assert_eq!(columns, ["age", "sex"]);
        for h in &card.hierarchies {
            let fp = h.fingerprint.as_deref().expect("a hierarchy table");
            assert!(fp.starts_with("sha256:") && fp.len() == 7 + 64, "{fp}");
        }
        assert_ne!(
            card.hierarchies[0].fingerprint,
            card.hierarchies[1].fingerprint
        );
        assert!(
            card.headline.starts_with(&format!(
                "Method {method} released {} rows of 'v'",
                card.released_rows
            )),
            "{}",
            card.headline
        );
        assert!(!card.not_proven.is_empty());
    }
    // The DP card's epsilon and delta are the ledger's charge.
    let dp = card(&ctx, DP).await?;
    assert_eq!((dp.epsilon, dp.delta), (Some(0.5), Some(0.0)));
    assert!(
        dp.headline.contains("0.5-differential privacy per row"),
        "{}",
        dp.headline
    );
    let spent = text_rows(
        &ctx,
        "SELECT table_name, epsilon_spent FROM privacy_budget()",
    )
    .await?;
    assert_eq!(
        spent,
        vec![vec![dp.ledger.account.clone(), "0.5".to_string()]]
    );
    assert_eq!(dp.ledger.epsilon_charged, 0.5);
    // kanon charges nothing and claims no epsilon.
    let kanon = card(&ctx, KANON).await?;
    assert_eq!((kanon.epsilon, kanon.delta), (None, None));
    assert_eq!(kanon.ledger.epsilon_charged, 0.0);
    assert!(
        kanon.headline.contains("k-anonymity (k = 2)"),
        "{}",
        kanon.headline
    );
    // A seeded trial has no guarantee, and its card says so first.
    let seeded = card(&ctx, &format!("{DP}, seed => 3")).await?;
    assert!(seeded.seeded);
    assert_eq!(seeded.guarantee_kind, "none (seeded)");
    assert_eq!((seeded.epsilon, seeded.ledger.epsilon_charged), (None, 0.0));
    assert!(seeded
        .headline
        .starts_with("A seeded trial of method dp_histogram on 'v'"));
    assert!(seeded.not_proven[0].starts_with("Any privacy"));
    Ok(())
}

#[tokio::test]
async fn the_source_fingerprint_is_keyed_and_tells_contents_apart() -> Result<()> {
    let fingerprint = |card: GuaranteeCard| card.source.fingerprint;
    let a = fingerprint(card(&owner(Some(1)).await?, KANON).await?).expect("keyed");
    assert!(a.starts_with("hmac-sha256:") && a.len() == 12 + 64, "{a}");
    // The same contents under the same key: the same fingerprint, in another registration.
    assert_eq!(
        fingerprint(card(&owner(Some(1)).await?, KANON).await?),
        Some(a.clone())
    );
    // Another key: another fingerprint.
    let b = fingerprint(card(&owner(Some(2)).await?, KANON).await?).expect("keyed");
    assert_ne!(a, b);
    // A neighbouring table (one record removed): another fingerprint.
    let ctx = owner(Some(1)).await?;
    run_script(
        &ctx,
        "CREATE TABLE v_all AS SELECT * FROM v; DROP TABLE v;
         CREATE TABLE v AS SELECT * FROM v_all WHERE pid <> 108",
    )
    .await?;
    let neighbour = fingerprint(card(&ctx, KANON).await?).expect("keyed");
    assert_ne!(neighbour, a);
    // Without a key there is no fingerprint, and the card says why.
    let unkeyed = card(&owner(None).await?, KANON).await?;
    assert_eq!(unkeyed.source.fingerprint, None);
    assert!(unkeyed
        .source
        .fingerprint_note
        .contains("neighbouring tables"));
    Ok(())
}

fn read_manifest(target: &std::path::Path) -> CopyManifest {
    let text = std::fs::read_to_string(manifest_path(target)).expect("the manifest");
    serde_json::from_str(&text).expect("the manifest is JSON")
}

fn files(dir: &std::path::Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .expect("list")
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().to_string(),
                e.metadata().map(|m| m.len()).unwrap_or(0),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_copy_of_a_release_writes_its_card_beside_the_output() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let ctx = owner(Some(5)).await?;
    let target = dir.path().join("r.csv");
    let t = target.to_string_lossy().to_string();
    run_script(
        &ctx,
        &format!("COPY (SELECT * FROM anonymize({DP})) TO '{t}' STORED AS CSV"),
    )
    .await?;
    let manifest = read_manifest(&target);
    assert_eq!(manifest.format, "datafusion-anonymize copy manifest");
    assert_eq!(manifest.output, t);
    assert_eq!(manifest.releases, vec![card(&ctx, DP).await?]);
    assert!(manifest.other_tables.is_empty());
    // The released rows are the card's: one charge, one draw.
    let copied = std::fs::read_to_string(&target)?.lines().count() - 1;
    assert_eq!(copied as u64, manifest.releases[0].released_rows);

    // Through a view, and joined with another table: that table is named, no card covers it.
    let joined = dir.path().join("joined.csv");
    let j = joined.to_string_lossy().to_string();
    run_script(
        &ctx,
        &format!(
            "CREATE VIEW rv AS SELECT * FROM anonymize({KANON});
             COPY (SELECT rv.*, w.n FROM rv CROSS JOIN (SELECT COUNT(*) AS n FROM v) w) TO '{j}' STORED AS CSV"
        ),
    )
    .await?;
    let manifest = read_manifest(&joined);
    assert_eq!(manifest.releases, vec![card(&ctx, KANON).await?]);
    assert_eq!(manifest.other_tables, vec!["v".to_string()]);

    // A COPY of other rows over the same target removes the card that no longer fits.
    run_script(
        &ctx,
        &format!("COPY (SELECT 1 AS x) TO '{t}' STORED AS CSV"),
    )
    .await?;
    assert!(target.exists());
    assert!(!manifest_path(&target).exists());
    Ok(())
}

#[tokio::test]
async fn a_copy_whose_card_or_release_fails_leaves_nothing() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let ctx = owner(None).await?;
    // The card's place is taken by a directory: the card cannot be written, the statement
    // fails and its output goes with it.
    let target = dir.path().join("f.csv");
    std::fs::create_dir(manifest_path(&target))?;
    let t = target.to_string_lossy();
    let e = run_script(
        &ctx,
        &format!("COPY (SELECT * FROM anonymize({KANON})) TO '{t}' STORED AS CSV"),
    )
    .await
    .expect_err("the card cannot be written");
    assert!(
        e.to_string().contains("cannot write the guarantee card"),
        "{e}"
    );
    assert_eq!(
        files(dir.path()).keys().cloned().collect::<Vec<_>>(),
        vec!["f.csv.manifest.json".to_string()],
        "only the directory that was there before"
    );
    // A release that fails: no output, no card.
    let other = dir.path().join("g.csv");
    let g = other.to_string_lossy();
    let e = run_script(
        &ctx,
        &format!("COPY (SELECT * FROM anonymize('v', method => 'kanon', qi => 'age, sex', k => 100, suppression_limit => 0)) TO '{g}' STORED AS CSV"),
    )
    .await
    .expect_err("no node is 100-anonymous");
    assert!(!e.to_string().is_empty());
    assert!(!other.exists());
    assert!(!manifest_path(&other).exists());
    Ok(())
}
