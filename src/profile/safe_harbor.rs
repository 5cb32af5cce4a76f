//! `anonymize_safe_harbor(table)`: what in a table (a release the owner is about to
//! publish, or a source) would break HIPAA's Safe Harbor rule (45 CFR 164.514(b)(2)): one
//! row per finding. The checks, per column:
//!
//! - (C) dates: a DATE or TIMESTAMP column, or text values that are dates or date labels
//!   finer than a year (`2019-03-14`, `2019-03`, `2019-Q1`, `2019-W11`);
//! - (C) ages over 89: an age column (a name with the word `age`) releasing an exact age
//!   above 89, or more than one label holding ages above 89 (they must be one category,
//!   "90 or older");
//! - (B) ZIP codes with more than three digits (a ZIP column by name or values; `021**`
//!   passes, `02139` and `0213*` do not);
//! - the identifier kinds and geographic units that [`super::roles::suggest`] finds by name
//!   or values: a direct identifier left in, a city or county.
//!
//! Not checked: whether a three-digit ZIP area has more than 20 000 people (census data),
//! free text, images.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::prelude::SessionContext;

use super::patterns::ValuePattern;
use super::roles::{name_words, suggest, ColumnFacts, Role, SafeHarbor};
use super::{value_counts, ProfileRequest, SAMPLE_VALUES};
use crate::analysis::generalized::{parse_generalized, GeneralizedValue};
use crate::hierarchy::dates::{is_date_type, label_days};

/// The most distinct values of one column read for the checks.
pub const MAX_VALUES_CHECKED: usize = 100_000;

/// The youngest age Safe Harbor requires to be top-coded.
const OLDEST_EXACT_AGE: i64 = 89;

/// One thing that would break Safe Harbor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The column.
    pub column: String,
    /// The Safe Harbor kind broken.
    pub rule: SafeHarbor,
    /// What was found, in a sentence.
    pub finding: String,
    /// Rows with a value that breaks it.
    pub rows: i64,
}

/// A column's distinct values as text with their row counts.
pub struct ColumnValues<'a> {
    /// The column's name.
    pub name: &'a str,
    /// Its type.
    pub data_type: &'a DataType,
    /// (value, rows), NULLs left out.
    pub values: &'a [(String, i64)],
    /// Whether the values were cut at [`MAX_VALUES_CHECKED`].
    pub cut: bool,
}

/// Whether a text value is a date or a date label finer than a year.
fn finer_than_a_year(value: &str) -> bool {
    match label_days(value) {
        // A year spans 364 or 365 days after its first; a quarter at most 91.
        Some((first, last)) => (last - first).num_days() < 300,
        None => ValuePattern::Date.matches(value),
    }
}

/// The digits a ZIP value shows before its mask (`021**` → 3, `02139` → 5).
fn zip_digits(value: &str) -> usize {
    value.trim().bytes().take_while(u8::is_ascii_digit).count()
}

/// The findings of one column.
pub fn check_column(column: &ColumnValues<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let rows_where = |f: &dyn Fn(&str) -> bool| -> i64 {
        column
            .values
            .iter()
            .filter(|(v, _)| f(v))
            .map(|(_, n)| n)
            .sum()
    };
    let present: i64 = column.values.iter().map(|(_, n)| n).sum();
    let cut = if column.cut {
        format!(" (in the {MAX_VALUES_CHECKED} most frequent distinct values read)")
    } else {
        String::new()
    };
    let finding = |rule: SafeHarbor, finding: String, rows: i64| Finding {
        column: column.name.to_string(),
        rule,
        finding,
        rows,
    };
    let words = name_words(column.name);
    // (C) dates.
    if is_date_type(column.data_type) {
        out.push(finding(
            SafeHarbor::Dates,
            format!(
                "a {} column releases days; keep only the year (date_hierarchy with levels => 'year')",
                column.data_type
            ),
            present,
        ));
    } else {
        let rows = rows_where(&|v| finer_than_a_year(v));
        if rows > 0 {
            out.push(finding(
                SafeHarbor::Dates,
                format!("{rows} rows hold a date or a date label finer than a year{cut}; generalize to years"),
                rows,
            ));
        }
    }
    // (C) ages over 89.
    if words.iter().any(|w| w == "age") {
        let ages: Vec<(GeneralizedValue, i64)> = column
            .values
            .iter()
            .filter_map(|(v, n)| parse_generalized(v).ok().map(|g| (g, *n)))
            .collect();
        let exact: i64 = ages
            .iter()
            .filter(|(g, _)| matches!(g, GeneralizedValue::Range { lo, hi } if lo == hi && *lo > OLDEST_EXACT_AGE))
            .map(|(_, n)| n)
            .sum();
        let above = |g: &GeneralizedValue| match *g {
            GeneralizedValue::Range { hi, .. } => hi > OLDEST_EXACT_AGE,
            GeneralizedValue::Below(b) => b > OLDEST_EXACT_AGE + 1,
            GeneralizedValue::AtLeast(_) => true,
            GeneralizedValue::Star => false,
        };
        let old: Vec<&(GeneralizedValue, i64)> = ages.iter().filter(|(g, _)| above(g)).collect();
        if exact > 0 {
            out.push(finding(
                SafeHarbor::Dates,
                format!("{exact} rows release an exact age over {OLDEST_EXACT_AGE}{cut}; top-code ages into one '>=90' category (top_bottom_hierarchy)"),
                exact,
            ));
        } else if old.len() > 1 {
            let rows = old.iter().map(|(_, n)| n).sum();
            out.push(finding(
                SafeHarbor::Dates,
                format!("{} labels tell ages over {OLDEST_EXACT_AGE} apart{cut}; they must be one '90 or older' category", old.len()),
                rows,
            ));
        }
    }
    // (B) ZIP codes.
    let zip_named = words.iter().any(|w| {
        ["zip", "zipcode", "postcode", "postal", "plz", "postalcode"].contains(&w.as_str())
    });
    let sample: Vec<String> = column
        .values
        .iter()
        .take(SAMPLE_VALUES)
        .map(|(v, _)| v.clone())
        .collect();
    let zip_values = ValuePattern::of_values(&sample) == Some(ValuePattern::Zip);
    let zip = zip_named || zip_values;
    if zip {
        let rows = rows_where(&|v| zip_digits(v) > 3);
        if rows > 0 {
            out.push(finding(
                SafeHarbor::Geography,
                format!("{rows} rows show more than three digits of a ZIP code{cut}; mask to three (mask_hierarchy), and to 000 where the three-digit area has 20 000 people or fewer"),
                rows,
            ));
        }
    }
    // Identifiers and small geographic units found by name or values.
    let suggestion = suggest(&ColumnFacts {
        name: column.name,
        data_type: column.data_type,
        present: present.max(0) as u64,
        distinct: column.values.len() as u64,
        sample: &sample,
    });
    match suggestion.safe_harbor {
        Some(kind) if suggestion.role == Role::DirectIdentifier => out.push(finding(
            kind,
            format!(
                "an identifier is left in: {}; drop it (identifiers => '{}')",
                suggestion.reason, column.name
            ),
            present,
        )),
        Some(SafeHarbor::Geography) if !zip => {
            let rows = rows_where(&|v| v.trim() != crate::hierarchy::STAR);
            if rows > 0 {
                out.push(finding(
                    SafeHarbor::Geography,
                    format!("{}: a geographic unit smaller than a state; generalize it to the state or leave it out", suggestion.reason),
                    rows,
                ));
            }
        }
        _ => {}
    }
    out
}

/// Every finding of the request's table, column by column.
pub(crate) async fn findings(
    ctx: &SessionContext,
    request: &ProfileRequest,
) -> Result<Vec<Finding>> {
    let schema = request.source.schema();
    let mut out = Vec::new();
    for field in schema.fields() {
        // Most frequent first (the sample the patterns read), ties by value.
        let values = value_counts(ctx, request, field.name(), MAX_VALUES_CHECKED).await?;
        out.extend(check_column(&ColumnValues {
            name: field.name(),
            data_type: field.data_type(),
            cut: values.len() >= MAX_VALUES_CHECKED,
            values: &values,
        }));
    }
    Ok(out)
}

/// The columns of `anonymize_safe_harbor`.
pub(crate) fn safe_harbor_schema() -> datafusion::arrow::datatypes::SchemaRef {
    use datafusion::arrow::datatypes::{Field, Schema};
    std::sync::Arc::new(Schema::new(vec![
        Field::new("column_name", DataType::Utf8, false),
        Field::new("rule", DataType::Utf8, false),
        Field::new("finding", DataType::Utf8, false),
        Field::new("rows", DataType::Int64, false),
    ]))
}

/// `anonymize_safe_harbor`'s rows: one per finding, in column order.
pub(crate) async fn safe_harbor(
    request: &ProfileRequest,
    state: &datafusion::execution::SessionState,
) -> Result<Vec<datafusion::arrow::array::RecordBatch>> {
    use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let ctx = SessionContext::new_with_state(state.clone());
    let found = findings(&ctx, request).await.map_err(|e| {
        crate::session::reading_error(
            "anonymize_safe_harbor",
            &format!("table '{}'", request.source_name),
            e,
        )
    })?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            found.iter().map(|f| f.column.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(
            found.iter().map(|f| f.rule.describe()),
        )),
        Arc::new(StringArray::from_iter_values(
            found.iter().map(|f| f.finding.as_str()),
        )),
        Arc::new(Int64Array::from_iter_values(found.iter().map(|f| f.rows))),
    ];
    Ok(vec![RecordBatch::try_new(safe_harbor_schema(), columns)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, data_type: DataType, values: &[(&str, i64)]) -> Vec<(SafeHarbor, i64)> {
        let values: Vec<(String, i64)> = values.iter().map(|(v, n)| (v.to_string(), *n)).collect();
        check_column(&ColumnValues {
            name,
            data_type: &data_type,
            values: &values,
            cut: false,
        })
        .into_iter()
        .map(|f| (f.rule, f.rows))
        .collect()
    }

    /// Each rule fires on what breaks it, and not on its Safe Harbor form.
    #[test]
    fn each_rule_fires_on_what_breaks_it_only() {
        use SafeHarbor::*;
        // (C) dates: a DATE column, days and months as text; years and spans pass.
        assert_eq!(
            check("seen", DataType::Date32, &[("2019-03-14", 4)]),
            [(Dates, 4)]
        );
        assert_eq!(
            check(
                "admitted",
                DataType::Utf8,
                &[
                    ("2019-03", 5),
                    ("2019-Q2", 2),
                    ("2019", 9),
                    ("14/03/2019", 1)
                ]
            ),
            [(Dates, 8)]
        );
        assert_eq!(
            check(
                "admitted",
                DataType::Utf8,
                &[("2019", 9), ("2015-2019", 3), ("*", 1)]
            ),
            []
        );
        // (C) ages over 89: exact, or told apart; one top code passes.
        assert_eq!(
            check("age", DataType::Int64, &[("45", 10), ("92", 2), ("95", 1)]),
            [(Dates, 3)]
        );
        assert_eq!(
            check(
                "age",
                DataType::Utf8,
                &[("[80-90)", 5), ("[90-100)", 2), ("[100-110)", 1)]
            ),
            [(Dates, 3)]
        );
        assert_eq!(
            check("age", DataType::Utf8, &[("[80-90)", 5), (">=90", 3)]),
            []
        );
        assert_eq!(
            check("age", DataType::Utf8, &[("[60-100]", 5), ("[20-60)", 3)]),
            []
        );
        // (B) ZIP codes: five or four digits shown break it, three pass.
        assert_eq!(
            check(
                "zip",
                DataType::Utf8,
                &[("02139", 3), ("0213*", 1), ("021**", 7)]
            ),
            [(Geography, 4)]
        );
        assert_eq!(
            check(
                "area",
                DataType::Utf8,
                &[("02139", 3), ("10001", 2), ("94105", 1)]
            ),
            [(Geography, 6)]
        );
        assert_eq!(check("zip", DataType::Utf8, &[("021**", 7), ("*", 2)]), []);
        // Identifiers left in, by name or values; a city.
        assert_eq!(
            check(
                "patient_name",
                DataType::Utf8,
                &[("Ann Lee", 1), ("Bo Kim", 1)]
            ),
            [(Names, 2)]
        );
        assert_eq!(
            check(
                "contact",
                DataType::Utf8,
                &[("a@b.org", 1), ("c@d.org", 1), ("e@f.org", 1)]
            ),
            [(Email, 3)]
        );
        assert_eq!(
            check("ssn", DataType::Utf8, &[("123-45-6789", 1)]),
            [(Ssn, 1)]
        );
        assert_eq!(
            check("city", DataType::Utf8, &[("Bern", 4), ("*", 2)]),
            [(Geography, 4)]
        );
        // Nothing to say about a sex or a diagnosis.
        assert_eq!(check("sex", DataType::Utf8, &[("F", 4), ("M", 5)]), []);
        assert_eq!(check("diagnosis", DataType::Utf8, &[("I63", 4)]), []);
    }
}
