//! Deterministic generator of NPS-shaped demo data.
//!
//! The IPA paper (Lee & Chung 2020) evaluates on the Korean National Patients Sample
//! (NPS): 1,361,000 hospital stays with six attributes. That data set is not public, so
//! this module synthesizes a table of the same shape whose stroke statistics reproduce the
//! "Original" columns of the paper's Tables 9–12 exactly at the default size.
//!
//! # Shape
//!
//! | column     | type  | domain |
//! |------------|-------|--------|
//! | `age`      | Int32 | 1..=100, skewed towards older patients |
//! | `sex`      | Utf8  | `"M"` / `"F"` |
//! | `los`      | Int32 | length of stay in days, 1..=400, mostly short with a long tail |
//! | `surgery`  | Utf8  | `"Y"` / `"N"` (about 12 % `"Y"`) |
//! | `location` | Int32 | one of the 16 region codes [`NPS_LOCATION_CODES`] (11, 21..=26, 31..=39) |
//! | `disease`  | Utf8  | ICD-10 code, one letter and three digits (`"I634"`, `"J189"`, ...) |
//!
//! No column has nulls. Diseases come from a fixed list of 628 plausible codes in 21
//! groups (roughly ICD-10 chapters, with stroke I60–I69 a group of its own), kept as data
//! in `disease_groups.csv` and `diseases.csv` next to this module; the group
//! mix depends on the age band, codes within a group follow a Zipf-like law, surgery is
//! likely for typically operated codes (cataract, appendicitis, fractures, caesarean
//! section, ...) and rare otherwise, stays are longer after surgery and from age 65, and
//! obstetric, gynaecological and prostate codes are tied to one sex. About 48 % of the
//! patients are male, about 1 % of the stays exceed 30 days. At the default size and
//! seed the table has 458,747 distinct `(age, sex, los, surgery, location, disease)`
//! combinations (72,365 distinct `(age, sex, los, surgery, location)`).
//!
//! # Stroke patients and the paper's tables
//!
//! A *stroke* record is one whose disease code starts with `I6` (ICD-10 I60–I69), which
//! is what the reference implementation's `disease.contains("I6")` selects for these
//! codes. Every stroke record with `surgery = 'N'` is planted from the tables below; every
//! other stroke record has `surgery = 'Y'`.
//!
//! * **Tables 9 and 10** ([`NPS_TABLE9_MALE_COUNTS`], [`NPS_TABLE10_FEMALE_COUNTS`]):
//!   number of stroke, no-surgery patients per sex and 5-year row. The row labelled `L`
//!   (5, 10, ..., 90) covers ages `[L − 5, L − 1]`: label 5 is ages 1..=4 (there is no
//!   age 0), label 90 is ages 85..=89. In SQL the label is
//!   `FLOOR(age / 5) * 5 + 5`. Within a row, ages are drawn uniformly.
//! * **No stroke, no-surgery patient is aged 90 or more**, since Tables 9–10 have no row
//!   for those ages.
//! * **Tables 11 and 12** ([`NPS_TABLE11_MALE_MEAN_LOS_TENTHS`],
//!   [`NPS_TABLE12_FEMALE_MEAN_LOS_TENTHS`]): mean length of stay of the same patients per
//!   sex and 10-year group, rounded to one decimal. The same upper-bound convention is
//!   used: the row labelled `L` (10, 20, ..., 90) covers ages `[L − 10, L − 1]`, i.e. the
//!   two 5-year rows `L − 5` and `L` of Tables 9–10. In SQL the label is
//!   `FLOOR(age / 10) * 10 + 10`.
//!
//! The upper-bound reading of Tables 11–12 is the one under which all four tables hold
//! together: the paper's nine 10-year labels 10..=90 then pair exactly with the eighteen
//! 5-year labels 5..=90 (the same pairing the paper's IPA column shows for Tables 9–10,
//! whose values are equal within each pair (5, 10), (15, 20), ...), and every group is
//! non-empty. The lower-bound reading (`L` = ages `[L, L + 9]`, as `FLOOR(age / 10) * 10`
//! would label it) cannot hold for label 90: ages 90..=99 have no stroke, no-surgery
//! patients under Tables 9–10, so that mean is undefined. The two readings also exclude
//! each other for the other labels, because they give the same patients different means
//! (male ages 10..=19 are label 10, mean 1.0, in one reading and label 20, mean 1.4, in
//! the other), so only one of them can be honoured.
//!
//! Lengths of stay of these patients are integers ≥ 1. For each 10-year group of `n`
//! patients the stays sum to `round(mean × n)` (half up), so the group mean rounds to the
//! table value; the stays are spread over several distinct values.
//!
//! # Other sizes
//!
//! For `rows` other than [`NPS_DEFAULT_ROWS`], each 5-year count is scaled to
//! `round(count × rows / 1_361_000)` (half up) and each stay total to
//! `round(mean × n)` of the scaled group size, so means still round to the tables when a
//! group keeps at least ten patients. Up to 1,296 rows every scaled count rounds to zero,
//! so small tables have no stroke, no-surgery records at all. Only the default size is
//! guaranteed to match the tables exactly.
//!
//! # Determinism and batching
//!
//! The rows depend only on `(rows, seed)`: `batch_size` only decides where the batches
//! are cut. All sampling is integer-based on a ChaCha8 stream seeded from `seed`, so the
//! output does not depend on the platform's floating-point library. `rows = 0` returns an
//! empty `Vec` (no batches); every returned batch is non-empty.

mod batch;
mod diseases;
mod model;
mod tables;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;
use rand::seq::{index, SliceRandom};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use batch::BatchWriter;
use diseases::disease_groups;
use model::Model;
use tables::stroke_rows;
pub use tables::{NPS_TABLE10_FEMALE_COUNTS, NPS_TABLE9_MALE_COUNTS};

/// Number of records of the paper's NPS data set, and the default size of the demo table.
pub const NPS_DEFAULT_ROWS: usize = 1_361_000;

/// Default generator seed (the NPS sample year).
pub const NPS_DEFAULT_SEED: u64 = 2011;

/// The 16 region codes of the `location` column: 11, 21..=26, 31..=39.
pub const NPS_LOCATION_CODES: [i32; 16] = [
    11, 21, 22, 23, 24, 25, 26, 31, 32, 33, 34, 35, 36, 37, 38, 39,
];

/// The demo's disease codes as a hierarchy in ARX layout: `value` (the ICD-10 code),
/// `level_1` (its group, e.g. `circulatory`) and `level_2` (`*`). Every code the demo data
/// can hold is a leaf: a public code list for the `disease` column, fixed by the demo's
/// compiled-in code table, not by any generated rows.
///
/// # Errors
///
/// An [`ArrowError`] if the compiled-in code table is malformed (the tests rule this out).
pub fn nps_disease_hierarchy() -> Result<RecordBatch, ArrowError> {
    let groups = disease_groups()?;
    let codes: Vec<(&str, &str)> = groups
        .iter()
        .flat_map(|g| g.codes.iter().map(|(code, _)| (*code, g.name)))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("value", DataType::Utf8, false),
        Field::new("level_1", DataType::Utf8, false),
        Field::new("level_2", DataType::Utf8, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter_values(codes.iter().map(|c| c.0))),
            Arc::new(StringArray::from_iter_values(codes.iter().map(|c| c.1))),
            Arc::new(StringArray::from_iter_values(codes.iter().map(|_| "*"))),
        ],
    )
}

/// Schema of the demo table: `age`, `sex`, `los`, `surgery`, `location`, `disease`, all
/// non-nullable.
pub fn nps_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("age", DataType::Int32, false),
        Field::new("sex", DataType::Utf8, false),
        Field::new("los", DataType::Int32, false),
        Field::new("surgery", DataType::Utf8, false),
        Field::new("location", DataType::Int32, false),
        Field::new("disease", DataType::Utf8, false),
    ]))
}

/// Generates `rows` NPS-shaped records from `seed`, in batches of at most `batch_size`
/// rows (the last one may be shorter).
///
/// The records depend only on `(rows, seed)`; see the module documentation for the
/// distributions and for how the stroke records follow the paper's Tables 9–12.
/// `rows = 0` returns an empty `Vec`.
///
/// # Errors
///
/// `batch_size = 0` is an [`ArrowError::InvalidArgumentError`]; building a batch can
/// only fail on an internal inconsistency. Generation stops with an error as soon as
/// `stopped()` says so (asked once per batch): the query that asked for the table was
/// cancelled.
pub fn generate_nps(
    rows: usize,
    seed: u64,
    batch_size: usize,
    stopped: &dyn Fn() -> bool,
) -> Result<Vec<RecordBatch>, ArrowError> {
    if batch_size == 0 {
        return Err(ArrowError::InvalidArgumentError(
            "generate_nps: batch_size must be at least 1".to_string(),
        ));
    }
    if rows == 0 {
        return Ok(Vec::new());
    }
    let model = Model::new(disease_groups()?);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);

    // Planted stroke, no-surgery records, placed at random positions. There are at most
    // 0.5 % of `rows` + 9 of them (none up to 1,296 rows), so the truncation never bites.
    let mut planted = stroke_rows(&model, rows, &mut rng);
    planted.truncate(rows);
    planted.shuffle(&mut rng);
    let mut positions = index::sample(&mut rng, rows, planted.len()).into_vec();
    positions.sort_unstable();
    let mut planted = positions.into_iter().zip(planted).peekable();

    let mut writer = BatchWriter::new(nps_schema(), rows, batch_size);
    for i in 0..rows {
        if i % batch_size == 0 && stopped() {
            return Err(ArrowError::ComputeError(
                "nps_demo(): cancelled: the query that asked for the table was stopped".to_string(),
            ));
        }
        let row = match planted.next_if(|(pos, _)| *pos == i) {
            Some((_, row)) => row,
            None => model.background_row(&mut rng),
        };
        writer.push(&row)?;
    }
    writer.finish()
}

/// One generated record.
#[derive(Clone, Copy, Debug)]
struct Row {
    age: i32,
    male: bool,
    los: i32,
    surgery: bool,
    location: i32,
    disease: &'static str,
}
