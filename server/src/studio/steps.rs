//! The owner's steps over HTTP: each POST carries the session's CSRF token, changes the
//! owner's workbench and sends the browser back to the project page (303); the GETs show
//! the page, the recipe and a candidate's report.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Multipart, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Form;

use super::activity::Activity;
use super::evidence;
use super::login::{same_token, StudioUser};
use super::project::{literal, Candidate, ColumnRole, HierarchyRecipe, Project};
use super::upload;
use super::workbench::Workbench;
use super::{html, project_page, redirect, typed, Bench, Studio};
use crate::config::Role;

/// A form's fields by name.
pub type Fields = HashMap<String, String>;

/// Why a request is refused.
#[derive(Debug, Clone, Copy)]
pub(super) enum Refusal {
    /// No session: log in first.
    Login,
    /// Not an owner's session, or no CSRF token of it.
    Forbidden,
}

impl Refusal {
    pub(super) fn response(self) -> Response {
        match self {
            Refusal::Login => redirect("/login", &[]),
            Refusal::Forbidden => html(StatusCode::FORBIDDEN, super::pages::refused()),
        }
    }
}

/// The owner of the request's session, or the response refusing it.
pub(super) fn owner(studio: &Studio, headers: &HeaderMap) -> Result<StudioUser, Refusal> {
    match studio.sessions.user(headers) {
        Some(user) if user.role == Role::Owner => Ok(user),
        Some(_) => Err(Refusal::Forbidden),
        None => Err(Refusal::Login),
    }
}

/// The owner of a state-changing request: the session must be an owner's and the form
/// must carry its CSRF token.
fn owner_posting(
    studio: &Studio,
    headers: &HeaderMap,
    form: &Fields,
) -> Result<StudioUser, Refusal> {
    let user = owner(studio, headers)?;
    let token = form.get("csrf").map(String::as_str).unwrap_or_default();
    if same_token(&user.csrf, token) {
        Ok(user)
    } else {
        Err(Refusal::Forbidden)
    }
}

/// The owner's workbench (made on first use, with a fresh owner session reporting its
/// searches' progress to the workbench's activity).
fn bench(studio: &Studio, user: &StudioUser) -> Result<Bench, Refusal> {
    let mut benches = studio.benches.lock().map_err(|_| Refusal::Forbidden)?;
    if let Some(found) = benches.get(&user.name) {
        return Ok(found.clone());
    }
    let activity = Arc::new(Activity::default());
    let ctx = studio
        .server
        .studio_session(&user.name, Some(activity.progress()))
        .map_err(|_| Refusal::Forbidden)?;
    let made = Bench {
        work: Arc::new(tokio::sync::Mutex::new(Workbench::new(ctx))),
        activity,
        evidence: Arc::default(),
    };
    benches.insert(user.name.clone(), made.clone());
    Ok(made)
}

/// The owner of the request and their workbench.
pub(super) fn owned(
    studio: &Studio,
    headers: &HeaderMap,
) -> Result<(StudioUser, Arc<tokio::sync::Mutex<Workbench>>), Refusal> {
    let user = owner(studio, headers)?;
    let bench = bench(studio, &user)?;
    Ok((user, bench.work))
}

fn field<'a>(form: &'a Fields, name: &str) -> Option<&'a str> {
    form.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// The project page; while a step runs, a page saying what it does and how far it is,
/// which looks again every second.
pub async fn project(State(studio): State<Arc<Studio>>, headers: HeaderMap) -> Response {
    let user = match owner(&studio, &headers) {
        Ok(user) => user,
        Err(refusal) => return refusal.response(),
    };
    let bench = match bench(&studio, &user) {
        Ok(bench) => bench,
        Err(refusal) => return refusal.response(),
    };
    let Ok(work) = bench.work.try_lock() else {
        let running = bench.activity.now();
        return html(
            StatusCode::OK,
            project_page::working(&user, running.as_ref()),
        );
    };
    let files = studio.folder.as_ref().map(|f| f.files());
    html(
        StatusCode::OK,
        project_page::render(
            &user,
            &work,
            &studio.server.owner_tables(),
            files.as_deref(),
        ),
    )
}

/// How long a step's request waits for the step before the browser is sent to the page
/// that shows its progress (the step goes on).
const STEP_WAIT: Duration = Duration::from_millis(1500);

/// Runs one step: checks the owner and token, then `step` on the workbench (`doing` says
/// what it does while it runs), then sends the browser to `section` of the project page,
/// or to the progress page when the step takes longer than [`STEP_WAIT`]. The reports the
/// step queued are written after it, with the workbench free ([`evidence::compute`]).
async fn step<F>(
    studio: &Studio,
    headers: &HeaderMap,
    form: &Fields,
    section: &'static str,
    doing: &'static str,
    step: F,
) -> Response
where
    F: for<'b> FnOnce(
            &'b mut Workbench,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'b>>
        + Send
        + 'static,
{
    let found = owner_posting(studio, headers, form).and_then(|user| bench(studio, &user));
    let bench = match found {
        Ok(bench) => bench,
        Err(refusal) => return refusal.response(),
    };
    let shared = bench.work.clone();
    let mut work = bench.work.clone().lock_owned().await;
    let activity = bench.activity.clone();
    activity.start(doing);
    let (ended, step_ended) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        step(&mut work).await;
        let jobs = work.take_evidence_jobs();
        let ctx = work.ctx.clone();
        drop(work);
        activity.finish();
        let _ = ended.send(());
        evidence::compute(ctx, jobs, shared, bench.evidence).await;
    });
    match tokio::time::timeout(STEP_WAIT, step_ended).await {
        Ok(_) => redirect(section, &[]),
        Err(_) => redirect("/project", &[]),
    }
}

pub async fn source(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    let table = field(&form, "table").map(str::to_string);
    let file = field(&form, "file").map(str::to_string);
    if let Some(table) = &table {
        if file.is_none() && !studio.server.owner_tables().contains(table) {
            return html(StatusCode::BAD_REQUEST, super::pages::refused());
        }
    }
    let folder = studio.folder.clone();
    step(
        &studio,
        &headers,
        &form,
        "/project#profile",
        "registering and profiling the source",
        move |b| {
            Box::pin(async move {
                b.choose_source(table.as_deref(), file.as_deref(), folder.as_ref())
                    .await
            })
        },
    )
    .await
}

pub async fn roles(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    step(
        &studio,
        &headers,
        &form.clone(),
        "/project#hierarchies",
        "saving the roles",
        move |b| {
            Box::pin(async move {
                let roles: Vec<(String, ColumnRole)> = b
                    .project
                    .roles
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (column, _))| {
                        let role = form
                            .get(&format!("role_{i}"))
                            .and_then(|r| ColumnRole::from_key(r))?;
                        Some((column.clone(), role))
                    })
                    .collect();
                b.set_roles(&roles);
            })
        },
    )
    .await
}

pub async fn hierarchy(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    let column = field(&form, "column").unwrap_or_default().to_string();
    let recipe = match field(&form, "kind") {
        Some("file") => {
            field(&form, "file").map(|file| HierarchyRecipe::File { file: file.into() })
        }
        Some("intervals") => match (field(&form, "domain"), field(&form, "levels")) {
            (Some(domain), Some(levels)) => Some(HierarchyRecipe::Intervals {
                domain: domain.into(),
                levels: levels.into(),
            }),
            _ => None,
        },
        Some("dates") => match (field(&form, "domain"), field(&form, "levels")) {
            (Some(domain), Some(levels)) => Some(HierarchyRecipe::Dates {
                domain: domain.into(),
                levels: levels.into(),
            }),
            _ => None,
        },
        Some("mask") => {
            field(&form, "keep").map(|keep| HierarchyRecipe::Mask { keep: keep.into() })
        }
        Some("suppress") => Some(HierarchyRecipe::Suppress),
        _ => None,
    };
    let folder = studio.folder.clone();
    step(&studio, &headers, &form, "/project#hierarchies", "building and previewing the hierarchy", move |b| {
        Box::pin(async move {
            match recipe {
                Some(recipe) => b.build_hierarchy(&column, recipe, folder.as_ref()).await,
                None => b.refuse("fill in the builder's fields: a domain and levels for intervals and dates, keep for masking, a file for an ARX file"),
            }
        })
    })
    .await
}

pub async fn risk(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    step(
        &studio,
        &headers,
        &form,
        "/project#risk",
        "assessing the risk before release",
        |b| Box::pin(b.assess()),
    )
    .await
}

/// The candidate a form describes: the method and the arguments it uses, as SQL literals.
pub fn candidate(form: &Fields) -> Result<Candidate, String> {
    let method = field(form, "method").unwrap_or("kanon").to_string();
    let names: &[&str] = match method.as_str() {
        "kanon" => &["k", "suppression_limit"],
        "safepub" | "mst" => &["epsilon", "delta"],
        "ipa" | "dp_histogram" => &["epsilon"],
        "upa" | "microaggregation" => &["k"],
        other => return Err(format!("unknown method '{other}'")),
    };
    let mut arguments = Vec::new();
    for name in names {
        let Some(text) = field(form, name) else {
            continue;
        };
        let ok = match *name {
            "k" => text
                .parse::<u64>()
                .is_ok_and(|k| (1..=1_000_000).contains(&k)),
            _ => text
                .parse::<f64>()
                .is_ok_and(|v| v.is_finite() && v > 0.0 && (*name == "epsilon" || v <= 1.0)),
        };
        if !ok {
            return Err(format!("{name} = '{text}' is not a valid value"));
        }
        let value = if *name == "k" {
            text.to_string()
        } else {
            text.parse::<f64>()
                .map(|v| v.to_string())
                .unwrap_or_default()
        };
        arguments.push((name.to_string(), value));
    }
    Ok(Candidate { method, arguments })
}

pub async fn add_candidate(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    let found = candidate(&form);
    let scratch = studio.scratch.path().to_path_buf();
    step(
        &studio,
        &headers,
        &form,
        "/project#candidates",
        "running the candidate's trial (its release, report and Safe Harbor check)",
        move |b| {
            Box::pin(async move {
                match found {
                    Ok(candidate) => b.add_candidate(candidate, &scratch).await,
                    Err(e) => b.refuse(&e),
                }
            })
        },
    )
    .await
}

pub async fn publish(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    let index = field(&form, "candidate")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0);
    let name = field(&form, "name").unwrap_or_default().to_string();
    let report = report_path(&studio, &name);
    step(&studio, &headers, &form, "/project#publish", "publishing the release and writing its report", move |b| {
        Box::pin(async move {
            let Some(report) = report else {
                return b.refuse("a release's name is letters, digits and _ (at most 63, not starting with a digit)");
            };
            match index.checked_sub(1) {
                Some(index) => b.publish(index, &name, &report).await,
                None => b.refuse("no such candidate"),
            }
        })
    })
    .await
}

/// Whether `name` may name a publication: letters, digits and `_`, at most 63, not
/// starting with a digit.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// Where the report of the publication `name` is written: beside the publication when the
/// server keeps publications (a ledger file), else in the studio's scratch folder; `None`
/// for a name no publication may have.
pub(super) fn report_path(studio: &Studio, name: &str) -> Option<std::path::PathBuf> {
    if !valid_name(name) {
        return None;
    }
    Some(studio.server.publication_report(name).unwrap_or_else(|| {
        studio
            .scratch
            .path()
            .join(format!("published-{name}.report.html"))
    }))
}

pub async fn undo(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    let scratch = studio.scratch.path().to_path_buf();
    let folder = studio.folder.clone();
    step(
        &studio,
        &headers,
        &form,
        "/project#recipe",
        "undoing the last step",
        move |b| Box::pin(async move { b.undo(&scratch, folder.as_ref()).await }),
    )
    .await
}

/// Opens a recipe, pasted or sent as a file.
pub async fn open(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    multipart: Multipart,
) -> Response {
    let (form, file) = match upload::read_form(multipart).await {
        Ok(read) => read,
        Err(e) => return unreadable(&studio, &headers, &e),
    };
    let text = match &file {
        Some(file) => String::from_utf8_lossy(&file.bytes).into_owned(),
        None => form.get("recipe").cloned().unwrap_or_default(),
    };
    let project = Project::from_recipe(&text);
    let scratch = studio.scratch.path().to_path_buf();
    let folder = studio.folder.clone();
    step(
        &studio,
        &headers,
        &form,
        "/project#source",
        "opening the recipe and running its candidates again",
        move |b| {
            Box::pin(async move {
                match project {
                    Ok(project) => b.open(project, &scratch, folder.as_ref()).await,
                    Err(e) => b.refuse(&e),
                }
            })
        },
    )
    .await
}

/// Builds a quasi-identifier's hierarchy from an ARX hierarchy file sent from the browser.
pub async fn upload_hierarchy(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    multipart: Multipart,
) -> Response {
    let (form, file) = match upload::read_form(multipart).await {
        Ok(read) => read,
        Err(e) => return unreadable(&studio, &headers, &e),
    };
    let column = field(&form, "column").unwrap_or_default().to_string();
    let recipe = match &file {
        Some(file) => upload::hierarchy_rows(file).map(|rows| HierarchyRecipe::Upload {
            file: file.name.clone(),
            rows,
        }),
        None => Err("choose a hierarchy file to upload".to_string()),
    };
    let folder = studio.folder.clone();
    step(
        &studio,
        &headers,
        &form,
        "/project#hierarchies",
        "reading the hierarchy file, building and previewing it",
        move |b| {
            Box::pin(async move {
                match recipe {
                    Ok(recipe) => b.build_hierarchy(&column, recipe, folder.as_ref()).await,
                    Err(e) => b.refuse(&e),
                }
            })
        },
    )
    .await
}

/// A form that could not be read (too large, broken): a page saying why, for a signed-in
/// owner; nothing in the project changes.
fn unreadable(studio: &Studio, headers: &HeaderMap, why: &str) -> Response {
    match owner(studio, headers) {
        Ok(user) => html(
            StatusCode::BAD_REQUEST,
            super::pages::page(
                "The form was refused",
                Some(&user),
                &format!(
                    "<p class=\"error\" role=\"alert\">{}</p><p><a href=\"/project\">Back to the project</a></p>",
                    datafusion_anonymize::escape_html(why)
                ),
            ),
        ),
        Err(refusal) => refusal.response(),
    }
}

/// The recipe, as a file to save.
pub async fn recipe(State(studio): State<Arc<Studio>>, headers: HeaderMap) -> Response {
    let (_, bench) = match owned(&studio, &headers) {
        Ok(found) => found,
        Err(refusal) => return refusal.response(),
    };
    let bench = bench.lock().await;
    let folder = studio.folder.clone();
    let text = bench.project.recipe(|f| folder.as_ref()?.locate(f));
    let name = bench
        .project
        .source
        .as_ref()
        .map_or("project".to_string(), |s| s.table.clone());
    let mut response = typed(StatusCode::OK, "application/sql; charset=utf-8", text);
    let disposition = format!(
        "attachment; filename={}",
        literal(&format!(
            "{}-recipe.sql",
            super::project::table_name(&[&name])
        ))
        .replace('\'', "\"")
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Fields {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_candidate_takes_only_its_methods_valid_arguments() {
        let form = fields(&[
            ("method", "kanon"),
            ("k", "5"),
            ("suppression_limit", "0.05"),
            ("epsilon", "1"),
        ]);
        assert_eq!(
            candidate(&form),
            Ok(Candidate {
                method: "kanon".into(),
                arguments: vec![
                    ("k".into(), "5".into()),
                    ("suppression_limit".into(), "0.05".into())
                ]
            })
        );
        let form = fields(&[
            ("method", "safepub"),
            ("k", "5"),
            ("epsilon", "1"),
            ("delta", "1e-6"),
        ]);
        assert_eq!(
            candidate(&form).map(|c| c.arguments),
            Ok(vec![
                ("epsilon".into(), "1".into()),
                ("delta".into(), "0.000001".into())
            ])
        );
        for bad in [("k", "0"), ("k", "1; DROP"), ("suppression_limit", "2")] {
            let form = fields(&[("method", "kanon"), bad]);
            assert!(candidate(&form).is_err(), "{bad:?}");
        }
        assert!(candidate(&fields(&[("method", "ipa"), ("epsilon", "-1")])).is_err());
        assert!(candidate(&fields(&[("method", "x')")])).is_err());
    }
}
