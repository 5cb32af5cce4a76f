//! The paper's Tables 9–12 ("Original" columns) and the stroke, no-surgery records
//! planted from them.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::model::{Model, MAX_LOS};
use super::{Row, NPS_DEFAULT_ROWS};

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

/// Scales a table count to `rows` records: `round(count × rows / NPS_DEFAULT_ROWS)`, half up.
pub(super) fn scale_count(count: u32, rows: usize) -> usize {
    let d = NPS_DEFAULT_ROWS as u128;
    let scaled = (u128::from(count) * rows as u128 * 2 + d) / (2 * d);
    usize::try_from(scaled).unwrap_or(usize::MAX)
}

/// Total stay of `n` patients whose mean should round to `tenths / 10`: `round(mean × n)`,
/// half up, kept within `[n, 400 n]`.
pub(super) fn target_los_sum(tenths: u32, n: usize) -> u64 {
    let n = n as u64;
    let sum = (u64::from(tenths) * n + 5) / 10;
    sum.clamp(n, n * MAX_LOS as u64)
}

/// The planted stroke, no-surgery records of Tables 9–12, scaled to `rows`.
pub(super) fn stroke_rows(model: &Model, rows: usize, rng: &mut ChaCha8Rng) -> Vec<Row> {
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
pub(super) fn allocate_los(model: &Model, rng: &mut ChaCha8Rng, n: usize, total: u64) -> Vec<i32> {
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
