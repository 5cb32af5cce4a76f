//! Anonymization methods: each maps a histogram, parameters and a random stream to a
//! released histogram plus its public metadata and owner-only diagnostics.
//!
//! A method is one module that declares a [`MethodSpec`] (its name, description and
//! parameter table, and how to validate arguments into a configured [`Method`]) and one
//! line in [`METHODS`]. The SQL layer parses `anonymize(...)` arguments generically
//! against the tables here; help texts and the function reference are generated from them.

pub mod common_params;
pub mod dp_histogram;
pub mod ipa;
pub mod kanon;
pub mod levels;
pub mod microaggregation;
pub mod mst;
pub mod numeric;
pub mod safepub;
pub mod sweep;
pub mod upa;

pub use common_params::COMMON_PARAMS;
pub use levels::{
    check_levels_within_bounds, level_bounds, MAX_LEVELS, MIN_LEVELS, NODE_RULE_MAX_NODES,
};

use std::fmt::Debug;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{internal_err, plan_err, DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryPool, UnboundedMemoryPool};

use crate::budget::Cost;
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{Lattice, LevelBounds, Node, NO_LEVEL_BOUNDS};
use crate::mechanism::rng::AnonRng;
use crate::names::PairsError;
use crate::params::ParamValue;
use crate::params::{ParamDefault, ParamKind, ParamSpec, ParamValues};
use crate::privacy_unit::{per_person_cost, per_row_budget, PersonClasses, PrivacyUnit};
use crate::progress::Progress;
use crate::release::catalog::CounterfeitCatalog;
use crate::release::IntervalMeans;
use crate::release::{OwnRows, ReleaseSize, ReleasedHistogram};
use crate::sensitive::SensitiveDomain;
use crate::sensitive::SensitiveSpec;
use numeric::{NumericOutput, NumericPoints};

/// What every method receives.
pub struct MethodInput<'a> {
    /// Leaf-level histogram of the source (phase 1).
    pub histogram: &'a GroupedHistogram,
    /// Hierarchies in quasi-identifier order.
    pub hierarchies: &'a [&'a Hierarchy],
    /// Number of distinct informative values (tuple codes of the sensitive columns).
    pub value_domain: usize,
    /// The sensitive columns and how value codes decode into them.
    pub sensitive: &'a SensitiveDomain,
    /// The generalization lattice.
    pub lattice: &'a Lattice,
    /// Where long loops report progress; its `report` and `check` return an error once
    /// nobody waits for the release any more, which the method returns at once.
    pub progress: &'a Progress,
    /// Threads the method may use for its search (the session's `target_partitions`);
    /// results do not depend on it.
    pub threads: usize,
    /// The session's memory pool: what a method holds beyond its input (the histograms a
    /// lattice sweep keeps) is reserved there, so a memory limit bounds it.
    pub memory: Arc<dyn MemoryPool>,
    /// Per person, for a syntactic method: the classes with their persons (METHODS.md §9).
    pub persons: Option<&'a PersonClasses>,
    /// Rows past which a method that draws its release stops and fails with
    /// [`crate::release::TooManyRows`] (a public session's `max_release_rows`).
    pub stop_at: Option<u64>,
}

/// What a [`MethodInput`] borrows besides the data, for a method run outside the engine
/// (tests, benchmarks, tools): no sensitive columns, silent progress, one thread.
#[derive(Debug)]
pub struct Standalone {
    /// The sensitive columns (none by default).
    pub sensitive: SensitiveDomain,
    /// Progress (silent by default).
    pub progress: Progress,
    /// Threads (1 by default; 0 counts as 1).
    pub threads: usize,
    /// The memory pool (unbounded by default).
    pub memory: Arc<dyn MemoryPool>,
}

impl Default for Standalone {
    fn default() -> Self {
        Self {
            sensitive: SensitiveDomain::none(),
            progress: Progress::silent(),
            threads: 1,
            memory: Arc::new(UnboundedMemoryPool::default()),
        }
    }
}

impl Standalone {
    /// With these sensitive columns.
    pub fn with_sensitive(sensitive: SensitiveDomain) -> Self {
        Self {
            sensitive,
            ..Self::default()
        }
    }

    /// The input of a method over `histogram`.
    pub fn input<'a>(
        &'a self,
        histogram: &'a GroupedHistogram,
        hierarchies: &'a [&'a Hierarchy],
        lattice: &'a Lattice,
        value_domain: usize,
    ) -> MethodInput<'a> {
        MethodInput {
            histogram,
            hierarchies,
            value_domain,
            sensitive: &self.sensitive,
            lattice,
            progress: &self.progress,
            threads: self.threads.max(1),
            memory: self.memory.clone(),
            persons: None,
            stop_at: None,
        }
    }
}

/// What every method returns.
pub struct MethodOutput {
    /// The released histogram.
    pub release: ReleasedHistogram,
    /// The chosen lattice node.
    pub node: Node,
    /// Method-specific public metadata (parameters, guarantee).
    pub metadata: Vec<(String, String)>,
    /// Owner-only diagnostics, in the method's diagnostics schema.
    pub diagnostics: RecordBatch,
    /// The catalog of counterfeit rows, published with the release by the methods that
    /// have one ([`Method::publishes_catalog`]).
    pub catalog: Option<CounterfeitCatalog>,
    /// The interval means published with the release by the methods that have them
    /// ([`Method::publishes_interval_means`]).
    pub interval_means: Option<IntervalMeans>,
    /// Owner-only: the released row of every source record, from the methods that
    /// release each record they keep once and invent none (see [`OwnRows`]).
    pub own_rows: Option<OwnRows>,
}

/// A method with validated parameters, ready to run.
pub trait Method: Debug + Send + Sync {
    /// What the method is: its entry in [`METHODS`].
    fn spec(&self) -> &'static MethodSpec;

    /// The method's name in SQL.
    fn name(&self) -> &'static str {
        self.spec().name
    }

    /// The privacy parameters one release charges to its source table's budget (see the
    /// `budget` module): the method's nominal parameters, whether or not its guarantee
    /// holds. A method without a differential-privacy parameter costs `(0, 0)`.
    fn budget(&self) -> Cost;

    /// Largest lattice the method may work on.
    fn max_nodes(&self) -> usize;

    /// Data-independent bounds on the levels of the lattice the method works on
    /// (`min_levels`, `max_levels`); unbounded unless the method accepts them.
    fn level_bounds(&self) -> &LevelBounds {
        &NO_LEVEL_BOUNDS
    }

    /// Columns named inside the method's own arguments, as `(argument, column)` (e.g.
    /// `qi_weights`); planning checks that each is a quasi-identifier.
    fn named_columns(&self) -> Vec<(&'static str, &str)> {
        Vec::new()
    }

    /// Schema of the method's owner-only diagnostics.
    fn diagnostics_schema(&self) -> SchemaRef;

    /// The size of the release, computed from the phase-1 histogram and the method's public
    /// parameters before anything is drawn; the engine refuses a release whose bound exceeds
    /// `max_release_rows`. The default suits methods that never add rows (generalization,
    /// suppression, sampling); methods adding counterfeit or noise rows override it.
    fn release_size(&self, input: &MethodInput<'_>) -> Result<ReleaseSize> {
        Ok(ReleaseSize::at_most(input.histogram.total()))
    }

    /// Whether the release comes with differentially private means of its generalized
    /// numeric values (`anonymize_interval_means(...)`).
    fn publishes_interval_means(&self) -> bool {
        false
    }

    /// Whether the method's guarantee needs a public value domain for the informative
    /// column (it gives every value of the domain a noisy count): the engine then makes the
    /// domain the leaves of the column's hierarchy, when one is named
    /// ([`crate::sensitive::SensitiveDomain::add_hierarchy_leaves`]), before the method runs.
    fn wants_public_value_domain(&self) -> bool {
        false
    }

    /// The argument that sizes the cells the method draws, its value and its default
    /// (dp_histogram's `max_cells`), if it has one: a public user's value is refused above
    /// the larger of the default and the public row limit, so one call cannot ask for more
    /// work than that.
    fn cells_bound(&self) -> Option<(&'static str, u64, u64)> {
        None
    }

    /// Whether this configuration's guarantee is proven (docs/METHODS.md): an unproven one
    /// (offered to reproduce a paper) is for the data owner only, never for public users.
    fn proven(&self) -> bool {
        true
    }

    /// Whether the release comes with a catalog of its counterfeit rows
    /// (`anonymize_catalog(...)`).
    fn publishes_catalog(&self) -> bool {
        false
    }

    /// Runs a method of [`Input::Lattice`]: the released histogram, the chosen node, public
    /// metadata (including the guarantee text) and diagnostics.
    fn run(&self, _input: &MethodInput<'_>, _rng: &mut AnonRng) -> Result<MethodOutput> {
        internal_err!("method '{}' reads numbers, not a histogram", self.name())
    }

    /// Runs a method of [`Input::Numeric`] on the records' quasi-identifiers (`columns`)
    /// as points: deterministic, it draws nothing.
    fn run_numeric(
        &self,
        _points: &NumericPoints,
        _columns: &[String],
        _progress: &Progress,
    ) -> Result<NumericOutput> {
        internal_err!("method '{}' reads a histogram, not numbers", self.name())
    }

    /// How many sensitive columns the method can release (`sensitive => 'a, b'`); one
    /// unless the method says otherwise.
    fn max_sensitive_columns(&self) -> usize {
        1
    }

    /// Checks the configured method against the sensitive columns named, at planning time
    /// (e.g. a privacy model that needs an ordered column). Errors carry no function-name
    /// prefix.
    fn check_sensitive(&self, _columns: &[SensitiveSpec]) -> Result<()> {
        Ok(())
    }
}

/// What a method's validation sees at planning time, before any data is read.
pub struct MethodArgs<'a> {
    /// Checked values of the method's parameters, defaults filled in.
    pub values: &'a ParamValues,
    /// Whether the call names an informative column.
    pub has_informative: bool,
    /// The quasi-identifier columns, in release order.
    pub qi: &'a [String],
}

/// A method as the registry knows it.
pub struct MethodSpec {
    /// Name in SQL (`method => '...'`).
    pub name: &'static str,
    /// One-line description.
    pub about: &'static str,
    /// The method's parameters, in the order help lists them.
    pub params: &'static [ParamSpec],
    /// Arguments of other methods this one refuses with a specific reason.
    pub refuses: &'static [(&'static str, &'static str)],
    /// What the release's guarantee is: differential privacy for everything it shows, for
    /// some of its steps only, or a syntactic property of the released classes.
    pub guarantee: Guarantee,
    /// The section of docs/METHODS.md that proves (or, for a claim that does not hold,
    /// refutes) the guarantee, as `§3.5`: what a release's guarantee card cites.
    pub methods_section: &'static str,
    /// What the method reads of the source: a histogram over hierarchies, or numbers.
    pub input: Input,
    /// How the method treats a person unit (`person => 'patient_id'`).
    pub persons: Persons,
    /// Whether it may release direct identifiers as pseudonyms
    /// (`identifier_mode => 'pseudonym'`): only a method whose released rows are each a
    /// real record's, with no differential privacy to break by linking them.
    pub pseudonyms: bool,
    /// What the score column of its diagnostics means, for the report's chart of the
    /// search; `None` when it has no score.
    pub diagnostics_score: Option<&'static str>,
    /// Validates the arguments into a configured method. Errors are planning errors
    /// without a function-name prefix (the caller adds it).
    pub configure: fn(&MethodArgs<'_>) -> Result<Arc<dyn Method>>,
}

/// The kind of guarantee a method's release carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarantee {
    /// Everything the release shows (rows and public metadata) is differentially private:
    /// what public users may call by default (docs/METHODS.md §8).
    WholeReleaseDp,
    /// The method takes an ε and some of its steps are differentially private, but the
    /// release as a whole is not (IPA, docs/METHODS.md §1.11).
    PartlyDp,
    /// A property of the released classes (k-anonymity and its refinements); no ε.
    Syntactic,
}

/// What a method reads of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// The source's histogram over the quasi-identifiers' hierarchies, generalized along a
    /// lattice ([`Method::run`]).
    Lattice,
    /// The quasi-identifiers as numbers, without hierarchies ([`Method::run_numeric`]).
    Numeric,
}

/// How a method treats a person unit (docs/METHODS.md §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persons {
    /// At most `max_rows_per_person` rows of each person reach the method, whose ε and δ
    /// are divided for them (group privacy).
    BoundRows,
    /// Every row is kept and each released class counts distinct persons. The text, with
    /// `{column}` for the person column, is what the guarantee says per person before the
    /// method's own text.
    Counted(&'static str),
    /// Persons are refused, for this reason.
    Refused(&'static str),
}

/// What a syntactic method that counts persons says of them: every class holds k persons.
pub const PERSONS_PER_CLASS: &str = "Per person (column '{column}'): every released class other than the fully suppressed one holds at least k distinct persons, not only k records; the prosecutor risks count persons.";

impl MethodSpec {
    /// Whether the method generalizes along hierarchies ([`Input::Lattice`]).
    pub fn takes_hierarchies(&self) -> bool {
        self.input == Input::Lattice
    }

    /// Whether the method takes an ε (its guarantee is differential privacy, for the whole
    /// release or for some steps): per person it bounds contributions, while the syntactic
    /// methods count persons (METHODS.md §9).
    pub fn is_differentially_private(&self) -> bool {
        self.guarantee != Guarantee::Syntactic
    }

    /// The names of every argument a call of this method takes: the common ones
    /// ([`COMMON_PARAMS`]), then its own.
    pub fn argument_names(&self) -> Vec<&'static str> {
        COMMON_PARAMS
            .iter()
            .chain(self.params)
            .map(|p| p.name)
            .collect()
    }
}

/// Whether the configured `method` is differentially private
/// ([`MethodSpec::is_differentially_private`]).
pub fn is_differentially_private(method: &dyn Method) -> bool {
    method.spec().is_differentially_private()
}

impl MethodSpec {
    /// Validates `args` into a configured method for the privacy unit `unit`. Per person, a
    /// differentially private method runs with the per-row budget that group privacy turns
    /// into the requested per-person budget (METHODS.md §9.2): its `epsilon` (and `delta`)
    /// are replaced before it is configured, and [`per_unit_cost`] turns its cost back.
    pub fn configure_for_unit(
        &self,
        args: &MethodArgs<'_>,
        unit: &PrivacyUnit,
    ) -> Result<Arc<dyn Method>> {
        let values = per_row_values(args.values.clone(), unit, self)?;
        (self.configure)(&MethodArgs {
            values: &values,
            has_informative: args.has_informative,
            qi: args.qi,
        })
        .map_err(|e| per_row_context(e, unit, self, &values))
    }
}

/// What a release of `method` costs in the privacy unit `unit`: its per-row cost per row,
/// or per person by group privacy over its per-row budget ([`MethodSpec::configure_for_unit`]).
pub fn per_unit_cost(method: &dyn Method, unit: &PrivacyUnit) -> Cost {
    match unit {
        PrivacyUnit::Row => method.budget(),
        PrivacyUnit::Person { max_rows, .. } => per_person_cost(method.budget(), *max_rows),
    }
}

/// The method's values with `epsilon` (and `delta`, where the method has one) replaced by
/// the per-row budget that group privacy turns into the requested per-person budget, for a
/// differentially private method released per person. Other calls keep their values.
fn per_row_values(
    values: ParamValues,
    unit: &PrivacyUnit,
    method: &MethodSpec,
) -> Result<ParamValues> {
    let PrivacyUnit::Person { max_rows, .. } = unit else {
        return Ok(values);
    };
    if !method.is_differentially_private() || *max_rows == 1 {
        return Ok(values);
    }
    let epsilon = values.f64("epsilon")?;
    let delta = values.opt_f64("delta");
    let (eps_row, delta_row) = per_row_budget(epsilon, delta.unwrap_or(0.0), *max_rows);
    let mut values = values;
    values.set("epsilon", ParamValue::Number(eps_row));
    if delta.is_some() {
        values.set("delta", ParamValue::Number(delta_row));
    }
    Ok(values)
}

/// A method's refusal of its per-row budget, with where that budget came from.
fn per_row_context(
    e: DataFusionError,
    unit: &PrivacyUnit,
    method: &MethodSpec,
    values: &ParamValues,
) -> DataFusionError {
    match unit {
        PrivacyUnit::Person { max_rows, .. } if *max_rows > 1 && method.is_differentially_private() => {
            DataFusionError::Plan(format!(
                "{} (per person, each row gets epsilon / max_rows_per_person = {}: lower max_rows_per_person or raise epsilon)",
                e.strip_backtrace().trim_start_matches("Error during planning: "),
                values.opt_f64("epsilon").unwrap_or(f64::NAN)
            ))
        }
        _ => e,
    }
}

/// Every method, in the order help lists them. Adding a method is one module and one line.
pub const METHODS: &[&MethodSpec] = &[
    &ipa::METHOD,
    &safepub::METHOD,
    &kanon::METHOD,
    &dp_histogram::METHOD,
    &upa::METHOD,
    &microaggregation::METHOD,
    &mst::METHOD,
];

/// The methods whose whole release is differentially private ([`Guarantee::WholeReleaseDp`]):
/// the methods a public policy allows unless it says otherwise.
pub fn whole_release_dp_methods() -> Vec<&'static str> {
    METHODS
        .iter()
        .filter(|m| m.guarantee == Guarantee::WholeReleaseDp)
        .map(|m| m.name)
        .collect()
}

/// The method called `name` (case-insensitive).
pub fn find_method(name: &str) -> Option<&'static MethodSpec> {
    METHODS
        .iter()
        .copied()
        .find(|m| m.name.eq_ignore_ascii_case(name.trim()))
}

/// `epsilon`, shared by the methods with a privacy parameter.
pub const EPSILON: ParamSpec = ParamSpec::new(
    "epsilon",
    ParamKind::Positive,
    ParamDefault::Number(1.0),
    "total privacy parameter, split over the method's steps",
);

/// `seed`, shared by the randomized methods.
pub const SEED: ParamSpec = ParamSpec::new(
    "seed",
    ParamKind::Integer,
    ParamDefault::Optional("none: seeded from the operating system"),
    "fixed random seed, for the data owner's tests and reproduction only: the release then has no privacy guarantee (its metadata says so; the ledger counts it but charges no ε or δ); refused in sessions for public users",
);

/// `max_nodes` of the methods that evaluate every lattice node.
pub const MAX_NODES: ParamSpec = ParamSpec::new(
    "max_nodes",
    ParamKind::Count,
    ParamDefault::Integer(crate::lattice::DEFAULT_MAX_NODES as u64),
    "largest lattice to evaluate (the product of the hierarchy heights + 1)",
);

/// Parses `qi_weights => 'age=3, los=2'` into `(column, weight)` pairs as written (names
/// as in `qi`, a name containing `,` or `=` in double quotes: [`crate::names::parse_pairs`]):
/// non-negative finite weights, no column twice, at least one pair.
pub fn parse_qi_weights(text: &str) -> Result<Vec<(String, f64)>> {
    let pairs = crate::names::parse_pairs("qi_weights", text).or_else(|e| match e {
        PairsError::Syntax(message) => plan_err!("{message}"),
        PairsError::NoEquals(item) => plan_err!(
            "qi_weights: '{item}' is not 'column=weight'; write e.g. qi_weights => 'age=3, los=2'"
        ),
    })?;
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut quoted: Vec<bool> = Vec::new();
    for pair in pairs {
        let name = pair.name.text;
        let weight = match pair.value.parse::<f64>() {
            Ok(w) if w.is_finite() && w >= 0.0 => w,
            _ => {
                return plan_err!(
                    "qi_weights: weight of '{name}' must be a non-negative number, got '{}'",
                    pair.value
                )
            }
        };
        let twice = out.iter().zip(&quoted).any(|((n, _), &q)| {
            if q || pair.name.quoted {
                *n == name
            } else {
                n.eq_ignore_ascii_case(&name)
            }
        });
        if twice {
            return plan_err!("qi_weights: column '{name}' is listed twice");
        }
        out.push((name, weight));
        quoted.push(pair.name.quoted);
    }
    if out.is_empty() {
        return plan_err!("qi_weights: no 'column=weight' pairs in '{text}'");
    }
    Ok(out)
}

/// Reads the `max_nodes` argument as a lattice size limit.
pub fn max_nodes(values: &ParamValues) -> Result<usize> {
    Ok(usize::try_from(values.u64("max_nodes")?).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    /// Every table is well-formed: unique names, and every default is a value its own
    /// kind accepts (so a default can never fail where a written-out value succeeds).
    #[test]
    fn registry_tables_are_consistent() {
        let mut method_names = Vec::new();
        for method in METHODS {
            // A method takes an ε exactly when its guarantee is differential privacy, and
            // then bounds a person's rows; a syntactic one counts persons or refuses them.
            let takes_epsilon = method.params.iter().any(|p| p.name == "epsilon");
            assert_eq!(
                takes_epsilon,
                method.is_differentially_private(),
                "{}",
                method.name
            );
            assert_eq!(
                method.persons == Persons::BoundRows,
                method.is_differentially_private(),
                "{}",
                method.name
            );
            if let Persons::Counted(text) = method.persons {
                assert!(text.contains("{column}"), "{}", method.name);
            }
            assert!(
                !method.pseudonyms || method.guarantee == Guarantee::Syntactic,
                "{}: pseudonyms link rows across releases",
                method.name
            );
            assert!(!method_names.contains(&method.name), "{}", method.name);
            method_names.push(method.name);
            assert_eq!(
                find_method(&method.name.to_uppercase()).map(|m| m.name),
                Some(method.name)
            );
            let mut names = Vec::new();
            for p in method.params {
                assert!(
                    !names.contains(&p.name),
                    "{}: {} twice",
                    method.name,
                    p.name
                );
                names.push(p.name);
                assert!(!p.doc.is_empty(), "{}: {} has no doc", method.name, p.name);
                let literal = match p.default {
                    ParamDefault::Text(t) => Some(datafusion::common::ScalarValue::from(t)),
                    ParamDefault::Number(x) => Some(datafusion::common::ScalarValue::from(x)),
                    ParamDefault::Integer(n) => Some(datafusion::common::ScalarValue::from(n)),
                    ParamDefault::Bool(b) => Some(datafusion::common::ScalarValue::from(b)),
                    ParamDefault::Required | ParamDefault::Optional(_) => None,
                };
                if let Some(literal) = literal {
                    let parsed = crate::params::parse_value("t", "test", p.name, p.kind, &literal);
                    assert!(
                        matches!(
                            parsed,
                            Ok(ParamValue::Text(_)
                                | ParamValue::Number(_)
                                | ParamValue::Integer(_)
                                | ParamValue::Bool(_))
                        ),
                        "{}: default of {} is not a valid {:?}: {parsed:?}",
                        method.name,
                        p.name,
                        p.kind
                    );
                }
            }
            for (refused, why) in method.refuses {
                assert!(
                    !names.contains(refused),
                    "{} refuses its own {refused}",
                    method.name
                );
                assert!(!why.is_empty());
            }
        }
        assert!(find_method("nope").is_none());
    }

    /// Each method validates its defaults into a configured method of the same name.
    #[test]
    fn every_method_configures_from_its_defaults() {
        for method in METHODS {
            let mut given = std::collections::BTreeMap::new();
            if method.name == "safepub" {
                given.insert(
                    "delta".to_string(),
                    datafusion::common::ScalarValue::from(1e-6),
                );
            }
            let values =
                ParamValues::parse("anonymize", method.name, method.params, &given).unwrap();
            let qi = ["age".to_string()];
            let configured = (method.configure)(&MethodArgs {
                values: &values,
                has_informative: true,
                qi: &qi,
            })
            .unwrap();
            assert_eq!(configured.name(), method.name);
            assert!(configured.max_nodes() >= 1);
            let cost = configured.budget();
            assert!(cost.epsilon >= 0.0 && cost.delta >= 0.0);
        }
    }
}
