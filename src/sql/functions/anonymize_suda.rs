//! `anonymize_suda(...)`: SUDA2's special uniques of every record (owner-only). The
//! arguments are bound here; the table is read in [`crate::assess::suda`].

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::anonymize_assess::{columns, table, QI, SOURCE};
use crate::assess::suda::{suda, suda_schema, SudaRequest, SUDA_COLUMNS};
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::privacy::suda::{
    combinations_searched, SudaConfig, SudaScoring, MAX_COMBINATIONS_SEARCHED,
};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};

/// sdcMicro's default DIS fraction (`suda2(..., DisFraction = 0.01)`).
pub const DEFAULT_DIS_FRACTION: f64 = 0.01;

/// Parameters of `anonymize_suda`.
pub const SUDA_PARAMS: &[ParamSpec] = &[
    SOURCE,
    QI,
    ParamSpec::new(
        "key",
        ParamKind::Text,
        ParamDefault::Required,
        "the column naming each record in the output (e.g. a record id); not a quasi-identifier",
    ),
    ParamSpec::new(
        "max_size",
        ParamKind::Count,
        ParamDefault::Optional("every quasi-identifier, as sdcMicro's suda2"),
        "largest minimal sample unique searched for, in quasi-identifiers (1 to their number)",
    ),
    ParamSpec::new(
        "dis_fraction",
        ParamKind::Positive,
        ParamDefault::Number(DEFAULT_DIS_FRACTION),
        "the sampling fraction DIS-SUDA assumes, in (0, 1) (sdcMicro's DisFraction)",
    ),
    ParamSpec::new(
        "scoring",
        ParamKind::Choice(&["original", "alternative"]),
        ParamDefault::Text("original"),
        "the SUDA score of a minimal sample unique of k of M quasi-identifiers: 'original' (M − k)!, 'alternative' (2^(M−k) − 1)·k!(M−k)!/M! (sdcMicro's original_scoring)",
    ),
];

fn build_request(
    function: &str,
    args: CallArgs,
    context: &mut dyn RelationPlannerContext,
) -> Result<SudaRequest> {
    let bound = bind(function, SUDA_PARAMS, &["source"], args)?;
    let values = ParamValues::parse(function, function, SUDA_PARAMS, bound.values())?;
    let source_name = values.text("source")?.to_string();
    let source = table(function, context, &source_name, "table")?;
    let schema = source.schema();
    let qi = columns(function, "qi", values.text("qi")?, &source_name, &schema)?;
    let key = match columns(function, "key", values.text("key")?, &source_name, &schema)?.as_slice()
    {
        [one] => one.clone(),
        _ => return plan_err!("{function}(): key must name one column"),
    };
    if qi.contains(&key) {
        return plan_err!(
            "{function}(): column '{key}' cannot be both the key and a quasi-identifier"
        );
    }
    if SUDA_COLUMNS.contains(&key.as_str()) {
        return plan_err!(
            "{function}(): the key column cannot be named '{key}', a column of the result; rename it in a view"
        );
    }
    let key_type = schema.field_with_name(&key)?.data_type().clone();
    let max_size = match values.opt_u64("max_size") {
        None => qi.len(),
        Some(m) if (1..=qi.len() as u64).contains(&m) => m as usize,
        Some(m) => {
            return plan_err!(
                "{function}(): max_size must be between 1 and the number of quasi-identifiers ({}), got {m}",
                qi.len()
            )
        }
    };
    let searched = combinations_searched(qi.len(), max_size);
    if searched > MAX_COMBINATIONS_SEARCHED {
        let fits = (1..max_size)
            .rev()
            .find(|&size| combinations_searched(qi.len(), size) <= MAX_COMBINATIONS_SEARCHED)
            .unwrap_or(1);
        return plan_err!(
            "{function}(): max_size = {max_size} over {} quasi-identifiers searches up to {searched} column combinations, more than {MAX_COMBINATIONS_SEARCHED}; give max_size => {fits} (or fewer quasi-identifiers)",
            qi.len()
        );
    }
    let dis_fraction = values
        .opt_f64("dis_fraction")
        .unwrap_or(DEFAULT_DIS_FRACTION);
    if !(dis_fraction > 0.0 && dis_fraction < 1.0) {
        return plan_err!("{function}(): dis_fraction must be in (0, 1), got {dis_fraction}");
    }
    let mut config = SudaConfig::new(max_size);
    config.dis_fraction = dis_fraction;
    config.scoring = match values.opt_text("scoring") {
        Some("alternative") => SudaScoring::Alternative,
        _ => SudaScoring::Original,
    };
    Ok(SudaRequest {
        source_name,
        source,
        qi,
        key: (key, key_type),
        config,
    })
}

#[async_trait]
impl Compute for SudaRequest {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        suda(self, state).await
    }
}

/// `anonymize_suda(...)`.
#[derive(Debug, Default)]
pub struct SudaFunction;

impl SqlTableFunction for SudaFunction {
    fn name(&self) -> &'static str {
        "anonymize_suda"
    }

    fn owner_only(&self) -> bool {
        // Which records are special uniques is a fact about the raw data.
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        SUDA_PARAMS
    }

    fn about(&self) -> &'static str {
        "SUDA2 (Manning, Haglin & Keane 2008) as sdcMicro's suda2 computes it: one row per record with its key, msu_count (its minimal sample uniques: value combinations of at most max_size quasi-identifiers that no other record shares and that contain no smaller such combination), min_msu_size (NULL without one), suda_score and dis_suda_score (the DIS-SUDA estimate of its re-identification risk). The records that need protection first. Owner-only: the figures are exact facts about the data."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let request = build_request(self.name(), args, context)?;
        Ok(Arc::new(LazyTable::new(
            suda_schema(&request.key),
            Arc::new(Cached::new(request)),
        )))
    }
}
