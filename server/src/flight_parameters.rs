//! Flight SQL prepared statements with parameters (`$1`, `$2`, …, or `?` counted left to
//! right). A statement with parameters cannot be planned until they are known (an
//! `anonymize(...)` argument is checked when the statement is planned), so the server keeps
//! no state for it: the values the client puts (`DoPut` with the statement's handle, one
//! row) become typed literals in the statement, and the statement with its literals is the
//! new handle the client executes (Flight SQL's stateless prepared statements,
//! `DoPutPreparedStatementResult`). It is then parsed, checked (the public door too) and
//! planned as if the client had sent it with the literals.

use std::ops::ControlFlow;

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    visit_expressions, visit_expressions_mut, Expr, Statement, Value,
};
use tonic::Status;

use crate::placeholders::{dollar_number, placeholder, MAX_PARAMETERS};

/// How many batches of values a `DoPut` may send (empty ones included) before it is refused.
pub(crate) const MAX_PARAMETER_BATCHES: usize = 16;

/// The parameter of a placeholder: `$n` is `n`; each `?` is the next number.
fn number(name: &str, next: &mut usize) -> Option<usize> {
    if name == "?" {
        *next += 1;
        return Some(*next);
    }
    dollar_number(name)
}

/// How many parameters `statement` takes (the highest number; 0 without any); an error
/// names a placeholder that is not `$1`…`$1000` or `?`, and a statement mixing the two.
pub(crate) fn parameter_count(statement: &Statement) -> Result<usize, Status> {
    let (mut highest, mut next, mut dollar) = (0, 0, false);
    let flow = visit_expressions(statement, |expr| {
        if let Some(name) = placeholder(expr) {
            dollar |= name != "?";
            match number(name, &mut next) {
                Some(n) => highest = highest.max(n),
                None => return ControlFlow::Break(name.to_string()),
            }
        }
        ControlFlow::Continue(())
    });
    if let ControlFlow::Break(name) = flow {
        return Err(Status::invalid_argument(format!(
            "parameter {name} is not one of $1 to ${MAX_PARAMETERS} or ?"
        )));
    }
    if dollar && next > 0 {
        return Err(Status::invalid_argument(
            "a statement takes its parameters as $1, $2, … or as ?, not both",
        ));
    }
    if highest > MAX_PARAMETERS {
        return Err(Status::invalid_argument(format!(
            "a statement takes at most {MAX_PARAMETERS} parameters"
        )));
    }
    Ok(highest)
}

/// `statement` with each parameter replaced by the literal of its value in `values` (one
/// row, a column per parameter in order). Errors name the parameter.
pub(crate) fn with_literals(
    statement: &Statement,
    values: &RecordBatch,
) -> Result<Statement, Status> {
    let wanted = parameter_count(statement)?;
    if values.num_rows() != 1 {
        return Err(Status::invalid_argument(format!(
            "parameters come as one row of values, and {} rows were sent",
            values.num_rows()
        )));
    }
    if values.num_columns() != wanted {
        return Err(Status::invalid_argument(format!(
            "{} parameter values were sent, and the statement takes {wanted}",
            values.num_columns()
        )));
    }
    let literals = values
        .columns()
        .iter()
        .enumerate()
        .map(|(i, column)| literal(i + 1, column.as_ref()))
        .collect::<Result<Vec<Value>, Status>>()?;
    let mut bound = statement.clone();
    let mut next = 0;
    let _ = visit_expressions_mut(&mut bound, |expr| {
        let value = placeholder(expr)
            .and_then(|name| number(name, &mut next))
            .and_then(|n| literals.get(n - 1));
        if let Some(value) = value {
            *expr = Expr::value(value.clone());
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(bound)
}

/// The literal of parameter `n`'s value (row 0 of `column`): a number for the integer,
/// floating and decimal types, a boolean, NULL, and a string for text and for the date and
/// time types (which the statement casts as it would a quoted literal).
fn literal(n: usize, column: &dyn Array) -> Result<Value, Status> {
    let value = ScalarValue::try_from_array(column, 0)
        .map_err(|e| Status::invalid_argument(format!("parameter ${n}: {e}")))?;
    if value.is_null() {
        return Ok(Value::Null);
    }
    let bad = |what: &str| Status::invalid_argument(format!("parameter ${n}: {what}"));
    Ok(match column.data_type() {
        DataType::Boolean => Value::Boolean(value == ScalarValue::Boolean(Some(true))),
        t if t.is_integer() || matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..)) => {
            Value::Number(value.to_string(), false)
        }
        t if t.is_floating() => {
            // Written as Rust's shortest round trip with a decimal point (`1.0`, not `1`),
            // as psql's literal would be: the same arguments name the same release.
            let text = match value {
                ScalarValue::Float64(Some(x)) => format!("{x:?}"),
                ScalarValue::Float32(Some(x)) => format!("{x:?}"),
                other => other.to_string(),
            };
            match text.parse::<f64>() {
                Ok(x) if x.is_finite() => Value::Number(text, false),
                _ => return Err(bad("a number must be finite")),
            }
        }
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(..) => Value::SingleQuotedString(value.to_string()),
        other => {
            return Err(bad(&format!(
                "values of type {other} are not taken; send text, a number, a boolean or a date"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn statement(sql: &str) -> Statement {
        Parser::parse_sql(&GenericDialect {}, sql)
            .expect("parses")
            .remove(0)
    }

    fn row(columns: Vec<ArrayRef>) -> RecordBatch {
        RecordBatch::try_from_iter(
            columns
                .into_iter()
                .enumerate()
                .map(|(i, c)| (format!("p{i}"), c)),
        )
        .expect("batch")
    }

    #[test]
    fn values_become_typed_literals() {
        let sql = "SELECT * FROM anonymize('nps', qi => $1, epsilon => $2, k => $3) WHERE sex = $1 AND ok = $4";
        let values = row(vec![
            Arc::new(StringArray::from(vec!["it's"])),
            Arc::new(Float64Array::from(vec![1.0])),
            Arc::new(Int64Array::from(vec![5])),
            Arc::new(BooleanArray::from(vec![true])),
        ]);
        let bound = with_literals(&statement(sql), &values).expect("bound");
        assert_eq!(
            bound.to_string(),
            "SELECT * FROM anonymize('nps', qi => 'it''s', epsilon => 1.0, k => 5) WHERE sex = 'it''s' AND ok = true"
        );
        let question = with_literals(
            &statement("SELECT ? + ?"),
            &row(vec![
                Arc::new(Int64Array::from(vec![1])),
                Arc::new(Int64Array::from(vec![Option::<i64>::None])),
            ]),
        )
        .expect("bound");
        assert_eq!(question.to_string(), "SELECT 1 + NULL");
    }

    #[test]
    fn wrong_counts_and_values_are_refused_by_parameter() {
        let message = |sql: &str, values: RecordBatch| {
            with_literals(&statement(sql), &values)
                .expect_err("refused")
                .message()
                .to_string()
        };
        let one = || row(vec![Arc::new(Int64Array::from(vec![1]))]);
        assert!(message("SELECT $1, $2", one()).contains("takes 2"));
        assert!(message("SELECT $1, ?", one()).contains("not both"));
        assert!(message("SELECT $1001", one()).contains("$1 to $1000"));
        let two_rows = row(vec![Arc::new(Int64Array::from(vec![1, 2]))]);
        assert!(message("SELECT $1", two_rows).contains("one row"));
        let nan = row(vec![Arc::new(Float64Array::from(vec![f64::NAN]))]);
        assert!(message("SELECT $1", nan).contains("parameter $1: a number must be finite"));
        assert_eq!(parameter_count(&statement("SELECT 1")).expect("none"), 0);
    }
}
