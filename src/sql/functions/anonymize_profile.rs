//! `anonymize_profile(source)`: per column its type, counts and a suggested role with the
//! rule that fired (owner-only). The arguments are bound here; the table is read in
//! [`crate::profile`].

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::anonymize_assess::table;
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::profile::{profile, profile_schema, ProfileRequest};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};

const FUNCTION: &str = "anonymize_profile";

/// Parameters of `anonymize_profile`.
const PROFILE_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "source",
    ParamKind::Text,
    ParamDefault::Required,
    "table or view to profile (first positional argument)",
)];

#[async_trait]
impl Compute for ProfileRequest {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        profile(self, state).await
    }
}

/// `anonymize_profile(...)`.
#[derive(Debug, Default)]
pub struct ProfileFunction;

impl SqlTableFunction for ProfileFunction {
    fn name(&self) -> &'static str {
        FUNCTION
    }

    fn owner_only(&self) -> bool {
        // Distinct counts and the values behind a suggestion are facts about the raw data.
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        PROFILE_PARAMS
    }

    fn about(&self) -> &'static str {
        "One row per column of a table: column_name, data_type, rows, distinct_count, null_share, uniqueness (distinct values per non-NULL value), and a suggested role (direct_identifier, quasi_identifier, sensitive or other) with the HIPAA Safe Harbor identifier kind behind it, if any (safe_harbor: '(A) names' ... '(R) other unique numbers or codes') and the rule that fired (reason). Rules, first match wins: the values' pattern of an identifier kind (e-mail, phone, SSN, URL, IP, MAC, VIN; read on the 50 most frequent values, 90 % matching); a word of the name (patient_id, PatientName, fax, mrn, ...); a date type; 90 % distinct values (not a measurement); a pattern of a quasi-identifier (ZIP codes, dates as text); quasi-identifier words (age, sex, zip, birth ...); sensitive words (diagnosis, icd, salary ...). A suggestion to confirm, not a finding. Owner-only."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(FUNCTION, PROFILE_PARAMS, &["source"], args)?;
        let values = ParamValues::parse(FUNCTION, FUNCTION, PROFILE_PARAMS, bound.values())?;
        let source_name = values.text("source")?.to_string();
        let source = table(FUNCTION, context, &source_name, "table")?;
        Ok(Arc::new(LazyTable::new(
            profile_schema(),
            Arc::new(Cached::new(ProfileRequest {
                source_name,
                source,
            })),
        )))
    }
}
