//! PostgreSQL functions BI tools call that DataFusion does not have: `format(fmt, …)` with
//! `%s`, `%I`, `%L` and `%%`, and `col_description(table, column)`, which is NULL here (no
//! table has column comments). Registered in every PostgreSQL session.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

/// Registers the functions on `ctx`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(Format::new()));
    ctx.register_udf(ScalarUDF::from(ColDescription::new()));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Format {
    signature: Signature,
}

impl Format {
    fn new() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Format {
    fn name(&self) -> &str {
        "format"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if arg_types.is_empty() {
            return plan_err!("format() takes a format string and its values");
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let texts = args
            .args
            .iter()
            .map(|arg| {
                let array = arg.to_array(rows)?;
                Ok(cast(&array, &DataType::Utf8)?)
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let texts: Vec<_> = texts.iter().map(|a| a.as_string::<i32>()).collect();
        let mut out = StringBuilder::new();
        for row in 0..rows {
            if texts[0].is_null(row) {
                out.append_null();
                continue;
            }
            let value = |i: usize| (!texts[i].is_null(row)).then(|| texts[i].value(row));
            out.append_value(format_row(texts[0].value(row), texts.len() - 1, value)?);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// `fmt` with its conversions filled from the values (`value(1)` is the first).
fn format_row<'a>(
    fmt: &str,
    values: usize,
    value: impl Fn(usize) -> Option<&'a str>,
) -> Result<String> {
    let mut out = String::with_capacity(fmt.len());
    let mut next = 1;
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let kind = match chars.next() {
            Some('%') => {
                out.push('%');
                continue;
            }
            Some(kind @ ('s' | 'I' | 'L')) => kind,
            Some(other) => {
                return exec_err!("format(): unrecognized conversion type specifier \"{other}\"")
            }
            None => return exec_err!("format(): unterminated format() type specifier"),
        };
        if next > values {
            return exec_err!("format(): too few arguments");
        }
        let v = value(next);
        next += 1;
        match (kind, v) {
            ('s', v) => out.push_str(v.unwrap_or("")),
            ('I', Some(v)) => out.push_str(&quote_ident(v)),
            ('I', None) => {
                return exec_err!("format(): null values cannot be formatted as an SQL identifier")
            }
            (_, Some(v)) => {
                out.push('\'');
                out.push_str(&v.replace('\'', "''"));
                out.push('\'');
            }
            (_, None) => out.push_str("NULL"),
        }
    }
    Ok(out)
}

/// `name` as an identifier: as it is when it is a plain lower-case one, else in double
/// quotes.
fn quote_ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ColDescription {
    signature: Signature,
}

impl ColDescription {
    fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Stable),
        }
    }
}

impl ScalarUDFImpl for ColDescription {
    fn name(&self) -> &str {
        "col_description"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn one(sql: &str) -> Result<String> {
        let ctx = SessionContext::new();
        register(&ctx);
        let batches = ctx.sql(sql).await?.collect().await?;
        let column = cast(batches[0].column(0), &DataType::Utf8)?;
        let text = column.as_string::<i32>();
        Ok(if text.is_null(0) {
            "NULL".into()
        } else {
            text.value(0).to_string()
        })
    }

    #[tokio::test]
    async fn format_fills_its_conversions_as_postgresql_does() -> Result<()> {
        assert_eq!(one("SELECT format('%s', 'int4')").await?, "int4");
        assert_eq!(
            one("SELECT format('\"%s\".\"%s\"', 'public', 'nps')").await?,
            "\"public\".\"nps\""
        );
        assert_eq!(
            one("SELECT format('%I.%I', 'public', 'My Table')").await?,
            "public.\"My Table\""
        );
        assert_eq!(
            one("SELECT format('%L, %L, %s%%, %s', 'it''s', NULL, 5, NULL)").await?,
            "'it''s', NULL, 5%, "
        );
        assert_eq!(one("SELECT format(NULL, 'x')").await?, "NULL");
        let refused = one("SELECT format('%s %s', 'x')")
            .await
            .expect_err("too few");
        assert!(
            refused.to_string().contains("too few arguments"),
            "{refused}"
        );
        let refused = one("SELECT format('%d', 1)").await.expect_err("%d");
        assert!(refused.to_string().contains("\"d\""), "{refused}");
        Ok(())
    }

    #[tokio::test]
    async fn col_description_is_null() -> Result<()> {
        assert_eq!(one("SELECT col_description(16384, 1)").await?, "NULL");
        Ok(())
    }
}
