//! The report's figures, computed with the code of the SQL functions that give them:
//! `anonymize_assess` and `anonymize_class_sizes` on the source and on the release (one
//! grouped pass over each gives both, and the value counts), and the distributions of
//! every released column read onto common bins ([`super::bins`]).

use datafusion::common::Result;
use datafusion::execution::SessionState;

use super::bins::{k_marginal_score, Binner, Marginals};
use super::{ReportOptions, Subject};
use crate::assess::{Entry, Population};
use crate::attack::{attack_release, AttackPlan, Outcome, Truth};
use crate::utility::reading::{read_columns, Reading};
use crate::utility::{figures_of, Figure, UtilityPlan};

/// Class sizes: `(size, classes, records)` rows of `anonymize_class_sizes`.
pub type ClassSizes = Vec<(u64, u64, u64)>;

/// Everything the page shows beyond the release's own output.
#[derive(Debug)]
pub struct Figures {
    /// `anonymize_assess` of the source.
    pub before: Vec<Entry>,
    /// `anonymize_assess` of the release.
    pub after: Vec<Entry>,
    /// `anonymize_class_sizes` of the source.
    pub sizes_before: ClassSizes,
    /// `anonymize_class_sizes` of the release.
    pub sizes_after: ClassSizes,
    /// The bins of every released column (quasi-identifiers, then sensitive columns).
    pub binners: Vec<Binner>,
    /// The source's counts on those bins.
    pub input: Marginals,
    /// The release's counts on those bins.
    pub release: Marginals,
    /// The 2-way k-marginal score and the score of each pair of columns.
    pub score: Option<(f64, Vec<f64>)>,
    /// anonymeter's attacks with their defaults: on the source as if it were released
    /// (before), and on the release (after), in the same order.
    pub attacks: Vec<(Outcome, Outcome)>,
    /// `anonymize_utility`'s figures with its defaults (every metric, seed 0).
    pub utility: Vec<Figure>,
}

/// Computes the figures.
pub async fn gather(
    subject: &Subject<'_>,
    options: &ReportOptions,
    state: &SessionState,
) -> Result<Figures> {
    let request = subject.request;
    let sensitive = request.released_values();
    let population = match options.population_size {
        Some(rows) => Population::Rows(rows),
        None => Population::None,
    };
    let reading = read_columns(
        request,
        &subject.release,
        &sensitive,
        population,
        options.risk_threshold,
        state,
    )
    .await?;
    let utility = figures_of(
        &reading,
        &UtilityPlan {
            metrics: "all".into(),
            seed: 0,
        },
    )?;
    let Reading {
        before,
        after,
        binners,
        input,
        release,
        ..
    } = reading;
    let score = k_marginal_score(&input, &release);
    let qi = &request.qi;
    // The three attacks, where the columns allow: linkability and inference need two.
    let mut plan = AttackPlan::defaults();
    plan.settings.attacks = options.attacks;
    if qi.len() + sensitive.len() < 2 {
        plan.attacks = "singling_out".into();
    }
    let (attacks_before, attacks_after) = if options.attacks == 0 {
        (Default::default(), Vec::new())
    } else {
        (
            attacks_on_the_source(subject, &plan, state).await?,
            attack_release(
                request,
                subject.release.clone(),
                false,
                None,
                &Truth::of(subject.output),
                &plan,
                state,
            )
            .await?,
        )
    };
    Ok(Figures {
        before: before.entries,
        after: after.entries,
        sizes_before: before.sizes,
        sizes_after: after.sizes,
        binners,
        input,
        release,
        score,
        attacks: attacks_before.iter().cloned().zip(attacks_after).collect(),
        utility,
    })
}

/// The attacks on the source as if it were released: the same for every release of the
/// source with the same columns and hierarchies, so kept while those tables are unchanged
/// ([`crate::releases::SourceMemo`]). A source read with shifted dates is attacked anew.
async fn attacks_on_the_source(
    subject: &Subject<'_>,
    plan: &AttackPlan,
    state: &SessionState,
) -> Result<std::sync::Arc<Vec<Outcome>>> {
    let request = subject.request;
    // Record linkage where the release has it: the source's own rows are its records.
    let truth = if Truth::of(subject.output).is_known() {
        Truth::Itself
    } else {
        Truth::Unknown
    };
    let attack = || async {
        attack_release(
            request,
            request.source.clone(),
            true,
            None,
            &truth,
            plan,
            state,
        )
        .await
    };
    if request.date_shift.is_some() {
        return Ok(std::sync::Arc::new(attack().await?));
    }
    let mut tables = vec![&request.source];
    tables.extend(request.qi.iter().filter_map(|q| q.hierarchy.as_ref()));
    let qi: Vec<(&str, &str)> = request
        .qi
        .iter()
        .map(|q| (q.column.as_str(), q.hierarchy_name.as_str()))
        .collect();
    let key = format!(
        "{}|qi {qi:?}|released {:?}|{plan:?}|linkage {}",
        request.source_table,
        request.released_values(),
        truth.is_known()
    );
    subject
        .source_attacks
        .get_or_compute(&tables, &key, state, attack)
        .await
}
