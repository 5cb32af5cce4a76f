//! The one list of functions this crate registers, and everything derived from it:
//! [`crate::register_with`] registers [`FunctionList`], `anonymize_help()` lists it,
//! `dfanon --help` shows [`cli_help_section`] and `docs/FUNCTIONS.md` is
//! [`functions_markdown`]. A function added here appears in all of them.
//!
//! What each function shows in help and docs is read from it by [`super::docs`].

pub mod anonymize;
mod anonymize_assess;
mod anonymize_class_sizes;
mod anonymize_help;
mod anonymize_individual_risk;
mod anonymize_profile;
mod anonymize_suda;
mod date_hierarchy;
mod date_labels;
mod dp_noise_interval;
mod generalized;
mod interval_hierarchy;
mod mask_hierarchy;
mod nps_demo;
mod privacy_budget;
mod sample_count_interval;
mod top_bottom_hierarchy;
mod upa_truthful;

use std::sync::Arc;

use datafusion::logical_expr::ScalarUDF;

use crate::access::{Access, RegisterOptions};
use crate::public::PublicRules;
use crate::sql::docs::{self, scalar_doc, table_doc, FunctionDoc};
use crate::sql::planner::SqlTableFunction;
use anonymize::{
    AnonymizeFunction, AttackFunction, PublishFunction, PublishedMetadataFunction, ReleaseCache,
    ReleaseView, ReportFunction, UnpublishFunction, UtilityFunction,
};
use anonymize_assess::AssessFunction;
use anonymize_class_sizes::ClassSizesFunction;
use anonymize_help::HelpFunction;
use anonymize_individual_risk::IndividualRiskFunction;
use anonymize_profile::{ProfileFunction, SafeHarborFunction};
use anonymize_suda::SudaFunction;
use date_hierarchy::DateHierarchyFunction;
use date_labels::date_udfs;
use dp_noise_interval::NoiseIntervalFunction;
use generalized::generalized_udfs;
use interval_hierarchy::IntervalHierarchyFunction;
use mask_hierarchy::MaskHierarchyFunction;
use nps_demo::{NpsDemoFunction, NpsDiseaseHierarchyFunction};
use privacy_budget::{PrivacyBudgetFunction, PrivacyQuotaFunction};
use sample_count_interval::SampleCountIntervalFunction;
use top_bottom_hierarchy::TopBottomHierarchyFunction;
use upa_truthful::UpaTruthfulFunction;

/// Every view of a release, one `anonymize*` table function each.
const RELEASE_VIEWS: [ReleaseView; 8] = [
    ReleaseView::Rows,
    ReleaseView::Metadata,
    ReleaseView::Catalog,
    ReleaseView::IntervalMeans,
    ReleaseView::Diagnostics,
    ReleaseView::InformationLoss,
    ReleaseView::Warnings,
    ReleaseView::Manifest,
];

/// The functions of this crate for one registration: every function for the data owner,
/// the public ones for public users ([`crate::Access`]).
#[derive(Debug)]
pub struct FunctionList {
    /// Table functions, planned by `FunctionPlanner` (planner.rs).
    pub table_functions: Vec<Arc<dyn SqlTableFunction>>,
    /// Scalar functions, registered with `SessionContext::register_udf`.
    pub scalar_functions: Vec<ScalarUDF>,
    /// Names of the owner-only functions this registration leaves out, with why.
    pub withheld: Vec<(String, &'static str)>,
}

impl FunctionList {
    /// Builds every function; the `anonymize*` functions share one release cache and
    /// privacy ledger, which `privacy_budget()` reads.
    pub fn new(options: &RegisterOptions) -> Self {
        Self::build(options, None)
    }

    /// [`FunctionList::new`] for a registration whose releases check `public` (a public
    /// registration; `None` for the data owner).
    pub fn build(options: &RegisterOptions, public: Option<Arc<PublicRules>>) -> Self {
        let cache = Arc::new(ReleaseCache::new(options, public));
        cache.set_progress(options.progress.clone());
        let ledger = cache.ledger();
        let help = Arc::new(HelpFunction::default());
        let mut table_functions: Vec<Arc<dyn SqlTableFunction>> = RELEASE_VIEWS
            .iter()
            .map(|&view| {
                Arc::new(AnonymizeFunction::new(view, cache.clone())) as Arc<dyn SqlTableFunction>
            })
            .collect();
        table_functions.extend([
            Arc::new(ReportFunction::new(cache.clone())) as Arc<dyn SqlTableFunction>,
            Arc::new(AttackFunction::new(cache.clone())),
            Arc::new(UtilityFunction::new(cache.clone())),
            Arc::new(AssessFunction),
            Arc::new(ClassSizesFunction),
            Arc::new(SudaFunction),
            Arc::new(ProfileFunction),
            Arc::new(SafeHarborFunction),
            Arc::new(IndividualRiskFunction),
            Arc::new(UpaTruthfulFunction),
            Arc::new(PrivacyBudgetFunction::new(ledger)),
            Arc::new(PrivacyQuotaFunction::new(cache.clone())),
            Arc::new(IntervalHierarchyFunction),
            Arc::new(MaskHierarchyFunction),
            Arc::new(TopBottomHierarchyFunction),
            Arc::new(DateHierarchyFunction),
            Arc::new(NoiseIntervalFunction),
            Arc::new(SampleCountIntervalFunction),
            Arc::new(match options.access {
                Access::Owner => NpsDemoFunction::for_owner(),
                Access::Public => NpsDemoFunction::for_public(),
            }),
            Arc::new(NpsDiseaseHierarchyFunction),
            Arc::new(PublishFunction::new(cache.clone())),
            Arc::new(UnpublishFunction::new(cache.clone())),
            Arc::new(PublishedMetadataFunction::new(cache.clone())),
            help.clone(),
        ]);
        let (table_functions, withheld): (Vec<_>, Vec<_>) = table_functions
            .into_iter()
            .partition(|f| options.access == Access::Owner || !f.owner_only());
        let functions = Self {
            table_functions,
            scalar_functions: generalized_udfs().into_iter().chain(date_udfs()).collect(),
            withheld: withheld
                .iter()
                .map(|f| (f.name().to_string(), f.owner_only_reason()))
                .collect(),
        };
        help.describe(&functions.docs());
        functions
    }

    /// What help and docs show of every function: table functions first, in list order.
    pub fn docs(&self) -> Vec<FunctionDoc> {
        let tables = self.table_functions.iter().map(|f| table_doc(f.as_ref()));
        let scalars = self.scalar_functions.iter().map(scalar_doc);
        tables.chain(scalars).collect()
    }

    /// The SQL name of every function, in list order.
    pub fn names(&self) -> Vec<String> {
        let tables = self.table_functions.iter().map(|f| f.name().to_string());
        let scalars = self.scalar_functions.iter().map(|f| f.name().to_string());
        tables.chain(scalars).collect()
    }
}

/// Docs of every function (the data owner's registration, which has them all), from a
/// list built without a session.
pub fn function_docs() -> Vec<FunctionDoc> {
    FunctionList::new(&RegisterOptions::owner()).docs()
}

/// The functions section of `dfanon --help`: every function's syntax and the first
/// sentence of its description, table functions first.
pub fn cli_help_section() -> String {
    docs::cli_help(&function_docs())
}

/// `docs/FUNCTIONS.md`, generated from every function's docs.
pub fn functions_markdown() -> String {
    docs::markdown(&function_docs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_documented() {
        let functions = FunctionList::new(&RegisterOptions::owner());
        let mut names = functions.names();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a function name appears twice");
        for f in functions.docs() {
            assert!(!f.description.is_empty(), "{} has no description", f.name);
            assert!(
                f.syntax.starts_with(&format!("{}(", f.name)),
                "{}",
                f.syntax
            );
        }
        for udf in &functions.scalar_functions {
            assert!(
                udf.documentation().is_some(),
                "{} has no documentation",
                udf.name()
            );
        }
    }

    #[test]
    fn public_registration_withholds_the_owner_only_functions() {
        let owner = FunctionList::new(&RegisterOptions::owner());
        let public = FunctionList::new(&RegisterOptions::default());
        let owner_only: Vec<String> = owner
            .table_functions
            .iter()
            .filter(|f| f.owner_only())
            .map(|f| f.name().to_string())
            .collect();
        for name in [
            "anonymize_assess",
            "anonymize_class_sizes",
            "anonymize_diagnostics",
            "anonymize_information_loss",
            "anonymize_warnings",
            "anonymize_publish",
            "anonymize_unpublish",
        ] {
            assert!(owner_only.contains(&name.to_string()), "{name}");
        }
        let withheld: Vec<String> = public.withheld.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(withheld, owner_only);
        assert!(owner.withheld.is_empty());
        let public_names = public.names();
        for name in [
            "anonymize",
            "anonymize_metadata",
            "privacy_budget",
            "privacy_quota",
            "anonymize_help",
        ] {
            assert!(public_names.contains(&name.to_string()), "{name}");
        }
        for name in &owner_only {
            assert!(!public_names.contains(name), "{name}");
        }
        assert_eq!(public_names.len() + owner_only.len(), owner.names().len());
    }
}
