//! The project page's later panels: the risk before release with the class-size chart,
//! the candidates side by side, and the publications read back.

use std::fmt::Write;

use datafusion_anonymize::escape_html as escape;

use super::evidence::Evidence;
use super::login::StudioUser;
use super::project::{Candidate, ColumnRole};
use super::project_page::{form, sql_block};
use super::results::Rows;
use super::workbench::Workbench;

/// The risk figures explained, in the order shown.
const RISK_FIGURES: &[(&str, &str)] = &[
    ("rows", "rows in the source"),
    (
        "classes",
        "groups of rows sharing every quasi-identifier value (equivalence classes)",
    ),
    (
        "min_class_size",
        "the smallest group: 1 means someone is unique",
    ),
    (
        "sample_uniques",
        "rows unique in the source: an attacker who knows their quasi-identifiers finds them",
    ),
    (
        "prosecutor_risk_max",
        "the highest chance of re-identifying a targeted person (1 / the size of their group)",
    ),
    (
        "prosecutor_risk_avg",
        "that chance on average over all rows",
    ),
    (
        "records_at_risk",
        "the share of rows whose chance is above the threshold",
    ),
    (
        "marketer_risk",
        "the share of rows an attacker re-identifies when trying everyone",
    ),
];

/// The figures of a candidate's report shown side by side, with their names.
const CANDIDATE_FIGURES: &[(&str, &str)] = &[
    ("after:rows", "rows released"),
    ("after:suppressed", "rows suppressed"),
    ("after:min_class_size", "smallest class"),
    (
        "after:prosecutor_risk_max",
        "highest re-identification risk",
    ),
    (
        "after:prosecutor_risk_avg",
        "average re-identification risk",
    ),
    ("information_loss:ncp", "information loss (NCP, 0 best)"),
    ("k_marginal_score", "2-way k-marginal score (1000 best)"),
    (
        "utility:k_marginal_sample_equivalent",
        "as close to the source as a random sample of this share of it",
    ),
    (
        "utility:pmse",
        "how well a decision tree tells released rows from source rows (pMSE, 0 best)",
    ),
    (
        "utility:unique_exact_match_share",
        "share of the source's unique records released unchanged",
    ),
    (
        "after:attack:singling_out",
        "singling-out attack: risk beyond a naive attacker (0 best)",
    ),
    (
        "after:attack:linkability",
        "linkability attack: risk beyond a naive attacker (0 best)",
    ),
    (
        "after:attack:inference",
        "inference attack: risk beyond a naive attacker (0 best)",
    ),
    (
        "after:attack:record_linkage",
        "record linkage: records linked to their own row, beyond a random row (0 best; kanon and microaggregation)",
    ),
];

fn number(value: &str) -> String {
    match value.parse::<f64>() {
        Ok(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Ok(v) => format!("{v:.4}"),
        Err(_) => escape(value),
    }
}

/// The risk before release.
pub fn risk(body: &mut String, user: &StudioUser, bench: &Workbench) {
    body.push_str("<section id=\"risk\"><h2>4. Risk before</h2><p class=\"explain\">How identifiable the rows are now, by their quasi-identifiers alone.</p>");
    body.push_str(&form("/project/risk", user));
    body.push_str("<button id=\"assess\">Assess the risk</button></form>");
    if let Some((figures, sizes)) = &bench.risk {
        body.push_str("<table class=\"figures\"><tbody>");
        for (key, meaning) in RISK_FIGURES {
            if let Some(value) = figures.value(key) {
                let _ = write!(
                    body,
                    "<tr data-figure=\"{key}\"><th>{key}</th><td class=\"num\">{}</td><td>{meaning}</td></tr>",
                    number(value)
                );
            }
        }
        body.push_str("</tbody></table>");
        body.push_str(&class_size_chart(sizes));
        let sql = [bench.project.assess_sql(), bench.project.class_sizes_sql()];
        body.push_str(&sql_block(&sql.into_iter().flatten().collect::<Vec<_>>()));
    }
    body.push_str("</section>");
}

/// The share of rows per class size, as bars (sizes grouped 1, 2, 3–4, 5–9, 10–19, 20–49,
/// 50–99, 100+).
pub fn class_size_chart(sizes: &Rows) -> String {
    const BINS: [(u64, u64, &str); 8] = [
        (1, 1, "1"),
        (2, 2, "2"),
        (3, 4, "3–4"),
        (5, 9, "5–9"),
        (10, 19, "10–19"),
        (20, 49, "20–49"),
        (50, 99, "50–99"),
        (100, u64::MAX, "100+"),
    ];
    let mut records = [0u64; 8];
    for r in 0..sizes.len() {
        let size: u64 = sizes.cell(r, 0).parse().unwrap_or(0);
        let count: u64 = sizes.cell(r, 2).parse().unwrap_or(0);
        if let Some(i) = BINS
            .iter()
            .position(|(lo, hi, _)| (*lo..=*hi).contains(&size))
        {
            records[i] += count;
        }
    }
    let total = records.iter().sum::<u64>().max(1) as f64;
    let (width, bar, gap) = (560.0, 52.0, 14.0);
    let mut svg = format!(
        "<figure id=\"class-sizes\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"200\" viewBox=\"0 0 {width} 200\" role=\"img\" aria-label=\"share of rows by the size of their class\">"
    );
    for (i, ((_, _, label), count)) in BINS.iter().zip(records).enumerate() {
        let share = count as f64 / total;
        let height = 140.0 * share;
        let x = 10.0 + i as f64 * (bar + gap);
        let fill = if i < 2 { "#D55E00" } else { "#0072B2" };
        let _ = write!(
            svg,
            "<rect x=\"{x}\" y=\"{:.1}\" width=\"{bar}\" height=\"{height:.1}\" fill=\"{fill}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{:.1}%</text>\
             <text x=\"{:.1}\" y=\"190\" font-size=\"12\" text-anchor=\"middle\">{label}</text>",
            160.0 - height,
            x + bar / 2.0,
            155.0 - height,
            100.0 * share,
            x + bar / 2.0,
        );
    }
    svg.push_str("</svg><figcaption>Share of rows by the size of their class (the rows sharing their quasi-identifiers). Rows in classes of 1 or 2 (orange) are the easiest to re-identify; a release moves them to the right.</figcaption></figure>");
    svg
}

/// A trial's Safe Harbor findings (`column_name, rule, finding, rows`) in a cell: "nothing
/// found", or one line per finding.
pub fn safe_harbor_cell(found: &Rows) -> String {
    if found.is_empty() {
        return "nothing found (dates, ages over 89, ZIP digits, identifiers)".into();
    }
    let mut out = format!(
        "<strong>{} to mend before a Safe Harbor release</strong><ul>",
        found.len()
    );
    for r in 0..found.len() {
        let _ = write!(
            out,
            "<li><code>{}</code> {}: {}</li>",
            escape(&found.cell(r, 0)),
            escape(&found.cell(r, 1)),
            escape(&found.cell(r, 2))
        );
    }
    out.push_str("</ul>");
    out
}

/// The guarantee of a candidate in one sentence.
pub fn guarantee(candidate: &Candidate) -> String {
    let arg = |name: &str, default: &str| {
        candidate
            .arguments
            .iter()
            .find(|(n, _)| n == name)
            .map_or(default.to_string(), |(_, v)| {
                v.trim_matches('\'').to_string()
            })
    };
    match candidate.method.as_str() {
        "kanon" => format!("k-anonymity: every released combination of quasi-identifiers is shared by at least {} rows; at most a share {} of the rows is suppressed. Syntactic, not differential privacy.", arg("k", "10"), arg("suppression_limit", "0.05")),
        "safepub" => format!("(ε = {}, δ = {})-differential privacy (SafePub): whether any one row is in the source changes the chance of any release by at most that much.", arg("epsilon", "1"), arg("delta", "?")),
        "ipa" => format!("ε = {} differential privacy (IPA): true rows generalized, some suppressed, counterfeit rows added.", arg("epsilon", "1")),
        "dp_histogram" => format!("ε = {} differential privacy: rows drawn from a noisy histogram of the generalized table.", arg("epsilon", "1")),
        "mst" => format!("(ε = {}, δ = {})-differential privacy (MST): synthetic rows drawn from a model of the columns' pairwise counts, measured with noise.", arg("epsilon", "1"), arg("delta", "1e-9")),
        "upa" => format!("k-anonymity with counterfeits (UPA, k = {}): every class holds at least k rows, some of them counterfeit.", arg("k", "10")),
        "microaggregation" => format!("groups of at least {} similar rows share their mean values: k-anonymity of the aggregated values, not differential privacy.", arg("k", "3")),
        other => escape(other),
    }
}

/// The candidates side by side.
pub fn candidates(body: &mut String, user: &StudioUser, bench: &Workbench) {
    body.push_str("<section id=\"candidates\"><h2>5. Candidates</h2><p class=\"explain\">Configurations to compare. Each runs as a <b>trial</b>: a seeded draw that charges no privacy budget and can never be published; publishing draws again, unseeded. Fill in the fields the method uses (k for k-anonymity, UPA and microaggregation; ε for the differentially private methods, δ for SafePub and MST).</p>");
    if bench.project.columns(ColumnRole::Quasi).is_empty() {
        body.push_str("<p>Choose quasi-identifiers first.</p></section>");
        return;
    }
    body.push_str(&form("/project/candidate", user));
    body.push_str("<label>Method <select name=\"method\">\
        <option value=\"kanon\">k-anonymity (optimal, with suppression)</option>\
        <option value=\"safepub\">SafePub (differential privacy)</option>\
        <option value=\"ipa\">IPA (differential privacy, counterfeits)</option>\
        <option value=\"dp_histogram\">DP histogram</option>\
        <option value=\"mst\">MST (differential privacy, synthetic rows)</option>\
        <option value=\"upa\">UPA (k-anonymity, counterfeits)</option>\
        <option value=\"microaggregation\">microaggregation</option></select></label> \
        <label>k <input name=\"k\" value=\"5\" size=\"4\"></label> \
        <label>suppression limit <input name=\"suppression_limit\" value=\"0.05\" size=\"5\"></label> \
        <label>ε <input name=\"epsilon\" value=\"1\" size=\"4\"></label> \
        <label>δ <input name=\"delta\" value=\"1e-6\" size=\"6\"></label> \
        <button id=\"add-candidate\">Run as a trial</button></form>");
    let project = &bench.project;
    if project.candidates.is_empty() {
        body.push_str("</section>");
        return;
    }
    if bench.evidence_pending() {
        body.push_str(
            "<p class=\"pending\" id=\"evidence-pending\">The candidates' own figures are in; \
            their reports (utility, the attacks) are being written one after the other. \
            <a href=\"/project#candidates\">Reload</a> to see them.</p>",
        );
    }
    body.push_str("<table class=\"side-by-side\"><thead><tr><th></th>");
    for (i, c) in project.candidates.iter().enumerate() {
        let _ = write!(body, "<th>Candidate {}<br><code>{}</code><br><span class=\"trial\">trial: not publishable</span></th>", i + 1, escape(&c.method));
    }
    body.push_str("</tr></thead><tbody><tr><th>arguments</th>");
    for c in &project.candidates {
        let args: Vec<String> = c
            .arguments
            .iter()
            .map(|(n, v)| format!("{n} => {v}"))
            .collect();
        let _ = write!(body, "<td><code>{}</code></td>", escape(&args.join(", ")));
    }
    body.push_str("</tr><tr><th>guarantee</th>");
    for c in &project.candidates {
        let _ = write!(body, "<td>{}</td>", guarantee(c));
    }
    body.push_str("</tr>");
    for (key, label) in CANDIDATE_FIGURES {
        let _ = write!(body, "<tr data-figure=\"{key}\"><th>{label}</th>");
        for trial in &bench.trials {
            let cell = match trial {
                Ok(t) => match t.figures.get(*key) {
                    Some(v) => number(&v.to_string()),
                    None if t.evidence.is_pending() => {
                        "<span class=\"pending\">computing…</span>".into()
                    }
                    None => "—".into(),
                },
                Err(_) => "—".into(),
            };
            let _ = write!(body, "<td class=\"num\">{cell}</td>");
        }
        body.push_str("</tr>");
    }
    body.push_str("<tr data-figure=\"safe_harbor\"><th>HIPAA Safe Harbor</th>");
    for trial in &bench.trials {
        let cell = match trial {
            Ok(t) => safe_harbor_cell(&t.safe_harbor),
            Err(_) => "—".into(),
        };
        let _ = write!(body, "<td>{cell}</td>");
    }
    body.push_str("</tr><tr><th>report</th>");
    for (i, trial) in bench.trials.iter().enumerate() {
        let link = format!("<a href=\"/project/candidates/{}/report\">", i + 1);
        let cell = match trial.as_ref().map(|t| &t.evidence) {
            Ok(Evidence::Ready(_)) => format!("{link}full report</a> (charts, lattice search)"),
            Ok(Evidence::Pending) => format!("{link}being written</a>"),
            Ok(Evidence::Failed(_)) => format!("{link}not written</a>"),
            Err(_) => "—".into(),
        };
        let _ = write!(body, "<td>{cell}</td>");
    }
    body.push_str("</tr><tr><th>publish</th>");
    for i in 0..project.candidates.len() {
        let _ = write!(body, "<td>{}<input type=\"hidden\" name=\"candidate\" value=\"{}\"><input name=\"name\" placeholder=\"table name\" size=\"12\" required> <button>Publish</button></form></td>", form("/project/publish", user), i + 1);
    }
    body.push_str("</tr></tbody></table>");
    for (i, trial) in bench.trials.iter().enumerate() {
        if let Ok(trial) = trial {
            let _ = write!(body, "<details class=\"rows\"><summary>Candidate {}: the first rows of its trial</summary>{}</details>", i + 1, rows_table(&trial.rows));
        }
    }
    body.push_str("</section>");
}

/// The publications, read back from the published tables.
pub fn published(body: &mut String, bench: &Workbench) {
    body.push_str("<section id=\"publish\"><h2>6. Publish</h2><p class=\"explain\">A published candidate is drawn again without a seed (its privacy budget is charged once) and becomes a table analysts query by its name, over PostgreSQL and Flight SQL. Nothing else of the source is reachable for them.</p>");
    if bench.published.is_empty() {
        body.push_str(
            "<p>Nothing published from this project yet: use a candidate's Publish button.</p>",
        );
    }
    for publication in &bench.published {
        let _ = write!(
            body,
            "<div class=\"published\" data-release=\"{n}\"><h3>Published: <code>{n}</code></h3><p>Analysts read it with <code>SELECT * FROM {n}</code>.{report} Its first rows:</p>{}",
            rows_table(&publication.rows),
            n = escape(&publication.name),
            report = match &publication.report {
                Some(_) => format!(
                    " <a class=\"published-report\" href=\"/published/{}/report\">Its report</a> (the published draw's).",
                    escape(&publication.name)
                ),
                None => String::new(),
            }
        );
        body.push_str("<table class=\"figures\"><tbody>");
        for (key, meaning) in RISK_FIGURES {
            if let Some(value) = publication.risk.value(key) {
                let _ = write!(
                    body,
                    "<tr><th>{key}</th><td class=\"num\">{}</td><td>{meaning}</td></tr>",
                    number(value)
                );
            }
        }
        body.push_str("</tbody></table></div>");
    }
    body.push_str("</section>");
}

/// A result as a table.
pub fn rows_table(rows: &Rows) -> String {
    let mut out = String::from("<table class=\"rows\"><thead><tr>");
    for c in &rows.columns {
        let _ = write!(out, "<th>{}</th>", escape(c));
    }
    out.push_str("</tr></thead><tbody>");
    for row in &rows.cells {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_bins_records_by_class_size() {
        let sizes = Rows {
            columns: vec!["size".into(), "classes".into(), "records".into()],
            cells: vec![
                vec!["1".into(), "4".into(), "4".into()],
                vec!["3".into(), "2".into(), "6".into()],
                vec!["150".into(), "2".into(), "300".into()],
            ],
        };
        let svg = class_size_chart(&sizes);
        assert!(
            svg.contains(">1.3%<"),
            "4 of 310 records in classes of one: {svg}"
        );
        assert!(svg.contains(">1.9%<") && svg.contains(">96.8%<"));
        assert!(!svg.contains("<script"));
    }

    #[test]
    fn safe_harbor_findings_are_listed_and_escaped() {
        assert!(safe_harbor_cell(&Rows::default()).starts_with("nothing found"));
        let found = Rows {
            columns: vec![
                "column_name".into(),
                "rule".into(),
                "finding".into(),
                "rows".into(),
            ],
            cells: vec![vec![
                "<zip>".into(),
                "(B) geographic units smaller than a state".into(),
                "3 rows show more than three digits".into(),
                "3".into(),
            ]],
        };
        assert_eq!(
            safe_harbor_cell(&found),
            "<strong>1 to mend before a Safe Harbor release</strong><ul><li><code>&lt;zip&gt;</code> (B) geographic units smaller than a state: 3 rows show more than three digits</li></ul>"
        );
    }

    #[test]
    fn results_are_escaped() {
        let rows = Rows {
            columns: vec!["<c>".into()],
            cells: vec![vec!["a&b".into()]],
        };
        assert_eq!(
            rows_table(&rows),
            "<table class=\"rows\"><thead><tr><th>&lt;c&gt;</th></tr></thead><tbody><tr><td>a&amp;b</td></tr></tbody></table>"
        );
    }
}
