//! Parameters (`$1`, `$2`, …) where the plan needs literals: a statement that cannot be
//! planned with its parameters as placeholders (an `anonymize(...)` argument, whose values
//! are checked when the statement is planned) is kept unplanned until Bind, where each
//! bound value becomes a typed literal in the statement, which is then parsed, checked
//! (the public door too) and planned as if the client had sent it with the literals.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::logical_expr::{
    Expr as PlanExpr, Extension, LogicalPlan, UserDefinedLogicalNodeCore,
};
use datafusion::sql::sqlparser::ast::{
    visit_expressions, visit_expressions_mut, Expr, Statement, Value,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use pgwire::api::portal::Format;
use pgwire::api::results::FieldFormat;
use pgwire::api::Type;
use pgwire::error::{PgWireError, PgWireResult};

use super::{user_error, DfStatement};
use crate::placeholders::{dollar_number, placeholder, MAX_PARAMETERS};

/// A statement whose parameters are bound before it is planned: the plan it has between
/// Parse and Bind, which only tells the parameters' types (a Describe of the statement
/// answers with them and no row description: the rows' shape is known after Bind).
#[derive(Debug, Clone)]
pub(super) struct BindFirst {
    /// The parameters' type OIDs, `$1` first.
    types: Vec<u32>,
    schema: DFSchemaRef,
}

impl PartialEq for BindFirst {
    fn eq(&self, other: &Self) -> bool {
        self.types == other.types
    }
}

impl Eq for BindFirst {}

impl PartialOrd for BindFirst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.types.cmp(&other.types))
    }
}

impl Hash for BindFirst {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.types.hash(state);
    }
}

impl UserDefinedLogicalNodeCore for BindFirst {
    fn name(&self) -> &str {
        "BindFirst"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        Vec::new()
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<PlanExpr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "BindFirst: {} parameters", self.types.len())
    }

    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<PlanExpr>,
        _inputs: Vec<LogicalPlan>,
    ) -> datafusion::error::Result<Self> {
        Ok(self.clone())
    }
}

/// `sql` kept for binding first, when it is one statement with parameters: the statement
/// and its [`BindFirst`] plan, with the types the client declared (`types`) and text for
/// the others. `None` when it has no parameters or does not parse.
pub(super) fn deferred(sql: &str, declared: &[Option<Type>]) -> Option<DfStatement> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    if statements.len() != 1 {
        return None;
    }
    let statement = statements.pop()?;
    let count = parameter_count(&statement).ok()?;
    if count == 0 {
        return None;
    }
    let types = (0..count)
        .map(|i| {
            declared
                .get(i)
                .cloned()
                .flatten()
                .unwrap_or(Type::TEXT)
                .oid()
        })
        .collect();
    let plan = LogicalPlan::Extension(Extension {
        node: Arc::new(BindFirst {
            types,
            schema: Arc::new(DFSchema::empty()),
        }),
    });
    Some((statement.to_string(), Some((statement, plan))))
}

/// The [`BindFirst`] node of `statement`'s plan, if it is kept for binding first.
pub(super) fn bind_first(statement: &DfStatement) -> Option<&BindFirst> {
    match &statement.1 {
        Some((_, LogicalPlan::Extension(Extension { node }))) => {
            node.as_any().downcast_ref::<BindFirst>()
        }
        _ => None,
    }
}

impl BindFirst {
    /// The parameters' types, as a Describe of the statement tells them.
    pub(super) fn types(&self) -> Vec<Type> {
        self.types
            .iter()
            .map(|oid| Type::from_oid(*oid).unwrap_or(Type::TEXT))
            .collect()
    }
}

/// The highest `$n` in `statement` (0 without parameters); an error for a parameter that is
/// not `$1`…`$1000`.
fn parameter_count(statement: &Statement) -> PgWireResult<usize> {
    let mut highest = 0;
    let flow = visit_expressions(statement, |expr| {
        if let Some(name) = placeholder(expr) {
            match dollar_number(name) {
                Some(n) => highest = highest.max(n),
                None => return ControlFlow::Break(name.to_string()),
            }
        }
        ControlFlow::Continue(())
    });
    match flow {
        ControlFlow::Break(name) => Err(user_error(
            "42P02",
            format!("parameter {name} is not one of $1 to ${MAX_PARAMETERS}"),
        )),
        ControlFlow::Continue(()) => Ok(highest),
    }
}

/// `statement` with each `$n` replaced by the typed literal of the `n`th bound value.
pub(super) fn with_literals(
    statement: &Statement,
    node: &BindFirst,
    format: &Format,
    values: &[Option<bytes::Bytes>],
) -> PgWireResult<Statement> {
    if values.len() != node.types.len() {
        return Err(user_error(
            "08P01",
            format!(
                "bind message supplies {} parameters, but the statement requires {}",
                values.len(),
                node.types.len()
            ),
        ));
    }
    let literals = values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let ty = Type::from_oid(node.types[i]).unwrap_or(Type::TEXT);
            literal(i + 1, &ty, format.format_for(i), value.as_deref())
        })
        .collect::<PgWireResult<Vec<Value>>>()?;
    let mut bound = statement.clone();
    let _ = visit_expressions_mut(&mut bound, |expr| {
        let value = placeholder(expr)
            .and_then(dollar_number)
            .and_then(|n| literals.get(n - 1));
        if let Some(value) = value {
            *expr = Expr::value(value.clone());
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(bound)
}

/// The literal of parameter `n`'s value `bytes` of type `ty` sent in `format`: a number
/// for the integer and floating types, a boolean for `bool`, NULL for no value, and a
/// string for every other type.
fn literal(n: usize, ty: &Type, format: FieldFormat, bytes: Option<&[u8]>) -> PgWireResult<Value> {
    let Some(bytes) = bytes else {
        return Ok(Value::Null);
    };
    let bad = |what: &str| {
        user_error(
            "22P02",
            format!("parameter ${n}: {what} is not a valid {}", ty.name()),
        )
    };
    let number = |text: String| Value::Number(text, false);
    if format == FieldFormat::Binary {
        let fixed = |size: usize| -> PgWireResult<&[u8]> {
            (bytes.len() == size)
                .then_some(bytes)
                .ok_or_else(|| bad("the binary value"))
        };
        return Ok(match *ty {
            Type::INT2 => number(i16::from_be_bytes(array(fixed(2)?)).to_string()),
            Type::INT4 => number(i32::from_be_bytes(array(fixed(4)?)).to_string()),
            Type::INT8 => number(i64::from_be_bytes(array(fixed(8)?)).to_string()),
            Type::FLOAT4 => float(f32::from_be_bytes(array(fixed(4)?)).into(), &bad)?,
            Type::FLOAT8 => float(f64::from_be_bytes(array(fixed(8)?)), &bad)?,
            Type::BOOL => Value::Boolean(fixed(1)?[0] != 0),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                Value::SingleQuotedString(text(bytes, &bad)?)
            }
            _ => {
                return Err(user_error(
                    "0A000",
                    format!(
                        "parameter ${n}: the binary format of type {} is not supported; send it as text",
                        ty.name()
                    ),
                ))
            }
        });
    }
    let text = text(bytes, &bad)?;
    let trimmed = text.trim();
    Ok(match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => number(
            trimmed
                .parse::<i64>()
                .map_err(|_| bad(&format!("'{text}'")))?
                .to_string(),
        ),
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => float(
            trimmed
                .parse::<f64>()
                .map_err(|_| bad(&format!("'{text}'")))?,
            &bad,
        )?,
        Type::BOOL => match trimmed.to_ascii_lowercase().as_str() {
            "t" | "true" | "yes" | "y" | "on" | "1" => Value::Boolean(true),
            "f" | "false" | "no" | "n" | "off" | "0" => Value::Boolean(false),
            _ => return Err(bad(&format!("'{text}'"))),
        },
        _ => Value::SingleQuotedString(text),
    })
}

fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(bytes);
    out
}

fn float(value: f64, bad: &dyn Fn(&str) -> PgWireError) -> PgWireResult<Value> {
    if value.is_finite() {
        Ok(Value::Number(format!("{value:?}"), false))
    } else {
        Err(bad(&format!("'{value}'")))
    }
}

fn text(bytes: &[u8], bad: &dyn Fn(&str) -> PgWireError) -> PgWireResult<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| bad("a value that is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(
        sql: &str,
        types: &[Option<Type>],
        format: Format,
        values: &[Option<&[u8]>],
    ) -> PgWireResult<String> {
        let statement = deferred(sql, types).expect("kept for binding");
        let node = bind_first(&statement).expect("a BindFirst plan").clone();
        let (_, Some((ast, _))) = &statement else {
            unreachable!()
        };
        let values: Vec<_> = values
            .iter()
            .map(|v| v.map(bytes::Bytes::copy_from_slice))
            .collect();
        with_literals(ast, &node, &format, &values).map(|s| s.to_string())
    }

    fn message(e: PgWireError) -> String {
        match e {
            PgWireError::UserError(info) => format!("{} {}", info.code, info.message),
            other => other.to_string(),
        }
    }

    #[test]
    fn text_values_become_literals_of_their_declared_types() {
        let sql = "SELECT * FROM anonymize(source => $1, k => $2, epsilon => $3, seeded => $4) WHERE x = $1";
        let types = [None, Some(Type::INT4), Some(Type::FLOAT8), Some(Type::BOOL)];
        let values: [Option<&[u8]>; 4] = [Some(b"it's"), Some(b" 5"), Some(b"0.5"), Some(b"t")];
        assert_eq!(
            bound(sql, &types, Format::UnifiedText, &values).unwrap(),
            "SELECT * FROM anonymize(source => 'it''s', k => 5, epsilon => 0.5, seeded => true) WHERE x = 'it''s'"
        );
        let with_null: [Option<&[u8]>; 4] = [None, Some(b"5"), Some(b"1"), Some(b"off")];
        assert_eq!(
            bound(sql, &types, Format::UnifiedText, &with_null).unwrap(),
            "SELECT * FROM anonymize(source => NULL, k => 5, epsilon => 1.0, seeded => false) WHERE x = NULL"
        );
    }

    #[test]
    fn binary_values_are_decoded_by_type() {
        let sql = "SELECT anonymize_x($1, $2, $3, $4)";
        let types = [
            Some(Type::INT8),
            Some(Type::FLOAT4),
            Some(Type::INT2),
            Some(Type::VARCHAR),
        ];
        let values: [Option<&[u8]>; 4] = [
            Some(&(-7i64).to_be_bytes()),
            Some(&1.5f32.to_be_bytes()),
            Some(&300i16.to_be_bytes()),
            Some(b"nps"),
        ];
        assert_eq!(
            bound(sql, &types, Format::UnifiedBinary, &values).unwrap(),
            "SELECT anonymize_x(-7, 1.5, 300, 'nps')"
        );
        let short: [Option<&[u8]>; 4] = [Some(&[0, 1]), None, None, None];
        assert_eq!(
            message(bound(sql, &types, Format::UnifiedBinary, &short).unwrap_err()),
            "22P02 parameter $1: the binary value is not a valid int8"
        );
        let date = [Some(Type::DATE)];
        assert_eq!(
            message(
                bound(
                    "SELECT $1",
                    &date,
                    Format::UnifiedBinary,
                    &[Some(&[0, 0, 0, 1])]
                )
                .unwrap_err()
            ),
            "0A000 parameter $1: the binary format of type date is not supported; send it as text"
        );
    }

    #[test]
    fn bad_values_and_counts_are_refused_by_parameter() {
        let types = [Some(Type::INT4)];
        assert_eq!(
            message(
                bound(
                    "SELECT $1",
                    &types,
                    Format::UnifiedText,
                    &[Some(b"5; DROP")]
                )
                .unwrap_err()
            ),
            "22P02 parameter $1: '5; DROP' is not a valid int4"
        );
        let nan = [Some(Type::FLOAT8)];
        assert_eq!(
            message(bound("SELECT $1", &nan, Format::UnifiedText, &[Some(b"NaN")]).unwrap_err()),
            "22P02 parameter $1: 'NaN' is not a valid float8"
        );
        assert_eq!(
            message(bound("SELECT $1, $2", &[], Format::UnifiedText, &[Some(b"a")]).unwrap_err()),
            "08P01 bind message supplies 1 parameters, but the statement requires 2"
        );
    }

    #[test]
    fn only_statements_with_parameters_are_kept() {
        assert!(deferred("SELECT 1", &[]).is_none());
        assert!(deferred("SELECT $1; SELECT $2", &[]).is_none());
        assert!(deferred("SELEC $1", &[]).is_none());
        assert!(deferred("SELECT $1001", &[]).is_none());
        let kept = deferred("SELECT $3", &[]).unwrap();
        assert_eq!(
            bind_first(&kept).unwrap().types(),
            vec![Type::TEXT, Type::TEXT, Type::TEXT]
        );
    }
}
