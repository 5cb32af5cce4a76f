//! Finding a column a user named in a list argument (`qi => 'age, sex'`): the quoting
//! rules every function that takes column names follows.

use datafusion::arrow::datatypes::Schema;
use datafusion::common::{plan_err, Result};

use crate::names::{written_name, ListName};

/// Finds a column: a quoted name by its exact spelling; a plain name by its exact spelling,
/// else by a unique case-insensitive match.
/// `list` is the argument holding the name (its name and text), for a quoting hint.
pub(crate) fn resolve_column(
    function: &str,
    schema: &Schema,
    table: &str,
    wanted: &ListName,
    list: (&str, &str),
) -> Result<String> {
    let name = wanted.text.as_str();
    if schema.field_with_name(name).is_ok() {
        return Ok(name.to_string());
    }
    let matches: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| !wanted.quoted && n.eq_ignore_ascii_case(name))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.to_string()),
        [_, _, ..] => {
            let shown: Vec<String> = matches.iter().map(|m| format!("'{m}'")).collect();
            plan_err!(
                "{function}(): column name '{name}' is ambiguous: table '{table}' has columns {} that differ only in letter case; write the one you mean exactly as it is spelled",
                shown.join(" and ")
            )
        }
        [] => {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            let how = if wanted.quoted {
                " (a name in double quotes must match exactly)"
            } else {
                ""
            };
            let hint = if wanted.quoted {
                String::new()
            } else {
                quoting_hint(schema, list)
            };
            plan_err!(
                "{function}(): table '{table}' has no column '{name}'{how}; its columns are: {}{hint}",
                names.join(", ")
            )
        }
    }
}

/// When a column whose name holds `,` or `:` is written unquoted in the list argument
/// `list` (its name and its text), how to write it: split at the `,` or `:`, its parts
/// named no column.
fn quoting_hint(schema: &Schema, list: (&str, &str)) -> String {
    let (param, text) = list;
    for field in schema.fields() {
        let name = field.name();
        if !name.contains([',', ':']) {
            continue;
        }
        let Some(at) = text.find(name.as_str()) else {
            continue;
        };
        // The rest of the item: a ':table' suffix (up to the next ',').
        let rest = &text[at + name.len()..];
        let suffix = match rest.trim_start().strip_prefix(':') {
            Some(table) => format!(":{}", table.split(',').next().unwrap_or("").trim()),
            None => String::new(),
        };
        return format!(
            "; the column '{name}' has ',' or ':' in its name: write it in double quotes, e.g. {param} => '{}{suffix}'",
            written_name(name)
        );
    }
    String::new()
}
