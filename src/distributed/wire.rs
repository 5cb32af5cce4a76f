//! The bytes a shipped table travels as: Arrow IPC streams behind a short header.
//!
//! A release travels as its released histogram, labels and sensitive values — memory
//! proportional to the histogram, never to the released row count — and is expanded into
//! rows where it is scanned. Any other table travels as its batches.

use std::io::Cursor;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt32Type, UInt64Type};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::common::{internal_datafusion_err, internal_err, Result};

use crate::release::{ReleasedHistogram, ReleasedRows, ReleasedRowsParts};
use crate::tables::shipped::Shipped;

/// First bytes of every encoded table (name and format version).
pub const MAGIC: &[u8; 8] = b"DFANONW1";
const KIND_BATCHES: u8 = 0;
const KIND_RELEASE: u8 = 1;

/// Encodes `shipped` (header, then its IPC streams).
pub fn encode(shipped: &Shipped, buf: &mut Vec<u8>) -> Result<()> {
    buf.extend_from_slice(MAGIC);
    match shipped {
        Shipped::Batches { schema, batches } => {
            buf.push(KIND_BATCHES);
            put_stream(buf, schema, batches)
        }
        Shipped::Release(rows) => {
            buf.push(KIND_RELEASE);
            let parts = rows.to_parts();
            let h = &parts.histogram;
            put_stream(buf, &parts.schema, &[])?;
            put_array(buf, u64s(parts.indices.iter().map(|&i| i as u64)))?;
            put_array(buf, u64s(h.levels.iter().map(|&l| l as u64)))?;
            put_array(buf, u64s(h.class_offsets.iter().map(|&o| o as u64)))?;
            put_array(buf, Arc::new(UInt32Array::from(h.values.clone())))?;
            put_array(buf, Arc::new(UInt64Array::from(h.counts.clone())))?;
            for codes in &h.class_codes {
                put_array(buf, Arc::new(UInt32Array::from(codes.clone())))?;
            }
            for labels in &parts.labels {
                put_array(buf, labels.clone())?;
            }
            put_array(buf, u64s([parts.values.len() as u64]))?;
            for values in &parts.values {
                put_array(buf, values.clone())?;
            }
            Ok(())
        }
    }
}

/// Whether `buf` holds a table encoded by [`encode`].
pub fn is_encoded(buf: &[u8]) -> bool {
    buf.starts_with(MAGIC)
}

/// Decodes what [`encode`] wrote; malformed bytes give an error, never a panic.
pub fn decode(buf: &[u8]) -> Result<Shipped> {
    let Some(rest) = buf.strip_prefix(MAGIC.as_slice()) else {
        return internal_err!("not an encoded anonymization table");
    };
    let (&kind, rest) = rest
        .split_first()
        .ok_or_else(|| internal_datafusion_err!("encoded table: no kind"))?;
    let mut reader = Reader { rest };
    match kind {
        KIND_BATCHES => {
            let (schema, batches) = reader.stream()?;
            Ok(Shipped::Batches {
                schema,
                batches: Arc::new(batches),
            })
        }
        KIND_RELEASE => {
            let (schema, _) = reader.stream()?;
            let indices = to_usizes(&reader.array()?)?;
            let levels = to_usizes(&reader.array()?)?;
            let class_offsets = to_usizes(&reader.array()?)?;
            let values = u32s(&reader.array()?)?;
            let counts = reader.array()?;
            let counts = counts
                .as_primitive_opt::<UInt64Type>()
                .ok_or_else(|| internal_datafusion_err!("encoded release: counts"))?
                .values()
                .to_vec();
            let attrs = levels.len();
            let mut class_codes = Vec::with_capacity(attrs);
            for _ in 0..attrs {
                class_codes.push(u32s(&reader.array()?)?);
            }
            let mut labels = Vec::with_capacity(attrs);
            for _ in 0..attrs {
                labels.push(reader.array()?);
            }
            let value_columns = to_usizes(&reader.array()?)?;
            let Some(&value_columns) = value_columns.first() else {
                return internal_err!("encoded release: no sensitive column count");
            };
            let mut value_arrays = Vec::new();
            for _ in 0..value_columns {
                value_arrays.push(reader.array()?);
            }
            let histogram = ReleasedHistogram {
                levels,
                class_codes,
                class_offsets,
                values,
                counts,
            };
            let rows = ReleasedRows::from_parts(ReleasedRowsParts {
                histogram: Arc::new(histogram),
                labels,
                values: value_arrays,
                indices,
                schema,
            })?;
            Ok(Shipped::Release(rows))
        }
        other => internal_err!("encoded table: unknown kind {other}"),
    }
}

fn u64s(values: impl IntoIterator<Item = u64>) -> ArrayRef {
    Arc::new(UInt64Array::from_iter_values(values))
}

fn to_usizes(array: &ArrayRef) -> Result<Vec<usize>> {
    let array = array
        .as_primitive_opt::<UInt64Type>()
        .ok_or_else(|| internal_datafusion_err!("encoded release: expected UInt64"))?;
    array
        .values()
        .iter()
        .map(|&v| {
            usize::try_from(v)
                .map_err(|_| internal_datafusion_err!("encoded release: {v} too large"))
        })
        .collect()
}

fn u32s(array: &ArrayRef) -> Result<Vec<u32>> {
    Ok(array
        .as_primitive_opt::<UInt32Type>()
        .ok_or_else(|| internal_datafusion_err!("encoded release: expected UInt32"))?
        .values()
        .to_vec())
}

/// Appends one array as a length-prefixed IPC stream of a one-column batch.
fn put_array(buf: &mut Vec<u8>, array: ArrayRef) -> Result<()> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "a",
        array.data_type().clone(),
        array.null_count() > 0 || *array.data_type() == DataType::Null,
    )]));
    let batch = RecordBatch::try_new(schema.clone(), vec![array])?;
    put_stream(buf, &schema, &[batch])
}

/// Appends a length-prefixed IPC stream of `batches` under `schema`.
fn put_stream(buf: &mut Vec<u8>, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<()> {
    let mut stream = Vec::new();
    {
        let mut writer = StreamWriter::try_new(&mut stream, schema)?;
        for batch in batches {
            writer.write(batch)?;
        }
        writer.finish()?;
    }
    buf.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    buf.extend_from_slice(&stream);
    Ok(())
}

/// Reads the length-prefixed streams [`put_stream`] wrote, in order.
struct Reader<'a> {
    rest: &'a [u8],
}

impl Reader<'_> {
    fn stream(&mut self) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let (len, rest) = self
            .rest
            .split_first_chunk::<8>()
            .ok_or_else(|| internal_datafusion_err!("encoded table: truncated"))?;
        let len = usize::try_from(u64::from_le_bytes(*len))
            .ok()
            .filter(|&l| l <= rest.len())
            .ok_or_else(|| internal_datafusion_err!("encoded table: truncated stream"))?;
        let (stream, rest) = rest.split_at(len);
        self.rest = rest;
        let reader = StreamReader::try_new(Cursor::new(stream), None)?;
        let schema = reader.schema();
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
        Ok((schema, batches))
    }

    fn array(&mut self) -> Result<ArrayRef> {
        let (_, batches) = self.stream()?;
        match batches.as_slice() {
            [batch] if batch.num_columns() == 1 => Ok(batch.column(0).clone()),
            _ => internal_err!("encoded table: expected one array"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::Hierarchy;
    use crate::release::SUPPRESSED;
    use crate::testing::rows;
    use datafusion::arrow::array::Int64Array;

    fn release() -> ReleasedRows {
        let h = Hierarchy::from_rows(
            "x",
            &rows(&[&["a", "ab", "*"], &["b", "ab", "*"], &["c", "c", "*"]]),
        )
        .unwrap();
        let mut histogram = ReleasedHistogram::new(vec![1], 1);
        histogram.push_class(&[0], &[(0, 9000), (2, 1)], &[1, 2]);
        histogram.push_class(&[1], &[(1, 4)], &[]);
        histogram.push_class(&[SUPPRESSED], &[(0, 3)], &[0]);
        let values: ArrayRef = Arc::new(Int64Array::from(vec![Some(10), None, Some(30)]));
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Utf8, false),
            Field::new("v", DataType::Int64, true),
        ]));
        ReleasedRows::new(Arc::new(histogram), &[&h], &[values], &schema).unwrap()
    }

    /// A release comes back with the same rows, projected or not; batches come back as
    /// they went.
    #[test]
    fn round_trips_releases_and_batches() {
        let rows = release();
        for shipped in [
            rows.clone(),
            rows.project(&[1]).unwrap(),
            rows.project(&[]).unwrap(),
        ] {
            let mut buf = Vec::new();
            encode(&Shipped::Release(shipped.clone()), &mut buf).unwrap();
            assert!(is_encoded(&buf));
            let Shipped::Release(back) = decode(&buf).unwrap() else {
                panic!("a release decodes as a release")
            };
            assert_eq!(back.collect().unwrap(), shipped.collect().unwrap());
            assert_eq!(back.schema(), shipped.schema());
        }
        let batches = rows.collect().unwrap();
        let shipped = Shipped::Batches {
            schema: rows.schema().clone(),
            batches: Arc::new(batches.clone()),
        };
        let mut buf = Vec::new();
        encode(&shipped, &mut buf).unwrap();
        let Shipped::Batches {
            schema,
            batches: back,
        } = decode(&buf).unwrap()
        else {
            panic!("batches decode as batches")
        };
        assert_eq!(&schema, rows.schema());
        assert_eq!(*back, batches);
    }

    /// Every truncation and a corrupted class code give errors, never panics or rows.
    #[test]
    fn malformed_bytes_are_refused() {
        let mut buf = Vec::new();
        encode(&Shipped::Release(release()), &mut buf).unwrap();
        for cut in (0..buf.len()).step_by(7) {
            assert!(decode(&buf[..cut]).is_err(), "truncated at {cut}");
        }
        // Class code 1 of the one attribute: point it past the labels.
        let parts = release().to_parts();
        let mut bad = (*parts.histogram).clone();
        bad.class_codes[0][1] = 7;
        let bad = ReleasedRowsParts {
            histogram: Arc::new(bad),
            ..parts
        };
        let err = ReleasedRows::from_parts(bad).unwrap_err().to_string();
        assert!(err.contains("class code beyond the labels"), "{err}");
    }
}
