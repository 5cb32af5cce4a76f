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
//! groups (roughly ICD-10 chapters, with stroke I60–I69 a group of its own); the group
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

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int32Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;
use rand::seq::{index, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Number of records of the paper's NPS data set, and the default size of the demo table.
pub const NPS_DEFAULT_ROWS: usize = 1_361_000;

/// Default generator seed (the NPS sample year).
pub const NPS_DEFAULT_SEED: u64 = 2011;

/// The 16 region codes of the `location` column: 11, 21..=26, 31..=39.
pub const NPS_LOCATION_CODES: [i32; 16] = [
    11, 21, 22, 23, 24, 25, 26, 31, 32, 33, 34, 35, 36, 37, 38, 39,
];

/// Table 9, "Original" column: male stroke patients without surgery per 5-year row.
///
/// Index `i` is the row labelled `5 (i + 1)`, covering ages `[5 i, 5 i + 4]` (ages
/// 1..=4 for `i = 0`).
pub const NPS_TABLE9_MALE_COUNTS: [u32; 18] = [
    1, 2, 1, 9, 12, 13, 27, 44, 104, 205, 341, 396, 472, 442, 430, 360, 197, 78,
];

/// Table 10, "Original" column: female stroke patients without surgery per 5-year row,
/// indexed as [`NPS_TABLE9_MALE_COUNTS`].
pub const NPS_TABLE10_FEMALE_COUNTS: [u32; 18] = [
    0, 2, 7, 8, 4, 6, 10, 26, 63, 102, 178, 231, 279, 326, 457, 525, 445, 243,
];

/// Table 11, "Original" column, in tenths of a day: mean length of stay of male stroke
/// patients without surgery per 10-year row.
///
/// Index `j` is the row labelled `10 (j + 1)`, covering ages `[10 j, 10 j + 9]` (ages
/// 1..=9 for `j = 0`), i.e. rows `2 j` and `2 j + 1` of [`NPS_TABLE9_MALE_COUNTS`].
pub const NPS_TABLE11_MALE_MEAN_LOS_TENTHS: [u32; 9] = [10, 14, 21, 27, 34, 40, 36, 43, 58];

/// Table 12, "Original" column, in tenths of a day: mean length of stay of female stroke
/// patients without surgery per 10-year row, indexed as
/// [`NPS_TABLE11_MALE_MEAN_LOS_TENTHS`].
pub const NPS_TABLE12_FEMALE_MEAN_LOS_TENTHS: [u32; 9] = [30, 30, 77, 17, 27, 35, 35, 56, 80];

/// Longest stay in days.
const MAX_LOS: i32 = 400;

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
/// only fail on an internal inconsistency.
pub fn generate_nps(
    rows: usize,
    seed: u64,
    batch_size: usize,
) -> Result<Vec<RecordBatch>, ArrowError> {
    if batch_size == 0 {
        return Err(ArrowError::InvalidArgumentError(
            "generate_nps: batch_size must be at least 1".to_string(),
        ));
    }
    if rows == 0 {
        return Ok(Vec::new());
    }
    let model = Model::new();
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

/// Scales a table count to `rows` records: `round(count × rows / NPS_DEFAULT_ROWS)`, half up.
fn scale_count(count: u32, rows: usize) -> usize {
    let d = NPS_DEFAULT_ROWS as u128;
    let scaled = (u128::from(count) * rows as u128 * 2 + d) / (2 * d);
    usize::try_from(scaled).unwrap_or(usize::MAX)
}

/// Total stay of `n` patients whose mean should round to `tenths / 10`: `round(mean × n)`,
/// half up, kept within `[n, 400 n]`.
fn target_los_sum(tenths: u32, n: usize) -> u64 {
    let n = n as u64;
    let sum = (u64::from(tenths) * n + 5) / 10;
    sum.clamp(n, n * MAX_LOS as u64)
}

/// The planted stroke, no-surgery records of Tables 9–12, scaled to `rows`.
fn stroke_rows(model: &Model, rows: usize, rng: &mut ChaCha8Rng) -> Vec<Row> {
    let mut out = Vec::new();
    let tables = [
        (
            true,
            &NPS_TABLE9_MALE_COUNTS,
            &NPS_TABLE11_MALE_MEAN_LOS_TENTHS,
        ),
        (
            false,
            &NPS_TABLE10_FEMALE_COUNTS,
            &NPS_TABLE12_FEMALE_MEAN_LOS_TENTHS,
        ),
    ];
    for (male, counts, means) in tables {
        for (decade, &tenths) in means.iter().enumerate() {
            let mut ages = Vec::new();
            for row in [2 * decade, 2 * decade + 1] {
                let lo = (5 * row as i32).max(1);
                let hi = 5 * row as i32 + 4;
                for _ in 0..scale_count(counts[row], rows) {
                    ages.push(rng.random_range(lo..=hi));
                }
            }
            let total = target_los_sum(tenths, ages.len());
            let stays = allocate_los(model, rng, ages.len(), total);
            for (age, los) in ages.into_iter().zip(stays) {
                out.push(Row {
                    age,
                    male,
                    los,
                    surgery: false,
                    location: model.location(rng),
                    disease: model.stroke_code(rng),
                });
            }
        }
    }
    out
}

/// `n` stays of at least one and at most [`MAX_LOS`] days summing exactly to `total`
/// (which must lie in `[n, 400 n]`), spread like realistic stays.
fn allocate_los(model: &Model, rng: &mut ChaCha8Rng, n: usize, total: u64) -> Vec<i32> {
    if n == 0 {
        return Vec::new();
    }
    let extra = total.saturating_sub(n as u64);
    // Shape weights drawn from a medium stay profile; the extra days are shared in
    // proportion to them.
    let weights: Vec<u64> = (0..n)
        .map(|_| model.los_profiles[2].sample(rng) as u64 + 1)
        .collect();
    let sum_w: u64 = weights.iter().sum();
    let cap = (MAX_LOS - 1) as u64;
    let mut given = 0u64;
    let mut stays: Vec<i32> = weights
        .iter()
        .map(|&w| {
            let share = (u128::from(extra) * u128::from(w) / u128::from(sum_w)) as u64;
            let share = share.min(cap);
            given += share;
            1 + share as i32
        })
        .collect();
    // Hand out the remaining days one at a time; `total <= 400 n` makes this terminate.
    let mut left = extra - given;
    while left > 0 {
        let i = rng.random_range(0..n);
        if stays[i] < MAX_LOS {
            stays[i] += 1;
            left -= 1;
        }
    }
    stays
}

/// Integer-weighted discrete distribution sampled by binary search on cumulative weights.
struct Sampler {
    cumulative: Vec<u64>,
}

impl Sampler {
    /// A sampler over indices `0..weights.len()`; the total weight must be positive.
    fn new(weights: impl IntoIterator<Item = u64>) -> Self {
        let mut acc = 0u64;
        let cumulative = weights
            .into_iter()
            .map(|w| {
                acc += w;
                acc
            })
            .collect();
        Self { cumulative }
    }

    fn sample(&self, rng: &mut ChaCha8Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0);
        debug_assert!(total > 0, "sampler with zero total weight");
        let x = rng.random_range(0..total.max(1));
        self.cumulative.partition_point(|&c| c <= x)
    }
}

/// Which sexes a disease group applies to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sexes {
    Both,
    Male,
    Female,
}

/// A group of disease codes with shared behaviour.
struct Chapter {
    /// Codes, most frequent first; the k-th code (from 0) has weight ∝ 1 / (k + 1)^2.5.
    codes: &'static [&'static str],
    /// Relative share of hospital stays.
    share: u64,
    /// Relative frequency per age band (1–14, 15–39, 40–64, 65–79, 80+), in percent.
    age_mult: [u64; 5],
    /// Probability of surgery for codes not in [`SURGICAL_CODES`], per mille.
    surgery_permille: u32,
    /// Base stay profile, an index into the stay profiles (0 = shortest, 4 = longest).
    los_profile: usize,
    /// Sexes the codes apply to.
    sexes: Sexes,
    /// Stroke codes (I60–I69): non-planted records with these codes always have surgery.
    stroke: bool,
}

/// Codes usually treated by an operation (cataract, appendicitis, gallstones, hernia,
/// fractures, joint replacement, resectable cancers, caesarean section, ...).
const SURGICAL_CODES: &[&str] = &[
    "H251", "H259", "H250", "H269", "H268", "H330", "H335", "H401", "H431", "H500", "H660", "H651",
    "K358", "K359", "K350", "K802", "K800", "K801", "K803", "K805", "K810", "K409", "K402", "K429",
    "K439", "K610", "K603", "K621", "K635", "K010", "K011", "K565", "K566", "S720", "S721", "S722",
    "S525", "S526", "S520", "S528", "S822", "S823", "S825", "S826", "S828", "S820", "S821", "S324",
    "S320", "S422", "S423", "S424", "S427", "S620", "S626", "S628", "S832", "S835", "S836", "S925",
    "S934", "T840", "T845", "T846", "M171", "M170", "M179", "M169", "M160", "M480", "M751", "M232",
    "M233", "M235", "M653", "M654", "C509", "C169", "C189", "C187", "C220", "C341", "C343", "C182",
    "C186", "C184", "C162", "C160", "C165", "C539", "C541", "C549", "C679", "D126", "D125", "D135",
    "D259", "D250", "D271", "N800", "N801", "N832", "N830", "N840", "D069", "O820", "O821", "O829",
    "O034", "O049", "N400", "N433", "N471", "N209", "N132", "I710", "I712", "I714", "I702", "I739",
    "I830", "I839", "I849", "J342", "J350", "J352", "J353", "J320", "J324", "J329", "L050", "L720",
    "L600", "Q210", "Q211", "Q250", "Q531", "Q654", "Q381", "Q400", "Q431", "G560", "G571",
];

/// Probability of surgery for [`SURGICAL_CODES`], per mille.
const SURGICAL_PERMILLE: u32 = 480;

/// Share of male patients per age band, per mille, for codes that apply to both sexes.
const MALE_PERMILLE: [u32; 5] = [550, 540, 540, 500, 400];

/// Relative frequency of hospital stays per year of age, by 5-year band
/// (ages 0–4, 5–9, ..., 95–99, 100).
const AGE_BAND_WEIGHTS: [u64; 21] = [
    60, 35, 25, 30, 40, 50, 55, 55, 60, 65, 75, 75, 70, 70, 75, 70, 50, 25, 10, 3, 1,
];

/// Relative frequency of the region codes in [`NPS_LOCATION_CODES`] (roughly population).
const LOCATION_WEIGHTS: [u64; 16] = [
    260, 75, 55, 45, 35, 35, 15, 215, 20, 20, 25, 30, 25, 35, 50, 10,
];

/// Stay profiles: geometric head over 1..=30 days with ratio `num / den`, and a tail over
/// 31..=400 days with weight ∝ 1 / day² holding the given share (per mille).
const LOS_PROFILES: [(u64, u64, u64); 5] = [
    (25, 100, 1),
    (40, 100, 3),
    (55, 100, 8),
    (70, 100, 20),
    (85, 100, 60),
];

/// Age band used for the disease mix and sex ratio.
fn age_band(age: i32) -> usize {
    match age {
        ..=14 => 0,
        15..=39 => 1,
        40..=64 => 2,
        65..=79 => 3,
        _ => 4,
    }
}

/// Precomputed samplers.
struct Model {
    /// Every disease code, with the index of its chapter and its surgery rate (per mille).
    codes: Vec<(&'static str, usize, u32)>,
    /// Disease mix per age band.
    disease_by_band: Vec<Sampler>,
    /// The stroke codes, and their mix for the planted records.
    stroke_codes: Vec<&'static str>,
    stroke_mix: Sampler,
    /// Age distribution; index 0 is age 1.
    ages: Sampler,
    /// Region mix, indexing [`NPS_LOCATION_CODES`].
    locations: Sampler,
    /// Stay distributions; index 0 is one day.
    los_profiles: Vec<Sampler>,
}

/// Weight of the k-th code of a chapter (from 0), before the chapter share:
/// `10^9 / (k + 1)^2.5`, rounded down.
fn zipf_weight(k: usize) -> u64 {
    let r = k as u64 + 1;
    // (r * 10^6).isqrt() = 1000 √r, exactly rounded down.
    1_000_000_000_000 / (r * r * (r * 1_000_000).isqrt())
}

impl Model {
    fn new() -> Self {
        let mut codes = Vec::new();
        for (c, chapter) in CHAPTERS.iter().enumerate() {
            codes.extend(chapter.codes.iter().map(|&code| {
                let rate = if chapter.stroke {
                    1000
                } else if SURGICAL_CODES.contains(&code) {
                    SURGICAL_PERMILLE
                } else {
                    chapter.surgery_permille
                };
                (code, c, rate)
            }));
        }
        let chapter_norm: Vec<u64> = CHAPTERS
            .iter()
            .map(|ch| (0..ch.codes.len()).map(zipf_weight).sum::<u64>())
            .collect();
        let disease_by_band = (0..5)
            .map(|band| {
                Sampler::new(CHAPTERS.iter().enumerate().flat_map(|(c, ch)| {
                    let norm = chapter_norm[c].max(1);
                    let chapter_weight = ch.share * ch.age_mult[band];
                    (0..ch.codes.len()).map(move |k| {
                        let w = u128::from(chapter_weight) * u128::from(zipf_weight(k)) * 1_000_000
                            / u128::from(norm);
                        u64::try_from(w).unwrap_or(u64::MAX)
                    })
                }))
            })
            .collect();
        let stroke_codes: Vec<&'static str> = CHAPTERS
            .iter()
            .filter(|ch| ch.stroke)
            .flat_map(|ch| ch.codes.iter().copied())
            .collect();
        let stroke_mix = Sampler::new((0..stroke_codes.len()).map(zipf_weight));
        let ages = Sampler::new((1..=100usize).map(|age| AGE_BAND_WEIGHTS[age / 5]));
        let locations = Sampler::new(LOCATION_WEIGHTS);
        let los_profiles = LOS_PROFILES
            .iter()
            .map(|&(num, den, tail)| Sampler::new(los_weights(num, den, tail)))
            .collect();
        Self {
            codes,
            disease_by_band,
            stroke_codes,
            stroke_mix,
            ages,
            locations,
            los_profiles,
        }
    }

    fn location(&self, rng: &mut ChaCha8Rng) -> i32 {
        NPS_LOCATION_CODES[self.locations.sample(rng)]
    }

    fn stroke_code(&self, rng: &mut ChaCha8Rng) -> &'static str {
        self.stroke_codes[self.stroke_mix.sample(rng)]
    }

    /// A record that is not a planted stroke, no-surgery record.
    fn background_row(&self, rng: &mut ChaCha8Rng) -> Row {
        let age = 1 + self.ages.sample(rng) as i32;
        let band = age_band(age);
        let (disease, c, surgery_permille) = self.codes[self.disease_by_band[band].sample(rng)];
        let chapter = &CHAPTERS[c];
        let male = match chapter.sexes {
            Sexes::Male => true,
            Sexes::Female => false,
            Sexes::Both => rng.random_range(0..1000) < MALE_PERMILLE[band],
        };
        let surgery = rng.random_range(0..1000) < surgery_permille;
        let profile = (chapter.los_profile + usize::from(surgery) + usize::from(age >= 65)).min(4);
        let los = 1 + self.los_profiles[profile].sample(rng) as i32;
        Row {
            age,
            male,
            los,
            surgery,
            location: self.location(rng),
            disease,
        }
    }
}

/// Weights of stays of 1..=400 days (index 0 = one day) for one stay profile.
fn los_weights(num: u64, den: u64, tail_permille: u64) -> Vec<u64> {
    let mut weights = vec![0u64; MAX_LOS as usize];
    let mut w = 1_000_000_000u64;
    for slot in weights.iter_mut().take(30) {
        *slot = w;
        w = w * num / den;
    }
    let head: u64 = weights.iter().sum();
    // Sum of 1/d² over 31..=400 is about 0.030290.
    let tail_total = head * tail_permille / (1000 - tail_permille);
    let k = tail_total * 1_000_000 / 30_290;
    for (d, slot) in weights.iter_mut().enumerate().skip(30) {
        let day = d as u64 + 1;
        *slot = k / (day * day);
    }
    weights
}

/// Accumulates rows into column builders and cuts batches.
struct BatchWriter {
    schema: SchemaRef,
    batch_size: usize,
    remaining: usize,
    len: usize,
    age: Int32Builder,
    sex: StringBuilder,
    los: Int32Builder,
    surgery: StringBuilder,
    location: Int32Builder,
    disease: StringBuilder,
    batches: Vec<RecordBatch>,
}

impl BatchWriter {
    fn new(schema: SchemaRef, rows: usize, batch_size: usize) -> Self {
        let cap = rows.min(batch_size);
        Self {
            schema,
            batch_size,
            remaining: rows,
            len: 0,
            age: Int32Builder::with_capacity(cap),
            sex: StringBuilder::with_capacity(cap, cap),
            los: Int32Builder::with_capacity(cap),
            surgery: StringBuilder::with_capacity(cap, cap),
            location: Int32Builder::with_capacity(cap),
            disease: StringBuilder::with_capacity(cap, 4 * cap),
            batches: Vec::with_capacity(rows.div_ceil(batch_size)),
        }
    }

    fn push(&mut self, row: &Row) -> Result<(), ArrowError> {
        self.age.append_value(row.age);
        self.sex.append_value(if row.male { "M" } else { "F" });
        self.los.append_value(row.los);
        self.surgery
            .append_value(if row.surgery { "Y" } else { "N" });
        self.location.append_value(row.location);
        self.disease.append_value(row.disease);
        self.len += 1;
        self.remaining = self.remaining.saturating_sub(1);
        if self.len == self.batch_size {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ArrowError> {
        if self.len == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.age.finish()),
            Arc::new(self.sex.finish()),
            Arc::new(self.los.finish()),
            Arc::new(self.surgery.finish()),
            Arc::new(self.location.finish()),
            Arc::new(self.disease.finish()),
        ];
        self.batches
            .push(RecordBatch::try_new(self.schema.clone(), columns)?);
        self.len = 0;
        let cap = self.remaining.min(self.batch_size);
        self.age = Int32Builder::with_capacity(cap);
        self.sex = StringBuilder::with_capacity(cap, cap);
        self.los = Int32Builder::with_capacity(cap);
        self.surgery = StringBuilder::with_capacity(cap, cap);
        self.location = Int32Builder::with_capacity(cap);
        self.disease = StringBuilder::with_capacity(cap, 4 * cap);
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<RecordBatch>, ArrowError> {
        self.flush()?;
        Ok(self.batches)
    }
}

const fn chapter(
    codes: &'static [&'static str],
    share: u64,
    age_mult: [u64; 5],
    surgery_permille: u32,
    los_profile: usize,
    sexes: Sexes,
) -> Chapter {
    Chapter {
        codes,
        share,
        age_mult,
        surgery_permille,
        los_profile,
        sexes,
        stroke: false,
    }
}

/// The disease groups. Codes within a group are listed most frequent first.
const CHAPTERS: [Chapter; 21] = [
    // Infectious and parasitic diseases.
    chapter(
        &[
            "A099", "A090", "B349", "A084", "A419", "B029", "A059", "B084", "B019", "A080", "A047",
            "A162", "B181", "A870", "B085", "A150", "B182", "A879", "B009", "A499", "B341", "B279",
            "A389", "A490", "B370",
        ],
        60,
        [300, 100, 50, 70, 100],
        20,
        1,
        Sexes::Both,
    ),
    // Neoplasms.
    chapter(
        &[
            "C169", "C349", "C220", "C189", "C259", "C187", "C162", "C787", "C341", "C159", "C343",
            "C780", "C793", "C795", "C221", "C160", "C182", "C186", "C184", "C679", "C329", "C900",
            "C920", "C910", "C833", "C859", "C710", "C719", "C240", "C786", "C165", "C229", "C800",
            "D126", "D125", "D135", "D180", "D352", "D361", "D179", "D469",
        ],
        80,
        [5, 40, 140, 160, 90],
        60,
        2,
        Sexes::Both,
    ),
    // Blood and immune disorders.
    chapter(
        &[
            "D509", "D649", "D500", "D696", "D619", "D693", "D688", "D611", "D570", "D591",
        ],
        8,
        [50, 60, 80, 120, 160],
        10,
        1,
        Sexes::Both,
    ),
    // Endocrine, nutritional and metabolic diseases.
    chapter(
        &[
            "E119", "E117", "E114", "E115", "E112", "E113", "E118", "E111", "E149", "E142", "E109",
            "E871", "E876", "E039", "E050", "E059", "E041", "E042", "E878", "E875", "E440", "E669",
            "E785", "E780", "E559", "E831", "E162", "E232", "E274",
        ],
        30,
        [10, 40, 120, 160, 160],
        20,
        2,
        Sexes::Both,
    ),
    // Mental and behavioural disorders.
    chapter(
        &[
            "F209", "F102", "F329", "F200", "F103", "F322", "F109", "F319", "F339", "F321", "F312",
            "F412", "F419", "F431", "F432", "F009", "F019", "F051", "F059", "F250", "F259", "F603",
            "F500", "F840", "F900",
        ],
        25,
        [5, 120, 120, 60, 120],
        0,
        4,
        Sexes::Both,
    ),
    // Diseases of the nervous system.
    chapter(
        &[
            "G409", "G459", "G309", "G400", "G439", "G473", "G458", "G301", "G219", "G300", "G402",
            "G430", "G442", "G470", "G500", "G510", "G560", "G571", "G610", "G629", "G700", "G819",
            "G822", "G825", "G935", "G936", "G911", "G952", "G971", "G039", "G049",
        ],
        30,
        [50, 60, 100, 140, 200],
        40,
        2,
        Sexes::Both,
    ),
    // Diseases of the eye and ear.
    chapter(
        &[
            "H251", "H259", "H250", "H269", "H330", "H353", "H401", "H268", "H335", "H360", "H402",
            "H431", "H000", "H010", "H100", "H103", "H160", "H524", "H527", "H500", "H659", "H669",
            "H660", "H651", "H811", "H813", "H814", "H903", "H905", "H919", "H932", "H710",
        ],
        45,
        [40, 40, 100, 180, 120],
        50,
        0,
        Sexes::Both,
    ),
    // Diseases of the circulatory system other than stroke (I00–I59, I70–I99).
    chapter(
        &[
            "I209", "I109", "I251", "I200", "I214", "I500", "I480", "I259", "I219", "I509", "I211",
            "I248", "I119", "I210", "I501", "I481", "I489", "I471", "I495", "I490", "I442", "I420",
            "I269", "I350", "I340", "I313", "I309", "I517", "I710", "I712", "I714", "I702", "I739",
            "I743", "I802", "I803", "I824", "I830", "I839", "I849", "I850", "I859", "I872", "I951",
            "I959", "I958", "I129", "I130", "I279",
        ],
        70,
        [3, 30, 120, 180, 220],
        60,
        2,
        Sexes::Both,
    ),
    // Cerebrovascular diseases (stroke, I60–I69).
    Chapter {
        codes: &[
            "I639", "I634", "I638", "I635", "I633", "I619", "I620", "I630", "I610", "I609", "I631",
            "I632", "I611", "I612", "I618", "I607", "I601", "I629", "I652", "I651", "I660", "I671",
            "I672", "I678", "I679", "I694", "I693", "I698", "I691",
        ],
        share: 8,
        age_mult: [1, 10, 100, 180, 200],
        surgery_permille: 1000,
        los_profile: 3,
        sexes: Sexes::Both,
        stroke: true,
    },
    // Diseases of the respiratory system.
    chapter(
        &[
            "J189", "J209", "J069", "J181", "J029", "J039", "J129", "J219", "J449", "J459", "J180",
            "J159", "J200", "J210", "J019", "J040", "J050", "J060", "J101", "J111", "J118", "J441",
            "J440", "J450", "J451", "J303", "J304", "J320", "J324", "J329", "J342", "J350", "J352",
            "J353", "J383", "J380", "J690", "J841", "J849", "J860", "J939", "J930", "J960", "J969",
            "J984", "J940", "J980",
        ],
        120,
        [400, 80, 60, 100, 180],
        15,
        1,
        Sexes::Both,
    ),
    // Diseases of the digestive system.
    chapter(
        &[
            "K297", "K358", "K529", "K291", "K802", "K590", "K210", "K359", "K295", "K409", "K259",
            "K219", "K566", "K565", "K800", "K801", "K803", "K805", "K810", "K819", "K830", "K831",
            "K850", "K859", "K861", "K254", "K250", "K269", "K279", "K350", "K402", "K429", "K439",
            "K500", "K509", "K519", "K528", "K560", "K564", "K567", "K570", "K573", "K579", "K610",
            "K603", "K621", "K635", "K625", "K922", "K920", "K921", "K700", "K703", "K709", "K746",
            "K760", "K047", "K052", "K053", "K010", "K011", "K071", "K122", "K117",
        ],
        110,
        [80, 100, 120, 110, 100],
        30,
        1,
        Sexes::Both,
    ),
    // Diseases of the skin.
    chapter(
        &[
            "L039", "L031", "L029", "L023", "L024", "L022", "L089", "L010", "L209", "L239", "L259",
            "L309", "L500", "L509", "L720", "L050", "L700", "L600", "L899", "L984",
        ],
        20,
        [100, 100, 100, 100, 100],
        40,
        1,
        Sexes::Both,
    ),
    // Diseases of the musculoskeletal system.
    chapter(
        &[
            "M545", "M511", "M171", "M480", "M544", "M751", "M512", "M170", "M542", "M513", "M519",
            "M500", "M501", "M481", "M179", "M169", "M160", "M190", "M199", "M750", "M754", "M758",
            "M232", "M233", "M235", "M255", "M653", "M654", "M770", "M771", "M796", "M791", "M810",
            "M800", "M819", "M844", "M069", "M059", "M109", "M100", "M472", "M478", "M431", "M436",
            "M460", "M628", "M726",
        ],
        120,
        [20, 80, 140, 160, 100],
        50,
        2,
        Sexes::Both,
    ),
    // Diseases of the urinary system.
    chapter(
        &[
            "N390", "N200", "N179", "N189", "N201", "N209", "N185", "N184", "N180", "N210", "N132",
            "N133", "N049", "N039", "N059", "N300", "N309", "N319", "N359", "N281", "N289",
        ],
        40,
        [60, 100, 100, 120, 120],
        40,
        1,
        Sexes::Both,
    ),
    // Diseases of the male genital organs.
    chapter(
        &["N400", "N410", "N459", "N433", "N471", "N429"],
        10,
        [5, 20, 100, 200, 150],
        100,
        1,
        Sexes::Male,
    ),
    // Breast and female genital organs (neoplasms and other diseases).
    chapter(
        &[
            "C509", "D259", "N800", "N832", "C539", "N840", "D250", "N850", "N920", "D271", "N939",
            "N951", "C541", "C549", "N801", "N830", "N710", "N760", "N700", "N613", "D069", "N979",
        ],
        30,
        [5, 100, 180, 60, 20],
        100,
        1,
        Sexes::Female,
    ),
    // Pregnancy, childbirth and the puerperium.
    chapter(
        &[
            "O800", "O821", "O809", "O820", "O829", "O200", "O210", "O034", "O049", "O021", "O060",
            "O249", "O260", "O342", "O420", "O441", "O470", "O479", "O600", "O620", "O680", "O699",
            "O720", "O860", "O990", "O998",
        ],
        45,
        [0, 500, 3, 0, 0],
        50,
        1,
        Sexes::Female,
    ),
    // Congenital malformations.
    chapter(
        &[
            "Q210", "Q211", "Q250", "Q531", "Q620", "Q654", "Q381", "Q400", "Q431", "Q539",
        ],
        5,
        [300, 40, 10, 5, 3],
        100,
        1,
        Sexes::Both,
    ),
    // Symptoms and abnormal findings.
    chapter(
        &[
            "R104", "R509", "R074", "R101", "R103", "R060", "R100", "R568", "R410", "R634", "R739",
            "R945", "R002", "R001", "R000",
        ],
        30,
        [100, 100, 100, 100, 120],
        10,
        0,
        Sexes::Both,
    ),
    // Injury, poisoning and complications.
    chapter(
        &[
            "S060", "S134", "S335", "S720", "S525", "S822", "S324", "S320", "S065", "S066", "S069",
            "S020", "S024", "S022", "S220", "S223", "S224", "S321", "S325", "S327", "S420", "S422",
            "S423", "S424", "S427", "S430", "S526", "S520", "S528", "S620", "S626", "S628", "S721",
            "S722", "S730", "S800", "S810", "S820", "S821", "S823", "S825", "S826", "S828", "S832",
            "S835", "S836", "S925", "S934", "T141", "T149", "T814", "T840", "T845", "T846", "T888",
            "T784", "T621", "T598", "T391", "T424", "T509", "T300", "T200",
        ],
        110,
        [100, 140, 100, 100, 140],
        80,
        2,
        Sexes::Both,
    ),
    // Factors influencing health status and contact with health services.
    chapter(
        &[
            "Z511", "Z512", "Z491", "Z515", "Z518", "Z492", "Z540", "Z548", "Z480", "Z470", "Z450",
            "Z098", "Z048", "Z501", "Z509", "Z431",
        ],
        40,
        [30, 60, 120, 120, 80],
        20,
        0,
        Sexes::Both,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};
    use std::sync::OnceLock;

    use datafusion::arrow::array::{Array, Int32Array, StringArray};

    /// Table 9, Original column (male), labels 5, 10, ..., 90.
    const T9: [(i32, usize); 18] = [
        (5, 1),
        (10, 2),
        (15, 1),
        (20, 9),
        (25, 12),
        (30, 13),
        (35, 27),
        (40, 44),
        (45, 104),
        (50, 205),
        (55, 341),
        (60, 396),
        (65, 472),
        (70, 442),
        (75, 430),
        (80, 360),
        (85, 197),
        (90, 78),
    ];
    /// Table 10, Original column (female).
    const T10: [(i32, usize); 18] = [
        (5, 0),
        (10, 2),
        (15, 7),
        (20, 8),
        (25, 4),
        (30, 6),
        (35, 10),
        (40, 26),
        (45, 63),
        (50, 102),
        (55, 178),
        (60, 231),
        (65, 279),
        (70, 326),
        (75, 457),
        (80, 525),
        (85, 445),
        (90, 243),
    ];
    /// Table 11, Original column (male), labels 10, 20, ..., 90.
    const T11: [(i32, f64); 9] = [
        (10, 1.0),
        (20, 1.4),
        (30, 2.1),
        (40, 2.7),
        (50, 3.4),
        (60, 4.0),
        (70, 3.6),
        (80, 4.3),
        (90, 5.8),
    ];
    /// Table 12, Original column (female).
    const T12: [(i32, f64); 9] = [
        (10, 3.0),
        (20, 3.0),
        (30, 7.7),
        (40, 1.7),
        (50, 2.7),
        (60, 3.5),
        (70, 3.5),
        (80, 5.6),
        (90, 8.0),
    ];

    type Rec<'a> = (i32, &'a str, i32, &'a str, i32, &'a str);

    fn int(batch: &RecordBatch, i: usize) -> &Int32Array {
        batch
            .column(i)
            .as_any()
            .downcast_ref::<Int32Array>()
            .expect("Int32 column")
    }

    fn text(batch: &RecordBatch, i: usize) -> &StringArray {
        batch
            .column(i)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("Utf8 column")
    }

    fn records(batches: &[RecordBatch]) -> Vec<Rec<'_>> {
        let mut out = Vec::new();
        for b in batches {
            let (age, sex, los, surgery, location, disease) = (
                int(b, 0),
                text(b, 1),
                int(b, 2),
                text(b, 3),
                int(b, 4),
                text(b, 5),
            );
            for r in 0..b.num_rows() {
                out.push((
                    age.value(r),
                    sex.value(r),
                    los.value(r),
                    surgery.value(r),
                    location.value(r),
                    disease.value(r),
                ));
            }
        }
        out
    }

    /// The default table, generated once for all tests.
    fn default_batches() -> &'static [RecordBatch] {
        static DATA: OnceLock<Vec<RecordBatch>> = OnceLock::new();
        DATA.get_or_init(|| {
            generate_nps(NPS_DEFAULT_ROWS, NPS_DEFAULT_SEED, 65_536).expect("generation")
        })
    }

    /// The rows of [`default_batches`].
    fn default_records() -> &'static [Rec<'static>] {
        static RECS: OnceLock<Vec<Rec<'static>>> = OnceLock::new();
        RECS.get_or_init(|| records(default_batches()))
    }

    fn is_planted(r: &Rec<'_>) -> bool {
        r.3 == "N" && r.5.starts_with("I6")
    }

    /// Stroke, no-surgery counts per (sex, 5-year label L = floor(age/5)*5 + 5).
    fn stroke_counts(recs: &[Rec<'_>]) -> HashMap<(&'static str, i32), usize> {
        let mut counts = HashMap::new();
        for r in recs.iter().filter(|r| is_planted(r)) {
            let sex = if r.1 == "M" { "M" } else { "F" };
            *counts.entry((sex, r.0 / 5 * 5 + 5)).or_insert(0) += 1;
        }
        counts
    }

    #[test]
    fn tables_9_and_10_counts_are_exact_at_default_size() {
        let recs = default_records();
        let counts = stroke_counts(recs);
        for (sex, table) in [("M", &T9), ("F", &T10)] {
            for &(label, expected) in table.iter() {
                let got = counts.get(&(sex, label)).copied().unwrap_or(0);
                assert_eq!(got, expected, "sex {sex}, label {label}");
            }
            let total: usize = counts
                .iter()
                .filter(|(k, _)| k.0 == sex)
                .map(|(_, v)| v)
                .sum();
            assert_eq!(
                total,
                table.iter().map(|t| t.1).sum::<usize>(),
                "sex {sex} has rows outside the table"
            );
        }
        assert_eq!(T9.iter().map(|t| t.1).sum::<usize>(), 3134);
        assert_eq!(T10.iter().map(|t| t.1).sum::<usize>(), 2912);
        assert!(recs.iter().filter(|r| is_planted(r)).all(|r| r.0 <= 89));
    }

    #[test]
    fn tables_11_and_12_means_round_exactly_at_default_size() {
        let recs = default_records();
        for (sex, table) in [("M", &T11), ("F", &T12)] {
            for &(label, expected) in table.iter() {
                let stays: Vec<i32> = recs
                    .iter()
                    .filter(|r| is_planted(r) && r.1 == sex && r.0 / 10 * 10 + 10 == label)
                    .map(|r| r.2)
                    .collect();
                assert!(!stays.is_empty(), "sex {sex}, label {label}: no patients");
                let mean = stays.iter().map(|&d| f64::from(d)).sum::<f64>() / stays.len() as f64;
                let rounded = (mean * 10.0).round() / 10.0;
                assert!(
                    (rounded - expected).abs() < 1e-9,
                    "sex {sex}, label {label}: mean {mean} rounds to {rounded}, want {expected}"
                );
                if stays.len() >= 20 {
                    let distinct: HashSet<i32> = stays.iter().copied().collect();
                    assert!(
                        distinct.len() >= 3,
                        "sex {sex}, label {label}: stays {distinct:?} lack spread"
                    );
                }
            }
        }
    }

    #[test]
    fn same_seed_gives_identical_batches() {
        let a = generate_nps(50_000, 7, 8_192).expect("generation");
        let b = generate_nps(50_000, 7, 8_192).expect("generation");
        assert_eq!(a, b);
        let c = generate_nps(50_000, 8, 8_192).expect("generation");
        assert_ne!(a, c);
        assert_ne!(records(&a), records(&c));
    }

    #[test]
    fn batch_size_only_changes_the_cuts() {
        let a = generate_nps(30_000, 3, 1_000).expect("generation");
        let b = generate_nps(30_000, 3, 65_536).expect("generation");
        assert_eq!(a.len(), 30);
        assert!(a.iter().all(|batch| batch.num_rows() == 1_000));
        assert_eq!(b.len(), 1);
        assert_eq!(records(&a), records(&b));
        let c = generate_nps(10, 3, 3).expect("generation");
        assert_eq!(
            c.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(),
            vec![3, 3, 3, 1]
        );
    }

    #[test]
    fn schema_and_value_domains() {
        let batches = default_batches();
        let schema = nps_schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(
            names,
            ["age", "sex", "los", "surgery", "location", "disease"]
        );
        let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
        assert_eq!(
            types,
            [
                &DataType::Int32,
                &DataType::Utf8,
                &DataType::Int32,
                &DataType::Utf8,
                &DataType::Int32,
                &DataType::Utf8
            ]
        );
        assert!(schema.fields().iter().all(|f| !f.is_nullable()));
        for b in batches {
            assert_eq!(b.schema(), schema);
            assert!(b.num_rows() > 0 && b.num_rows() <= 65_536);
            assert!(b.columns().iter().all(|c| c.null_count() == 0));
        }
        let recs = default_records();
        assert_eq!(recs.len(), NPS_DEFAULT_ROWS);
        let mut ages = HashSet::new();
        let mut locations = HashSet::new();
        for r in recs {
            assert!((1..=100).contains(&r.0), "age {}", r.0);
            assert!(r.1 == "M" || r.1 == "F", "sex {}", r.1);
            assert!((1..=400).contains(&r.2), "los {}", r.2);
            assert!(r.3 == "Y" || r.3 == "N", "surgery {}", r.3);
            assert!(NPS_LOCATION_CODES.contains(&r.4), "location {}", r.4);
            let code = r.5.as_bytes();
            assert!(
                code.len() == 4
                    && code[0].is_ascii_uppercase()
                    && code[1..].iter().all(u8::is_ascii_digit),
                "disease {}",
                r.5
            );
            ages.insert(r.0);
            locations.insert(r.4);
        }
        assert_eq!(ages.len(), 100);
        assert_eq!(locations.len(), 16);
    }

    #[test]
    fn marginals_look_realistic() {
        let recs = default_records();
        let n = recs.len() as f64;
        let share =
            |pred: &dyn Fn(&Rec<'_>) -> bool| recs.iter().filter(|r| pred(r)).count() as f64 / n;
        let male = share(&|r| r.1 == "M");
        assert!((0.45..=0.55).contains(&male), "male share {male}");
        let surgery = share(&|r| r.3 == "Y");
        assert!((0.10..=0.15).contains(&surgery), "surgery share {surgery}");
        let short = share(&|r| r.2 <= 10);
        assert!(
            (0.85..=0.99).contains(&short),
            "share of stays <= 10 days {short}"
        );
        let long = share(&|r| r.2 > 30);
        assert!(
            (0.003..=0.03).contains(&long),
            "share of stays > 30 days {long}"
        );
        assert!(recs.iter().any(|r| r.2 > 200));
        let old = share(&|r| r.0 >= 50);
        assert!((0.45..=0.70).contains(&old), "share aged 50+ {old}");
        let stroke_with_surgery = share(&|r| r.5.starts_with("I6") && r.3 == "Y");
        assert!(
            stroke_with_surgery > 0.0005,
            "stroke with surgery {stroke_with_surgery}"
        );
        let other_circulatory = share(&|r| r.5.starts_with('I') && !r.5.starts_with("I6"));
        assert!(
            (0.03..=0.10).contains(&other_circulatory),
            "other circulatory {other_circulatory}"
        );
        let mut by_location = HashMap::new();
        for r in recs {
            *by_location.entry(r.4).or_insert(0usize) += 1;
        }
        let max = by_location.values().max().copied().unwrap_or(0);
        let min = by_location.values().min().copied().unwrap_or(0);
        assert!(max > 5 * min, "locations too even: {by_location:?}");
        let diseases: HashSet<&str> = recs.iter().map(|r| r.5).collect();
        assert!(
            diseases.len() >= 500,
            "{} distinct diseases",
            diseases.len()
        );
        let combos: HashSet<&Rec<'_>> = recs.iter().collect();
        assert!(
            (200_000..=600_000).contains(&combos.len()),
            "{} distinct combinations",
            combos.len()
        );
    }

    #[test]
    fn female_only_and_male_only_codes_keep_their_sex() {
        let recs = default_records();
        assert!(recs
            .iter()
            .filter(|r| r.5.starts_with('O'))
            .all(|r| r.1 == "F" && (15..=64).contains(&r.0)));
        assert!(recs
            .iter()
            .filter(|r| r.5.starts_with("N40"))
            .all(|r| r.1 == "M"));
    }

    #[test]
    fn small_sizes_work() {
        assert!(generate_nps(0, 1, 10).expect("generation").is_empty());
        let one = generate_nps(1, 1, 10).expect("generation");
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].num_rows(), 1);
        let thousand = generate_nps(1_000, 1, 256).expect("generation");
        assert_eq!(
            thousand.iter().map(RecordBatch::num_rows).sum::<usize>(),
            1_000
        );
        assert_eq!(thousand.len(), 4);
        // Every scaled stroke count rounds to zero at this size.
        assert!(records(&thousand).iter().all(|r| !is_planted(r)));
        assert!(matches!(
            generate_nps(10, 1, 0),
            Err(ArrowError::InvalidArgumentError(_))
        ));
    }

    #[test]
    fn other_sizes_scale_the_stroke_counts() {
        let rows = NPS_DEFAULT_ROWS / 10;
        let batches = generate_nps(rows, 11, 65_536).expect("generation");
        let recs = records(&batches);
        assert_eq!(recs.len(), rows);
        let counts = stroke_counts(&recs);
        for (sex, table) in [("M", &T9), ("F", &T10)] {
            for &(label, full) in table.iter() {
                let expected =
                    (full as f64 * rows as f64 / NPS_DEFAULT_ROWS as f64).round() as usize;
                assert_eq!(
                    counts.get(&(sex, label)).copied().unwrap_or(0),
                    expected,
                    "sex {sex}, label {label}"
                );
            }
        }
    }

    #[test]
    fn disease_list_is_well_formed() {
        let mut seen = HashSet::new();
        for ch in &CHAPTERS {
            for code in ch.codes {
                let b = code.as_bytes();
                assert!(
                    b.len() == 4
                        && b[0].is_ascii_uppercase()
                        && b[1..].iter().all(u8::is_ascii_digit),
                    "{code}"
                );
                assert!(seen.insert(*code), "duplicate code {code}");
                assert_eq!(
                    code.starts_with("I6"),
                    ch.stroke,
                    "{code} in the wrong group"
                );
            }
        }
        assert!((300..=800).contains(&seen.len()), "{} codes", seen.len());
    }

    /// FNV-1a (64 bit), a fingerprint that depends on nothing but the bytes fed to it.
    struct Fnv(u64);

    impl Fnv {
        fn new() -> Self {
            Fnv(0xcbf2_9ce4_8422_2325)
        }

        fn feed(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 ^= u64::from(b);
                self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
            }
        }

        fn text(&mut self, s: &str) {
            self.feed(s.as_bytes());
            self.feed(&[0]);
        }

        fn number(&mut self, n: u64) {
            self.feed(&n.to_le_bytes());
        }
    }

    /// Fingerprint of every field of every record, in order.
    fn records_fingerprint(recs: &[Rec<'_>]) -> u64 {
        let mut h = Fnv::new();
        for r in recs {
            h.number(r.0 as u64);
            h.text(r.1);
            h.number(r.2 as u64);
            h.text(r.3);
            h.number(r.4 as u64);
            h.text(r.5);
        }
        h.0
    }

    /// The generator's output for fixed sizes and seeds is pinned: a change to the code or
    /// the disease data that alters a single record fails here.
    #[test]
    fn output_is_pinned() {
        assert_eq!(records_fingerprint(default_records()), 15206203640825520109);
        let small = generate_nps(50_000, 7, 8_192).expect("generation");
        assert_eq!(records_fingerprint(&records(&small)), 14527630157082495237);
    }

    /// The disease groups and everything derived from them are pinned: codes and their
    /// order, group of each code, surgery rates, group parameters and the per-band weights.
    #[test]
    fn disease_model_is_pinned() {
        let model = Model::new();
        let sizes: Vec<usize> = CHAPTERS.iter().map(|ch| ch.codes.len()).collect();
        assert_eq!(
            sizes,
            [25, 41, 10, 29, 25, 31, 32, 49, 29, 47, 64, 20, 47, 21, 6, 22, 26, 10, 15, 63, 16]
        );
        let surgical = model
            .codes
            .iter()
            .filter(|(code, _, _)| SURGICAL_CODES.contains(code))
            .count();
        assert_eq!(model.codes.len(), 628);
        assert_eq!(surgical, 143);
        let mut h = Fnv::new();
        for ch in &CHAPTERS {
            h.number(ch.share);
            ch.age_mult.iter().for_each(|&m| h.number(m));
            h.number(u64::from(ch.surgery_permille));
            h.number(ch.los_profile as u64);
            h.number(match ch.sexes {
                Sexes::Both => 0,
                Sexes::Male => 1,
                Sexes::Female => 2,
            });
            h.number(u64::from(ch.stroke));
        }
        for &(code, group, rate) in &model.codes {
            h.text(code);
            h.number(group as u64);
            h.number(u64::from(rate));
        }
        for band in &model.disease_by_band {
            band.cumulative.iter().for_each(|&c| h.number(c));
        }
        model.stroke_codes.iter().for_each(|c| h.text(c));
        model
            .stroke_mix
            .cumulative
            .iter()
            .for_each(|&c| h.number(c));
        assert_eq!(h.0, 8511657504476546407);
    }

    #[test]
    fn stays_hit_exact_totals() {
        let model = Model::new();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (n, total) in [
            (1usize, 1u64),
            (1, 400),
            (3, 3),
            (10, 14),
            (688, 5_504),
            (5, 2_000),
        ] {
            let stays = allocate_los(&model, &mut rng, n, total);
            assert_eq!(stays.len(), n);
            assert_eq!(stays.iter().map(|&d| d as u64).sum::<u64>(), total);
            assert!(stays.iter().all(|&d| (1..=400).contains(&d)));
        }
        assert_eq!(target_los_sum(21, 25), 53);
        assert_eq!(target_los_sum(56, 982), 5_499);
        assert_eq!(scale_count(525, NPS_DEFAULT_ROWS), 525);
        assert_eq!(scale_count(525, 1_000), 0);
    }
}
