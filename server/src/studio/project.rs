//! A steward's project: the source, the columns' roles, the hierarchies and the candidate
//! configurations, and the SQL each step runs. The recipe is that SQL as one file that
//! `dfanon -f` replays, with the project itself on one comment line so the studio can
//! re-open it.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

/// The comment line of a recipe that holds the project.
const PROJECT_LINE: &str = "-- dfanon-studio-project: ";

/// The trial seed: a candidate is a seeded draw, which charges nothing and is never
/// published.
pub const TRIAL_SEED: u64 = 1;

/// How many of each of anonymeter's three attacks a candidate's trial runs (the report's
/// default is 500; 200 tells candidates apart within a few points).
pub const TRIAL_ATTACKS: usize = 200;

/// What a column is for in a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnRole {
    /// Names a person by itself (name, record number, phone): never released as it is.
    Identifier,
    /// Identifies a person combined with others and outside knowledge (age, sex, ZIP
    /// code): generalized.
    Quasi,
    /// What the analyses are about (diagnosis, salary): released unchanged.
    Sensitive,
    /// Left out of the release.
    Other,
}

impl ColumnRole {
    pub const ALL: [ColumnRole; 4] = [
        ColumnRole::Identifier,
        ColumnRole::Quasi,
        ColumnRole::Sensitive,
        ColumnRole::Other,
    ];

    /// The word used in forms.
    pub fn key(self) -> &'static str {
        match self {
            ColumnRole::Identifier => "identifier",
            ColumnRole::Quasi => "quasi",
            ColumnRole::Sensitive => "sensitive",
            ColumnRole::Other => "other",
        }
    }

    /// The words shown on the page.
    pub fn label(self) -> &'static str {
        match self {
            ColumnRole::Identifier => "direct identifier",
            ColumnRole::Quasi => "quasi-identifier",
            ColumnRole::Sensitive => "sensitive",
            ColumnRole::Other => "other (left out)",
        }
    }

    pub fn from_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.key() == key)
    }
}

/// Where the release's rows come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The table's name in the owner's catalog.
    pub table: String,
    /// The file of the studio's folder it was registered from, if any (else a table of the
    /// init scripts).
    pub file: Option<String>,
}

/// How a quasi-identifier's hierarchy is made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HierarchyRecipe {
    /// An ARX hierarchy file (value;level 1;…;*) of the studio's folder.
    File { file: String },
    /// An ARX hierarchy file sent from the browser: its name and rows, kept in the project.
    Upload {
        file: String,
        rows: Vec<Vec<String>>,
    },
    /// Integer intervals: `interval_hierarchy(domain, levels)`.
    Intervals { domain: String, levels: String },
    /// Days to months, quarters, years…: `date_hierarchy(domain, levels)`.
    Dates { domain: String, levels: String },
    /// Prefix masking: `mask_hierarchy(source, column, keep)`.
    Mask { keep: String },
    /// One level: every value becomes `*`.
    Suppress,
}

/// One quasi-identifier's hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hierarchy {
    pub column: String,
    /// The hierarchy table's name.
    pub table: String,
    pub recipe: HierarchyRecipe,
}

/// One candidate configuration: a method and its arguments (`name => value`, values
/// already SQL literals).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub method: String,
    pub arguments: Vec<(String, String)>,
}

/// A publication made from a candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Publication {
    pub name: String,
    pub candidate: usize,
}

/// The steward's project.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub source: Option<Source>,
    /// Every column of the source with its confirmed role, in the source's order.
    pub roles: Vec<(String, ColumnRole)>,
    pub hierarchies: Vec<Hierarchy>,
    pub candidates: Vec<Candidate>,
    pub published: Vec<Publication>,
}

/// The view a trial is checked through, dropped after the check.
pub const TRIAL_VIEW: &str = "studio_trial_release";

/// `name` as an SQL identifier, in double quotes.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` as an SQL string literal.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A column name as `anonymize`'s column lists take it (double quotes when it holds a
/// comma, colon or quote).
fn list_name(name: &str) -> String {
    if name.contains([',', ':', '"']) || name.trim() != name {
        ident(name)
    } else {
        name.to_string()
    }
}

/// A table name made of the letters and digits of `parts`, joined by `_`.
pub fn table_name(parts: &[&str]) -> String {
    let mut out = String::new();
    for part in parts {
        if !out.is_empty() {
            out.push('_');
        }
        for c in part.chars() {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_lowercase());
            } else if !out.ends_with('_') {
                out.push('_');
            }
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, 't');
    }
    out
}

/// The statement that registers a file of the studio's folder as `table`: CSV (with the
/// delimiter found in its first line) or Parquet.
pub fn register_file(table: &str, path: &str, csv: Option<(char, bool)>) -> String {
    match csv {
        Some((delimiter, header)) => format!(
            "CREATE EXTERNAL TABLE {} STORED AS CSV LOCATION {} OPTIONS ('format.delimiter' {}, 'format.has_header' '{header}')",
            ident(table),
            literal(path),
            literal(&delimiter.to_string()),
        ),
        None => format!(
            "CREATE EXTERNAL TABLE {} STORED AS PARQUET LOCATION {}",
            ident(table),
            literal(path)
        ),
    }
}

impl Hierarchy {
    /// The statements that (re)build this hierarchy over `source`; `path` turns a file of
    /// the studio's folder into its full path and CSV settings.
    pub fn statements(
        &self,
        source: &str,
        path: impl Fn(&str) -> Option<(String, Option<(char, bool)>)>,
    ) -> Option<Vec<String>> {
        let table = ident(&self.table);
        let create = match &self.recipe {
            HierarchyRecipe::File { file } => {
                let (full, csv) = path(file)?;
                let csv = csv.map(|(delimiter, _)| (delimiter, false));
                register_file(&self.table, &full, csv)
            }
            HierarchyRecipe::Upload { rows, .. } => super::upload::create_table(&self.table, rows),
            HierarchyRecipe::Intervals { domain, levels } => format!(
                "CREATE TABLE {table} AS SELECT * FROM interval_hierarchy({}, levels => {})",
                literal(domain),
                literal(levels)
            ),
            HierarchyRecipe::Dates { domain, levels } => format!(
                "CREATE TABLE {table} AS SELECT * FROM date_hierarchy({}, levels => {})",
                literal(domain),
                literal(levels)
            ),
            HierarchyRecipe::Mask { keep } => format!(
                "CREATE TABLE {table} AS SELECT * FROM mask_hierarchy({}, {}, {})",
                literal(source),
                literal(&self.column),
                literal(keep)
            ),
            HierarchyRecipe::Suppress => format!(
                "CREATE TABLE {table} AS SELECT DISTINCT CAST({} AS VARCHAR) AS value, '*' AS level_1 FROM {} WHERE {} IS NOT NULL",
                ident(&self.column),
                ident(source),
                ident(&self.column)
            ),
        };
        Some(vec![format!("DROP TABLE IF EXISTS {table}"), create])
    }
}

impl Project {
    /// The columns with `role`, in the source's order.
    pub fn columns(&self, role: ColumnRole) -> Vec<&str> {
        self.roles
            .iter()
            .filter(|(_, r)| *r == role)
            .map(|(c, _)| c.as_str())
            .collect()
    }

    /// The hierarchy of `column`, if one was built.
    pub fn hierarchy(&self, column: &str) -> Option<&Hierarchy> {
        self.hierarchies.iter().find(|h| h.column == column)
    }

    /// `qi => '...'`: each quasi-identifier with its hierarchy table when one was built.
    pub fn qi_argument(&self) -> String {
        self.qi_list(true)
    }

    /// The quasi-identifiers, with their hierarchy tables when `hierarchies` (methods that
    /// generalize) and one was built.
    fn qi_list(&self, hierarchies: bool) -> String {
        let list: Vec<String> = self
            .columns(ColumnRole::Quasi)
            .into_iter()
            .map(|column| match self.hierarchy(column) {
                Some(h) if hierarchies => format!("{}:{}", list_name(column), list_name(&h.table)),
                _ => list_name(column),
            })
            .collect();
        literal(&list.join(", "))
    }

    /// The arguments every call on this project shares: the source, the quasi-identifiers,
    /// the identifiers (dropped) and the sensitive column.
    fn shared_arguments(&self, method: &str) -> Vec<(String, String)> {
        // Microaggregation replaces values by group means: no hierarchies.
        let generalizes = method != "microaggregation";
        let mut out = vec![("qi".to_string(), self.qi_list(generalizes))];
        let sensitive = self.columns(ColumnRole::Sensitive);
        if !sensitive.is_empty() {
            // 'kanon' releases several; the other methods take one.
            let kept: Vec<String> = if method == "kanon" {
                sensitive.iter().map(|c| list_name(c)).collect()
            } else {
                vec![list_name(sensitive[0])]
            };
            out.push(("sensitive".into(), literal(&kept.join(", "))));
        }
        out
    }

    /// The arguments of `function` over the source, e.g. `'adult', qi => '...'`.
    fn call(&self, function: &str, tail: &[(String, String)], lead: &[String]) -> Option<String> {
        let source = &self.source.as_ref()?.table;
        let mut parts: Vec<String> = lead.to_vec();
        parts.push(literal(source));
        for (name, value) in tail {
            parts.push(format!("{name} => {value}"));
        }
        Some(format!("{function}({})", parts.join(", ")))
    }

    /// `anonymize_assess` of the source under the chosen quasi-identifiers.
    pub fn assess_sql(&self) -> Option<String> {
        let qi = vec![("qi".to_string(), self.qi_argument())];
        Some(format!(
            "SELECT key, value FROM {}",
            self.call("anonymize_assess", &qi, &[])?
        ))
    }

    /// `anonymize_class_sizes` of the source.
    pub fn class_sizes_sql(&self) -> Option<String> {
        let qi = vec![("qi".to_string(), self.qi_argument())];
        Some(format!(
            "SELECT size, classes, records FROM {} ORDER BY size",
            self.call("anonymize_class_sizes", &qi, &[])?
        ))
    }

    /// The whole argument list of a candidate's release.
    fn candidate_arguments(&self, candidate: &Candidate) -> Vec<(String, String)> {
        let mut args = vec![("method".to_string(), literal(&candidate.method))];
        args.extend(self.shared_arguments(&candidate.method));
        args.extend(candidate.arguments.iter().cloned());
        args
    }

    /// The whole argument list of a candidate's trial: its release's, seeded for the
    /// randomized methods (a seeded draw charges nothing and is never published).
    fn trial_arguments(&self, candidate: &Candidate) -> Vec<(String, String)> {
        let mut args = self.candidate_arguments(candidate);
        if takes_seed(&candidate.method) {
            args.push(("seed".into(), TRIAL_SEED.to_string()));
        }
        args
    }

    /// The trial of a candidate: its report (a seeded draw, charging nothing) written to
    /// `path`.
    pub fn trial_sql(&self, candidate: &Candidate, path: &str) -> Option<String> {
        let mut args = self.trial_arguments(candidate);
        args.push(("path".into(), literal(path)));
        // The attacks read the whole source twice (seconds on a million rows): a trial
        // runs fewer of each than the publication's report (500).
        args.push(("attacks".into(), TRIAL_ATTACKS.to_string()));
        Some(format!(
            "SELECT * FROM {}",
            self.call("anonymize_report", &args, &[])?
        ))
    }

    /// The first rows of a candidate's trial release.
    pub fn trial_rows_sql(&self, candidate: &Candidate, rows: usize) -> Option<String> {
        let args = self.trial_arguments(candidate);
        Some(format!(
            "SELECT * FROM {} LIMIT {rows}",
            self.call("anonymize", &args, &[])?
        ))
    }

    /// A view of a candidate's trial release, its HIPAA Safe Harbor check, its risk by its
    /// quasi-identifiers (`anonymize_assess`), and the view dropped again.
    pub fn trial_view_sql(&self, candidate: &Candidate) -> Option<[String; 4]> {
        let args = self.trial_arguments(candidate);
        let view = ident(TRIAL_VIEW);
        Some([
            format!(
                "CREATE OR REPLACE VIEW {view} AS SELECT * FROM {}",
                self.call("anonymize", &args, &[])?
            ),
            format!(
                "SELECT column_name, rule, finding, rows FROM anonymize_safe_harbor({})",
                literal(TRIAL_VIEW)
            ),
            format!(
                "SELECT key, value FROM anonymize_assess({}, qi => {})",
                literal(TRIAL_VIEW),
                self.qi_argument()
            ),
            format!("DROP VIEW IF EXISTS {view}"),
        ])
    }

    /// The publication of a candidate under `name`: an unseeded draw, charged once.
    pub fn publish_sql(&self, candidate: &Candidate, name: &str) -> Option<String> {
        let args = self.candidate_arguments(candidate);
        Some(format!(
            "SELECT name, method, released_rows, epsilon, delta FROM {}",
            self.call("anonymize_publish", &args, &[literal(name)])?
        ))
    }

    /// The report of a candidate published as `name`, written to `path`: the same
    /// arguments as the publication, so the store serves the published draw (nothing is
    /// drawn or charged again).
    pub fn published_report_sql(&self, candidate: &Candidate, path: &str) -> Option<String> {
        let mut args = self.candidate_arguments(candidate);
        args.push(("path".into(), literal(path)));
        Some(format!(
            "SELECT * FROM {}",
            self.call("anonymize_report", &args, &[])?
        ))
    }

    /// The recipe: every statement of the project, in order, as one SQL file `dfanon -f`
    /// replays; its second line holds the project for the studio to re-open.
    pub fn recipe(&self, path: impl Fn(&str) -> Option<(String, Option<(char, bool)>)>) -> String {
        let mut out =
            String::from("-- A dfanon studio recipe: replay it with  dfanon -f <this file>\n");
        let json = serde_json::to_string(self).unwrap_or_default();
        let _ = writeln!(out, "{PROJECT_LINE}{json}");
        let Some(source) = &self.source else {
            return out;
        };
        out.push_str("\n-- Source\n");
        if let Some(file) = &source.file {
            match path(file) {
                Some((full, csv)) => {
                    let _ = writeln!(out, "{};", register_file(&source.table, &full, csv));
                }
                None => {
                    let _ = writeln!(
                        out,
                        "-- the file {file} is no longer in the studio's folder"
                    );
                }
            }
        }
        if !self.roles.is_empty() {
            out.push_str("\n-- Roles\n");
            for (column, role) in &self.roles {
                let _ = writeln!(out, "--   {column}: {}", role.label());
            }
        }
        if !self.hierarchies.is_empty() {
            out.push_str("\n-- Hierarchies\n");
            for hierarchy in &self.hierarchies {
                for statement in hierarchy
                    .statements(&source.table, &path)
                    .unwrap_or_default()
                {
                    let _ = writeln!(out, "{statement};");
                }
            }
        }
        if let Some(sql) = self.assess_sql() {
            let _ = writeln!(out, "\n-- Risk before\n{sql};");
        }
        for (i, candidate) in self.candidates.iter().enumerate() {
            if let Some(sql) = self.trial_rows_sql(candidate, 10) {
                let _ = writeln!(
                    out,
                    "\n-- Candidate {} (trial: seeded, charges nothing, not publishable)\n{sql};",
                    i + 1
                );
            }
        }
        for publication in &self.published {
            if let Some(sql) = self
                .candidates
                .get(publication.candidate)
                .and_then(|c| self.publish_sql(c, &publication.name))
            {
                let _ = writeln!(
                    out,
                    "\n-- Published from candidate {} (unseeded, charged once)\n{sql};",
                    publication.candidate + 1
                );
            }
        }
        out
    }

    /// The project a recipe holds.
    pub fn from_recipe(text: &str) -> Result<Self, String> {
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix(PROJECT_LINE))
            .ok_or("this is not a studio recipe: it has no 'dfanon-studio-project' line")?;
        serde_json::from_str(line).map_err(|e| format!("the recipe's project line: {e}"))
    }
}

/// Whether `method` takes a seed (the deterministic ones do not).
pub fn takes_seed(method: &str) -> bool {
    matches!(method, "ipa" | "safepub" | "dp_histogram" | "upa")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> Project {
        Project {
            source: Some(Source {
                table: "adult".into(),
                file: Some("adult.csv".into()),
            }),
            roles: vec![
                ("age".into(), ColumnRole::Quasi),
                ("marital-status".into(), ColumnRole::Quasi),
                ("a,b".into(), ColumnRole::Quasi),
                ("salary-class".into(), ColumnRole::Sensitive),
                ("id".into(), ColumnRole::Identifier),
            ],
            hierarchies: vec![Hierarchy {
                column: "age".into(),
                table: "studio_adult_age".into(),
                recipe: HierarchyRecipe::Intervals {
                    domain: "17..90".into(),
                    levels: "5|10".into(),
                },
            }],
            candidates: vec![Candidate {
                method: "safepub".into(),
                arguments: vec![("epsilon".into(), "1".into())],
            }],
            published: vec![Publication {
                name: "adult_sp".into(),
                candidate: 0,
            }],
        }
    }

    fn folder(file: &str) -> Option<(String, Option<(char, bool)>)> {
        Some((format!("/data/{file}"), Some((';', true))))
    }

    #[test]
    fn the_sql_quotes_names_and_values() {
        let p = project();
        assert_eq!(
            p.qi_argument(),
            "'age:studio_adult_age, marital-status, \"a,b\"'"
        );
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(literal("o'k"), "'o''k'");
        assert_eq!(
            table_name(&["studio", "Adult", "marital-status"]),
            "studio_adult_marital_status"
        );
        assert_eq!(table_name(&["9x"]), "t9x");
        let candidate = &p.candidates[0];
        assert_eq!(
            p.publish_sql(candidate, "adult_sp").as_deref(),
            Some("SELECT name, method, released_rows, epsilon, delta FROM anonymize_publish('adult_sp', 'adult', method => 'safepub', qi => 'age:studio_adult_age, marital-status, \"a,b\"', sensitive => 'salary-class', epsilon => 1)")
        );
        let trial = p.trial_sql(candidate, "/tmp/x'.html").unwrap_or_default();
        assert!(
            trial.ends_with("epsilon => 1, seed => 1, path => '/tmp/x''.html', attacks => 200)"),
            "{trial}"
        );
        assert_eq!(
            p.hierarchies[0].statements("adult", folder),
            Some(vec![
                "DROP TABLE IF EXISTS \"studio_adult_age\"".to_string(),
                "CREATE TABLE \"studio_adult_age\" AS SELECT * FROM interval_hierarchy('17..90', levels => '5|10')".to_string(),
            ])
        );
    }

    #[test]
    fn a_date_hierarchy_is_built_by_date_hierarchy() {
        let dates = Hierarchy {
            column: "admitted".into(),
            table: "studio_visits_admitted".into(),
            recipe: HierarchyRecipe::Dates {
                domain: "2019-01-01..2019-12-31".into(),
                levels: "month|quarter".into(),
            },
        };
        assert_eq!(
            dates.statements("visits", folder).map(|s| s[1].clone()),
            Some("CREATE TABLE \"studio_visits_admitted\" AS SELECT * FROM date_hierarchy('2019-01-01..2019-12-31', levels => 'month|quarter')".into())
        );
    }

    #[test]
    fn a_recipe_replays_and_reopens_as_the_same_project() {
        let p = project();
        let recipe = p.recipe(folder);
        assert!(recipe.contains("CREATE EXTERNAL TABLE \"adult\" STORED AS CSV LOCATION '/data/adult.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'true');"), "{recipe}");
        assert!(
            recipe.contains("seed => 1 LIMIT 10;") || recipe.contains("seed => 1) LIMIT 10;"),
            "{recipe}"
        );
        assert!(recipe.contains("FROM anonymize_publish('adult_sp', 'adult'"));
        assert_eq!(Project::from_recipe(&recipe), Ok(p));
        assert!(Project::from_recipe("SELECT 1;").is_err());
    }
}
