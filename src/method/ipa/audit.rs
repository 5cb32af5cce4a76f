//! Differential-privacy audits of IPA's components (see `testing::audit` for the decision
//! rule, slack and the false-failure rate of 1e-6 per audit).
//!
//! The components whose claims hold are audited to pass, each with a power check that the
//! same samples fail a smaller ε: the noisy suppression threshold on a fixed partition, the
//! exponential-mechanism value choice, and the node choice on bounded scores. The
//! components whose claims do not hold are audited to *fail*, which backs the warnings of
//! the `guarantee` metadata with measurements: class visibility (docs/METHODS.md §1.11 F2),
//! the reference variant's clamped threshold, and the one-sided counterfeit count (F3).
//!
//! Each audit runs in under five seconds in the debug profile. Larger versions are
//! `#[ignore]`d; run them with `cargo test --lib audit -- --ignored` (both together take
//! about two minutes in the debug profile).

use super::*;
use crate::lattice::Lattice;
use crate::mechanism::rng::rng_from_seed;
use crate::method::Standalone;
use crate::testing::audit::{
    assert_private, assert_violated, audit, clopper_pearson, histogram, ALPHA,
};
use crate::testing::{rows, weighted_histogram};

/// Trials per dataset of the fast audits.
const TRIALS: u64 = 200_000;

fn params(
    variant: IpaVariant,
    eps_sup: f64,
    eps_ins: f64,
    eps_val: f64,
    eps_cand: f64,
) -> IpaParams {
    IpaParams {
        variant,
        eps_sup,
        eps_ins,
        eps_val,
        eps_cand,
        eps_means: 0.0,
        threshold: 2,
        insert_into_suppressed: true,
        node_score: NodeScore::Paper,
        qi_weights: Vec::new(),
        workload: None,
        counterfeit_values: CounterfeitValues::Class,
        counterfeit_by: None,
    }
}

/// Histogram of the suppression decision for a class of `n` records: bin 0 suppressed,
/// bin 1 visible.
fn threshold_histogram(p: &IpaParams, n: u64, trials: u64, seed: u64) -> Vec<u64> {
    let scales = Scales::new(p).expect("valid scales");
    histogram(2, trials, seed, |rng| {
        usize::from(!suppress(n, p, &scales, rng))
    })
}

/// Paper threshold `n <= t + Lap((t-1)/ε_sup)` on a fixed partition (the class exists in
/// both datasets, with n = 1 and n = 2 records): ε_sup/(t−1)-DP. With ε_sup = 1, t = 2 the
/// visibility ratio is exactly e^1 (both counts in the left tail), so the claim is tight.
#[test]
fn audit_ipa_noisy_threshold_on_fixed_partition() {
    let p = params(IpaVariant::Paper, 1.0, 0.3, 0.3, 0.3);
    let d = threshold_histogram(&p, 1, TRIALS, 1);
    let d2 = threshold_histogram(&p, 2, TRIALS, 2);
    assert_private(&audit(&d, &d2, 1.0, 0.0, ALPHA), "threshold, eps_sup = 1");
    assert_violated(&audit(&d, &d2, 0.7, 0.0, ALPHA), "threshold power check");

    // The default split (ε_sup = 0.1): private at 0.1.
    let p = params(IpaVariant::Paper, 0.1, 0.3, 0.3, 0.3);
    let d = threshold_histogram(&p, 1, TRIALS, 3);
    let d2 = threshold_histogram(&p, 2, TRIALS, 4);
    assert_private(&audit(&d, &d2, 0.1, 0.0, ALPHA), "threshold, eps_sup = 0.1");
}

/// The reference variant clamps the threshold at t: a class of 1 record (t = 2) is always
/// suppressed, one of 2 records visible with probability 1/2, so δ ≥ 0.5
/// (docs/METHODS.md §1.11 F2, reference variant).
#[test]
fn audit_ipa_reference_threshold_clamp_is_not_private() {
    let p = params(IpaVariant::Reference, 0.1, 0.3, 0.3, 1.0 / 3.0);
    let d = threshold_histogram(&p, 1, TRIALS / 4, 5);
    let d2 = threshold_histogram(&p, 2, TRIALS / 4, 6);
    assert_eq!(d[1], 0, "a class below t is never visible");
    assert_violated(&audit(&d, &d2, 1.0, 0.45, ALPHA), "clamped threshold");
    assert_private(
        &audit(&d, &d2, 1.0, 0.51, ALPHA),
        "clamped threshold, delta 0.51",
    );
}

/// One counterfeit value drawn by the exponential mechanism over a public domain of three
/// values; D' adds one record, whose value was absent from the class in D (the present /
/// absent split changes). The claim ε_val holds for one draw.
#[test]
fn audit_ipa_value_choice() {
    let eps_val = 2.0;
    let draw = |real: Vec<(u32, u64)>, seed: u64| {
        let n: u64 = real.iter().map(|&(_, c)| c).sum();
        let (weights, absent) = value_choice_weights(&real, n, 3, eps_val);
        histogram(3, TRIALS, seed, |rng| {
            draw_value(rng, &real, &weights, absent).expect("valid weights") as usize
        })
    };
    let d = draw(vec![(0, 3), (1, 1)], 7);
    let d2 = draw(vec![(0, 3), (1, 1), (2, 1)], 8);
    assert!(
        d.iter().all(|&c| c > 0),
        "every domain value can be drawn: {d:?}"
    );
    assert_private(&audit(&d, &d2, eps_val, 0.0, ALPHA), "value choice");
    // Scores move by at most 1/(n+1) here, far inside ΔS = 1, so the choice is much more
    // private than claimed; a power check needs the audit at a far smaller ε.
    assert_violated(
        &audit(&d, &d2, 0.01, 0.0, ALPHA),
        "value choice power check",
    );
}

/// `counterfeit_values => 'marginal'`: the noisy value histogram and one counterfeit value
/// drawn from it, on neighbouring tables (one extra record of value 1): `ε_val`-DP, with
/// a power check. Two values, one class; the draw is the only output.
#[test]
fn audit_ipa_marginal_value_draw() {
    let (h, _) = singleton_setup();
    let eps_val = 1.0;
    let draw = |extra: u64, seed: u64| {
        let rows: Vec<(Vec<u32>, u32, u64)> = [(0u32, 2u64), (1, 1 + extra)]
            .into_iter()
            .map(|(value, count)| (vec![0], value, count))
            .collect();
        let base = weighted_histogram(&[&h], &rows, 2);
        histogram(2, TRIALS, seed, |rng| {
            let marginal = MarginalValues::new(&base, 2, eps_val, rng).expect("histogram");
            marginal.draw(rng).expect("draw") as usize
        })
    };
    let d = draw(0, 31);
    let d2 = draw(1, 32);
    assert_private(&audit(&d, &d2, eps_val, 0.0, ALPHA), "marginal value draw");
    assert_violated(
        &audit(&d, &d2, 0.02, 0.0, ALPHA),
        "marginal value draw power check",
    );
}

/// `counterfeit_by`: the noisy histogram of (label, value) and one counterfeit value drawn
/// for a class of each label, on neighbouring tables (one extra record (x, value 1)):
/// `ε_val`-DP for the pair of draws, with a power check. Two labels, two values.
#[test]
fn audit_ipa_labelled_value_draw() {
    let (h, _) = singleton_setup();
    let eps_val = 1.0;
    let draw = |extra: u64, seed: u64| {
        // Counts above the noise floor (4 at ε_val = 1 over two values), so that the draws
        // depend on the one record (the power check).
        let rows: Vec<(Vec<u32>, u32, u64)> =
            vec![(vec![0], 0, 10), (vec![0], 1, 5 + extra), (vec![1], 0, 12)];
        let base = weighted_histogram(&[&h], &rows, 2);
        histogram(4, TRIALS, seed, |rng| {
            let labelled = LabelledValues::new(&base, 0, 2, 2, eps_val, rng).expect("histogram");
            let codes = base.class_codes.clone();
            let x = labelled.for_class(Some(&codes), 0).draw(rng).expect("draw") as usize;
            let y = labelled.for_class(Some(&codes), 1).draw(rng).expect("draw") as usize;
            2 * x + y
        })
    };
    let d = draw(0, 41);
    let d2 = draw(1, 42);
    assert_private(&audit(&d, &d2, eps_val, 0.0, ALPHA), "labelled value draw");
    assert_violated(
        &audit(&d, &d2, 0.02, 0.0, ALPHA),
        "labelled value draw power check",
    );
}

fn outcomes_with_il(ils: &[f64]) -> Vec<NodeOutcome> {
    ils.iter()
        .enumerate()
        .map(|(i, &il)| NodeOutcome {
            node: vec![i],
            ncp: 0.0,
            emd: 0.0,
            rate: 0.0,
            il,
            classes: 0,
            suppressed_classes: 0,
            suppressed_records: 0,
            counterfeits: 0,
            released_rows: 0,
        })
        .collect()
}

/// Node choice on bounded scores (paper: IL in [0, 3], Δu = 3). Worst case: in D node 0 is
/// perfect (IL 0) and 20 others are worst (IL 3); in D' the reverse. The selection
/// probability of node 0 then changes by a factor close to e^ε_cand.
#[test]
fn audit_ipa_node_choice() {
    let eps_cand = 2.0;
    let p = params(IpaVariant::Paper, 0.1, 0.3, 0.3, eps_cand);
    let mut d_ils = vec![3.0; 21];
    d_ils[0] = 0.0;
    let mut d2_ils = vec![0.0; 21];
    d2_ils[0] = 3.0;
    let choose = |ils: &[f64], seed: u64| {
        let outcomes = outcomes_with_il(ils);
        // Bin 0: node 0; bin 1: any other node.
        histogram(2, TRIALS, seed, |rng| {
            usize::from(choose_node(rng, &outcomes, &p).expect("valid scores") != 0)
        })
    };
    let d = choose(&d_ils, 9);
    let d2 = choose(&d2_ils, 10);
    let report = audit(&d, &d2, eps_cand, 0.0, ALPHA);
    assert_private(&report, "node choice");
    assert!(report.max_ratio_lower_bound > 5.0, "{report}");
    assert_violated(&audit(&d, &d2, 1.5, 0.0, ALPHA), "node choice power check");
}

/// A one-attribute hierarchy over values `x` and `y` (root `*`) and the one-node lattice
/// that keeps them at level 0 (`max_levels => 'q=0'`).
fn singleton_setup() -> (Hierarchy, Lattice) {
    let h = Hierarchy::from_rows("q", &rows(&[&["x", "*"], &["y", "*"]])).expect("valid hierarchy");
    let lattice = Lattice::bounded(vec![1], vec![0], vec![0], 1).expect("one node");
    (h, lattice)
}

/// Whether the release of a run on `records` (counts of x and y; one informative value)
/// shows the class `y`.
fn class_y_visible(
    h: &Hierarchy,
    lattice: &Lattice,
    x: u64,
    y: u64,
    p: &IpaParams,
    rng: &mut AnonRng,
) -> bool {
    let rows: Vec<(Vec<u32>, u32, u64)> = [(0u32, x), (1, y)]
        .into_iter()
        .filter(|&(_, count)| count > 0)
        .map(|(code, count)| (vec![code], 0, count))
        .collect();
    let base = weighted_histogram(&[h], &rows, 1);
    let result = super::run(
        &Standalone::default().input(&base, &[h], lattice, 1),
        p,
        rng,
    )
    .expect("IPA runs");
    result.release.class_codes[0].contains(&1)
}

/// docs/METHODS.md §1.11 F2: a class holding one record survives the paper's suppression with
/// probability ½·e^{−ε_sup/(t−1)} ≈ 0.452 at ε_sup = 0.1, t = 2, and never appears without
/// that record. Whole IPA runs on D (5 × x, 1 × y) and D' (5 × x): the measured visibility
/// brackets 0.452, and already these 3,000 runs per dataset contradict IPA's ε = 1 claim
/// for every δ below 0.35 (the true bound is δ ≥ 0.45; the gap is the audit's slack).
#[test]
fn audit_ipa_class_visibility_gap() {
    let (h, lattice) = singleton_setup();
    let p = IpaParams::with_defaults(IpaVariant::Paper, 1.0, 2);
    let trials = 3_000;
    let runs = |y: u64, seed: u64| {
        histogram(2, trials, seed, |rng| {
            usize::from(class_y_visible(&h, &lattice, 5, y, &p, rng))
        })
    };
    let d = runs(1, 11);
    let d2 = runs(0, 12);
    assert_eq!(d2[1], 0, "without its record the class never appears");
    let want = 0.5 * (-0.1f64).exp();
    let (lo, hi) = clopper_pearson(d[1], trials, ALPHA / 2.0);
    assert!(
        lo <= want && want <= hi,
        "visibility {} of {trials}: [{lo}, {hi}] vs {want}",
        d[1]
    );
    let report = audit(&d, &d2, p.claimed_epsilon(), 0.35, ALPHA);
    assert_violated(&report, "class visibility");
    assert!(report.max_ratio_lower_bound > 50.0, "{report}");
}

/// docs/METHODS.md §1.11 F3: the released size of a class is `n + max(0, Z)`, never below
/// `n`. With n = 5 in D and 6 in D', "size 5" has probability P[Z ≤ 0] = 1/(1+q) ≈ 0.574
/// (q = e^{−ε_ins}, ε_ins = 0.3) under D and 0 under D'.
#[test]
fn audit_ipa_insertion_count_is_one_sided() {
    let p = params(IpaVariant::Paper, 0.1, 0.3, 0.3, 0.3);
    let scales = Scales::new(&p).expect("valid scales");
    let sizes = |n: u64, seed: u64| {
        histogram(40, TRIALS / 4, seed, |rng| {
            let mut work = ClassWork {
                real: vec![(0, n)],
                ..ClassWork::default()
            };
            insert_counterfeits(&mut work, n, 2, &p, &scales, None, rng).expect("insertion");
            ((n + work.fake.len()) as usize).min(39)
        })
    };
    let d = sizes(5, 13);
    let d2 = sizes(6, 14);
    assert_eq!(d2[5], 0);
    let q = (-0.3f64).exp();
    let (lo, hi) = clopper_pearson(d[5], TRIALS / 4, ALPHA / 2.0);
    assert!(
        lo <= 1.0 / (1.0 + q) && 1.0 / (1.0 + q) <= hi,
        "P[size 5] in [{lo}, {hi}]"
    );
    assert_violated(&audit(&d, &d2, 0.3, 0.5, ALPHA), "one-sided insertion");
}

/// Larger version of the threshold audit (10^7 trials per dataset, ε_sup = 1): tightens the
/// slack to about 1% (the power check fails ε = 0.97 where the truth is 1). Run with
/// `cargo test --lib audit -- --ignored`.
#[test]
#[ignore = "slow (about a minute); run with --ignored"]
fn audit_ipa_noisy_threshold_large() {
    let p = params(IpaVariant::Paper, 1.0, 0.3, 0.3, 0.3);
    let d = threshold_histogram(&p, 1, 10_000_000, 21);
    let d2 = threshold_histogram(&p, 2, 10_000_000, 22);
    assert_private(&audit(&d, &d2, 1.0, 0.0, ALPHA), "threshold, large");
    assert_violated(
        &audit(&d, &d2, 0.97, 0.0, ALPHA),
        "threshold, large power check",
    );
}

/// Larger version of the class-visibility measurement (10^5 whole IPA runs).
#[test]
#[ignore = "slow (about a minute); run with --ignored"]
fn audit_ipa_class_visibility_gap_large() {
    let (h, lattice) = singleton_setup();
    let p = IpaParams::with_defaults(IpaVariant::Paper, 1.0, 2);
    let trials = 100_000;
    let mut rng = rng_from_seed(23);
    let visible = (0..trials)
        .filter(|_| class_y_visible(&h, &lattice, 5, 1, &p, &mut rng))
        .count() as u64;
    let (lo, hi) = clopper_pearson(visible, trials, ALPHA / 2.0);
    let want = 0.5 * (-0.1f64).exp();
    assert!(lo <= want && want <= hi, "[{lo}, {hi}] vs {want}");
}
