//! MST against private-pgm's MST on the same data, domains, ε and δ: prints one line per
//! case,
//! `CASE name=<case> rows=<n> median_s=<x> peak_rss_mb=<y> k_marginal=<median>
//! pgm_median_s=<x> pgm_rss_mb=<y> pgm_k_marginal=<median> speedup=<pgm / ours>`.
//!
//! `mst_adult` releases Adult's nine quasi-identifiers; `mst_nps_1361000` the embedded
//! NPS-shaped demo data (age, sex, surgery, los, location and the informative disease),
//! both at every column's leaf values (the domain of each column is its distinct values in
//! the data, the same for both), ε = 1, δ = 1e-9. `median_s` is our release, `SELECT
//! COUNT(*) FROM anonymize(method => 'mst', ...)` on the table in memory;
//! `pgm_median_s` is private-pgm's algorithm on the same records in memory
//! (`benches/mst_private_pgm.py`, on PyPI's `mbi` 2.0.0: 2,500 steps for the tree's
//! 1-way model, 10,000 for the fit), after its data are loaded. `k_marginal` is NIST CRC's
//! 2-way k-marginal score of each release against the source (`anonymize_utility`,
//! 0–1000), the median over the runs.
//!
//! On the NPS data the line also carries the IPA paper's queries Q1–Q4 (sql/paper_q1_q4.sql's
//! evaluator, relative L1 error, median over the runs) of both releases: `q=<q1>/<q2>/<q3>/<q4>`
//! and `pgm_q=…`.
//!
//! `cargo bench --bench mst` runs both cases; `-- <filter>` only the cases whose name
//! contains it; `--runs N` sets the repetitions (default 3). private-pgm runs in the virtual
//! environment `$HOME/.cache/dfanon-pgm-venv`, which the bench makes with `pip install
//! mbi==2.0.0` when it is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{register_with, RegisterOptions};

/// One comparison: the source table's SQL, its quasi-identifiers and informative column.
struct Case {
    name: &'static str,
    setup: &'static str,
    qi: &'static [&'static str],
    informative: Option<&'static str>,
    /// Whether the IPA paper's queries Q1–Q4 (sql/paper_q1_q4.sql) apply to the data.
    paper_queries: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "mst_adult",
        setup: "CREATE EXTERNAL TABLE src STORED AS CSV LOCATION 'tests/data/adult/adult.csv' \
                OPTIONS ('format.delimiter' ';', 'format.has_header' 'true')",
        qi: &[
            "sex",
            "age",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "occupation",
            "salary-class",
        ],
        informative: None,
        paper_queries: false,
    },
    Case {
        name: "mst_nps_1361000",
        setup: "CREATE TABLE src AS SELECT * FROM nps_demo()",
        qi: &["age", "sex", "surgery", "los", "location"],
        informative: Some("disease"),
        paper_queries: true,
    },
];

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

fn fail(what: impl Into<String>) -> DataFusionError {
    DataFusionError::Execution(what.into())
}

async fn run(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

/// A column name as SQL writes it.
fn quoted(column: &str) -> String {
    format!("\"{column}\"")
}

/// The arguments of the release after the source and the method.
fn arguments(case: &Case) -> String {
    let informative = case
        .informative
        .map_or(String::new(), |c| format!(", informative => '{c}'"));
    format!(
        "qi => '{}'{informative}, epsilon => 1, delta => 1e-9, max_cells => 10000000",
        case.qi.join(", ")
    )
}

/// The k-marginal score of the release with `arguments` (or of the table `release`).
async fn k_marginal(ctx: &SessionContext, arguments: &str) -> Result<f64> {
    let batches = run(
        ctx,
        &format!(
            "SELECT value FROM anonymize_utility('src', method => 'mst', {arguments}, metrics => 'k_marginal') WHERE metric = 'k_marginal'"
        ),
    )
    .await?;
    let batch = batches.first().ok_or_else(|| fail("no k_marginal"))?;
    Ok(batch.column(0).as_primitive::<Float64Type>().value(0))
}

/// The virtual environment with private-pgm's `mbi`, made when missing.
fn pgm_python() -> Result<PathBuf> {
    let home = std::env::var("HOME").map_err(|_| fail("HOME is not set"))?;
    let venv = Path::new(&home).join(".cache/dfanon-pgm-venv");
    let python = venv.join("bin/python");
    let has_mbi = |python: &Path| {
        Command::new(python)
            .args(["-c", "import mbi"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has_mbi(&python) {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()?;
        let installed = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "mbi==2.0.0"])
            .status()?;
        if !made.success() || !installed.success() || !has_mbi(&python) {
            return Err(fail("could not install mbi==2.0.0 from PyPI"));
        }
    }
    Ok(python)
}

/// Every column the model reads, in order.
fn columns(case: &Case) -> Vec<&'static str> {
    case.qi.iter().copied().chain(case.informative).collect()
}

/// Writes the source as integer codes (each column's distinct values in sorted order) and
/// the domain sizes for private-pgm; the code tables stay in `ctx` as `code_<i>`.
async fn export_codes(ctx: &SessionContext, case: &Case, dir: &Path) -> Result<(String, String)> {
    let mut sizes = Vec::new();
    let mut select = Vec::new();
    let mut joins = Vec::new();
    for (i, column) in columns(case).iter().enumerate() {
        let q = quoted(column);
        run(
            ctx,
            &format!(
                "CREATE TABLE code_{i} AS SELECT v, CAST(ROW_NUMBER() OVER (ORDER BY v) - 1 AS BIGINT) AS code \
                 FROM (SELECT DISTINCT {q} AS v FROM src)"
            ),
        )
        .await?;
        let count = run(ctx, &format!("SELECT COUNT(*) FROM code_{i}")).await?;
        let count = count[0].column(0).as_primitive::<Int64Type>().value(0);
        sizes.push(format!("{q}: {count}"));
        select.push(format!("c{i}.code AS {q}"));
        joins.push(format!(
            "JOIN code_{i} c{i} ON src.{q} IS NOT DISTINCT FROM c{i}.v"
        ));
    }
    let data = dir.join("codes.csv").to_string_lossy().to_string();
    run(
        ctx,
        &format!(
            "COPY (SELECT {} FROM src {}) TO '{data}' STORED AS CSV OPTIONS ('format.has_header' 'true')",
            select.join(", "),
            joins.join(" ")
        ),
    )
    .await?;
    let domain = dir.join("domain.json").to_string_lossy().to_string();
    std::fs::write(&domain, format!("{{{}}}", sizes.join(", ")))?;
    Ok((data, domain))
}

/// private-pgm's MST once: its time, its peak memory and the k-marginal score of its
/// synthetic records (decoded back to the source's values, quasi-identifiers as text like
/// a release's).
async fn pgm_run(
    ctx: &SessionContext,
    case: &Case,
    python: &Path,
    files: &(String, String),
    dir: &Path,
    seed: usize,
) -> Result<(f64, f64, f64)> {
    let out = dir.join(format!("pgm_{seed}.csv"));
    let output = Command::new(python)
        .arg("benches/mst_private_pgm.py")
        .args([
            "--data",
            &files.0,
            "--domain",
            &files.1,
            "--seed",
            &seed.to_string(),
        ])
        .arg("--out")
        .arg(&out)
        .output()?;
    if !output.status.success() {
        return Err(fail(format!(
            "private-pgm failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let field = |name: &str| -> Result<f64> {
        let start = line
            .find(&format!("\"{name}\": "))
            .ok_or_else(|| fail(format!("no {name} in {line}")))?
            + name.len()
            + 4;
        let rest = &line[start..];
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        rest[..end]
            .trim()
            .parse::<f64>()
            .map_err(|e| fail(format!("{name}: {e}")))
    };
    let (seconds, rss) = (field("seconds")?, field("peak_rss_mb")?);
    let table = format!("pgm_{seed}");
    run(
        ctx,
        &format!(
            "CREATE EXTERNAL TABLE {table}_codes STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
            out.to_string_lossy()
        ),
    )
    .await?;
    let mut select = Vec::new();
    let mut joins = Vec::new();
    for (i, column) in columns(case).iter().enumerate() {
        let q = quoted(column);
        let value = match case.qi.contains(column) {
            true => format!("CAST(c{i}.v AS VARCHAR) AS {q}"),
            false => format!("c{i}.v AS {q}"),
        };
        select.push(value);
        joins.push(format!("JOIN code_{i} c{i} ON p.{q} = c{i}.code"));
    }
    run(
        ctx,
        &format!(
            "CREATE TABLE {table} AS SELECT {} FROM {table}_codes p {}",
            select.join(", "),
            joins.join(" ")
        ),
    )
    .await?;
    let score = k_marginal(ctx, &format!("{}, release => '{table}'", arguments(case))).await?;
    Ok((seconds, rss, score))
}

async fn case_run(case: &Case, runs: usize, dir: &Path, python: &Path) -> Result<String> {
    let ctx = SessionContext::new();
    register_with(&ctx, RegisterOptions::owner())?;
    run(&ctx, case.setup).await?;
    // Each quasi-identifier's hierarchy is its distinct values under '*': the same domain
    // private-pgm gets.
    for column in case.qi {
        let q = quoted(column);
        run(
            &ctx,
            &format!(
                "CREATE TABLE \"src_hierarchy_{column}\" AS SELECT DISTINCT CAST({q} AS VARCHAR) AS value, '*' AS level_1 FROM src"
            ),
        )
        .await?;
    }
    let rows = run(&ctx, "SELECT COUNT(*) FROM src").await?;
    let rows = rows[0].column(0).as_primitive::<Int64Type>().value(0);
    let (mut times, mut scores, mut rss) = (Vec::new(), Vec::new(), 0.0f64);
    for seed in 0..runs {
        let arguments = format!("{}, seed => {seed}", arguments(case));
        reset_peak_rss();
        let start = Instant::now();
        run(
            &ctx,
            &format!("SELECT COUNT(*) FROM anonymize('src', method => 'mst', {arguments})"),
        )
        .await?;
        times.push(start.elapsed().as_secs_f64());
        if case.paper_queries {
            run(
                &ctx,
                &format!(
                    "CREATE TABLE ours_{seed} AS SELECT * FROM anonymize('src', method => 'mst', {arguments})"
                ),
            )
            .await?;
        }
        rss = rss.max(peak_rss_mb());
        scores.push(k_marginal(&ctx, &arguments).await?);
    }
    let files = export_codes(&ctx, case, dir).await?;
    let (mut pgm_times, mut pgm_scores, mut pgm_rss) = (Vec::new(), Vec::new(), 0.0f64);
    for seed in 0..runs {
        let (seconds, peak, score) = pgm_run(&ctx, case, python, &files, dir, seed).await?;
        pgm_times.push(seconds);
        pgm_scores.push(score);
        pgm_rss = pgm_rss.max(peak);
    }
    let (ours, theirs) = (median(times), median(pgm_times));
    let queries = match case.paper_queries {
        true => {
            let (q, pgm_q) = paper_queries(&ctx, runs).await?;
            format!(" q={q} pgm_q={pgm_q}")
        }
        false => String::new(),
    };
    Ok(format!(
        "CASE name={} rows={rows} median_s={ours:.3} peak_rss_mb={rss:.0} k_marginal={:.1} pgm_median_s={theirs:.3} pgm_rss_mb={pgm_rss:.0} pgm_k_marginal={:.1} speedup={:.1}{queries}",
        case.name,
        median(scores),
        median(pgm_scores),
        theirs / ours
    ))
}

/// Q1–Q4's median relative L1 errors over the runs, `q1/q2/q3/q4`, of our releases
/// (`ours_<seed>`) and private-pgm's (`pgm_<seed>`), with sql/paper_q1_q4.sql's evaluator
/// against the source.
async fn paper_queries(ctx: &SessionContext, runs: usize) -> Result<(String, String)> {
    let text = std::fs::read_to_string("sql/paper_q1_q4.sql")?;
    let (begin, end) = (
        text.find("-- @evaluator begin")
            .ok_or_else(|| fail("no evaluator in sql/paper_q1_q4.sql"))?,
        text.find("-- @evaluator end")
            .ok_or_else(|| fail("no evaluator end in sql/paper_q1_q4.sql"))?,
    );
    let columns = ["age", "sex", "los", "surgery", "location", "disease"];
    let select = columns
        .iter()
        .map(|c| format!("CAST({c} AS VARCHAR) AS {c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let releases = (0..runs)
        .flat_map(|seed| ["ours", "pgm"].map(|who| (who, seed)))
        .map(|(who, seed)| {
            format!("SELECT '{who}_{seed}' AS release, {select} FROM {who}_{seed} WHERE disease LIKE 'I6%'")
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    run(ctx, "CREATE VIEW nps AS SELECT * FROM src").await?;
    run(ctx, &format!("CREATE TABLE releases AS {releases}")).await?;
    run(
        ctx,
        "CREATE TABLE release_means (release VARCHAR, column_name VARCHAR, label VARCHAR, mean DOUBLE)",
    )
    .await?;
    // Comment lines out first: they may hold semicolons.
    let code: String = text[begin..end]
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    for sql in code.split(';').filter(|s| !s.trim().is_empty()) {
        run(ctx, sql).await?;
    }
    let mut medians = Vec::new();
    for who in ["ours", "pgm"] {
        let mut per_query = Vec::new();
        for query in ["Q1", "Q2", "Q3", "Q4"] {
            let batches = run(
                ctx,
                &format!(
                    "SELECT rel_l1 FROM paper_error WHERE query = '{query}' AND starts_with(release, '{who}_')"
                ),
            )
            .await?;
            let errors: Vec<f64> = batches
                .iter()
                .flat_map(|b| {
                    b.column(0)
                        .as_primitive::<Float64Type>()
                        .iter()
                        .flatten()
                        .collect::<Vec<_>>()
                })
                .collect();
            if errors.len() != runs {
                return Err(fail(format!(
                    "{who} {query}: {} errors for {runs} runs",
                    errors.len()
                )));
            }
            per_query.push(format!("{:.3}", median(errors)));
        }
        medians.push(per_query.join("/"));
    }
    Ok((medians[0].clone(), medians[1].clone()))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(3);
    let filter = args
        .iter()
        .enumerate()
        .find(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--runs"))
        .map(|(_, a)| a.clone());
    let python = pgm_python()?;
    let dir = tempfile::tempdir()?;
    for case in CASES {
        if filter
            .as_ref()
            .is_some_and(|f| !case.name.contains(f.as_str()))
        {
            continue;
        }
        println!("{}", case_run(case, runs, dir.path(), &python).await?);
    }
    Ok(())
}
