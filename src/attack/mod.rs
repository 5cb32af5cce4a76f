//! Attacks on a release, as anonymeter defines them (Giomi et al. 2023, the three risks of
//! the Article 29 Working Party's opinion 05/2014): singling out, linkability and
//! inference. Each runs a main attack (the release against the source), a baseline (a
//! naive attacker who ignores the release) and, given records the release did not use, a
//! control; it reports the success rates with their Wilson intervals and the risk
//! `(main − control) / (1 − control)`, or over the baseline without a control.
//!
//! The tables are read as METHODS §7.5.4 reads a release: a source value matches a
//! released label that covers it. The draws (rows, columns, ties) come from one seeded
//! generator, so an attack gives the same figures every time it runs on the same tables.

mod data;
mod index;
mod inference;
mod linkability;
mod neighbours;
mod order;
mod rates;
mod record_linkage;
mod release;
mod singling_out;

use datafusion::common::{plan_err, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::hierarchy::Hierarchy;
pub use data::Rows;
pub use rates::Rate;
pub use release::{attack_release, AttackPlan, Truth};
pub use singling_out::Mode;

/// An attack's raw counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Counts {
    /// The attacks asked for (the rates' denominator, as anonymeter's `n_attacks`).
    pub attacks: u64,
    /// The attacks run: the queries found, or the target records.
    pub attacks_run: u64,
    /// Successes of the main attack.
    pub successes: f64,
    /// Successes of the baseline attack.
    pub baseline: f64,
    /// Successes of the attack on the control (scaled to the source's size for singling
    /// out), when there is one.
    pub control: Option<f64>,
}

impl Counts {
    /// The counts of an attack on `targets` target records (linkability, inference), where
    /// every target asked for is attacked.
    pub fn of_targets(
        targets: usize,
        successes: usize,
        baseline: usize,
        control: Option<f64>,
    ) -> Self {
        Self {
            attacks: targets as u64,
            attacks_run: targets as u64,
            successes: successes as f64,
            baseline: baseline as f64,
            control,
        }
    }
}

/// One attack and what the attacker knows.
#[derive(Debug, Clone, PartialEq)]
pub enum Attack {
    /// Singling out with queries in `mode` on `columns` columns each.
    SinglingOut {
        /// How the queries are written.
        mode: Mode,
        /// Columns per query (multivariate).
        columns: usize,
    },
    /// Linking records known on `first` to records known on `second`.
    Linkability {
        /// The first table's columns.
        first: Vec<String>,
        /// The second table's columns.
        second: Vec<String>,
        /// Released rows per search.
        neighbours: usize,
    },
    /// Guessing `secret` from `known`.
    Inference {
        /// The column guessed.
        secret: String,
        /// The columns the attacker knows.
        known: Vec<String>,
    },
    /// Linking each source record to its nearest released row on `columns` (scored against
    /// the record's own row: [`Tables::own`]). Gives two outcomes: the right links, and
    /// the exact ones.
    RecordLinkage {
        /// The columns the attacker holds.
        columns: Vec<String>,
    },
}

impl Attack {
    /// The attack's name, as `anonymize_attack` lists it.
    pub fn name(&self) -> &'static str {
        match self {
            Attack::SinglingOut {
                mode: Mode::Multivariate,
                ..
            } => "singling_out",
            Attack::SinglingOut {
                mode: Mode::Univariate,
                ..
            } => "singling_out_univariate",
            Attack::Linkability { .. } => "linkability",
            Attack::Inference { .. } => "inference",
            Attack::RecordLinkage { .. } => "record_linkage",
        }
    }

    /// What the attacker used, in words.
    pub fn describe(&self, attacked: &[AttackedColumn]) -> String {
        match self {
            Attack::SinglingOut { mode, columns } => {
                let names: Vec<&str> = attacked.iter().map(|c| c.name.as_str()).collect();
                match mode {
                    Mode::Multivariate => format!(
                        "queries on {} of: {}",
                        columns.min(&names.len()),
                        names.join(", ")
                    ),
                    Mode::Univariate => format!("one column of: {}", names.join(", ")),
                }
            }
            Attack::Linkability {
                first,
                second,
                neighbours,
            } => format!(
                "{} | {} ({} nearest)",
                first.join(", "),
                second.join(", "),
                neighbours
            ),
            Attack::Inference { secret, known } => {
                format!("{secret} from {}", known.join(", "))
            }
            Attack::RecordLinkage { columns } => {
                format!("{} (nearest released row)", columns.join(", "))
            }
        }
    }
}

/// The name of record linkage's second outcome: the links that are exact.
pub const EXACT_LINKS: &str = "record_linkage_exact";

/// A column the attacks read.
#[derive(Debug, Clone)]
pub struct AttackedColumn {
    /// Its name in the release and in the source.
    pub name: String,
    /// Compared as numbers (both tables numeric) or as labels.
    pub numeric: bool,
    /// Its hierarchy, whose labels cover the values below them.
    pub hierarchy: Option<Hierarchy>,
}

/// The tables attacked: each holds exactly the attacked columns, in order.
#[derive(Debug)]
pub struct Tables {
    /// The release (or the table attacked in its place).
    pub release: Rows,
    /// The source the release was made from.
    pub source: Rows,
    /// Records of the same population the release did not use.
    pub control: Option<Rows>,
    /// The released row each source record became, when it is known.
    pub own: Option<OwnTables>,
}

/// The source's tuples and the released tuple each became (the attacked columns in
/// order; those not linked may be NULL), with the records of each.
#[derive(Debug)]
pub struct OwnTables {
    /// The source's tuples.
    pub source: Rows,
    /// The released tuple of each.
    pub released: Rows,
    /// Records of each.
    pub records: Vec<u64>,
}

/// How the attacks run.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Attacks per attack type (anonymeter's `n_attacks`).
    pub attacks: usize,
    /// Seed of the draws.
    pub seed: u64,
    /// Confidence level of the intervals.
    pub confidence: f64,
}

/// One attack's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// [`Attack::name`].
    pub attack: &'static str,
    /// [`Attack::describe`].
    pub columns: String,
    /// The counts.
    pub counts: Counts,
    /// The main attack's success rate.
    pub success: Rate,
    /// The baseline's.
    pub baseline: Rate,
    /// The control's, when there is one.
    pub control: Option<Rate>,
    /// The risk and its interval, in [0, 1].
    pub risk: (f64, f64, f64),
}

/// Runs `attacks` on `tables`. Errors name the argument when a column is unknown or an
/// attack cannot run on the columns given.
pub fn run(
    attacked: &[AttackedColumn],
    tables: &Tables,
    attacks: &[Attack],
    settings: Settings,
) -> Result<Vec<Outcome>> {
    let mut encoder = data::Encoder::new(
        attacked
            .iter()
            .map(|c| (c.name.clone(), c.numeric, c.hierarchy.clone()))
            .collect(),
    );
    let release = encoder.encode_rows(&tables.release)?;
    let source = encoder.encode_rows(&tables.source)?;
    let control = match &tables.control {
        Some(rows) => Some(encoder.encode_rows(rows)?),
        None => None,
    };
    let own = match &tables.own {
        Some(own) => Some((
            encoder.encode_rows(&own.source)?,
            encoder.encode_rows(&own.released)?,
        )),
        None => None,
    };
    let columns = encoder.finish();
    let index = |name: &str, parameter: &str| -> Result<usize> {
        match attacked.iter().position(|c| c.name.eq_ignore_ascii_case(name)) {
            Some(i) => Ok(i),
            None => plan_err!(
                "anonymize_attack(): {parameter} names '{name}', which is not a released column; the released columns are: {}",
                attacked.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }
    };
    let all: Vec<usize> = (0..attacked.len()).collect();
    let mut outcomes = Vec::with_capacity(attacks.len());
    for (a, attack) in attacks.iter().enumerate() {
        // Each attack has its own generator: adding one does not change the others.
        let mut rng = ChaCha8Rng::seed_from_u64(settings.seed.wrapping_add(a as u64 * 0x5851_F42D));
        let counts = match attack {
            Attack::RecordLinkage { columns: linked } => {
                let chosen = linked
                    .iter()
                    .map(|n| index(n, "link_columns"))
                    .collect::<Result<Vec<_>>>()?;
                let (Some((targets, own)), Some(known)) = (&own, &tables.own) else {
                    return plan_err!("anonymize_attack(): record_linkage needs the released row of each source record, which only kanon and microaggregation keep (the other methods draw, add or merge rows), and not for a table named by release other than the source");
                };
                let links = record_linkage::Links {
                    targets,
                    own,
                    records: &known.records,
                };
                let (right, exact) = record_linkage::run(
                    &release,
                    &columns,
                    &chosen,
                    links,
                    settings.attacks,
                    &mut rng,
                );
                let mut linked = outcome(attack, attacked, exact, settings.confidence);
                linked.attack = EXACT_LINKS;
                outcomes.push(outcome(attack, attacked, right, settings.confidence));
                outcomes.push(linked);
                continue;
            }
            Attack::SinglingOut { mode, columns: per } => singling_out::run(
                &release,
                &source,
                control.as_ref(),
                &columns,
                &all,
                *mode,
                *per,
                settings.attacks,
                &mut rng,
            ),
            Attack::Linkability {
                first,
                second,
                neighbours,
            } => {
                let first = first
                    .iter()
                    .map(|n| index(n, "link_columns"))
                    .collect::<Result<Vec<_>>>()?;
                let second = second
                    .iter()
                    .map(|n| index(n, "link_columns"))
                    .collect::<Result<Vec<_>>>()?;
                if first.is_empty() || second.is_empty() {
                    return plan_err!("anonymize_attack(): linkability needs two sets of columns (link_columns => 'a, b | c, d')");
                }
                linkability::run(
                    &release,
                    &source,
                    control.as_ref(),
                    &columns,
                    &first,
                    &second,
                    *neighbours,
                    settings.attacks,
                    &mut rng,
                )
            }
            Attack::Inference { secret, known } => {
                let secret = index(secret, "secret")?;
                let known = known
                    .iter()
                    .map(|n| index(n, "known_columns"))
                    .collect::<Result<Vec<_>>>()?;
                if known.is_empty() || known.contains(&secret) {
                    return plan_err!("anonymize_attack(): inference needs known columns other than the secret '{}'", attacked[secret].name);
                }
                inference::run(
                    &release,
                    &source,
                    control.as_ref(),
                    &columns,
                    secret,
                    &known,
                    settings.attacks,
                    &mut rng,
                )
            }
        };
        outcomes.push(outcome(attack, attacked, counts, settings.confidence));
    }
    Ok(outcomes)
}

/// The rates and the risk of `counts`.
fn outcome(
    attack: &Attack,
    attacked: &[AttackedColumn],
    counts: Counts,
    confidence: f64,
) -> Outcome {
    let success = Rate::wilson(counts.successes, counts.attacks, confidence);
    let baseline = Rate::wilson(counts.baseline, counts.attacks, confidence);
    let control = counts
        .control
        .map(|c| Rate::wilson(c.min(counts.attacks as f64), counts.attacks, confidence));
    // Over the control when there is one (anonymeter's risk); else over the baseline, so
    // that what a naive attacker guesses anyway is not counted as risk.
    let risk = success.residual(control.unwrap_or(baseline)).risk();
    Outcome {
        attack: attack.name(),
        columns: attack.describe(attacked),
        counts,
        success,
        baseline,
        control,
        risk,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    /// A batch of `(k: text, n: integer)` rows.
    pub fn table_batch(rows: &[(&str, i64)]) -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("k", DataType::Utf8, true),
                Field::new("n", DataType::Int64, true),
            ])),
            vec![
                Arc::new(StringArray::from(
                    rows.iter().map(|r| r.0).collect::<Vec<_>>(),
                )),
                Arc::new(Int64Array::from(
                    rows.iter().map(|r| r.1).collect::<Vec<_>>(),
                )),
            ],
        )
        .expect("batch")
    }

    fn columns() -> Vec<AttackedColumn> {
        vec![
            AttackedColumn {
                name: "k".into(),
                numeric: false,
                hierarchy: None,
            },
            AttackedColumn {
                name: "n".into(),
                numeric: true,
                hierarchy: None,
            },
        ]
    }

    #[test]
    fn the_same_seed_gives_the_same_figures_and_a_control_lowers_the_risk() {
        let rows: Vec<(String, i64)> = (0..200).map(|i| (format!("v{}", i % 37), i % 11)).collect();
        let refs: Vec<(&str, i64)> = rows.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        let tables = Tables {
            release: vec![table_batch(&refs)].into(),
            source: vec![table_batch(&refs)].into(),
            control: Some(vec![table_batch(&refs)].into()),
            own: None,
        };
        let attacks = [
            Attack::SinglingOut {
                mode: Mode::Multivariate,
                columns: 2,
            },
            Attack::Linkability {
                first: vec!["k".into()],
                second: vec!["n".into()],
                neighbours: 1,
            },
            Attack::Inference {
                secret: "n".into(),
                known: vec!["k".into()],
            },
        ];
        let settings = Settings {
            attacks: 100,
            seed: 11,
            confidence: 0.95,
        };
        let once = run(&columns(), &tables, &attacks, settings).expect("attacks");
        let again = run(&columns(), &tables, &attacks, settings).expect("attacks");
        for (a, b) in once.iter().zip(&again) {
            assert_eq!(a.counts, b.counts);
        }
        // The control is the source itself: the release tells nothing about the source
        // that it does not tell about the control. Singling out asks the same queries of
        // both (risk 0); the other two attack other target records drawn from each, so
        // their risks differ from 0 by chance only: the intervals reach 0.
        assert_eq!(once[0].counts.control, Some(once[0].counts.successes));
        assert_eq!(once[0].risk.0, 0.0);
        for outcome in &once {
            assert_eq!(outcome.risk.1, 0.0, "{outcome:?}");
        }
        assert_eq!(once[0].attack, "singling_out");
        assert_eq!(once[1].columns, "k | n (1 nearest)");
        assert_eq!(once[2].columns, "n from k");
    }

    #[test]
    fn unknown_columns_are_named() {
        let tables = Tables {
            release: vec![table_batch(&[("a", 1)])].into(),
            source: vec![table_batch(&[("a", 1)])].into(),
            control: None,
            own: None,
        };
        let attack = Attack::Inference {
            secret: "zip".into(),
            known: vec!["k".into()],
        };
        let settings = Settings {
            attacks: 10,
            seed: 1,
            confidence: 0.95,
        };
        let err = run(&columns(), &tables, &[attack], settings)
            .expect_err("unknown")
            .to_string();
        assert!(
            err.contains("secret names 'zip'") && err.contains("k, n"),
            "{err}"
        );
    }
}
