//! End-to-end benchmark: prints one line per case,
//! `CASE name=<case> rows=<n> nodes=<n> median_s=<x> peak_rss_mb=<y>` (kanon cases add
//! `nodes_checked=<n>`; a case comparing two implementations appends the other's median and
//! the speedup; the `_person_` cases give the release per person as `median_s` and the same
//! release per row as `row_median_s`).
//!
//! `attacks_nps_ipa` and `attacks_adult_kanon` time anonymeter's three attacks (500 of
//! each) on a seeded IPA release of the NPS demo data and a k = 5 release of Adult (and, for
//! kanon, record linkage of every record), beside the release's own time (`release_s`,
//! `ratio`), and print the risks. `record_linkage_nps_kanon` times record linkage alone on
//! a k = 5 release of the NPS demo data (500 records drawn when every record is too much).
//!
//! `cargo bench --bench e2e` runs every case; `cargo bench --bench e2e -- <filter>` only the
//! cases whose name contains the filter; `--runs N` sets the repetitions (default 5).
//!
//! The scale cases (`ipa_nps_13610000`, `ipa_nps_68050000` and the same for `kanon` and
//! `safepub`) run only when a filter names them (e.g. `-- _nps_68050000` or `-- scale`): they
//! write NPS-shaped Parquet of 13.61 M and 68.05 M rows (about 1 GB of disk in all) and take
//! minutes. Each prints `CASE name=… rows=… median_s=… groupby_s=… ratio=… peak_rss_mb=…
//! count_rss_mb=… copy_rss_mb=…`: the median of the counted release, the median of a bare
//! GROUP BY over the same columns in the same run, their ratio, and the peak resident memory
//! of `SELECT COUNT(*)` over the release and of `COPY` of the release to Parquet (each
//! measured from a reset peak, in a fresh session; `peak_rss_mb` is the larger).
//! `--scale-rows 1361000,13610000` replaces the two sizes.
//!
//! The wide cases (`ipa_wide_12qi`, `upa_wide_12qi`, and the same with `_mem500m`: under a
//! 500 MB memory pool) add `outcome=ok`, or `outcome=resources_exhausted` when the limit
//! refused the release.
//!
//! `export_csv_5000000` runs the `dfanon` binary: a seeded IPA release of 5 M NPS-shaped rows
//! written as CSV through stdout to a file, against `COPY … TO 'x.csv'` of the same release;
//! it prints both medians, both peak memories and their ratio (`rss_ratio`).
//!
//! `python_q1_nps_1361000` runs the paper's Q1 over an IPA release of the NPS demo data
//! (Parquet) end to end in a fresh process: a pandas DataFrame through the Python package,
//! against CSV through the `dfanon` binary. `median_s` is the Python work after the
//! imports, `ratio` its ratio to the whole `dfanon` process; `process_ratio` counts the
//! Python interpreter's start and imports too (about 0.4 s for datafusion, pyarrow and
//! pandas). It needs
//! the virtual environment `cargo test --release -p dfanon --test python` makes, and says so without it.
//!
//! `server_q1_32clients` starts `dfanon-server` on the NPS demo data (1.36 M rows) and runs
//! the paper's Q1 over one IPA release: first one client alone, then 32 clients at once
//! (16 `psql` processes over the PostgreSQL protocol, 16 Flight SQL clients), `--runs`
//! rounds. It prints the latency percentiles of the 32-client rounds (`p50_ms`, `p99_ms`,
//! each query from connecting to its last row), the server's peak resident memory after the
//! one-client query (`one_client_rss_mb`) and after all rounds (`peak_rss_mb`), their ratio,
//! and the releases charged (1 when every client was served the same release). It needs
//! `psql` on the PATH.
//!
//! `server_200_connections` starts the same server (its `max_connections` raised to 300)
//! and, `--runs` rounds, holds 100 idle psql logins while 100 psql clients run Q1 at once:
//! the latency percentiles of those queries (connecting to last row), how many failed, and
//! the server's peak resident memory.

use std::sync::Arc;
use std::time::Instant;

use datafusion::error::Result;
use datafusion::execution::memory_pool::GreedyMemoryPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_anonymize::run_script;

const NPS_HIERARCHIES: &str = include_str!("../sql/nps_hierarchies.sql");

/// Resets the peak resident set size to the current one (Linux's `clear_refs` value 5), so
/// that [`peak_rss_mb`] measures what follows; a no-op where unsupported.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

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

async fn ipa_nps(parquet: &str, runs: usize) -> Result<(u64, usize, f64)> {
    let mut times = Vec::with_capacity(runs);
    let mut rows = 0;
    let mut nodes = 0;
    for _ in 0..runs {
        // A fresh context each run, so nothing is served from a cache.
        let start = Instant::now();
        let ctx = nps_session(parquet).await?;
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
        datafusion_anonymize::internals::NPS_DEFAULT_ROWS as u64,
        nodes,
        times[times.len() / 2],
    ))
}

/// UPA on the NPS demo data (1,361,000 rows) with k = 10, h = 0.2: the whole process from
/// registering the Parquet table to the counted release and its catalog.
async fn upa_nps(parquet: &str, runs: usize) -> Result<(u64, usize, f64)> {
    let args = "'nps', method => 'upa', qi => 'age, sex, los, surgery, location', sensitive => 'disease', \
                k => 10, h => 0.2, seed => 1";
    let mut times = Vec::with_capacity(runs);
    let mut rows = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let ctx = nps_session(parquet).await?;
        let released = ctx
            .sql(&format!("SELECT COUNT(*) FROM anonymize({args})"))
            .await?
            .collect()
            .await?;
        let catalog = ctx
            .sql(&format!("SELECT COUNT(*) FROM anonymize_catalog({args})"))
            .await?
            .collect()
            .await?;
        times.push(start.elapsed().as_secs_f64());
        rows = first_i64(&released) as u64;
        let metadata = ctx
            .sql(&format!(
                "SELECT key, value FROM anonymize_metadata({args}) WHERE key IN ('node', 'counterfeits', 'lm', 'catalog_groups') ORDER BY key"
            ))
            .await?
            .collect()
            .await?;
        let mut info = Vec::new();
        for batch in &metadata {
            let keys = datafusion::arrow::array::AsArray::as_string::<i32>(batch.column(0));
            let values = datafusion::arrow::array::AsArray::as_string::<i32>(batch.column(1));
            for i in 0..batch.num_rows() {
                info.push(format!("{}={}", keys.value(i), values.value(i)));
            }
        }
        println!(
            "INFO name=upa_nps_1361000 released={rows} catalog_rows={} {}",
            first_i64(&catalog),
            info.join(" ")
        );
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let _ = rows;
    Ok((
        datafusion_anonymize::internals::NPS_DEFAULT_ROWS as u64,
        256,
        times[times.len() / 2],
    ))
}

/// Quasi-identifiers of the wide cases: twelve columns of 100 values each, every one with
/// a one-level hierarchy (value → `*`), so the lattice has 2^12 = 4096 nodes.
const WIDE_QI: usize = 12;

/// The wide table: `rows` rows, `q1`..`q12` spread over 0..99 by different multipliers
/// modulo a prime above the row count (every row its own class at the leaves) and `disease`
/// over 20 values; and the hierarchy `wide_h` every column uses. With `memory_limit`, the
/// session's memory pool holds that many bytes (as `dfanon --memory-limit`).
async fn wide_session(rows: u64, memory_limit: Option<usize>) -> Result<SessionContext> {
    let mut runtime = RuntimeEnvBuilder::new();
    if let Some(limit) = memory_limit {
        runtime = runtime.with_memory_pool(Arc::new(GreedyMemoryPool::new(limit)));
    }
    let ctx = SessionContext::new_with_config_rt(SessionConfig::new(), runtime.build_arc()?);
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    let columns: Vec<String> = (1..=WIDE_QI)
        .map(|q| {
            let multiplier: u64 = [
                7919u64,
                104_729,
                1_299_709,
                15_485_863,
                179_424_673,
                2_147_483_647,
            ][q % 6]
                + q as u64;
            format!("CAST(((value * {multiplier} + {q}) % 1000003) % 100 AS BIGINT) AS q{q}")
        })
        .collect();
    ctx.sql(&format!(
        "CREATE TABLE wide AS SELECT {}, CAST(value % 20 AS BIGINT) AS disease FROM generate_series(1, {rows})",
        columns.join(", ")
    ))
    .await?
    .collect()
    .await?;
    ctx.sql(
        "CREATE VIEW wide_h AS SELECT CAST(value AS VARCHAR) AS value, '*' AS level_1 FROM generate_series(0, 99)",
    )
    .await?
    .collect()
    .await?;
    Ok(ctx)
}

/// A method on the wide table (50,000 rows, 12 quasi-identifiers of 100 values, 4096
/// nodes), optionally under a memory limit: the median of the counted release, each run in
/// a fresh session, the peak resident memory of the runs (from a reset peak), and how the
/// runs ended ("ok", or "resources_exhausted" when the limit refused them).
async fn wide_case(
    method_args: &str,
    memory_limit: Option<usize>,
    runs: usize,
) -> Result<(u64, f64, f64, &'static str)> {
    let qi: Vec<String> = (1..=WIDE_QI).map(|q| format!("q{q}:wide_h")).collect();
    let args = format!(
        "'wide', qi => '{}', sensitive => 'disease', {method_args}",
        qi.join(", ")
    );
    let rows = 50_000;
    let mut times = Vec::with_capacity(runs);
    let mut outcome = "ok";
    reset_peak_rss();
    for _ in 0..runs {
        let ctx = wide_session(rows, memory_limit).await?;
        let start = Instant::now();
        let released = ctx
            .sql(&format!("SELECT COUNT(*) FROM anonymize({args})"))
            .await?
            .collect()
            .await;
        times.push(start.elapsed().as_secs_f64());
        match released {
            Ok(released) => println!("INFO released={}", first_i64(&released)),
            Err(e) if memory_limit.is_some() && e.to_string().contains("Resources exhausted") => {
                outcome = "resources_exhausted";
                println!("INFO refused: {e}");
            }
            Err(e) => return Err(e),
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((rows, times[times.len() / 2], peak_rss_mb(), outcome))
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

/// Re-identification risk on Adult, all nine quasi-identifiers: `anonymize_assess` with a
/// population of 100,000,000 (ARX's four population-uniqueness estimators and its decision
/// rule), and SUDA2 with special uniques of at most three values. Returns the rows and the
/// two medians (seconds).
async fn risk_adult(runs: usize) -> Result<(u64, f64, f64)> {
    let qi = ADULT_QI.join(", ");
    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    adult_tables(&ctx).await?;
    run_script(
        &ctx,
        "CREATE TABLE adult_numbered AS SELECT row_number() OVER () AS id, * FROM adult",
    )
    .await?;
    let assess = format!(
        "SELECT key, value, note FROM anonymize_assess('adult', qi => '{qi}', population => 100000000) \
         WHERE key IN ('sample_uniques', 'population_uniques', 'population_model')"
    );
    let suda = format!(
        "SELECT COUNT(*), SUM(msu_count), COUNT(min_msu_size) FROM anonymize_suda('adult_numbered', \
         qi => '{qi}', key => 'id', max_size => 3)"
    );
    let mut assess_times = Vec::with_capacity(runs);
    let mut suda_times = Vec::with_capacity(runs);
    let mut rows = 0;
    for run in 0..runs {
        let start = Instant::now();
        let figures = ctx.sql(&assess).await?.collect().await?;
        assess_times.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        let special = ctx.sql(&suda).await?.collect().await?;
        suda_times.push(start.elapsed().as_secs_f64());
        rows = first_i64(&special) as u64;
        if run == 0 {
            let mut info = Vec::new();
            for batch in &figures {
                let keys = datafusion::arrow::array::AsArray::as_string::<i32>(batch.column(0));
                let values = datafusion::arrow::array::AsArray::as_primitive::<
                    datafusion::arrow::datatypes::Float64Type,
                >(batch.column(1));
                let notes = datafusion::arrow::array::AsArray::as_string::<i32>(batch.column(2));
                for i in 0..batch.num_rows() {
                    let value = if datafusion::arrow::array::Array::is_valid(notes, i) {
                        notes.value(i).replace(' ', "_")
                    } else {
                        format!("{:.1}", values.value(i))
                    };
                    info.push(format!("{}={value}", keys.value(i)));
                }
            }
            let totals = datafusion::arrow::array::AsArray::as_primitive::<
                datafusion::arrow::datatypes::Int64Type,
            >(special[0].column(1));
            println!(
                "INFO name=risk_adult_9qi {} msu_total={}",
                info.join(" "),
                totals.value(0)
            );
        }
    }
    assess_times.sort_by(|a, b| a.total_cmp(b));
    suda_times.sort_by(|a, b| a.total_cmp(b));
    Ok((rows, assess_times[runs / 2], suda_times[runs / 2]))
}

/// SUDA2 on the 1,361,000 NPS-shaped rows with five quasi-identifiers (age, sex, los,
/// surgery, location) and special uniques of at most three values. Returns the rows, the
/// records with a special unique and the median (seconds).
async fn suda_nps(parquet: &str, runs: usize) -> Result<(u64, u64, f64)> {
    let ctx = nps_session(parquet).await?;
    run_script(
        &ctx,
        "CREATE TABLE nps_numbered AS SELECT row_number() OVER () AS id, * FROM nps",
    )
    .await?;
    let query = "SELECT COUNT(*), COUNT(min_msu_size) FROM anonymize_suda('nps_numbered', \
                 qi => 'age, sex, los, surgery, location', key => 'id', max_size => 3)";
    let mut times = Vec::with_capacity(runs);
    let (mut rows, mut special) = (0, 0);
    for _ in 0..runs {
        let start = Instant::now();
        let batches = ctx.sql(query).await?.collect().await?;
        times.push(start.elapsed().as_secs_f64());
        rows = first_i64(&batches) as u64;
        special = datafusion::arrow::array::AsArray::as_primitive::<
            datafusion::arrow::datatypes::Int64Type,
        >(batches[0].column(1))
        .value(0) as u64;
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((rows, special, times[runs / 2]))
}

/// The NPS demo with a patient per three consecutive admissions (ordered by age, sex,
/// location, disease: 453,667 persons), written to Parquet under `dir`; returns its path.
async fn admissions_parquet(dir: &std::path::Path) -> Result<String> {
    let nps = demo_parquet(dir, "nps_persons.parquet").await?;
    let parquet = dir.join("admissions.parquet").to_string_lossy().to_string();
    let ctx = nps_session(&nps).await?;
    run_script(
        &ctx,
        &format!(
            "COPY (SELECT *, CAST(floor((row_number() OVER (ORDER BY age, sex, location, disease) - 1) / 3.0) AS BIGINT) AS pid FROM nps) \
             TO '{parquet}' STORED AS PARQUET"
        ),
    )
    .await?;
    Ok(parquet)
}

/// People as the privacy unit on 1.36 M admissions: the median seconds of the counted
/// release per row and per person (`person => 'pid'` appended to `args`), each run in a
/// fresh session (nothing cached). Returns (released rows per person, per-row median,
/// per-person median).
async fn person_case(
    parquet: &str,
    args: &str,
    person: &str,
    runs: usize,
) -> Result<(u64, f64, f64)> {
    let qi = "qi => 'age:nps_hierarchy_age, sex:nps_hierarchy_sex, los:nps_hierarchy_los, \
              surgery:nps_hierarchy_surgery, location:nps_hierarchy_location'";
    let mut medians = [0.0; 2];
    let mut rows = 0;
    for (i, extra) in ["", person].iter().enumerate() {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let ctx = nps_session(parquet).await?;
            let query = format!("SELECT COUNT(*) FROM anonymize('nps', {qi}, {args}{extra})");
            let start = Instant::now();
            let batches = ctx.sql(&query).await?.collect().await?;
            times.push(start.elapsed().as_secs_f64());
            rows = first_i64(&batches) as u64;
        }
        times.sort_by(|a, b| a.total_cmp(b));
        medians[i] = times[runs / 2];
    }
    Ok((rows, medians[0], medians[1]))
}

/// Makes a fresh session for one run of a case.
type SessionSetup<'a> =
    dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<SessionContext>>>> + 'a;

/// Microaggregation: the median seconds of the counted release, in a fresh session each run
/// (`setup` makes the source `src`), and the number of MDAV groups.
async fn microaggregation_case(
    setup: &SessionSetup<'_>,
    args: &str,
    runs: usize,
) -> Result<(u64, u64, f64)> {
    let mut times = Vec::with_capacity(runs);
    let mut rows = 0;
    let mut groups = 0;
    for _ in 0..runs {
        let ctx = setup().await?;
        let query =
            format!("SELECT COUNT(*) FROM anonymize('src', method => 'microaggregation', {args})");
        let start = Instant::now();
        let batches = ctx.sql(&query).await?.collect().await?;
        times.push(start.elapsed().as_secs_f64());
        rows = first_i64(&batches) as u64;
        let diagnostics = ctx
            .sql(&format!("SELECT groups FROM anonymize_diagnostics('src', method => 'microaggregation', {args})"))
            .await?
            .collect()
            .await?;
        groups = datafusion::arrow::array::AsArray::as_primitive::<
            datafusion::arrow::datatypes::UInt64Type,
        >(diagnostics[0].column(0))
        .value(0);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((rows, groups, times[runs / 2]))
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
    // The source is the view `adult_qi`, so each hierarchy is named explicitly.
    let mut qi: Vec<String> = ADULT_QI
        .iter()
        .map(|q| format!("\"{q}\":adult_hierarchy_{q}"))
        .collect();
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

/// The quasi-identifiers of the t-closeness case: five of Adult's, 144 lattice nodes.
const TCLOSENESS_QI: [&str; 5] = ["sex", "race", "marital-status", "education", "workclass"];

/// Ordered-distance t-closeness on Adult with `age` (73 values) as the sensitive column:
/// every class of every lattice node over five quasi-identifiers is checked with the fast
/// check (Bild, Eicher & Prasser 2020's optimizations) and with the straightforward EMD,
/// for t = 0.1 … 0.5 as in the paper; both must agree on every class. Only the checks are
/// timed (the roll-ups are shared). Returns (rows, nodes, fast median s, straightforward
/// median s).
async fn tcloseness_ordered_adult(runs: usize) -> Result<(u64, usize, f64, f64)> {
    use datafusion_anonymize::internals::hierarchy_from_batches;
    use datafusion_anonymize::internals::GroupedHistogram;
    use datafusion_anonymize::internals::Lattice;
    use datafusion_anonymize::internals::{OrderedDistance, OrderedScratch};

    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    adult_tables(&ctx).await?;
    let columns: Vec<String> = TCLOSENESS_QI.iter().map(|q| format!("\"{q}\"")).collect();
    let grouped = ctx
        .sql(&format!(
            "SELECT {cols}, CAST(age AS BIGINT) AS age, COUNT(*) AS n FROM adult GROUP BY {cols}, age",
            cols = columns.join(", ")
        ))
        .await?
        .collect()
        .await?;
    let mut hierarchies = Vec::new();
    for q in TCLOSENESS_QI {
        let table = format!("adult_hierarchy_{q}");
        let batches = ctx
            .sql(&format!("SELECT * FROM \"{table}\""))
            .await?
            .collect()
            .await?;
        hierarchies.push(hierarchy_from_batches(q, &table, &batches)?);
    }
    // Ages ranked in numeric order: value code = rank.
    let mut ages: Vec<i64> = Vec::new();
    for b in &grouped {
        let a = datafusion::arrow::array::AsArray::as_primitive::<
            datafusion::arrow::datatypes::Int64Type,
        >(b.column(TCLOSENESS_QI.len()));
        ages.extend(a.values().iter().copied());
    }
    let mut distinct = ages.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let mut leaf_codes: Vec<Vec<u32>> = vec![Vec::new(); TCLOSENESS_QI.len()];
    let mut values: Vec<u32> = Vec::new();
    let mut counts: Vec<u64> = Vec::new();
    for b in &grouped {
        for (a, h) in hierarchies.iter().enumerate() {
            let text = datafusion::arrow::compute::cast(
                b.column(a),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )?;
            let text = datafusion::arrow::array::AsArray::as_string::<i32>(&text);
            for v in text.iter() {
                let code = h.leaf_code(v.unwrap_or_default()).ok_or_else(|| {
                    datafusion::error::DataFusionError::Execution(format!("{v:?} not in hierarchy"))
                })?;
                leaf_codes[a].push(code);
            }
        }
        let n = datafusion::arrow::array::AsArray::as_primitive::<
            datafusion::arrow::datatypes::Int64Type,
        >(b.column(TCLOSENESS_QI.len() + 1));
        counts.extend(n.values().iter().map(|&c| c as u64));
    }
    for &age in &ages {
        values.push(distinct.binary_search(&age).unwrap_or(0) as u32);
    }
    let refs: Vec<_> = hierarchies.iter().collect();
    let base = GroupedHistogram::from_rows(&refs, leaf_codes, values, counts, distinct.len())?;
    let mut reference = vec![0u64; distinct.len()];
    for (&v, &c) in base.pair_values.iter().zip(&base.pair_counts) {
        reference[v as usize] += c;
    }
    let lattice = Lattice::new(refs.iter().map(|h| h.height()).collect(), 100_000)?;
    let nodes: Vec<GroupedHistogram> = lattice
        .nodes()
        .iter()
        .map(|node| base.roll_up(&refs, node, distinct.len()))
        .collect::<Result<_>>()?;
    let classes: Vec<Vec<(u32, u64)>> = nodes
        .iter()
        .flat_map(|h| {
            (0..h.class_count()).map(move |c| {
                (h.class_offsets[c]..h.class_offsets[c + 1])
                    .map(|p| (h.pair_values[p], h.pair_counts[p]))
                    .collect()
            })
        })
        .collect();
    // The same classes with their values in descending order: the fast check must group
    // them (Fibonacci-hashed map) instead of reading them sorted.
    let reversed: Vec<Vec<(u32, u64)>> = classes
        .iter()
        .map(|c| c.iter().rev().copied().collect())
        .collect();
    let (mut fast_times, mut slow_times) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let (mut fast_total, mut slow_total) = (0.0, 0.0);
        for t in [0.1, 0.2, 0.3, 0.4, 0.5] {
            let check = OrderedDistance::new(&reference, t);
            let mut scratch = OrderedScratch::default();
            let start = Instant::now();
            let fast: Vec<bool> = classes
                .iter()
                .map(|c| check.accepts(c, &mut scratch))
                .collect();
            let fast_s = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let grouped: Vec<bool> = reversed
                .iter()
                .map(|c| check.accepts(c, &mut scratch))
                .collect();
            let grouped_s = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let slow: Vec<bool> = classes
                .iter()
                .map(|c| check.accepts_straightforward(c))
                .collect();
            let slow_s = start.elapsed().as_secs_f64();
            if fast != slow || grouped != slow {
                return Err(datafusion::error::DataFusionError::Execution(
                    "fast and straightforward t-closeness disagree".into(),
                ));
            }
            if run == 0 {
                let pruned = classes
                    .iter()
                    .filter(|c| c[0].0 as usize >= check.prune_from())
                    .count();
                let failed = fast.iter().filter(|&&ok| !ok).count();
                println!(
                    "INFO name=tcloseness_ordered_adult t={t} checks={} failed={failed} check_pruned={pruned} fast_s={fast_s:.4} fast_fibmap_s={grouped_s:.4} straightforward_s={slow_s:.4} speedup={:.2} speedup_fibmap={:.2}",
                    classes.len(),
                    slow_s / fast_s,
                    slow_s / grouped_s
                );
            }
            fast_total += fast_s;
            slow_total += slow_s;
        }
        fast_times.push(fast_total);
        slow_times.push(slow_total);
    }
    fast_times.sort_by(|a, b| a.total_cmp(b));
    slow_times.sort_by(|a, b| a.total_cmp(b));
    Ok((
        base.total(),
        lattice.len(),
        fast_times[fast_times.len() / 2],
        slow_times[slow_times.len() / 2],
    ))
}

/// The quasi-identifiers of the NPS-shaped data.
const NPS_QI: &str = "age, sex, los, surgery, location";

/// The scale cases' methods: name, `anonymize` arguments after the source, and the
/// columns its one aggregate over the source groups by (the bare GROUP BY's columns).
const SCALE_METHODS: &[(&str, &str, &str)] = &[
    (
        "ipa",
        "method => 'ipa', qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0, seed => 1",
        "age, sex, los, surgery, location, disease",
    ),
    (
        "kanon",
        "method => 'kanon', qi => 'age, sex, los, surgery, location', k => 10, suppression_limit => 0.05",
        NPS_QI,
    ),
    (
        "safepub",
        "method => 'safepub', qi => 'age, sex, los, surgery, location', epsilon => 1.0, delta => 1e-8, seed => 1",
        NPS_QI,
    ),
];

/// A fresh owner session with the NPS Parquet at `parquet` registered as `nps` and the
/// demo hierarchies created.
/// anonymeter's three attacks (500 of each, its default) on a seeded release: the release
/// drawn once (and its time), then the attack call timed `runs` times in the same session
/// (the store serves the release; each call reads and codes the source and the release
/// anew). Returns the attacks' median, the release's time and the risks. `attack` names
/// the attacks (`all` for every one that applies).
async fn attacks_case(
    ctx: &SessionContext,
    table: &str,
    release_args: &str,
    attack: &str,
    runs: usize,
) -> Result<(f64, f64, Vec<String>)> {
    let start = Instant::now();
    ctx.sql(&format!(
        "SELECT COUNT(*) FROM anonymize('{table}', {release_args})"
    ))
    .await?
    .collect()
    .await?;
    let release_s = start.elapsed().as_secs_f64();
    let mut times = Vec::with_capacity(runs);
    let mut risks = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let batches = ctx
            .sql(&format!(
                "SELECT attack, CAST(risk AS VARCHAR) FROM anonymize_attack('{table}', {release_args}, attack => '{attack}', attacks => 500)"
            ))
            .await?
            .collect()
            .await?;
        times.push(start.elapsed().as_secs_f64());
        risks = Vec::new();
        for b in &batches {
            let text = |i: usize| {
                datafusion::arrow::compute::cast(
                    b.column(i),
                    &datafusion::arrow::datatypes::DataType::Utf8,
                )
            };
            let (names, values) = (text(0)?, text(1)?);
            let names = datafusion::arrow::array::AsArray::as_string::<i32>(&names);
            let values = datafusion::arrow::array::AsArray::as_string::<i32>(&values);
            for i in 0..b.num_rows() {
                let risk: f64 = values.value(i).parse().unwrap_or(f64::NAN);
                risks.push(format!("{}={risk:.3}", names.value(i)));
            }
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((times[times.len() / 2], release_s, risks))
}

async fn nps_session(parquet: &str) -> Result<SessionContext> {
    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION '{parquet}'"
    ))
    .await?
    .collect()
    .await?;
    run_script(&ctx, NPS_HIERARCHIES).await?;
    Ok(ctx)
}

/// One scale case: `method` with `args` on the NPS Parquet of `rows` rows. Returns the
/// release median, the bare GROUP BY median, and the peak RSS (MiB) of the counted release
/// and of its COPY to Parquet.
async fn scale_case(
    parquet: &str,
    args: &str,
    columns: &str,
    out_dir: &std::path::Path,
    runs: usize,
) -> Result<(f64, f64, f64, f64)> {
    let release = format!("anonymize('nps', {args})");
    let groupby =
        format!("SELECT COUNT(*) FROM (SELECT {columns}, COUNT(*) FROM nps GROUP BY {columns})");
    let mut times = Vec::with_capacity(runs);
    let mut groupby_times = Vec::with_capacity(runs);
    let mut count_rss: f64 = 0.0;
    for _ in 0..runs {
        // The bare aggregate, in its own session.
        let ctx = nps_session(parquet).await?;
        let start = Instant::now();
        ctx.sql(&groupby).await?.collect().await?;
        groupby_times.push(start.elapsed().as_secs_f64());
        drop(ctx);

        // The release end to end: registration, hierarchies, search, counted rows.
        reset_peak_rss();
        let start = Instant::now();
        let ctx = nps_session(parquet).await?;
        ctx.sql(&format!("SELECT COUNT(*) FROM {release}"))
            .await?
            .collect()
            .await?;
        times.push(start.elapsed().as_secs_f64());
        count_rss = count_rss.max(peak_rss_mb());
    }
    // The release written to Parquet, once, from a fresh session.
    let copy_path = out_dir.join("released.parquet");
    reset_peak_rss();
    {
        let ctx = nps_session(parquet).await?;
        ctx.sql(&format!(
            "COPY (SELECT * FROM {release}) TO '{}' STORED AS PARQUET",
            copy_path.to_string_lossy()
        ))
        .await?
        .collect()
        .await?;
    }
    let copy_rss = peak_rss_mb();
    let _ = std::fs::remove_file(&copy_path);
    times.sort_by(|a, b| a.total_cmp(b));
    groupby_times.sort_by(|a, b| a.total_cmp(b));
    Ok((
        times[times.len() / 2],
        groupby_times[groupby_times.len() / 2],
        count_rss,
        copy_rss,
    ))
}

/// The path of the workspace's binary `name` (`dfanon`, `dfanon-server`: each its own
/// package, named as its binary), built first with this benchmark's profile into its build
/// directory (nothing to do when it is up to date).
fn tool(name: &str) -> Result<std::path::PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = std::process::Command::new(cargo);
    // cargo gives this benchmark variables of its own (CARGO_MANIFEST_DIR, CARGO_PKG_*,
    // ...), and build scripts under DataFusion (ring's among them) rerun when such a
    // variable changes: with them, the nested build would compile DataFusion again, and
    // the next build from a shell once more. So the nested cargo gets the environment
    // cargo was started with.
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(|key| {
            key.starts_with("CARGO_PKG_")
                || key.starts_with("CARGO_BIN_EXE_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_CRATE_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_RUSTC_CURRENT_DIR",
                    "OUT_DIR",
                ]
                .contains(&key)
        }) {
            build.env_remove(key);
        }
    }
    let status = build
        .args(["build", "--release", "--quiet", "-p", name])
        .arg("--manifest-path")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .status()?;
    if !status.success() {
        return Err(datafusion::error::DataFusionError::Execution(format!(
            "cargo build -p {name} failed: {status}"
        )));
    }
    // This benchmark runs from <build directory>/release/deps/.
    let exe = std::env::current_exe()?;
    let release = exe.parent().and_then(|deps| deps.parent()).ok_or_else(|| {
        datafusion::error::DataFusionError::Execution("no build directory".into())
    })?;
    Ok(release.join(name))
}

/// Runs the `dfanon` binary with `args`, its stdout to `stdout`, and returns its wall time
/// and peak resident memory in MiB (its `VmHWM`, read every 10 ms while it runs; Linux, 0
/// elsewhere).
fn run_dfanon(args: &[String], stdout: std::process::Stdio) -> Result<(f64, f64)> {
    let mut command = std::process::Command::new(tool("dfanon")?);
    command.args(args).stdout(stdout);
    run_measured(command)
}

/// Runs `command` and returns its wall time and peak resident memory in MiB (its `VmHWM`,
/// read every 10 ms while it runs; Linux, 0 elsewhere); an error if it fails.
fn run_measured(mut command: std::process::Command) -> Result<(f64, f64)> {
    let start = Instant::now();
    let mut child = command.spawn()?;
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kb: f64 = 0.0;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if let Some(kb) = std::fs::read_to_string(&status_path).ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        }) {
            peak_kb = peak_kb.max(kb);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    if !status.success() {
        return Err(datafusion::error::DataFusionError::Execution(format!(
            "{command:?} failed: {status}"
        )));
    }
    Ok((start.elapsed().as_secs_f64(), peak_kb / 1024.0))
}

/// The paper's Q1 over an IPA release of the NPS demo data (1.36 M rows, Parquet), end to
/// end in a fresh process each run: through the Python package (`ctx.sql(...).to_pandas()`
/// on a datafusion-python context) and through the `dfanon` binary (CSV to stdout). Needs
/// the virtual environment `cargo test --release -p dfanon --test python` makes; `None` without it.
/// Returns the medians of the Python work (from the context's creation, after the imports,
/// to the pandas DataFrame), of the `dfanon` process and of the whole Python process, and
/// both peak memories (the largest of the runs).
fn python_q1_case(dir: &std::path::Path, runs: usize) -> Result<Option<[f64; 5]>> {
    let python = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv/bin/python");
    let ready = std::process::Command::new(&python)
        .args(["-c", "import dfanon, pandas"])
        .status()
        .is_ok_and(|s| s.success());
    if !ready {
        return Ok(None);
    }
    let source = dir.join("python_nps.parquet");
    let hierarchies = dir.join("python_hierarchies.sql");
    std::fs::write(&hierarchies, NPS_HIERARCHIES)?;
    let generate = format!(
        "COPY (SELECT * FROM nps_demo()) TO '{}' STORED AS PARQUET",
        source.to_string_lossy()
    );
    run_dfanon(
        &["-q".into(), "-c".into(), generate],
        std::process::Stdio::null(),
    )?;
    let q1 = |args: &str| {
        format!(
            "SELECT age, COUNT(*) AS patients FROM anonymize('nps', {args}) \
             WHERE sex = 'M' AND surgery = 'N' AND disease LIKE 'I6%' GROUP BY age ORDER BY age"
        )
    };
    let named = "method => 'ipa', qi => 'age, sex, los, surgery, location', \
        informative => 'disease', epsilon => 1.0";
    let pairs = "'method =>', 'ipa', 'qi =>', 'age, sex, los, surgery, location', \
        'informative =>', 'disease', 'epsilon =>', 1.0";
    let script = format!(
        "import sys, time, datafusion, dfanon, pandas\n\
         start = time.perf_counter()\n\
         ctx = datafusion.SessionContext()\n\
         ctx.register_parquet('nps', sys.argv[1])\n\
         dfanon.register(ctx, access='owner')\n\
         dfanon.sql(ctx, open(sys.argv[2]).read())\n\
         q1 = ctx.sql(\"{}\").to_pandas()\n\
         assert len(q1) > 0\n\
         open(sys.argv[3], 'w').write(str(time.perf_counter() - start))\n",
        q1(pairs)
    );
    let setup = dir.join("python_setup.sql");
    std::fs::write(
        &setup,
        format!(
            "CREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION '{}';\n",
            source.to_string_lossy()
        ),
    )?;
    let (mut python_times, mut dfanon_times) = (Vec::new(), Vec::new());
    let mut process_times = Vec::new();
    let (mut python_rss, mut dfanon_rss): (f64, f64) = (0.0, 0.0);
    for _ in 0..runs {
        let mut command = std::process::Command::new(&python);
        let work = dir.join("python_work_s");
        command
            .args(["-c", &script])
            .arg(&source)
            .arg(&hierarchies)
            .arg(&work);
        let (time, rss) = run_measured(command)?;
        let work: f64 = std::fs::read_to_string(&work)?
            .trim()
            .parse()
            .map_err(|e| {
                datafusion::error::DataFusionError::Execution(format!("the Python time: {e}"))
            })?;
        python_times.push(work);
        process_times.push(time);
        python_rss = python_rss.max(rss);
        let args: Vec<String> = vec![
            "-q".into(),
            "--no-progress".into(),
            "--format".into(),
            "csv".into(),
            "-f".into(),
            hierarchies.to_string_lossy().into(),
            setup.to_string_lossy().into(),
            "-c".into(),
            q1(named),
        ];
        let (time, rss) = run_dfanon(&args, std::process::Stdio::null())?;
        dfanon_times.push(time);
        dfanon_rss = dfanon_rss.max(rss);
    }
    let _ = std::fs::remove_file(&source);
    for times in [&mut python_times, &mut dfanon_times, &mut process_times] {
        times.sort_by(|a, b| a.total_cmp(b));
    }
    Ok(Some([
        python_times[runs / 2],
        dfanon_times[runs / 2],
        process_times[runs / 2],
        python_rss,
        dfanon_rss,
    ]))
}

/// The export case: a seeded IPA release of `rows` NPS-shaped rows written by `dfanon
/// --format csv` to a file through stdout, against the same release written by `COPY … TO
/// 'x.csv'`. Returns the released rows, both medians and both peak memories (the largest
/// of the runs).
fn export_case(dir: &std::path::Path, rows: u64, runs: usize) -> Result<(u64, [f64; 4])> {
    let source = dir.join("export_nps.parquet");
    let setup = dir.join("export_setup.sql");
    let hierarchies = dir.join("export_hierarchies.sql");
    std::fs::write(&hierarchies, NPS_HIERARCHIES)?;
    let generate = format!(
        "COPY (SELECT * FROM nps_demo(rows => {rows})) TO '{}' STORED AS PARQUET",
        source.to_string_lossy()
    );
    run_dfanon(
        &["-q".into(), "-c".into(), generate],
        std::process::Stdio::null(),
    )?;
    std::fs::write(
        &setup,
        format!(
            "CREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION '{}';\n",
            source.to_string_lossy()
        ),
    )?;
    let release = "SELECT * FROM anonymize('nps', method => 'ipa', \
        qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0, seed => 3)";
    let base = |command: String| -> Vec<String> {
        vec![
            "-q".into(),
            "--no-progress".into(),
            "--format".into(),
            "csv".into(),
            "-f".into(),
            hierarchies.to_string_lossy().into(),
            setup.to_string_lossy().into(),
            "-c".into(),
            command,
        ]
    };
    let stdout_file = dir.join("export_stdout.csv");
    let copy_file = dir.join("export_copy.csv");
    let (mut csv_times, mut copy_times) = (Vec::new(), Vec::new());
    let (mut csv_rss, mut copy_rss): (f64, f64) = (0.0, 0.0);
    for _ in 0..runs {
        let out = std::fs::File::create(&stdout_file)?;
        let (time, rss) = run_dfanon(&base(release.to_string()), out.into())?;
        csv_times.push(time);
        csv_rss = csv_rss.max(rss);
        let copy = format!("COPY ({release}) TO '{}'", copy_file.to_string_lossy());
        let (time, rss) = run_dfanon(&base(copy), std::process::Stdio::null())?;
        copy_times.push(time);
        copy_rss = copy_rss.max(rss);
    }
    // Both hold the header and the same rows.
    let lines = |path: &std::path::Path| -> Result<u64> {
        use std::io::BufRead;
        let file = std::io::BufReader::new(std::fs::File::open(path)?);
        Ok(file.lines().count() as u64)
    };
    let (stdout_lines, copy_lines) = (lines(&stdout_file)?, lines(&copy_file)?);
    if stdout_lines != copy_lines {
        return Err(datafusion::error::DataFusionError::Execution(format!(
            "the stdout export has {stdout_lines} lines, COPY {copy_lines}"
        )));
    }
    for path in [&source, &stdout_file, &copy_file] {
        let _ = std::fs::remove_file(path);
    }
    csv_times.sort_by(|a, b| a.total_cmp(b));
    copy_times.sort_by(|a, b| a.total_cmp(b));
    Ok((
        stdout_lines.saturating_sub(1),
        [
            csv_times[csv_times.len() / 2],
            csv_rss,
            copy_times[copy_times.len() / 2],
            copy_rss,
        ],
    ))
}

/// Writes `nps_demo(rows => rows)` to Parquet at `parquet` in chunks of seeds, so that the
/// generator never holds more than one chunk.
async fn write_nps(parquet: &std::path::Path, rows: u64) -> Result<()> {
    std::fs::create_dir_all(parquet)?;
    const CHUNK: u64 = 1_361_000;
    let mut written = 0;
    let mut part = 0;
    while written < rows {
        let n = CHUNK.min(rows - written);
        let ctx = SessionContext::new();
        datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
        ctx.sql(&format!(
            "COPY (SELECT * FROM nps_demo(rows => {n}, seed => {})) TO '{}/part-{part:04}.parquet' STORED AS PARQUET",
            1000 + part,
            parquet.to_string_lossy()
        ))
        .await?
        .collect()
        .await?;
        written += n;
        part += 1;
    }
    Ok(())
}

/// The embedded 1,361,000-row NPS-shaped demo data written to Parquet under `dir`; returns
/// its path.
async fn demo_parquet(dir: &std::path::Path, name: &str) -> Result<String> {
    let parquet = dir.join(name).to_string_lossy().to_string();
    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    ctx.sql(&format!(
        "COPY (SELECT * FROM nps_demo()) TO '{parquet}' STORED AS PARQUET"
    ))
    .await?
    .collect()
    .await?;
    Ok(parquet)
}

/// What the server case measured.
struct ServerCase {
    queries: usize,
    p50_ms: f64,
    p99_ms: f64,
    one_rss_mb: f64,
    peak_rss_mb: f64,
    releases: String,
}

/// The paper's Q1 (male, no surgery, stroke) over the owner's IPA release (its arguments
/// fixed by the server's release policy), per released age label.
const SERVER_Q1: &str = "SELECT age, COUNT(*) AS patients FROM anonymize('nps', method => 'ipa') \
    WHERE sex = 'M' AND surgery = 'N' AND disease LIKE 'I6%' GROUP BY age ORDER BY age";

/// The peak resident memory of process `pid` so far, in MiB (Linux; 0 elsewhere).
fn process_peak_rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// Q1 through `psql` as `analyst`; its wall time in ms.
fn psql_q1(port: u16) -> Result<f64> {
    let start = Instant::now();
    let out = std::process::Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            "analyst",
            "-d",
            "datafusion",
        ])
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", SERVER_Q1])
        .env("PGPASSWORD", "analyst-pw")
        .output()?;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(datafusion::error::DataFusionError::Execution(format!(
            "psql Q1 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(start.elapsed().as_secs_f64() * 1000.0)
}

/// Q1 through a Flight SQL client (arrow-flight's) as `analyst`; its wall time in ms.
async fn flight_q1(port: u16) -> Result<f64> {
    use arrow_flight::sql::client::FlightSqlServiceClient;
    use futures::TryStreamExt;
    let failed =
        |e: String| datafusion::error::DataFusionError::Execution(format!("Flight SQL Q1: {e}"));
    let start = Instant::now();
    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .map_err(|e| failed(e.to_string()))?
        .connect()
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut client = FlightSqlServiceClient::new(channel);
    client
        .handshake("analyst", "analyst-pw")
        .await
        .map_err(|e| failed(e.to_string()))?;
    let info = client
        .execute(SERVER_Q1.to_string(), None)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut rows = 0;
    for endpoint in info.endpoint {
        let ticket = endpoint.ticket.ok_or_else(|| failed("no ticket".into()))?;
        let batches: Vec<_> = client
            .do_get(ticket)
            .await
            .map_err(|e| failed(e.to_string()))?
            .try_collect()
            .await
            .map_err(|e| failed(e.to_string()))?;
        rows += batches.iter().map(|b| b.num_rows()).sum::<usize>();
    }
    if rows == 0 {
        return Err(failed("no rows".into()));
    }
    Ok(start.elapsed().as_secs_f64() * 1000.0)
}

/// The server case (see the module documentation).
/// `dfanon-server` on the NPS demo data with the release policy of the server cases and
/// `settings` (top-level keys) added: the process, its PostgreSQL and Flight SQL ports.
fn start_server(dir: &std::path::Path, settings: &str) -> Result<(std::process::Child, u16, u16)> {
    use std::io::BufRead;
    let hash = |password: &str| -> Result<String> {
        use std::io::Write;
        let mut child = std::process::Command::new(tool("dfanon-server")?)
            .arg("hash-password")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(format!("{password}\n").as_bytes())?;
        }
        let out = child.wait_with_output()?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let setup = dir.join("server_setup.sql");
    std::fs::write(
        &setup,
        format!("CREATE TABLE nps AS SELECT * FROM nps_demo();\n{NPS_HIERARCHIES}"),
    )?;
    let config = dir.join("server.toml");
    std::fs::write(
        &config,
        format!(
            "postgres = \"127.0.0.1:0\"\nflight_sql = \"127.0.0.1:0\"\ninit = [\"{}\"]\nepsilon_budget = 1\n{settings}\n\n[public]\ntables = [\"nps_hierarchy_*\"]\nmethods = [\"ipa\"]\nallow_non_dp = true\n\n[public.sources.nps]\nqi = {{ age = \"nps_hierarchy_age\", sex = \"nps_hierarchy_sex\", los = \"nps_hierarchy_los\", surgery = \"nps_hierarchy_surgery\", location = \"nps_hierarchy_location\" }}\ninformative = {{ disease = \"nps_hierarchy_disease\" }}\n\n[public.sources.nps.fixed.ipa]\nqi = \"age, sex, los, surgery, location\"\ninformative = \"disease\"\nepsilon = 1.0\n\n[[user]]\nname = \"owner\"\nrole = \"owner\"\npassword_hash = \"{}\"\n\n[[user]]\nname = \"analyst\"\nrole = \"public\"\npassword_hash = \"{}\"\n",
            setup.display(),
            hash("owner-pw")?,
            hash("analyst-pw")?
        ),
    )?;
    let mut server = std::process::Command::new(tool("dfanon-server")?)
        .arg("--config")
        .arg(&config)
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let stderr = server
        .stderr
        .take()
        .ok_or_else(|| datafusion::error::DataFusionError::Execution("no stderr".into()))?;
    let mut lines = std::io::BufReader::new(stderr).lines();
    let listening = loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("listening:") => break line,
            Some(_) => continue,
            None => {
                return Err(datafusion::error::DataFusionError::Execution(
                    "dfanon-server ended before listening".into(),
                ))
            }
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let port = |name: &str| -> u16 {
        listening
            .split(name)
            .nth(1)
            .and_then(|rest| rest.split([',', ' ']).next())
            .and_then(|address| address.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    };
    let (pg, flight) = (port("PostgreSQL on "), port("Flight SQL on "));
    Ok((server, pg, flight))
}

/// A psql session of `analyst` logged in and waiting for statements on its input (after
/// answering a first one).
fn idle_login(pg: u16) -> Result<std::process::Child> {
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", &pg.to_string(), "-U", "analyst"])
        .args(["-d", "datafusion", "-X", "-A", "-t", "-f", "-"])
        .env("PGPASSWORD", "analyst-pw")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| datafusion::error::DataFusionError::Execution("psql has no input".into()))?;
    writeln!(stdin, "SELECT 'held';")?;
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        std::io::BufReader::new(stdout).read_line(&mut line)?;
    }
    if line.trim() != "held" {
        let _ = child.kill();
        let _ = child.wait();
        return Err(datafusion::error::DataFusionError::Execution(
            "an idle login was refused".into(),
        ));
    }
    child.stdin = Some(stdin);
    Ok(child)
}

/// What `server_200_connections` measured.
struct ConnectionsCase {
    queries: usize,
    failed: usize,
    p50_ms: f64,
    p99_ms: f64,
    peak_rss_mb: f64,
}

/// 100 idle logins held while 100 psql clients run Q1 at once, `runs` rounds, on one
/// server (its limits raised to let 200 connections in).
fn connections_case(dir: &std::path::Path, runs: usize) -> Result<ConnectionsCase> {
    let (mut server, pg, _) =
        start_server(dir, "max_connections = 300\nmax_connections_per_user = 250")?;
    let pid = server.id();
    let outcome = (|| {
        // The release is drawn once, before the rounds.
        psql_q1(pg)?;
        let (mut latencies, mut failed) = (Vec::new(), 0);
        for _ in 0..runs {
            let idle = (0..100)
                .map(|_| idle_login(pg))
                .collect::<Result<Vec<_>>>()?;
            let clients: Vec<_> = (0..100)
                .map(|_| std::thread::spawn(move || psql_q1(pg)))
                .collect();
            for client in clients {
                match client.join() {
                    Ok(Ok(ms)) => latencies.push(ms),
                    _ => failed += 1,
                }
            }
            for mut login in idle {
                let _ = login.kill();
                let _ = login.wait();
            }
        }
        latencies.sort_by(f64::total_cmp);
        let at = |q: f64| {
            latencies
                .get(((latencies.len().max(1) as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        Ok(ConnectionsCase {
            queries: latencies.len(),
            failed,
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            peak_rss_mb: process_peak_rss_mb(pid),
        })
    })();
    let _ = server.kill();
    let _ = server.wait();
    outcome
}

async fn server_case(dir: &std::path::Path, runs: usize) -> Result<ServerCase> {
    let (mut server, pg, flight) = start_server(dir, "")?;
    let pid = server.id();
    let outcome = async {
        // One client alone draws the release.
        flight_q1(flight).await?;
        let one_rss_mb = process_peak_rss_mb(pid);
        let mut latencies = Vec::new();
        for _ in 0..runs {
            let mut tasks = Vec::new();
            for i in 0..32 {
                tasks.push(tokio::spawn(async move {
                    if i % 2 == 0 {
                        tokio::task::spawn_blocking(move || psql_q1(pg))
                            .await
                            .map_err(|e| {
                                datafusion::error::DataFusionError::External(Box::new(e))
                            })?
                    } else {
                        flight_q1(flight).await
                    }
                }));
            }
            for task in tasks {
                latencies
                    .push(task.await.map_err(|e| {
                        datafusion::error::DataFusionError::External(Box::new(e))
                    })??);
            }
        }
        latencies.sort_by(f64::total_cmp);
        let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
        let budget = std::process::Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &pg.to_string(),
                "-U",
                "owner",
                "-d",
                "datafusion",
            ])
            .args([
                "-X",
                "-A",
                "-t",
                "-c",
                "SELECT releases FROM privacy_budget()",
            ])
            .env("PGPASSWORD", "owner-pw")
            .output()?;
        Ok(ServerCase {
            queries: latencies.len(),
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            one_rss_mb,
            peak_rss_mb: process_peak_rss_mb(pid),
            releases: String::from_utf8_lossy(&budget.stdout).trim().to_string(),
        })
    }
    .await;
    let _ = server.kill();
    let _ = server.wait();
    outcome
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 5usize;
    let mut filter: Option<String> = None;
    let mut scale_rows: Vec<u64> = vec![13_610_000, 68_050_000];
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
            "--scale-rows" => {
                scale_rows = args
                    .get(i + 1)
                    .map(|r| r.split(',').filter_map(|n| n.trim().parse().ok()).collect())
                    .unwrap_or_default();
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
        let parquet = demo_parquet(dir.path(), "nps.parquet").await?;
        let (rows, nodes, median) = ipa_nps(&parquet, runs).await?;
        println!(
            "CASE name=ipa_nps_1361000 rows={rows} nodes={nodes} median_s={median:.3} peak_rss_mb={:.0}",
            peak_rss_mb()
        );
    }
    if wanted("attacks_nps_ipa") {
        let parquet = demo_parquet(dir.path(), "nps_attacks.parquet").await?;
        let ctx = nps_session(&parquet).await?;
        reset_peak_rss();
        let (median, release_s, risks) = attacks_case(
            &ctx,
            "nps",
            "method => 'ipa', qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0, seed => 1",
            "all",
            runs,
        )
        .await?;
        println!(
            "CASE name=attacks_nps_ipa rows=1361000 median_s={median:.3} release_s={release_s:.3} ratio={:.2} peak_rss_mb={:.0} {}",
            median / release_s,
            peak_rss_mb(),
            risks.join(" ")
        );
    }
    if wanted("record_linkage_nps_kanon") {
        let parquet = demo_parquet(dir.path(), "nps_linkage.parquet").await?;
        let ctx = nps_session(&parquet).await?;
        reset_peak_rss();
        let (median, release_s, risks) = attacks_case(
            &ctx,
            "nps",
            "method => 'kanon', qi => 'age, sex, los, surgery, location', sensitive => 'disease', k => 5",
            "record_linkage",
            runs,
        )
        .await?;
        println!(
            "CASE name=record_linkage_nps_kanon rows=1361000 median_s={median:.3} release_s={release_s:.3} ratio={:.2} peak_rss_mb={:.0} {}",
            median / release_s,
            peak_rss_mb(),
            risks.join(" ")
        );
    }
    if wanted("attacks_adult_kanon") {
        let ctx = SessionContext::new();
        datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
        adult_tables(&ctx).await?;
        let qi: Vec<String> = ADULT_QI
            .iter()
            .map(|q| format!("\"{q}\":adult_hierarchy_{q}"))
            .collect();
        reset_peak_rss();
        let (median, release_s, risks) = attacks_case(
            &ctx,
            "adult",
            &format!("method => 'kanon', qi => '{}', k => 5", qi.join(", ")),
            "all",
            runs,
        )
        .await?;
        println!(
            "CASE name=attacks_adult_kanon rows=30162 median_s={median:.3} release_s={release_s:.3} ratio={:.2} peak_rss_mb={:.0} {}",
            median / release_s,
            peak_rss_mb(),
            risks.join(" ")
        );
    }
    if wanted("upa_nps_1361000") {
        let parquet = demo_parquet(dir.path(), "nps_upa.parquet").await?;
        let (rows, nodes, median) = upa_nps(&parquet, runs).await?;
        println!(
            "CASE name=upa_nps_1361000 rows={rows} nodes={nodes} median_s={median:.3} peak_rss_mb={:.0}",
            peak_rss_mb()
        );
    }
    for (name, method_args, memory_limit) in [
        ("ipa_wide_12qi", "method => 'ipa', epsilon => 1.0", None),
        ("upa_wide_12qi", "method => 'upa', k => 5", None),
        (
            "ipa_wide_12qi_mem500m",
            "method => 'ipa', epsilon => 1.0",
            Some(500 << 20),
        ),
        (
            "upa_wide_12qi_mem500m",
            "method => 'upa', k => 5",
            Some(500 << 20),
        ),
    ] {
        if wanted(name) {
            let (rows, median, peak, outcome) = wide_case(method_args, memory_limit, runs).await?;
            println!(
                "CASE name={name} rows={rows} nodes=4096 median_s={median:.3} peak_rss_mb={peak:.0} outcome={outcome}"
            );
        }
    }
    if wanted("export_csv_5000000") {
        let (rows, [median, rss, copy_median, copy_rss]) =
            export_case(dir.path(), 5_000_000, runs)?;
        println!(
            "CASE name=export_csv_5000000 rows={rows} median_s={median:.3} peak_rss_mb={rss:.0} copy_median_s={copy_median:.3} copy_rss_mb={copy_rss:.0} rss_ratio={:.2}",
            rss / copy_rss
        );
    }
    if wanted("python_q1_nps_1361000") {
        match python_q1_case(dir.path(), runs)? {
            Some([python, dfanon, process, python_rss, dfanon_rss]) => println!(
                "CASE name=python_q1_nps_1361000 rows=1361000 median_s={python:.3} peak_rss_mb={python_rss:.0} dfanon_median_s={dfanon:.3} dfanon_rss_mb={dfanon_rss:.0} ratio={:.2} python_process_median_s={process:.3} process_ratio={:.2}",
                python / dfanon,
                process / dfanon
            ),
            None => println!(
                "CASE name=python_q1_nps_1361000 skipped=needs the virtual environment of `cargo test --release -p dfanon --test python`"
            ),
        }
    }
    if wanted("server_q1_32clients") {
        let c = server_case(dir.path(), runs).await?;
        println!(
            "CASE name=server_q1_32clients rows=1361000 clients=32 queries={} p50_ms={:.0} p99_ms={:.0} one_client_rss_mb={:.0} peak_rss_mb={:.0} rss_ratio={:.2} releases_charged={}",
            c.queries, c.p50_ms, c.p99_ms, c.one_rss_mb, c.peak_rss_mb, c.peak_rss_mb / c.one_rss_mb, c.releases
        );
    }
    if wanted("server_200_connections") {
        let c = connections_case(dir.path(), runs)?;
        println!(
            "CASE name=server_200_connections rows=1361000 idle=100 querying=100 queries={} failed={} median_s={:.3} p50_ms={:.0} p99_ms={:.0} peak_rss_mb={:.0}",
            c.queries, c.failed, c.p50_ms / 1000.0, c.p50_ms, c.p99_ms, c.peak_rss_mb
        );
    }
    if wanted("risk_adult_9qi") {
        let (rows, assess, suda) = risk_adult(runs).await?;
        println!(
            "CASE name=risk_adult_9qi rows={rows} median_s={assess:.3} suda_max3_median_s={suda:.3} peak_rss_mb={:.0}",
            peak_rss_mb()
        );
    }
    for (name, args, person) in [
        (
            "kanon_person_nps_1361000",
            "method => 'kanon', k => 5",
            ", person => 'pid'",
        ),
        (
            "dp_histogram_person_nps_1361000",
            "method => 'dp_histogram', sensitive => 'disease', epsilon => 1, levels => 'age=2, sex=0, los=2, surgery=0, location=2'",
            ", person => 'pid', max_rows_per_person => 2",
        ),
    ] {
        if wanted(name) {
            let parquet = admissions_parquet(dir.path()).await?;
            reset_peak_rss();
            let (rows, per_row, per_person) = person_case(&parquet, args, person, runs).await?;
            println!(
                "CASE name={name} rows={rows} median_s={per_person:.3} row_median_s={per_row:.3} ratio={:.2} peak_rss_mb={:.0}",
                per_person / per_row,
                peak_rss_mb()
            );
        }
    }
    if wanted("microaggregation_adult_age") {
        reset_peak_rss();
        let setup =
            || -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<SessionContext>>>> {
                Box::pin(async {
                    let ctx = SessionContext::new();
                    datafusion_anonymize::register_with(
                        &ctx,
                        datafusion_anonymize::RegisterOptions::owner(),
                    )?;
                    adult_tables(&ctx).await?;
                    run_script(&ctx, "CREATE VIEW src AS SELECT * FROM adult").await?;
                    Ok(ctx)
                })
            };
        let (rows, groups, median) =
            microaggregation_case(&setup, "qi => 'age', k => 3", runs).await?;
        println!(
            "CASE name=microaggregation_adult_age rows={rows} groups={groups} median_s={median:.3} peak_rss_mb={:.0}",
            peak_rss_mb()
        );
    }
    if wanted("microaggregation_nps_1361000") {
        let parquet = demo_parquet(dir.path(), "nps_micro.parquet").await?;
        reset_peak_rss();
        let setup =
            || -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<SessionContext>>>> {
                let parquet = parquet.clone();
                Box::pin(async move {
                    let ctx = nps_session(&parquet).await?;
                    run_script(&ctx, "CREATE VIEW src AS SELECT * FROM nps").await?;
                    Ok(ctx)
                })
            };
        let (rows, groups, median) = microaggregation_case(
            &setup,
            "qi => 'age, los', k => 3, sensitive => 'disease'",
            runs,
        )
        .await?;
        println!(
            "CASE name=microaggregation_nps_1361000 rows={rows} groups={groups} median_s={median:.3} peak_rss_mb={:.0}",
            peak_rss_mb()
        );
    }
    for distinct in [10_000u64, 20_000] {
        let name = format!("microaggregation_distinct_{distinct}");
        if wanted(&name) {
            reset_peak_rss();
            let setup = move || -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<SessionContext>>>> {
                Box::pin(async move {
                    let ctx = SessionContext::new();
                    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
                    // Every record at its own point: MDAV's worst case, O(n²/k) distances.
                    run_script(&ctx, &format!(
                        "CREATE TABLE src AS SELECT CAST(value AS DOUBLE) AS x, CAST((value * 7919) % 10007 AS DOUBLE) AS y FROM generate_series(1, {distinct})"
                    )).await?;
                    Ok(ctx)
                })
            };
            let (rows, groups, median) =
                microaggregation_case(&setup, "qi => 'x, y', k => 3", runs).await?;
            println!(
                "CASE name={name} rows={rows} groups={groups} median_s={median:.3} peak_rss_mb={:.0}",
                peak_rss_mb()
            );
        }
    }
    if wanted("suda_nps_1361000") {
        let parquet = demo_parquet(dir.path(), "nps_suda.parquet").await?;
        reset_peak_rss();
        let (rows, special, median) = suda_nps(&parquet, runs).await?;
        println!(
            "CASE name=suda_nps_1361000 rows={rows} records_with_msu={special} median_s={median:.3} peak_rss_mb={:.0}",
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
    if wanted("tcloseness_ordered_adult") {
        let (rows, nodes, fast, slow) = tcloseness_ordered_adult(runs).await?;
        println!(
            "CASE name=tcloseness_ordered_adult rows={rows} nodes={nodes} median_s={fast:.4} peak_rss_mb={:.0} straightforward_median_s={slow:.4} speedup={:.2}",
            peak_rss_mb(),
            slow / fast
        );
    }
    // Scale cases: only when the filter asks for them.
    for &rows in &scale_rows {
        let names: Vec<String> = SCALE_METHODS
            .iter()
            .map(|(method, _, _)| format!("{method}_nps_{rows}"))
            .collect();
        let asked = |name: &str| {
            filter
                .as_deref()
                .is_some_and(|f| f == "scale" || name.contains(f))
        };
        if !names.iter().any(|n| asked(n)) {
            continue;
        }
        let parquet = dir.path().join(format!("nps_{rows}"));
        write_nps(&parquet, rows).await?;
        let parquet_text = parquet.to_string_lossy().to_string();
        for ((_, args, columns), name) in SCALE_METHODS.iter().zip(&names) {
            if !asked(name) {
                continue;
            }
            let (median, groupby, count_rss, copy_rss) =
                scale_case(&parquet_text, args, columns, dir.path(), runs).await?;
            println!(
                "CASE name={name} rows={rows} median_s={median:.3} groupby_s={groupby:.3} ratio={:.2} peak_rss_mb={:.0} count_rss_mb={count_rss:.0} copy_rss_mb={copy_rss:.0}",
                median / groupby,
                count_rss.max(copy_rss)
            );
        }
        std::fs::remove_dir_all(&parquet)?;
    }
    Ok(())
}
