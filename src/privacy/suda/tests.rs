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

use super::scores::*;
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
