use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use datafusion::arrow::array::{Array, Int32Array, StringArray};

use super::diseases::{disease_groups, Sexes};
use super::model::Model;
use super::tables::{allocate_los, scale_count, target_los_sum};
use super::*;

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
        generate_nps(NPS_DEFAULT_ROWS, NPS_DEFAULT_SEED, 65_536, &|| false).expect("generation")
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
    let a = generate_nps(50_000, 7, 8_192, &|| false).expect("generation");
    let b = generate_nps(50_000, 7, 8_192, &|| false).expect("generation");
    assert_eq!(a, b);
    let c = generate_nps(50_000, 8, 8_192, &|| false).expect("generation");
    assert_ne!(a, c);
    assert_ne!(records(&a), records(&c));
}

#[test]
fn batch_size_only_changes_the_cuts() {
    let a = generate_nps(30_000, 3, 1_000, &|| false).expect("generation");
    let b = generate_nps(30_000, 3, 65_536, &|| false).expect("generation");
    assert_eq!(a.len(), 30);
    assert!(a.iter().all(|batch| batch.num_rows() == 1_000));
    assert_eq!(b.len(), 1);
    assert_eq!(records(&a), records(&b));
    let c = generate_nps(10, 3, 3, &|| false).expect("generation");
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
    assert!(generate_nps(0, 1, 10, &|| false)
        .expect("generation")
        .is_empty());
    let one = generate_nps(1, 1, 10, &|| false).expect("generation");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].num_rows(), 1);
    let thousand = generate_nps(1_000, 1, 256, &|| false).expect("generation");
    assert_eq!(
        thousand.iter().map(RecordBatch::num_rows).sum::<usize>(),
        1_000
    );
    assert_eq!(thousand.len(), 4);
    // Every scaled stroke count rounds to zero at this size.
    assert!(records(&thousand).iter().all(|r| !is_planted(r)));
    assert!(matches!(
        generate_nps(10, 1, 0, &|| false),
        Err(ArrowError::InvalidArgumentError(_))
    ));
}

#[test]
fn other_sizes_scale_the_stroke_counts() {
    let rows = NPS_DEFAULT_ROWS / 10;
    let batches = generate_nps(rows, 11, 65_536, &|| false).expect("generation");
    let recs = records(&batches);
    assert_eq!(recs.len(), rows);
    let counts = stroke_counts(&recs);
    for (sex, table) in [("M", &T9), ("F", &T10)] {
        for &(label, full) in table.iter() {
            let expected = (full as f64 * rows as f64 / NPS_DEFAULT_ROWS as f64).round() as usize;
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
    for ch in disease_groups().expect("valid disease data") {
        for &(code, _) in &ch.codes {
            let b = code.as_bytes();
            assert!(
                b.len() == 4 && b[0].is_ascii_uppercase() && b[1..].iter().all(u8::is_ascii_digit),
                "{code}"
            );
            assert!(seen.insert(code), "duplicate code {code}");
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
    let small = generate_nps(50_000, 7, 8_192, &|| false).expect("generation");
    assert_eq!(records_fingerprint(&records(&small)), 14527630157082495237);
}

/// The disease groups and everything derived from them are pinned: codes and their
/// order, group of each code, surgery rates, group parameters and the per-band weights.
#[test]
fn disease_model_is_pinned() {
    let groups = disease_groups().expect("valid disease data");
    let model = Model::new(groups);
    let sizes: Vec<usize> = groups.iter().map(|g| g.codes.len()).collect();
    assert_eq!(
        sizes,
        [25, 41, 10, 29, 25, 31, 32, 49, 29, 47, 64, 20, 47, 21, 6, 22, 26, 10, 15, 63, 16]
    );
    let surgical = groups
        .iter()
        .flat_map(|g| &g.codes)
        .filter(|(_, surgical)| *surgical)
        .count();
    assert_eq!(model.codes.len(), 628);
    assert_eq!(surgical, 143);
    let mut h = Fnv::new();
    for ch in groups {
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
    let model = Model::new(disease_groups().expect("valid disease data"));
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

#[test]
fn generation_stops_when_asked() {
    let asked = std::cell::Cell::new(0);
    let stopped = || {
        asked.set(asked.get() + 1);
        asked.get() > 2
    };
    let err = generate_nps(100_000, 1, 1_000, &stopped).expect_err("stopped");
    assert!(err.to_string().contains("nps_demo(): cancelled"), "{err}");
    // Asked before each of the first three batches, then it stopped.
    assert_eq!(asked.get(), 3);
}
