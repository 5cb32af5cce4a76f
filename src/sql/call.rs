//! A call of one of this crate's table functions, written as the SQL text that runs it.
//!
//! Hosts that reach the functions from another DataFusion build (the Python package, over
//! the FFI) turn every call into the same text, `SELECT * FROM f(positional...,
//! name => value, ...)`, so the same request is one release whichever way it came.
//!
//! DataFusion's own planner does not accept `name => value` inside `FROM f(...)` (only
//! this crate's planner does), so there a named argument is written as two arguments: its
//! name followed by `=>` as a string, then its value: `anonymize('nps', 'method =>',
//! 'ipa', 'epsilon =>', 1.0)`.

use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::logical_expr::Expr;

/// The arguments of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FunctionCall {
    /// The function's name, lower case.
    pub function: String,
    /// Unnamed arguments, in order.
    pub positional: Vec<ScalarValue>,
    /// `name => value` arguments, in order.
    pub named: Vec<(String, ScalarValue)>,
}

impl FunctionCall {
    /// The call `function(args)` as DataFusion plans it in the user's session: constants,
    /// with `'name =>', value` pairs for named arguments.
    pub fn from_exprs(function: &str, args: &[Expr]) -> Result<Self> {
        let mut call = Self {
            function: function.to_ascii_lowercase(),
            ..Self::default()
        };
        let mut values = args.iter().enumerate();
        while let Some((i, arg)) = values.next() {
            let value = constant(&call.function, i, arg)?;
            match argument_name(&value) {
                Some(name) => {
                    let Some((j, arg)) = values.next() else {
                        return plan_err!(
                            "{}(): argument '{name}' has no value: write '{name} =>' followed by its value as the next argument",
                            call.function
                        );
                    };
                    call.named.push((name, constant(&call.function, j, arg)?));
                }
                None if call.named.is_empty() => call.positional.push(value),
                None => {
                    return plan_err!(
                        "{}(): argument {} has no name: after the first 'name =>' argument every argument is named",
                        call.function,
                        i + 1
                    )
                }
            }
        }
        Ok(call)
    }

    /// The SQL statement `SELECT * FROM f(...)` of this call.
    pub fn to_sql(&self) -> Result<String> {
        let mut args = Vec::new();
        for (i, value) in self.positional.iter().enumerate() {
            args.push(literal(&self.function, &format!("{}", i + 1), value)?);
        }
        for (name, value) in &self.named {
            if !is_identifier(name) {
                return plan_err!(
                    "{}(): '{name}' is not an argument name (letters, digits and '_')",
                    self.function
                );
            }
            args.push(format!(
                "{name} => {}",
                literal(&self.function, name, value)?
            ));
        }
        if !is_identifier(&self.function) {
            return plan_err!("'{}' is not a function name", self.function);
        }
        Ok(format!(
            "SELECT * FROM {}({})",
            self.function,
            args.join(", ")
        ))
    }
}

/// The name in a `'name =>'` argument.
fn argument_name(value: &ScalarValue) -> Option<String> {
    let text = match value {
        ScalarValue::Utf8(Some(t))
        | ScalarValue::LargeUtf8(Some(t))
        | ScalarValue::Utf8View(Some(t)) => t,
        _ => return None,
    };
    let name = text.trim().strip_suffix("=>")?.trim();
    is_identifier(name).then(|| name.to_ascii_lowercase())
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The constant `arg` (argument `i`, from 0), or an error saying that it must be one.
fn constant(function: &str, i: usize, arg: &Expr) -> Result<ScalarValue> {
    match arg {
        Expr::Literal(value, _) => Ok(value.clone()),
        Expr::Negative(inner) => match inner.as_ref() {
            Expr::Literal(value, _) => Ok(value.arithmetic_negate()?),
            _ => not_constant(function, i),
        },
        _ => not_constant(function, i),
    }
}

fn not_constant<T>(function: &str, i: usize) -> Result<T> {
    plan_err!(
        "{function}(): argument {} must be a constant (a string, a number or a boolean)",
        i + 1
    )
}

/// `value` as a SQL literal.
fn literal(function: &str, argument: &str, value: &ScalarValue) -> Result<String> {
    Ok(match value {
        ScalarValue::Utf8(Some(t))
        | ScalarValue::LargeUtf8(Some(t))
        | ScalarValue::Utf8View(Some(t)) => {
            format!("'{}'", t.replace('\'', "''"))
        }
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Int8(Some(v)) => v.to_string(),
        ScalarValue::Int16(Some(v)) => v.to_string(),
        ScalarValue::Int32(Some(v)) => v.to_string(),
        ScalarValue::Int64(Some(v)) => v.to_string(),
        ScalarValue::UInt8(Some(v)) => v.to_string(),
        ScalarValue::UInt16(Some(v)) => v.to_string(),
        ScalarValue::UInt32(Some(v)) => v.to_string(),
        ScalarValue::UInt64(Some(v)) => v.to_string(),
        ScalarValue::Float32(Some(v)) if v.is_finite() => format!("{v:?}"),
        ScalarValue::Float64(Some(v)) if v.is_finite() => format!("{v:?}"),
        ScalarValue::Decimal128(Some(_), _, _) => value.to_string(),
        v if v.is_null() => "NULL".to_string(),
        _ => {
            return plan_err!(
                "{function}(): argument {argument} must be a string, a finite number or a boolean"
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::lit;

    #[test]
    fn named_pairs_become_named_arguments() -> Result<()> {
        let call = FunctionCall::from_exprs(
            "ANONYMIZE",
            &[
                lit("nps"),
                lit("method =>"),
                lit("ipa"),
                lit(" Epsilon=> "),
                lit(0.5),
                lit("qi =>"),
                lit("age, sex:it's"),
                lit("k =>"),
                Expr::Negative(Box::new(lit(3i64))),
            ],
        )?;
        assert_eq!(
            call.to_sql()?,
            "SELECT * FROM anonymize('nps', method => 'ipa', epsilon => 0.5, qi => 'age, sex:it''s', k => -3)"
        );
        Ok(())
    }

    #[test]
    fn refusals_name_the_argument() {
        let err = |args: &[Expr]| {
            FunctionCall::from_exprs("anonymize", args)
                .and_then(|c| c.to_sql())
                .map(|_| String::new())
                .unwrap_or_else(|e| e.to_string())
        };
        assert!(err(&[lit("t"), lit("seed =>")]).contains("argument 'seed' has no value"));
        assert!(err(&[lit("t"), lit("k =>"), lit(2), lit("x")]).contains("argument 4 has no name"));
        assert!(err(&[lit("t"), datafusion::prelude::col("a")])
            .contains("argument 2 must be a constant"));
        assert!(err(&[lit("t"), lit("epsilon =>"), lit(f64::INFINITY)])
            .contains("argument epsilon must be"));
    }
}
