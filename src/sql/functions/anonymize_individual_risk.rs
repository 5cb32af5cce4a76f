//! `anonymize_individual_risk(...)`: sdcMicro's individual re-identification risk of every
//! class (owner-only). The arguments are bound here; the table is read in
//! [`crate::assess::individual_risk`].

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::anonymize_assess::{columns, table, weight_column, QI, SOURCE, WEIGHTS};
use crate::assess::individual_risk::{
    individual_risk_schema, individual_risks, IndividualRiskRequest, INDIVIDUAL_RISK_COLUMNS,
};
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::privacy::individual_risk::RiskMethod;
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};

/// Parameters of `anonymize_individual_risk`.
pub const INDIVIDUAL_RISK_PARAMS: &[ParamSpec] = &[
    SOURCE,
    QI,
    WEIGHTS,
    ParamSpec::new(
        "method",
        ParamKind::Choice(&["approx", "exact", "argus"]),
        ParamDefault::Text("approx"),
        "how E[1/F | f] is evaluated: 'approx' (sdcMicro's indivRisk default, used by measure_risk), 'exact' (indivRisk's exact series), 'argus' (mu-Argus 4.1's closed forms)",
    ),
];

fn build_request(
    function: &str,
    args: CallArgs,
    context: &mut dyn RelationPlannerContext,
) -> Result<IndividualRiskRequest> {
    let bound = bind(function, INDIVIDUAL_RISK_PARAMS, &["source"], args)?;
    let values = ParamValues::parse(function, function, INDIVIDUAL_RISK_PARAMS, bound.values())?;
    let source_name = values.text("source")?.to_string();
    let source = table(function, context, &source_name, "table")?;
    let schema = source.schema();
    let qi = columns(function, "qi", values.text("qi")?, &source_name, &schema)?;
    if let Some(clash) = qi
        .iter()
        .find(|q| INDIVIDUAL_RISK_COLUMNS.contains(&q.as_str()))
    {
        return plan_err!(
            "{function}(): a quasi-identifier cannot be named '{clash}', a column of the result; rename it in a view"
        );
    }
    let weights = match values.opt_text("weights") {
        None => None,
        Some(text) => Some(weight_column(
            function,
            text,
            &source_name,
            &schema,
            &qi,
            &[],
        )?),
    };
    let method = match values.opt_text("method") {
        Some("exact") => RiskMethod::Exact,
        Some("argus") => RiskMethod::ArgusSeries,
        _ => RiskMethod::Approx,
    };
    Ok(IndividualRiskRequest {
        source_name,
        source,
        qi,
        weights,
        method,
    })
}

#[async_trait]
impl Compute for IndividualRiskRequest {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        individual_risks(self, state).await
    }
}

/// `anonymize_individual_risk(...)`.
#[derive(Debug, Default)]
pub struct IndividualRiskFunction;

impl SqlTableFunction for IndividualRiskFunction {
    fn name(&self) -> &'static str {
        "anonymize_individual_risk"
    }

    fn owner_only(&self) -> bool {
        // Each class's records and weights are exact facts about the data.
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        INDIVIDUAL_RISK_PARAMS
    }

    fn about(&self) -> &'static str {
        "sdcMicro's individual risk (Benedetti & Franconi): one row per class of equal quasi-identifier values (as text), riskiest first, with records (its sample frequency f), weight_sum (the sum of its sampling weights, the population it stands for) and risk (E[1/F | f] under the negative binomial model: the chance that a record of the class is re-identified; every record of a class has the class's risk). Without weights, every record stands for itself and risk = 1/f. Rows whose every quasi-identifier is '*' (a release's suppressed rows) are not a class. Owner-only: the figures are exact facts about the data."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let request = build_request(self.name(), args, context)?;
        Ok(Arc::new(LazyTable::new(
            individual_risk_schema(&request.qi),
            Arc::new(Cached::new(request)),
        )))
    }
}
