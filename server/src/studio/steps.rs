//! The owner's steps over HTTP: each POST carries the session's CSRF token, changes the
//! owner's workbench and sends the browser back to the project page (303); the GETs show
//! the page, the recipe and a candidate's report.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Form;

use super::login::{same_token, StudioUser};
use super::project::{literal, Candidate, ColumnRole, HierarchyRecipe, Project};
use super::workbench::Workbench;
use super::{html, project_page, redirect, typed, Studio};
use crate::config::Role;

type Fields = HashMap<String, String>;

/// Why a request is refused.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// No session: log in first.
    Login,
    /// Not an owner's session, or no CSRF token of it.
    Forbidden,
}

impl Refusal {
    fn response(self) -> Response {
        match self {
            Refusal::Login => redirect("/login", &[]),
            Refusal::Forbidden => html(StatusCode::FORBIDDEN, super::pages::refused()),
        }
    }
}

/// The owner of the request's session, or the response refusing it.
fn owner(studio: &Studio, headers: &HeaderMap) -> Result<StudioUser, Refusal> {
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

/// The owner's workbench (made on first use, with a fresh owner session).
fn bench(
    studio: &Studio,
    user: &StudioUser,
) -> Result<Arc<tokio::sync::Mutex<Workbench>>, Refusal> {
    let mut benches = studio.benches.lock().map_err(|_| Refusal::Forbidden)?;
    if let Some(found) = benches.get(&user.name) {
        return Ok(found.clone());
    }
    let session = studio
        .server
        .session(&user.name)
        .map_err(|_| Refusal::Forbidden)?;
    let made = Arc::new(tokio::sync::Mutex::new(Workbench::new(session.ctx)));
    benches.insert(user.name.clone(), made.clone());
    Ok(made)
}

/// The owner of the request and their workbench.
fn owned(
    studio: &Studio,
    headers: &HeaderMap,
) -> Result<(StudioUser, Arc<tokio::sync::Mutex<Workbench>>), Refusal> {
    let user = owner(studio, headers)?;
    let bench = bench(studio, &user)?;
    Ok((user, bench))
}

fn field<'a>(form: &'a Fields, name: &str) -> Option<&'a str> {
    form.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// The project page.
pub async fn project(State(studio): State<Arc<Studio>>, headers: HeaderMap) -> Response {
    let (user, bench) = match owned(&studio, &headers) {
        Ok(found) => found,
        Err(refusal) => return refusal.response(),
    };
    let bench = bench.lock().await;
    let files = studio.folder.as_ref().map(|f| f.files());
    html(
        StatusCode::OK,
        project_page::render(
            &user,
            &bench,
            &studio.server.owner_tables(),
            files.as_deref(),
        ),
    )
}

/// Runs one step: checks the owner and token, then `step` on the workbench, then sends the
/// browser to `section` of the project page.
async fn step<F>(
    studio: &Studio,
    headers: &HeaderMap,
    form: &Fields,
    section: &'static str,
    step: F,
) -> Response
where
    F: for<'b> FnOnce(
        &'b mut Workbench,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'b>>,
{
    let found = owner_posting(studio, headers, form).and_then(|user| bench(studio, &user));
    let bench = match found {
        Ok(bench) => bench,
        Err(refusal) => return refusal.response(),
    };
    let mut bench = bench.lock().await;
    step(&mut bench).await;
    redirect(section, &[])
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
    step(&studio, &headers, &form, "/project#profile", move |b| {
        Box::pin(async move {
            b.choose_source(table.as_deref(), file.as_deref(), folder.as_ref())
                .await
        })
    })
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
    step(&studio, &headers, &form, "/project#hierarchies", move |b| {
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
    step(&studio, &headers, &form, "/project#risk", |b| {
        Box::pin(b.assess())
    })
    .await
}

/// The candidate a form describes: the method and the arguments it uses, as SQL literals.
pub fn candidate(form: &Fields) -> Result<Candidate, String> {
    let method = field(form, "method").unwrap_or("kanon").to_string();
    let names: &[&str] = match method.as_str() {
        "kanon" => &["k", "suppression_limit"],
        "safepub" => &["epsilon", "delta"],
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
    step(&studio, &headers, &form, "/project#candidates", move |b| {
        Box::pin(async move {
            match found {
                Ok(candidate) => b.add_candidate(candidate, &scratch).await,
                Err(e) => b.refuse(&e),
            }
        })
    })
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
    step(&studio, &headers, &form, "/project#publish", move |b| {
        Box::pin(async move {
            let valid = !name.is_empty() && name.len() <= 63 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                return b.refuse("a release's name is letters, digits and _ (at most 63, not starting with a digit)");
            }
            match index.checked_sub(1) {
                Some(index) => b.publish(index, &name).await,
                None => b.refuse("no such candidate"),
            }
        })
    })
    .await
}

pub async fn undo(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    let scratch = studio.scratch.path().to_path_buf();
    let folder = studio.folder.clone();
    step(&studio, &headers, &form, "/project#recipe", move |b| {
        Box::pin(async move { b.undo(&scratch, folder.as_ref()).await })
    })
    .await
}

pub async fn open(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<Fields>,
) -> Response {
    let project = Project::from_recipe(form.get("recipe").map(String::as_str).unwrap_or_default());
    let scratch = studio.scratch.path().to_path_buf();
    let folder = studio.folder.clone();
    step(&studio, &headers, &form, "/project#source", move |b| {
        Box::pin(async move {
            match project {
                Ok(project) => b.open(project, &scratch, folder.as_ref()).await,
                Err(e) => b.refuse(&e),
            }
        })
    })
    .await
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

/// A candidate's report (its own stylesheet inline, no scripts).
pub async fn report(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Path(number): Path<usize>,
) -> Response {
    let (_, bench) = match owned(&studio, &headers) {
        Ok(found) => found,
        Err(refusal) => return refusal.response(),
    };
    let bench = bench.lock().await;
    let Some(Ok(trial)) = number.checked_sub(1).and_then(|i| bench.trials.get(i)) else {
        return html(StatusCode::NOT_FOUND, super::pages::not_found());
    };
    let mut response = html(StatusCode::OK, trial.report.clone());
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
        ),
    );
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
