//! A data owner's workbench: an owner session, the project, what its steps computed
//! (profile, hierarchy previews, risk, candidate trials, publications) and the projects
//! before each step, for undo. Every step runs SQL in the owner session and keeps it to
//! show on the page.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use datafusion::prelude::SessionContext;

use super::files::Folder;
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

/// The labels shown per level in a hierarchy's preview.
const PREVIEW_LABELS: usize = 12;

/// One level of a hierarchy's preview.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelPreview {
    /// The level's column in the hierarchy table.
    pub level: String,
    /// How many labels the source's rows fall into at this level.
    pub labels: usize,
    /// The most frequent labels with their rows.
    pub top: Vec<(String, u64)>,
}

/// A candidate's trial: its report's figures, the report, its first rows.
#[derive(Debug, Clone, Default)]
pub struct Trial {
    /// The report's figures by name (`after:rows`, `k_marginal_score`, …).
    pub figures: HashMap<String, f64>,
    pub report: String,
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
        let (sql, trial) = self.trial(&candidate, index, scratch).await;
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

    async fn trial(
        &self,
        candidate: &Candidate,
        index: usize,
        scratch: &Path,
    ) -> (Vec<String>, Result<Trial, String>) {
        let path = scratch.join(format!("candidate-{}-{index}.html", std::process::id()));
        let path_text = path.to_string_lossy().into_owned();
        let (Some(report_sql), Some(rows_sql)) = (
            self.project.trial_sql(candidate, &path_text),
            self.project.trial_rows_sql(candidate, 10),
        ) else {
            return (Vec::new(), Err("choose a source first".into()));
        };
        let Some(check) = self.project.trial_safe_harbor_sql(candidate) else {
            return (Vec::new(), Err("choose a source first".into()));
        };
        let mut sql = vec![report_sql.clone(), rows_sql.clone()];
        sql.extend(check.iter().cloned());
        let result = async {
            run(&self.ctx, &report_sql).await?;
            let report = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            let _ = std::fs::remove_file(&path);
            let rows = run(&self.ctx, &rows_sql).await?;
            let safe_harbor = self.safe_harbor(&check).await?;
            Ok(Trial {
                figures: figures(&report),
                report,
                rows,
                safe_harbor,
            })
        }
        .await;
        (sql, result)
    }

    /// The Safe Harbor findings of a trial, through a view dropped whatever the outcome.
    async fn safe_harbor(&self, [view, check, drop]: &[String; 3]) -> Result<Rows, String> {
        run(&self.ctx, view).await?;
        let found = run(&self.ctx, check).await;
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

/// The preview of a hierarchy over the source: per level, how many labels the rows fall
/// into and the most frequent ones; rows whose value the hierarchy lacks are an error.
async fn preview(
    ctx: &SessionContext,
    source: &str,
    hierarchy: &Hierarchy,
    sql: &mut Vec<String>,
) -> Result<Vec<LevelPreview>, String> {
    let frame = ctx
        .table(hierarchy.table.as_str())
        .await
        .map_err(|e| e.to_string())?;
    let columns: Vec<String> = frame
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let Some((value, levels)) = columns.split_first() else {
        return Err("the hierarchy has no columns".into());
    };
    let join = format!(
        "FROM {s} s LEFT JOIN {h} h ON CAST(s.{c} AS VARCHAR) = CAST(h.{v} AS VARCHAR) WHERE s.{c} IS NOT NULL",
        s = ident(source),
        h = ident(&hierarchy.table),
        c = ident(&hierarchy.column),
        v = ident(value)
    );
    let missing_sql = format!("SELECT COUNT(*) {join} AND h.{} IS NULL", ident(value));
    sql.push(missing_sql.clone());
    let missing = run(ctx, &missing_sql).await?.cell(0, 0);
    if missing != "0" {
        return Err(format!(
            "{missing} rows of {source} have a value of {} that the hierarchy lacks",
            hierarchy.column
        ));
    }
    let mut out = Vec::new();
    for level in levels {
        let level_sql = format!(
            "SELECT CAST(h.{l} AS VARCHAR) AS label, COUNT(*) AS n {join} GROUP BY 1 ORDER BY n DESC, label",
            l = ident(level)
        );
        sql.push(level_sql.clone());
        let rows = run(ctx, &level_sql).await?;
        out.push(LevelPreview {
            level: level.clone(),
            labels: rows.len(),
            top: (0..rows.len().min(PREVIEW_LABELS))
                .map(|r| (rows.cell(r, 0), rows.cell(r, 1).parse().unwrap_or(0)))
                .collect(),
        });
    }
    Ok(out)
}

/// The figures a report marks (`data-figure="name" data-value="number"`).
pub fn figures(report: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for part in report.split("data-figure=\"").skip(1) {
        let Some((name, rest)) = part.split_once('"') else {
            continue;
        };
        let Some(value) = rest
            .trim_start()
            .strip_prefix("data-value=\"")
            .and_then(|v| v.split_once('"'))
            .and_then(|(v, _)| v.parse::<f64>().ok())
        else {
            continue;
        };
        out.insert(name.replace("&amp;", "&"), value);
    }
    out
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

    #[test]
    fn a_reports_figures_are_read_by_name() {
        let found = figures(
            "<span data-figure=\"after:rows\" data-value=\"30140\">30140</span>\
             <span data-figure=\"k_marginal_score\" data-value=\"999.5\">x</span>\
             <span data-figure=\"broken\" data-value=\"n/a\">",
        );
        assert_eq!(found.get("after:rows"), Some(&30140.0));
        assert_eq!(found.get("k_marginal_score"), Some(&999.5));
        assert_eq!(found.len(), 2);
    }
}
