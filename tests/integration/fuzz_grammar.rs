//! Stable-toolchain fuzzing of the argument grammar and of hierarchy validation, with
//! grammar-aware random inputs (proptest). The same properties as the libFuzzer targets in
//! `fuzz/`: no input panics, every rejection is an error value, accepted inputs are
//! internally consistent.
//!
//! `cargo test --test integration fuzz_grammar` runs a few hundred cases per property. The `#[ignore]`d
//! tests fuzz for a fixed time (default 600 s each, `FUZZ_SECONDS` to change):
//!
//! ```sh
//! FUZZ_SECONDS=600 nice cargo test --test integration fuzz_grammar -- --ignored --test-threads 1
//! ```

use std::time::{Duration, Instant};

use datafusion::common::ScalarValue;
use datafusion_anonymize::internals::Hierarchy;
use datafusion_anonymize::internals::ParamValues;
use datafusion_anonymize::internals::ANONYMIZE_PARAMS;
use datafusion_anonymize::internals::{bind, CallArgs};
use datafusion_anonymize::internals::{
    interval_hierarchy_rows, mask_hierarchy_rows, parse_integer_domain, IntervalLevel,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Largest domain expanded into hierarchy rows (bigger ones are legal but only cost memory;
/// the parser still runs on them).
const MAX_EXPANDED_DOMAIN: usize = 4096;

/// Text close to the grammars (digits, separators, signs, ranges, parameter names) mixed
/// with arbitrary strings.
fn grammar_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[-0-9., |]{0,24}",
        2 => "(-?[0-9]{1,20}(\\.\\.-?[0-9]{1,20})?, ?){0,4}",
        1 => "(source|method|qi|informative|epsilon|seed|max_nodes|variant|budget_split|epsilno|[a-z_]{1,12})",
        2 => any::<String>(),
    ]
}

fn scalar() -> impl Strategy<Value = ScalarValue> {
    prop_oneof![
        grammar_text().prop_map(|s| ScalarValue::Utf8(Some(s))),
        any::<i64>().prop_map(|x| ScalarValue::Int64(Some(x))),
        any::<i32>().prop_map(|x| ScalarValue::Int32(Some(x))),
        any::<u64>().prop_map(|x| ScalarValue::UInt64(Some(x))),
        any::<f64>().prop_map(|x| ScalarValue::Float64(Some(x))),
        any::<bool>().prop_map(|x| ScalarValue::Boolean(Some(x))),
        valid_decimal(),
        Just(ScalarValue::Null),
    ]
}

/// A Decimal128 literal as the SQL planner can produce one: precision 1..=38, scale
/// 0..=precision, a value with at most `precision` digits. (Arrow's `Display` of a decimal
/// whose value has more digits than its precision panics; the planner never builds one,
/// since casts to decimal check the precision.)
fn valid_decimal() -> impl Strategy<Value = ScalarValue> {
    (1u8..=38, any::<u8>(), any::<i128>()).prop_map(|(p, s, v)| {
        let scale = (s % (p + 1)) as i8;
        let value = v % 10i128.pow(u32::from(p));
        ScalarValue::Decimal128(Some(value), p, scale)
    })
}

fn call_args() -> impl Strategy<Value = CallArgs> {
    (
        prop::collection::vec(scalar(), 0..3),
        prop::collection::vec((grammar_text(), scalar()), 0..6),
    )
        .prop_map(|(positional, named)| CallArgs { positional, named })
}

/// Binding and every getter: never a panic.
fn check_call(call: CallArgs) {
    if let Ok(bound) = bind("anonymize", &ANONYMIZE_PARAMS, &["source"], call) {
        for param in ANONYMIZE_PARAMS.iter() {
            let _ = bound.has(param.name);
            let _ = bound.string(param.name);
            let _ = bound.f64(param.name);
            let _ = bound.u64(param.name);
            let _ = bound.bool(param.name);
        }
        let _ = bound.required_string("source");
        let _ = bound.names().count();
        if let Ok(values) = ParamValues::parse(
            "anonymize",
            "anonymize",
            ANONYMIZE_PARAMS.iter(),
            bound.values(),
        ) {
            let _ = values.canonical();
        }
    }
}

/// Domain and interval-level parsers, and the hierarchy they build.
fn check_intervals(domain: &str, levels: &[String]) {
    let levels: Vec<IntervalLevel> = levels
        .iter()
        .filter_map(|l| IntervalLevel::parse(l).ok())
        .collect();
    if let Ok(values) = parse_integer_domain(domain) {
        assert!(!values.is_empty());
        assert!(values.windows(2).all(|w| w[0] < w[1]), "domain not sorted");
        if values.len() <= MAX_EXPANDED_DOMAIN && !levels.is_empty() {
            if let Ok(rows) = interval_hierarchy_rows(&values, &levels) {
                assert_eq!(rows.len(), values.len());
                let _ = Hierarchy::from_rows("fuzz", &rows);
            }
        }
    }
}

/// Mask builder.
fn check_mask(values: &[String], keep: &[u8]) {
    let keep: Vec<usize> = keep.iter().map(|&k| usize::from(k)).collect();
    if let Ok(rows) = mask_hierarchy_rows(values, &keep) {
        assert_eq!(rows.len(), values.len());
        let _ = Hierarchy::from_rows("fuzz", &rows);
    }
}

/// Hierarchy validation; accepted hierarchies are consistent and round-trip.
fn check_hierarchy(rows: &[Vec<String>]) {
    let Ok(h) = Hierarchy::from_rows("fuzz", rows) else {
        return;
    };
    let height = h.height();
    assert!(h.leaf_count() >= 1 && h.leaf_count() <= rows.len());
    for row in rows {
        assert!(h.leaf_code(&row[0]).is_some());
    }
    for level in 0..=height {
        let ncp = h.ncp_per_code(level);
        assert_eq!(ncp.len(), h.level(level).cardinality());
        assert!(ncp.iter().all(|x| (0.0..=1.0).contains(x)));
        for to in level..=height {
            let map = h.level_map(level, to);
            let upper = h.level(to).cardinality() as u32;
            assert!(map.iter().all(|&c| c < upper));
        }
    }
    let again = Hierarchy::from_rows("fuzz", &h.to_rows()).expect("to_rows output validates");
    assert_eq!(again.to_rows(), h.to_rows());
}

/// Small alphabets make ragged rows, shared labels and two-parent conflicts likely.
fn hierarchy_rows() -> impl Strategy<Value = Vec<Vec<String>>> {
    let cell = prop_oneof![4 => "[abc*]{0,2}", 1 => any::<String>()];
    let width = 1usize..5;
    (
        width,
        prop::collection::vec(prop::collection::vec(cell, 1..5), 0..12),
    )
        .prop_map(|(w, mut rows)| {
            // Mostly rectangular, sometimes ragged.
            for (i, row) in rows.iter_mut().enumerate() {
                if i % 5 != 4 {
                    row.resize(w, "*".to_string());
                }
            }
            rows
        })
}

fn grammar_input() -> impl Strategy<Value = (CallArgs, String, Vec<String>, Vec<String>, Vec<u8>)> {
    (
        call_args(),
        grammar_text(),
        prop::collection::vec(grammar_text(), 0..4),
        prop::collection::vec("[A-Z]?[0-9]{0,4}", 0..6),
        prop::collection::vec(any::<u8>(), 0..4),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn argument_grammar_never_panics(input in grammar_input()) {
        let (call, domain, levels, values, keep) = input;
        check_call(call);
        check_intervals(&domain, &levels);
        check_mask(&values, &keep);
    }

    #[test]
    fn hierarchy_validation_never_panics(rows in hierarchy_rows()) {
        check_hierarchy(&rows);
    }
}

/// Runs `check` on inputs from `strategy` for `FUZZ_SECONDS` (default 600) seconds, in
/// rounds of fresh seeds; prints the number of cases.
fn fuzz_for_a_while<S: Strategy>(name: &str, strategy: S, check: impl Fn(S::Value)) {
    let seconds: u64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut cases: u64 = 0;
    let mut round: u64 = 0;
    while Instant::now() < deadline {
        round += 1;
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&round.to_le_bytes());
        let mut runner = TestRunner::new_with_rng(
            Config {
                cases: 2_000,
                failure_persistence: None,
                ..Config::default()
            },
            TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
        );
        let result = runner.run(&strategy, |value| {
            check(value);
            Ok(())
        });
        if let Err(e) = result {
            panic!("{name}: failure after {cases} cases: {e}");
        }
        cases += 2_000;
    }
    println!("{name}: {cases} cases in {seconds} s, no failure");
}

#[test]
#[ignore = "long fuzzing run; see the module documentation"]
fn fuzz_argument_grammar() {
    fuzz_for_a_while(
        "argument grammar",
        grammar_input(),
        |(call, domain, levels, values, keep)| {
            check_call(call);
            check_intervals(&domain, &levels);
            check_mask(&values, &keep);
        },
    );
}

#[test]
#[ignore = "long fuzzing run; see the module documentation"]
fn fuzz_hierarchy_validation() {
    fuzz_for_a_while("hierarchy validation", hierarchy_rows(), |rows| {
        check_hierarchy(&rows)
    });
}
