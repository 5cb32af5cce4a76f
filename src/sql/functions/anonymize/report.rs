//! `anonymize_report(...)`: the release `anonymize(...)` with the same arguments returns,
//! described for its data owner in one HTML page ([`crate::report`]). The release comes
//! from the shared cache: a report of a release already drawn draws and charges nothing,
//! and a release first drawn for a report is the one `anonymize` then serves.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::{ReleaseCache, ANONYMIZE_PARAMS};
use crate::budget::account::Limits;
use crate::budget::config::options;
use crate::method::find_method;
use crate::method::COMMON_PARAMS;
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::privacy::individual_risk::DEFAULT_RISK_THRESHOLD;
use crate::release::ReleaseRowLimit;
use crate::releases::CacheEntry;
use crate::report::{check_path, write, Parameter, ReportOptions, Subject};
use crate::sql::args::{bind, BoundArgs, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable, Ready};

const NAME: &str = "anonymize_report";

/// The report's own parameters, after those of `anonymize`.
const OWN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "path",
        ParamKind::Text,
        ParamDefault::Required,
        "the .html file to write (replaced if it exists; written whole or not at all), in an existing folder",
    ),
    ParamSpec::new(
        "risk_threshold",
        ParamKind::Number,
        ParamDefault::Number(DEFAULT_RISK_THRESHOLD),
        "records_at_risk counts the records whose prosecutor risk exceeds this, in (0, 1] (as anonymize_assess)",
    ),
    ParamSpec::new(
        "attacks",
        ParamKind::Integer,
        ParamDefault::Integer(500),
        "attacks per attack type in the Attacks section (as anonymize_attack's, seed 0); 0 leaves the attacks out",
    ),
    ParamSpec::new(
        "population_size",
        ParamKind::Count,
        ParamDefault::Optional("none: the source is its own population"),
        "the number of records of the population the source was drawn from: adds the journalist risk and population uniqueness (as anonymize_assess)",
    ),
];

/// Every parameter of `anonymize_report`: those of `anonymize`, then its own.
static REPORT_PARAMS: LazyLock<Vec<ParamSpec>> = LazyLock::new(|| {
    let mut params = ANONYMIZE_PARAMS.clone();
    params.extend_from_slice(OWN_PARAMS);
    params
});

/// Schema of `anonymize_report`: one row.
fn report_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("bytes", DataType::UInt64, false),
        Field::new("sections", DataType::Utf8, false),
    ]))
}

/// `anonymize_report(...)`.
#[derive(Debug)]
pub struct ReportFunction {
    cache: Arc<ReleaseCache>,
}

impl ReportFunction {
    /// The function over the cache the `anonymize` functions share.
    pub fn new(cache: Arc<ReleaseCache>) -> Self {
        Self { cache }
    }
}

impl SqlTableFunction for ReportFunction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn params(&self) -> &'static [ParamSpec] {
        REPORT_PARAMS.as_slice()
    }

    fn owner_only(&self) -> bool {
        // The page holds exact figures of the source.
        true
    }

    fn about(&self) -> &'static str {
        "Owner-only: writes one self-contained HTML page (path => 'report.html') describing the release anonymize() with the same arguments returns: a summary (every argument, defaults marked, the chosen levels, the guarantee, the budget spent and left, what may be published), re-identification risk and attribute disclosure before and after (the figures of anonymize_assess on the source and on the release, with a class-size chart), anonymeter's three attacks on the source as itself and on the release (anonymize_attack's figures; attacks => 0 leaves them out), utility (anonymize_information_loss, the records and cells given up, a 2-way k-marginal score from 0 to 1000, each column's distribution before and after), the lattice search with the chosen node marked, and the warnings. The release is the cached one: a report draws and charges nothing a release with the same arguments has not. Returns one row: path, bytes and the section names. Never publish the page: it is computed from the exact data."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let mut bound = bind(NAME, &REPORT_PARAMS, &["source"], args)?;
        let own = bound.take(&["path", "risk_threshold", "attacks", "population_size"]);
        let values = ParamValues::parse(NAME, NAME, OWN_PARAMS, own.values())?;
        let path = check_path(NAME, values.text("path")?)?;
        let risk_threshold = values.f64("risk_threshold")?;
        if !(risk_threshold > 0.0 && risk_threshold <= 1.0) {
            return plan_err!("{NAME}(): risk_threshold must be in (0, 1], got {risk_threshold}");
        }
        let (entry, limit) = self.cache.entry(NAME, &bound, context)?;
        let parameters = parameters(&bound, entry.request.method.name());
        let rows = ReportRows {
            cache: self.cache.clone(),
            entry,
            limit,
            parameters,
            options: ReportOptions {
                path,
                risk_threshold,
                population_size: values.opt_u64("population_size"),
                attacks: values.u64("attacks")? as usize,
            },
        };
        Ok(Arc::new(LazyTable::new(
            report_schema(),
            Arc::new(Cached::new(rows)),
        )))
    }
}

/// Every argument of `anonymize` for the method: given, or its default.
fn parameters(bound: &BoundArgs, method: &str) -> Vec<Parameter> {
    let specs = COMMON_PARAMS
        .iter()
        .chain(find_method(method).map_or(&[][..], |m| m.params));
    specs
        .map(|spec| match bound.values().get(spec.name) {
            Some(value) => Parameter {
                name: spec.name.to_string(),
                value: match value {
                    ScalarValue::Utf8(Some(s))
                    | ScalarValue::Utf8View(Some(s))
                    | ScalarValue::LargeUtf8(Some(s)) => s.clone(),
                    other => other.to_string(),
                },
                default: false,
            },
            None => Parameter {
                name: spec.name.to_string(),
                value: spec.default.describe().unwrap_or_else(|| "required".into()),
                default: true,
            },
        })
        .collect()
}

#[derive(Debug)]
struct ReportRows {
    cache: Arc<ReleaseCache>,
    entry: Arc<CacheEntry>,
    limit: ReleaseRowLimit,
    parameters: Vec<Parameter>,
    options: ReportOptions,
}

#[async_trait]
impl Compute for ReportRows {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        let output = self.cache.release(&self.entry, self.limit, state).await?;
        let request = &self.entry.request;
        let release: Arc<dyn TableProvider> = Arc::new(LazyTable::new(
            request.release_schema(),
            Arc::new(Ready(Arc::new(output.rows.clone()))),
        ));
        let config = state.config_options();
        let settings = options(config);
        let account_key = request.account();
        let account = self
            .cache
            .ledger()
            .accounts(settings.ledger_path.as_deref())?
            .get(&account_key)
            .copied()
            .unwrap_or_default();
        let subject = Subject {
            request,
            output: &output,
            release,
            parameters: self.parameters.clone(),
            budget: (
                account,
                Limits {
                    epsilon: settings.epsilon_budget,
                    delta: settings.delta_budget,
                },
            ),
            source_attacks: self.cache.source_attacks(),
        };
        let written = write(&subject, &self.options, state).await?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![written.path])),
            Arc::new(UInt64Array::from(vec![written.bytes])),
            Arc::new(StringArray::from(vec![written.sections.join(", ")])),
        ];
        Ok(vec![RecordBatch::try_new(report_schema(), columns)?])
    }
}
