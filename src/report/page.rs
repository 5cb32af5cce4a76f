//! The report's HTML: one page, its style inline, its charts inline SVG, no script and
//! nothing fetched from elsewhere. Every figure's cell carries its exact value in a
//! `data-value` attribute and names it in `data-figure` (`before:<key>`, `after:<key>`,
//! `…:<key>:<sensitive column>`, `information_loss:<column>`, `k_marginal_score`), so a
//! program can read the page as well as a person.

use std::fmt::Write;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::Result;

use super::charts;
use super::error_bars::error_bars;
use super::gather::Figures;
use super::html::{escape, figure_cell, section, shown};
use super::node::{chosen_node, chosen_value, search};
use super::{ReportOptions, Subject};
use crate::assess::Entry;
use crate::metric::information_loss::information_loss_batch;

/// The sections of every report, in order.
pub const SECTIONS: [&str; 7] = [
    "Summary",
    "Re-identification risk",
    "Attribute disclosure",
    "Attacks",
    "Utility",
    "Search",
    "Warnings",
];

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:60rem;padding:1.5rem;color:#1a1a1a;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{border-bottom:2px solid #0072B2;padding-bottom:.2rem;margin-top:2.2rem}
h3{margin-top:1.4rem}table{border-collapse:collapse;margin:.6rem 0;font-size:.92rem}
th,td{border:1px solid #ccc;padding:.25rem .55rem;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}th{background:#f1f5f9}
.owner{background:#fff4e5;border-left:5px solid #D55E00;padding:.6rem .9rem}
.headline{font-size:1.15rem;font-weight:600}
.public{background:#eaf6ee;border-left:5px solid #009E73;padding:.6rem .9rem}
.explain{color:#333;font-size:.95rem}.default{color:#777;font-size:.85rem}
blockquote{margin:.6rem 0;padding:.5rem .9rem;background:#f6f6f6;border-left:4px solid #0072B2}
.score{font-size:2rem;font-weight:700;color:#0072B2}nav a{margin-right:.8rem}
figure{margin:1rem 0}svg{max-width:100%;height:auto}
@media print{body{max-width:none;padding:0}nav{display:none}h2{break-before:auto}figure,table{break-inside:avoid}}";

/// What each risk figure means, for the table's last column.
fn meaning(key: &str) -> &'static str {
    match key {
        "rows" => "records in the table",
        "suppressed" => "records whose every quasi-identifier is * (left out of the classes)",
        "classes" => "equivalence classes: groups of records with the same quasi-identifier values",
        "min_class_size" => "the smallest class; k-anonymity holds for k up to this",
        "avg_class_size" => "records per class on average",
        "sample_uniques" => "records alone in their class",
        "prosecutor_risk_max" => {
            "highest chance of re-identifying a record whose presence is known: 1 / its class size"
        }
        "prosecutor_risk_avg" => "that chance averaged over the records",
        "records_at_risk" => "share of records whose prosecutor risk exceeds the risk threshold",
        "marketer_risk" => {
            "expected share of records re-identified when every record is linked: classes / records"
        }
        "journalist_risk_max" => "highest chance of re-identification against the population",
        "risk_threshold" => "the prosecutor risk above which a record counts as at risk",
        _ => "",
    }
}

fn entry_value(entries: &[Entry], key: &str, sensitive: Option<&str>) -> Option<Option<f64>> {
    entries
        .iter()
        .find(|e| e.0 == key && e.1.as_deref() == sensitive)
        .map(|e| e.2)
}

/// Renders the page; returns it and its section titles.
pub fn render(
    subject: &Subject<'_>,
    options: &ReportOptions,
    figures: &Figures,
) -> Result<(String, Vec<&'static str>)> {
    let request = subject.request;
    let method = request.method.name();
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Release report: {} ({method})</title><style>{STYLE}</style></head><body>",
        escape(&request.source_name)
    );
    let _ = write!(
        out,
        "<header><h1>Release report: {} </h1><p>Method <b>{method}</b> on source <b>{}</b>, quasi-identifiers {}.</p>",
        escape(&request.source_name),
        escape(&request.source_name),
        escape(
            &request
                .qi
                .iter()
                .map(|q| q.column.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    );
    // The guarantee card's one sentence opens the page; the full text follows in Summary.
    let _ = write!(
        out,
        "<p class=\"headline\">{}</p>",
        escape(&crate::releases::card::headline(
            request,
            &subject.output.metadata
        ))
    );
    out.push_str("<p class=\"owner\"><b>Owner-only.</b> This report carries exact figures of the source data. Never publish it: publish only the release and its public metadata (see <a href=\"#summary\">Summary</a>).</p><nav>");
    for title in SECTIONS {
        let _ = write!(out, "<a href=\"#{}\">{title}</a>", anchor(title));
    }
    out.push_str("</nav></header>");
    summary(&mut out, subject);
    risk(&mut out, subject, options, figures)?;
    attribute_disclosure(&mut out, subject, figures);
    attacks(&mut out, options, figures);
    utility(&mut out, subject, figures)?;
    search(&mut out, subject)?;
    warnings(&mut out, subject);
    out.push_str("</body></html>\n");
    Ok((out, SECTIONS.to_vec()))
}

fn anchor(title: &str) -> String {
    title.to_lowercase().replace(' ', "-")
}

fn summary(out: &mut String, subject: &Subject<'_>) {
    let request = subject.request;
    section(
        out,
        "summary",
        "Summary",
        "What was released, with which arguments (defaults in grey), what it promises, what it cost, and what may be published.",
    );
    out.push_str("<h3>Arguments</h3><table><tr><th>argument</th><th>value</th></tr>");
    for p in &subject.parameters {
        let value = if p.default {
            format!(
                "<span class=\"default\">default: {}</span>",
                escape(&p.value)
            )
        } else {
            escape(&p.value)
        };
        let _ = write!(out, "<tr><td>{}</td><td>{value}</td></tr>", escape(&p.name));
    }
    out.push_str("</table>");
    let metadata = &subject.output.metadata;
    let get = |key: &str| {
        metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if let Some(levels) = get("levels").or(get("node")) {
        let _ = write!(
            out,
            "<p>Chosen generalization levels: <b>{}</b>.</p>",
            escape(levels)
        );
    }
    if let Some(guarantee) = get("guarantee") {
        let _ = write!(
            out,
            "<h3>Guarantee</h3><blockquote>{}</blockquote>",
            escape(guarantee)
        );
    }
    let (account, limits) = subject.budget;
    let _ = write!(
        out,
        "<h3>Privacy budget of '{}'</h3><p class=\"explain\">Every release of this source charged so far, in its privacy unit ({}). A seeded release charges nothing.</p><table><tr><th></th><th>spent</th><th>budget</th><th>left</th></tr>",
        escape(&request.source_name),
        escape(&request
            .unit
            .describe(crate::method::is_differentially_private(request.method.as_ref())))
    );
    for (name, spent, limit) in [
        ("ε", account.epsilon_spent, limits.epsilon),
        ("δ", account.delta_spent, limits.delta),
    ] {
        let left = if limit.is_infinite() {
            f64::INFINITY
        } else {
            (limit - spent).max(0.0)
        };
        let _ = write!(
            out,
            "<tr><th>{name}</th><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            shown(spent),
            shown(limit),
            shown(left)
        );
    }
    let _ = write!(
        out,
        "</table><p>Releases charged: {}.</p>",
        account.releases
    );
    out.push_str("<h3>What may be published</h3><div class=\"public\"><p>The released rows (<code>anonymize(...)</code> with these arguments) and their public metadata (<code>anonymize_metadata</code>, below)");
    if request.method.publishes_catalog() {
        out.push_str(", and the catalog of counterfeit rows (<code>anonymize_catalog</code>)");
    }
    if request.method.publishes_interval_means() {
        out.push_str(", and the interval means (<code>anonymize_interval_means</code>)");
    }
    out.push_str(".</p></div><p class=\"owner\">Everything else in this report is owner-only: it is computed from the exact source.</p><h3>Public metadata</h3><table><tr><th>key</th><th>value</th></tr>");
    for (k, v) in metadata {
        let v = if k == "guarantee" { "(above)" } else { v };
        let _ = write!(out, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(v));
    }
    out.push_str("</table></section>");
}

fn risk(
    out: &mut String,
    subject: &Subject<'_>,
    options: &ReportOptions,
    figures: &Figures,
) -> Result<()> {
    section(
        out,
        "re-identification-risk",
        "Re-identification risk",
        "How easily a record could be singled out by its quasi-identifiers, in the source (input) and in the release, counted per record as anonymize_assess counts them. Records alone in their class, or in small ones, are the ones at risk.",
    );
    let dp = crate::method::is_differentially_private(subject.request.method.as_ref());
    if dp {
        out.push_str("<p class=\"explain\">This method's protection is differential privacy (the guarantee above): it limits what any record can change in the release, whatever the class sizes. The syntactic figures below describe the released table as data; they are not the guarantee.</p>");
    }
    let _ = write!(
        out,
        "<table><tr><th>figure</th><th>input</th><th>release</th><th>what it means</th></tr>"
    );
    for (key, _, _, _) in figures.before.iter().filter(|e| e.1.is_none()) {
        let before = entry_value(&figures.before, key, None).flatten();
        let after = entry_value(&figures.after, key, None).flatten();
        let mut meaning = meaning(key).to_string();
        if key == "records_at_risk" {
            meaning = format!("{meaning} ({})", options.risk_threshold);
        }
        let _ = write!(
            out,
            "<tr><td>{}</td>{}{}<td class=\"explain\">{}</td></tr>",
            escape(key),
            figure_cell(&format!("before:{key}"), before),
            figure_cell(&format!("after:{key}"), after),
            escape(&meaning)
        );
    }
    out.push_str("</table>");
    let count = |entries: &[Entry], key: &str| {
        entry_value(entries, key, None)
            .flatten()
            .unwrap_or(0.0)
            .max(0.0) as u64
    };
    let svg = charts::class_sizes(
        &figures.sizes_before,
        &figures.sizes_after,
        (
            count(&figures.before, "rows"),
            count(&figures.after, "rows"),
            count(&figures.after, "suppressed"),
        ),
    )?;
    let _ = write!(
        out,
        "<figure>{svg}<figcaption class=\"explain\">Share of each table's records by the size of their equivalence class. Bars at 1 and 2 are records alone or nearly alone; a release meeting k-anonymity has none below k.</figcaption></figure></section>"
    );
    Ok(())
}

fn attribute_disclosure(out: &mut String, subject: &Subject<'_>, figures: &Figures) {
    section(
        out,
        "attribute-disclosure",
        "Attribute disclosure",
        "Whether knowing a person's class reveals their sensitive value: ℓ counts the distinct (or entropy-effective) sensitive values of the least diverse class; t is the largest distance between a class's distribution of values and the whole table's (equal distance for any values, ordered distance for numbers and dates). Higher ℓ and lower t are safer.",
    );
    let sensitive = subject.request.released_values();
    if sensitive.is_empty() {
        out.push_str("<p>The release has no sensitive column: there is no attribute to disclose.</p></section>");
        return;
    }
    out.push_str(
        "<table><tr><th>sensitive column</th><th>figure</th><th>input</th><th>release</th></tr>",
    );
    for (column, _) in &sensitive {
        for (key, s, _, _) in figures
            .before
            .iter()
            .filter(|e| e.1.as_deref() == Some(column.as_str()))
        {
            let s = s.as_deref();
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td>{}{}</tr>",
                escape(column),
                escape(key),
                figure_cell(
                    &format!("before:{key}:{column}"),
                    entry_value(&figures.before, key, s).flatten()
                ),
                figure_cell(
                    &format!("after:{key}:{column}"),
                    entry_value(&figures.after, key, s).flatten()
                ),
            );
        }
    }
    out.push_str("</table></section>");
}

fn attacks(out: &mut String, options: &ReportOptions, figures: &Figures) {
    section(
        out,
        "attacks",
        "Attacks",
        "anonymeter's three attacks (the risks the EU's Article 29 Working Party names), run on the source as if it were released (input) and on the release, against the source: singling out (queries that match one released row, asked of the source), linkability (two tables of an attacker linked through the nearest released rows) and inference (a secret column guessed from the nearest released row); and, for the methods that release each record once (kanon, microaggregation), record linkage (each source record linked to its nearest released row: the chance that the link is its own row, and the share of records linked exactly). The risk is what the attack achieves beyond a naive attacker who ignores the rows (the baseline), with its 95 % interval. A low risk says these attacks failed, not that every attack will: the guarantee above is the one that holds whatever an attacker does.",
    );
    if figures.attacks.is_empty() {
        out.push_str("<p>Not run (attacks => 0).</p></section>");
        return;
    }
    out.push_str("<table><tr><th>attack</th><th>what the attacker used</th><th>input risk</th><th>release risk</th><th>release 95 % interval</th><th>baseline</th><th>attacks run (input, release)</th></tr>");
    for (before, after) in &figures.attacks {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>{}{}<td class=\"num\">{} – {}</td>{}<td class=\"num\">{}, {}</td></tr>",
            escape(after.attack),
            escape(&after.columns),
            figure_cell(&format!("before:attack:{}", before.attack), Some(before.risk.0)),
            figure_cell(&format!("after:attack:{}", after.attack), Some(after.risk.0)),
            shown(after.risk.1),
            shown(after.risk.2),
            figure_cell(&format!("after:attack_baseline:{}", after.attack), Some(after.baseline.value)),
            before.counts.attacks_run,
            after.counts.attacks_run,
        );
    }
    let _ = write!(out, "</table><p class=\"explain\">Each attack ran {} times (attack_seed 0; anonymize_attack with the release's arguments gives the same figures, and takes a control table of held-out records, which turns the risk into what the attack achieves beyond records the release never saw). A singling-out attacker who found fewer queries than that (at most 200 tries per query) scores lower: its rate counts every query asked for, as anonymeter's does. Record linkage links every record when that is at most 50 million distances, else as many records drawn at random.</p></section>", options.attacks);
}

fn utility(out: &mut String, subject: &Subject<'_>, figures: &Figures) -> Result<()> {
    section(
        out,
        "utility",
        "Utility",
        "How much of the data's information the release keeps: information loss (0 = none), the records and cells given up, and how closely each column's distribution, and each pair of columns' joint distribution, follow the source.",
    );
    let il = information_loss_batch(
        subject.request.method.name(),
        &subject.output.information_loss,
    )?;
    out.push_str("<h3>Information loss</h3><p class=\"explain\">As anonymize_information_loss gives it: NCP (generalization), EMD (distance of the sensitive distribution), Rate (records suppressed or added), their sum and mean, LM and RCE.</p><table><tr>");
    let schema = il.schema();
    for field in schema.fields().iter().skip(1) {
        let _ = write!(out, "<th>{}</th>", escape(field.name()));
    }
    out.push_str("</tr><tr>");
    for (i, field) in schema.fields().iter().enumerate().skip(1) {
        let column = cast(il.column(i), &DataType::Float64)?;
        let column = column.as_primitive::<Float64Type>();
        let value = (!column.is_null(0)).then(|| column.value(0));
        out.push_str(&figure_cell(
            &format!("information_loss:{}", field.name()),
            value,
        ));
    }
    out.push_str("</tr></table>");
    given_up(out, subject, figures)?;
    chosen_node(out, subject)?;
    out.push_str("<h3>2-way k-marginal score</h3>");
    match &figures.score {
        Some((score, pairs)) => {
            let _ = write!(
                out,
                "<p><span class=\"score\" data-figure=\"k_marginal_score\" data-value=\"{score}\">{}</span> / 1000</p><p class=\"explain\">For every pair of released columns, 1000 × (1 − the total variation distance between the source's and the release's joint distributions over the pair's bins), averaged over the pairs (NIST CRC's k-marginal score with k = 2): 1000 is a release with the source's exact distributions. How each column was read: ",
                shown(*score)
            );
            let readings: Vec<String> = figures
                .binners
                .iter()
                .map(|b| format!("{} by {}", b.column, b.reading))
                .collect();
            let _ = write!(
                out,
                "{}. A * (suppressed) value is spread over every bin.</p><table><tr><th>pair</th><th>score</th></tr>",
                escape(&readings.join("; "))
            );
            let mut pair = 0;
            for a in 0..figures.binners.len() {
                for b in a + 1..figures.binners.len() {
                    let name = format!(
                        "{} × {}",
                        figures.binners[a].column, figures.binners[b].column
                    );
                    let _ = write!(
                        out,
                        "<tr><td>{}</td>{}</tr>",
                        escape(&name),
                        figure_cell(&format!("k_marginal:{name}"), pairs.get(pair).copied())
                    );
                    pair += 1;
                }
            }
            out.push_str("</table>");
        }
        None => out.push_str("<p>The release has one column: no pair to score.</p>"),
    }
    out.push_str("<h3>NIST CRC measures</h3><p class=\"explain\">As <code>anonymize_utility</code> gives them with its defaults (SDNist's k-marginal with its sampling baseline, the propensity mean squared error and the unique exact matches).</p><table><tr><th>measure</th><th>value</th><th>what it means</th></tr>");
    for figure in &figures.utility {
        let _ = write!(
            out,
            "<tr><td>{}</td>{}<td class=\"explain\">{}</td></tr>",
            figure.metric,
            figure_cell(&format!("utility:{}", figure.metric), figure.value),
            escape(&figure.explain)
        );
    }
    out.push_str("</table>");
    error_bars(out, subject);
    out.push_str("<h3>Distributions, input and release</h3><p class=\"explain\">Each released column's share of records per value. A generalized value of the release is spread evenly over the values its hierarchy puts under it; suppressed values (*) have their own bar.</p>");
    for (c, binner) in figures.binners.iter().enumerate() {
        let svg = charts::distribution(binner, c, &figures.input, &figures.release)?;
        let _ = write!(out, "<figure>{svg}</figure>");
    }
    out.push_str("</section>");
    Ok(())
}

/// The shares of records and cells the release gave up, and of counterfeit rows.
fn given_up(out: &mut String, subject: &Subject<'_>, figures: &Figures) -> Result<()> {
    let value = |entries: &[Entry], key: &str| entry_value(entries, key, None).flatten();
    let (Some(input_rows), Some(released_rows)) = (
        value(&figures.before, "rows"),
        value(&figures.after, "rows"),
    ) else {
        return Ok(());
    };
    let qi = subject.request.qi.len();
    let starred: f64 = figures.release.suppressed.iter().take(qi).sum();
    let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
    let mut rows = vec![
        (
            "records_suppressed",
            "released rows whose every quasi-identifier is *, per input record",
            value(&figures.after, "suppressed").map(|s| share(s, input_rows)),
        ),
        (
            "cells_suppressed",
            "quasi-identifier cells of the release that are *, per released cell",
            Some(share(starred, released_rows * qi as f64)),
        ),
    ];
    if let Some(counterfeits) = chosen_value(subject, "counterfeits")? {
        rows.push((
            "counterfeits",
            "counterfeit rows the method added, per released row",
            Some(share(counterfeits, released_rows)),
        ));
    }
    out.push_str("<h3>Records and cells given up</h3><table><tr><th>share</th><th>value</th><th>of what</th></tr>");
    for (key, what, v) in rows {
        let _ = write!(
            out,
            "<tr><td>{key}</td>{}<td class=\"explain\">{}</td></tr>",
            figure_cell(&format!("share:{key}"), v),
            escape(what)
        );
    }
    out.push_str("</table>");
    Ok(())
}

fn warnings(out: &mut String, subject: &Subject<'_>) {
    section(
        out,
        "warnings",
        "Warnings",
        "What anonymize_warnings says about this release (owner-only: a warning may name exact counts).",
    );
    if subject.output.warnings.is_empty() {
        out.push_str("<p>None.</p>");
    } else {
        out.push_str("<ul>");
        for (topic, message) in &subject.output.warnings {
            let _ = write!(
                out,
                "<li><b>{}</b>: {}</li>",
                escape(topic),
                escape(message)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well_and_text_is_escaped() {
        assert_eq!(shown(3.0), "3");
        assert_eq!(shown(0.333333), "0.3333");
        assert_eq!(shown(123.456), "123.5");
        assert_eq!(shown(f64::INFINITY), "∞");
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
