//! Statement parameters as both protocols write them: a placeholder in the statement's
//! syntax tree, and `$n` numbered from 1 up to [`MAX_PARAMETERS`].

use datafusion::sql::sqlparser::ast::{Expr, Value};

/// The most parameters one statement may have (PostgreSQL's own limit is 65,535).
pub(crate) const MAX_PARAMETERS: usize = 1_000;

/// The placeholder's text (`$1`, `?`) if `expr` is one.
pub(crate) fn placeholder(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Placeholder(name) => Some(name),
            _ => None,
        },
        _ => None,
    }
}

/// The number of a `$n` placeholder, if it is one of `$1` to `$1000`.
pub(crate) fn dollar_number(name: &str) -> Option<usize> {
    let n: usize = name.strip_prefix('$')?.parse().ok()?;
    (1..=MAX_PARAMETERS).contains(&n).then_some(n)
}
