//! Aggregating the outcomes over runs: the Markdown report, the SVG plots and the
//! machine-readable lines.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::evaluate::{eps_label, NodeScore, Outcome};
use crate::{Args, PAPER_NODE, QUERY_WEIGHTS};
use datafusion_anonymize::internals::svg::{figure, Panel, Series, Style};

/// The paper's relative L1 errors, computed from its Tables 9-12: (IPA, k-anonymization).
const PAPER_QERR: [(&str, f64, f64); 4] = [
    ("Q1", 0.128, 0.500),
    ("Q2", 0.148, 0.345),
    ("Q3", 0.375, 3.145),
    ("Q4", 0.326, 2.705),
];

/// The paper's information loss at ε = 1 (Fig. 6): IPA, k-anonymization, histogram.
const PAPER_IL: [(&str, f64); 3] = [("ipa", 0.28), ("kanon", 0.43), ("dp_histogram", 0.69)];

/// Median of the finite values (NaN when there are none).
fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q` quantile of the finite values by the nearest-rank rule (the smallest value with
/// at least a share `q` of the values at or below it; NaN when there are none).
fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Smallest and largest value.
fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        })
}

/// Outcomes grouped by (method, epsilon label).
type Groups<'a> = BTreeMap<(&'static str, String), Vec<&'a Outcome>>;

/// Groups outcomes by (method, ε).
fn group(outcomes: &[Outcome]) -> Groups<'_> {
    let mut g: Groups = BTreeMap::new();
    for o in outcomes {
        g.entry((o.spec.method, eps_label(o.spec.epsilon)))
            .or_default()
            .push(o);
    }
    g
}

/// Order of the methods in tables.
pub(crate) const METHOD_ORDER: [&str; 14] = [
    "ipa",
    "ipa_workload",
    "ipa_midpoint",
    "ipa_weighted",
    "ipa_paper",
    "ipa_paper_node",
    "kanon",
    "kanon_nosup",
    "upa",
    "upa_constrained",
    "safepub",
    "safepub_paper",
    "dp_histogram",
    "mst",
];

/// Methods with no ε: their releases are grouped under `epsilon=none`.
fn without_epsilon(m: &str) -> bool {
    m.starts_with("kanon") || m.starts_with("upa")
}

/// Plot colour and line style of each method.
fn method_style(m: &str) -> (&'static str, Style) {
    match m {
        "ipa" => ("#1f77b4", Style::Line),
        "ipa_weighted" => ("#17becf", Style::Line),
        "ipa_workload" => ("#000000", Style::Line),
        "ipa_midpoint" => ("#17becf", Style::Dashed),
        "ipa_paper" => ("#1f77b4", Style::Dashed),
        "ipa_paper_node" => ("#9467bd", Style::Dashed),
        "kanon" => ("#ff7f0e", Style::Line),
        "kanon_nosup" => ("#ff7f0e", Style::Dashed),
        "safepub" => ("#d62728", Style::Line),
        "safepub_paper" => ("#d62728", Style::Dashed),
        "upa" => ("#8c564b", Style::Line),
        "upa_constrained" => ("#8c564b", Style::Dashed),
        "mst" => ("#e377c2", Style::Line),
        _ => ("#2ca02c", Style::Line),
    }
}

/// A method's name in the report.
fn method_title(m: &str) -> &'static str {
    match m {
        "ipa" => "IPA (utility score, default: marginal counterfeit values, stays read by the published interval means)",
        "ipa_midpoint" => "IPA (utility score, marginal counterfeit values, no interval means: stays read by midpoints)",
        "ipa_weighted" => "IPA (utility score, qi_weights location=0)",
        "ipa_workload" => "IPA with the analyst's workload stated (workload 'age:5, sex, surgery, los', counterfeit_by 'age'), as the demo releases it",
        "ipa_paper" => "IPA (paper's score)",
        "ipa_paper_node" => "IPA at the paper's node",
        "safepub" => "SafePub (delta 1e-7)",
        "safepub_paper" => "SafePub, the paper's search (best pivot on the released sample: not proven)",
        "kanon" => "k-anonymization",
        "kanon_nosup" => "k-anonymization without suppression",
        "dp_histogram" => "DP histogram",
        "mst" => "MST (delta 1e-9, synthetic rows)",
        "upa" => "UPA (k = 10, h = 0.2)",
        "upa_constrained" => "UPA (k = 10, h = 0.2, constrained counterfeits)",
        _ => "?",
    }
}

/// Median estimate per (query, group) over a set of outcomes.
fn median_estimates(outcomes: &[&Outcome]) -> BTreeMap<(String, i64), f64> {
    let mut all: BTreeMap<(String, i64), Vec<f64>> = BTreeMap::new();
    for o in outcomes {
        for (k, (_, e)) in &o.compare {
            all.entry(k.clone()).or_default().push(*e);
        }
    }
    all.into_iter().map(|(k, v)| (k, median(&v))).collect()
}

/// What every report section reads.
struct Ctx<'a> {
    args: &'a Args,
    outcomes: &'a [Outcome],
    groups: Groups<'a>,
    eps1: String,
}

/// Writes `report.md` and the SVG plots into `args.out`; returns the machine-readable lines.
pub(crate) fn write_report(
    args: &Args,
    outcomes: &[Outcome],
    upa_adult: &str,
    total_seconds: f64,
) -> std::io::Result<Vec<String>> {
    let ctx = Ctx {
        args,
        outcomes,
        groups: group(outcomes),
        eps1: eps_label(Some(1.0)),
    };
    let mut md = String::new();
    let mut lines = Vec::new();
    header(&ctx, &mut md, total_seconds);
    information_loss(&ctx, &mut md, &mut lines)?;
    query_errors(&ctx, &mut md, &mut lines);
    tables(&ctx, &mut md)?;
    breakdown_by_level(&ctx, &mut md)?;
    released_nodes(&ctx, &mut md);
    md.push_str(upa_adult);
    std::fs::write(args.out.join("report.md"), md)?;
    Ok(lines)
}

/// Title, settings and the methods compared.
fn header(ctx: &Ctx, md: &mut String, total_seconds: f64) {
    let args = ctx.args;
    let _ = writeln!(
        md,
        "# IPA and UPA paper evaluations on the NPS-shaped demo data\n"
    );
    let _ = writeln!(
        md,
        "Generated by `cargo run --release --example paper_report -- --runs {}` ({} rows, ε ∈ {:?}, base seed {}, {:.0} s in total). \
         Randomized releases are drawn {} times each with fixed seeds (reproduction only); k-anonymization is deterministic and drawn once. \
         Queries are answered by the SQL evaluator of `sql/paper_q1_q4.sql`; information loss by `anonymize_information_loss` \
         (NCP + EMD + Rate, IPA paper Eq. 5–10, reported on the paper's scale (NCP+EMD+Rate)/3).\n",
        args.runs, args.rows, args.epsilons, args.seed, total_seconds, args.runs
    );
    let _ = writeln!(
        md,
        "Methods: **IPA (utility score, default)** (`method => 'ipa'`: the node with the best expected size-weighted IL on the true class sizes, chosen by the exponential mechanism at ε_cand, then perturbed once; variant `paper`, split 0.1/0.3/0.3/0.3, t = 2, full 256-node lattice); \
         **IPA (utility score, qi_weights {QUERY_WEIGHTS})** (the same, told that the analysis does not use location); \
         **IPA (paper's score)** (`node_score => 'paper'`: all 256 nodes perturbed, chosen by IL with Δu = 3); \
         **IPA at the paper's node** (Algorithm 1 at {PAPER_NODE}, the node behind the paper's Tables 9–12, on a pre-generalized source with identity hierarchies; \
         its IL is not meaningful and not reported); **k-anonymization** (`method => 'kanon'`, k = 10, ≤ 5 % suppression, minimal NCP); \
         **k-anonymization without suppression** (the same with `suppression_limit => 0`); \
         **SafePub** (`method => 'safepub'`, δ = 1e-7, ε_search = ε/10, granularity score, the proven defaults); \
         **SafePub, the paper's search** (the same with `final_selection => 'best', search_sample => 'shared'`: not proven); \
         **DP histogram** (`method => 'dp_histogram'` at {PAPER_NODE}); \
         **UPA (k = 10, h = 0.2)** (`method => 'upa'`, the UPA paper's NPS setting, disease sensitive; the release as published, counterfeits included: \
         the UPA paper reports no figures for it, only that it is closer to the original than k-anonymity, especially for Q3/Q4); \
         **UPA (…, constrained counterfeits)** (the same with `counterfeit_sa => 'constrained'`: counterfeit values drawn among those the rest of the table can conceal, so that more nodes have a catalog).\n"
    );
}

/// IL table (Fig. 6) and the IL-versus-ε plot (Fig. 7).
fn information_loss(ctx: &Ctx, md: &mut String, lines: &mut Vec<String>) -> std::io::Result<()> {
    let (args, groups, eps1) = (ctx.args, &ctx.groups, &ctx.eps1);
    // Information loss.
    let _ = writeln!(md, "## Information loss (Fig. 6 and Fig. 7)\n");
    let _ = writeln!(md, "| method | ε | median IL (mean scale) | min | max | median NCP | median EMD | median Rate | paper (ε = 1) |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    let mut il_points: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for ((method, eps), os) in groups {
        let ils: Vec<(f64, f64, f64)> = os.iter().filter_map(|o| o.il).collect();
        if ils.is_empty() {
            continue;
        }
        let means: Vec<f64> = ils.iter().map(|(a, b, c)| (a + b + c) / 3.0).collect();
        let m = median(&means);
        let (lo, hi) = min_max(&means);
        let paper = PAPER_IL
            .iter()
            .find(|(pm, _)| pm == method)
            .filter(|_| eps == eps1 || without_epsilon(method))
            .map_or(String::new(), |(_, v)| format!("{v}"));
        let _ = writeln!(
            md,
            "| {} | {eps} | {m:.3} | {lo:.3} | {hi:.3} | {:.3} | {:.3} | {:.3} | {paper} |",
            method_title(method),
            median(&ils.iter().map(|x| x.0).collect::<Vec<_>>()),
            median(&ils.iter().map(|x| x.1).collect::<Vec<_>>()),
            median(&ils.iter().map(|x| x.2).collect::<Vec<_>>()),
        );
        lines.push(format!("IL method={method} epsilon={eps} median={m:.6}"));
        if let Some(e) = os[0].spec.epsilon {
            il_points.entry(method).or_default().push((e, m));
        }
    }
    let _ = writeln!(md, "\n![IL versus epsilon](il_vs_epsilon.svg)\n");

    // IL vs epsilon plot.
    let kanon_il = groups
        .get(&("kanon", "none".to_string()))
        .and_then(|os| os[0].il)
        .map(|(a, b, c)| (a + b + c) / 3.0);
    let mut series = Vec::new();
    for m in [
        "ipa",
        "ipa_midpoint",
        "ipa_weighted",
        "ipa_paper",
        "safepub",
        "dp_histogram",
    ] {
        if let Some(points) = il_points.get(m) {
            let (color, style) = method_style(m);
            series.push(Series {
                name: format!("{} (median)", method_title(m)),
                color,
                style,
                points: points.clone(),
            });
        }
    }
    let (lo, hi) = min_max(&args.epsilons);
    let nosup_il = groups
        .get(&("kanon_nosup", "none".to_string()))
        .and_then(|os| os[0].il)
        .map(|(a, b, c)| (a + b + c) / 3.0);
    if let Some(k) = nosup_il {
        series.push(Series {
            name: "k-anon., no suppression".into(),
            color: "#ff7f0e",
            style: Style::Dashed,
            points: vec![(lo, k), (hi, k)],
        });
    }
    if let Some(k) = kanon_il {
        series.push(Series {
            name: "k-anonymization (no ε)".into(),
            color: "#ff7f0e",
            style: Style::Line,
            points: vec![(lo, k), (hi, k)],
        });
    }
    let ticks = args.epsilons.iter().map(|e| (*e, format!("{e}"))).collect();
    std::fs::write(
        args.out.join("il_vs_epsilon.svg"),
        figure(
            "Information loss (NCP+EMD+Rate)/3 versus ε",
            &[Panel {
                title: "Fig. 7".into(),
                x_label: "ε".into(),
                y_label: "IL".into(),
                series,
                x_ticks: Some(ticks),
                y_from_zero: true,
            }],
            1,
        )?,
    )?;

    Ok(())
}

/// Relative L1 errors of Q1-Q4 per method and ε.
fn query_errors(ctx: &Ctx, md: &mut String, lines: &mut Vec<String>) {
    let groups = &ctx.groups;
    // Query errors.
    let _ = writeln!(
        md,
        "## Relative L1 error of Q1–Q4 (Σ|orig − est| / Σ orig), median / 95th percentile over runs\n"
    );
    let _ = writeln!(md, "| method | ε | Q1 | Q2 | Q3 | Q4 |");
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    let _ = writeln!(
        md,
        "| paper: IPA | 1 | {} | {} | {} | {} |",
        PAPER_QERR[0].1, PAPER_QERR[1].1, PAPER_QERR[2].1, PAPER_QERR[3].1
    );
    let _ = writeln!(
        md,
        "| paper: k-anonymization | – | {} | {} | {} | {} |",
        PAPER_QERR[0].2, PAPER_QERR[1].2, PAPER_QERR[2].2, PAPER_QERR[3].2
    );
    for method in METHOD_ORDER {
        for ((m, eps), os) in groups {
            if *m != method {
                continue;
            }
            let mut row = format!("| {} | {eps} |", method_title(m));
            for (q, _, _) in PAPER_QERR {
                let v: Vec<f64> = os.iter().filter_map(|o| o.errors.get(q).copied()).collect();
                let (med, p95) = (median(&v), quantile(&v, 0.95));
                let _ = write!(row, " {med:.3} / {p95:.3} |");
                lines.push(format!(
                    "QERR query={q} method={m} epsilon={eps} median_rel_l1={med:.6} p95_rel_l1={p95:.6} runs={}",
                    v.len()
                ));
            }
            let _ = writeln!(md, "{row}");
        }
    }
}

/// Median estimate per (query, age group).
type Estimates = BTreeMap<(String, i64), f64>;

/// Tables 9-12 at ε = 1 and their plot.
fn tables(ctx: &Ctx, md: &mut String) -> std::io::Result<()> {
    let (args, outcomes, groups, eps1) = (ctx.args, ctx.outcomes, &ctx.groups, &ctx.eps1);
    // Tables 9-12.
    // Median estimates of every method at ε = 1 (kanon: its one deterministic release).
    let estimates: Vec<(&str, Estimates)> = METHOD_ORDER
        .iter()
        .filter_map(|&m| {
            let eps = if without_epsilon(m) {
                "none".to_string()
            } else {
                eps1.clone()
            };
            groups.get(&(m, eps)).map(|os| (m, median_estimates(os)))
        })
        .collect();
    let original: BTreeMap<(String, i64), f64> = outcomes
        .first()
        .map(|o| {
            o.compare
                .iter()
                .map(|(k, (orig, _))| (k.clone(), *orig))
                .collect()
        })
        .unwrap_or_default();
    let titles = [
        (
            "Q1",
            "Table 9 — Q1: male, no surgery, stroke; count per 5-year group",
        ),
        (
            "Q2",
            "Table 10 — Q2: female, no surgery, stroke; count per 5-year group",
        ),
        (
            "Q3",
            "Table 11 — Q3: male; mean length of stay per 10-year group",
        ),
        (
            "Q4",
            "Table 12 — Q4: female; mean length of stay per 10-year group",
        ),
    ];
    let _ = writeln!(
        md,
        "\n## Tables 9–12 at ε = 1 (estimates: median over runs)\n"
    );
    let _ = writeln!(md, "![Q1-Q4](q1_q4.svg)\n");
    let mut panels = Vec::new();
    for (q, title) in titles {
        let _ = writeln!(md, "### {title}\n");
        let mut head = "| age group | original |".to_string();
        let mut rule = "|---|---|".to_string();
        for (m, _) in &estimates {
            let _ = write!(head, " {} |", method_title(m));
            rule.push_str("---|");
        }
        let _ = writeln!(md, "{head}\n{rule}");
        let keys: Vec<&(String, i64)> = original.keys().filter(|k| k.0 == q).collect();
        let get = |m: &BTreeMap<(String, i64), f64>, k: &(String, i64)| {
            m.get(k).copied().unwrap_or(f64::NAN)
        };
        for k in &keys {
            let mut row = format!("| {} | {:.1} |", k.1, original[*k]);
            for (_, est) in &estimates {
                let _ = write!(row, " {:.1} |", get(est, k));
            }
            let _ = writeln!(md, "{row}");
        }
        let _ = writeln!(md);
        let series = |name: &str,
                      color: &'static str,
                      style: Style,
                      m: &BTreeMap<(String, i64), f64>| Series {
            name: name.to_string(),
            color,
            style,
            points: keys.iter().map(|k| (k.1 as f64, get(m, k))).collect(),
        };
        panels.push(Panel {
            title: title.split(" — ").next().unwrap_or(q).to_string() + " (" + q + ")",
            x_label: "age group (row label)".into(),
            y_label: if q == "Q1" || q == "Q2" {
                "patients".into()
            } else {
                "mean stay (days)".into()
            },
            series: std::iter::once(series("original", "#222222", Style::Line, &original))
                .chain(estimates.iter().map(|(m, est)| {
                    let (color, style) = method_style(m);
                    series(method_title(m), color, style, est)
                }))
                .collect(),
            x_ticks: None,
            y_from_zero: true,
        });
    }
    std::fs::write(
        args.out.join("q1_q4.svg"),
        figure(
            "Q1–Q4: original vs every method (ε = 1, medians over runs)",
            &panels,
            2,
        )?,
    )?;

    Ok(())
}

/// Per-node NCP, EMD and Rate by lattice level (Fig. 8).
fn breakdown_by_level(ctx: &Ctx, md: &mut String) -> std::io::Result<()> {
    let (args, groups) = (ctx.args, &ctx.groups);
    // Fig. 8: per-node breakdown by lattice level (run 0 of each ε).
    let _ = writeln!(
        md,
        "## NCP / EMD / Rate by lattice level (Fig. 8; IPA with the paper's score, which perturbs all 256 nodes, first run)\n"
    );
    let _ = writeln!(md, "![Fig. 8](fig8_breakdown.svg)\n");
    let _ = writeln!(
        md,
        "| ε | level sum | nodes | mean NCP | mean EMD | mean Rate | mean IL (sum) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let mut fig8 = Vec::new();
    let mut eps_desc = args.epsilons.clone();
    eps_desc.sort_by(|a, b| b.total_cmp(a));
    for e in eps_desc {
        let Some(o) = groups
            .get(&("ipa_paper", eps_label(Some(e))))
            .and_then(|os| os.iter().find(|o| o.spec.run == 0))
        else {
            continue;
        };
        let level = |n: &NodeScore| {
            n.node
                .split(',')
                .filter_map(|x| x.parse::<f64>().ok())
                .sum::<f64>()
        };
        let mut by_level: BTreeMap<i64, Vec<&NodeScore>> = BTreeMap::new();
        for n in &o.nodes {
            by_level.entry(level(n) as i64).or_default().push(n);
        }
        for (l, ns) in &by_level {
            let mean = |f: &dyn Fn(&NodeScore) -> f64| {
                ns.iter().map(|n| f(n)).sum::<f64>() / ns.len() as f64
            };
            let _ = writeln!(
                md,
                "| {e} | {l} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
                ns.len(),
                mean(&|n| n.ncp),
                mean(&|n| n.emd),
                mean(&|n| n.rate),
                mean(&|n| n.ncp + n.emd + n.rate)
            );
        }
        let chosen = o.nodes.iter().find(|n| n.chosen);
        let comp = |name: &str, color: &'static str, f: &dyn Fn(&NodeScore) -> f64| Series {
            name: name.into(),
            color,
            style: Style::Points,
            points: o.nodes.iter().map(|n| (level(n), f(n))).collect(),
        };
        let mut series = vec![
            comp("NCP", "#1f77b4", &|n| n.ncp),
            comp("EMD", "#d62728", &|n| n.emd),
            Series {
                style: Style::Rings,
                ..comp("Rate", "#e6b800", &|n| n.rate)
            },
        ];
        if let Some(c) = chosen {
            series.push(Series {
                name: format!("(NCP+EMD+Rate)/3 of the chosen node {}", c.node),
                color: "#222222",
                style: Style::Points,
                points: vec![(level(c), (c.ncp + c.emd + c.rate) / 3.0)],
            });
        }
        fig8.push(Panel {
            title: format!("ε = {e}"),
            x_label: "lattice level (sum of levels)".into(),
            y_label: "score".into(),
            series,
            x_ticks: Some((0..=11).map(|l| (l as f64, l.to_string())).collect()),
            y_from_zero: true,
        });
    }
    std::fs::write(
        args.out.join("fig8_breakdown.svg"),
        figure(
            "Per-node NCP, EMD and Rate of IPA by lattice level",
            &fig8,
            2,
        )?,
    )?;

    Ok(())
}

/// The node each release used.
fn released_nodes(ctx: &Ctx, md: &mut String) {
    let (outcomes, groups, eps1) = (ctx.outcomes, &ctx.groups, &ctx.eps1);
    // Chosen nodes.
    let _ = writeln!(md, "\n## Nodes released\n");
    let _ = writeln!(md, "| method | ε | run | levels | release seconds |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for method in METHOD_ORDER {
        for o in outcomes.iter().filter(|o| o.spec.method == method) {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.1} |",
                method_title(method),
                eps_label(o.spec.epsilon),
                o.spec.run,
                o.levels,
                o.seconds
            );
        }
    }
    let ipa1: Vec<&Outcome> = groups
        .get(&("ipa", eps1.clone()))
        .cloned()
        .unwrap_or_default();
    let usable = ipa1
        .iter()
        .filter(|o| {
            o.levels.contains("sex=0")
                && o.levels.contains("surgery=0")
                && !o.levels.contains("los=3")
        })
        .count();
    let _ = writeln!(
        md,
        "\nAt ε = 1, IPA released sex and surgery ungeneralized and a length of stay other than `*` (what Q1–Q4 need to be answered without guessing) in {usable} of {} runs.",
        ipa1.len()
    );
}
