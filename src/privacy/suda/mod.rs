//! Special uniques: SUDA2 minimal sample uniques (MSUs), SUDA scores and DIS-SUDA scores as
//! sdcMicro's `suda2` computes them.
//!
//! A *minimal sample unique* of a record is a set of its quasi-identifier values (one per
//! attribute) that no other record shares, while every proper non-empty subset of it is
//! shared by at least one other record (Elliot, Manning & Ford 2002, *A computational
//! algorithm for handling the special uniques problem*, IJUFKS 10(5)). The MSUs are found
//! with the recursive SUDA2 algorithm of Manning, Haglin & Keane (2008), *A recursive search
//! algorithm for statistical disclosure assessment*, Data Min. Knowl. Disc. 16(2): items
//! (attribute = value) are ranked by support; an item `I` splits off the sub-table of the
//! records that contain it, restricted to items ranked after `I`; the MSUs `S` of the
//! sub-table are found recursively, and `S ∪ {I}` is an MSU of the table exactly when some
//! record outside the sub-table contains `S` (the "special row" condition). Items that occur
//! once are 1-MSUs, items that occur in every record are dropped, and each MSU is found once,
//! from its lowest-ranked item. Work is proportional to the records of each sub-table.
//!
//! Scores follow sdcMicro (`R/suda2.R` → C++ `src/Suda2.h`, function `Suda2`):
//!
//! * SUDA score of a record: `Σ_MSUs w(|MSU|)`, with (`original_scores = TRUE`, the
//!   default) `w(k) = Π_{j=k}^{M−1} (M − j) = (M − k)!`, or (`original_scores = FALSE`)
//!   `w(k) = (2^{M−k} − 1) · k! (M−k)! / M!`, where `M` is the number of quasi-identifiers.
//! * DIS-SUDA score: with `U` the records that are unique on all quasi-identifiers, `P` the
//!   records in classes of exactly two records, `π` the DIS fraction (sdcMicro `DisFraction`,
//!   default 0.01), `Dis = U·π / (U·π + P·(1−π))`, `Q = 1 + (8 − M)/20` and
//!   `A = Σ_{records with score > 0} score^{−Q}`, a record with score `s > 0` gets
//!   `1 / (1 + (U/Dis − U) / (s^Q · A))`, others 0 (Elliot 2000, *DIS: a new approach to
//!   the measurement of statistical disclosure risk*).

use std::fmt;

mod classes;
mod scores;
mod search;
#[cfg(test)]
mod tests;

use classes::{dense_codes, full_key_classes, hash_bucket_uniques};
use scores::{dis_scores, msu_weight};
use search::find_msus;

/// How SUDA scores weight an MSU of size `k` (sdcMicro `suda2(original_scores = ...)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SudaScoring {
    /// `w(k) = Π_{j=k}^{M−1} (M − j) = (M − k)!` — sdcMicro's default
    /// (`original_scores = TRUE`, the scores of Elliot et al.'s SUDA software).
    #[default]
    Original,
    /// `w(k) = (2^{M−k} − 1) · k!·(M−k)!/M! = (2^{M−k} − 1) / C(M, k)`
    /// (`original_scores = FALSE`).
    Alternative,
}

/// How the number of sample uniques `U` in the DIS formula is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DisUniques {
    /// Records unique on all quasi-identifiers — the quantity the DIS formula defines.
    #[default]
    FullKey,
    /// sdcMicro's actual count: records that are alone in their bucket of the 16-bit hash
    /// table of `src/Suda2.h` (its uniqueness test `k == g_NbPerHash[i]` can never hold, so
    /// only single-record buckets are counted). The hash uses the codes as given, so this
    /// reproduces sdcMicro only when the codes equal the numbers sdcMicro sees (for factors,
    /// the 1-based level numbers). As in sdcMicro, a count of 0 while some record has a
    /// positive score makes the DIS scores NaN (`0 / 0`).
    SdcMicroHashBuckets,
}

/// Parameters of [`suda2_with`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SudaConfig {
    /// Largest MSU size searched, `1 ≤ max_size ≤ M` (sdcMicro always uses `M`).
    pub max_size: usize,
    /// DIS fraction `π` in (0, 1] (sdcMicro `DisFraction`, default 0.01; sdcMicro turns 0
    /// into 0.5, which this module does too). Used in single precision, as in sdcMicro.
    pub dis_fraction: f64,
    /// MSU weights of the SUDA score.
    pub scoring: SudaScoring,
    /// How `U` of the DIS formula is counted.
    pub dis_uniques: DisUniques,
}

/// Most column combinations one SUDA search may visit (see [`combinations_searched`]):
/// 17 quasi-identifiers searched whole, or 40 with `max_size` 4, about a minute on two cores;
/// 40 searched whole (2^40 combinations) would run for days and grow memory without end.
pub const MAX_COMBINATIONS_SEARCHED: u64 = 200_000;

/// The column combinations a search for minimal sample uniques of at most `max_size` of
/// `columns` quasi-identifiers may visit, `C(columns, 1) + … + C(columns, max_size)`
/// (saturating): an upper bound on its work, known before any record is read.
pub fn combinations_searched(columns: usize, max_size: usize) -> u64 {
    let mut total: u64 = 0;
    let mut binomial: u128 = 1;
    for k in 1..=max_size.min(columns) {
        let Some(product) = binomial.checked_mul((columns + 1 - k) as u128) else {
            return u64::MAX;
        };
        binomial = product / k as u128;
        total = total.saturating_add(u64::try_from(binomial).unwrap_or(u64::MAX));
    }
    total
}

impl SudaConfig {
    /// sdcMicro's defaults for the given maximum MSU size: DIS fraction 0.01, original
    /// scores, `U` counted on the full key.
    pub fn new(max_size: usize) -> Self {
        Self {
            max_size,
            dis_fraction: 0.01,
            scoring: SudaScoring::Original,
            dis_uniques: DisUniques::FullKey,
        }
    }
}

/// Input SUDA2 cannot work with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SudaError {
    /// No quasi-identifier columns.
    NoQuasiIdentifiers,
    /// The columns have different lengths.
    RaggedColumns,
    /// `max_size` is 0 or larger than the number of quasi-identifiers.
    InvalidMaxSize,
    /// The DIS fraction is not in [0, 1] (or is NaN).
    InvalidDisFraction,
    /// More records than fit in 32-bit record numbers.
    TooManyRecords,
}

impl fmt::Display for SudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SudaError::NoQuasiIdentifiers => "SUDA2 needs at least one quasi-identifier",
            SudaError::RaggedColumns => "quasi-identifier columns differ in length",
            SudaError::InvalidMaxSize => {
                "maximum MSU size must be between 1 and the number of quasi-identifiers"
            }
            SudaError::InvalidDisFraction => "DIS fraction must be between 0 and 1",
            SudaError::TooManyRecords => "SUDA2 handles at most 2^32 - 1 records",
        })
    }
}

impl std::error::Error for SudaError {}

/// Per-record SUDA2 results (all vectors in record order).
#[derive(Debug, Clone, PartialEq)]
pub struct SudaResult {
    /// Number of MSUs of size ≤ `max_size` the record has.
    pub msu_count: Vec<u32>,
    /// Size of the record's smallest MSU, if it has one.
    pub min_msu_size: Vec<Option<u32>>,
    /// `msu_by_size[r * max_size + (k − 1)]`: MSUs of size `k` of record `r`.
    pub msu_by_size: Vec<u32>,
    /// SUDA score (sdcMicro `suda2(...)$score`).
    pub score: Vec<f64>,
    /// DIS-SUDA score (sdcMicro `suda2(...)$disScore`).
    pub dis_score: Vec<f64>,
    /// `U` used in the DIS formula.
    pub sample_uniques: u64,
    /// `P`: records in classes of exactly two records on all quasi-identifiers.
    pub records_in_pairs: u64,
    /// The file-level `Dis = U·π / (U·π + P·(1−π))` (single precision, as in sdcMicro).
    pub dis: f64,
    /// The number of quasi-identifiers used in the weights and in `Q`: `max(M, 3)`, since
    /// sdcMicro pads data with fewer than three key variables with constant columns.
    pub score_attributes: usize,
    /// The maximum MSU size searched.
    pub max_size: usize,
}

/// SUDA2 with sdcMicro's defaults apart from the maximum MSU size and DIS fraction
/// (original scores, `U` on the full key). `columns` holds one vector of codes per
/// quasi-identifier, all of the same length.
pub fn suda2(
    columns: &[Vec<u32>],
    max_size: usize,
    dis_fraction: f64,
) -> Result<SudaResult, SudaError> {
    let mut config = SudaConfig::new(max_size);
    config.dis_fraction = dis_fraction;
    suda2_with(columns, &config)
}

/// SUDA2 MSUs, SUDA and DIS-SUDA scores of every record.
pub fn suda2_with(columns: &[Vec<u32>], config: &SudaConfig) -> Result<SudaResult, SudaError> {
    let attrs = columns.len();
    if attrs == 0 {
        return Err(SudaError::NoQuasiIdentifiers);
    }
    let n = columns[0].len();
    if columns.iter().any(|c| c.len() != n) {
        return Err(SudaError::RaggedColumns);
    }
    if config.max_size == 0 || config.max_size > attrs {
        return Err(SudaError::InvalidMaxSize);
    }
    if !(config.dis_fraction >= 0.0 && config.dis_fraction <= 1.0) {
        return Err(SudaError::InvalidDisFraction);
    }
    if n >= u32::MAX as usize {
        return Err(SudaError::TooManyRecords);
    }
    let m = config.max_size;

    // Dense codes per attribute.
    let mut dense: Vec<Vec<u32>> = Vec::with_capacity(attrs);
    let mut cards: Vec<u32> = Vec::with_capacity(attrs);
    for column in columns {
        let (codes, card) = dense_codes(column);
        dense.push(codes);
        cards.push(card);
    }

    // Full-key classes: U, P, and the records SUDA2 has to look at (sdcMicro keeps two
    // records of every class of three or more; the others cannot be unique on anything and
    // two copies keep every value combination non-unique).
    let classes = full_key_classes(&dense, &cards, n);
    let mut kept: Vec<u32> = Vec::with_capacity(n);
    let mut full_key_uniques = 0u64;
    let mut pairs = 0u64;
    for class in &classes {
        match class.len() {
            1 => full_key_uniques += 1,
            2 => pairs += 2,
            _ => {}
        }
        kept.extend(class.iter().take(2));
    }
    kept.sort_unstable();

    let mut by_size = vec![0u32; n * m];
    if !kept.is_empty() {
        let local = find_msus(&dense, &cards, &kept, m);
        for (i, &row) in kept.iter().enumerate() {
            let src = &local[i * m..(i + 1) * m];
            by_size[row as usize * m..(row as usize + 1) * m].copy_from_slice(src);
        }
    }

    // Scores.
    let score_attributes = attrs.max(3);
    let weights: Vec<f64> = (1..=m)
        .map(|k| msu_weight(score_attributes, k, config.scoring))
        .collect();
    let mut msu_count = Vec::with_capacity(n);
    let mut min_msu_size = Vec::with_capacity(n);
    let mut score = Vec::with_capacity(n);
    for r in 0..n {
        let counts = &by_size[r * m..(r + 1) * m];
        msu_count.push(counts.iter().fold(0u32, |a, &c| a.saturating_add(c)));
        min_msu_size.push(counts.iter().position(|&c| c > 0).map(|k| k as u32 + 1));
        let mut s = 0.0;
        for (k, &c) in counts.iter().enumerate() {
            s += f64::from(c) * weights[k];
        }
        score.push(s);
    }

    let sample_uniques = match config.dis_uniques {
        DisUniques::FullKey => full_key_uniques,
        DisUniques::SdcMicroHashBuckets => hash_bucket_uniques(columns, n),
    };
    let (dis, dis_score) = dis_scores(
        &score,
        sample_uniques,
        pairs,
        config.dis_fraction,
        score_attributes,
    );
    Ok(SudaResult {
        msu_count,
        min_msu_size,
        msu_by_size: by_size,
        score,
        dis_score,
        sample_uniques,
        records_in_pairs: pairs,
        dis,
        score_attributes,
        max_size: m,
    })
}
