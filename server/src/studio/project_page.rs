//! The owner's project page: one panel per step — source, profile and roles,
//! hierarchies, risk before, candidates, publish, recipe — each with the SQL it runs.
//! Every text from the data or the user is escaped.

use std::fmt::Write;

use datafusion_anonymize::escape_html as escape;

use super::activity::Running;
use super::candidates_page;
use super::files::DataFile;
use super::login::StudioUser;
use super::pages::{page, refreshing_page};
use super::project::{ColumnRole, HierarchyRecipe};
use super::workbench::Workbench;

/// A form's opening tag and its CSRF field.
pub fn form(action: &str, user: &StudioUser) -> String {
    format!(
        "<form method=\"post\" action=\"{action}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape(&user.csrf)
    )
}

/// The longest statement shown whole on a page (an uploaded hierarchy's is longer).
const SHOWN_STATEMENT: usize = 4000;

/// Statements as a page shows them: each cut after [`SHOWN_STATEMENT`] characters, saying
/// how many more it has (the recipe has them whole).
pub fn shown_sql(statements: &[String]) -> String {
    let shown: Vec<String> = statements
        .iter()
        .map(
            |statement| match statement.char_indices().nth(SHOWN_STATEMENT) {
                Some((cut, _)) => format!(
                    "{} … ({} characters more; the recipe has the whole statement)",
                    &statement[..cut],
                    statement[cut..].chars().count()
                ),
                None => statement.clone(),
            },
        )
        .collect();
    shown.join(";\n")
}

/// SQL shown under a panel.
pub fn sql_block(statements: &[String]) -> String {
    if statements.is_empty() {
        return String::new();
    }
    format!(
        "<details class=\"sql\"><summary>SQL</summary><pre>{}</pre></details>",
        escape(&shown_sql(statements))
    )
}

/// The whole project page.
pub fn render(
    user: &StudioUser,
    bench: &Workbench,
    tables: &[String],
    files: Option<&[DataFile]>,
) -> String {
    let mut body = String::new();
    match &bench.outcome {
        Some(Ok(message)) => {
            let _ = write!(
                body,
                "<p class=\"ok\" role=\"status\">{}</p>",
                escape(message)
            );
        }
        Some(Err(message)) => {
            let _ = write!(
                body,
                "<p class=\"error\" role=\"alert\">{}</p>",
                escape(message)
            );
        }
        None => {}
    }
    if !bench.last_sql.is_empty() {
        let _ = write!(
            body,
            "<details class=\"sql\" id=\"last-sql\"><summary>SQL of the last step</summary><pre>{}</pre></details>",
            escape(&shown_sql(&bench.last_sql))
        );
    }
    body.push_str("<nav class=\"steps\"><a href=\"#source\">1 Source</a><a href=\"#profile\">2 Profile</a>\
        <a href=\"#hierarchies\">3 Hierarchies</a><a href=\"#risk\">4 Risk before</a>\
        <a href=\"#candidates\">5 Candidates</a><a href=\"#publish\">6 Publish</a><a href=\"#recipe\">7 Recipe</a></nav>");
    source(&mut body, user, bench, tables, files);
    if bench.project.source.is_some() {
        profile(&mut body, user, bench);
        hierarchies(&mut body, user, bench, files);
        candidates_page::risk(&mut body, user, bench);
        candidates_page::candidates(&mut body, user, bench);
        candidates_page::published(&mut body, bench);
    }
    recipe(&mut body, user, bench);
    page("Studio: from a table to a release", Some(user), &body)
}

/// The page shown while a step runs: what it does, how long it has run, the phase its
/// search reports with a progress bar; it loads again every second until the step ends.
pub fn working(user: &StudioUser, running: Option<&Running>) -> String {
    let mut body = String::from("<section id=\"working\"><h2>Working…</h2>");
    match running {
        Some(running) => {
            let _ = write!(
                body,
                "<p>{}: <span id=\"elapsed\">{}</span> s so far.</p>",
                escape(&capitalized(&running.step)),
                running.elapsed.as_secs()
            );
            if let Some((phase, done, total)) = &running.phase {
                let _ = write!(
                    body,
                    "<p><label>{} <progress id=\"progress\" value=\"{done}\" max=\"{total}\">{done} of {total}</progress></label> {done} of {total}</p>",
                    escape(phase)
                );
            }
        }
        None => body.push_str("<p>Finishing the last step.</p>"),
    }
    body.push_str("<p class=\"explain\">This page looks again every second and shows the project when the step ends. Leaving it does not stop the step.</p></section>");
    refreshing_page("Studio: working", Some(user), &body, 1)
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn source(
    body: &mut String,
    user: &StudioUser,
    bench: &Workbench,
    tables: &[String],
    files: Option<&[DataFile]>,
) {
    body.push_str("<section id=\"source\"><h2>1. Source</h2><p class=\"explain\">The table the release is drawn from: one of the server's tables, or a CSV or Parquet file of the studio's folder.</p>");
    if let Some(source) = &bench.project.source {
        let from = source
            .file
            .as_deref()
            .map(|f| format!(" (from the file <code>{}</code>)", escape(f)))
            .unwrap_or_default();
        let _ = write!(
            body,
            "<p>Source: <code id=\"source-table\">{}</code>{from}</p>",
            escape(&source.table)
        );
    }
    body.push_str(&form("/project/source", user));
    body.push_str("<label>Table <select name=\"table\"><option value=\"\">—</option>");
    for table in tables {
        let _ = write!(body, "<option>{}</option>", escape(table));
    }
    body.push_str("</select></label>");
    if let Some(files) = files {
        body.push_str(" or <label>file <select name=\"file\"><option value=\"\">—</option>");
        for file in files {
            let _ = write!(
                body,
                "<option value=\"{n}\">{n} ({} kB)</option>",
                file.bytes.div_ceil(1024),
                n = escape(&file.name)
            );
        }
        body.push_str("</select></label>");
    }
    body.push_str(" <button id=\"use-source\">Use this source</button></form></section>");
}

fn profile(body: &mut String, user: &StudioUser, bench: &Workbench) {
    body.push_str("<section id=\"profile\"><h2>2. Profile and roles</h2><p class=\"explain\">Each column's values, and the role it plays: a <b>direct identifier</b> is never released; <b>quasi-identifiers</b> are generalized until no one stands out; the <b>sensitive</b> column is released unchanged; <b>other</b> columns are left out. The suggestion says why; confirm or change it.</p>");
    let Some(profile) = &bench.profile else {
        body.push_str("<p>Not profiled.</p></section>");
        return;
    };
    body.push_str(&form("/project/roles", user));
    body.push_str("<table><thead><tr><th>Column</th><th>Type</th><th>Distinct</th><th>NULL</th><th>Most frequent values</th><th>Suggested, because</th><th>Role</th></tr></thead><tbody>");
    for (i, column) in profile.iter().enumerate() {
        let role = bench
            .project
            .roles
            .iter()
            .find(|(c, _)| *c == column.name)
            .map_or(column.suggestion, |(_, r)| *r);
        let top: Vec<String> = column
            .top
            .iter()
            .map(|(v, n)| format!("{} ({n})", escape(v)))
            .collect();
        let nulls = if column.rows == 0 {
            0.0
        } else {
            100.0 * column.nulls as f64 / column.rows as f64
        };
        let _ = write!(
            body,
            "<tr data-column=\"{name}\"><td><code>{name}</code></td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{nulls:.1}%</td><td class=\"values\">{}</td><td>{}: {}</td><td><select name=\"role_{i}\">",
            escape(&column.data_type),
            column.distinct,
            top.join(", "),
            column.suggestion.label(),
            escape(&column.reason),
            name = escape(&column.name),
        );
        for option in ColumnRole::ALL {
            let selected = if option == role { " selected" } else { "" };
            let _ = write!(
                body,
                "<option value=\"{}\"{selected}>{}</option>",
                option.key(),
                option.label()
            );
        }
        body.push_str("</select></td></tr>");
    }
    body.push_str(
        "</tbody></table><button id=\"save-roles\">Save the roles</button></form></section>",
    );
}

fn hierarchies(
    body: &mut String,
    user: &StudioUser,
    bench: &Workbench,
    files: Option<&[DataFile]>,
) {
    body.push_str("<section id=\"hierarchies\"><h2>3. Hierarchies</h2><p class=\"explain\">How each quasi-identifier may be coarsened, level by level, up to <code>*</code> (hidden). A method chooses the level; the preview shows how many groups the rows fall into at each level. Build one from integer intervals, from dates (a range such as <code>2015-01-01..2019-12-31</code> with levels such as <code>month|quarter|year</code>), by masking the ends of codes, from an ARX hierarchy file (of the studio's folder, or uploaded from this computer: one row per value, <code>value;level 1;…;*</code>), or hide the column entirely.</p>");
    let project = &bench.project;
    let quasi = project.columns(ColumnRole::Quasi);
    if quasi.is_empty() {
        body.push_str("<p>No quasi-identifiers: give some columns that role above.</p></section>");
        return;
    }
    for column in quasi {
        let _ = write!(
            body,
            "<div class=\"hierarchy\" data-column=\"{c}\"><h3><code>{c}</code></h3>",
            c = escape(column)
        );
        match project.hierarchy(column) {
            Some(h) => {
                let how = match &h.recipe {
                    HierarchyRecipe::File { file } => format!("from the file {}", escape(file)),
                    HierarchyRecipe::Upload { file, rows } => format!(
                        "uploaded from {} ({} values, {} levels)",
                        escape(file),
                        rows.len(),
                        rows.first().map_or(0, |r| r.len().saturating_sub(1))
                    ),
                    HierarchyRecipe::Intervals { domain, levels } => format!(
                        "intervals over {} with levels {}",
                        escape(domain),
                        escape(levels)
                    ),
                    HierarchyRecipe::Dates { domain, levels } => format!(
                        "dates from {} with levels {}",
                        escape(domain),
                        escape(levels)
                    ),
                    HierarchyRecipe::Mask { keep } => format!("masking, keeping {}", escape(keep)),
                    HierarchyRecipe::Suppress => "hidden entirely (one level: *)".into(),
                };
                let _ = write!(
                    body,
                    "<p>Built: {how}, as table <code>{}</code>.</p>",
                    escape(&h.table)
                );
            }
            None => {
                body.push_str("<p>No hierarchy built here: the method uses the table <code>&lt;source&gt;_hierarchy_&lt;column&gt;</code> if the server has one.</p>");
            }
        }
        if let Some(levels) = bench.previews.get(column) {
            body.push_str("<table class=\"preview\"><thead><tr><th>Level</th><th>Groups</th><th>Largest groups (rows)</th></tr></thead><tbody>");
            for level in levels {
                let top: Vec<String> = level
                    .top
                    .iter()
                    .map(|(l, n)| format!("{} ({n})", escape(l)))
                    .collect();
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"values\">{}</td></tr>",
                    escape(&level.level),
                    level.labels,
                    top.join(", ")
                );
            }
            body.push_str("</tbody></table>");
        }
        body.push_str(&form("/project/hierarchy", user));
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"column\" value=\"{}\"><label>Build <select name=\"kind\">\
             <option value=\"intervals\">integer intervals</option><option value=\"dates\">dates (levels: week, month, quarter, year, 5y, 10y)</option><option value=\"mask\">masking</option>\
             <option value=\"file\">ARX file</option><option value=\"suppress\">hide (*)</option></select></label> \
             <label>domain <input name=\"domain\" placeholder=\"17..90\" size=\"8\"></label> \
             <label>levels <input name=\"levels\" placeholder=\"5|10|20\" size=\"10\"></label> \
             <label>keep <input name=\"keep\" placeholder=\"3,2\" size=\"5\"></label>",
            escape(column)
        );
        if let Some(files) = files {
            body.push_str(" <label>file <select name=\"file\"><option value=\"\">—</option>");
            for file in files {
                let _ = write!(body, "<option>{}</option>", escape(&file.name));
            }
            body.push_str("</select></label>");
        }
        body.push_str(" <button>Build and preview</button></form>");
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/project/hierarchy/upload\" enctype=\"multipart/form-data\" class=\"upload\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"column\" value=\"{}\">\
             <label>or upload an ARX hierarchy file <input type=\"file\" name=\"hierarchy\" accept=\".csv,.tsv,.txt\" required></label> \
             <button>Upload and preview</button></form></div>",
            escape(&user.csrf),
            escape(column)
        );
    }
    body.push_str("</section>");
}

fn recipe(body: &mut String, user: &StudioUser, bench: &Workbench) {
    body.push_str("<section id=\"recipe\"><h2>7. Recipe</h2><p class=\"explain\">The whole project as one SQL file: <code>dfanon -f recipe.sql</code> replays it (on the same machine: the file paths are this server's), and the studio re-opens it. Undo goes back one step (a publication stays published).</p>");
    body.push_str("<p><a id=\"download-recipe\" href=\"/project/recipe\" download>Download the recipe</a></p>");
    if bench.can_undo() {
        body.push_str(&form("/project/undo", user));
        body.push_str("<button id=\"undo\">Undo the last step</button></form>");
    }
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/project/open\" enctype=\"multipart/form-data\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label>Re-open a recipe: a saved file <input type=\"file\" name=\"recipe_file\" accept=\".sql,.txt\"></label>\
         <br><label>or paste it<br><textarea name=\"recipe\" rows=\"4\" cols=\"80\" placeholder=\"paste a recipe\"></textarea></label><br><button id=\"open-recipe\">Open</button></form></section>",
        escape(&user.csrf)
    );
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::Role;

    #[test]
    fn the_working_page_says_what_runs_and_reloads_itself() {
        let user = StudioUser {
            name: "owner".into(),
            role: Role::Owner,
            csrf: "t".into(),
        };
        let running = Running {
            step: "running the candidate's <trial>".into(),
            phase: Some(("lattice search".into(), 12, 40)),
            elapsed: Duration::from_millis(3400),
        };
        let html = working(&user, Some(&running));
        assert!(
            html.contains("<meta http-equiv=\"refresh\" content=\"1\">"),
            "{html}"
        );
        assert!(
            html.contains("<p>Running the candidate&#39;s &lt;trial&gt;: <span id=\"elapsed\">3</span> s so far.</p>"),
            "{html}"
        );
        assert!(
            html.contains("<progress id=\"progress\" value=\"12\" max=\"40\">"),
            "{html}"
        );
        assert!(working(&user, None).contains("Finishing the last step."));
        assert!(!page("x", None, "").contains("http-equiv"));
    }

    #[test]
    fn long_statements_are_cut_on_the_page() {
        let long = format!("CREATE TABLE h AS VALUES {}", "('é', '*'), ".repeat(1000));
        let shown = shown_sql(&[long.clone(), "SELECT 1".into()]);
        let (first, second) = shown.split_once(";\n").expect("two statements");
        assert_eq!(second, "SELECT 1");
        assert!(first.starts_with(&long.chars().take(SHOWN_STATEMENT).collect::<String>()));
        let more = long.chars().count() - SHOWN_STATEMENT;
        assert!(
            first.ends_with(&format!(
                " … ({more} characters more; the recipe has the whole statement)"
            )),
            "{first}"
        );
    }
}
