//! The one list of functions this crate registers, and everything derived from it:
//! [`crate::register_with`] registers [`FunctionCatalog`], `anonymize_help()` lists it,
//! `dfanon --help` shows [`cli_help_section`] and `docs/FUNCTIONS.md` is
//! [`functions_markdown`]. A function added here appears in all of them.
//!
//! Help and docs read a table function through [`SqlTableFunction::name`], `about` and
//! `params` (each parameter's `name`, `doc` and `default`), and a scalar function through
//! DataFusion's [`ScalarUDF::documentation`].

use std::sync::Arc;

use datafusion::logical_expr::ScalarUDF;

use super::anonymize::{AnonymizeFunction, ReleaseCache, ReleaseView};
use super::assess::{AssessFunction, ClassSizesFunction};
use super::budget_fn::PrivacyBudgetFunction;
use super::demo_fns::NpsDemoFunction;
use super::generalized_udfs::generalized_udfs;
use super::help_fn::HelpFunction;
use super::hierarchy_fns::{IntervalHierarchyFunction, MaskHierarchyFunction};
use super::planner::SqlTableFunction;
use super::upa_truthful::UpaTruthfulFunction;
use crate::public::PublicRules;
use crate::{Access, RegisterOptions};

/// Every view of a release, one `anonymize*` table function each.
const RELEASE_VIEWS: [ReleaseView; 7] = [
    ReleaseView::Rows,
    ReleaseView::Metadata,
    ReleaseView::Catalog,
    ReleaseView::IntervalMeans,
    ReleaseView::Diagnostics,
    ReleaseView::InformationLoss,
    ReleaseView::Warnings,
];

/// The functions of this crate for one registration: every function for the data owner,
/// the public ones for public users ([`crate::Access`]).
#[derive(Debug)]
pub struct FunctionCatalog {
    /// Table functions, planned by [`super::planner::FunctionPlanner`].
    pub table_functions: Vec<Arc<dyn SqlTableFunction>>,
    /// Scalar functions, registered with `SessionContext::register_udf`.
    pub scalar_functions: Vec<ScalarUDF>,
    /// Names of the owner-only functions this registration leaves out.
    pub withheld: Vec<String>,
}

impl FunctionCatalog {
    /// Builds every function; the `anonymize*` functions share one release cache and
    /// privacy ledger, which `privacy_budget()` reads.
    pub fn new(options: &RegisterOptions) -> Self {
        Self::build(options, None)
    }

    /// [`FunctionCatalog::new`] for a registration whose releases check `public` (a public
    /// registration; `None` for the data owner).
    pub fn build(options: &RegisterOptions, public: Option<Arc<PublicRules>>) -> Self {
        let cache = Arc::new(ReleaseCache::new(options.max_release_rows, public));
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
            Arc::new(AssessFunction) as Arc<dyn SqlTableFunction>,
            Arc::new(ClassSizesFunction),
            Arc::new(UpaTruthfulFunction),
            Arc::new(PrivacyBudgetFunction::new(ledger)),
            Arc::new(IntervalHierarchyFunction),
            Arc::new(MaskHierarchyFunction),
            Arc::new(NpsDemoFunction::default()),
            help.clone(),
        ]);
        let (table_functions, withheld): (Vec<_>, Vec<_>) = table_functions
            .into_iter()
            .partition(|f| options.access == Access::Owner || !f.owner_only());
        let catalog = Self {
            table_functions,
            scalar_functions: generalized_udfs(),
            withheld: withheld.iter().map(|f| f.name().to_string()).collect(),
        };
        help.describe(&catalog.docs());
        catalog
    }

    /// What help and docs show of every function: table functions first, in catalog order.
    pub fn docs(&self) -> Vec<FunctionDoc> {
        let tables = self.table_functions.iter().map(|f| table_doc(f.as_ref()));
        let scalars = self.scalar_functions.iter().map(scalar_doc);
        tables.chain(scalars).collect()
    }

    /// The SQL name of every function, in catalog order.
    pub fn names(&self) -> Vec<String> {
        let tables = self.table_functions.iter().map(|f| f.name().to_string());
        let scalars = self.scalar_functions.iter().map(|f| f.name().to_string());
        tables.chain(scalars).collect()
    }
}

/// How a function is called in SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionKind {
    /// A table function: `SELECT * FROM f(...)`.
    Table,
    /// A scalar function: `SELECT f(...)`.
    Scalar,
}

impl FunctionKind {
    /// `"table"` or `"scalar"`.
    pub fn label(self) -> &'static str {
        match self {
            FunctionKind::Table => "table",
            FunctionKind::Scalar => "scalar",
        }
    }
}

/// One parameter of a table function or argument of a scalar function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamDoc {
    /// Parameter name.
    pub name: String,
    /// Default shown in help (`None` = required or method-dependent; scalar arguments
    /// have none).
    pub default: Option<String>,
    /// One-line description.
    pub doc: String,
}

/// What help and docs show of one function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionDoc {
    /// SQL name.
    pub name: String,
    /// Table or scalar.
    pub kind: FunctionKind,
    /// Call syntax, e.g. `mask_hierarchy(source, column, keep)`.
    pub syntax: String,
    /// Full description.
    pub description: String,
    /// Parameters (table function) or arguments (scalar function), in order.
    pub params: Vec<ParamDoc>,
    /// SQL example (Markdown), when the function documents one.
    pub example: Option<String>,
    /// Registered only for the data owner ([`Access::Owner`]).
    pub owner_only: bool,
}

impl FunctionDoc {
    /// The first sentence of the description.
    pub fn summary(&self) -> &str {
        first_sentence(&self.description)
    }
}

/// Parameters shown in a table function's syntax before `...`.
const SYNTAX_PARAMS: usize = 3;

fn table_doc(f: &dyn SqlTableFunction) -> FunctionDoc {
    let params: Vec<ParamDoc> = f
        .params()
        .iter()
        .map(|p| ParamDoc {
            name: p.name.to_string(),
            default: p.default.describe(),
            doc: p.doc.to_string(),
        })
        .collect();
    let mut shown: Vec<&str> = params
        .iter()
        .take(SYNTAX_PARAMS)
        .map(|p| p.name.as_str())
        .collect();
    if params.len() > SYNTAX_PARAMS {
        shown.push("...");
    }
    FunctionDoc {
        name: f.name().to_string(),
        kind: FunctionKind::Table,
        syntax: format!("{}({})", f.name(), shown.join(", ")),
        description: f.about().to_string(),
        params,
        example: None,
        owner_only: f.owner_only(),
    }
}

fn scalar_doc(f: &ScalarUDF) -> FunctionDoc {
    let name = f.name().to_string();
    let Some(doc) = f.documentation() else {
        return FunctionDoc {
            syntax: format!("{name}(...)"),
            name,
            kind: FunctionKind::Scalar,
            description: String::new(),
            params: Vec::new(),
            example: None,
            owner_only: false,
        };
    };
    FunctionDoc {
        name,
        kind: FunctionKind::Scalar,
        syntax: doc.syntax_example.clone(),
        description: doc.description.clone(),
        params: doc
            .arguments
            .iter()
            .flatten()
            .map(|(name, doc)| ParamDoc {
                name: name.clone(),
                default: None,
                doc: doc.clone(),
            })
            .collect(),
        example: doc.sql_example.clone(),
        owner_only: false,
    }
}

/// Text up to the first `. ` that is followed by a capital letter (so `e.g. delta` does
/// not end a sentence), with its full stop.
fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices(". ") {
        if bytes.get(i + 2).is_some_and(u8::is_ascii_uppercase) {
            return &text[..=i];
        }
    }
    text
}

/// Docs of every function (the data owner's registration, which has them all), from a
/// catalog built without a session.
pub fn function_docs() -> Vec<FunctionDoc> {
    FunctionCatalog::new(&RegisterOptions::owner()).docs()
}

/// Width `dfanon --help` wraps descriptions at.
const HELP_WIDTH: usize = 100;

/// The functions section of `dfanon --help`: every function's syntax and the first
/// sentence of its description, table functions first.
pub fn cli_help_section() -> String {
    let docs = function_docs();
    let mut out =
        String::from("Functions (in full: docs/FUNCTIONS.md, or SELECT * FROM anonymize_help()):");
    for kind in [FunctionKind::Table, FunctionKind::Scalar] {
        out.push_str(&format!("\n  {} functions:", capitalized(kind.label())));
        for f in docs.iter().filter(|f| f.kind == kind) {
            out.push_str(&format!("\n    {}", f.syntax));
            let summary = match f.owner_only {
                true => format!("(Owner only.) {}", f.summary()),
                false => f.summary().to_string(),
            };
            for line in wrap(&summary, HELP_WIDTH - 8) {
                out.push_str(&format!("\n        {line}"));
            }
        }
    }
    out
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// Greedy word wrap; a word longer than `width` gets a line of its own.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Text safe inside a Markdown table cell or paragraph: `|` and `<` escaped.
fn md(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;")
}

/// `docs/FUNCTIONS.md`: an index of every function, then one section per function with
/// its syntax, description and parameters (with defaults). Functions whose parameters are
/// the same as an earlier one's refer to it instead of repeating the table.
pub fn functions_markdown() -> String {
    let docs = function_docs();
    let mut out = String::from(
        "# Functions\n\n\
         <!-- Generated by functions_markdown() (src/sql/catalog.rs); do not edit by hand. -->\n\n\
         Every SQL function that `datafusion_anonymize::register` adds. This file is generated from \
         the list of functions in `src/sql/catalog.rs`; regenerate it with \
         `UPDATE_DOCS=1 cargo test --release --test functions_doc`. In SQL, \
         `SELECT * FROM anonymize_help()` lists the functions of the session it runs in.\n\n\
         Functions marked *owner* show exact figures of the raw data. They exist only when the \
         functions are registered for the data owner (`dfanon`, or \
         `register_with(ctx, RegisterOptions::owner())`); `register(ctx)` registers for public \
         users, without them, and with the budget settings fixed.\n\n\
         | function | kind | access | description |\n|---|---|---|---|\n",
    );
    for f in &docs {
        out.push_str(&format!(
            "| [`{}`](#{}) | {} | {} | {} |\n",
            f.name,
            f.name,
            f.kind.label(),
            if f.owner_only { "owner" } else { "public" },
            md(f.summary())
        ));
    }
    for kind in [FunctionKind::Table, FunctionKind::Scalar] {
        out.push_str(&format!("\n## {} functions\n", capitalized(kind.label())));
        for (i, f) in docs.iter().enumerate().filter(|(_, f)| f.kind == kind) {
            let access = match f.owner_only {
                true => "**Owner only** (not registered for public users). ",
                false => "",
            };
            out.push_str(&format!(
                "\n### `{}`\n\n```sql\n{}\n```\n\n{access}{}\n\n",
                f.name,
                f.syntax,
                md(&f.description)
            ));
            let same_as = docs[..i]
                .iter()
                .find(|g| g.kind == kind && !f.params.is_empty() && g.params == f.params);
            let noun = match kind {
                FunctionKind::Table => "Parameters",
                FunctionKind::Scalar => "Arguments",
            };
            if let Some(g) = same_as {
                out.push_str(&format!(
                    "{noun}: the same as [`{}`](#{}).\n",
                    g.name, g.name
                ));
            } else if f.params.is_empty() {
                out.push_str(&format!("No {}.\n", noun.to_lowercase()));
            } else {
                out.push_str(&params_table(f));
            }
            if let Some(example) = &f.example {
                out.push_str(&format!("\nExample:\n\n{}\n", example.trim()));
            }
        }
    }
    out
}

/// A function's parameters as a Markdown table (scalar arguments have no defaults).
fn params_table(f: &FunctionDoc) -> String {
    let mut out = match f.kind {
        FunctionKind::Table => "| parameter | default | description |\n|---|---|---|\n",
        FunctionKind::Scalar => "| argument | description |\n|---|---|\n",
    }
    .to_string();
    for p in &f.params {
        let default = match (f.kind, &p.default) {
            (FunctionKind::Scalar, _) => String::new(),
            (FunctionKind::Table, Some(d)) => format!(" {} |", md(d)),
            (FunctionKind::Table, None) => " — |".to_string(),
        };
        out.push_str(&format!("| `{}` |{default} {} |\n", p.name, md(&p.doc)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_documented() {
        let catalog = FunctionCatalog::new(&RegisterOptions::owner());
        let mut names = catalog.names();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a function name appears twice");
        for f in catalog.docs() {
            assert!(!f.description.is_empty(), "{} has no description", f.name);
            assert!(
                f.syntax.starts_with(&format!("{}(", f.name)),
                "{}",
                f.syntax
            );
        }
        for udf in &catalog.scalar_functions {
            assert!(
                udf.documentation().is_some(),
                "{} has no documentation",
                udf.name()
            );
        }
    }

    #[test]
    fn public_registration_withholds_the_owner_only_functions() {
        let owner = FunctionCatalog::new(&RegisterOptions::owner());
        let public = FunctionCatalog::new(&RegisterOptions::default());
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
        ] {
            assert!(owner_only.contains(&name.to_string()), "{name}");
        }
        assert_eq!(public.withheld, owner_only);
        assert!(owner.withheld.is_empty());
        let public_names = public.names();
        for name in [
            "anonymize",
            "anonymize_metadata",
            "privacy_budget",
            "anonymize_help",
        ] {
            assert!(public_names.contains(&name.to_string()), "{name}");
        }
        for name in &owner_only {
            assert!(!public_names.contains(name), "{name}");
        }
        assert_eq!(public_names.len() + owner_only.len(), owner.names().len());
    }

    #[test]
    fn first_sentence_skips_abbreviations() {
        assert_eq!(first_sentence("A b. C d."), "A b.");
        assert_eq!(first_sentence("A, e.g. delta. Never"), "A, e.g. delta.");
        assert_eq!(first_sentence("No stop"), "No stop");
    }

    #[test]
    fn wrap_keeps_words_within_width() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("toolongword x", 4), vec!["toolongword", "x"]);
        assert!(wrap("", 4).is_empty());
    }
}
