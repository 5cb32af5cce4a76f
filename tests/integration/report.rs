//! `anonymize_report(...)`: every number on the page is the one the SQL functions give for
//! the same release, the page fetches nothing, a report draws and charges nothing a release
//! with the same arguments has not, public users cannot write one, and a refused or failed
//! report leaves no file behind.

use std::collections::BTreeMap;
use std::path::Path;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{public_session, PublicPolicy, RegisterOptions};

use crate::common::{adult_owner, text_rows};

async fn owner() -> Result<SessionContext> {
    adult_owner().await
}

/// `(key, value)` of every figure on the page: the `data-figure` and `data-value`
/// attributes of its cells.
fn page_figures(html: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for piece in html.split("data-figure=\"").skip(1) {
        let Some((name, rest)) = piece.split_once('"') else {
            continue;
        };
        let Some(value) = rest
            .strip_prefix(" data-value=\"")
            .and_then(|v| v.split_once('"'))
            .map(|(v, _)| v)
        else {
            continue;
        };
        let value: f64 = value.parse().expect("data-value is a number");
        out.insert(name.replace("&#39;", "'").replace("&amp;", "&"), value);
    }
    out
}

/// `(key or key:sensitive, value)` of every numeric row of an `anonymize_assess` call.
async fn assess(ctx: &SessionContext, sql: &str) -> Result<BTreeMap<String, f64>> {
    let mut out = BTreeMap::new();
    for batch in ctx.sql(sql).await?.collect().await? {
        let key = batch.column(0).as_string::<i32>();
        let sensitive = batch.column(1).as_string::<i32>();
        let value = batch.column(2).as_primitive::<Float64Type>();
        for row in 0..batch.num_rows() {
            if value.is_null(row) {
                continue;
            }
            let name = if sensitive.is_null(row) {
                key.value(row).to_string()
            } else {
                format!("{}:{}", key.value(row), sensitive.value(row))
            };
            out.insert(name, value.value(row));
        }
    }
    Ok(out)
}

const KANON: &str = "'adult', method => 'kanon', qi => 'sex, age, race, marital-status', sensitive => 'salary-class', k => 5";

/// Writes the report of the Adult `kanon` release to `path`; the function's row.
async fn kanon_report(ctx: &SessionContext, path: &Path) -> Result<Vec<RecordBatch>> {
    ctx.sql(&format!(
        "SELECT * FROM anonymize_report({KANON}, path => '{}')",
        path.display()
    ))
    .await?
    .collect()
    .await
}

#[tokio::test]
async fn every_figure_equals_the_sql_function_that_computes_it() -> Result<()> {
    let ctx = owner().await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("kanon.html");
    let written = kanon_report(&ctx, &path).await?;
    let html = std::fs::read_to_string(&path)?;
    let bytes = cast(written[0].column(1), &DataType::UInt64)?;
    assert_eq!(
        bytes
            .as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
            .value(0),
        html.len() as u64
    );
    let sections = written[0].column(2).as_string::<i32>().value(0).to_string();
    for section in [
        "Summary",
        "Re-identification risk",
        "Attribute disclosure",
        "Attacks",
        "Utility",
        "Search",
        "Warnings",
    ] {
        assert!(sections.contains(section), "{sections}");
        assert!(
            html.contains(&format!("<h2>{section}</h2>")),
            "no section {section}"
        );
    }
    // The page opens with the guarantee card's headline, before any section.
    let card = crate::common::text_rows(
        &ctx,
        &format!("SELECT manifest FROM anonymize_manifest({KANON})"),
    )
    .await?;
    let card: serde_json::Value = serde_json::from_str(&card[0][0]).expect("JSON");
    let headline = card["headline"].as_str().expect("a headline");
    assert!(headline.contains("k-anonymity (k = 5)"), "{headline}");
    let at = html
        .find(&format!(
            "<p class=\"headline\">{}</p>",
            headline.replace('\'', "&#39;")
        ))
        .expect("the headline on the page");
    assert!(at < html.find("<h2>Summary</h2>").expect("Summary"));
    let figures = page_figures(&html);
    // The Attacks section: anonymize_attack's risks with its defaults, on the release and
    // on the source attacked as itself.
    for (side, extra) in [("after", ""), ("before", ", release => 'adult'")] {
        let rows = text_rows(
            &ctx,
            &format!("SELECT attack, risk FROM anonymize_attack({KANON}{extra})"),
        )
        .await?;
        // The three attacks and record linkage's two rows (kanon keeps each record's own
        // row; the source named as the release is its own rows).
        assert_eq!(rows.len(), 5, "{rows:?}");
        for row in rows {
            let expected: f64 = row[1].parse().expect("a number");
            let shown = figures[&format!("{side}:attack:{}", row[0])];
            assert!((shown - expected).abs() < 1e-12, "{side} {row:?}: {shown}");
        }
    }

    ctx.sql(&format!(
        "CREATE VIEW released AS SELECT * FROM anonymize({KANON})"
    ))
    .await?;
    let assess_args = "qi => 'sex, age, race, marital-status', sensitive => 'salary-class'";
    let before = assess(
        &ctx,
        &format!("SELECT * FROM anonymize_assess('adult', {assess_args})"),
    )
    .await?;
    let after = assess(
        &ctx,
        &format!("SELECT * FROM anonymize_assess('released', {assess_args})"),
    )
    .await?;
    // Both tables, every figure anonymize_assess gives, the same value on the page.
    for (side, expected) in [("before", &before), ("after", &after)] {
        assert!(expected.len() >= 14, "{side}: {expected:?}");
        for (key, value) in expected {
            let on_page = figures
                .get(&format!("{side}:{key}"))
                .unwrap_or_else(|| panic!("the page has no {side}:{key}"));
            assert_eq!(on_page, value, "{side}:{key}");
        }
    }
    // The release is k-anonymous; the source is not: the page shows both.
    assert!(figures["after:min_class_size"] >= 5.0);
    assert!(figures["before:min_class_size"] < 5.0);

    let loss = ctx
        .sql(&format!(
            "SELECT * FROM anonymize_information_loss({KANON})"
        ))
        .await?
        .collect()
        .await?;
    let schema = loss[0].schema();
    for (i, field) in schema.fields().iter().enumerate().skip(1) {
        let column = cast(loss[0].column(i), &DataType::Float64)?;
        let value = column.as_primitive::<Float64Type>().value(0);
        assert_eq!(
            figures[&format!("information_loss:{}", field.name())],
            value,
            "{}",
            field.name()
        );
    }
    // The share of records suppressed: the release's suppressed rows per input record;
    // kanon suppresses whole records, so the share of starred cells is the same.
    let records = figures["after:suppressed"] / figures["before:rows"];
    assert!(records > 0.0);
    assert_eq!(figures["share:records_suppressed"], records);
    let cells = figures["share:cells_suppressed"];
    assert!((cells - figures["after:suppressed"] / figures["after:rows"]).abs() < 1e-12);
    let score = figures["k_marginal_score"];
    assert!(score > 900.0 && score < 1000.0, "{score}");
    // Ten pairs of five columns, their mean the score.
    let pairs: Vec<f64> = figures
        .iter()
        .filter(|(k, _)| k.starts_with("k_marginal:"))
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(pairs.len(), 10);
    assert!((pairs.iter().sum::<f64>() / 10.0 - score).abs() < 1e-9);
    Ok(())
}

#[tokio::test]
async fn the_page_fetches_nothing_and_runs_no_script() -> Result<()> {
    let ctx = owner().await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("r.html");
    kanon_report(&ctx, &path).await?;
    let html = std::fs::read_to_string(&path)?.to_lowercase();
    for banned in [
        "<script", "<link", "<img", "<iframe", "<object", "url(", "@import", "src=",
    ] {
        assert!(!html.contains(banned), "the page contains {banned}");
    }
    // The only address is the SVG namespace, which names the format and is never fetched.
    let without_namespace = html.replace("http://www.w3.org/2000/svg", "");
    assert!(!without_namespace.contains("http:"), "an external address");
    assert!(!without_namespace.contains("https:"), "an external address");
    assert!(html.contains("<svg"), "no chart");
    Ok(())
}

/// `(releases, epsilon_spent)` of the Adult table.
async fn spent(ctx: &SessionContext) -> Result<(u64, f64)> {
    let batches = ctx
        .sql("SELECT releases, epsilon_spent FROM privacy_budget() WHERE table_name LIKE '%adult'")
        .await?
        .collect()
        .await?;
    match batches.iter().find(|b| b.num_rows() > 0) {
        None => Ok((0, 0.0)),
        Some(b) => Ok((
            b.column(0)
                .as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
                .value(0),
            b.column(1).as_primitive::<Float64Type>().value(0),
        )),
    }
}

#[tokio::test]
async fn a_report_draws_and_charges_nothing_a_release_has_not() -> Result<()> {
    let ctx = owner().await?;
    let dir = tempfile::tempdir()?;
    let ipa = "'adult', method => 'ipa', qi => 'sex, age, race', sensitive => 'marital-status', epsilon => 1";
    let report = |name: &str| {
        format!(
            "SELECT * FROM anonymize_report({ipa}, path => '{}')",
            dir.path().join(name).display()
        )
    };
    ctx.sql(&report("a.html")).await?.collect().await?;
    assert_eq!(spent(&ctx).await?, (1, 1.0));
    ctx.sql(&report("b.html")).await?.collect().await?;
    assert_eq!(spent(&ctx).await?, (1, 1.0), "a second report charged");
    // The release the reports describe is the one anonymize serves.
    let rows = ctx
        .sql(&format!("SELECT COUNT(*) FROM anonymize({ipa})"))
        .await?
        .collect()
        .await?;
    assert_eq!(spent(&ctx).await?, (1, 1.0), "anonymize drew anew");
    let count = rows[0]
        .column(0)
        .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
        .value(0);
    let html = std::fs::read_to_string(dir.path().join("b.html"))?;
    assert_eq!(page_figures(&html)["after:rows"], count as f64);
    let first = std::fs::read_to_string(dir.path().join("a.html"))?;
    let differs = first
        .bytes()
        .zip(html.bytes())
        .position(|(a, b)| a != b)
        .or((first.len() != html.len()).then_some(first.len().min(html.len())));
    if let Some(at) = differs {
        let from = at.saturating_sub(200);
        panic!(
            "two reports of one release differ at byte {at}: {:?} vs {:?}",
            first.get(from..(at + 100).min(first.len())),
            html.get(from..(at + 100).min(html.len()))
        );
    }
    Ok(())
}

#[tokio::test]
async fn public_users_cannot_write_a_report() -> Result<()> {
    let ctx = owner().await?;
    let policy = PublicPolicy {
        tables: vec!["adult_hierarchy_*".into()],
        ..PublicPolicy::default()
    };
    let public = public_session(&ctx, RegisterOptions::public(policy, 10.0))?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("r.html");
    let err = public
        .sql(&format!(
            "SELECT * FROM anonymize_report('adult', method => 'ipa', qi => 'sex, age', epsilon => 1, path => '{}')",
            path.display()
        ))
        .await
        .expect_err("public users may not write reports")
        .strip_backtrace();
    assert!(
        err.contains("anonymize_report() is an owner-only function"),
        "{err}"
    );
    assert!(!path.exists());
    Ok(())
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn refused_and_failed_reports_leave_nothing_behind() -> Result<()> {
    let ctx = owner().await?;
    let dir = tempfile::tempdir()?;
    let d = dir.path().display();
    let refused = [
        (
            format!("SELECT * FROM anonymize_report({KANON}, path => '{d}/r.txt')"),
            "must name an .html file",
        ),
        (
            format!("SELECT * FROM anonymize_report({KANON}, path => '{d}/missing/r.html')"),
            "does not exist",
        ),
        (
            format!("SELECT * FROM anonymize_report({KANON}, path => '{d}/r.html', risk_threshold => 0)"),
            "risk_threshold must be in (0, 1]",
        ),
        (
            format!("SELECT * FROM anonymize_report({KANON})"),
            "argument 'path' is required",
        ),
        (
            format!("SELECT * FROM anonymize_report({KANON}, path => '{d}/r.html', pth => 1)"),
            "unknown argument 'pth'",
        ),
    ];
    for (sql, expected) in refused {
        let run = async { ctx.sql(&sql).await?.collect().await };
        let err = run.await.expect_err(&sql).strip_backtrace();
        assert!(err.contains(expected), "{sql}: {err}");
    }
    // A release that fails (k above the number of records) writes nothing and charges
    // nothing.
    let failing = format!(
        "SELECT * FROM anonymize_report('adult', method => 'kanon', qi => 'sex', k => 100000, suppression_limit => 0, path => '{d}/r.html')"
    );
    let run = async { ctx.sql(&failing).await?.collect().await };
    assert!(run.await.is_err());
    assert_eq!(files_in(dir.path()), Vec::<String>::new());
    assert_eq!(spent(&ctx).await?.1, 0.0);
    Ok(())
}

/// The error bars: a dp_histogram release's page gives the noise's exact 95 % half-width
/// on 1 to 1,000 summed counts, as `dp_noise_interval` computes it; an IPA release's page
/// gives every interval mean `anonymize_interval_means` publishes, with its interval.
#[tokio::test]
async fn error_bars_are_dp_noise_interval_and_the_interval_means() -> Result<()> {
    let ctx = owner().await?;
    let dir = tempfile::tempdir()?;
    let histogram = "'adult', method => 'dp_histogram', qi => 'sex, race', epsilon => 0.5";
    let path = dir.path().join("histogram.html");
    ctx.sql(&format!(
        "SELECT * FROM anonymize_report({histogram}, path => '{}', attacks => 0)",
        path.display()
    ))
    .await?
    .collect()
    .await?;
    let html = std::fs::read_to_string(&path)?;
    assert!(html.contains("<h3>Error bars</h3>"));
    let figures = page_figures(&html);
    for cells in [1, 10, 100, 1000] {
        let interval = crate::common::text_rows(
            &ctx,
            &format!("SELECT half_width FROM dp_noise_interval(2, {cells}, 0.95)"),
        )
        .await?;
        assert_eq!(
            figures[&format!("noise_half_width:{cells}")],
            interval[0][0].parse::<f64>().unwrap(),
            "{cells} cells"
        );
    }

    let ipa = "'adult', method => 'ipa', qi => 'sex, age', informative => 'salary-class', epsilon => 1, seed => 3, min_levels => 'age=1'";
    let path = dir.path().join("ipa.html");
    ctx.sql(&format!(
        "SELECT * FROM anonymize_report({ipa}, path => '{}', attacks => 0)",
        path.display()
    ))
    .await?
    .collect()
    .await?;
    let figures = page_figures(&std::fs::read_to_string(&path)?);
    let means = crate::common::text_rows(
        &ctx,
        &format!(
            "SELECT column_name, label, mean, mean_low <= mean AND mean <= mean_high \
             FROM anonymize_interval_means({ipa})"
        ),
    )
    .await?;
    assert!(!means.is_empty());
    for row in &means {
        let key = format!("interval_mean:{}:{}", row[0], row[1]);
        assert_eq!(figures[&key], row[2].parse::<f64>().unwrap(), "{key}");
        assert_eq!(row[3], "true", "{row:?}");
    }
    Ok(())
}

/// The NIST CRC measures on the page are `anonymize_utility`'s with its defaults.
#[tokio::test]
async fn the_crc_measures_are_anonymize_utilitys() -> Result<()> {
    let ctx = owner().await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("kanon.html");
    kanon_report(&ctx, &path).await?;
    let figures = page_figures(&std::fs::read_to_string(&path)?);
    let rows = crate::common::text_rows(
        &ctx,
        &format!("SELECT metric, CAST(value AS VARCHAR) FROM anonymize_utility({KANON})"),
    )
    .await?;
    assert_eq!(rows.len(), 5, "{rows:?}");
    for row in rows {
        let key = format!("utility:{}", row[0]);
        assert_eq!(figures[&key], row[1].parse::<f64>().unwrap(), "{key}");
    }
    Ok(())
}

/// An MST release's page: the NIST CRC measures of its synthetic rows are
/// `anonymize_utility`'s for the same (seeded) release, and the page has the 2-way
/// k-marginal section.
#[tokio::test]
async fn an_mst_page_carries_its_utility() -> Result<()> {
    let ctx = owner().await?;
    let dir = tempfile::tempdir()?;
    let mst = "'adult', method => 'mst', qi => 'sex, race, marital-status', \
               informative => 'salary-class', epsilon => 1, seed => 4";
    let path = dir.path().join("mst.html");
    ctx.sql(&format!(
        "SELECT * FROM anonymize_report({mst}, path => '{}', attacks => 0)",
        path.display()
    ))
    .await?
    .collect()
    .await?;
    let html = std::fs::read_to_string(&path)?;
    assert!(html.contains("<h3>2-way k-marginal score</h3>"));
    let figures = page_figures(&html);
    let rows = text_rows(
        &ctx,
        &format!("SELECT metric, CAST(value AS VARCHAR) FROM anonymize_utility({mst})"),
    )
    .await?;
    assert_eq!(rows.len(), 5, "{rows:?}");
    for row in rows {
        let key = format!("utility:{}", row[0]);
        assert_eq!(figures[&key], row[1].parse::<f64>().unwrap(), "{key}");
    }
    Ok(())
}

/// SafePub's error bars: the page's intervals are `sample_count_interval`'s, and over the
/// released cells of 30 seeded SafePub draws on sex and salary class, the intervals hold
/// the source's rows behind each cell. Each interval holds with probability at least 95 %
/// (given its cell was released); the test asks 90 % of about 120 cells, which a 95 %
/// coverage misses with probability under 1 %.
#[tokio::test]
async fn safepub_counts_carry_sampling_intervals_that_hold() -> Result<()> {
    let ctx = owner().await?;
    let dir = tempfile::tempdir()?;
    let call = |seed: u64| {
        format!(
            "'adult', method => 'safepub', qi => 'sex', informative => 'salary-class', \
             epsilon => 1, delta => 1e-6, seed => {seed}"
        )
    };
    let rows = |sql: String| {
        let ctx = ctx.clone();
        async move { crate::common::text_rows(&ctx, &sql).await }
    };
    let meta = rows(format!(
        "SELECT key, value FROM anonymize_metadata({}) WHERE key IN ('beta', 'k') ORDER BY key",
        call(1)
    ))
    .await?;
    let (beta, k) = (meta[0][1].clone(), meta[1][1].clone());
    let cells_of = |seed: u64| {
        rows(format!(
            "SELECT sex, \"salary-class\", COUNT(*) FROM anonymize({}) GROUP BY 1, 2 ORDER BY 3, 1, 2",
            call(seed)
        ))
    };
    let interval = |count: u64, cells: usize| {
        rows(format!(
            "SELECT low, high FROM sample_count_interval({count}, {cells}, {beta}, {k})"
        ))
    };

    // The page's figures.
    let path = dir.path().join("safepub.html");
    ctx.sql(&format!(
        "SELECT * FROM anonymize_report({}, path => '{}', attacks => 0)",
        call(1),
        path.display()
    ))
    .await?
    .collect()
    .await?;
    let figures = page_figures(&std::fs::read_to_string(&path)?);
    let cells = cells_of(1).await?;
    assert!(!cells.is_empty());
    let count = |row: &Vec<String>| row[2].parse::<u64>().unwrap();
    let total: u64 = cells.iter().map(count).sum();
    for (name, count, n) in [
        ("smallest", count(&cells[0]), 1),
        ("largest", count(&cells[cells.len() - 1]), 1),
        ("all", total, cells.len()),
    ] {
        let found = interval(count, n).await?;
        assert_eq!(
            figures[&format!("sample_interval:{name}")],
            found[0][0].parse::<f64>().unwrap(),
            "{name}"
        );
    }

    // The intervals hold the source's rows behind each released cell.
    let truth = rows(
        "SELECT sex, \"salary-class\", COUNT(*) FROM adult GROUP BY 1, 2 \
         UNION ALL SELECT '*', \"salary-class\", COUNT(*) FROM adult GROUP BY 2"
            .into(),
    )
    .await?;
    let source = |sex: &str, salary: &str| {
        truth
            .iter()
            .find(|t| t[0] == sex && t[1] == salary)
            .map(|t| t[2].parse::<u64>().unwrap())
    };
    let (mut held, mut checked) = (0, 0);
    for seed in 1..=30 {
        for cell in cells_of(seed).await? {
            let truth = source(&cell[0], &cell[1]).expect("a released cell of the source");
            let found = interval(count(&cell), 1).await?;
            let (low, high): (u64, u64) =
                (found[0][0].parse().unwrap(), found[0][1].parse().unwrap());
            checked += 1;
            if (low..=high).contains(&truth) {
                held += 1;
            }
        }
    }
    assert!(checked >= 60, "{checked} cells");
    assert!(
        held as f64 >= 0.9 * checked as f64,
        "{held} of {checked} intervals hold the source's count"
    );
    Ok(())
}
