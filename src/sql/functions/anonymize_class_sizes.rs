//! `anonymize_class_sizes(...)`: the class-size distribution of any table, for plotting.
//! It binds like `anonymize_assess(...)` (see [`super::anonymize_assess`]); the table is
//! read in [`crate::assess`].

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::Result;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::anonymize_assess::{build_request, AssessRows, Kind, CLASS_SIZES_PARAMS};
use crate::assess::class_sizes_schema;
use crate::sql::args::{CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, LazyTable};

/// `anonymize_class_sizes(...)`.
#[derive(Debug, Default)]
pub struct ClassSizesFunction;

impl SqlTableFunction for ClassSizesFunction {
    fn name(&self) -> &'static str {
        "anonymize_class_sizes"
    }

    fn owner_only(&self) -> bool {
        // On a raw source the figures are exact facts about the data.
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        CLASS_SIZES_PARAMS
    }

    fn about(&self) -> &'static str {
        "Class-size distribution of any table for plotting: one row per class size with the number of classes of that size and the records in them, by size. Rows whose every quasi-identifier is '*' (a release's suppressed rows) are left out. Owner-only: on a raw source the figures are exact facts about the data."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let request = build_request(self.name(), CLASS_SIZES_PARAMS, args, context)?;
        Ok(Arc::new(LazyTable::new(
            class_sizes_schema(),
            Arc::new(Cached::new(AssessRows {
                kind: Kind::ClassSizes,
                request,
            })),
        )))
    }
}
