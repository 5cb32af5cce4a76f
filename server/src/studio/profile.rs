//! The profile of a source: per column its type, distinct values, NULL share and most
//! frequent values, and a suggested role with the reason for it.

use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::SessionContext;

use super::project::{ident, ColumnRole};
use super::results::{run, Rows};

/// The most frequent values shown per column.
const TOP_VALUES: usize = 5;

/// One column's profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnProfile {
    pub name: String,
    pub data_type: String,
    pub rows: u64,
    pub distinct: u64,
    pub nulls: u64,
    /// The most frequent values with their counts.
    pub top: Vec<(String, u64)>,
    pub suggestion: ColumnRole,
    pub reason: String,
}

/// The statements a profile runs: one scan for the counts, one per column for its most
/// frequent values.
pub fn statements(table: &str, columns: &[String]) -> Vec<String> {
    let counts: Vec<String> = columns
        .iter()
        .map(|c| format!("COUNT(DISTINCT {0}), COUNT({0})", ident(c)))
        .collect();
    let mut out = vec![format!(
        "SELECT COUNT(*), {} FROM {}",
        counts.join(", "),
        ident(table)
    )];
    for column in columns {
        out.push(format!(
            "SELECT CAST({c} AS VARCHAR) AS value, COUNT(*) AS n FROM {t} WHERE {c} IS NOT NULL \
             GROUP BY 1 ORDER BY n DESC, value LIMIT {TOP_VALUES}",
            c = ident(column),
            t = ident(table)
        ));
    }
    out
}

/// Profiles `table` in `ctx`.
pub async fn profile(ctx: &SessionContext, table: &str) -> Result<Vec<ColumnProfile>, String> {
    let schema = ctx
        .table(table)
        .await
        .map_err(|e| e.to_string())?
        .schema()
        .as_arrow()
        .clone();
    let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let sql = statements(table, &columns);
    let counts = run(ctx, &sql[0]).await?;
    let number = |i: usize| counts.cell(0, i).parse::<u64>().unwrap_or(0);
    let rows = number(0);
    let mut out = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let top: Rows = run(ctx, &sql[i + 1]).await?;
        let top: Vec<(String, u64)> = (0..top.len())
            .map(|r| (top.cell(r, 0), top.cell(r, 1).parse().unwrap_or(0)))
            .collect();
        let distinct = number(1 + 2 * i);
        let nulls = rows.saturating_sub(number(2 + 2 * i));
        let (suggestion, reason) = suggest(field.name(), field.data_type(), rows, distinct, &top);
        out.push(ColumnProfile {
            name: field.name().clone(),
            data_type: field.data_type().to_string(),
            rows,
            distinct,
            nulls,
            top,
            suggestion,
            reason,
        });
    }
    Ok(out)
}

/// Words of column names that name a person by themselves.
const IDENTIFIER_WORDS: &[&str] = &[
    "id",
    "ssn",
    "mrn",
    "name",
    "firstname",
    "lastname",
    "surname",
    "forename",
    "email",
    "mail",
    "phone",
    "telephone",
    "mobile",
    "fax",
    "address",
    "street",
    "patient",
    "record",
    "passport",
    "iban",
    "account",
    "license",
    "licence",
    "insurance",
    "nhs",
    "ip",
    "url",
];

/// Words of column names that identify in combination.
const QUASI_WORDS: &[&str] = &[
    "age",
    "sex",
    "gender",
    "zip",
    "zipcode",
    "postcode",
    "postal",
    "plz",
    "birth",
    "dob",
    "born",
    "race",
    "ethnicity",
    "ethnic",
    "marital",
    "education",
    "country",
    "nationality",
    "location",
    "region",
    "city",
    "county",
    "district",
    "municipality",
    "workclass",
    "occupation",
    "job",
    "profession",
    "date",
    "admission",
    "discharge",
    "year",
];

/// Words of column names that are what an analysis is about.
const SENSITIVE_WORDS: &[&str] = &[
    "diagnosis",
    "disease",
    "icd",
    "salary",
    "income",
    "condition",
    "treatment",
    "drug",
    "medication",
    "procedure",
    "outcome",
    "result",
    "los",
    "stay",
    "hiv",
    "cancer",
    "death",
];

/// The suggested role of a column and the reason, from its name, type, uniqueness and
/// values.
pub fn suggest(
    name: &str,
    data_type: &DataType,
    rows: u64,
    distinct: u64,
    top: &[(String, u64)],
) -> (ColumnRole, String) {
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| words.iter().find(|w| list.contains(w)).copied();
    if let Some(word) = has(IDENTIFIER_WORDS) {
        return (
            ColumnRole::Identifier,
            format!("its name says '{word}': it names a person by itself"),
        );
    }
    let values: Vec<&str> = top.iter().map(|(v, _)| v.as_str()).collect();
    if !values.is_empty() && values.iter().all(|v| looks_like_email(v)) {
        return (
            ColumnRole::Identifier,
            "its values are e-mail addresses".into(),
        );
    }
    if !values.is_empty() && values.iter().all(|v| looks_like_phone(v)) {
        return (
            ColumnRole::Identifier,
            "its values are phone numbers".into(),
        );
    }
    let float = matches!(
        data_type,
        DataType::Float16 | DataType::Float32 | DataType::Float64 | DataType::Decimal128(..)
    );
    if rows >= 20 && !float && distinct as f64 >= 0.9 * rows as f64 {
        return (
            ColumnRole::Identifier,
            format!(
                "{:.0}% of its values are distinct: it singles out rows like a record number",
                100.0 * distinct as f64 / rows as f64
            ),
        );
    }
    if matches!(
        data_type,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(..)
    ) {
        return (
            ColumnRole::Quasi,
            "it holds dates, which identify in combination".into(),
        );
    }
    if !values.is_empty()
        && values.iter().all(|v| looks_like_zip(v))
        && has(SENSITIVE_WORDS).is_none()
    {
        return (
            ColumnRole::Quasi,
            "its values look like postal codes".into(),
        );
    }
    if let Some(word) = has(QUASI_WORDS) {
        return (
            ColumnRole::Quasi,
            format!(
                "its name says '{word}': known from other sources, it identifies in combination"
            ),
        );
    }
    if let Some(word) = has(SENSITIVE_WORDS) {
        return (
            ColumnRole::Sensitive,
            format!("its name says '{word}': what analyses are about"),
        );
    }
    (
        ColumnRole::Other,
        "nothing in its name or values suggests a role: decide".into(),
    )
}

fn looks_like_email(v: &str) -> bool {
    let Some((user, domain)) = v.split_once('@') else {
        return false;
    };
    !user.is_empty() && domain.contains('.') && !v.contains(' ')
}

fn looks_like_phone(v: &str) -> bool {
    let digits = v.chars().filter(char::is_ascii_digit).count();
    (7..=15).contains(&digits)
        && v.chars()
            .all(|c| c.is_ascii_digit() || " +-()./".contains(c))
        && v.chars().any(|c| " +-()/".contains(c))
}

fn looks_like_zip(v: &str) -> bool {
    let (main, plus4) = v.split_once('-').unwrap_or((v, ""));
    main.len() == 5
        && main.chars().all(|c| c.is_ascii_digit())
        && (plus4.is_empty() || (plus4.len() == 4 && plus4.chars().all(|c| c.is_ascii_digit())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, data_type: DataType, distinct: u64, top: &[&str]) -> ColumnRole {
        let top: Vec<(String, u64)> = top.iter().map(|v| (v.to_string(), 1)).collect();
        suggest(name, &data_type, 1000, distinct, &top).0
    }

    #[test]
    fn roles_follow_names_values_and_uniqueness() {
        use ColumnRole::*;
        assert_eq!(role("patient_id", DataType::Int64, 10, &[]), Identifier);
        assert_eq!(role("Last Name", DataType::Utf8, 10, &[]), Identifier);
        assert_eq!(
            role("contact", DataType::Utf8, 10, &["a@b.org"]),
            Identifier
        );
        assert_eq!(
            role("contact", DataType::Utf8, 10, &["+41 44 123 45 67"]),
            Identifier
        );
        assert_eq!(role("code", DataType::Int64, 995, &["1"]), Identifier);
        assert_eq!(
            role("weight", DataType::Float64, 995, &["1.5"]),
            Other,
            "measurements repeat rarely"
        );
        assert_eq!(role("seen", DataType::Date32, 50, &[]), Quasi);
        assert_eq!(
            role("area", DataType::Utf8, 50, &["02139", "10001-1234"]),
            Quasi
        );
        for name in [
            "age",
            "sex",
            "marital-status",
            "native-country",
            "workclass",
        ] {
            assert_eq!(role(name, DataType::Utf8, 20, &["x"]), Quasi, "{name}");
        }
        assert_eq!(
            role("salary-class", DataType::Utf8, 2, &["<=50K"]),
            Sensitive
        );
        assert_eq!(role("disease", DataType::Utf8, 40, &["I63"]), Sensitive);
        assert_eq!(role("colour", DataType::Utf8, 4, &["red"]), Other);
    }

    #[test]
    fn the_profile_is_one_scan_and_one_query_per_column() {
        let sql = statements("a\"b", &["x".into(), "y y".into()]);
        assert_eq!(
            sql[0],
            "SELECT COUNT(*), COUNT(DISTINCT \"x\"), COUNT(\"x\"), COUNT(DISTINCT \"y y\"), COUNT(\"y y\") FROM \"a\"\"b\""
        );
        assert_eq!(sql.len(), 3);
    }
}
