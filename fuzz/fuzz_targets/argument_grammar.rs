//! Fuzzes the argument grammar: binding `name => value` and positional arguments against
//! `anonymize`'s parameter list, every typed getter, the canonical cache-key text, and the
//! text grammars of the hierarchy builders (integer domains, interval levels, mask lengths).
//! Property: no input panics; every rejection is an error value.

#![no_main]

use arbitrary::Arbitrary;
use datafusion::common::ScalarValue;
use datafusion_anonymize::internals::{
    interval_hierarchy_rows, mask_hierarchy_rows, parse_integer_domain, IntervalLevel,
};
use datafusion_anonymize::internals::Hierarchy;
use datafusion_anonymize::internals::ParamValues;
use datafusion_anonymize::internals::ANONYMIZE_PARAMS;
use datafusion_anonymize::internals::{bind, CallArgs};
use libfuzzer_sys::fuzz_target;

/// Largest domain the target expands into hierarchy rows (bigger ones are legal but only
/// cost memory; the parser itself is still run on them).
const MAX_EXPANDED_DOMAIN: usize = 4096;

#[derive(Debug, Arbitrary)]
enum Value {
    Text(String),
    Int(i64),
    Int32(i32),
    UInt(u64),
    Float(f64),
    Bool(bool),
    Decimal(i128, u8, i8),
    Null,
}

impl Value {
    fn scalar(&self) -> ScalarValue {
        match self {
            Value::Text(s) => ScalarValue::Utf8(Some(s.clone())),
            Value::Int(x) => ScalarValue::Int64(Some(*x)),
            Value::Int32(x) => ScalarValue::Int32(Some(*x)),
            Value::UInt(x) => ScalarValue::UInt64(Some(*x)),
            Value::Float(x) => ScalarValue::Float64(Some(*x)),
            Value::Bool(b) => ScalarValue::Boolean(Some(*b)),
            // As the SQL planner builds decimals: precision 1..=38, scale 0..=precision, at
            // most `precision` digits (arrow's Display panics on a value wider than its
            // precision; planner casts check the precision, so SQL never produces one).
            Value::Decimal(v, p, s) => {
                let precision = 1 + p % 38;
                let scale = (s.unsigned_abs() % (precision + 1)) as i8;
                let value = v % 10i128.pow(u32::from(precision));
                ScalarValue::Decimal128(Some(value), precision, scale)
            }
            Value::Null => ScalarValue::Null,
        }
    }
}

#[derive(Debug, Arbitrary)]
struct Input {
    positional: Vec<Value>,
    named: Vec<(String, Value)>,
    domain: String,
    levels: Vec<String>,
    mask_values: Vec<String>,
    keep: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let call = CallArgs {
        positional: input.positional.iter().map(Value::scalar).collect(),
        named: input
            .named
            .iter()
            .map(|(n, v)| (n.clone(), v.scalar()))
            .collect(),
    };
    if let Ok(bound) = bind("anonymize", &ANONYMIZE_PARAMS, &["source"], call) {
        for param in ANONYMIZE_PARAMS.iter() {
            let _ = bound.has(param.name);
            let _ = bound.string(param.name);
            let _ = bound.f64(param.name);
            let _ = bound.u64(param.name);
            let _ = bound.bool(param.name);
        }
        let _ = bound.required_string("source");
        let _ = bound.names().count();
        if let Ok(values) =
            ParamValues::parse("anonymize", "anonymize", ANONYMIZE_PARAMS.iter(), bound.values())
        {
            let _ = values.canonical();
        }
    }

    let levels: Vec<IntervalLevel> = input
        .levels
        .iter()
        .filter_map(|l| IntervalLevel::parse(l).ok())
        .collect();
    if let Ok(domain) = parse_integer_domain(&input.domain) {
        assert!(!domain.is_empty());
        assert!(domain.windows(2).all(|w| w[0] < w[1]), "domain not sorted");
        if domain.len() <= MAX_EXPANDED_DOMAIN && !levels.is_empty() {
            if let Ok(rows) = interval_hierarchy_rows(&domain, &levels) {
                assert_eq!(rows.len(), domain.len());
                let _ = Hierarchy::from_rows("fuzz", &rows);
            }
        }
    }

    let keep: Vec<usize> = input.keep.iter().map(|&k| usize::from(k)).collect();
    if let Ok(rows) = mask_hierarchy_rows(&input.mask_values, &keep) {
        assert_eq!(rows.len(), input.mask_values.len());
        let _ = Hierarchy::from_rows("fuzz", &rows);
    }
});
