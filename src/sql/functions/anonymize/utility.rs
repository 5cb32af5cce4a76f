//! `anonymize_utility(...)`: the release `anonymize(...)` with the same arguments returns
//! (the cached one), or a table named by `release`, scored against the source by SDNist's
//! measures ([`crate::utility`]).

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::Result;
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::{named_table, ReleaseCache, ANONYMIZE_PARAMS};
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::release::ReleaseRowLimit;
use crate::releases::CacheEntry;
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};
use crate::utility::{utility_of_release, UtilityPlan};

const NAME: &str = "anonymize_utility";

/// The function's own parameters, after those of `anonymize`.
const OWN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "metrics",
        ParamKind::Text,
        ParamDefault::Text("all"),
        "the measures, comma-separated: k_marginal (with its sampling baseline), pmse, uem (unique exact matches); 'all' is every one",
    ),
    ParamSpec::new(
        "release",
        ParamKind::Text,
        ParamDefault::Optional("the release anonymize() with the same arguments returns"),
        "a table to score in place of the release (a release made elsewhere, or a sample of the source), with the released columns",
    ),
    ParamSpec::new(
        "utility_seed",
        ParamKind::Integer,
        ParamDefault::Integer(0),
        "seed of the source's random samples the k-marginal score is compared with",
    ),
];

/// Every parameter of `anonymize_utility`: those of `anonymize`, then its own.
static UTILITY_PARAMS: LazyLock<Vec<ParamSpec>> = LazyLock::new(|| {
    let mut params = ANONYMIZE_PARAMS.clone();
    params.extend_from_slice(OWN_PARAMS);
    params
});

/// Schema of `anonymize_utility`: one row per figure.
fn utility_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("metric", DataType::Utf8, false),
        Field::new("value", DataType::Float64, true),
        Field::new("explain", DataType::Utf8, false),
    ]))
}

/// `anonymize_utility(...)`.
#[derive(Debug)]
pub struct UtilityFunction {
    cache: Arc<ReleaseCache>,
}

impl UtilityFunction {
    /// The function over the cache the `anonymize` functions share.
    pub fn new(cache: Arc<ReleaseCache>) -> Self {
        Self { cache }
    }
}

impl SqlTableFunction for UtilityFunction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn params(&self) -> &'static [ParamSpec] {
        UTILITY_PARAMS.as_slice()
    }

    fn owner_only(&self) -> bool {
        // The figures compare the release with the source, row for row.
        true
    }

    fn about(&self) -> &'static str {
        "Owner-only: how close the release anonymize() with the same arguments returns (or the table release => names) stays to the source, by the measures of NIST's CRC (SDNist 2.5): k_marginal (0-1000, over every pair of released columns, generalized values spread over the values they cover) with k_marginal_sample_equivalent (the largest share of the source whose random sample scores no better), pmse (a depth-6 decision tree's propensity mean squared error: 0 when release and source cannot be told apart) and the unique exact matches (source records unique on the released columns that the release holds exactly, as a count and a share). One row per figure with what it means. The release is the cached one: nothing is drawn or charged again."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let own_names: Vec<&str> = OWN_PARAMS.iter().map(|p| p.name).collect();
        let mut bound = bind(NAME, &UTILITY_PARAMS, &["source"], args)?;
        let own = bound.take(&own_names);
        let values = ParamValues::parse(NAME, NAME, OWN_PARAMS, own.values())?;
        let release = named_table(NAME, "release", values.opt_text("release"), context)?;
        let plan = UtilityPlan {
            metrics: values.text("metrics")?.to_string(),
            seed: values.u64("utility_seed")?,
        };
        // Parse what can be parsed before anything runs.
        plan.kinds()?;
        let (entry, limit) = self.cache.entry(NAME, &bound, context)?;
        Ok(Arc::new(LazyTable::new(
            utility_schema(),
            Arc::new(Cached::new(UtilityRows {
                cache: self.cache.clone(),
                entry,
                limit,
                release,
                plan,
            })),
        )))
    }
}

#[derive(Debug)]
struct UtilityRows {
    cache: Arc<ReleaseCache>,
    entry: Arc<CacheEntry>,
    limit: ReleaseRowLimit,
    release: Option<Arc<dyn TableProvider>>,
    plan: UtilityPlan,
}

#[async_trait]
impl Compute for UtilityRows {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        let request = &self.entry.request;
        let (release, _) = self
            .cache
            .examined_release(&self.entry, self.limit, self.release.as_ref(), state)
            .await?;
        let figures = utility_of_release(
            request,
            release,
            &request.released_values(),
            &self.plan,
            state,
        )
        .await?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                figures.iter().map(|f| f.metric),
            )),
            Arc::new(Float64Array::from(
                figures.iter().map(|f| f.value).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from_iter_values(
                figures.iter().map(|f| f.explain.as_str()),
            )),
        ];
        Ok(vec![RecordBatch::try_new(utility_schema(), columns)?])
    }
}
