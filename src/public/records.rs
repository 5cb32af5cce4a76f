//! Which records a public release can use. A record whose quasi-identifier is NULL or not
//! a leaf of its (public) hierarchy, or whose sensitive value is NULL or not a leaf of the
//! sensitive column's hierarchy, is left out of a public release instead of failing it:
//! whether a record is kept depends on that record alone, so adding or removing one record
//! changes the kept table by at most that record, and every guarantee proven for
//! neighbouring tables holds for the kept ones. (Failing instead would tell the public
//! user that some record carries such a value, outside every mechanism.)

use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;

use crate::hierarchy::Hierarchy;

/// `batches` (phase 1's aggregate: the quasi-identifiers, then the sensitive columns, then
/// the count) without the rows a public release cannot use. `qi` has one hierarchy per
/// quasi-identifier; `sensitive` one optional hierarchy per sensitive column.
pub fn usable_records(
    batches: Vec<RecordBatch>,
    qi: &[&Hierarchy],
    sensitive: &[Option<&Hierarchy>],
) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        let mut keep = vec![true; batch.num_rows()];
        let checks = qi
            .iter()
            .map(|h| Some(*h))
            .chain(sensitive.iter().copied())
            .enumerate();
        for (column, hierarchy) in checks {
            let array = batch.column(column);
            let text = cast(array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            for (row, kept) in keep.iter_mut().enumerate() {
                if !*kept {
                    continue;
                }
                *kept = text.is_valid(row)
                    && hierarchy.is_none_or(|h| h.leaf_code(text.value(row)).is_some());
            }
        }
        if keep.iter().all(|&k| k) {
            out.push(batch);
        } else {
            out.push(filter_record_batch(&batch, &BooleanArray::from(keep))?);
        }
    }
    Ok(out)
}
