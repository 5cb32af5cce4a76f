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
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// The weight of an MSU of size `k` among `attrs` quasi-identifiers (sdcMicro `g_ab`).
fn msu_weight(attrs: usize, k: usize, scoring: SudaScoring) -> f64 {
    match scoring {
        SudaScoring::Original => {
            // for (j = i+1; j < M; ++j) result *= (M - j), with i = k - 1.
            let mut result = 1.0f64;
            for j in k..attrs {
                result *= (attrs - j) as f64;
            }
            result
        }
        SudaScoring::Alternative => {
            // (2^(M-k) - 1) · k!(M-k)!/M!, the last factor as 1/C(M, k) to stay finite.
            let a = 2f64.powi((attrs - k) as i32) - 1.0;
            let mut inverse_binomial = 1.0f64;
            for i in 1..=k {
                inverse_binomial *= i as f64 / (attrs - k + i) as f64;
            }
            a * inverse_binomial
        }
    }
}

/// DIS-SUDA scores exactly as `src/Suda2.h` computes them, including its single-precision
/// steps (`Dis`, `Q` and `U/Dis − U` are `float` there).
fn dis_scores(
    score: &[f64],
    uniques: u64,
    pairs: u64,
    dis_fraction: f64,
    attrs: usize,
) -> (f64, Vec<f64>) {
    let mut fraction = dis_fraction as f32;
    if fraction == 0.0 {
        fraction = 0.5;
    }
    let u = uniques as f32;
    let dis = u * fraction / (u * fraction + pairs as f32 * (1.0f32 - fraction));
    let q = f64::from(1.0f32 + (8.0f32 - attrs as f32) / 20.0f32);
    let mut adj = 0.0f64;
    for &s in score {
        if s != 0.0 {
            adj += 1.0 / s.powf(q);
        }
    }
    let numerator = f64::from(u / dis - u);
    let dis_score = score
        .iter()
        .map(|&s| {
            if s != 0.0 {
                1.0 / (1.0 + numerator / (s.powf(q) * adj))
            } else {
                0.0
            }
        })
        .collect();
    (f64::from(dis), dis_score)
}

/// sdcMicro's count of records alone in their bucket of its 16-bit hash (`CEntry::InitValue`
/// and the bucket scan of `Suda2` in `src/Suda2.h`); fewer than three columns are padded
/// with constant 1s as `suda2WORK` does.
fn hash_bucket_uniques(columns: &[Vec<u32>], n: usize) -> u64 {
    let mut buckets = vec![0u32; 1 << 16];
    let padding = 3usize.saturating_sub(columns.len());
    for r in 0..n {
        let mut hash: u16 = 0;
        let values = columns
            .iter()
            .map(|c| c[r] as i32)
            .chain(std::iter::repeat_n(1, padding));
        for value in values {
            let carry = hash & 0x8000 != 0;
            hash <<= 1;
            hash = hash.wrapping_add(value as u16);
            if carry {
                hash = hash.wrapping_add(1);
            }
        }
        buckets[hash as usize] = buckets[hash as usize].saturating_add(1);
    }
    buckets.iter().filter(|&&b| b == 1).count() as u64
}

/// Codes renumbered densely (0..card) in order of first appearance.
fn dense_codes(column: &[u32]) -> (Vec<u32>, u32) {
    let max = column.iter().copied().max().unwrap_or(0) as usize;
    let mut codes = Vec::with_capacity(column.len());
    let mut next = 0u32;
    if max <= column.len().saturating_mul(4).saturating_add(1024) {
        let mut map = vec![u32::MAX; max + 1];
        for &v in column {
            let slot = &mut map[v as usize];
            if *slot == u32::MAX {
                *slot = next;
                next += 1;
            }
            codes.push(*slot);
        }
    } else {
        let mut map = std::collections::HashMap::new();
        for &v in column {
            let code = *map.entry(v).or_insert_with(|| {
                next += 1;
                next - 1
            });
            codes.push(code);
        }
    }
    (codes, next)
}

/// Groups the records by their full key; each group lists its records ascending.
fn full_key_classes(dense: &[Vec<u32>], cards: &[u32], n: usize) -> Vec<Vec<u32>> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    // A mixed-radix key when the key space fits in 64 bits, else column-wise comparison.
    let fits = cards
        .iter()
        .try_fold(1u64, |acc, &c| acc.checked_mul(u64::from(c.max(1))))
        .is_some();
    if fits {
        let mut keyed: Vec<(u64, u32)> = (0..n)
            .map(|r| {
                let key = dense.iter().zip(cards).fold(0u64, |acc, (col, &card)| {
                    acc * u64::from(card.max(1)) + u64::from(col[r])
                });
                (key, r as u32)
            })
            .collect();
        keyed.sort_unstable();
        let mut classes = Vec::new();
        let mut start = 0;
        for i in 1..=keyed.len() {
            if i == keyed.len() || keyed[i].0 != keyed[start].0 {
                classes.push(keyed[start..i].iter().map(|&(_, r)| r).collect());
                start = i;
            }
        }
        return classes;
    }
    let cmp = |a: &u32, b: &u32| {
        for col in dense {
            let o = col[*a as usize].cmp(&col[*b as usize]);
            if o != std::cmp::Ordering::Equal {
                return o;
            }
        }
        a.cmp(b)
    };
    order.sort_unstable_by(cmp);
    let same = |a: u32, b: u32| dense.iter().all(|col| col[a as usize] == col[b as usize]);
    let mut classes = Vec::new();
    let mut start = 0;
    for i in 1..=order.len() {
        if i == order.len() || !same(order[i], order[start]) {
            classes.push(order[start..i].to_vec());
            start = i;
        }
    }
    classes
}

// ---------------------------------------------------------------------------------------
// The SUDA2 search
// ---------------------------------------------------------------------------------------

const NONE: u32 = u32::MAX;

/// Shape of the item-key space of a search.
struct Ctx {
    /// Number of attributes.
    attrs: usize,
    /// Number of item keys, `Σ card` (key of `a = v` is `Σ_{b<a} card_b + v`).
    keys: usize,
}

/// An item (attribute = value) of a (sub-)table and its records there.
#[derive(Debug, Clone, Copy)]
struct Item {
    attr: u32,
    key: u32,
    start: u32,
    len: u32,
    /// Index of the same item in the parent table.
    parent: u32,
}

/// A (sub-)table: its records' item keys (row-major, local record numbers, so that a
/// sub-table's records lie together in memory), its candidate items (each in ≥ 2 and not
/// all records) ascending by support, and their local records (ascending) in one buffer.
struct Level {
    codes: Vec<u32>,
    items: Vec<Item>,
    rows: Vec<u32>,
}

impl Level {
    fn rows_of(&self, i: usize) -> &[u32] {
        let it = &self.items[i];
        &self.rows[it.start as usize..(it.start + it.len) as usize]
    }

    fn record(&self, attrs: usize, r: u32) -> &[u32] {
        let start = r as usize * attrs;
        &self.codes[start..start + attrs]
    }
}

/// Reusable buffers of one recursion depth.
#[derive(Default)]
struct Scratch {
    /// Item key → index in the current level's items (NONE if not an item there).
    pos: Vec<u32>,
    work: Work,
}

#[derive(Default)]
struct Work {
    cnt: Vec<u32>,
    last: Vec<u32>,
    sub_of: Vec<u32>,
    touched: Vec<u32>,
    msu: Vec<u32>,
}

/// Receives the MSUs found in a table: the record (local to that table) and the items
/// (indices into that table's items).
trait Sink {
    fn push(&mut self, row: u32, items: &[u32]);
}

/// MSUs of a sub-table, flat: `row, size, items…` per MSU.
struct Flat(Vec<u32>);

impl Sink for Flat {
    fn push(&mut self, row: u32, items: &[u32]) {
        self.0.push(row);
        self.0.push(items.len() as u32);
        self.0.extend_from_slice(items);
    }
}

/// Counts of the MSUs of the whole table per record and size.
struct Counts<'a> {
    by_size: &'a mut [u32],
    m: usize,
}

impl Sink for Counts<'_> {
    fn push(&mut self, row: u32, items: &[u32]) {
        let slot = &mut self.by_size[row as usize * self.m + items.len() - 1];
        *slot = slot.saturating_add(1);
    }
}

/// Counts the MSUs of size ≤ m of the records `kept` (ascending record numbers), per
/// position in `kept` and size.
fn find_msus(dense: &[Vec<u32>], cards: &[u32], kept: &[u32], m: usize) -> Vec<u32> {
    let attrs = dense.len();
    let n = kept.len();
    let mut offsets = Vec::with_capacity(attrs);
    let mut keys = 0usize;
    for &card in cards {
        offsets.push(keys as u32);
        keys += card as usize;
    }
    let ctx = Ctx { attrs, keys };
    let mut codes = Vec::with_capacity(n * attrs);
    for &r in kept {
        codes.extend(
            dense
                .iter()
                .zip(&offsets)
                .map(|(col, &off)| off + col[r as usize]),
        );
    }
    let mut by_size = vec![0u32; n * m];

    // Top-level items: value counts per attribute.
    let mut counts = vec![0u32; keys];
    let mut first_row = vec![NONE; keys];
    for (r, record) in codes.chunks_exact(attrs).enumerate() {
        for &key in record {
            counts[key as usize] += 1;
            if first_row[key as usize] == NONE {
                first_row[key as usize] = r as u32;
            }
        }
    }
    let mut items: Vec<Item> = Vec::new();
    for a in 0..attrs {
        for v in 0..cards[a] {
            let key = offsets[a] as usize + v as usize;
            let c = counts[key];
            if c == 1 {
                // A value no other record has: a 1-MSU (sdcMicro counts these even when
                // the table has a single record).
                by_size[first_row[key] as usize * m] += 1;
            } else if c >= 2 && (c as usize) < n {
                items.push(Item {
                    attr: a as u32,
                    key: key as u32,
                    start: 0,
                    len: c,
                    parent: NONE,
                });
            }
        }
    }
    if m < 2 || items.is_empty() {
        return by_size;
    }
    items.sort_by_key(|it| (it.len, it.key));
    let mut start = 0u32;
    let mut fill = vec![NONE; keys];
    for it in items.iter_mut() {
        it.start = start;
        fill[it.key as usize] = start;
        start += it.len;
    }
    let mut rows = vec![0u32; start as usize];
    for (r, record) in codes.chunks_exact(attrs).enumerate() {
        for &key in record {
            let slot = &mut fill[key as usize];
            if *slot != NONE {
                rows[*slot as usize] = r as u32;
                *slot += 1;
            }
        }
    }
    let level = Level { codes, items, rows };
    let mut pos = vec![NONE; keys];
    for (j, it) in level.items.iter().enumerate() {
        pos[it.key as usize] = j as u32;
    }

    // The top-level items are independent: threads take them in turn and count into their
    // own buffers, which are then added up (integer counts, so the result does not depend
    // on the schedule).
    let threads = if n < PARALLEL_MIN_RECORDS {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(MAX_THREADS)
            .min(level.items.len())
    };
    let next = AtomicUsize::new(0);
    let run = |by_size: &mut [u32]| {
        let mut work = Work::default();
        let mut deeper: Vec<Scratch> = (1..m).map(|_| Scratch::default()).collect();
        let mut sink = Counts { by_size, m };
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= level.items.len() {
                break;
            }
            process_item(&ctx, &level, &pos, i, m, &mut work, &mut deeper, &mut sink);
        }
    };
    if threads <= 1 {
        run(&mut by_size);
        return by_size;
    }
    let partial: Vec<Vec<u32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut own = vec![0u32; n * m];
                    run(&mut own);
                    own
                })
            })
            .collect();
        run(&mut by_size);
        // A worker can only fail by panicking (a bug, as on one thread): pass it on.
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(own) => own,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    for own in partial {
        for (total, c) in by_size.iter_mut().zip(own) {
            *total = total.saturating_add(c);
        }
    }
    by_size
}

/// Below this many records the search runs on one thread.
const PARALLEL_MIN_RECORDS: usize = 50_000;
/// Upper bound on the threads of one search.
const MAX_THREADS: usize = 8;

/// Finds the MSUs of size 2..=k of a table whose candidate items are `level`'s.
fn find<S: Sink>(ctx: &Ctx, level: &Level, k: usize, scratch: &mut [Scratch], sink: &mut S) {
    let Some((current, deeper)) = scratch.split_first_mut() else {
        return;
    };
    if current.pos.len() < ctx.keys {
        current.pos.resize(ctx.keys, NONE);
    }
    for (j, it) in level.items.iter().enumerate() {
        current.pos[it.key as usize] = j as u32;
    }
    for i in 0..level.items.len() {
        process_item(
            ctx,
            level,
            &current.pos,
            i,
            k,
            &mut current.work,
            deeper,
            sink,
        );
    }
    for it in &level.items {
        current.pos[it.key as usize] = NONE;
    }
}

/// The MSUs of size 2..=k of the table that have item `i` as their lowest-ranked item.
#[allow(clippy::too_many_arguments)]
fn process_item<S: Sink>(
    ctx: &Ctx,
    level: &Level,
    pos: &[u32],
    i: usize,
    k: usize,
    work: &mut Work,
    deeper: &mut [Scratch],
    sink: &mut S,
) {
    let attrs = ctx.attrs;
    let item = level.items[i];
    let rows_i = level.rows_of(i);
    let len_i = item.len;
    let items_len = level.items.len();
    if work.cnt.len() < items_len {
        work.cnt.resize(items_len, 0);
        work.last.resize(items_len, 0);
        work.sub_of.resize(items_len, NONE);
    }
    work.touched.clear();

    // Support of every later-ranked item within the sub-table of item i (the item's own
    // attribute has a single value there and is never a later-ranked item).
    for &r in rows_i {
        for &key in level.record(attrs, r) {
            let j = pos[key as usize];
            if j != NONE && j as usize > i {
                let j = j as usize;
                if work.cnt[j] == 0 {
                    work.touched.push(j as u32);
                }
                work.cnt[j] += 1;
                work.last[j] = r;
            }
        }
    }

    // Items once in the sub-table give 2-MSUs {i, j}; items in 2.. records of it (but not
    // all) are the sub-table's candidate items.
    let mut subs: Vec<u32> = Vec::new();
    for &j in &work.touched {
        let c = work.cnt[j as usize];
        if c == 1 {
            sink.push(work.last[j as usize], &[i as u32, j]);
        } else if c < len_i && k >= 3 {
            subs.push(j);
        }
    }
    if subs.is_empty() || deeper.is_empty() {
        for &j in &work.touched {
            work.cnt[j as usize] = 0;
        }
        return;
    }

    // Build the sub-table: its records (local numbers 0..len_i in the order of rows_i)
    // copied together, and its candidate items.
    subs.sort_by_key(|&j| (work.cnt[j as usize], j));
    let mut sub_items = Vec::with_capacity(subs.len());
    let mut start = 0u32;
    for (s, &j) in subs.iter().enumerate() {
        let parent = level.items[j as usize];
        let c = work.cnt[j as usize];
        work.sub_of[j as usize] = s as u32;
        sub_items.push(Item {
            attr: parent.attr,
            key: parent.key,
            start,
            len: c,
            parent: j,
        });
        // Reuse cnt as the fill pointer.
        work.cnt[j as usize] = start;
        start += c;
    }
    let mut sub_rows = vec![0u32; start as usize];
    let mut sub_codes = Vec::with_capacity(rows_i.len() * attrs);
    for (local, &r) in rows_i.iter().enumerate() {
        for &key in level.record(attrs, r) {
            sub_codes.push(key);
            let j = pos[key as usize];
            if j != NONE && j as usize > i && work.sub_of[j as usize] != NONE {
                let slot = &mut work.cnt[j as usize];
                sub_rows[*slot as usize] = local as u32;
                *slot += 1;
            }
        }
    }
    for &j in &work.touched {
        work.cnt[j as usize] = 0;
        work.sub_of[j as usize] = NONE;
    }
    let sub = Level {
        codes: sub_codes,
        items: sub_items,
        rows: sub_rows,
    };

    // MSUs of the sub-table, then the special-row test in this table.
    let mut found = Flat(Vec::new());
    find(ctx, &sub, k - 1, deeper, &mut found);
    drop(sub.codes);
    let iattr = item.attr as usize;
    let flat = &found.0;
    let mut x = 0usize;
    while x + 1 < flat.len() {
        let local = flat[x] as usize;
        let size = flat[x + 1] as usize;
        let members = &flat[x + 2..x + 2 + size];
        x += 2 + size;
        work.msu.clear();
        work.msu.push(i as u32);
        let mut best = NONE;
        for &s in members {
            let j = sub.items[s as usize].parent;
            work.msu.push(j);
            if best == NONE || level.items[j as usize].len < level.items[best as usize].len {
                best = j;
            }
        }
        // Is there a record of this table without item i that contains the sub-MSU?
        let others = &work.msu[1..];
        let special = level.rows_of(best as usize).iter().any(|&r| {
            let record = level.record(attrs, r);
            record[iattr] != item.key
                && others.iter().all(|&j| {
                    let it = &level.items[j as usize];
                    j == best || record[it.attr as usize] == it.key
                })
        });
        if special {
            sink.push(rows_i[local], &work.msu);
        }
    }
}

#[cfg(test)]
mod tests {

    /// The work bound counts the column combinations of sizes 1 to max_size exactly, and
    /// saturates instead of overflowing.
    #[test]
    fn combinations_searched_counts_subsets_up_to_max_size() {
        assert_eq!(combinations_searched(12, 12), 4_095);
        assert_eq!(combinations_searched(40, 3), 40 + 780 + 9_880);
        assert_eq!(combinations_searched(40, 4), 10_700 + 91_390);
        assert_eq!(combinations_searched(17, 17), 131_071);
        assert_eq!(combinations_searched(40, 40), (1u64 << 40) - 1);
        assert_eq!(combinations_searched(3, 10), 7);
        assert_eq!(combinations_searched(5_000, 5_000), u64::MAX);
        assert!(combinations_searched(17, 17) <= MAX_COMBINATIONS_SEARCHED);
        assert!(combinations_searched(18, 18) > MAX_COMBINATIONS_SEARCHED);
        assert!(combinations_searched(40, 4) <= MAX_COMBINATIONS_SEARCHED);
        assert!(combinations_searched(40, 5) > MAX_COMBINATIONS_SEARCHED);
    }

    use super::*;

    /// xorshift64* — a tiny deterministic generator for the property tests.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// MSUs by exhaustive enumeration: for every record and every attribute subset of size
    /// ≤ m, the subset is an MSU if no other record agrees on it and, for every proper
    /// non-empty subset, some other record agrees on that.
    fn brute_force(columns: &[Vec<u32>], m: usize) -> Vec<Vec<u32>> {
        let attrs = columns.len();
        let n = columns[0].len();
        let unique = |r: usize, mask: u32| {
            (0..n).all(|o| {
                o == r || (0..attrs).any(|a| mask & (1 << a) != 0 && columns[a][o] != columns[a][r])
            })
        };
        let mut result = vec![vec![0u32; m]; n];
        for (r, counts) in result.iter_mut().enumerate() {
            for mask in 1u32..(1 << attrs) {
                let size = mask.count_ones() as usize;
                if size > m || !unique(r, mask) {
                    continue;
                }
                // Every proper non-empty subset must be shared.
                let mut minimal = true;
                let mut sub = (mask - 1) & mask;
                while sub != 0 {
                    if unique(r, sub) {
                        minimal = false;
                        break;
                    }
                    sub = (sub - 1) & mask;
                }
                if minimal {
                    counts[size - 1] += 1;
                }
            }
        }
        result
    }

    fn strings_to_codes(rows: &[&[&str]]) -> Vec<Vec<u32>> {
        let attrs = rows[0].len();
        (0..attrs)
            .map(|a| {
                let mut levels: Vec<&str> = rows.iter().map(|r| r[a]).collect();
                levels.sort_unstable();
                levels.dedup();
                rows.iter()
                    .map(|r| levels.iter().position(|&l| l == r[a]).unwrap() as u32 + 1)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn property_matches_brute_force() {
        let mut tables = 0;
        for seed in 1..=400u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let attrs = 1 + rng.below(6) as usize;
            let n = 1 + rng.below(40) as usize;
            let columns: Vec<Vec<u32>> = (0..attrs)
                .map(|_| {
                    let card = 1 + rng.below(5);
                    // Skewed values: min of two draws.
                    (0..n)
                        .map(|_| rng.below(card).min(rng.below(card)) as u32 * 3)
                        .collect()
                })
                .collect();
            for m in 1..=attrs {
                let expected = brute_force(&columns, m);
                let got = suda2(&columns, m, 0.01).unwrap();
                for (r, counts) in expected.iter().enumerate() {
                    assert_eq!(
                        &got.msu_by_size[r * m..(r + 1) * m],
                        &counts[..],
                        "seed {seed}, m {m}, record {r}, columns {columns:?}"
                    );
                    let total: u32 = counts.iter().sum();
                    assert_eq!(got.msu_count[r], total);
                    let min = counts.iter().position(|&c| c > 0).map(|k| k as u32 + 1);
                    assert_eq!(got.min_msu_size[r], min);
                }
                tables += 1;
            }
        }
        assert!(tables > 1000);
    }

    #[test]
    fn property_larger_tables() {
        for seed in 1..=20u64 {
            let mut rng = Rng(seed * 7919 + 13);
            let attrs = 4 + rng.below(4) as usize;
            let n = 50 + rng.below(150) as usize;
            let columns: Vec<Vec<u32>> = (0..attrs)
                .map(|_| {
                    let card = 2 + rng.below(8);
                    (0..n)
                        .map(|_| rng.below(card).min(rng.below(card)) as u32)
                        .collect()
                })
                .collect();
            let m = 1 + rng.below(attrs as u64) as usize;
            let expected = brute_force(&columns, m);
            let got = suda2(&columns, m, 0.01).unwrap();
            for (r, counts) in expected.iter().enumerate() {
                assert_eq!(
                    &got.msu_by_size[r * m..(r + 1) * m],
                    &counts[..],
                    "seed {seed}"
                );
            }
        }
    }

    #[test]
    fn sdcmicro_book_example() {
        // sdcMicro tests/testthat/test_suda2.R, "suda2 book example" (Templ 2017): scores of
        // records 5..8 are 4, 2, 6, 8. With M = 4, w(1) = 3! = 6, w(2) = 2! = 2:
        // record 5 (20s, female, 50k-, university): {female, university}, {20s, university}
        //   → 2 + 2 = 4; record 6: {female, highschool} → 2; record 7: {middleschool} → 6;
        // record 8: {60s} and {male, university} → 6 + 2 = 8.
        let rows: [&[&str]; 8] = [
            &["20s", "male", "50k+", "highschool"],
            &["20s", "male", "50k+", "highschool"],
            &["20s", "male", "50k-", "highschool"],
            &["20s", "male", "50k-", "highschool"],
            &["20s", "female", "50k-", "university"],
            &["20s", "female", "50k-", "highschool"],
            &["20s", "female", "50k-", "middleschool"],
            &["60s", "male", "50k-", "university"],
        ];
        let columns = strings_to_codes(&rows);
        let r = suda2(&columns, 4, 0.01).unwrap();
        assert_eq!(r.score, vec![0.0, 0.0, 0.0, 0.0, 4.0, 2.0, 6.0, 8.0]);
        assert_eq!(r.msu_count, vec![0, 0, 0, 0, 2, 1, 1, 2]);
        assert_eq!(r.min_msu_size[7], Some(1));
    }

    /// The SDC guidelines' ten records that sdcMicro's suda2 tests use (region, sex,
    /// education, work).
    const GUIDELINE: [&[&str]; 10] = [
        &["Urban", "Female", "Secondary incomplete", "Employed"],
        &["Urban", "Female", "Secondary incomplete", "Employed"],
        &["Urban", "Female", "Primary incomplete", "Non-LF"],
        &["Urban", "Male", "Secondary complete", "Employed"],
        &["Rural", "Female", "Secondary complete", "Unemployed"],
        &["Urban", "Male", "Secondary complete", "Employed"],
        &["Urban", "Female", "Primary complete", "Non-LF"],
        &["Urban", "Male", "Post-secondary", "Unemployed"],
        &["Urban", "Female", "Secondary incomplete", "Non-LF"],
        &["Urban", "Female", "Secondary incomplete", "Non-LF"],
    ];

    #[test]
    fn sdcmicro_guideline_example() {
        // sdcMicro tests/testthat/test_suda2.R, "suda2 sdc guideline": scores
        // 0, 0, 6, 0, 12, 0, 6, 10, 0, 0. Record 5 (Rural, Female, Secondary complete,
        // Unemployed): {Rural} 6 + {Female, Unemployed} 2 + {Secondary complete, Unemployed}
        // 2 + {Female, Secondary complete} 2 = 12.
        let columns = strings_to_codes(&GUIDELINE);
        let r = suda2(&columns, 4, 0.01).unwrap();
        assert_eq!(
            r.score,
            vec![0.0, 0.0, 6.0, 0.0, 12.0, 0.0, 6.0, 10.0, 0.0, 0.0]
        );
        // U = 4 records unique on the full key (3, 5, 7, 8); P = 6 (pairs 1-2, 4-6, 9-10).
        assert_eq!(r.sample_uniques, 4);
        assert_eq!(r.records_in_pairs, 6);
    }

    #[test]
    fn dis_suda_formula() {
        // Guideline example, M = 4: Q = 1 + (8 − 4)/20 = 1.2, π = 0.01 (single precision).
        // Dis = 4π / (4π + 6(1 − π)); A = Σ s^{−Q} over s ∈ {6, 12, 6, 10};
        // dis(s) = 1 / (1 + (4/Dis − 4) / (s^Q · A)).
        let columns = strings_to_codes(&GUIDELINE);
        let r = suda2(&columns, 4, 0.01).unwrap();
        let f = 0.01f32;
        let dis = 4.0f32 * f / (4.0f32 * f + 6.0f32 * (1.0f32 - f));
        assert_eq!(r.dis, f64::from(dis));
        let q = f64::from(1.0f32 + 4.0f32 / 20.0f32);
        let a: f64 = [6.0f64, 12.0, 6.0, 10.0]
            .iter()
            .map(|s| 1.0 / s.powf(q))
            .sum();
        let numerator = f64::from(4.0f32 / dis - 4.0f32);
        for (s, d) in r.score.iter().zip(&r.dis_score) {
            if *s == 0.0 {
                assert_eq!(*d, 0.0);
            } else {
                let expected = 1.0 / (1.0 + numerator / (s.powf(q) * a));
                assert!((d - expected).abs() < 1e-15);
            }
        }
        // The DIS scores of the uniques sum to about Dis·U's share: they are probabilities
        // in (0, 1) that grow with the SUDA score.
        assert!(r.dis_score[4] > r.dis_score[7] && r.dis_score[7] > r.dis_score[2]);
        assert!(r.dis_score.iter().all(|&d| (0.0..1.0).contains(&d)));
    }

    #[test]
    fn weights_follow_sdcmicro() {
        // Original: (M − k)!; M = 5 → 24, 6, 2, 1, 1.
        let w: Vec<f64> = (1..=5)
            .map(|k| msu_weight(5, k, SudaScoring::Original))
            .collect();
        assert_eq!(w, vec![24.0, 6.0, 2.0, 1.0, 1.0]);
        // Alternative: (2^{M−k} − 1)·k!(M−k)!/M!; M = 4, k = 1: 7·1·6/24 = 1.75;
        // k = 2: 3·2·2/24 = 0.5; k = 3: 1·6·1/24 = 0.25; k = 4: 0.
        let w: Vec<f64> = (1..=4)
            .map(|k| msu_weight(4, k, SudaScoring::Alternative))
            .collect();
        assert_eq!(w, vec![1.75, 0.5, 0.25, 0.0]);
    }

    #[test]
    fn fewer_than_three_attributes_use_m_three() {
        // sdcMicro pads one or two key variables with constant columns, so weights use M = 3.
        let columns = vec![vec![1, 2, 2, 3], vec![1, 1, 2, 2]];
        let r = suda2(&columns, 2, 0.01).unwrap();
        assert_eq!(r.score_attributes, 3);
        // Record 0: {a=1} (weight 2! = 2); record 3: {a=3} (2); record 1: {a=2, b=1} (1);
        // record 2: {a=2, b=2} (1).
        assert_eq!(r.score, vec![2.0, 1.0, 1.0, 2.0]);
    }

    #[test]
    fn edge_cases() {
        assert_eq!(suda2(&[], 1, 0.01), Err(SudaError::NoQuasiIdentifiers));
        assert_eq!(
            suda2(&[vec![1], vec![]], 1, 0.01),
            Err(SudaError::RaggedColumns)
        );
        assert_eq!(suda2(&[vec![1]], 0, 0.01), Err(SudaError::InvalidMaxSize));
        assert_eq!(suda2(&[vec![1]], 2, 0.01), Err(SudaError::InvalidMaxSize));
        assert_eq!(
            suda2(&[vec![1]], 1, 1.5),
            Err(SudaError::InvalidDisFraction)
        );
        // No records.
        let r = suda2(&[vec![], vec![]], 2, 0.01).unwrap();
        assert!(r.score.is_empty());
        // One record: each value is a 1-MSU (as in sdcMicro).
        let r = suda2(&[vec![7], vec![9], vec![1]], 3, 0.01).unwrap();
        assert_eq!(r.msu_count, vec![3]);
        // All records identical: no MSUs, no uniques, all scores 0.
        let r = suda2(&[vec![4; 10], vec![2; 10], vec![0; 10]], 3, 0.0).unwrap();
        assert!(r.score.iter().all(|&s| s == 0.0));
        assert!(r.dis_score.iter().all(|&s| s == 0.0));
        // Huge codes are renumbered.
        let r = suda2(&[vec![u32::MAX, 0, 0], vec![5, 5, 6]], 2, 1.0).unwrap();
        assert_eq!(r.msu_count, vec![1, 1, 1]);
        assert!(r.dis_score.iter().all(|d| d.is_finite()));
    }

    #[test]
    fn hash_bucket_count_follows_sdcmicro() {
        // Keys (0, 2) and (1, 0) collide in sdcMicro's hash (0·2 + 2 = 1·2 + 0), so the two
        // full-key uniques share a bucket and sdcMicro counts U = 0 for them.
        let columns = vec![vec![0, 1, 5, 5], vec![2, 0, 7, 7], vec![1, 1, 1, 1]];
        let mut config = SudaConfig::new(3);
        config.dis_uniques = DisUniques::SdcMicroHashBuckets;
        let r = suda2_with(&columns, &config).unwrap();
        assert_eq!(r.sample_uniques, 0);
        let r = suda2(&columns, 3, 0.01).unwrap();
        assert_eq!(r.sample_uniques, 2);
    }

    /// Timing on synthetic data of the two target shapes; run with
    /// `cargo test --release -- --ignored --nocapture suda_timing`.
    #[test]
    #[ignore]
    fn suda_timing() {
        fn skewed(rng: &mut Rng, n: usize, card: u64) -> Vec<u32> {
            (0..n)
                .map(|_| {
                    // Roughly Zipf-like: minimum of three uniform draws.
                    let a = rng.below(card);
                    let b = rng.below(card);
                    let c = rng.below(card);
                    a.min(b).min(c) as u32
                })
                .collect()
        }
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let big: Vec<Vec<u32>> = [100u64, 90, 60, 20, 7]
            .iter()
            .map(|&c| skewed(&mut rng, 1_360_000, c))
            .collect();
        let t = std::time::Instant::now();
        let r = suda2(&big, 3, 0.01).unwrap();
        let msus: u64 = r.msu_count.iter().map(|&c| u64::from(c)).sum();
        println!(
            "1.36M x 5, m = 3: {:?}, {} MSUs, U = {}",
            t.elapsed(),
            msus,
            r.sample_uniques
        );
        let adult: Vec<Vec<u32>> = [74u64, 2, 5, 7, 16, 41, 7, 14, 2]
            .iter()
            .map(|&c| skewed(&mut rng, 30_162, c))
            .collect();
        let t = std::time::Instant::now();
        let r = suda2(&adult, 3, 0.01).unwrap();
        let msus: u64 = r.msu_count.iter().map(|&c| u64::from(c)).sum();
        println!(
            "30162 x 9, m = 3: {:?}, {} MSUs, U = {}",
            t.elapsed(),
            msus,
            r.sample_uniques
        );
        let t = std::time::Instant::now();
        let r = suda2(&adult, 9, 0.01).unwrap();
        let msus: u64 = r.msu_count.iter().map(|&c| u64::from(c)).sum();
        println!("30162 x 9, m = 9: {:?}, {} MSUs", t.elapsed(), msus);
    }
}
