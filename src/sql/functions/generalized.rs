//! Scalar functions for analysts querying a release whose integer columns are generalized:
//! `gen_lower`, `gen_upper`, `gen_mid` and `gen_spread`. Each describes itself through
//! DataFusion's [`ScalarUDFImpl::documentation`] (the one home of its text, shown by
//! `anonymize_help()`, `SHOW FUNCTIONS` and `docs/FUNCTIONS.md`).
//!
//! Labels name integer sets ([`crate::analysis::generalized`]): `[10-20)` is 10..=19,
//! `[60-100]` is 60..=100, `*` has no bounds unless a domain is given.
//!
//! ```sql
//! -- COUNT(*) ... GROUP BY FLOOR(age / 5) * 5 on a release whose ages are intervals
//! SELECT s['group'] AS age_group, SUM(s['weight']) AS patients
//! FROM (SELECT unnest(gen_spread(age, 5, 0, 89)) AS s FROM released WHERE disease LIKE 'I6%')
//! GROUP BY 1 ORDER BY 1;
//! -- AVG of a generalized numeric: midpoints
//! SELECT AVG(gen_mid(los)) FROM released;
//! ```

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Float64Builder, Int64Array, Int64Builder, ListArray,
    StructArray,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Int64Type};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use crate::analysis::generalized::{midpoint, parse_generalized, spread};

/// Which bound [`GeneralizedBoundUdf`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bound {
    /// Smallest integer (`gen_lower`).
    Lower,
    /// Largest integer (`gen_upper`).
    Upper,
    /// Midpoint (`gen_mid`).
    Mid,
}

impl Bound {
    /// The SQL name of the function returning this bound.
    pub fn function_name(self) -> &'static str {
        match self {
            Bound::Lower => "gen_lower",
            Bound::Upper => "gen_upper",
            Bound::Mid => "gen_mid",
        }
    }
}

/// `gen_lower`, `gen_upper` or `gen_mid`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GeneralizedBoundUdf {
    bound: Bound,
    signature: Signature,
}

impl GeneralizedBoundUdf {
    /// The function for one bound.
    pub fn new(bound: Bound) -> Self {
        Self {
            bound,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    fn doc(&self) -> &'static Documentation {
        match self.bound {
            Bound::Lower => &GEN_LOWER_DOC,
            Bound::Upper => &GEN_UPPER_DOC,
            Bound::Mid => &GEN_MID_DOC,
        }
    }
}

/// `gen_spread(value, width [, domain_lo, domain_hi])`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GeneralizedSpreadUdf {
    signature: Signature,
}

impl Default for GeneralizedSpreadUdf {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// Section of DataFusion's function documentation these functions belong to.
const DOC_SECTION: DocSection = DocSection {
    include: true,
    label: "Generalized value functions",
    description: Some(
        "Read generalized integer labels of a release ('[10-20)', '*') back as numbers.",
    ),
};

const VALUE_ARG: &str = "A released label ('37', '[10-20)' = 10..=19, '[60-100]' = 60..=100, the coded ends '<18' and '>=90' of top_bottom_hierarchy, '*'; the last three stand for integers only with a domain) or an integer. NULL gives NULL; a label that is not an integer value is an error naming it.";
const DOMAIN_LO_ARG: &str = "Optional, given with domain_hi: smallest integer of the domain. With a domain, '*' stands for the whole domain and every value is clipped to it (NULL or empty when outside); a NULL bound means no domain.";
const DOMAIN_HI_ARG: &str = "Optional, given with domain_lo: largest integer of the domain.";

/// Documentation of `gen_lower`, `gen_upper` or `gen_mid`.
fn bound_documentation(bound: Bound) -> Documentation {
    let (description, example) = match bound {
        Bound::Lower => (
            "Smallest integer a released value stands for (BIGINT).",
            "SELECT gen_lower('[10-20)'), gen_lower('*', 0, 89); -- 10, 0",
        ),
        Bound::Upper => (
            "Largest integer a released value stands for (BIGINT).",
            "SELECT gen_upper('[10-20)'), gen_upper('[60-100]'); -- 19, 100",
        ),
        Bound::Mid => (
            "Midpoint (lower + upper) / 2 of the integers a released value stands for (DOUBLE), e.g. for AVG over a generalized column: '[2-5)' gives 3.",
            "SELECT gen_mid('[10-20)'), gen_mid('*', 1, 100); -- 14.5, 50.5",
        ),
    };
    Documentation::builder(
        DOC_SECTION,
        description,
        format!("{}(value [, domain_lo, domain_hi])", bound.function_name()),
    )
    .with_argument("value", VALUE_ARG)
    .with_argument("domain_lo", DOMAIN_LO_ARG)
    .with_argument("domain_hi", DOMAIN_HI_ARG)
    .with_sql_example(format!("```sql\n{example}\n```"))
    .build()
}

static GEN_LOWER_DOC: LazyLock<Documentation> = LazyLock::new(|| bound_documentation(Bound::Lower));
static GEN_UPPER_DOC: LazyLock<Documentation> = LazyLock::new(|| bound_documentation(Bound::Upper));
static GEN_MID_DOC: LazyLock<Documentation> = LazyLock::new(|| bound_documentation(Bound::Mid));

static GEN_SPREAD_DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION,
        "A released value spread uniformly over its integers, summed per group floor(x / width) * width: a list of {group BIGINT, weight DOUBLE}, ascending by group, whose weights sum to 1 (empty for '*' without a domain). Unnest it and SUM the weights to count records per group.",
        "gen_spread(value, width [, domain_lo, domain_hi])",
    )
    .with_argument("value", VALUE_ARG)
    .with_argument("width", "Group width, a positive integer; NULL gives NULL.")
    .with_argument("domain_lo", DOMAIN_LO_ARG)
    .with_argument("domain_hi", DOMAIN_HI_ARG)
    .with_sql_example(
        "```sql\nSELECT s['group'], s['weight'] FROM (SELECT unnest(gen_spread('[0-10)', 5)) AS s); -- (0, 0.5), (5, 0.5)\n```",
    )
    .build()
});

/// Every analyst function, ready for `ctx.register_udf`.
pub fn generalized_udfs() -> Vec<ScalarUDF> {
    vec![
        ScalarUDF::from(GeneralizedBoundUdf::new(Bound::Lower)),
        ScalarUDF::from(GeneralizedBoundUdf::new(Bound::Upper)),
        ScalarUDF::from(GeneralizedBoundUdf::new(Bound::Mid)),
        ScalarUDF::from(GeneralizedSpreadUdf::default()),
    ]
}

/// The element type of `gen_spread`'s list: `{group BIGINT, weight DOUBLE}`.
pub fn spread_struct_fields() -> Fields {
    Fields::from(vec![
        Field::new("group", DataType::Int64, false),
        Field::new("weight", DataType::Float64, false),
    ])
}

fn spread_item_field() -> Arc<Field> {
    Arc::new(Field::new_list_field(
        DataType::Struct(spread_struct_fields()),
        false,
    ))
}

fn is_integer(t: &DataType) -> bool {
    t.is_integer() || *t == DataType::Null
}

/// Coerces `(value, <integers named in int_names>..., [domain_lo, domain_hi])`.
fn coerce(
    name: &str,
    usage: &str,
    int_names: &[&str],
    arg_types: &[DataType],
) -> Result<Vec<DataType>> {
    let fixed = 1 + int_names.len();
    if arg_types.len() != fixed && arg_types.len() != fixed + 2 {
        return plan_err!(
            "{name}() takes {fixed} or {} arguments: {usage}; got {}",
            fixed + 2,
            arg_types.len()
        );
    }
    let value = &arg_types[0];
    let value_ok = matches!(
        value,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    ) || value.is_integer();
    if !value_ok {
        return plan_err!(
            "{name}(): the value must be a released label (text) or an integer, got {value}"
        );
    }
    let mut names: Vec<&str> = int_names.to_vec();
    names.extend(["domain_lo", "domain_hi"]);
    for (t, n) in arg_types[1..].iter().zip(names) {
        if !is_integer(t) {
            return plan_err!("{name}(): argument '{n}' must be an integer, got {t}");
        }
    }
    let mut out = vec![DataType::Utf8];
    out.extend(std::iter::repeat_n(DataType::Int64, arg_types.len() - 1));
    Ok(out)
}

/// Evaluated arguments: the value as text and every integer argument as Int64.
struct Inputs {
    values: ArrayRef,
    ints: Vec<Int64Array>,
}

fn inputs(args: &ScalarFunctionArgs) -> Result<Inputs> {
    let arrays = ColumnarValue::values_to_arrays(&args.args)?;
    let values = cast(&arrays[0], &DataType::Utf8)?;
    let ints = arrays[1..]
        .iter()
        .map(|a| {
            Ok(cast(a, &DataType::Int64)?
                .as_primitive::<Int64Type>()
                .clone())
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Inputs { values, ints })
}

/// The domain of row `row` from the two trailing integer arguments (if given).
fn domain(name: &str, ints: &[Int64Array], first: usize, row: usize) -> Result<Option<(i64, i64)>> {
    if ints.len() < first + 2 {
        return Ok(None);
    }
    let (lo, hi) = (&ints[first], &ints[first + 1]);
    if lo.is_null(row) || hi.is_null(row) {
        return Ok(None);
    }
    let (lo, hi) = (lo.value(row), hi.value(row));
    if lo > hi {
        return exec_err!("{name}(): domain_lo {lo} is greater than domain_hi {hi}");
    }
    Ok(Some((lo, hi)))
}

/// The integers of row `row`'s value within its domain (`None` = NULL / empty).
fn integers_of(
    name: &str,
    inputs: &Inputs,
    first_domain: usize,
    row: usize,
) -> Result<Option<(i64, i64)>> {
    let text = inputs.values.as_string::<i32>();
    if text.is_null(row) {
        return Ok(None);
    }
    let value = match parse_generalized(text.value(row)) {
        Ok(v) => v,
        Err(e) => return exec_err!("{name}(): {e}"),
    };
    Ok(value.within(domain(name, &inputs.ints, first_domain, row)?))
}

impl ScalarUDFImpl for GeneralizedBoundUdf {
    fn name(&self) -> &str {
        self.bound.function_name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(self.doc())
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &self.doc().syntax_example, &[], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.bound {
            Bound::Lower | Bound::Upper => DataType::Int64,
            Bound::Mid => DataType::Float64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let inputs = inputs(&args)?;
        let rows = inputs.values.len();
        let array: ArrayRef =
            match self.bound {
                Bound::Lower | Bound::Upper => {
                    let mut out = Int64Builder::with_capacity(rows);
                    for row in 0..rows {
                        let set = integers_of(self.name(), &inputs, 0, row)?;
                        out.append_option(set.map(|(lo, hi)| {
                            if self.bound == Bound::Lower {
                                lo
                            } else {
                                hi
                            }
                        }));
                    }
                    Arc::new(out.finish())
                }
                Bound::Mid => {
                    let mut out = Float64Builder::with_capacity(rows);
                    for row in 0..rows {
                        let set = integers_of(self.name(), &inputs, 0, row)?;
                        out.append_option(set.map(|(lo, hi)| midpoint(lo, hi)));
                    }
                    Arc::new(out.finish())
                }
            };
        Ok(ColumnarValue::Array(array))
    }
}

impl ScalarUDFImpl for GeneralizedSpreadUdf {
    fn name(&self) -> &str {
        "gen_spread"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&GEN_SPREAD_DOC)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(
            self.name(),
            &GEN_SPREAD_DOC.syntax_example,
            &["width"],
            arg_types,
        )
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(spread_item_field()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let inputs = inputs(&args)?;
        let rows = inputs.values.len();
        let widths = &inputs.ints[0];
        let mut offsets: Vec<i32> = Vec::with_capacity(rows + 1);
        offsets.push(0);
        let mut groups: Vec<i64> = Vec::new();
        let mut weights: Vec<f64> = Vec::new();
        let mut valid: Vec<bool> = Vec::with_capacity(rows);
        for row in 0..rows {
            let set = if widths.is_null(row) {
                None
            } else {
                integers_of(self.name(), &inputs, 1, row)?
            };
            let is_null = inputs.values.is_null(row) || widths.is_null(row);
            valid.push(!is_null);
            if let Some((lo, hi)) = set {
                let parts = match spread(lo, hi, widths.value(row)) {
                    Ok(p) => p,
                    Err(e) => return exec_err!("gen_spread(): {e}"),
                };
                for (g, w) in parts {
                    groups.push(g);
                    weights.push(w);
                }
            }
            let Ok(end) = i32::try_from(groups.len()) else {
                return exec_err!("gen_spread(): result too large for one batch");
            };
            offsets.push(end);
        }
        let items = StructArray::try_new(
            spread_struct_fields(),
            vec![
                Arc::new(Int64Array::from(groups)) as ArrayRef,
                Arc::new(Float64Array::from(weights)) as ArrayRef,
            ],
            None,
        )?;
        let list = ListArray::try_new(
            spread_item_field(),
            OffsetBuffer::new(offsets.into()),
            Arc::new(items),
            Some(NullBuffer::from(valid)),
        )?;
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}
