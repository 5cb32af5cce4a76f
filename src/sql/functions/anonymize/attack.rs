//! `anonymize_attack(...)`: anonymeter's three attacks ([`crate::attack`]) on the release
//! `anonymize(...)` with the same arguments returns (the cached one: nothing is drawn or
//! charged that a release with the same arguments has not), or on a table named by
//! `release` (the source itself, a release made elsewhere), against the source.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::{named_table, ReleaseCache, ANONYMIZE_PARAMS};
use crate::attack::{attack_release, AttackPlan, Settings, Truth};
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::release::ReleaseRowLimit;
use crate::releases::CacheEntry;
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};

const NAME: &str = "anonymize_attack";

/// The function's own parameters, after those of `anonymize`.
const OWN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "attack",
        ParamKind::Text,
        ParamDefault::Text("all"),
        "the attacks, comma-separated: singling_out, singling_out_univariate, linkability, inference, record_linkage; 'all' is the first, linkability, inference and (where the release keeps each record's own row: kanon, microaggregation) record_linkage",
    ),
    ParamSpec::new(
        "attacks",
        ParamKind::Count,
        ParamDefault::Integer(500),
        "attacks per attack type: singling-out queries, or target records (anonymeter's n_attacks)",
    ),
    ParamSpec::new(
        "query_columns",
        ParamKind::Count,
        ParamDefault::Integer(3),
        "columns per singling-out query (anonymeter's n_cols)",
    ),
    ParamSpec::new(
        "link_columns",
        ParamKind::Text,
        ParamDefault::Optional("the quasi-identifiers in two halves (with one, it against the other released columns)"),
        "linkability: the columns of the attacker's two tables, 'a, b | c, d'",
    ),
    ParamSpec::new(
        "neighbours",
        ParamKind::Count,
        ParamDefault::Integer(1),
        "linkability: released rows per nearest-neighbour search (anonymeter's n_neighbors)",
    ),
    ParamSpec::new(
        "secret",
        ParamKind::Text,
        ParamDefault::Optional("the first sensitive or informative column, else the last quasi-identifier"),
        "inference: the column the attacker guesses",
    ),
    ParamSpec::new(
        "known_columns",
        ParamKind::Text,
        ParamDefault::Optional("every other released column"),
        "inference: the columns the attacker knows, comma-separated",
    ),
    ParamSpec::new(
        "control",
        ParamKind::Text,
        ParamDefault::Optional("none: the risk is the success beyond the naive baseline's"),
        "a table of records from the same population that the release did not use (held out before release): the risk is then the success beyond the attack on them",
    ),
    ParamSpec::new(
        "release",
        ParamKind::Text,
        ParamDefault::Optional("the release anonymize() with the same arguments returns"),
        "a table to attack in place of the release (the source itself, or a release made elsewhere), with the released columns",
    ),
    ParamSpec::new(
        "attack_seed",
        ParamKind::Integer,
        ParamDefault::Integer(0),
        "seed of the attacks' draws (targets, query columns, ties): the same figures for the same tables",
    ),
    ParamSpec::new(
        "confidence",
        ParamKind::Number,
        ParamDefault::Number(0.95),
        "confidence level of the intervals, in (0, 1)",
    ),
];

/// Every parameter of `anonymize_attack`: those of `anonymize`, then its own.
static ATTACK_PARAMS: LazyLock<Vec<ParamSpec>> = LazyLock::new(|| {
    let mut params = ANONYMIZE_PARAMS.clone();
    params.extend_from_slice(OWN_PARAMS);
    params
});

/// Schema of `anonymize_attack`: one row per attack.
fn attack_schema() -> SchemaRef {
    let rate = |name: &str| Field::new(name, DataType::Float64, false);
    Arc::new(Schema::new(vec![
        Field::new("attack", DataType::Utf8, false),
        Field::new("columns", DataType::Utf8, false),
        Field::new("attacks", DataType::UInt64, false),
        Field::new("attacks_run", DataType::UInt64, false),
        Field::new("successes", DataType::Float64, false),
        rate("success_rate"),
        rate("success_error"),
        rate("baseline_rate"),
        Field::new("control_rate", DataType::Float64, true),
        rate("risk"),
        rate("risk_low"),
        rate("risk_high"),
    ]))
}

/// `anonymize_attack(...)`.
#[derive(Debug)]
pub struct AttackFunction {
    cache: Arc<ReleaseCache>,
}

impl AttackFunction {
    /// The function over the cache the `anonymize` functions share.
    pub fn new(cache: Arc<ReleaseCache>) -> Self {
        Self { cache }
    }
}

impl SqlTableFunction for AttackFunction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn params(&self) -> &'static [ParamSpec] {
        ATTACK_PARAMS.as_slice()
    }

    fn owner_only(&self) -> bool {
        // The attacks read the source and report how often they succeed on it.
        true
    }

    fn about(&self) -> &'static str {
        "Owner-only: anonymeter's attacks on the release anonymize() with the same arguments returns (or on the table release => names), against the source: singling out (queries that single out one released row, asked of the source), linkability (two tables of the attacker linked through the nearest released rows) inference (a secret column guessed from the nearest released row), and for kanon and microaggregation record linkage (each source record linked to its nearest released row; the right links, ties shared, and the exact ones). A source value matches a released label that covers it. One row per attack: the attacks asked for and run, the successes, the success rate with its Wilson error, the baseline (naive attacker) rate, the control rate (with control => a table of records the release did not use), and the risk with its interval: (main - control) / (1 - control), or over the baseline rate without a control. The release is the cached one: nothing is drawn or charged again. Seeded (attack_seed): the same figures every time."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let own_names: Vec<&str> = OWN_PARAMS.iter().map(|p| p.name).collect();
        let mut bound = bind(NAME, &ATTACK_PARAMS, &["source"], args)?;
        let own = bound.take(&own_names);
        let values = ParamValues::parse(NAME, NAME, OWN_PARAMS, own.values())?;
        let confidence = values.f64("confidence")?;
        if !(confidence > 0.0 && confidence < 1.0) {
            return plan_err!("{NAME}(): confidence must be in (0, 1), got {confidence}");
        }
        let control = named_table(NAME, "control", values.opt_text("control"), context)?;
        let release = named_table(NAME, "release", values.opt_text("release"), context)?;
        let (entry, limit) = self.cache.entry(NAME, &bound, context)?;
        let plan = AttackPlan {
            attacks: values.text("attack")?.to_string(),
            query_columns: values.u64("query_columns")? as usize,
            link_columns: values.opt_text("link_columns").map(str::to_string),
            neighbours: values.u64("neighbours")? as usize,
            secret: values.opt_text("secret").map(str::to_string),
            known: values.opt_text("known_columns").map(str::to_string),
            settings: Settings {
                attacks: values.u64("attacks")? as usize,
                seed: values.u64("attack_seed")?,
                confidence,
            },
        };
        // Parse what can be parsed before anything runs.
        plan.kinds(true)?;
        Ok(Arc::new(LazyTable::new(
            attack_schema(),
            Arc::new(Cached::new(AttackRows {
                cache: self.cache.clone(),
                entry,
                limit,
                control,
                release,
                plan,
            })),
        )))
    }
}

#[derive(Debug)]
struct AttackRows {
    cache: Arc<ReleaseCache>,
    entry: Arc<CacheEntry>,
    limit: ReleaseRowLimit,
    control: Option<Arc<dyn TableProvider>>,
    release: Option<Arc<dyn TableProvider>>,
    plan: AttackPlan,
}

#[async_trait]
impl Compute for AttackRows {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        let request = &self.entry.request;
        let (release, mut truth) = self
            .cache
            .examined_release(&self.entry, self.limit, self.release.as_ref(), state)
            .await?;
        // The source named as the release: each record is its own row (the report's
        // "before" figures).
        if std::ptr::addr_eq(Arc::as_ptr(&release), Arc::as_ptr(&request.source)) {
            truth = Truth::Itself;
        }
        let outcomes = attack_release(
            request,
            release,
            self.release.is_some(),
            self.control.clone(),
            &truth,
            &self.plan,
            state,
        )
        .await?;
        let schema = attack_schema();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                outcomes.iter().map(|o| o.attack),
            )),
            Arc::new(StringArray::from_iter_values(
                outcomes.iter().map(|o| o.columns.as_str()),
            )),
            Arc::new(UInt64Array::from_iter_values(
                outcomes.iter().map(|o| o.counts.attacks),
            )),
            Arc::new(UInt64Array::from_iter_values(
                outcomes.iter().map(|o| o.counts.attacks_run),
            )),
            Arc::new(Float64Array::from_iter_values(
                outcomes.iter().map(|o| o.counts.successes),
            )),
            Arc::new(Float64Array::from_iter_values(
                outcomes.iter().map(|o| o.success.value),
            )),
            Arc::new(Float64Array::from_iter_values(
                outcomes.iter().map(|o| o.success.error),
            )),
            Arc::new(Float64Array::from_iter_values(
                outcomes.iter().map(|o| o.baseline.value),
            )),
            Arc::new(Float64Array::from(
                outcomes
                    .iter()
                    .map(|o| o.control.map(|c| c.value))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(Float64Array::from_iter_values(
                outcomes.iter().map(|o| o.risk.0),
            )),
            Arc::new(Float64Array::from_iter_values(
                outcomes.iter().map(|o| o.risk.1),
            )),
            Arc::new(Float64Array::from_iter_values(
                outcomes.iter().map(|o| o.risk.2),
            )),
        ];
        Ok(vec![RecordBatch::try_new(schema, columns)?])
    }
}
