//! End-to-end benchmark: prints one line per case,
//! `CASE name=<case> rows=<n> nodes=<n> median_s=<x> peak_rss_mb=<y>` (kanon cases add
//! `nodes_checked=<n>`).
//!
//! `cargo bench --bench e2e` runs every case; `cargo bench --bench e2e -- <filter>` only the
//! cases whose name contains the filter; `--runs N` sets the repetitions (default 5).

use std::time::Instant;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

const NPS_HIERARCHIES: &str = include_str!("../sql/nps_hierarchies.sql");

/// Peak resident set size of this process so far, in MiB (Linux; 0 elsewhere).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

async fn run_sql(ctx: &SessionContext, script: &str) -> Result<()> {
    for statement in script.split(';').map(str::trim) {
        let code: String = statement
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        if !code.trim().is_empty() {
            ctx.sql(&code).await?.collect().await?;
        }
    }
    Ok(())
}

async fn ipa_nps(parquet: &str, runs: usize) -> Result<(u64, usize, f64)> {
    let mut times = Vec::with_capacity(runs);
    let mut rows = 0;
    let mut nodes = 0;
    for _ in 0..runs {
        // A fresh context each run, so nothing is served from a cache.
        let ctx = SessionContext::new();
        datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
        let start = Instant::now();
        ctx.sql(&format!(
            "CREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION '{parquet}'"
        ))
        .await?
        .collect()
        .await?;
        run_sql(&ctx, NPS_HIERARCHIES).await?;
        let batches = ctx
            .sql(
                "SELECT COUNT(*) FROM anonymize('nps', method => 'ipa', qi => 'age, sex, los, surgery, location', \
                 informative => 'disease', epsilon => 1.0)",
            )
            .await?
            .collect()
            .await?;
        times.push(start.elapsed().as_secs_f64());
        let count = datafusion::arrow::array::AsArray::as_primitive::<
            datafusion::arrow::datatypes::Int64Type,
        >(batches[0].column(0))
        .value(0);
        rows = count as u64;
        let diag = ctx
            .sql(
                "SELECT COUNT(*) FROM anonymize_diagnostics('nps', method => 'ipa', qi => 'age, sex, los, surgery, location', \
                 informative => 'disease', epsilon => 1.0)",
            )
            .await?
            .collect()
            .await?;
        nodes = datafusion::arrow::array::AsArray::as_primitive::<
            datafusion::arrow::datatypes::Int64Type,
        >(diag[0].column(0))
        .value(0) as usize;
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let _ = rows;
    Ok((
        datafusion_anonymize::demo::nps::NPS_DEFAULT_ROWS as u64,
        nodes,
        times[times.len() / 2],
    ))
}

/// Adult's nine quasi-identifiers, in the CSV's column order.
const ADULT_QI: [&str; 9] = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
];

/// Registers the Adult data and its hierarchies (ARX layout) on `ctx`.
async fn adult_tables(ctx: &SessionContext) -> Result<()> {
    let dir = "tests/data/adult";
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE adult STORED AS CSV LOCATION '{dir}/adult.csv' \
         OPTIONS ('format.delimiter' ';', 'format.has_header' 'true')"
    ))
    .await?
    .collect()
    .await?;
    for qi in ADULT_QI {
        ctx.sql(&format!(
            "CREATE EXTERNAL TABLE \"adult_hierarchy_{qi}\" STORED AS CSV LOCATION '{dir}/adult_hierarchy_{qi}.csv' \
             OPTIONS ('format.delimiter' ';', 'format.has_header' 'false')"
        ))
        .await?
        .collect()
        .await?;
    }
    Ok(())
}

fn first_i64(batches: &[datafusion::arrow::array::RecordBatch]) -> i64 {
    datafusion::arrow::array::AsArray::as_primitive::<datafusion::arrow::datatypes::Int64Type>(
        batches[0].column(0),
    )
    .value(0)
}

/// SafePub on Adult, all nine quasi-identifiers, ε = 1, δ = 1e-5, 300 steps, granularity
/// (loss) score: the whole process from registering the CSV tables to the counted release.
async fn safepub_adult(runs: usize) -> Result<(u64, usize, f64)> {
    let args = format!(
        "'adult', method => 'safepub', qi => '{}', epsilon => 1.0, delta => 1e-5, steps => 300, score => 'granularity'",
        ADULT_QI.join(", ")
    );
    let mut times = Vec::with_capacity(runs);
    let mut rows = 0;
    let mut nodes = 0;
    for _ in 0..runs {
        let ctx = SessionContext::new();
        datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
        let start = Instant::now();
        adult_tables(&ctx).await?;
        let released = ctx
            .sql(&format!("SELECT COUNT(*) FROM anonymize({args})"))
            .await?
            .collect()
            .await?;
        times.push(start.elapsed().as_secs_f64());
        rows = first_i64(
            &ctx.sql("SELECT COUNT(*) FROM adult")
                .await?
                .collect()
                .await?,
        ) as u64;
        let metadata = ctx
            .sql(&format!(
                "SELECT key, value FROM anonymize_metadata({args}) \
                 WHERE key IN ('k', 'beta', 'levels', 'released_rows', 'lattice_nodes', 'delta_delivered') ORDER BY key"
            ))
            .await?
            .collect()
            .await?;
        let mut info = Vec::new();
        for batch in &metadata {
            let keys = datafusion::arrow::array::AsArray::as_string::<i32>(batch.column(0));
            let values = datafusion::arrow::array::AsArray::as_string::<i32>(batch.column(1));
            for i in 0..batch.num_rows() {
                if keys.value(i) == "lattice_nodes" {
                    nodes = values.value(i).parse().unwrap_or(0);
                }
                info.push(format!(
                    "{}={}",
                    keys.value(i),
                    values.value(i).replace(' ', "")
                ));
            }
        }
        println!(
            "INFO name=safepub_adult_300 kept={} {}",
            first_i64(&released),
            info.join(" ")
        );
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((rows, nodes, times[times.len() / 2]))
}

/// k-anonymity on Adult: the whole process from registering the CSV tables to the counted
/// release, with the pruned search and ARX's Loss metric. `extra` adds quasi-identifiers
/// (copies of Adult columns with the same hierarchies: `copy:column`) to grow the lattice.
/// Returns (rows, lattice nodes, nodes checked, median seconds).
async fn kanon_adult(
    name: &str,
    k: u64,
    limit: f64,
    extra: &[(&str, &str)],
    runs: usize,
) -> Result<(u64, usize, usize, f64)> {
    let mut qi: Vec<String> = ADULT_QI.iter().map(|q| q.to_string()).collect();
    for (copy, column) in extra {
        qi.push(format!("{copy}:adult_hierarchy_{column}"));
    }
    let copies: String = extra
        .iter()
        .map(|(copy, column)| format!(", \"{column}\" AS {copy}"))
        .collect();
    let args = format!(
        "'adult_qi', method => 'kanon', qi => '{}', k => {k}, suppression_limit => {limit}, metric => 'loss'",
        qi.join(", ")
    );
    let mut times = Vec::with_capacity(runs);
    let (mut rows, mut nodes, mut checked) = (0, 0, 0);
    for _ in 0..runs {
        let ctx = SessionContext::new();
        datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
        let start = Instant::now();
        adult_tables(&ctx).await?;
        ctx.sql(&format!(
            "CREATE VIEW adult_qi AS SELECT *{copies} FROM adult"
        ))
        .await?
        .collect()
        .await?;
        let released = ctx
            .sql(&format!("SELECT COUNT(*) FROM anonymize({args})"))
            .await?
            .collect()
            .await?;
        times.push(start.elapsed().as_secs_f64());
        rows = first_i64(&released) as u64;
        let metadata = ctx
            .sql(&format!(
                "SELECT key, value FROM anonymize_metadata({args}) \
                 WHERE key IN ('lattice_nodes', 'nodes_checked', 'node', 'suppressed_records') ORDER BY key"
            ))
            .await?
            .collect()
            .await?;
        let mut info = Vec::new();
        for batch in &metadata {
            let keys = datafusion::arrow::array::AsArray::as_string::<i32>(batch.column(0));
            let values = datafusion::arrow::array::AsArray::as_string::<i32>(batch.column(1));
            for i in 0..batch.num_rows() {
                match keys.value(i) {
                    "lattice_nodes" => nodes = values.value(i).parse().unwrap_or(0),
                    "nodes_checked" => checked = values.value(i).parse().unwrap_or(0),
                    _ => {}
                }
                info.push(format!("{}={}", keys.value(i), values.value(i)));
            }
        }
        println!("INFO name={name} {}", info.join(" "));
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((rows, nodes, checked, times[times.len() / 2]))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 5usize;
    let mut filter: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--runs" => {
                runs = args
                    .get(i + 1)
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(5)
                    .max(1);
                i += 1;
            }
            "--bench" => {}
            other if !other.starts_with('-') => filter = Some(other.to_string()),
            _ => {}
        }
        i += 1;
    }
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));

    let dir = tempfile::tempdir().map_err(datafusion::error::DataFusionError::from)?;
    if wanted("ipa_nps_1361000") {
        let parquet = dir.path().join("nps.parquet");
        let parquet = parquet.to_string_lossy().to_string();
        {
            let ctx = SessionContext::new();
            datafusion_anonymize::register_with(
                &ctx,
                datafusion_anonymize::RegisterOptions::owner(),
            )?;
            ctx.sql(&format!(
                "COPY (SELECT * FROM nps_demo()) TO '{parquet}' STORED AS PARQUET"
            ))
            .await?
            .collect()
            .await?;
        }
        let (rows, nodes, median) = ipa_nps(&parquet, runs).await?;
        println!(
            "CASE name=ipa_nps_1361000 rows={rows} nodes={nodes} median_s={median:.3} peak_rss_mb={:.0}",
            peak_rss_mb()
        );
    }
    if wanted("safepub_adult_300") {
        let (rows, nodes, median) = safepub_adult(runs).await?;
        println!(
            "CASE name=safepub_adult_300 rows={rows} nodes={nodes} median_s={median:.3} peak_rss_mb={:.0}",
            peak_rss_mb()
        );
    }
    type KanonCase = (
        &'static str,
        u64,
        f64,
        &'static [(&'static str, &'static str)],
    );
    const KANON_CASES: &[KanonCase] = &[
        ("kanon_adult_k5_supp100", 5, 1.0, &[]),
        ("kanon_adult_k5_supp0", 5, 0.0, &[]),
        // Twelve quasi-identifiers (777,600 nodes): three columns copied with their hierarchies.
        (
            "kanon_adult12_k5_supp5",
            5,
            0.05,
            &[
                ("age_copy", "age"),
                ("education_copy", "education"),
                ("occupation_copy", "occupation"),
            ],
        ),
    ];
    for (name, k, limit, extra) in KANON_CASES {
        if wanted(name) {
            let (rows, nodes, checked, median) = kanon_adult(name, *k, *limit, extra, runs).await?;
            println!(
                "CASE name={name} rows={rows} nodes={nodes} nodes_checked={checked} median_s={median:.3} peak_rss_mb={:.0}",
                peak_rss_mb()
            );
        }
    }
    Ok(())
}
