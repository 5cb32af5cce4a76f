//! A data owner's workbench: an owner session, the project, what its steps computed
//! (profile, hierarchy previews, risk, candidate trials, publications) and the projects
//! before each step, for undo. Every step runs SQL in the owner session and keeps it to
//! show on the page.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use datafusion::prelude::SessionContext;

use super::evidence::{self, Evidence, EvidenceJob};
use super::files::Folder;
use super::preview::{preview, LevelPreview};
use super::profile::{self, ColumnProfile};
use super::project::{
    ident, register_file, table_name, Candidate, ColumnRole, Hierarchy, HierarchyRecipe, Project,
    Publication, Source,
};
use super::results::{run, run_all, Rows};

/// The most steps undo goes back.
const MAX_UNDO: usize = 50;

/// The most candidates a project holds (each keeps its report in memory).
pub const MAX_CANDIDATES: usize = 20;

/// A candidate's trial: its figures, its report (the evidence, which follows the trial
/// step), its first rows.
#[derive(Debug, Clone, Default)]
pub struct Trial {
    /// Which trial of the workbench it is (a report that arrives after the trial was undone
    /// finds no trial of its number).
    pub id: u64,
    /// The figures by name: the release's own (`after:rows`, `after:min_class_size`, …)
    /// at once, then the report's (`k_marginal_score`, `after:attack:inference`, …).
    pub figures: HashMap<String, f64>,
    pub evidence: Evidence,
    pub rows: Rows,
    /// What in the trial release would break HIPAA Safe Harbor (`anonymize_safe_harbor`).
    pub safe_harbor: Rows,
}

/// What a publication showed: its first rows and its risk, read back from the published
/// table.
#[derive(Debug, Clone, Default)]
pub struct Published {
    pub name: String,
    pub rows: Rows,
    pub risk: Rows,
    /// Where its report was written.
    pub report: Option<PathBuf>,
}

/// A data owner's workbench.
pub struct Workbench {
    pub ctx: SessionContext,
    pub project: Project,
    history: Vec<Project>,
    pub profile: Option<Vec<ColumnProfile>>,
    pub previews: HashMap<String, Vec<LevelPreview>>,
    pub risk: Option<(Rows, Rows)>,
    pub trials: Vec<Result<Trial, String>>,
    /// The number of the next trial.
    next_trial: u64,
    /// Reports still to write, taken by the step that ran the trials ([`evidence::compute`]).
    jobs: Vec<EvidenceJob>,
    pub published: Vec<Published>,
    /// The tables this workbench registered from files (which it may register again).
    registered: HashSet<String>,
    /// The SQL the last step ran, and its outcome (an error, or what it did).
    pub last_sql: Vec<String>,
    pub outcome: Option<Result<String, String>>,
}

impl Workbench {
    pub fn new(ctx: SessionContext) -> Self {
        Self {
            ctx,
            project: Project::default(),
            history: Vec::new(),
            profile: None,
            previews: HashMap::new(),
            risk: None,
            trials: Vec::new(),
            next_trial: 0,
            jobs: Vec::new(),
            published: Vec::new(),
            registered: HashSet::new(),
            last_sql: Vec::new(),
            outcome: None,
        }
    }

    /// Whether a step can be undone.
    pub fn can_undo(&self) -> bool {
        !self.history.is_empty()
    }

    fn remember(&mut self) {
        self.history.push(self.project.clone());
        if self.history.len() > MAX_UNDO {
            self.history.remove(0);
        }
    }

    /// Records a refused step.
    pub fn refuse(&mut self, message: &str) {
        self.done(Vec::new(), Err(message.to_string()));
    }

    fn done(&mut self, sql: Vec<String>, outcome: Result<String, String>) {
        self.last_sql = sql;
        self.outcome = Some(outcome);
    }

    /// Chooses the source: an owner table, or a file of the studio's folder registered as a
    /// table named after it.
    pub async fn choose_source(
        &mut self,
        table: Option<&str>,
        file: Option<&str>,
        folder: Option<&Folder>,
    ) {
        let mut sql = Vec::new();
        let source = match (table, file) {
            (_, Some(name)) => {
                let Some(found) = folder.and_then(|f| f.file(name)) else {
                    return self.done(
                        sql,
                        Err(format!("'{name}' is not a file of the studio's folder")),
                    );
                };
                let stem = Path::new(&found.name)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let table = table_name(&[&stem]);
                let taken = self.ctx.table_exist(table.as_str()).unwrap_or(true);
                if taken && !self.registered.contains(&table) {
                    return self.done(
                        sql,
                        Err(format!(
                            "a table named '{table}' exists already: rename the file to register it"
                        )),
                    );
                }
                sql.push(format!("DROP TABLE IF EXISTS {}", ident(&table)));
                sql.push(register_file(
                    &table,
                    &found.path.to_string_lossy(),
                    found.csv,
                ));
                Source {
                    table,
                    file: Some(found.name),
                }
            }
            (Some(table), None) => Source {
                table: table.to_string(),
                file: None,
            },
            (None, None) => return self.done(sql, Err("choose a table or a file".into())),
        };
        if let Err(e) = run_all(&self.ctx, &sql).await {
            return self.done(sql, Err(e));
        }
        if source.file.is_some() {
            self.registered.insert(source.table.clone());
        }
        self.remember();
        self.project = Project {
            source: Some(source),
            ..Project::default()
        };
        self.clear_results();
        self.refresh_profile(&mut sql).await;
    }

    fn clear_results(&mut self) {
        self.profile = None;
        self.previews.clear();
        self.risk = None;
        self.trials.clear();
        self.jobs.clear();
    }

    /// The reports the last step left to write.
    pub fn take_evidence_jobs(&mut self) -> Vec<EvidenceJob> {
        std::mem::take(&mut self.jobs)
    }

    /// Whether trial `id` is still here, waiting for its report.
    pub fn awaits_evidence(&self, id: u64) -> bool {
        self.trials
            .iter()
            .flatten()
            .any(|t| t.id == id && t.evidence.is_pending())
    }

    /// Whether some trial's report is still being written.
    pub fn evidence_pending(&self) -> bool {
        self.trials
            .iter()
            .flatten()
            .any(|t| t.evidence.is_pending())
    }

    /// Stores trial `id`'s report (or why it failed) with its figures; nothing when the
    /// trial is gone.
    pub fn store_evidence(&mut self, id: u64, report: Result<String, String>) {
        let Some(trial) = self.trials.iter_mut().flatten().find(|t| t.id == id) else {
            return;
        };
        trial.evidence = match report {
            Ok(report) => {
                trial.figures.extend(evidence::figures(&report));
                Evidence::Ready(report)
            }
            Err(e) => Evidence::Failed(e),
        };
    }

    /// Profiles the source and proposes roles (kept when the columns are the same).
    async fn refresh_profile(&mut self, sql: &mut Vec<String>) {
        let Some(source) = self.project.source.clone() else {
            return;
        };
        let columns: Vec<String> = match self.ctx.table(source.table.as_str()).await {
            Ok(frame) => frame
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
            Err(e) => return self.done(sql.clone(), Err(e.to_string())),
        };
        sql.extend(profile::statements(&source.table, &columns));
        match profile::profile(&self.ctx, &source.table).await {
            Ok(found) => {
                let same = self.project.roles.len() == found.len()
                    && self
                        .project
                        .roles
                        .iter()
                        .zip(&found)
                        .all(|((c, _), p)| *c == p.name);
                if !same {
                    self.project.roles = found
                        .iter()
                        .map(|p| (p.name.clone(), p.suggestion))
                        .collect();
                }
                self.profile = Some(found);
                let message = format!("profiled {} ({} columns)", source.table, columns.len());
                self.done(sql.clone(), Ok(message));
            }
            Err(e) => self.done(sql.clone(), Err(e)),
        }
    }

    /// Sets the columns' roles (columns not named keep theirs).
    pub fn set_roles(&mut self, roles: &[(String, ColumnRole)]) {
        self.remember();
        for (column, role) in roles {
            if let Some(entry) = self.project.roles.iter_mut().find(|(c, _)| c == column) {
                entry.1 = *role;
            }
        }
        let quasi: Vec<String> = self
            .project
            .columns(ColumnRole::Quasi)
            .iter()
            .map(|c| c.to_string())
            .collect();
        self.project
            .hierarchies
            .retain(|h| quasi.contains(&h.column));
        self.risk = None;
        self.done(Vec::new(), Ok("roles saved".into()));
    }

    /// Builds (or rebuilds) the hierarchy of quasi-identifier `column` and previews it.
    pub async fn build_hierarchy(
        &mut self,
        column: &str,
        recipe: HierarchyRecipe,
        folder: Option<&Folder>,
    ) {
        let Some(source) = self.project.source.clone() else {
            return self.done(Vec::new(), Err("choose a source first".into()));
        };
        if !self.project.columns(ColumnRole::Quasi).contains(&column) {
            return self.done(
                Vec::new(),
                Err(format!("'{column}' is not a quasi-identifier")),
            );
        }
        let hierarchy = Hierarchy {
            column: column.to_string(),
            table: table_name(&["studio", &source.table, column]),
            recipe,
        };
        let Some(mut sql) = hierarchy.statements(&source.table, |f| folder?.locate(f)) else {
            return self.done(
                Vec::new(),
                Err("that file is not in the studio's folder".into()),
            );
        };
        if let Err(e) = run_all(&self.ctx, &sql).await {
            return self.done(sql, Err(e));
        }
        match preview(&self.ctx, &source.table, &hierarchy, &mut sql).await {
            Ok(levels) => {
                self.remember();
                self.project.hierarchies.retain(|h| h.column != column);
                self.project.hierarchies.push(hierarchy);
                self.previews.insert(column.to_string(), levels);
                self.risk = None;
                self.done(sql, Ok(format!("built the hierarchy of {column}")));
            }
            Err(e) => self.done(sql, Err(e)),
        }
    }

    /// Assesses the source's risk under the quasi-identifiers.
    pub async fn assess(&mut self) {
        let (Some(assess), Some(sizes)) =
            (self.project.assess_sql(), self.project.class_sizes_sql())
        else {
            return self.done(Vec::new(), Err("choose a source first".into()));
        };
        let sql = vec![assess.clone(), sizes.clone()];
        let result = async {
            Ok::<_, String>((
                run(&self.ctx, &assess).await?,
                run(&self.ctx, &sizes).await?,
            ))
        }
        .await;
        match result {
            Ok(found) => {
                self.risk = Some(found);
                self.done(sql, Ok("assessed the risk before release".into()));
            }
            Err(e) => self.done(sql, Err(e)),
        }
    }

    /// Adds a candidate and runs its trial (a seeded draw, charging nothing) with its
    /// report written in `scratch`.
    pub async fn add_candidate(&mut self, candidate: Candidate, scratch: &Path) {
        let index = self.project.candidates.len();
        if index >= MAX_CANDIDATES {
            return self.refuse(&format!(
                "a project compares at most {MAX_CANDIDATES} candidates: undo or re-open a recipe with fewer"
            ));
        }
        let (sql, trial) = self.trial(&candidate, scratch).await;
        match trial {
            Ok(trial) => {
                self.remember();
                self.project.candidates.push(candidate);
                self.trials.push(Ok(trial));
                self.done(sql, Ok(format!("ran candidate {} as a trial", index + 1)));
            }
            Err(e) => self.done(sql, Err(e)),
        }
    }

    /// A candidate's trial: its seeded release's first rows, its Safe Harbor findings and
    /// its own risk figures at once; its report queued for [`evidence::compute`].
    async fn trial(
        &mut self,
        candidate: &Candidate,
        scratch: &Path,
    ) -> (Vec<String>, Result<Trial, String>) {
        let id = self.next_trial;
        self.next_trial += 1;
        let path = scratch.join(format!("candidate-{}-{id}.html", std::process::id()));
        let path_text = path.to_string_lossy().into_owned();
        let (Some(report_sql), Some(rows_sql), Some(check)) = (
            self.project.trial_sql(candidate, &path_text),
            self.project.trial_rows_sql(candidate, 10),
            self.project.trial_view_sql(candidate),
        ) else {
            return (Vec::new(), Err("choose a source first".into()));
        };
        let mut sql = vec![rows_sql.clone()];
        sql.extend(check.iter().cloned());
        sql.push(report_sql.clone());
        let result = async {
            let rows = run(&self.ctx, &rows_sql).await?;
            let (safe_harbor, risk) = self.read_view(&check).await?;
            let figures = (0..risk.len())
                .filter_map(|r| {
                    let value = risk.cell(r, 1).parse::<f64>().ok()?;
                    Some((format!("after:{}", risk.cell(r, 0)), value))
                })
                .collect();
            Ok(Trial {
                id,
                figures,
                evidence: Evidence::Pending,
                rows,
                safe_harbor,
            })
        }
        .await;
        if result.is_ok() {
            self.jobs.push(EvidenceJob {
                trial: id,
                sql: report_sql,
                path,
            });
        }
        (sql, result)
    }

    /// The Safe Harbor findings and the risk figures of a trial, through a view dropped
    /// whatever the outcome.
    async fn read_view(
        &self,
        [view, check, risk, drop]: &[String; 4],
    ) -> Result<(Rows, Rows), String> {
        run(&self.ctx, view).await?;
        // Two passes over the release, side by side (each reads one partition).
        let (check, risk) = tokio::join!(run(&self.ctx, check), run(&self.ctx, risk));
        let found = check.and_then(|check| Ok((check, risk?)));
        run(&self.ctx, drop).await?;
        found
    }

    /// Publishes candidate `index` as `name` (unseeded, charged once), reads back its
    /// first rows and risk, and writes its report to `report` (the published draw: nothing
    /// is drawn or charged again).
    pub async fn publish(&mut self, index: usize, name: &str, report: &Path) {
        let Some(candidate) = self.project.candidates.get(index).cloned() else {
            return self.done(Vec::new(), Err("no such candidate".into()));
        };
        let Some(publish) = self.project.publish_sql(&candidate, name) else {
            return self.done(Vec::new(), Err("choose a source first".into()));
        };
        let rows_sql = format!("SELECT * FROM {} LIMIT 10", ident(name));
        let qi = self.project.qi_argument();
        let risk_sql = format!(
            "SELECT key, value FROM anonymize_assess({}, qi => {qi})",
            super::project::literal(name)
        );
        let report_path = report.to_string_lossy().into_owned();
        let Some(report_sql) = self.project.published_report_sql(&candidate, &report_path) else {
            return self.done(Vec::new(), Err("choose a source first".into()));
        };
        let sql = vec![
            publish.clone(),
            rows_sql.clone(),
            risk_sql.clone(),
            report_sql.clone(),
        ];
        if let Err(e) = run(&self.ctx, &publish).await {
            return self.done(sql, Err(e));
        }
        let rows = run(&self.ctx, &rows_sql).await.unwrap_or_default();
        let risk = run(&self.ctx, &risk_sql).await.unwrap_or_default();
        let written = run(&self.ctx, &report_sql).await;
        self.project.published.push(Publication {
            name: name.to_string(),
            candidate: index,
        });
        self.published.push(Published {
            name: name.to_string(),
            rows,
            risk,
            report: written.is_ok().then(|| report.to_path_buf()),
        });
        let outcome = match written {
            Ok(_) => Ok(format!("published {name}")),
            // The release is published all the same; say that its report is missing and why.
            Err(e) => Err(format!(
                "published {name}, but its report was not written: {e}"
            )),
        };
        self.done(sql, outcome);
    }

    /// Goes back to the project before the last step (publications stay: they cannot be
    /// taken back here).
    pub async fn undo(&mut self, scratch: &Path, folder: Option<&Folder>) {
        let Some(mut previous) = self.history.pop() else {
            return self.done(Vec::new(), Err("nothing to undo".into()));
        };
        if let Some(published) = self
            .project
            .published
            .iter()
            .find(|p| p.candidate >= previous.candidates.len())
        {
            let message = format!(
                "candidate {} is published as {}: the steps before it cannot be undone",
                published.candidate + 1,
                published.name
            );
            self.history.push(previous);
            return self.done(Vec::new(), Err(message));
        }
        previous.published = self.project.published.clone();
        self.restore(previous, scratch, folder).await;
        if let Some(Ok(_)) = self.outcome {
            self.outcome = Some(Ok("undid the last step".into()));
        }
    }

    /// Opens a recipe's project: registers its source and hierarchies again and re-runs
    /// its candidates' trials.
    pub async fn open(&mut self, project: Project, scratch: &Path, folder: Option<&Folder>) {
        self.remember();
        self.restore(project, scratch, folder).await;
    }

    async fn restore(&mut self, project: Project, scratch: &Path, folder: Option<&Folder>) {
        self.clear_results();
        let Some(source) = project.source.clone() else {
            self.project = Project {
                published: project.published.clone(),
                ..Project::default()
            };
            return self.done(Vec::new(), Ok("the project is empty".into()));
        };
        // The source as the Source step registers it (a file's table is named after the
        // file, never after what the recipe says).
        let table = source.file.is_none().then_some(source.table.as_str());
        self.choose_source(table, source.file.as_deref(), folder)
            .await;
        if let Some(Err(_)) = self.outcome {
            return;
        }
        self.history.pop();
        let sql = self.last_sql.clone();
        // Only the source's own columns take a role, and a recipe holds no more
        // hierarchies than columns nor more candidates than a project may.
        if project.hierarchies.len() > self.project.roles.len()
            || project.candidates.len() > MAX_CANDIDATES
        {
            return self.refuse(&format!(
                "the recipe has more hierarchies than the source has columns, or more than {MAX_CANDIDATES} candidates"
            ));
        }
        let roles: Vec<(String, ColumnRole)> = self
            .project
            .roles
            .iter()
            .map(|(column, suggested)| {
                let confirmed = project.roles.iter().find(|(c, _)| c == column);
                (column.clone(), confirmed.map_or(*suggested, |(_, r)| *r))
            })
            .collect();
        self.project.roles = roles;
        self.project.published = project.published.clone();
        for hierarchy in project.hierarchies {
            self.build_hierarchy(&hierarchy.column, hierarchy.recipe, folder)
                .await;
            if let Some(Err(_)) = self.outcome {
                return;
            }
            self.history.pop();
        }
        for candidate in project.candidates {
            self.add_candidate(candidate, scratch).await;
            if let Some(Err(_)) = self.outcome {
                return;
            }
            self.history.pop();
        }
        self.done(sql, Ok("opened the project".into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    #[test]
    fn files_never_replace_a_table_the_studio_did_not_register() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("nps.csv"), "a,b\nx,1\n").expect("written");
        std::fs::write(dir.path().join("adult.csv"), "sex,age\nMale,39\n").expect("written");
        let folder = Folder::new(dir.path()).expect("folder");
        block_on(async {
            let ctx = SessionContext::new();
            datafusion_anonymize::register_with(
                &ctx,
                datafusion_anonymize::RegisterOptions::owner(),
            )
            .expect("registered");
            run(&ctx, "CREATE TABLE nps AS VALUES (1, 2, 3)")
                .await
                .expect("made");
            let mut bench = Workbench::new(ctx.clone());
            bench
                .choose_source(None, Some("nps.csv"), Some(&folder))
                .await;
            assert_eq!(
                bench.outcome,
                Some(Err(
                    "a table named 'nps' exists already: rename the file to register it".into()
                ))
            );
            // A file the studio registered may be chosen again.
            for _ in 0..2 {
                bench
                    .choose_source(None, Some("adult.csv"), Some(&folder))
                    .await;
                assert_eq!(bench.outcome, Some(Ok("profiled adult (2 columns)".into())));
            }
            // A recipe naming another table for a file registers the file under its own name.
            let mut crafted = bench.project.clone();
            if let Some(source) = crafted.source.as_mut() {
                source.table = "nps".into();
            }
            let scratch = tempfile::tempdir().expect("scratch");
            bench.open(crafted, scratch.path(), Some(&folder)).await;
            assert_eq!(bench.outcome, Some(Ok("opened the project".into())));
            assert_eq!(
                bench.project.source.as_ref().map(|s| s.table.as_str()),
                Some("adult")
            );
            // A pasted recipe cannot make the studio run unbounded work.
            let mut many = bench.project.clone();
            many.candidates = vec![
                crate::studio::project::Candidate {
                    method: "kanon".into(),
                    arguments: Vec::new(),
                };
                MAX_CANDIDATES + 1
            ];
            bench.open(many, scratch.path(), Some(&folder)).await;
            assert!(
                matches!(&bench.outcome, Some(Err(e)) if e.contains("more than 20 candidates")),
                "{:?}",
                bench.outcome
            );
            assert!(bench.project.candidates.is_empty());
            let nps = run(&ctx, "SELECT COUNT(*) FROM nps")
                .await
                .expect("nps is still there");
            assert_eq!(nps.cell(0, 0), "1");
        });
    }
}

#[cfg(test)]
mod evidence_tests {
    use std::sync::Arc;

    use super::*;
    use crate::studio::evidence;
    use crate::studio::project::Candidate;

    #[test]
    fn a_trial_shows_its_own_figures_and_its_report_follows() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut csv = String::from("sex,age\n");
        for i in 0..40 {
            csv.push_str(&format!("{},{}\n", ["M", "F"][i % 2], 30 + i % 4));
        }
        std::fs::write(dir.path().join("people.csv"), csv).expect("written");
        let folder = Folder::new(dir.path()).expect("folder");
        let scratch = tempfile::tempdir().expect("scratch");
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime")
            .block_on(async {
                let ctx = SessionContext::new();
                datafusion_anonymize::register_with(
                    &ctx,
                    datafusion_anonymize::RegisterOptions::owner(),
                )
                .expect("registered");
                for made in [
                    "CREATE TABLE people_hierarchy_sex AS VALUES ('M', '*'), ('F', '*')",
                    "CREATE TABLE people_hierarchy_age AS VALUES (30, '30-31', '*'), \
                     (31, '30-31', '*'), (32, '32-33', '*'), (33, '32-33', '*')",
                ] {
                    run(&ctx, made).await.expect("a hierarchy");
                }
                let mut bench = Workbench::new(ctx.clone());
                bench
                    .choose_source(None, Some("people.csv"), Some(&folder))
                    .await;
                for role in bench.project.roles.iter_mut() {
                    role.1 = ColumnRole::Quasi;
                }
                let kanon = Candidate {
                    method: "kanon".into(),
                    arguments: vec![("k".into(), "5".into())],
                };
                bench.add_candidate(kanon.clone(), scratch.path()).await;
                assert_eq!(bench.outcome, Some(Ok("ran candidate 1 as a trial".into())));
                // The release's own figures at once, the report still to come.
                let first = bench.trials[0].as_ref().expect("a trial").clone();
                assert_eq!(first.figures.get("after:rows"), Some(&40.0));
                assert_eq!(first.figures.get("after:min_class_size"), Some(&10.0));
                assert!(!first.figures.contains_key("k_marginal_score"));
                assert!(bench.evidence_pending() && bench.awaits_evidence(first.id));
                // A second candidate, then undone: undo runs the project's trials again, so
                // neither earlier report is waited for, only the new trial's.
                bench.add_candidate(kanon, scratch.path()).await;
                let mut jobs = bench.take_evidence_jobs();
                assert_eq!(jobs.len(), 2);
                bench.undo(scratch.path(), Some(&folder)).await;
                assert_eq!(bench.trials.len(), 1);
                assert!(!bench.awaits_evidence(first.id));
                jobs.extend(bench.take_evidence_jobs());
                assert_eq!(jobs.len(), 3);
                let work = Arc::new(tokio::sync::Mutex::new(bench));
                evidence::compute(ctx, jobs, work.clone(), Arc::default()).await;
                let bench = work.lock().await;
                assert!(!bench.evidence_pending());
                let trial = bench.trials[0].as_ref().expect("a trial");
                assert!(
                    matches!(&trial.evidence, Evidence::Ready(page) if page.contains("<html")),
                    "{:?}",
                    trial.evidence
                );
                assert_eq!(trial.figures.get("after:rows"), Some(&40.0));
                let score = trial.figures.get("k_marginal_score").copied();
                assert!(
                    score.is_some_and(|s| (0.0..=1000.0).contains(&s)),
                    "{score:?}"
                );
                // No report is left behind in the scratch folder.
                let left = std::fs::read_dir(scratch.path()).expect("scratch").count();
                assert_eq!(left, 0);
            });
    }
}
