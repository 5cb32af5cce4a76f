//! Privacy models a class of a syntactic release must satisfy besides its size: ℓ-diversity
//! and t-closeness of each sensitive column ([`l_diversity`], [`t_closeness`],
//! [`ordered_distance`]). [`ModelSpec`] is what the caller asked for (validated at planning
//! time); [`ClassModels`] is the check built from the data, with the whole input table's
//! distribution as the reference. docs/METHODS.md §7.

pub mod fib_map;
pub mod l_diversity;
pub mod ordered_distance;
pub mod t_closeness;

use datafusion::common::{exec_err, plan_err, Result};

use crate::histogram::GroupedHistogram;
use crate::params::{ParamDefault, ParamKind, ParamSpec, ParamValues};
use crate::sensitive::SensitiveSpec;
use crate::sensitive::{has_natural_order, SensitiveDomain};
use fib_map::FibMap;
pub use l_diversity::{LDiversity, LModel};
use ordered_distance::{OrderedDistance, OrderedScratch};
pub use t_closeness::TModel;
use t_closeness::{EqualDistance, HierarchicalDistance};

/// `floor(t · m)` computed exactly for `t` in `[0, 1]` (the binary value of the `f64`), so
/// that an integer sum `S` satisfies `S ≤ t · m` exactly when `S ≤ floor_times(t, m)`.
pub fn floor_times(t: f64, m: u128) -> u128 {
    if t.is_nan() || t <= 0.0 {
        return 0;
    }
    if t >= 1.0 {
        return m;
    }
    let bits = t.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1u64 << 52) - 1);
    let (mant, exp) = if exp_bits == 0 {
        (frac, -1074i64)
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    // t · m = mant · m · 2^exp with exp < 0; mant · m < 2^181 as (upper, low) 64-bit parts.
    let (hi, lo) = ((m >> 64) as u64, m as u64);
    let p0 = mant as u128 * lo as u128;
    let p1 = mant as u128 * hi as u128 + (p0 >> 64);
    let low = p0 as u64 as u128; // bits 0..64
    let upper = p1; // bits 64..192
    let shift = (-exp) as u32;
    if shift >= 192 {
        0
    } else if shift >= 64 {
        upper >> (shift - 64)
    } else {
        // The result is at most m < 2^128, so no set bit is shifted out of `upper`.
        (upper << (64 - shift)) | (low >> shift)
    }
}

/// The ℓ-diversity and t-closeness a release must meet on every sensitive column.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelSpec {
    /// ℓ-diversity, if asked for.
    pub l: Option<LDiversity>,
    /// t-closeness `(t, ground distance)`, if asked for.
    pub t: Option<(f64, TModel)>,
}

impl ModelSpec {
    /// Whether no model is asked for.
    pub fn is_empty(&self) -> bool {
        self.l.is_none() && self.t.is_none()
    }

    /// Checks the parameters alone: `l ≥ 1`, `c > 0`, `t` in `(0, 1]`.
    pub fn validate(&self) -> Result<()> {
        if let Some(l) = &self.l {
            if l.l == 0 {
                return plan_err!("l must be at least 1, got 0");
            }
            if let LModel::Recursive { c } = l.model {
                if !(c.is_finite() && c > 0.0) {
                    return plan_err!("c must be a positive number, got {c}");
                }
            }
        }
        if let Some((t, _)) = self.t {
            if !(t.is_finite() && t > 0.0 && t <= 1.0) {
                return plan_err!("t must be in (0, 1], got {t}");
            }
        }
        Ok(())
    }

    /// Checks the models against the sensitive columns named: at least one; an order for
    /// `ordered`; a hierarchy for `hierarchical`.
    pub fn check_columns(&self, columns: &[SensitiveSpec]) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        if columns.is_empty() {
            let what = if self.l.is_some() { "l" } else { "t" };
            return plan_err!(
                "'{what}' needs a sensitive column: name it with sensitive => '<column>'"
            );
        }
        if let Some((_, model)) = self.t {
            for c in columns {
                match model {
                    TModel::Ordered
                        if !has_natural_order(&c.data_type) && c.hierarchy.is_none() =>
                    {
                        return plan_err!(
                            "t_model 'ordered' needs an ordered sensitive column, but '{}' ({}) has no natural order; use a numeric or date column, or give the order as a hierarchy table whose rows list the values in order: sensitive => '{}:<table>'",
                            c.column,
                            c.data_type,
                            c.column
                        );
                    }
                    TModel::Hierarchical if c.hierarchy.is_none() => {
                        return plan_err!(
                            "t_model 'hierarchical' needs a hierarchy for sensitive column '{}': name it with sensitive => '{}:<hierarchy table>'",
                            c.column,
                            c.column
                        );
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The models as the metadata states them, e.g.
    /// `distinct-l-diversity (l = 2) on disease`.
    pub fn describe(&self, columns: &[String]) -> Vec<String> {
        let on = if columns.is_empty() {
            String::new()
        } else {
            format!(" on {}", columns.join(", "))
        };
        let mut out = Vec::new();
        if let Some(l) = &self.l {
            out.push(format!("{}-l-diversity (l = {}){on}", l.model, l.l));
        }
        if let Some((t, model)) = self.t {
            out.push(format!("{model}-distance t-closeness (t = {t}){on}"));
        }
        out
    }
}

/// `l` of the syntactic methods: ℓ-diversity.
pub const L: ParamSpec = ParamSpec::new(
    "l",
    ParamKind::Count,
    ParamDefault::Optional("none: no l-diversity"),
    "l-diversity: every released class holds at least l well-represented values of each sensitive column (see l_model)",
);

/// `l_model`: the reading of ℓ.
pub const L_MODEL: ParamSpec = ParamSpec::new(
    "l_model",
    ParamKind::Choice(&["distinct", "entropy", "recursive"]),
    ParamDefault::Text("distinct"),
    "reading of l: 'distinct' values, 'entropy' (entropy >= ln l) or 'recursive' (c,l)-diversity (most frequent count < c x the sum of the l-th and rarer counts)",
);

/// `c` of recursive (c, ℓ)-diversity.
pub const C: ParamSpec = ParamSpec::new(
    "c",
    ParamKind::Positive,
    ParamDefault::Optional("required for l_model 'recursive'"),
    "the constant c of recursive (c,l)-diversity",
);

/// `t` of the syntactic methods: t-closeness.
pub const T: ParamSpec = ParamSpec::new(
    "t",
    ParamKind::Number,
    ParamDefault::Optional("none: no t-closeness"),
    "t-closeness: every released class's distribution of each sensitive column is within earth mover's distance t of the whole table's, t in (0, 1] (see t_model)",
);

/// `t_model`: the ground distance of t.
pub const T_MODEL: ParamSpec = ParamSpec::new(
    "t_model",
    ParamKind::Choice(&["equal", "hierarchical", "ordered"]),
    ParamDefault::Text("equal"),
    "ground distance of t: 'equal' (any two values at distance 1), 'hierarchical' (the sensitive column's hierarchy: sensitive => 'col:table'), 'ordered' (numeric or date order, or the rows of sensitive => 'col:table')",
);

/// Reads `l`, `l_model`, `c`, `t` and `t_model` (the table's [`L`], [`L_MODEL`], [`C`],
/// [`T`], [`T_MODEL`]); a model needs a sensitive column (`has_sensitive`).
pub fn model_spec(values: &ParamValues, has_sensitive: bool) -> Result<ModelSpec> {
    let l_model = match values.text("l_model")? {
        "entropy" => LModel::Entropy,
        "recursive" => match values.opt_f64("c") {
            Some(c) => LModel::Recursive { c },
            None => return plan_err!("l_model 'recursive' needs c (e.g. c => 3)"),
        },
        _ => LModel::Distinct,
    };
    if values.given("l_model") && !values.given("l") {
        return plan_err!("l_model needs l (e.g. l => 3)");
    }
    if values.given("c") && !matches!(l_model, LModel::Recursive { .. }) {
        return plan_err!("c applies only to l_model 'recursive'");
    }
    if values.given("t_model") && !values.given("t") {
        return plan_err!("t_model needs t (e.g. t => 0.2)");
    }
    let t_model = match values.text("t_model")? {
        "hierarchical" => TModel::Hierarchical,
        "ordered" => TModel::Ordered,
        _ => TModel::Equal,
    };
    let models = ModelSpec {
        l: values
            .opt_u64("l")
            .map(|l| LDiversity { l, model: l_model }),
        t: values.opt_f64("t").map(|t| (t, t_model)),
    };
    if !models.is_empty() && !has_sensitive {
        return plan_err!(
            "'{}' needs a sensitive column: name it with sensitive => '<column>'",
            if models.l.is_some() { "l" } else { "t" }
        );
    }
    models.validate()?;
    Ok(models)
}

/// How a column's value codes map to what its t-closeness check counts in.
#[derive(Debug, Clone)]
enum TCheck {
    Equal(EqualDistance),
    /// Ranks of the value codes (`None`: the codes are the ranks).
    Ordered(OrderedDistance, Option<Vec<u32>>),
    /// Leaf code of each value code.
    Hierarchical(HierarchicalDistance, Vec<u32>),
}

/// One sensitive column's checks.
#[derive(Debug, Clone)]
struct ColumnCheck {
    /// The column's value code of each tuple code (`None`: tuple codes are value codes).
    of_tuple: Option<Vec<u32>>,
    l: Option<LDiversity>,
    t: Option<TCheck>,
}

/// Reusable buffers of [`ClassModels::accepts`].
#[derive(Debug, Default)]
pub struct ModelScratch {
    map: FibMap,
    pairs: Vec<(u32, u64)>,
    mapped: Vec<(u32, u64)>,
    counts: Vec<u64>,
    sorted: Vec<u64>,
    ordered: OrderedScratch,
}

/// The per-class check of every model on every sensitive column, against the whole
/// table's distributions.
#[derive(Debug, Clone, Default)]
pub struct ClassModels {
    columns: Vec<ColumnCheck>,
}

impl ClassModels {
    /// Builds the checks from the leaf-level histogram (the whole input table) and the
    /// sensitive columns. An `l` above a column's number of distinct values is an error:
    /// no class can meet it.
    pub fn new(
        spec: &ModelSpec,
        base: &GroupedHistogram,
        domain: &SensitiveDomain,
        method: &str,
    ) -> Result<Self> {
        if spec.is_empty() {
            return Ok(Self::default());
        }
        if domain.columns.iter().all(|c| c.pseudonym) {
            return exec_err!("{method}: l and t need a sensitive column");
        }
        let single = domain.columns.len() == 1;
        let mut columns = Vec::with_capacity(domain.columns.len());
        // Pseudonyms of identifiers ride along in the tuples; no model checks them.
        for column in domain.columns.iter().filter(|c| !c.pseudonym) {
            let cardinality = column.cardinality();
            let mut reference = vec![0u64; cardinality];
            for (&v, &c) in base.pair_values.iter().zip(&base.pair_counts) {
                reference[column.of_tuple[v as usize] as usize] += c;
            }
            if let Some(l) = &spec.l {
                if l.l > cardinality as u64 {
                    return exec_err!(
                        "{method}: l = {} is infeasible: sensitive column '{}' has only {cardinality} distinct value(s), so no class can hold {} distinct values; lower l",
                        l.l,
                        column.name,
                        l.l
                    );
                }
            }
            let t = match spec.t {
                None => None,
                Some((t, TModel::Equal)) => Some(TCheck::Equal(EqualDistance::new(&reference, t))),
                Some((t, TModel::Ordered)) => {
                    let Some(rank) = &column.rank else {
                        return exec_err!(
                            "{method}: t_model 'ordered' needs an order for sensitive column '{}'",
                            column.name
                        );
                    };
                    let mut by_rank = vec![0u64; cardinality];
                    for (v, &q) in reference.iter().enumerate() {
                        by_rank[rank[v] as usize] = q;
                    }
                    let identity = rank.iter().enumerate().all(|(i, &r)| i as u32 == r);
                    Some(TCheck::Ordered(
                        OrderedDistance::new(&by_rank, t),
                        (!identity).then(|| rank.clone()),
                    ))
                }
                Some((t, TModel::Hierarchical)) => {
                    let Some(h) = &column.hierarchy else {
                        return exec_err!(
                            "{method}: t_model 'hierarchical' needs a hierarchy for sensitive column '{}'",
                            column.name
                        );
                    };
                    let mut by_leaf = vec![0u64; h.hierarchy.leaf_count()];
                    for (v, &q) in reference.iter().enumerate() {
                        by_leaf[h.leaf_of_value[v] as usize] += q;
                    }
                    Some(TCheck::Hierarchical(
                        HierarchicalDistance::new(&h.hierarchy, by_leaf, t),
                        h.leaf_of_value.clone(),
                    ))
                }
            };
            columns.push(ColumnCheck {
                of_tuple: (!single).then(|| column.of_tuple.clone()),
                l: spec.l,
                t,
            });
        }
        Ok(Self { columns })
    }

    /// Whether no model is checked.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Whether a class merging classes of which one is accepted is always accepted: true
    /// with no model and with distinct ℓ-diversity alone (a merged class keeps every value
    /// of its parts); entropy and recursive ℓ-diversity and t-closeness can fail on a
    /// merged class when one of its parts passes.
    pub fn is_monotone(&self) -> bool {
        self.columns
            .iter()
            .all(|c| c.t.is_none() && c.l.is_none_or(|l| l.model == LModel::Distinct))
    }

    /// Whether a class, given as its tuple codes (ascending) and their counts, meets every
    /// model on every sensitive column.
    pub fn accepts(&self, values: &[u32], counts: &[u64], scratch: &mut ModelScratch) -> bool {
        self.columns
            .iter()
            .all(|column| column_accepts(column, values, counts, scratch))
    }
}

fn column_accepts(
    column: &ColumnCheck,
    values: &[u32],
    counts: &[u64],
    s: &mut ModelScratch,
) -> bool {
    // The class's distinct values of this column with their counts.
    s.pairs.clear();
    match &column.of_tuple {
        None => s
            .pairs
            .extend(values.iter().copied().zip(counts.iter().copied())),
        Some(of_tuple) => {
            s.map.clear();
            for (&v, &c) in values.iter().zip(counts) {
                s.map.add(of_tuple[v as usize], c);
            }
            s.pairs.extend(s.map.entries());
        }
    }
    if let Some(l) = &column.l {
        s.counts.clear();
        s.counts.extend(s.pairs.iter().map(|p| p.1));
        if !l.accepts(&s.counts, &mut s.sorted) {
            return false;
        }
    }
    match &column.t {
        None => true,
        Some(TCheck::Equal(check)) => check.accepts(&s.pairs),
        Some(TCheck::Ordered(check, None)) => check.accepts(&s.pairs, &mut s.ordered),
        Some(TCheck::Ordered(check, Some(rank))) => {
            s.mapped.clear();
            s.mapped
                .extend(s.pairs.iter().map(|&(v, c)| (rank[v as usize], c)));
            check.accepts(&s.mapped, &mut s.ordered)
        }
        Some(TCheck::Hierarchical(check, leaf_of)) => {
            s.mapped.clear();
            s.mapped
                .extend(s.pairs.iter().map(|&(v, c)| (leaf_of[v as usize], c)));
            check.accepts(&s.mapped)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;
    use proptest::prelude::*;

    fn exact_floor(t: f64, m: u128) -> u128 {
        // t = mant · 2^exp exactly.
        let bits = t.to_bits();
        let exp_bits = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1u64 << 52) - 1);
        let (mant, exp) = if exp_bits == 0 {
            (frac, -1074)
        } else {
            (frac | (1 << 52), exp_bits - 1075)
        };
        let product = BigUint::from(mant) * BigUint::from(m);
        let q: BigUint = product >> ((-exp) as usize);
        q.try_into().unwrap()
    }

    #[test]
    fn floor_times_edges() {
        assert_eq!(floor_times(1.0, 17), 17);
        assert_eq!(floor_times(0.5, 17), 8);
        assert_eq!(floor_times(0.25, 12), 3);
        // 0.1 is slightly above 1/10 in binary: 0.1 · 10 rounds down to 1.
        assert_eq!(floor_times(0.1, 10), 1);
        assert_eq!(floor_times(0.3, 10), 2); // 0.3 is below 3/10 in binary
        assert_eq!(floor_times(0.5, u128::MAX), u128::MAX / 2);
        assert_eq!(floor_times(f64::MIN_POSITIVE, 1 << 100), 0);
    }

    proptest! {
        #[test]
        fn floor_times_is_exact(t in 0.0f64..1.0, m in any::<u128>(), small in any::<u32>()) {
            prop_assert_eq!(floor_times(t, m), exact_floor(t, m));
            prop_assert_eq!(floor_times(t, small as u128), exact_floor(t, small as u128));
        }
    }
}
