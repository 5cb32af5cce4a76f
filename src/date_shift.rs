//! Per-person date shifting (`date_shift => 'admission, discharge', max_days => 30` with
//! `person => 'patient_id'`, METHODS.md §9.6): every date of one person moved by the same
//! number of days, drawn from the person's id under the owner's secret key, so the
//! intervals between one person's events are kept and the real dates are hidden.
//!
//! The offset of a person is HMAC-SHA-256 under the owner's key of a message that names
//! this use, `max_days` and the person's id as text ([`shift_days`]): it is the same in
//! every release under that key and differs under another key, and without the key it
//! cannot be computed. It is masking, not a privacy model: the shifted dates are then
//! released by the method, which protects them as it protects any column (they are
//! shifted before any generalization).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Date64Type, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::hierarchy::dates::is_date_type;
use crate::pseudonym::PseudonymKey;

/// The largest `max_days` accepted: ten years.
pub const MAX_SHIFT_DAYS: u64 = 3_650;

/// What the MAC of an offset starts with, so that no offset is ever a pseudonym's bits.
const DOMAIN: &[u8] = b"datafusion-anonymize date shift\0";

/// The days a person's dates move: uniform over `-max_days..=max_days` (up to a bias below
/// 2⁻⁵⁰ from reducing 64 bits), a function of the key, `max_days` and the person only.
pub fn shift_days(key: &PseudonymKey, max_days: u32, person: &str) -> i64 {
    let digest = key.mac(&[DOMAIN, &max_days.to_be_bytes(), person.as_bytes()]);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let width = 2 * u64::from(max_days) + 1;
    (u64::from_be_bytes(first) % width) as i64 - i64::from(max_days)
}

/// The shifted dates of one column, for a request: the columns named and how far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateShift {
    /// The date or timestamp columns shifted.
    pub columns: Vec<String>,
    /// The largest shift, in days, either way.
    pub max_days: u32,
    /// The column identifying a person.
    pub person: String,
}

impl DateShift {
    /// The `date_shift` metadata value.
    pub fn describe(&self) -> String {
        format!(
            "{} moved by one offset per {} in -{}..{} days (HMAC-SHA-256 of the person under the owner's key): intervals within a person are kept; masking, not a privacy guarantee",
            self.columns.join(", "),
            self.person,
            self.max_days,
            self.max_days
        )
    }

    /// The expression of `column` shifted by its row's person.
    pub fn shifted(&self, key: &PseudonymKey, column: Expr, person: Expr) -> Expr {
        ScalarUDF::new_from_impl(DateShiftUdf {
            key: key.clone(),
            max_days: self.max_days,
            signature: Signature::any(2, Volatility::Immutable),
        })
        .call(vec![column, person])
    }
}

/// Checks `max_days` (1 ..= [`MAX_SHIFT_DAYS`]).
pub fn check_max_days(function: &str, max_days: u64) -> Result<u32> {
    if !(1..=MAX_SHIFT_DAYS).contains(&max_days) {
        return plan_err!(
            "{function}(): max_days must be between 1 and {MAX_SHIFT_DAYS} days, got {max_days}"
        );
    }
    Ok(max_days as u32)
}

/// `anonymize_date_shift(date, person)`: the date moved by the person's offset; NULL when
/// the date or the person is NULL (a date is never released unshifted). Never registered:
/// only the view a release reads calls it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct DateShiftUdf {
    key: PseudonymKey,
    max_days: u32,
    signature: Signature,
}

impl DateShiftUdf {
    /// Every value of `dates` moved by its person's offset times `per_day` units.
    fn shift<T: ArrowPrimitiveType>(
        &self,
        dates: &ArrayRef,
        persons: &datafusion::arrow::array::StringArray,
        per_day: i64,
    ) -> Result<ArrayRef>
    where
        T::Native: TryFrom<i64> + Into<i64>,
    {
        let dates = dates.as_primitive::<T>();
        let mut out: Vec<Option<T::Native>> = Vec::with_capacity(dates.len());
        let mut last: Option<(&str, i64)> = None;
        for row in 0..dates.len() {
            if dates.is_null(row) || persons.is_null(row) {
                out.push(None);
                continue;
            }
            let person = persons.value(row);
            let days = match last {
                Some((p, d)) if p == person => d,
                _ => {
                    let d = shift_days(&self.key, self.max_days, person);
                    last = Some((person, d));
                    d
                }
            };
            let value: i64 = dates.value(row).into();
            let moved = days
                .checked_mul(per_day)
                .and_then(|delta| value.checked_add(delta))
                .and_then(|v| T::Native::try_from(v).ok());
            match moved {
                Some(v) => out.push(Some(v)),
                None => return exec_err!("anonymize(): a shifted date is out of range"),
            }
        }
        let array: PrimitiveArray<T> = out.into_iter().collect();
        let data_type = dates.data_type().clone();
        Ok(Arc::new(array.with_data_type(data_type)))
    }
}

impl ScalarUDFImpl for DateShiftUdf {
    fn name(&self) -> &str {
        "anonymize_date_shift"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t) if is_date_type(t) => Ok(t.clone()),
            other => plan_err!("anonymize_date_shift takes a date or timestamp, got {other:?}"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (dates, persons) = match &args.args[..] {
            [dates, persons] => (
                dates.to_array(args.number_rows)?,
                persons.to_array(args.number_rows)?,
            ),
            _ => return plan_err!("anonymize_date_shift takes two arguments"),
        };
        let persons = cast(&persons, &DataType::Utf8)?;
        let persons = persons.as_string::<i32>();
        const DAY_S: i64 = 86_400;
        let shifted = match dates.data_type() {
            DataType::Date32 => self.shift::<Date32Type>(&dates, persons, 1)?,
            DataType::Date64 => self.shift::<Date64Type>(&dates, persons, DAY_S * 1000)?,
            DataType::Timestamp(unit, _) => match unit {
                TimeUnit::Second => self.shift::<TimestampSecondType>(&dates, persons, DAY_S)?,
                TimeUnit::Millisecond => {
                    self.shift::<TimestampMillisecondType>(&dates, persons, DAY_S * 1_000)?
                }
                TimeUnit::Microsecond => {
                    self.shift::<TimestampMicrosecondType>(&dates, persons, DAY_S * 1_000_000)?
                }
                TimeUnit::Nanosecond => {
                    self.shift::<TimestampNanosecondType>(&dates, persons, DAY_S * 1_000_000_000)?
                }
            },
            other => {
                return plan_err!("anonymize_date_shift takes a date or timestamp, got {other}")
            }
        };
        Ok(ColumnarValue::Array(shifted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(byte: u8) -> PseudonymKey {
        PseudonymKey::new(&[byte; 32]).expect("a key")
    }

    /// Over many persons the offsets stay within ±max_days, take every value of the range,
    /// and are spread evenly: with 42 000 persons and 61 values, each value's count is
    /// within 5 standard deviations of 42 000 / 61 (a false failure below 10⁻⁴ overall).
    #[test]
    fn offsets_cover_the_range_evenly() {
        let key = key(3);
        let mut counts = [0u32; 61];
        let persons = 42_000;
        for p in 0..persons {
            let d = shift_days(&key, 30, &format!("patient-{p}"));
            assert!((-30..=30).contains(&d), "{d}");
            counts[(d + 30) as usize] += 1;
        }
        let mean = persons as f64 / 61.0;
        let sd = (mean * (1.0 - 1.0 / 61.0)).sqrt();
        for (i, &c) in counts.iter().enumerate() {
            assert!(
                (f64::from(c) - mean).abs() < 5.0 * sd,
                "offset {} drawn {c} times, expected about {mean:.0}",
                i as i64 - 30
            );
        }
    }

    proptest! {
        /// Within ±max_days, the same under the same key, and one person's dates all move
        /// by the same offset (so every interval within a person is kept).
        #[test]
        fn one_offset_per_person_within_the_bound(
            person in "[a-z0-9]{1,12}",
            max_days in 1u32..=3650,
            days in proptest::collection::vec(-20_000i32..40_000, 1..20),
        ) {
            let k = key(9);
            let d = shift_days(&k, max_days, &person);
            prop_assert!(d.abs() <= i64::from(max_days));
            prop_assert_eq!(d, shift_days(&k, max_days, &person));
            let udf = DateShiftUdf { key: k, max_days, signature: Signature::any(2, Volatility::Immutable) };
            let dates: ArrayRef = Arc::new(datafusion::arrow::array::Date32Array::from(days.clone()));
            let persons = datafusion::arrow::array::StringArray::from(vec![person.as_str(); days.len()]);
            let moved = udf.shift::<Date32Type>(&dates, &persons, 1).expect("shifted");
            let moved = moved.as_primitive::<Date32Type>();
            for (i, original) in days.iter().enumerate() {
                prop_assert_eq!(i64::from(moved.value(i)) - i64::from(*original), d);
            }
        }
    }

    /// Another key gives other offsets: of 1000 persons, at most a few (1/61 each by
    /// chance; at most 60 allowed, a false failure below 10⁻⁹) keep their offset.
    #[test]
    fn another_key_gives_other_offsets() {
        let (a, b) = (key(1), key(2));
        let same = (0..1000)
            .filter(|p| {
                let p = p.to_string();
                shift_days(&a, 30, &p) == shift_days(&b, 30, &p)
            })
            .count();
        assert!(
            same < 60,
            "{same} of 1000 persons kept their offset under another key"
        );
    }

    /// Timestamps move by whole days and keep their time of day; NULL persons give NULL.
    #[test]
    fn timestamps_move_by_whole_days_and_null_persons_give_null() {
        let k = key(5);
        let udf = DateShiftUdf {
            key: k.clone(),
            max_days: 30,
            signature: Signature::any(2, Volatility::Immutable),
        };
        let at = 1_552_557_600_000_000i64; // 2019-03-14 10:00:00 in microseconds
        let dates: ArrayRef = Arc::new(datafusion::arrow::array::TimestampMicrosecondArray::from(
            vec![at, at],
        ));
        let persons = datafusion::arrow::array::StringArray::from(vec![Some("p1"), None]);
        let moved = udf
            .shift::<TimestampMicrosecondType>(&dates, &persons, 86_400_000_000)
            .expect("shifted");
        let moved = moved.as_primitive::<TimestampMicrosecondType>();
        let d = shift_days(&k, 30, "p1");
        assert_eq!(moved.value(0) - at, d * 86_400_000_000);
        assert!(moved.is_null(1));
    }
}
