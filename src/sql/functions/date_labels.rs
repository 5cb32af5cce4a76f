//! Scalar functions for dates: `gen_first_day` and `gen_last_day` read a released date
//! label (`'2019-03'`, `'2019-Q1'`, `'2015-2019'`) back as the days it covers, for range
//! queries on a release; `age_at` gives the completed years between a birth date and a
//! reference date, for the owner's view that releases an age instead of a birth date.
//!
//! ```sql
//! SELECT COUNT(*) FROM released
//! WHERE gen_first_day(admitted) >= DATE '2019-01-01' AND gen_last_day(admitted) <= DATE '2019-06-30';
//! CREATE VIEW patients_aged AS SELECT age_at(birth_date, DATE '2020-01-01') AS age, ... FROM patients;
//! ```

use std::sync::{Arc, LazyLock};

use chrono::{Datelike, NaiveDate};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Date32Array, Int32Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use crate::hierarchy::dates::{is_date_type, label_days};
use crate::quote::quote;

/// Section of DataFusion's function documentation these functions belong to.
const DOC_SECTION: DocSection = DocSection {
    include: true,
    label: "Date functions",
    description: Some(
        "Read released date labels back as days, and derive an age from a birth date.",
    ),
};

const LABEL_ARG: &str = "A released date label: a day '2019-03-14', an ISO week '2019-W11', a month '2019-03', a quarter '2019-Q1', a year '2019' or a span of years '2015-2019' (date_hierarchy's labels), or a DATE. '*' and NULL give NULL; other text is an error naming it.";

/// `gen_first_day` or `gen_last_day`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DateLabelUdf {
    last: bool,
    signature: Signature,
}

impl DateLabelUdf {
    fn new(last: bool) -> Self {
        Self {
            last,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn label_documentation(last: bool) -> Documentation {
    let (name, description, example) = if last {
        (
            "gen_last_day",
            "The last day a released date label stands for (DATE).",
            "SELECT gen_last_day('2019-02'), gen_last_day('2019-Q1'); -- 2019-02-28, 2019-03-31",
        )
    } else {
        (
            "gen_first_day",
            "The first day a released date label stands for (DATE).",
            "SELECT gen_first_day('2019-Q2'), gen_first_day('2020-W01'); -- 2019-04-01, 2019-12-30",
        )
    };
    Documentation::builder(DOC_SECTION, description, format!("{name}(label)"))
        .with_argument("label", LABEL_ARG)
        .with_sql_example(format!("```sql\n{example}\n```"))
        .build()
}

static FIRST_DAY_DOC: LazyLock<Documentation> = LazyLock::new(|| label_documentation(false));
static LAST_DAY_DOC: LazyLock<Documentation> = LazyLock::new(|| label_documentation(true));

fn is_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

fn is_date(t: &DataType) -> bool {
    is_date_type(t) || *t == DataType::Null
}

/// Days since 1970-01-01 of `day` (Date32's value).
fn epoch_days(day: NaiveDate) -> i32 {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    (day - epoch).num_days() as i32
}

impl ScalarUDFImpl for DateLabelUdf {
    fn name(&self) -> &str {
        if self.last {
            "gen_last_day"
        } else {
            "gen_first_day"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(if self.last {
            &LAST_DAY_DOC
        } else {
            &FIRST_DAY_DOC
        })
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] if is_text(t) => Ok(vec![DataType::Utf8]),
            [t] if is_date(t) => Ok(vec![DataType::Date32]),
            [t] => plan_err!(
                "{}(): the label must be a released date label (text) or a date, got {t}",
                self.name()
            ),
            _ => plan_err!(
                "{}() takes one argument, the label; got {}",
                self.name(),
                arg_types.len()
            ),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Date32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [labels] = arrays.as_slice() else {
            return plan_err!("{}() takes one argument", self.name());
        };
        if labels.data_type() == &DataType::Date32 {
            return Ok(ColumnarValue::Array(labels.clone()));
        }
        let labels = cast(labels, &DataType::Utf8)?;
        let labels = labels.as_string::<i32>();
        let mut out: Vec<Option<i32>> = Vec::with_capacity(labels.len());
        for label in labels.iter() {
            out.push(match label {
                None => None,
                Some(text) if text.trim() == crate::hierarchy::STAR => None,
                Some(text) => match label_days(text) {
                    Some((first, last)) => Some(epoch_days(if self.last { last } else { first })),
                    None => {
                        return exec_err!(
                            "{}(): {} is not a date label (a day YYYY-MM-DD, week YYYY-Www, month YYYY-MM, quarter YYYY-Qn, year YYYY or span YYYY-YYYY)",
                            self.name(),
                            quote(text)
                        )
                    }
                },
            });
        }
        Ok(ColumnarValue::Array(
            Arc::new(Date32Array::from(out)) as ArrayRef
        ))
    }
}

/// `age_at(birth_date, reference_date)`: completed years.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct AgeAtUdf {
    signature: Signature,
}

impl Default for AgeAtUdf {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

static AGE_AT_DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION,
        "Completed years from a birth date to a reference date (INT): the age in whole years on the reference day, as a person counts it (a birthday on 29 February is reached on 1 March in other years). Use it in the view you release, so the release holds an age (which an interval hierarchy generalizes) instead of a birth date. NULL when either date is NULL; a reference before the birth is an error.",
        "age_at(birth_date, reference_date)",
    )
    .with_argument("birth_date", "A DATE (or TIMESTAMP, read as its day).")
    .with_argument(
        "reference_date",
        "A DATE: the same day for everyone (e.g. DATE '2020-01-01') or another column (e.g. the admission date).",
    )
    .with_sql_example(
        "```sql\nSELECT age_at(DATE '1980-03-15', DATE '2020-03-14'), age_at(DATE '1980-03-15', DATE '2020-03-15'); -- 39, 40\n```",
    )
    .build()
});

/// Completed years from `birth` to `on`, `None` when `on` is before `birth`.
pub fn completed_years(birth: NaiveDate, on: NaiveDate) -> Option<i32> {
    if on < birth {
        return None;
    }
    let mut years = on.year() - birth.year();
    if (on.month(), on.day()) < (birth.month(), birth.day()) {
        years -= 1;
    }
    Some(years)
}

impl ScalarUDFImpl for AgeAtUdf {
    fn name(&self) -> &str {
        "age_at"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&AGE_AT_DOC)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [a, b] if is_date(a) && is_date(b) => Ok(vec![DataType::Date32, DataType::Date32]),
            [a, b] => plan_err!("age_at(): both arguments must be dates, got {a} and {b}"),
            _ => plan_err!(
                "age_at() takes two arguments, birth_date and reference_date; got {}",
                arg_types.len()
            ),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [births, references] = arrays.as_slice() else {
            return plan_err!("age_at() takes two arguments");
        };
        let (births, references) = (
            births.as_primitive::<Date32Type>(),
            references.as_primitive::<Date32Type>(),
        );
        let mut out = Int32Builder::with_capacity(births.len());
        for row in 0..births.len() {
            if births.is_null(row) || references.is_null(row) {
                out.append_null();
                continue;
            }
            let (Some(birth), Some(on)) =
                (births.value_as_date(row), references.value_as_date(row))
            else {
                out.append_null();
                continue;
            };
            match completed_years(birth, on) {
                Some(years) => out.append_value(years),
                None => {
                    return exec_err!(
                        "age_at(): the reference date {on} is before the birth date {birth}"
                    )
                }
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// The date functions, ready for `ctx.register_udf`.
pub fn date_udfs() -> Vec<ScalarUDF> {
    vec![
        ScalarUDF::from(DateLabelUdf::new(false)),
        ScalarUDF::from(DateLabelUdf::new(true)),
        ScalarUDF::from(AgeAtUdf::default()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> NaiveDate {
        NaiveDate::parse_from_str(text, "%Y-%m-%d").expect("a date")
    }

    #[test]
    fn completed_years_count_birthdays() {
        assert_eq!(
            completed_years(day("1980-03-15"), day("2020-03-14")),
            Some(39)
        );
        assert_eq!(
            completed_years(day("1980-03-15"), day("2020-03-15")),
            Some(40)
        );
        assert_eq!(
            completed_years(day("2000-02-29"), day("2001-02-28")),
            Some(0)
        );
        assert_eq!(
            completed_years(day("2000-02-29"), day("2001-03-01")),
            Some(1)
        );
        assert_eq!(
            completed_years(day("2000-02-29"), day("2004-02-29")),
            Some(4)
        );
        assert_eq!(
            completed_years(day("2020-01-01"), day("2020-01-01")),
            Some(0)
        );
        assert_eq!(completed_years(day("2020-01-02"), day("2020-01-01")), None);
    }

    #[test]
    fn epoch_days_are_date32_values() {
        assert_eq!(epoch_days(day("1970-01-01")), 0);
        assert_eq!(epoch_days(day("2019-03-14")), 17_969);
        assert_eq!(epoch_days(day("1969-12-31")), -1);
    }
}
