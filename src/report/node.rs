//! The report's sections on the method's choice: the chosen node's row of the diagnostics
//! and the chart of the lattice search.

use std::fmt::Write;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::Result;

use super::charts;
use super::html::{escape, section, shown};
use super::Subject;

/// A numeric column of the chosen node's row of the diagnostics.
pub(super) fn chosen_value(subject: &Subject<'_>, column: &str) -> Result<Option<f64>> {
    for batch in subject.output.diagnostics.iter() {
        let schema = batch.schema();
        let (Ok(chosen), Ok(c)) = (schema.index_of("chosen"), schema.index_of(column)) else {
            return Ok(None);
        };
        let values = cast(batch.column(c), &DataType::Float64)?;
        let values = values.as_primitive::<Float64Type>();
        let chosen = batch.column(chosen).as_boolean();
        for row in 0..batch.num_rows() {
            if chosen.value(row) && !values.is_null(row) {
                return Ok(Some(values.value(row)));
            }
        }
    }
    Ok(None)
}

/// The chosen node's row of the diagnostics (or the whole table when it has a few rows
/// and no chosen node): suppressed records and cells, counterfeits.
pub(super) fn chosen_node(out: &mut String, subject: &Subject<'_>) -> Result<()> {
    let batches = subject.output.diagnostics.as_slice();
    let Some(first) = batches.first() else {
        return Ok(());
    };
    let schema = first.schema();
    let chosen = schema.index_of("chosen").ok();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if chosen.is_none() && rows > 5 {
        return Ok(());
    }
    out.push_str("<h3>The chosen node</h3><p class=\"explain\">The release's own counts (anonymize_diagnostics, ");
    out.push_str(if chosen.is_some() {
        "the chosen node's row"
    } else {
        "every row"
    });
    out.push_str("): suppressed records and cells, counterfeit records added.</p><table>");
    // One column per row shown, one line per diagnostics column.
    let mut shown_rows: Vec<Vec<String>> = Vec::new();
    for batch in batches {
        let text: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| cast(c, &DataType::Utf8))
            .collect::<std::result::Result<_, _>>()?;
        for row in 0..batch.num_rows() {
            if let Some(c) = chosen {
                if !batch.column(c).as_boolean().value(row) {
                    continue;
                }
            }
            shown_rows.push(
                text.iter()
                    .map(|column| {
                        let column = column.as_string::<i32>();
                        if column.is_null(row) {
                            "—".to_string()
                        } else {
                            let value = column.value(row);
                            match value.parse::<f64>() {
                                Ok(x) => shown(x),
                                Err(_) => value.to_string(),
                            }
                        }
                    })
                    .collect(),
            );
        }
    }
    for (i, field) in schema.fields().iter().enumerate() {
        let _ = write!(out, "<tr><th>{}</th>", escape(field.name()));
        for row in &shown_rows {
            let _ = write!(out, "<td class=\"num\">{}</td>", escape(&row[i]));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    Ok(())
}

pub(super) fn search(out: &mut String, subject: &Subject<'_>) -> Result<()> {
    section(
        out,
        "search",
        "Search",
        "How the method chose its generalization: every lattice node it evaluated (one level per quasi-identifier), its score against how far it generalizes, the chosen node marked.",
    );
    let method = subject.request.method.name();
    match charts::search(method, &subject.output.diagnostics)? {
        Some((score, svg)) => {
            let _ = write!(
                out,
                "<figure>{svg}<figcaption class=\"explain\">The y axis is the diagnostics' '{}' column: {}.</figcaption></figure>",
                escape(&score),
                escape(
                    subject
                        .request
                        .method
                        .spec()
                        .diagnostics_score
                        .unwrap_or("the method's score")
                )
            );
        }
        None => {
            let _ = write!(
                out,
                "<p>Method {method} does not search a generalization lattice: there is nothing to show.</p>"
            );
        }
    }
    out.push_str("</section>");
    Ok(())
}
