//! Reproduces the evaluation of the IPA paper (Lee & Chung 2020) on the embedded NPS-shaped
//! demo data and writes a Markdown report with SVG plots.
//!
//! ```sh
//! cargo run --release --example paper_report -- --runs 10 --out out/report
//! ```
//!
//! Every randomized release (IPA with its utility score, with query-aware `qi_weights` and
//! with the paper's score, SafePub and the DP histogram at every ε, IPA at the paper's node,
//! UPA with k = 10 and h = 0.2 as in the UPA paper's NPS comparison) is drawn `--runs` times
//! with seeds `--seed + …` (reproduction only); k-anonymization is deterministic and drawn
//! once. The UPA paper's Adult figures (Figs. 5–6) are computed once from
//! `tests/data/adult`. Each release is evaluated with the SQL evaluator of
//! `sql/paper_q1_q4.sql` (Q1–Q4, relative L1 error) and `anonymize_information_loss` (IL).
//! Machine-readable lines on stdout:
//!
//! ```text
//! QERR query=<Q1..Q4> method=<m> epsilon=<e> median_rel_l1=<x> p95_rel_l1=<y> runs=<n>
//! IL method=<m> epsilon=<e> median=<x>
//! UPA dataset=adult k=<k> h=<h> node=<n> lm=<x> counterfeits=<c> paper_counterfeits=<c>
//! KANON_LM dataset=adult k=<k> lm=<x>
//! ```
//!
//! IL is printed on the paper's scale `(NCP + EMD + Rate) / 3`; `epsilon=none` for kanon and
//! UPA.

mod evaluate;
mod report;

mod upa_adult;

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;

use evaluate::{eps_label, evaluate, evaluator_sql, Spec, PAPER_NODE_MAX_LEVELS};
use report::write_report;

const QI: &str = "age, sex, los, surgery, location";

/// `qi_weights` of the query-aware IPA line: Q1–Q4 read age, sex, surgery and length of
/// stay, never location (chosen from the queries, not from the data).
pub(crate) const QUERY_WEIGHTS: &str = "location=0";

/// The node behind the paper's Tables 9-12 (age level 1, sex and surgery raw, LOS level 1;
/// location is not determined by the tables, level 1 chosen).
pub(crate) const PAPER_NODE: &str = "age=1, sex=0, los=1, surgery=0, location=1";

#[derive(Parser, Debug)]
#[command(about = "Reproduce the IPA paper's evaluation on the NPS-shaped demo data")]
pub(crate) struct Args {
    /// Repetitions of every randomized release.
    #[arg(long, default_value_t = 10)]
    pub(crate) runs: usize,
    /// Output directory for report.md and the SVG plots.
    #[arg(long, default_value = "out/report")]
    pub(crate) out: PathBuf,
    /// Rows of the demo table (the paper's size by default).
    #[arg(long, default_value_t = 1_361_000)]
    pub(crate) rows: usize,
    /// Privacy parameters to evaluate.
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.25,0.5,1,2")]
    pub(crate) epsilons: Vec<f64>,
    /// Base seed of the releases (reproduction only).
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Only these lines of the report (e.g. `ipa,ipa_workload` for the tails over many
    /// runs); every line by default.
    #[arg(long, value_delimiter = ',')]
    pub(crate) methods: Vec<String>,
}

/// The workload the demo states for its IPA release (sql/demo.sql): Q1–Q4 group by 5-year
/// age bands, sex, surgery and length of stay; counterfeit diseases are drawn per age label.
pub(crate) const DEMO_WORKLOAD: &str =
    ", workload => 'age:5, sex, surgery, los', counterfeit_by => 'age'";

fn specs(args: &Args) -> Vec<Spec> {
    let mut out = vec![
        Spec {
            method: "kanon",
            epsilon: None,
            run: 0,
            source: "nps",
            args: format!("method => 'kanon', qi => '{QI}', informative => 'disease', k => 10"),
        },
        Spec {
            method: "kanon_nosup",
            epsilon: None,
            run: 0,
            source: "nps",
            args: format!(
                "method => 'kanon', qi => '{QI}', informative => 'disease', k => 10, suppression_limit => 0"
            ),
        },
    ];
    for run in 0..args.runs {
        for (e_index, &epsilon) in args.epsilons.iter().enumerate() {
            let seed = args.seed + 1000 * run as u64 + 10 * e_index as u64;
            let ipa = |method: &'static str, extra: &str, seed: u64| {
                Spec {
                method,
                epsilon: Some(epsilon),
                run,
                source: "nps",
                args: format!("method => 'ipa', qi => '{QI}', informative => 'disease', epsilon => {epsilon}, seed => {seed}{extra}"),
            }
            };
            out.push(ipa("ipa", "", seed));
            out.push(ipa("ipa_workload", DEMO_WORKLOAD, seed + 5));
            out.push(ipa(
                "ipa_weighted",
                &format!(", qi_weights => '{QUERY_WEIGHTS}'"),
                seed + 2,
            ));
            out.push(ipa("ipa_paper", ", node_score => 'paper'", seed + 3));
            // The default without interval means: stays read by their midpoints.
            out.push(ipa(
                "ipa_midpoint",
                ", budget_split => '0.1,0.3,0.3,0.3'",
                seed + 4,
            ));
            out.push(Spec {
                method: "dp_histogram",
                epsilon: Some(epsilon),
                run,
                source: "nps",
                args: format!(
                    "method => 'dp_histogram', qi => '{QI}', informative => 'disease', epsilon => {epsilon}, levels => '{PAPER_NODE}', seed => {}",
                    seed + 1
                ),
            });
            out.push(Spec {
                method: "mst",
                epsilon: Some(epsilon),
                run,
                source: "nps",
                args: format!(
                    "method => 'mst', qi => '{QI}', informative => 'disease', epsilon => {epsilon}, seed => {}",
                    seed + 6
                ),
            });
            out.push(Spec {
                method: "safepub",
                epsilon: Some(epsilon),
                run,
                source: "nps",
                args: format!(
                    "method => 'safepub', qi => '{QI}', informative => 'disease', epsilon => {epsilon}, epsilon_search => {}, delta => 1e-7, seed => {}",
                    epsilon / 10.0,
                    seed + 4
                ),
            });
            out.push(Spec {
                method: "safepub_paper",
                epsilon: Some(epsilon),
                run,
                source: "nps",
                args: format!(
                    "method => 'safepub', qi => '{QI}', informative => 'disease', epsilon => {epsilon}, epsilon_search => {}, delta => 1e-7, final_selection => 'best', search_sample => 'shared', seed => {}",
                    epsilon / 10.0,
                    seed + 4
                ),
            });
        }
        for (method, extra, offset) in [
            ("upa", "", 8),
            ("upa_constrained", ", counterfeit_sa => 'constrained'", 9),
        ] {
            out.push(Spec {
                method,
                epsilon: None,
                run,
                source: "nps",
                args: format!(
                    "method => 'upa', qi => '{QI}', sensitive => 'disease', k => 10, h => 0.2, seed => {}{extra}",
                    args.seed + 1000 * run as u64 + offset
                ),
            });
        }
        out.push(Spec {
            method: "ipa_paper_node",
            epsilon: Some(1.0),
            run,
            source: "nps_node",
            args: format!(
                "method => 'ipa', node_score => 'paper', qi => '{QI}', informative => 'disease', epsilon => 1.0, max_levels => '{PAPER_NODE_MAX_LEVELS}', seed => {}",
                args.seed + 1000 * run as u64 + 7
            ),
        });
    }
    out
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if args.runs == 0 || args.epsilons.is_empty() {
        eprintln!("--runs must be at least 1 and --epsilons non-empty");
        std::process::exit(2);
    }
    if let Some(unknown) = args
        .methods
        .iter()
        .find(|m| !report::METHOD_ORDER.contains(&m.as_str()))
    {
        eprintln!(
            "--methods: '{unknown}' is not one of {}",
            report::METHOD_ORDER.join(", ")
        );
        std::process::exit(2);
    }
    std::fs::create_dir_all(&args.out)?;
    let start = Instant::now();
    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    ctx.sql(&format!(
        "CREATE TABLE nps AS SELECT * FROM nps_demo(rows => {})",
        args.rows
    ))
    .await?
    .collect()
    .await?;
    let nps = ctx.table_provider("nps").await?;
    let evaluator = evaluator_sql();
    let mut specs = specs(&args);
    if !args.methods.is_empty() {
        specs.retain(|spec| args.methods.iter().any(|m| m == spec.method));
    }
    let mut outcomes = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let outcome = match evaluate(nps.clone(), spec, &evaluator).await {
            Ok(outcome) => outcome,
            Err(e) => {
                eprintln!(
                    "[{}/{}] {} eps={} run={}: skipped: {e}",
                    i + 1,
                    specs.len(),
                    spec.method,
                    eps_label(spec.epsilon),
                    spec.run
                );
                continue;
            }
        };
        eprintln!(
            "[{}/{}] {} eps={} run={}: {} ({:.1} s)",
            i + 1,
            specs.len(),
            spec.method,
            eps_label(spec.epsilon),
            spec.run,
            outcome.levels,
            outcome.seconds
        );
        outcomes.push(outcome);
    }
    eprintln!("UPA on Adult (UPA paper Figs. 5-6) ...");
    let (adult_md, adult_lines) = upa_adult::upa_adult().await?;
    let mut lines = write_report(&args, &outcomes, &adult_md, start.elapsed().as_secs_f64())?;
    lines.extend(adult_lines);
    for l in lines {
        println!("{l}");
    }
    eprintln!("report written to {}", args.out.join("report.md").display());
    Ok(())
}
