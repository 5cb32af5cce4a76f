//! `anonymize_profile(source)`: per column its type, counts and a suggested role with the
//! rule that fired; `anonymize_safe_harbor(source)`: what in a table would break HIPAA's
//! Safe Harbor rule (both owner-only). The arguments are bound here; the table is read in
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
use crate::profile::safe_harbor::{safe_harbor, safe_harbor_schema};
use crate::profile::{profile, profile_schema, ProfileRequest};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};

const FUNCTION: &str = "anonymize_profile";

/// Parameters of `anonymize_profile` and `anonymize_safe_harbor`.
const PROFILE_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "source",
    ParamKind::Text,
    ParamDefault::Required,
    "table or view to read (first positional argument)",
)];

/// What is computed of a table.
#[derive(Debug, Clone, Copy)]
enum Reading {
    Profile,
    SafeHarbor,
}

#[derive(Debug)]
struct Read(Reading, ProfileRequest);

#[async_trait]
impl Compute for Read {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        match self.0 {
            Reading::Profile => profile(&self.1, state).await,
            Reading::SafeHarbor => safe_harbor(&self.1, state).await,
        }
    }
}

/// The table of one call of `function`, computed when first scanned.
fn create(
    function: &str,
    reading: Reading,
    args: CallArgs,
    context: &mut dyn RelationPlannerContext,
) -> Result<Arc<dyn TableProvider>> {
    let bound = bind(function, PROFILE_PARAMS, &["source"], args)?;
    let values = ParamValues::parse(function, function, PROFILE_PARAMS, bound.values())?;
    let source_name = values.text("source")?.to_string();
    let source = table(function, context, &source_name, "table")?;
    let schema = match reading {
        Reading::Profile => profile_schema(),
        Reading::SafeHarbor => safe_harbor_schema(),
    };
    let request = ProfileRequest {
        source_name,
        source,
    };
    Ok(Arc::new(LazyTable::new(
        schema,
        Arc::new(Cached::new(Read(reading, request))),
    )))
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
        create(FUNCTION, Reading::Profile, args, context)
    }
}

/// `anonymize_safe_harbor(...)`.
#[derive(Debug, Default)]
pub struct SafeHarborFunction;

impl SqlTableFunction for SafeHarborFunction {
    fn name(&self) -> &'static str {
        "anonymize_safe_harbor"
    }

    fn owner_only(&self) -> bool {
        // Its findings count rows of the table by their values.
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        PROFILE_PARAMS
    }

    fn about(&self) -> &'static str {
        "What in a table (a release about to be published, e.g. a view over anonymize(...), or a source) would break HIPAA's Safe Harbor rule, one row per finding: column_name, rule (the identifier kind, '(C) dates other than the year' ...), finding (what and how to mend it) and rows (rows holding it). Checks: DATE/TIMESTAMP columns and text dates or date labels finer than a year; an age column with an exact age over 89 or more than one label above 89 (one '>=90' category is required); ZIP codes showing more than three digits; identifiers left in and cities or counties, as anonymize_profile finds them. No rows: nothing found. Not checked: three-digit ZIP areas of 20000 people or fewer, free text. At most 100000 distinct values per column are read. Owner-only."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        create(self.name(), Reading::SafeHarbor, args, context)
    }
}
