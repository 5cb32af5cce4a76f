//! The UPA paper's Adult figures (Lee et al. 2017, Figs. 5–6): LM and counterfeit counts of
//! h-ceiled releases next to the LM of optimal k-anonymity without suppression, with the
//! settings and the data of `sql/upa_adult.sql`.

use std::fmt::Write as _;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

use crate::evaluate::{floats, query, strings};

const ADULT_SQL: &str = include_str!("../../sql/upa_adult.sql");

const QI: &str = "sex, age, race, marital-status, education, native-country, workclass";

/// (k, h, the paper's counterfeit count): Fig. 5 (h = 0.3) and Fig. 6 (k = 5).
const PAPER_COUNTERFEITS: [(u64, f64, u64); 5] = [
    (3, 0.3, 125),
    (5, 0.3, 132),
    (10, 0.3, 103),
    (5, 0.25, 138),
    (5, 0.35, 38),
];

/// (k, the paper's LM of k-anonymity) where the paper states one.
const PAPER_KANON_LM: [(u64, &str); 3] = [(3, "≥ 0.37"), (5, ""), (10, "> 0.4")];

/// Runs the five UPA releases and the three k-anonymizations on Adult; returns the report
/// section and the machine-readable lines.
pub(crate) async fn upa_adult() -> Result<(String, Vec<String>)> {
    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    // The tables of sql/upa_adult.sql (one statement per line, with ';' inside its CSV
    // options), read from this repository.
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");
    for line in ADULT_SQL
        .lines()
        .filter(|l| l.starts_with("CREATE EXTERNAL TABLE"))
    {
        let statement = line
            .trim_end()
            .trim_end_matches(';')
            .replace("'tests/data/", &format!("'{data}"));
        query(&ctx, &statement).await?;
    }

    let mut md = String::new();
    let mut lines = Vec::new();
    let _ = writeln!(md, "## UPA on Adult (UPA paper Figs. 5–6)\n");
    let _ = writeln!(
        md,
        "`method => 'upa'`, quasi-identifiers {QI}, occupation sensitive, seed 1 (`sql/upa_adult.sql`). \
         The node is the one with the lowest RCE within the ceiling, as the paper says (RCE discretised as in docs/METHODS.md §5.6).\n"
    );
    let _ = writeln!(
        md,
        "| k | h | node | LM | counterfeits | released rows | paper: counterfeits |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for (k, h, paper) in PAPER_COUNTERFEITS {
        let rows = query(
            &ctx,
            &format!(
                "SELECT key, value FROM anonymize_metadata('adult', method => 'upa', qi => '{QI}', \
                 sensitive => 'occupation', k => {k}, h => {h}, seed => 1) \
                 WHERE key IN ('node', 'lm', 'counterfeits', 'released_rows') ORDER BY key"
            ),
        )
        .await?;
        let (keys, values) = (strings(&rows, 0)?, strings(&rows, 1)?);
        let get = |name: &str| {
            keys.iter()
                .position(|k| k == name)
                .map(|i| values[i].clone())
                .unwrap_or_default()
        };
        let lm: f64 = get("lm").parse().unwrap_or(f64::NAN);
        let (node, fakes, released) = (get("node"), get("counterfeits"), get("released_rows"));
        let _ = writeln!(
            md,
            "| {k} | {h} | {node} | {lm:.4} | {fakes} | {released} | {paper} |"
        );
        lines.push(format!(
            "UPA dataset=adult k={k} h={h} node={node} lm={lm:.6} counterfeits={fakes} paper_counterfeits={paper}"
        ));
    }
    let _ = writeln!(
        md,
        "\nOptimal k-anonymity without suppression (`method => 'kanon'`, `suppression_limit => 0`, same quasi-identifiers):\n"
    );
    let _ = writeln!(md, "| k | LM | paper: LM |");
    let _ = writeln!(md, "|---|---|---|");
    for (k, paper) in PAPER_KANON_LM {
        let rows = query(
            &ctx,
            &format!(
                "SELECT lm FROM anonymize_information_loss('adult', method => 'kanon', qi => '{QI}', \
                 sensitive => 'occupation', k => {k}, suppression_limit => 0)"
            ),
        )
        .await?;
        let lm = floats(&rows, 0)?.first().copied().unwrap_or(f64::NAN);
        let _ = writeln!(md, "| {k} | {lm:.4} | {paper} |");
        lines.push(format!("KANON_LM dataset=adult k={k} lm={lm:.6}"));
    }
    let _ = writeln!(md);
    Ok((md, lines))
}
